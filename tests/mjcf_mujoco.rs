//! MJCF models load with the sizes, masses, placements and mass matrices
//! that MuJoCo computes from the same files: Gymnasium's MuJoCo tasks, and
//! hand-written models using every supported feature. MuJoCo's numbers are
//! in tests/data/mujoco/*.json, written by tests/data/mujoco/mujoco_reference.py
//! (MuJoCo 4.0.0; see its header for how to regenerate them).

mod common;

use common::mjcf::{FEATURES, FRAMES, parse, rel};
use moreau::dynamics::{Data, crba, forward_kinematics};
use moreau::load::mjcf::{MjcfModel, MjcfOptions, load_mjcf};
use moreau::math::{Mat3, SE3, Vec3};
use nalgebra::{Quaternion, UnitQuaternion};
use serde::Deserialize;

/// The versions a reference file was made with.
#[derive(Deserialize)]
struct Versions {
    mujoco: String,
}

/// tests/data/mujoco/gymnasium.json.
#[derive(Deserialize)]
struct GymnasiumReference {
    versions: Versions,
    models: Vec<Reference>,
}

/// What MuJoCo computes for a Gymnasium file (`mujoco.MjModel.from_xml_path`,
/// `mj_forward` at `qpos0`, `mj_fullM` minus `dof_armature`).
#[derive(Deserialize)]
struct Reference {
    file: String,
    nq: usize,
    nv: usize,
    nbody: usize,
    nu: usize,
    mass: f64,
    timestep: f64,
    gears: Vec<f64>,
    actuated_joints: Vec<String>,
    /// `jnt_dofadr` of each actuator's joint.
    actuator_dofs: Vec<usize>,
    ctrl_limited: Vec<bool>,
    /// Whether some joint has damping (which the loader reports as not
    /// used by the simulator yet).
    damped: bool,
    qpos0: Vec<f64>,
    body_mass: Vec<f64>,
    /// World position of every body frame at `qpos0` (`data.xpos`).
    xpos: Vec<[f64; 3]>,
    /// First dof after the free joint (the block compared is free-joint independent).
    first_hinge_dof: usize,
    mass_matrix_diag: Vec<f64>,
    /// `dof_armature` of the same dofs: errors are relative to MuJoCo's own
    /// diagonal (armature included), since some dofs carry almost nothing else.
    armature: Vec<f64>,
    /// (joint name, lower, upper) of each limited joint.
    limits: Vec<(String, f64, f64)>,
}

/// tests/data/mujoco/{features,frames}.json: MuJoCo on a hand-written model.
#[derive(Deserialize)]
struct PosesReference {
    versions: Versions,
    nq: usize,
    nv: usize,
    nbody: usize,
    mass: f64,
    poses: Vec<Pose>,
}

/// MuJoCo at one configuration: `qpos`, then `xpos`, `xquat` (w x y z) of
/// every body and `mj_fullM` minus armature at that `qpos` (no free joint,
/// and a ball joint's velocity is the body-frame angular velocity in both,
/// so the whole matrix compares).
#[derive(Deserialize)]
struct Pose {
    qpos: Vec<f64>,
    xpos: Vec<[f64; 3]>,
    xquat: Vec<[f64; 4]>,
    mass_matrix: Vec<Vec<f64>>,
}

fn reference<T: serde::de::DeserializeOwned>(name: &str, text: &str) -> T {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("tests/data/mujoco/{name}: {e}"))
}

/// World placement of MJCF body `b` (through the body that carries it).
fn mjcf_body_world(m: &MjcfModel, data: &Data, b: usize) -> SE3 {
    let mb = &m.mjcf_bodies[b];
    data.world_from_body[mb.body].mul(&mb.body_from_mjcf)
}

#[test]
fn gymnasium_models_match_mujoco() {
    let Some(files) = common::robot_files() else {
        return;
    };
    let reference: GymnasiumReference =
        reference("gymnasium.json", include_str!("data/mujoco/gymnasium.json"));
    println!(
        "MuJoCo {} on {} Gymnasium files",
        reference.versions.mujoco,
        reference.models.len()
    );
    // Every MJCF file of the assets has its reference.
    let mut on_disk: Vec<String> = std::fs::read_dir(&files.gymnasium_assets)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".xml"))
        .collect();
    on_disk.sort();
    let referenced: Vec<&str> = reference.models.iter().map(|r| r.file.as_str()).collect();
    assert_eq!(on_disk, referenced);
    for r in &reference.models {
        let path = files.gymnasium_assets.join(&r.file);
        let m =
            load_mjcf(&path, &MjcfOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", r.file));
        let model = &m.model;
        println!(
            "{}: nq {} nv {} MJCF bodies {} (model bodies {}) mass {:.9} (MuJoCo {:.9}) actuators {} timestep {:?}",
            r.file,
            model.nq,
            model.nv,
            m.bodies,
            model.nbodies,
            model.total_mass(),
            r.mass,
            m.model.actuators.len(),
            m.timestep
        );
        for w in &m.warnings {
            println!("    warning: {w}");
        }
        assert_eq!(
            (model.nq, model.nv, m.bodies),
            (r.nq, r.nv, r.nbody),
            "{}",
            r.file
        );
        assert!(rel(model.total_mass(), r.mass) < 1e-9, "{}", r.file);
        assert_eq!(m.timestep, r.timestep);
        // Actuators: MuJoCo's nu, gears and joints (by dof).
        assert_eq!(m.model.actuators.len(), r.nu, "{}", r.file);
        for (k, a) in m.model.actuators.iter().enumerate() {
            assert_eq!(a.gear, r.gears[k], "{} actuator {k}", r.file);
            assert_eq!(
                a.dof, r.actuator_dofs[k],
                "{} actuator {k} ({})",
                r.file, r.actuated_joints[k]
            );
            assert_eq!(
                a.ctrl_range.is_some(),
                r.ctrl_limited[k],
                "{} actuator {k}",
                r.file
            );
        }
        // Limits, converted to radians.
        assert_eq!(
            m.model.limited_joints().count(),
            r.limits.len(),
            "{}",
            r.file
        );
        for ((_, n, (lo, hi)), (rn, rlo, rhi)) in m.model.limited_joints().zip(&r.limits) {
            assert_eq!(n, rn);
            assert!(
                (lo - rlo).abs() < 1e-12 && (hi - rhi).abs() < 1e-12,
                "{n}: {lo} {hi}"
            );
        }
        // Masses per model body: the MJCF bodies it carries (static ones merged).
        let mut carried = vec![0.0; model.nbodies];
        for (b, mb) in m.mjcf_bodies.iter().enumerate() {
            carried[mb.body] += r.body_mass[b];
        }
        for (i, want) in carried.iter().enumerate().skip(1) {
            let got = model.body_inertia[i].mass;
            assert!(
                (got - want).abs() < 1e-9 * r.mass,
                "{} body {}: mass {got} vs MuJoCo {want}",
                r.file,
                model.body_name[i],
            );
        }
        // q0 is MuJoCo's qpos0; every body frame sits where MuJoCo puts it.
        let q0 = m.q_from_mujoco(&r.qpos0).unwrap();
        assert!(
            (&m.q0 - &q0).norm() < 1e-12,
            "{}: q0 {} vs {}",
            r.file,
            m.q0,
            q0
        );
        let mut data = Data::new(model);
        forward_kinematics(model, &mut data, q0.as_slice());
        let mut worst: f64 = 0.0;
        for (b, x) in r.xpos.iter().enumerate() {
            let p = mjcf_body_world(&m, &data, b).translation;
            worst = worst.max((p - Vec3::new(x[0], x[1], x[2])).norm());
        }
        // The hinge/slide block of the mass matrix (armature included in
        // moreau's, added back to MuJoCo's).
        let mm = crba(model, &mut data, q0.as_slice()).clone();
        let mut worst_m: f64 = 0.0;
        for (k, d) in r.mass_matrix_diag.iter().enumerate() {
            let i = r.first_hinge_dof + k;
            let a = r.armature[k];
            worst_m = worst_m.max(rel(mm[(i, i)], *d + a));
        }
        println!(
            "    body positions: worst error {worst:.2e} m; mass-matrix diagonal: worst relative error {worst_m:.2e}"
        );
        assert!(worst < 1e-9, "{}", r.file);
        assert!(worst_m < 1e-9, "{}", r.file);
        // Damping and hinge/slide limits are simulated: no warning about them.
        assert!(
            !m.warnings.iter().any(|w| w.contains("`damping`")),
            "{}: {:?} (damped: {})",
            r.file,
            m.warnings,
            r.damped
        );
        assert!(
            !m.warnings
                .iter()
                .any(|w| w.contains("joint range") && !w.contains("ball")),
            "{}",
            r.file
        );
    }
}

fn quat_wxyz(q: &[f64; 4]) -> Mat3 {
    *UnitQuaternion::from_quaternion(Quaternion::new(q[0], q[1], q[2], q[3]))
        .to_rotation_matrix()
        .matrix()
}

#[test]
fn every_supported_feature_matches_mujoco() {
    let m = parse(FEATURES);
    let model = &m.model;
    for w in &m.warnings {
        println!("warning: {w}");
    }
    let mujoco: PosesReference =
        reference("features.json", include_str!("data/mujoco/features.json"));
    // MuJoCo 4.0.0: nq 8, nv 7, nbody 6, total mass 8.186723715309594.
    assert_eq!(
        (model.nq, model.nv, m.bodies),
        (mujoco.nq, mujoco.nv, mujoco.nbody)
    );
    println!(
        "features: mass {:.12} (MuJoCo {} {}), model bodies {}",
        model.total_mass(),
        mujoco.versions.mujoco,
        mujoco.mass,
        model.nbodies
    );
    // (MuJoCo stores mesh vertices in single precision: the wedge's
    // coordinates are binary fractions so that its volume is exact there too.)
    assert!(rel(model.total_mass(), mujoco.mass) < 1e-12);
    assert_eq!(m.timestep, 0.005);
    assert_eq!(model.gravity, Vec3::new(0.0, 0.0, -9.8));
    let q0 = m.q_from_mujoco(&mujoco.poses[0].qpos).unwrap();
    assert!((&m.q0 - &q0).norm() < 1e-12, "q0 {} vs qpos0 {}", m.q0, q0);
    check_poses(&m, &mujoco.poses);
    // Limits: degrees → radians; the ball's is (0, max angle); unlimited joints absent.
    let d = std::f64::consts::PI / 180.0;
    let want = [
        ("shoulder1", -90.0 * d, 90.0 * d),
        ("shoulder2", -90.0 * d, 90.0 * d),
        ("elbow", 0.0, 60.0 * d),
    ];
    assert_eq!(m.model.limited_joints().count(), 3);
    for ((_, n, (lo, hi)), (wn, wlo, whi)) in m.model.limited_joints().zip(want) {
        assert!(n == wn && (lo - wlo).abs() < 1e-12 && (hi - whi).abs() < 1e-12);
    }
    // Actuators: the motor, the general (gear 5, gainprm 3), the position servo (kp 10).
    assert_eq!(m.model.actuators.len(), 3);
    assert_eq!(
        (m.model.actuators[0].dof, m.model.actuators[0].gear),
        (1, 20.0)
    );
    assert_eq!(m.model.actuators[0].ctrl_range, Some((-1.0, 1.0)));
    assert_eq!(
        (
            m.model.actuators[1].dof,
            m.model.actuators[1].gear,
            m.model.actuators[1].gain
        ),
        (2, 5.0, 3.0)
    );
    assert_eq!(m.model.actuators[1].ctrl_range, None);
    let servo = &m.model.actuators[2];
    assert_eq!(
        (servo.gear, servo.gain, servo.bias),
        (1.0, 10.0, [0.0, -10.0, 0.0])
    );
    assert!(!m.warnings.iter().any(|w| w.contains("<position>")));
    // The palm is a true ellipsoid, not warned about.
    assert!(!m.warnings.iter().any(|w| w.contains("ellipsoid")));
    let palm = m
        .model
        .geometries
        .iter()
        .find(|g| g.name == "palm")
        .unwrap();
    assert!(matches!(
        palm.shape,
        moreau::model::Shape::Ellipsoid { radii } if radii == Vec3::new(0.05, 0.03, 0.02)
    ));
    // The rail's damping is simulated, not warned about.
    assert!(!m.warnings.iter().any(|w| w.contains("damping")));
    // Collision filtering: MuJoCo's parent filter through joint chains and
    // welded bodies, the explicit exclusion, the floor against everything.
    let g = |name: &str| {
        model
            .geometries
            .iter()
            .position(|g| g.name == name)
            .unwrap_or_else(|| panic!("no geom {name}"))
    };
    let pairs = [
        ("upper", "base_box", false), // arm's parent is base (arm has a joint chain)
        ("palm", "upper", false),     // hand is welded to forearm, whose parent is arm
        ("fore", "base_box", false),  // <exclude body1="base" body2="forearm">
        ("upper", "floor", true),
        ("palm", "floor", true),
        ("wedge", "floor", true),
        ("base_cyl", "floor", true),
        ("fore", "base_box", false),
    ];
    for (a, b, want) in pairs {
        assert_eq!(model.can_collide(g(a), g(b)), want, "{a} / {b}");
    }
    assert!(matches!(
        model.geometries[g("floor")].shape,
        moreau::model::Shape::HalfSpace { .. }
    ));
}

/// Body placements and the mass matrix at each pose match MuJoCo's.
fn check_poses(m: &MjcfModel, poses: &[Pose]) {
    let model = &m.model;
    let n = model.nv;
    assert!(!poses.is_empty());
    let mut data = Data::new(model);
    for (k, pose) in poses.iter().enumerate() {
        // MuJoCo's mass matrix is nv × nv, as ours.
        assert_eq!(pose.mass_matrix.len(), n, "pose {k}");
        assert!(pose.mass_matrix.iter().all(|row| row.len() == n));
        let q = m.q_from_mujoco(&pose.qpos).unwrap();
        forward_kinematics(model, &mut data, q.as_slice());
        let (mut worst_p, mut worst_r): (f64, f64) = (0.0, 0.0);
        for b in 0..m.bodies {
            let x = mjcf_body_world(m, &data, b);
            let p = pose.xpos[b];
            worst_p = worst_p.max((x.translation - Vec3::new(p[0], p[1], p[2])).norm());
            worst_r = worst_r.max((x.rotation - quat_wxyz(&pose.xquat[b])).norm());
        }
        let mm = crba(model, &mut data, q.as_slice()).clone();
        let mut worst_m: f64 = 0.0;
        for i in 0..n {
            for j in 0..n {
                worst_m = worst_m.max((mm[(i, j)] - pose.mass_matrix[i][j]).abs());
            }
        }
        println!(
            "{} pose {k}: worst body position error {worst_p:.2e} m, rotation {worst_r:.2e}, mass matrix {worst_m:.2e}",
            model.name
        );
        assert!(worst_p < 1e-9 && worst_r < 1e-9, "pose {k}");
        assert!(worst_m < 1e-9, "pose {k}");
    }
}

#[test]
fn frames_eulerseq_and_radians_match_mujoco() {
    let m = parse(FRAMES);
    let mujoco: PosesReference = reference("frames.json", include_str!("data/mujoco/frames.json"));
    // MuJoCo 4.0.0: nq 2, nv 2, nbody 3, total mass 151.8539816339745.
    assert_eq!(
        (m.model.nq, m.model.nv, m.bodies),
        (mujoco.nq, mujoco.nv, mujoco.nbody)
    );
    println!(
        "frames: mass {:.12} (MuJoCo {} {})",
        m.model.total_mass(),
        mujoco.versions.mujoco,
        mujoco.mass
    );
    assert!(rel(m.model.total_mass(), mujoco.mass) < 1e-12);
    check_poses(&m, &mujoco.poses);
}

/// tests/data/mujoco/inertia.json.
#[derive(Deserialize)]
struct InertiaReference {
    bodies: Vec<BodyInertia>,
}

#[derive(Deserialize)]
struct BodyInertia {
    name: String,
    mass: f64,
    com: [f64; 3],
    /// About the centre of mass, in the body frame.
    inertia: [[f64; 3]; 3],
}

/// Mass properties by MuJoCo's rules where they are not a solid of uniform
/// density: shells on spheres, boxes, cylinders and capsules
/// (`shellinertia`), and a non-convex L-shaped mesh under each `<mesh
/// inertia>` mode (legacy, MuJoCo's default; exact; convex; shell; a scaled
/// and turned instance), against MuJoCo's own numbers. MuJoCo keeps inline
/// vertices in single precision: the tolerance is 1e-6 relative.
#[test]
fn shell_and_mesh_inertias_match_mujoco() {
    let r: InertiaReference = reference("inertia.json", include_str!("data/mujoco/inertia.json"));
    let m = load_mjcf(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/mujoco/inertia.xml"),
        &MjcfOptions::default(),
    )
    .unwrap();
    assert_eq!(m.bodies, r.bodies.len() + 1);
    for (k, b) in r.bodies.iter().enumerate() {
        let frame = &m.model.frames[k];
        assert_eq!(frame.name, b.name);
        let i = frame.inertia.unwrap();
        let want_i = Mat3::from_fn(|a, c| b.inertia[a][c]);
        let (dm, dc, di) = (
            rel(i.mass, b.mass),
            (i.com - Vec3::from(b.com)).norm(),
            (i.rotational - want_i).norm() / want_i.norm(),
        );
        println!(
            "{}: mass {:.6} (MuJoCo {:.6}), relative errors: mass {dm:.1e}, com {dc:.1e} m, inertia {di:.1e}",
            b.name, i.mass, b.mass
        );
        assert!(dm < 1e-6 && dc < 1e-7 && di < 1e-6, "{}", b.name);
    }
    // The three volume modes differ on a non-convex mesh, as in MuJoCo.
    let mass = |n: &str| r.bodies.iter().find(|b| b.name == n).unwrap().mass;
    assert!(mass("l_exact") < mass("l_legacy") && mass("l_legacy") < mass("l_convex"));
}

/// A hand-written file of tests/data/mujoco, loaded without a warning,
/// and a simulator at its time step.
fn data_file_simulator(
    file: &str,
) -> (
    MjcfModel,
    std::sync::Arc<moreau::Model>,
    moreau::sim::Simulator,
) {
    let path = format!("{}/tests/data/mujoco/{file}", env!("CARGO_MANIFEST_DIR"));
    let m = load_mjcf(&path, &MjcfOptions::default()).unwrap();
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
    let model = std::sync::Arc::new(m.model.clone());
    let params = moreau::sim::SimParams {
        dt: m.timestep,
        ..Default::default()
    };
    let sim = moreau::sim::Simulator::new(model.clone(), params).unwrap();
    (m, model, sim)
}

#[derive(Deserialize)]
struct ConstraintsReference {
    ctrl: Vec<f64>,
    /// (time, qpos…) every 0.25 s, MuJoCo's defaults and stiffest rows.
    qpos: Vec<Vec<f64>>,
    qpos_stiff: Vec<Vec<f64>>,
}

/// constraints.xml under constant controls for 1 s (dry friction holding
/// and sliding, a polynomial joint equality, a tendon's range, a tendon
/// spring with a dead band, a tendon equality, a position servo on a
/// tendon): moreau's rigid rows against
/// MuJoCo with its rows as stiff as it allows. MuJoCo's default rows are
/// soft (time constant 0.02 s): its held slider creeps 1.5 mm in 1 s; the
/// stiff rows take that away. (The equality's curve passes through qpos0:
/// from a violated start the rigid row's Baumgarte pull and MuJoCo's spring
/// set the wheels moving differently, 5 mm apart after 1 s.)
#[test]
fn equalities_tendons_and_dry_friction_match_mujoco() {
    use moreau::sim::{Actuation, State};
    let r: ConstraintsReference = reference(
        "constraints.json",
        include_str!("data/mujoco/constraints.json"),
    );
    let (_, model, mut sim) = data_file_simulator("constraints.xml");
    let mut state = State::new(
        model.neutral_configuration(),
        nalgebra::DVector::zeros(model.nv),
    );
    let mut worst = [0.0f64; 2];
    let mut row = 0;
    for step in 0..=1000 {
        if step % 250 == 0 {
            let (soft, stiff) = (&r.qpos[row], &r.qpos_stiff[row]);
            assert!((soft[0] - state.t).abs() < 1e-9);
            let d = |want: &[f64]| {
                (0..model.nq)
                    .map(|k| (state.q[k] - want[k + 1]).abs())
                    .fold(0.0, f64::max)
            };
            println!(
                "t = {:.2}: moreau {:?}\n          MuJoCo stiff {:?}\n          max |Δq| {:.1e} (stiff), {:.1e} (default)",
                state.t,
                state
                    .q
                    .iter()
                    .map(|x| format!("{x:.5}"))
                    .collect::<Vec<_>>(),
                stiff[1..]
                    .iter()
                    .map(|x| format!("{x:.5}"))
                    .collect::<Vec<_>>(),
                d(stiff),
                d(soft)
            );
            // The tendon's stop is hit at 0.245 s: 5 ms later MuJoCo's
            // stiffest limit row is still settling (3e-4 rad).
            let settled = if state.t < 0.3 { 0 } else { 1 };
            worst[settled] = worst[settled].max(d(stiff));
            row += 1;
        }
        if step < 1000 {
            sim.step_with(&mut state, Actuation::Controls(&r.ctrl))
                .unwrap();
        }
    }
    // (Measured 3.0e-4 during the impact, then 1.5e-5: the stiff held
    // slider's creep.)
    assert!(worst[0] < 5e-4, "at the impact: |Δq| {:e}", worst[0]);
    assert!(
        worst[1] < 5e-5,
        "worst |Δq| from stiff MuJoCo {:e}",
        worst[1]
    );
}

#[derive(Deserialize)]
struct ActuatorsReference {
    /// Two phases of controls, the second from step `switch_steps` on.
    ctrl: Vec<Vec<f64>>,
    switch_steps: usize,
    na: usize,
    /// (time, qpos…, act…) every 0.05 s.
    rows: Vec<Vec<f64>>,
}

/// actuators.xml under two phases of constant controls for 1 s: every
/// activation dynamics moreau maps (filter, filterexact from a position
/// servo's `timeconst` and on a tendon with `actrange`, intvelocity's
/// integrator with its range, cylinder, an `actearly` filter) among
/// stateless actuators. Nothing collides and no row is active, so moreau's
/// Euler step is MuJoCo's: the configurations and activations agree to
/// rounding.
#[test]
fn activation_dynamics_match_mujoco() {
    use moreau::sim::State;
    let r: ActuatorsReference =
        reference("actuators.json", include_str!("data/mujoco/actuators.json"));
    let (m, model, mut sim) = data_file_simulator("actuators.xml");
    assert_eq!((model.nu(), model.na()), (r.ctrl[0].len(), r.na));
    let mut state = State::new(
        model.neutral_configuration(),
        nalgebra::DVector::zeros(model.nv),
    );
    let every = (0.05 / m.timestep).round() as usize;
    let (mut worst_q, mut worst_act) = (0.0f64, 0.0f64);
    for (k, want) in r.rows.iter().enumerate() {
        let step = k * every;
        while (state.t / m.timestep).round() as usize != step {
            let phase = usize::from((state.t / m.timestep).round() as usize >= r.switch_steps);
            sim.step_controls(&mut state, &r.ctrl[phase]).unwrap();
        }
        assert!((want[0] - state.t).abs() < 1e-9);
        let q = &want[1..1 + model.nq];
        let act = &want[1 + model.nq..];
        assert_eq!(state.act.len(), if step == 0 { 0 } else { r.na });
        for i in 0..model.nq {
            worst_q = worst_q.max((state.q[i] - q[i]).abs());
        }
        for i in 0..r.na {
            let a = state.act.get(i).copied().unwrap_or(0.0);
            worst_act = worst_act.max((a - act[i]).abs());
        }
    }
    // The activations hit both ends of their ranges (the integrator at
    // −0.3 and the tendon's filter at −0.5, read from MuJoCo's act).
    let last = r.rows.last().unwrap();
    assert_eq!(last[1 + model.nq + 2], -0.3);
    assert_eq!(last[1 + model.nq + 5], -0.5);
    println!("max |Δq| {worst_q:.1e}, max |Δact| {worst_act:.1e}");
    assert!(worst_q < 1e-9, "max |Δq| {worst_q:e}");
    assert!(worst_act < 1e-9, "max |Δact| {worst_act:e}");
}

/// loops.xml for 1 s under gravity: a four-bar linkage closed by `connect`
/// and a weight welded to a hinged arm (`weld` with `relpose`): moreau's
/// rigid rows against MuJoCo's run with its equality rows as stiff as it
/// allows, every coordinate every 0.25 s; and a pendulum pulled by a
/// spatial tendon's spring-damper (two sites), exactly.
#[test]
fn connect_and_weld_match_mujoco() {
    let r: ConstraintsReference = reference("loops.json", include_str!("data/mujoco/loops.json"));
    let (m, model, mut sim) = data_file_simulator("loops.xml");
    assert_eq!(model.body_equalities.len(), 2);
    let (worst, _) = follow_stiff_rows(&m, &mut sim, (&r.qpos, &r.qpos_stiff), |state, want| {
        // The pendulum on the spatial tendon's spring has no row: it is
        // MuJoCo's Euler step, to rounding.
        let swing = model.nq - 1;
        assert!(
            (state.q[swing] - want[swing]).abs() < 1e-9,
            "swing {} vs {}",
            state.q[swing],
            want[swing]
        );
    });
    assert!(worst < 2e-3, "worst |Δq| from stiff MuJoCo {worst:e}");
}

/// Steps `sim` without torques from `qpos0` at rest through MuJoCo's rows
/// `(default, stiff)` (time, qpos…), printing the distance to each,
/// calling `check(state, stiff q)` at each; the largest distance to the
/// stiff rows after t = 0, and the final state.
fn follow_stiff_rows(
    m: &MjcfModel,
    sim: &mut moreau::sim::Simulator,
    (soft_rows, stiff_rows): (&[Vec<f64>], &[Vec<f64>]),
    mut check: impl FnMut(&moreau::sim::State, &nalgebra::DVector<f64>),
) -> (f64, moreau::sim::State) {
    let nv = m.model.nv;
    let mut state = moreau::sim::State::new(m.q0.clone(), nalgebra::DVector::zeros(nv));
    let mut worst = 0.0f64;
    for (soft, stiff) in soft_rows.iter().zip(stiff_rows) {
        while (state.t - stiff[0]).abs() > 1e-9 {
            sim.step(&mut state, &vec![0.0; nv]).unwrap();
        }
        // MuJoCo's quaternion is (w, x, y, z), moreau's (x, y, z, w).
        let want = m.q_from_mujoco(&stiff[1..]).unwrap();
        let d = (&state.q - &want).amax();
        let d_soft = (&state.q - m.q_from_mujoco(&soft[1..]).unwrap()).amax();
        println!(
            "t = {:.2}: max |Δq| {d:.1e} from stiff MuJoCo, {d_soft:.1e} from its default",
            state.t
        );
        if state.t > 0.0 {
            worst = worst.max(d);
        }
        check(&state, &want);
    }
    (worst, state)
}

/// tests/data/mujoco/mocap.json.
#[derive(Deserialize)]
struct MocapReference {
    /// Each mocap body's pose from t = 0: position, quaternion (w x y z).
    mocap: Vec<[f64; 7]>,
    qpos: Vec<Vec<f64>>,
    qpos_stiff: Vec<Vec<f64>>,
}

/// mocap.xml for 1 s under gravity, its two mocap bodies moved at t = 0: a
/// free box welded to one follows its turn and shift, an arm's tip held on
/// the other by a `connect` follows it; moreau's rigid rows against
/// MuJoCo's stiffest, every coordinate every 0.25 s.
#[test]
fn welds_and_connects_to_mocap_bodies_match_mujoco() {
    use moreau::math::{SE3, Vec3};
    use nalgebra::{Quaternion, UnitQuaternion};
    let r: MocapReference = reference("mocap.json", include_str!("data/mujoco/mocap.json"));
    let (m, model, mut sim) = data_file_simulator("mocap.xml");
    // The mocap bodies jump at t = 0 (the box 20 cm from its weld's pose):
    // recovered as MuJoCo's stiffest rows recover them, unbounded (by
    // default at 5 m/s; at 1 m/s below).
    sim.params.max_equality_recovery_speed = None;
    assert_eq!(model.mocap.len(), 2);
    assert_eq!(
        (model.mocap[0].name.as_str(), model.mocap[1].name.as_str()),
        ("target", "pointer")
    );
    assert_eq!(model.body_equalities.len(), 2);
    for (i, p) in r.mocap.iter().enumerate() {
        let q = UnitQuaternion::from_quaternion(Quaternion::new(p[3], p[4], p[5], p[6]));
        sim.set_mocap_pose(i, SE3::from_quaternion(&q, Vec3::new(p[0], p[1], p[2])))
            .unwrap();
    }
    let (worst, state) = follow_stiff_rows(&m, &mut sim, (&r.qpos, &r.qpos_stiff), |_, _| {});
    // The box and the arm moved (a pose ignored would leave them).
    let start = m.q_from_mujoco(&r.qpos_stiff[0][1..]).unwrap();
    assert!((&state.q - &start).amax() > 0.2);
    // (Measured 1.9e-6 with the default mocap compliance, 8.1e-7 rigid:
    // the weld and the connect hold to MuJoCo's stiffest.)
    assert!(worst < 1e-5, "worst |Δq| from stiff MuJoCo {worst:e}");
    let (_, _, mut rigid) = data_file_simulator("mocap.xml");
    rigid.params.max_equality_recovery_speed = None;
    rigid.params.mocap_compliance = 0.0;
    for (i, p) in r.mocap.iter().enumerate() {
        let q = UnitQuaternion::from_quaternion(Quaternion::new(p[3], p[4], p[5], p[6]));
        rigid
            .set_mocap_pose(i, SE3::from_quaternion(&q, Vec3::new(p[0], p[1], p[2])))
            .unwrap();
    }
    let (worst_rigid, _) = follow_stiff_rows(&m, &mut rigid, (&r.qpos, &r.qpos_stiff), |_, _| {});
    println!(
        "worst |Δq| from stiff MuJoCo: {worst:.1e} (mocap compliance {}), {worst_rigid:.1e} rigid",
        sim.params.mocap_compliance
    );
    assert!(worst_rigid < 1e-5, "rigid: {worst_rigid:e}");

    // The equalities' recovery bounded at 1 m/s (rad/s): the welds' errors
    // (0.77 at the jump) close over tenths of a second, where unbounded
    // they close in a few steps; closed within 1 s either way.
    let run = |bound: Option<f64>| {
        let (m, _, mut sim) = data_file_simulator("mocap.xml");
        sim.params.max_equality_recovery_speed = bound;
        for (i, p) in r.mocap.iter().enumerate() {
            let q = UnitQuaternion::from_quaternion(Quaternion::new(p[3], p[4], p[5], p[6]));
            sim.set_mocap_pose(i, SE3::from_quaternion(&q, Vec3::new(p[0], p[1], p[2])))
                .unwrap();
        }
        let nv = m.model.nv;
        let mut state = moreau::sim::State::new(m.q0.clone(), nalgebra::DVector::zeros(nv));
        let mut errors = Vec::new();
        for _ in 0..(1.0 / m.timestep).round() as usize {
            sim.step(&mut state, &vec![0.0; nv]).unwrap();
            // (The rows' errors at the step's start.)
            let rows = &sim.extra_rows().rows;
            errors.push(
                rows.iter()
                    .map(|row| row.violation.abs())
                    .fold(0.0, f64::max),
            );
        }
        errors
    };
    let (bounded, free) = (run(Some(1.0)), run(None));
    let early = (0.05 / m.timestep).round() as usize;
    println!(
        "weld error at the jump {:.3}; after 0.05 s {:.2e} unbounded, {:.3} bounded; after 1 s {:.1e}",
        bounded[0],
        free[early],
        bounded[early],
        bounded[bounded.len() - 1]
    );
    assert!(free[early] < 1e-2 * free[0] && bounded[early] > 0.5 * bounded[0]);
    assert!(bounded[bounded.len() - 1] < 1e-3);
}

/// tests/data/mujoco/wrapping.json.
#[derive(Deserialize)]
struct WrappingReference {
    versions: Versions,
    tendons: Vec<String>,
    states: Vec<WrappingState>,
    ctrl: Vec<f64>,
    trajectory: Vec<Vec<f64>>,
    /// Per tendon, how many of the run's steps had its path through k
    /// points (2: straight, 4: wrapped, 5: over the pulley).
    steps_by_path_points: Vec<Vec<usize>>,
    probe_radius: f64,
    probes: Vec<WrapProbe>,
}

/// Four tendons from point a to point b (mocap sites) around a sphere and
/// a cylinder (axis z) at the origin, each without and with the side
/// site s: `points` a, b, s; MuJoCo's lengths and path point counts.
#[derive(Deserialize)]
struct WrapProbe {
    points: [[f64; 3]; 3],
    ten_length: [f64; 4],
    ten_wrapnum: [usize; 4],
}

/// MuJoCo's tendons and forces at one random state (`mj_forward`).
#[derive(Deserialize)]
struct WrappingState {
    qpos: Vec<f64>,
    qvel: Vec<f64>,
    ctrl: Vec<f64>,
    ten_length: Vec<f64>,
    #[serde(rename = "ten_J")]
    ten_jacobian: Vec<Vec<f64>>,
    ten_wrapnum: Vec<usize>,
    qfrc_actuator: Vec<f64>,
}

/// wrapping.xml: spatial tendons over a sphere fixed in the world, around
/// a cylinder carried by a moving body (a side site choosing the side),
/// over a pulley and through a ring (a side site inside: the path touches
/// from within), with springs, a motor and a position servo on tendons.
/// At 40 random states, the lengths and Jacobians are MuJoCo's to
/// rounding, and so are the actuators' generalized forces (through the
/// tendons' Jacobians); then 1 s of the model under constant controls
/// follows MuJoCo's Euler run (no constraint rows: the same step).
#[test]
fn spatial_tendons_wrap_as_mujocos() {
    use moreau::model::Coordinate;
    use moreau::sim::State;
    let r: WrappingReference =
        reference("wrapping.json", include_str!("data/mujoco/wrapping.json"));
    assert_eq!(r.versions.mujoco, "4.0.0");
    let (m, model, mut sim) = data_file_simulator("wrapping.xml");
    let names: Vec<&str> = model.tendons.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, r.tendons);
    let nv = model.nv;
    let mut data = Data::new(&model);
    let (mut worst_length, mut worst_jacobian, mut worst_ring, mut worst_force) =
        (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let mut wrapped = vec![0usize; model.tendons.len()];
    for s in &r.states {
        let q = m.q_from_mujoco(&s.qpos).unwrap();
        forward_kinematics(&model, &mut data, q.as_slice());
        for (t, tendon) in model.tendons.iter().enumerate() {
            let mut jac = Vec::new();
            let length = moreau::sim::rows::coordinate(
                &model,
                Coordinate::Tendon(t),
                &data,
                q.as_slice(),
                1.0,
                &mut jac,
            );
            let mut dense = vec![0.0; nv];
            for (k, c) in jac {
                dense[k] += c;
            }
            worst_length = worst_length.max((length - s.ten_length[t]).abs());
            let dj = (0..nv)
                .map(|k| (dense[k] - s.ten_jacobian[t][k]).abs())
                .fold(0.0, f64::max);
            // MuJoCo finds the ring's touching point by Newton's method to
            // |f| ≤ 1e-6 of its equation, moreau to rounding: the point,
            // hence the Jacobian, differ at first order, the length at second.
            if tendon.name == "through_ring" {
                worst_ring = worst_ring.max(dj);
            } else {
                worst_jacobian = worst_jacobian.max(dj);
            }
            wrapped[t] += usize::from(s.ten_wrapnum[t] == 4);
        }
        let mut tau = vec![0.0; nv];
        moreau::sim::actuator_forces(
            &model,
            q.as_slice(),
            &s.qvel,
            &s.ctrl,
            &[],
            m.timestep,
            &mut tau,
        );
        for k in 0..nv {
            worst_force = worst_force.max((tau[k] - s.qfrc_actuator[k]).abs());
        }
    }
    println!(
        "wrapped at {wrapped:?} of {} states; max |ΔL| {worst_length:.1e}, |ΔJ| {worst_jacobian:.1e} (the ring's {worst_ring:.1e}), |Δqfrc_actuator| {worst_force:.1e}",
        r.states.len()
    );
    // Both cases met: the sphere wraps at some states and not at others;
    // the side site keeps the drum's path wrapped, the ring's touching.
    assert!(
        wrapped[0] > 5 && wrapped[0] < r.states.len() - 5,
        "{wrapped:?}"
    );
    assert_eq!((wrapped[2], wrapped[4]), (r.states.len(), r.states.len()));
    assert!(worst_length < 1e-12, "max |ΔL| {worst_length:e}");
    assert!(worst_jacobian < 1e-12, "max |ΔJ| {worst_jacobian:e}");
    assert!(worst_ring < 1e-5, "the ring's max |ΔJ| {worst_ring:e}");
    assert!(worst_force < 1e-5, "max |Δqfrc_actuator| {worst_force:e}");

    // The geometry alone, between random points: whether the path wraps
    // and its length, as MuJoCo's, with and without a side site (inside
    // or outside the obstacle).
    let (mut worst_probe, mut kinds) = (0.0f64, [[0usize; 2]; 4]);
    for p in &r.probes {
        let [a, b, s] = p.points.map(|x| Vec3::new(x[0], x[1], x[2]));
        for (k, (cylinder, side)) in [
            (false, None),
            (false, Some(&s)),
            (true, None),
            (true, Some(&s)),
        ]
        .into_iter()
        .enumerate()
        {
            let w =
                moreau::dynamics::wrap(&a, &b, &SE3::identity(), r.probe_radius, cylinder, side);
            let length = match &w {
                None => (b - a).norm(),
                Some(w) => (w.touch[0] - a).norm() + w.arc + (b - w.touch[1]).norm(),
            };
            assert_eq!(
                w.is_some(),
                p.ten_wrapnum[k] == 4,
                "probe {:?}, tendon {k}: wrapped {:?}, MuJoCo's path points {}",
                p.points,
                w,
                p.ten_wrapnum[k]
            );
            kinds[k][usize::from(w.is_some())] += 1;
            worst_probe = worst_probe.max((length - p.ten_length[k]).abs());
        }
    }
    println!("probes (straight, wrapped) per tendon {kinds:?}: max |ΔL| {worst_probe:.1e}");
    assert!(worst_probe < 1e-9, "max |ΔL| {worst_probe:e}");
    assert!(kinds.iter().all(|k| k[0] > 20 && k[1] > 20), "{kinds:?}");

    // The run: the sphere's and the drum's paths wrap on part of it.
    assert!(r.steps_by_path_points[0][4] > 100 && r.steps_by_path_points[2][4] > 100);
    let mut state = State::new(m.q0.clone(), nalgebra::DVector::zeros(nv));
    // The arm through the ring (its path's touching point found to
    // MuJoCo's Newton tolerance there) apart, the step is MuJoCo's.
    let ring = model.joint_idx_q[model.body_id("arm4").unwrap()];
    let (mut worst, mut worst_ring) = (0.0f64, 0.0f64);
    for row in &r.trajectory {
        while (state.t - row[0]).abs() > 1e-9 {
            sim.step_controls(&mut state, &r.ctrl).unwrap();
        }
        let want = m.q_from_mujoco(&row[1..]).unwrap();
        let d = &state.q - &want;
        let others = (0..model.nq)
            .filter(|&i| i != ring)
            .map(|i| d[i].abs())
            .fold(0.0, f64::max);
        println!(
            "t = {:.1}: max |Δq| {others:.1e}, the ring's arm {:.1e}",
            state.t,
            d[ring].abs()
        );
        worst = worst.max(others);
        worst_ring = worst_ring.max(d[ring].abs());
    }
    assert!(worst < 1e-12, "max |Δq| {worst:e}");
    assert!(worst_ring < 1e-6, "the ring's arm: max |Δq| {worst_ring:e}");
}

/// tests/data/mujoco/dampratio.json.
#[derive(Deserialize)]
struct DampratioReference {
    versions: Versions,
    actuators: Vec<String>,
    gain: Vec<f64>,
    bias: Vec<[f64; 3]>,
    ctrl: Vec<f64>,
    trajectory: Vec<Vec<f64>>,
}

/// dampratio.xml: servos damped by `dampratio` (on a hinge with armature,
/// a geared slide, a fixed and a spatial tendon, an intvelocity servo, an
/// element's dampratio over its class's kv) get MuJoCo's velocity gain
/// `2 ζ √(kp m)` with its reflected inertia at `qpos0`, and 1 s under
/// constant controls is MuJoCo's run.
#[test]
fn servo_dampratio_is_mujocos() {
    use moreau::sim::State;
    let r: DampratioReference =
        reference("dampratio.json", include_str!("data/mujoco/dampratio.json"));
    assert_eq!(r.versions.mujoco, "4.0.0");
    let (m, model, mut sim) = data_file_simulator("dampratio.xml");
    let names: Vec<&str> = model.actuators.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, r.actuators);
    for ((a, gain), bias) in model.actuators.iter().zip(&r.gain).zip(&r.bias) {
        assert_eq!(a.gain, *gain, "{}", a.name);
        for k in 0..3 {
            assert!(
                (a.bias[k] - bias[k]).abs() < 1e-12 * bias[k].abs().max(1.0),
                "{}: bias {:?} against MuJoCo's {bias:?}",
                a.name,
                a.bias
            );
        }
    }
    let mut state = State::new(m.q0.clone(), nalgebra::DVector::zeros(model.nv));
    let mut worst = 0.0f64;
    for row in &r.trajectory {
        while (state.t - row[0]).abs() > 1e-9 {
            sim.step_controls(&mut state, &r.ctrl).unwrap();
        }
        let want = m.q_from_mujoco(&row[1..]).unwrap();
        worst = worst.max((&state.q - &want).amax());
    }
    let moved = (&state.q - &m.q0).amax();
    println!(
        "max |Δq| {worst:.1e} over 1 s, in which the servos moved the joints by up to {moved:.2}"
    );
    assert!(moved > 0.05, "{moved}");
    assert!(worst < 1e-9, "max |Δq| {worst:e}");
}
