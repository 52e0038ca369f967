//! Robots nobody here wrote: example-robot-data's Solo-12, Talos and UR5
//! (installed from PyPI by `scripts/fetch-robot-files`, as `.ci/run` does)
//! load with their meshes and match Pinocchio 3 on the same files; a loaded
//! Solo-12 dropped on the ground comes to rest on its feet.

mod common;

use moreau::dynamics::{Data, center_of_mass, forward_kinematics, forward_velocity};
use moreau::dynamics::{kinetic_energy, potential_energy};
use moreau::load::load_urdf;
use moreau::model::Material;
use moreau::model::urdf::{UrdfModel, UrdfOptions};
use moreau::{SimParams, Simulator, State};
use nalgebra::DVector;
use std::sync::Arc;

/// Reference values computed with Pinocchio 3 (`pip install pin`) on the
/// same files: `buildModelFromUrdf` (with `JointModelFreeFlyer` for the legged
/// robots), then `centerOfMass`, `computeKineticEnergy` and
/// `computePotentialEnergy` at the configuration of [`test_state`].
struct Reference {
    file: &'static str,
    floating: bool,
    nq: usize,
    nv: usize,
    /// Pinocchio's `njoints` (the universe included): our `nbodies`.
    nbodies: usize,
    ngeoms: usize,
    mass: f64,
    com: Option<[f64; 3]>,
    kinetic: f64,
    potential: f64,
}

const ROBOTS: [Reference; 3] = [
    Reference {
        file: "solo_description/robots/solo12.urdf",
        floating: true,
        nq: 19,
        nv: 18,
        nbodies: 14,
        ngeoms: 17,
        mass: 2.5000027900000004,
        com: Some([
            0.08703586803840832,
            -0.19763737319706307,
            0.2739234423816856,
        ]),
        kinetic: 0.2059404479459838,
        potential: 6.717979921668064,
    },
    Reference {
        file: "talos_data/robots/talos_reduced.urdf",
        floating: true,
        nq: 39,
        nv: 38,
        nbodies: 34,
        ngeoms: 52,
        mass: 90.272192,
        com: Some([
            -0.019123445851793566,
            -0.1863219048277788,
            0.1967128707542656,
        ]),
        kinetic: 13.17050375522189,
        potential: 174.20305698885846,
    },
    Reference {
        file: "ur_description/urdf/ur5_robot.urdf",
        floating: false,
        nq: 6,
        nv: 6,
        nbodies: 7,
        ngeoms: 8,
        // Pinocchio's 20.9939 kg counts base_link's 4 kg, welded to the
        // world; moreau's total mass counts only the bodies that move.
        mass: 20.9939 - 4.0,
        com: Some([
            0.32863780067758636,
            0.09344366221748746,
            -0.029292290137660288,
        ]),
        kinetic: 0.5400756213773482,
        potential: -4.883322346323482,
    },
];

/// Joint values `0.3 sin(k+1)` and velocities `0.5 cos(k+1)`, `k` the rank
/// of the joint's name in sorted order; the floating base at
/// `(0.1, -0.2, 0.3)`, quaternion ∝ (0.1, 0.2, 0.3, 0.9), twist
/// `(0.1, 0.2, −0.3, 0.4, −0.5, 0.6)`. Pinocchio's free-flyer uses our
/// layouts (`q = [x, y, z, qx, qy, qz, qw]`, `v` the body twist in the body frame).
fn test_state(r: &UrdfModel) -> (DVector<f64>, DVector<f64>) {
    let m = &r.model;
    let mut q = m.neutral_configuration();
    let mut v = DVector::zeros(m.nv);
    let mut names: Vec<(&str, usize)> = (1..m.nbodies)
        .filter(|&i| r.model.joint_name[i] != "root")
        .map(|i| (r.model.joint_name[i].as_str(), i))
        .collect();
    names.sort();
    for (k, (_, i)) in names.iter().enumerate() {
        q[m.joint_idx_q[*i]] = 0.3 * ((k + 1) as f64).sin();
        v[m.joint_idx_v[*i]] = 0.5 * ((k + 1) as f64).cos();
    }
    if let Some(root) = r.model.joint_name.iter().position(|n| n == "root") {
        let (iq, iv) = (m.joint_idx_q[root], m.joint_idx_v[root]);
        let quat = nalgebra::Vector4::new(0.1, 0.2, 0.3, 0.9).normalize();
        for (k, x) in [0.1, -0.2, 0.3, quat[0], quat[1], quat[2], quat[3]]
            .iter()
            .enumerate()
        {
            q[iq + k] = *x;
        }
        for (k, x) in [0.1, 0.2, -0.3, 0.4, -0.5, 0.6].iter().enumerate() {
            v[iv + k] = *x;
        }
    }
    (q, v)
}

fn load(dir: &std::path::Path, file: &str, floating: bool) -> UrdfModel {
    let t = std::time::Instant::now();
    let r = load_urdf(
        dir.join(file),
        &UrdfOptions {
            floating_base: floating,
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    println!(
        "{file}: loaded in {:.1} ms, {} warnings",
        t.elapsed().as_secs_f64() * 1e3,
        r.warnings.len()
    );
    r
}

#[test]
fn example_robots_load_like_pinocchio() {
    let Some(files) = common::robot_files() else {
        return;
    };
    for reference in &ROBOTS {
        let r = load(
            &files.example_robot_data,
            reference.file,
            reference.floating,
        );
        let m = &r.model;
        let (q, v) = test_state(&r);
        let mut data = Data::new(m);
        forward_kinematics(m, &mut data, q.as_slice());
        forward_velocity(m, &mut data, v.as_slice());
        let (com, ke, pe) = (
            center_of_mass(m, &data),
            kinetic_energy(m, &data),
            potential_energy(m, &data),
        );
        let meshes = m
            .geometries
            .iter()
            .filter(|g| g.shape.name() == "convex-mesh")
            .count();
        println!(
            "  nq {} nv {} bodies {} geometries {} ({meshes} mesh hulls) mass {:.9}\n  com {:?} vs {:?}\n  kinetic {ke:.12} vs {:.12}, potential {pe:.12} vs {:.12}",
            m.nq,
            m.nv,
            m.nbodies,
            m.geometries.len(),
            m.total_mass(),
            com.as_slice(),
            reference.com,
            reference.kinetic,
            reference.potential
        );
        assert_eq!(
            (m.nq, m.nv, m.nbodies, m.geometries.len()),
            (
                reference.nq,
                reference.nv,
                reference.nbodies,
                reference.ngeoms
            ),
            "{}",
            reference.file
        );
        assert!(meshes > 0, "the meshes are loaded");
        println!(
            "  {} mesh files hulled for {meshes} mesh geometries",
            r.mesh_files
        );
        let visual_meshes = (m.visuals.iter())
            .filter(|v| v.shape.name() == "convex-mesh")
            .count();
        assert!(r.mesh_files <= meshes + visual_meshes, "one hull per file");
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
        assert!(close(m.total_mass(), reference.mass), "{}", reference.file);
        if let Some(c) = reference.com {
            assert!((0..3).all(|k| close(com[k], c[k])), "{}", reference.file);
        }
        assert!(close(ke, reference.kinetic), "{}", reference.file);
        assert!(close(pe, reference.potential), "{}", reference.file);
    }
}

/// Solo-12's "standing" posture from its SRDF, by joint name.
fn solo_standing(name: &str) -> f64 {
    let front = name.starts_with('F');
    let side = if name.contains('L') { 1.0 } else { -1.0 };
    match &name[3..] {
        "HAA" => 0.1 * side,
        "HFE" => {
            if front {
                0.8
            } else {
                -0.8
            }
        }
        "KFE" => {
            if front {
                -1.6
            } else {
                1.6
            }
        }
        other => panic!("unexpected Solo joint {other}"),
    }
}

#[test]
fn solo12_dropped_on_the_ground_rests_on_its_feet() {
    let Some(files) = common::robot_files() else {
        return;
    };
    let r = load(
        &files.example_robot_data,
        "solo_description/robots/solo12.urdf",
        true,
    );
    let mut model = r.model.clone();
    model.add_ground(0.0, Material::with_friction(0.8)).unwrap();
    let model = Arc::new(model);
    let m = &*model;
    let root = r.model.joint_name.iter().position(|n| n == "root").unwrap();
    let base_q = m.joint_idx_q[root];
    // The standing posture, dropped from 10 cm above the SRDF's standing height (0.235 m).
    let mut q_ref = m.neutral_configuration();
    let joints: Vec<(usize, usize, f64)> = (1..m.nbodies)
        .filter(|&i| i != root)
        .map(|i| {
            (
                m.joint_idx_q[i],
                m.joint_idx_v[i],
                solo_standing(&r.model.joint_name[i]),
            )
        })
        .collect();
    for &(iq, _, x) in &joints {
        q_ref[iq] = x;
    }
    let mut q = q_ref.clone();
    q[base_q + 2] = 0.335;
    let mut state = State::new(q, DVector::zeros(m.nv));
    let mut sim = Simulator::new(
        model.clone(),
        SimParams {
            dt: 1e-3,
            ..Default::default()
        },
    )
    .unwrap();
    // A joint PD holding the posture (gains of Solo's own controllers).
    let (kp, kd) = (5.0, 0.2);
    let mut tau = vec![0.0; m.nv];
    let mut touched_down = None;
    for step in 0..2000 {
        for &(iq, iv, x) in &joints {
            tau[iv] = kp * (x - state.q[iq]) - kd * state.v[iv];
        }
        let report = sim.step(&mut state, &tau).unwrap();
        if touched_down.is_none() && report.nc > 0 {
            touched_down = Some(step);
        }
        assert!(state.q.iter().all(|x| x.is_finite()));
    }
    let base_z = state.q[base_q + 2];
    let quat = nalgebra::UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(
        state.q[base_q + 6],
        state.q[base_q + 3],
        state.q[base_q + 4],
        state.q[base_q + 5],
    ));
    let up = (quat * nalgebra::Vector3::z()).z;
    let speed = state.v.norm();
    let mut feet: Vec<&str> = sim
        .contacts()
        .iter()
        .map(|c| m.body_name[c.body_a].as_str())
        .collect();
    feet.sort_unstable();
    feet.dedup();
    let lowest = sim
        .contacts()
        .iter()
        .map(|c| c.distance)
        .fold(f64::INFINITY, f64::min);
    println!(
        "touchdown at step {touched_down:?}; after 2 s: base height {base_z:.4} m, base z axis · up {up:.5}, ‖v‖ {speed:.2e}, {} contacts on {feet:?}, deepest {lowest:.2e} m",
        sim.contacts().len()
    );
    assert!(touched_down.is_some_and(|s| s > 50), "it fell first");
    assert_eq!(
        feet,
        vec![
            "FL_LOWER_LEG",
            "FR_LOWER_LEG",
            "HL_LOWER_LEG",
            "HR_LOWER_LEG"
        ],
        "rests on its four feet (the lower legs carry the feet), nothing else touches"
    );
    assert!(speed < 1e-2, "at rest");
    assert!(up > 0.99, "upright");
    assert!(
        (0.15..0.3).contains(&base_z),
        "standing, not lying: base at {base_z}"
    );
    assert!(lowest > -2e-3, "no deep penetration");
}

/// `talos_full_v2.urdf` names its meshes `package:///example-robot-data/...`
/// (three slashes, an empty authority), which Pinocchio reads as
/// `package://example-robot-data/...`: so does moreau, meshes and all.
#[test]
fn talos_full_v2_with_three_slash_package_uris_loads() {
    let Some(files) = common::robot_files() else {
        return;
    };
    let file = "talos_data/robots/talos_full_v2.urdf";
    let text = std::fs::read_to_string(files.example_robot_data.join(file)).unwrap();
    assert!(
        text.contains("package:///"),
        "the file no longer uses the form"
    );
    let r = load(&files.example_robot_data, file, true);
    // Counted from the file's text: a free flyer and one dof per moving joint.
    let moving = ["revolute", "prismatic", "continuous"]
        .iter()
        .map(|t| text.matches(&format!("type=\"{t}\"")).count())
        .sum::<usize>();
    assert_eq!(r.model.nv, 6 + moving);
    let meshes = text.matches("<mesh").count();
    println!(
        "talos_full_v2: nv {}, {} geometries from {meshes} <mesh> elements, warnings {:?}",
        r.model.nv,
        r.model.geometries.len(),
        r.warnings
    );
    assert!(r.model.geometries.len() > 40);
}
