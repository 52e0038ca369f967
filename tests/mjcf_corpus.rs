//! The robot files RL users bring, read as MuJoCo reads them: every
//! dm_control suite file and mjlab's Unitree G1 and Go1, from the installed
//! packages (`scripts/fetch-robot-files`), against MuJoCo's numbers for the
//! same files (tests/data/mujoco/corpus.json, written by
//! tests/data/mujoco/mujoco_reference.py with MuJoCo 4.0.0).
//!
//! Each file loads with MuJoCo's `nq`, `nv` and `nbody`, each body's mass
//! within 1e-6 relative, the mass matrix at `qpos0` within 1e-9 of its
//! largest entry, every hinge and slide dof's damping, stiffness and dry
//! friction within 1e-9 relative (`springdamper` resolved as MuJoCo does), and every actuator either mapped or named in a warning
//! (none dropped silently). Then 1 s of passive settling from `qpos0`, zero
//! controls, at the file's time step (from `qpos0` with the joints it puts
//! beyond their ranges moved onto them): the root body against MuJoCo's
//! semi-implicit Euler run, within 2 cm of it or of MuJoCo's run with its
//! constraints as stiff as it allows (MuJoCo's own approach to rigid
//! contacts; the printout gives both distances), or, where those two
//! MuJoCo runs are further apart than 2 cm, within their distance. Files whose loading warns about physics moreau
//! does not simulate yet (unmapped actuators, equalities it does not
//! read) are printed with their distance, not held to 2 cm;
//! `condim` 4 and 6 (torsional and rolling friction: the dog's and the
//! quadruped's, simulated) are held.

mod common;

use moreau::dynamics::{Data, crba, forward_kinematics};
use moreau::load::mjcf::{MjcfModel, MjcfOptions, load_mjcf};
use moreau::math::Vec3;
use moreau::sim::{OVERLAP_COMPLIANCE, SimParams, Simulator, State};
use nalgebra::{DMatrix, DVector};
use serde::Deserialize;
use std::sync::Arc;

/// Files whose start is an upright, unstable equilibrium of the rigid
/// model (both feet flat, every body's centre of mass above its joint):
/// docs/mjcf.md measures why moreau stands and MuJoCo falls.
const UPRIGHT: &[&str] = &["dm_control/suite/walker.xml"];

#[derive(Deserialize)]
struct Corpus {
    settle_seconds: f64,
    models: Vec<Reference>,
}

#[derive(Deserialize)]
struct Reference {
    /// Relative to the site-packages directory.
    file: String,
    nq: usize,
    nv: usize,
    nu: usize,
    nbody: usize,
    timestep: f64,
    qpos0: Vec<f64>,
    body_mass: Vec<f64>,
    armature: Vec<f64>,
    dof_damping: Vec<f64>,
    dof_frictionloss: Vec<f64>,
    /// Each hinge or slide dof's joint stiffness (`springdamper` resolved).
    dof_stiffness: Vec<f64>,
    /// `mj_fullM` minus `dof_armature` at `qpos0`.
    mass_matrix: Vec<Vec<f64>>,
    /// Where the settle starts: qpos0 with the joints it puts beyond their
    /// ranges moved onto them.
    settle_qpos_start: Vec<f64>,
    /// (time, x, y, z) of body 1's frame during the settle.
    settle_root_xpos: Vec<[f64; 4]>,
    /// The same with MuJoCo's constraints as stiff as it allows.
    settle_root_xpos_stiff: Vec<[f64; 4]>,
    settle_ncon: usize,
    /// Every body's position every 0.25 s of both settles, after the
    /// start: (time, positions) (manipulation.json).
    #[serde(default)]
    settle_xpos: Vec<(f64, Vec<[f64; 3]>)>,
    #[serde(default)]
    settle_xpos_stiff: Vec<(f64, Vec<[f64; 3]>)>,
    /// At those times, the largest distance between one body's positions
    /// in MuJoCo's two runs at any step so far: (time, metres).
    #[serde(default)]
    settle_spread: Vec<[f64; 2]>,
}

fn corpus() -> Corpus {
    serde_json::from_str(include_str!("data/mujoco/corpus.json")).expect("corpus.json")
}

/// Warnings that name physics moreau does not simulate yet.
fn unsimulated(m: &MjcfModel) -> Vec<&String> {
    m.warnings
        .iter()
        .filter(|w| {
            [
                "equality constraints are not supported",
                "inactive",
                "not mapped",
                "hfield",
                "not simulated",
            ]
            .iter()
            .any(|k| w.contains(k))
        })
        .collect()
}

/// MuJoCo's mass matrix in moreau's velocity coordinates: a free joint's
/// linear velocity is the body's own (MuJoCo: the world's), `v_mj = T v`
/// with `T = R` on those three dofs, so `M = Tᵀ M_mj T`.
fn in_moreau_coordinates(m: &MjcfModel, data: &Data, mj: &DMatrix<f64>) -> DMatrix<f64> {
    let model = &m.model;
    let mut t = DMatrix::<f64>::identity(model.nv, model.nv);
    for b in 1..model.nbodies {
        if model.joint_type[b] == moreau::model::JointType::Free {
            let i = model.joint_idx_v[b];
            let r = data.world_from_body[b].rotation;
            t.view_mut((i, i), (3, 3)).copy_from(&r);
        }
    }
    t.transpose() * mj * t
}

/// What [`load_and_settle`] found for one file.
struct Settled {
    /// Some pair of its geoms collides with torsional or rolling friction
    /// (`condim` 4 or 6, simulated: cone rows).
    torsional: bool,
    /// Where the settle started, and the state it ended in.
    start: DVector<f64>,
    state: State,
    /// The root body's largest distance from MuJoCo's run and from its
    /// stiffest run.
    worst_settle: f64,
    worst_stiff: f64,
    /// The loader's warnings naming physics moreau does not simulate.
    gaps: Vec<String>,
    /// The step that failed, and why (the settle stopped there).
    failed: Option<String>,
    /// Where the reference has every body's positions: at the settle's
    /// end, the body furthest from MuJoCo's two runs (its distance from
    /// the nearer one) and its name.
    worst_body: Option<(f64, String)>,
    /// Where the reference has every body's positions: the largest
    /// distance between one body's positions in MuJoCo's two runs at any
    /// step so far (how far the motion moves with the constraints'
    /// softness alone), at the last time compared.
    spread: f64,
    /// The first time at which some body is further than 2 cm from
    /// MuJoCo's nearer run and than `spread` was then: (time, distance,
    /// spread, body).
    beyond: Option<(f64, f64, f64, String)>,
    /// The loader warned of geometries overlapping at qpos0, and the settle
    /// ran with `OVERLAP_COMPLIANCE`.
    overlap_compliance: bool,
    /// When the settle first had a contact (s after its start).
    first_contact: Option<f64>,
    /// Steps with a joint at a stop (a limit row active).
    at_stops: usize,
}

/// Whether the loader warned that `m`'s colliding geometries overlap at
/// `qpos0` (the warning names [`OVERLAP_COMPLIANCE`]'s parameter).
fn overlaps_at_qpos0(m: &MjcfModel) -> bool {
    m.warnings
        .iter()
        .any(|w| w.contains("pair(s) of geometries overlap"))
}

/// Loads reference `r`'s file, checks what it loads against MuJoCo's numbers
/// (sizes, time step, actuators, every body's mass, the dofs' damping,
/// stiffness and dry friction, the mass matrix at `qpos0`), then settles
/// it passively for `settle_seconds` against MuJoCo's runs; prints a line.
fn load_and_settle(
    files: &common::RobotFiles,
    settle_seconds: f64,
    r: &Reference,
    max_recovery_speed: Option<f64>,
) -> Settled {
    let path = files.site_packages.join(&r.file);
    let m = load_mjcf(&path, &MjcfOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let torsional = !m.model.spin_pairs().is_empty();
    let model = &m.model;
    assert_eq!(
        (model.nq, model.nv, m.bodies),
        (r.nq, r.nv, r.nbody),
        "{}",
        r.file
    );
    assert_eq!(m.timestep, r.timestep, "{}", r.file);
    // No actuator dropped silently.
    let unmapped = m
        .warnings
        .iter()
        .filter(|w| w.starts_with("<") && w.contains("not mapped"))
        .count();
    assert_eq!(
        model.actuators.len() + unmapped,
        r.nu,
        "{}: {} actuators mapped, {unmapped} named as not mapped, MuJoCo has {}",
        r.file,
        model.actuators.len(),
        r.nu
    );
    // Every MJCF body's own mass.
    let mut worst_mass: f64 = 0.0;
    for (b, want) in r.body_mass.iter().enumerate().skip(1) {
        let got = model.frames[b - 1].inertia.map_or(0.0, |i| i.mass);
        let err = (got - want).abs() / want.abs().max(1e-300);
        assert!(
            err < 1e-6 || (got - want).abs() < 1e-12,
            "{} body {b} ({}): mass {got} vs MuJoCo's {want}",
            r.file,
            m.mjcf_bodies[b].name
        );
        worst_mass = worst_mass.max(if *want > 0.0 { err } else { 0.0 });
    }
    // Every hinge and slide dof's damping, stiffness (MuJoCo resolves
    // `springdamper` from the dof's inertia at qpos0), dry friction.
    for k in 0..model.nv {
        let joint = model.dof_body[k];
        if !matches!(
            model.joint_type[joint],
            moreau::model::JointType::Revolute(_) | moreau::model::JointType::Prismatic(_)
        ) {
            continue;
        }
        for (what, got, want) in [
            ("damping", model.dof_damping[k], r.dof_damping[k]),
            ("stiffness", model.dof_stiffness[k], r.dof_stiffness[k]),
            (
                "frictionloss",
                model.dof_frictionloss[k],
                r.dof_frictionloss[k],
            ),
        ] {
            assert!(
                (got - want).abs() <= 1e-9 * want.abs(),
                "{} dof {k} ({}): {what} {got} vs MuJoCo's {want}",
                r.file,
                model.joint_name[joint]
            );
        }
    }
    // The mass matrix at qpos0, armature included on both sides.
    let q0 = m.q_from_mujoco(&r.qpos0).unwrap();
    assert!((&m.q0 - &q0).norm() < 1e-9, "{}: qpos0", r.file);
    let mut data = Data::new(model);
    forward_kinematics(model, &mut data, q0.as_slice());
    let mut mj = DMatrix::from_fn(r.nv, r.nv, |i, j| r.mass_matrix[i][j]);
    for (k, a) in r.armature.iter().enumerate() {
        mj[(k, k)] += a;
    }
    let mj = in_moreau_coordinates(&m, &data, &mj);
    let ours = crba(model, &mut data, q0.as_slice()).clone();
    let scale = mj.amax().max(1e-300);
    let worst_m = (&ours - &mj).amax() / scale;
    assert!(worst_m < 1e-9, "{}: mass matrix {worst_m:e}", r.file);

    // 1 s of passive settling.
    let model = Arc::new(model.clone());
    // A file whose geometries overlap at qpos0 settles with the
    // penetration compliance the loader's warning names.
    let overlap_compliance = overlaps_at_qpos0(&m);
    let params = SimParams {
        dt: r.timestep,
        max_recovery_speed,
        penetration_compliance: if overlap_compliance {
            OVERLAP_COMPLIANCE
        } else {
            0.0
        },
        ..Default::default()
    };
    let mut sim = Simulator::new(model.clone(), params).unwrap();
    let start = m.q_from_mujoco(&r.settle_qpos_start).unwrap();
    let mut state = State::new(start.clone(), DVector::zeros(model.nv));
    let ctrl = vec![0.0; model.nu()];
    let root = &m.mjcf_bodies[1.min(m.mjcf_bodies.len() - 1)];
    let mut data = Data::new(&model);
    let mut worst_settle: f64 = 0.0;
    let mut last_root = Vec3::zeros();
    let mut worst_stiff: f64 = 0.0;
    let mut contacts = 0;
    let steps = (settle_seconds / r.timestep).round() as usize;
    let mut step = 0;
    let mut failed = None;
    let mut unconverged = 0;
    let mut at_stops = 0;
    let (mut worst_body, mut spread, mut beyond) = (None, 0.0f64, None);
    let mut first_contact = None;
    for (k, rec) in r.settle_root_xpos.iter().enumerate() {
        let until = (rec[0] / r.timestep).round() as usize;
        while step < until && failed.is_none() {
            match sim.step_controls(&mut state, &ctrl) {
                Ok(report) => {
                    contacts = report.nc;
                    if report.nc > 0 && first_contact.is_none() {
                        first_contact = Some(step as f64 * r.timestep);
                    }
                    unconverged += report.solver.is_some_and(|s| !s.converged) as usize;
                    at_stops += !sim.limits().is_empty() as usize;
                }
                Err(e) => failed = Some(format!("step {step}: {e}")),
            }
            step += 1;
        }
        forward_kinematics(&model, &mut data, state.q.as_slice());
        let p = data.world_from_body[root.body]
            .mul(&root.body_from_mjcf)
            .translation;
        worst_settle = worst_settle.max((p - Vec3::new(rec[1], rec[2], rec[3])).norm());
        let st = r.settle_root_xpos_stiff[k];
        worst_stiff = worst_stiff.max((p - Vec3::new(st[1], st[2], st[3])).norm());
        last_root = p;
        // Every body against MuJoCo's two runs at this time, each the
        // nearer one; the runs' own distance, the largest so far.
        if k > 0 && k <= r.settle_xpos.len() && failed.is_none() {
            let (a, b) = (&r.settle_xpos[k - 1], &r.settle_xpos_stiff[k - 1]);
            let apart = r.settle_spread[k - 1];
            assert!(
                [a.0, b.0, apart[0]]
                    .iter()
                    .all(|t| (t - rec[0]).abs() < 1e-9)
            );
            spread = apart[1];
            let mut worst = (0.0f64, String::new());
            for (i, mb) in m.mjcf_bodies.iter().enumerate().skip(1) {
                let p = data.world_from_body[mb.body]
                    .mul(&mb.body_from_mjcf)
                    .translation;
                let d = [&a.1[i], &b.1[i]].map(|x| (p - Vec3::from(*x)).norm());
                if d[0].min(d[1]) > worst.0 {
                    worst = (d[0].min(d[1]), mb.name.clone());
                }
            }
            if beyond.is_none() && worst.0 >= spread.max(0.02) {
                beyond = Some((rec[0], worst.0, spread, worst.1.clone()));
            }
            worst_body = Some(worst);
        }
    }
    assert!(step == steps || failed.is_some(), "{}", r.file);
    assert!(state.q.iter().all(|x| x.is_finite()), "{}", r.file);
    let gaps = unsimulated(&m);
    println!(
        "{}: nq {} nv {} nu {}/{}; body masses within {worst_mass:.1e}, mass matrix {worst_m:.1e}; root body after {} s at {:.4?}, within {:.4} m of MuJoCo's, {:.4} m of MuJoCo's with its stiffest constraints ({} contacts, MuJoCo {}; {unconverged} solves unconverged{}){}",
        r.file,
        model.nq,
        model.nv,
        model.nu(),
        r.nu,
        settle_seconds,
        last_root.as_slice(),
        worst_settle,
        worst_stiff,
        contacts,
        r.settle_ncon,
        if torsional {
            ", torsional or rolling friction"
        } else {
            ""
        },
        if gaps.is_empty() {
            String::new()
        } else {
            let short: Vec<String> = gaps.iter().map(|w| w.chars().take(90).collect()).collect();
            format!("; not simulated: {short:?}")
        }
    );
    if let Some(f) = &failed {
        println!("    the settle stopped at {f}");
    }
    if let Some((d, name)) = &worst_body {
        println!(
            "    every body within {d:.4} m of MuJoCo's nearer run (furthest: `{name}`); MuJoCo's two runs {spread:.4} m apart"
        );
    }
    Settled {
        worst_body,
        spread,
        beyond,
        overlap_compliance,
        first_contact,
        at_stops,
        torsional,
        start,
        state,
        worst_settle,
        worst_stiff,
        gaps: gaps.into_iter().cloned().collect(),
        failed,
    }
}

#[test]
fn dm_control_suite_and_unitree_robots_load_and_settle_like_mujoco() {
    let Some(files) = common::robot_files() else {
        return;
    };
    let corpus = corpus();
    // Every suite file has its reference.
    let suite = files.site_packages.join("dm_control/suite");
    let mut on_disk: Vec<String> = std::fs::read_dir(&suite)
        .unwrap_or_else(|e| panic!("{}: {e}", suite.display()))
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".xml"))
        .map(|n| format!("dm_control/suite/{n}"))
        .collect();
    on_disk.sort();
    let referenced: Vec<&str> = corpus
        .models
        .iter()
        .map(|r| r.file.as_str())
        .filter(|f| f.starts_with("dm_control/"))
        .collect();
    assert_eq!(on_disk, referenced);
    let (mut held, mut far) = (0, Vec::new());
    let mut torsional = Vec::new();
    for r in &corpus.models {
        let Settled {
            torsional: spinning,
            start,
            state,
            worst_settle,
            worst_stiff,
            gaps,
            failed,
            ..
        } = load_and_settle(&files, corpus.settle_seconds, r, None);
        assert_eq!(failed, None, "{}", r.file);
        if spinning {
            torsional.push(r.file.as_str());
        }
        if UPRIGHT.contains(&r.file.as_str()) {
            // An unstable equilibrium: the rigid model stays on it (moreau
            // leaves it only as rounding grows), MuJoCo's soft contacts
            // tilt the feet on landing and it falls; with its stiffest
            // contacts MuJoCo stands too. All three checked.
            let moved = (&state.q - &start).amax();
            let mj_moved = r.settle_root_xpos.iter().fold(0.0f64, |a, p| {
                let p0 = r.settle_root_xpos[0];
                a.max((p[1] - p0[1]).hypot(p[3] - p0[3]))
            });
            println!(
                "    upright start: moreau's q moved {moved:.1e} in {} s (rigid: stays), MuJoCo's root moved {mj_moved:.3} m",
                corpus.settle_seconds
            );
            assert!(
                moved < 1e-6 && mj_moved > 0.02 && worst_stiff < 0.02,
                "{}",
                r.file
            );
        } else if gaps.is_empty() {
            // Within 2 cm of MuJoCo's run, or of its run with constraints as
            // stiff as MuJoCo allows (where the rigid/soft difference is
            // the larger one: the printout says which). Where MuJoCo's two
            // runs are themselves further apart than that (a collapse still
            // under way after 1 s, which the constraints' softness steers:
            // dm_control's dog), within their distance.
            let spread = r
                .settle_root_xpos
                .iter()
                .zip(&r.settle_root_xpos_stiff)
                .map(|(a, b)| Vec3::new(a[1] - b[1], a[2] - b[2], a[3] - b[3]).norm())
                .fold(0.0f64, f64::max);
            let bound = spread.max(0.02);
            if spread > 0.02 {
                println!(
                    "    MuJoCo's default and stiff runs are {spread:.4} m apart: held to that"
                );
            }
            if worst_settle < bound || worst_stiff < bound {
                held += 1;
            } else {
                far.push(format!("{}: {worst_settle:.4} m", r.file));
            }
        }
    }
    assert!(far.is_empty(), "root body beyond 2 cm of MuJoCo's: {far:?}");
    // Exactly the files whose contacts MuJoCo gives condim 6.
    assert_eq!(
        torsional,
        ["dm_control/suite/dog.xml", "dm_control/suite/quadruped.xml"]
    );
    println!(
        "{held} of {} files held to 2 cm of MuJoCo's settle (or to the distance between MuJoCo's own two runs, where larger)",
        corpus.models.len()
    );
}

/// Manipulation files whose passive settle stopped on a step the solver
/// refused while the equalities' recovery was unbounded (measured
/// 2026-12-07, with and without their torsional friction): the hand's weld
/// to its mocap target recovered at `β e / dt` against the arm's stops, a
/// blow-up whose end depends on rounding. With the bound on the
/// equalities' recovery (1 m/s then, 5 m/s since 2026-12-08) and the
/// mocap welds' compliance none stops; with `max_recovery_speed` at 1 m/s
/// (rad/s) too each runs its second.
const SETTLE_REFUSED: &[&str] = &[
    "metaworld/assets/sawyer_xyz/sawyer_box.xml",
    "metaworld/assets/sawyer_xyz/sawyer_coffee.xml",
    "metaworld/assets/sawyer_xyz/sawyer_faucet.xml",
    "metaworld/assets/sawyer_xyz/sawyer_hammer.xml",
    "metaworld/assets/sawyer_xyz/sawyer_peg_unplug_side.xml",
    "metaworld/assets/sawyer_xyz/sawyer_pick_out_of_hole.xml",
    "metaworld/assets/sawyer_xyz/sawyer_pick_place_v3.xml",
    "metaworld/assets/sawyer_xyz/sawyer_pick_place_wall_v3.xml",
    "metaworld/assets/sawyer_xyz/sawyer_push_v3.xml",
    "metaworld/assets/sawyer_xyz/sawyer_push_wall_v3.xml",
    "metaworld/assets/sawyer_xyz/sawyer_reach_push_pick_and_place.xml",
    "metaworld/assets/sawyer_xyz/sawyer_reach_v3.xml",
    "metaworld/assets/sawyer_xyz/sawyer_sweep_tool.xml",
];

/// The manipulation files users bring, as MuJoCo reads them: robosuite
/// 1.5.2's robots and Meta-World 3.1.1's Sawyer scenes (from the installed
/// packages, against tests/data/mujoco/manipulation.json, MuJoCo 4.0.1).
/// Each loads with every check of the suite above (sizes, actuators, every
/// body's mass, the dofs' damping, stiffness and dry friction, the mass
/// matrix at `qpos0`: a free object whose mass sits in a welded child, a
/// flat visual mesh), and settles passively for 1 s without a non-finite
/// value. Torsional friction (`condim` 4) simulated: exactly the files
/// counted below have it. Every body at the settle's end is held within 2
/// cm of MuJoCo's nearer run (its default, or every constraint row as
/// stiff as it allows), or, where those two runs themselves end further
/// apart, within their distance (docs/robot-files.md).
#[test]
fn manipulation_robots_and_scenes_load_like_mujoco() {
    let Some(files) = common::robot_files() else {
        return;
    };
    let corpus: Corpus = serde_json::from_str(include_str!("data/mujoco/manipulation.json"))
        .expect("manipulation.json");
    let robots = files.site_packages.join("robosuite/models/assets/robots");
    let scenes = files.site_packages.join("metaworld/assets/sawyer_xyz");
    if !(robots.is_dir() && scenes.is_dir()) {
        let msg = "robosuite or metaworld not installed: run scripts/fetch-robot-files";
        if std::env::var("MOREAU_REQUIRE_ROBOT_FILES").as_deref() == Ok("1") {
            panic!("{msg} (MOREAU_REQUIRE_ROBOT_FILES=1)");
        }
        eprintln!("SKIPPED: {msg}");
        return;
    }
    // Every robot and scene has its reference.
    let mut on_disk: Vec<String> = std::fs::read_dir(&robots)
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let rel = format!("robosuite/models/assets/robots/{name}/robot.xml");
            files.site_packages.join(&rel).is_file().then_some(rel)
        })
        .collect();
    on_disk.sort();
    let mut scene_files: Vec<String> = std::fs::read_dir(&scenes)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".xml"))
        .map(|n| format!("metaworld/assets/sawyer_xyz/{n}"))
        .collect();
    scene_files.sort();
    on_disk.extend(scene_files);
    let referenced: Vec<&str> = corpus.models.iter().map(|r| r.file.as_str()).collect();
    assert_eq!(on_disk, referenced);
    assert_eq!(corpus.models.len(), 12 + 44);
    let (mut torsional, mut failed) = (Vec::new(), Vec::new());
    let (mut within, mut far, mut beyond) = (Vec::new(), Vec::new(), Vec::new());
    for r in &corpus.models {
        let settled = load_and_settle(&files, corpus.settle_seconds, r, None);
        assert!(settled.state.v.iter().all(|x| x.is_finite()), "{}", r.file);
        let (worst, body) = settled
            .worst_body
            .clone()
            .expect("every body's positions in the reference");
        let compliant = if settled.overlap_compliance {
            ", overlapping: penetration compliance"
        } else {
            ""
        };
        if settled.failed.is_none() && worst < 0.02 {
            within.push(format!("{} ({worst:.3} m{compliant})", r.file));
        } else {
            let why = if settled.at_stops > 0 {
                ", at stops"
            } else {
                ""
            };
            far.push(format!(
                "{} ({worst:.3} m, `{body}`{why}{compliant}; MuJoCo's runs {:.3} m apart)",
                r.file, settled.spread
            ));
        }
        // At every 0.25 s, every body within 2 cm of MuJoCo's nearer run,
        // or, once MuJoCo's own two runs (its default constraints, and
        // every row as stiff as it allows) have parted by more than 2 cm,
        // no further from the nearer than they have been from each other:
        // from there the motion depends on the limits' and welds'
        // softness (an arm falling onto its stops, a redundant arm's
        // self-motion under a weld), as MuJoCo itself measures.
        let parted = PARTED_BY_A_CONTACT.iter().find(|p| p.0 == r.file);
        if let Some((_, until, why)) = parted {
            // The named contact starts before the first time not compared.
            let contact = settled.first_contact.expect("the contact named");
            assert!(
                contact < until + 0.25,
                "{}: first contact at {contact} s",
                r.file
            );
            println!("    compared until {until} s: {why}");
        }
        let until = parted.map_or(f64::INFINITY, |p| p.1);
        if let Some((t, d, spread, body)) = settled.beyond.as_ref().filter(|b| b.0 <= until + 1e-9)
        {
            beyond.push(format!(
                "{} at {t} s: `{body}` {d:.4} m from MuJoCo's nearer run, whose two runs had parted by {spread:.4} m",
                r.file
            ));
        }
        if settled.torsional {
            torsional.push(r.file.as_str());
        }
        if settled.failed.is_some() {
            failed.push(r.file.as_str());
        }
        if settled.failed.is_some() || SETTLE_REFUSED.contains(&r.file.as_str()) {
            // With recovery bounded at 1 m/s (rad/s) the same settle runs
            // its second.
            let bounded = load_and_settle(&files, corpus.settle_seconds, r, Some(1.0));
            assert_eq!(bounded.failed, None, "{}", r.file);
        }
    }
    println!(
        "{} of {} files with every body within 2 cm of MuJoCo's after the settle: {}; the others: {}",
        within.len(),
        corpus.models.len(),
        within.join(", "),
        far.join(", ")
    );
    assert!(beyond.is_empty(), "{}", beyond.join("\n"));
    // Passive settles that stop on a refused step (a flagged solve, never
    // a non-finite state) with unbounded recovery: only those known to.
    println!("settles that stopped with unbounded recovery: {failed:?}");
    assert!(
        failed.iter().all(|f| SETTLE_REFUSED.contains(f)),
        "a settle stopped that is not known to: {failed:?}"
    );
    println!(
        "with torsional or rolling friction (condim 4 or 6): {}",
        torsional.join(", ")
    );
    assert!(torsional.contains(&"robosuite/models/assets/robots/spot/robot.xml"));
    assert_eq!(torsional.len(), 1 + 44, "{torsional:?}");
}

/// Files whose passive settle parts from MuJoCo's further than MuJoCo's own
/// two runs part once a contact starts during it (a strike, arms coming to
/// rest): compared until the time given, the contact checked to start
/// before the next time compared, with the measured contact-model reason.
const PARTED_BY_A_CONTACT: &[(&str, f64, &str)] = &[
    (
        "robosuite/models/assets/robots/spot_arm/robot.xml",
        0.5,
        "the undamped arm's forearm strikes its upper arm at 0.65 s: MuJoCo's soft contact, its stiffest too, gives the strike back (3 mm deep, apart again in 4 steps), the rigid one is inelastic; 3.4 cm from MuJoCo's nearer run at 0.75 s, whose two runs are 0.9 cm apart",
    ),
    (
        "robosuite/models/assets/robots/baxter/robot.xml",
        0.5,
        "both elbows come to rest on the base at 0.27 s, MuJoCo's held 0.5 to 1.9 mm off it by its contact margin, the rigid ones at 0; from there MuJoCo's own two runs part by 5.6 cm at 0.5 s and 20 cm at 0.75 s, moreau's 25.6 cm from the nearer",
    ),
];

/// The installed Meta-World scenes' directory; `None` (skipped with a
/// notice, a failure where robot files are required) without it.
fn meta_world_scenes() -> Option<std::path::PathBuf> {
    installed("metaworld/assets/sawyer_xyz", "metaworld")
}

/// Folder `rel` of the robot files' site-packages, installed by `package`;
/// `None` (skipped with a notice, a failure where robot files are
/// required) without it.
fn installed(rel: &str, package: &str) -> Option<std::path::PathBuf> {
    let files = common::robot_files()?;
    let dir = files.site_packages.join(rel);
    if !dir.is_dir() {
        assert!(
            std::env::var("MOREAU_REQUIRE_ROBOT_FILES").as_deref() != Ok("1"),
            "{package} not installed: run scripts/fetch-robot-files"
        );
        eprintln!("SKIPPED: {package} not installed");
        return None;
    }
    Some(dir)
}

/// Meta-World's Sawyer is driven through its mocap body: every scene
/// declares one (`mocap`), welded to the hand; in `button_press`, the arm
/// started on `right_j1`'s stop and the mocap where the weld holds it
/// there, the hand stays within 1 mm for 2 s, then the mocap moved by
/// (−10, 5, 5) cm carries the hand with it within 1 mm in 1 s, every
/// solve converged.
#[test]
fn meta_worlds_hand_follows_its_mocap_body() {
    let Some(scenes) = meta_world_scenes() else {
        return;
    };
    let options = MjcfOptions::default();
    let mut scene_count = 0;
    for entry in std::fs::read_dir(&scenes).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "xml") {
            continue;
        }
        let m = load_mjcf(&path, &options).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.model.mocap.len(), 1, "{}", path.display());
        assert_eq!(m.model.mocap[0].name, "mocap");
        // Its frames: its body's and its site's, both named `mocap`.
        let frames = &m.model.mocap[0].frames;
        assert_eq!(frames.len(), 2);
        assert!(frames.iter().all(|&f| m.model.frames[f].name == "mocap"));
        assert!(
            m.warnings.iter().all(|w| !w.contains("mocap")),
            "{:?}",
            m.warnings
        );
        let welded = (m.model.body_equalities.iter())
            .filter(|e| e.mocap == [Some(0), None] && e.rotation.is_some())
            .count();
        assert_eq!(
            welded,
            1,
            "{}: the hand's weld to the mocap",
            path.display()
        );
        scene_count += 1;
    }
    assert_eq!(scene_count, 44);

    let m = load_mjcf(scenes.join("sawyer_button_press.xml"), &options).unwrap();
    let model = Arc::new(m.model.clone());
    let params = SimParams {
        dt: m.timestep,
        ..Default::default()
    };
    let mut sim = Simulator::new(model.clone(), params).unwrap();
    // The file's qpos0 has `right_j1` at 0, outside its range [-3.8, -0.5]:
    // the arm starts on that stop, and the mocap where the weld holds the
    // hand at that start (Meta-World's reset moves its mocap to the hand).
    let mut q0 = m.q0.clone();
    let j1 = model
        .joint_name
        .iter()
        .position(|n| n == "right_j1")
        .unwrap();
    q0[model.joint_idx_q[j1]] = -0.5;
    let mut state = State::new(q0.clone(), DVector::zeros(model.nv));
    let hand = model
        .frames
        .iter()
        .find(|f| f.name == "hand")
        .unwrap()
        .clone();
    let mut data = Data::new(&model);
    let mut hand_pose = |q: &DVector<f64>| {
        forward_kinematics(&model, &mut data, q.as_slice());
        data.world_from_body[hand.body].mul(&hand.body_from_frame)
    };
    let (at_file, at_start) = (hand_pose(&m.q0), hand_pose(&q0));
    let start = at_start.mul(&at_file.inverse()).mul(&model.mocap[0].pose);
    sim.set_mocap_pose(0, start).unwrap();
    let ctrl = vec![0.0; model.nu()];
    let steps = (0.5 / m.timestep).round() as usize;
    let run = |sim: &mut Simulator, state: &mut State, n: usize| {
        for _ in 0..n {
            let report = sim.step_controls(state, &ctrl).unwrap();
            assert!(report.solver.is_none_or(|s| s.converged));
        }
    };
    run(&mut sim, &mut state, 2 * steps);
    let settled = hand_pose(&state.q).translation;
    println!(
        "hand held {:.1e} m from its start",
        (settled - at_start.translation).norm()
    );
    assert!((settled - at_start.translation).norm() < 1e-3);
    let mut target = start;
    let shift = Vec3::new(-0.1, 0.05, 0.05);
    target.translation += shift;
    sim.set_mocap_pose(0, target).unwrap();
    run(&mut sim, &mut state, 2 * steps);
    let moved = hand_pose(&state.q).translation - settled;
    println!("hand moved {moved:?} for a mocap shift of {shift:?}");
    // (Measured 1.4e-4 m off, held 1.5e-4 m: the weld's compliance holding the arm's
    // weight. Towards the robot: a shift outwards from this start, the arm
    // near full reach, meets its joints' stops.)
    assert!((moved - shift).norm() < 1e-3, "hand moved {moved:?}");
}

/// Meta-World's scenes that start with an object wedged into its fixture
/// (overlapping on opposite sides at `qpos0`, where MuJoCo's soft contacts
/// hold it): no velocity recovers both penetrations, so with rigid
/// contacts (`penetration_compliance` 0, the default) the problem has no
/// solution and its solves end unconverged (measured 2026-12-07: every
/// one of their steps); the penetration's compliance
/// ([`OVERLAP_COMPLIANCE`]) makes them well-posed.
const WEDGED: &[&str] = &["sawyer_peg_unplug_side.xml", "sawyer_pick_out_of_hole.xml"];

/// Meta-World's 44 scenes from `qpos0` under random controls (uniform in
/// the gripper's control ranges, redrawn every step), 4 000 steps each:
/// every state finite, and every solve converged (or within 10 times the
/// tolerance). The hand's weld to its mocap body against the
/// arm's stops made these problems infeasible while the weld was rigid
/// (1 816 of 2 000 solves unconverged in `drawer`); the mocap rows'
/// compliance ([`SimParams::mocap_compliance`]) makes them well-posed, and
/// the penetrations' ([`SimParams::penetration_compliance`], set to
/// [`OVERLAP_COMPLIANCE`] for the scenes named in [`WEDGED`]) those of
/// the wedged scenes, which are checked to fail without it (so that the
/// list cannot outlive its reason).
#[test]
fn meta_world_scenes_converge_under_random_controls() {
    let Some(scenes) = meta_world_scenes() else {
        return;
    };
    let mut names: Vec<String> = std::fs::read_dir(&scenes)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".xml"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 44);
    let mut rng = common::Lcg(7);
    let mut unconverged_in = Vec::new();
    for name in &names {
        let m = load_mjcf(scenes.join(name), &MjcfOptions::default()).unwrap();
        let model = Arc::new(m.model.clone());
        let mut params = SimParams::with_dt(m.timestep);
        if WEDGED.contains(&name.as_str()) {
            params.penetration_compliance = OVERLAP_COMPLIANCE;
        }
        let mut sim = Simulator::new(model.clone(), params).unwrap();
        let mut state = State::new(m.q0.clone(), DVector::zeros(model.nv));
        let ranges: Vec<(f64, f64)> = (model.actuators.iter())
            .map(|a| a.ctrl_range.unwrap_or((-1.0, 1.0)))
            .collect();
        let tol = sim.params.solver_settings.tolerance;
        let (mut unconverged, mut near) = (0, 0);
        for _ in 0..4000 {
            let ctrl: Vec<f64> = ranges.iter().map(|&(lo, hi)| rng.range(lo, hi)).collect();
            let report = sim
                .step_controls(&mut state, &ctrl)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            if let Some(s) = report.solver.filter(|s| !s.converged) {
                // (A solve that ends within 10 tolerances is counted apart:
                // the tool on its table, 12 contacts, the contact solves'
                // own issue.)
                if s.residuals.eps_abs < 10.0 * tol {
                    near += 1;
                } else {
                    unconverged += 1;
                }
            }
        }
        assert!(
            state.q.iter().chain(&state.v).all(|x| x.is_finite()),
            "{name}"
        );
        if unconverged + near > 0 {
            unconverged_in.push(format!(
                "{name}: {unconverged} (+{near} within 10 tolerances)"
            ));
        }
        assert_eq!(
            unconverged, 0,
            "{name}: {unconverged} of 1000 solves unconverged"
        );
        if WEDGED.contains(&name.as_str()) {
            let rigid = SimParams::with_dt(m.timestep);
            let mut sim = Simulator::new(model.clone(), rigid).unwrap();
            let mut state = State::new(m.q0.clone(), DVector::zeros(model.nv));
            let failed = (0..20)
                .filter(|_| {
                    let report = sim.step(&mut state, &vec![0.0; model.nv]).unwrap();
                    report.solver.is_some_and(|s| !s.converged)
                })
                .count();
            assert!(
                failed > 10,
                "{name} rigid: {failed} of 20 solves unconverged"
            );
        }
    }
    println!("solves unconverged of 4000: {unconverged_in:?}; every other scene 0");
}

/// robosuite's robots whose solves do not all converge under
/// [`robosuite_robots_run_under_random_controls`]'s controls, with the
/// number measured (2026-12-08; the test holds each to it): the contact
/// solves' own issue (a few indeterminate or ill-conditioned sets: Spot's
/// feet with torsional friction, the UR5e's upper arm sliding on its
/// base's hull, the xArm's and Baxter's links).
const UNCONVERGED_UNDER_RANDOM_CONTROLS: &[(&str, usize)] =
    &[("baxter", 1), ("spot", 6), ("ur5e", 42), ("xarm7", 1)];

/// robosuite's robots that cannot run random controls as the file gives
/// them, and why (measured 2026-12-08), with the parameters they run with.
const RANDOM_CONTROLS_REFUSED: &[(&str, &str)] = &[
    (
        "gr1",
        "its motors' control range is ±20 000 N·m (a head joint's too): random controls over it are not a robot's input; the step that fails is refused, the state kept",
    ),
    (
        "jaco",
        "qpos0 folds the arm into itself, 3 joints 0.5 to 1.1 rad past their stops and 10 pairs of links 81 mm deep: unbounded recovery throws it (4 000 rad/s at step 1, a problem no longer finite refused within 40 steps); it runs its 4 000 steps with recovery bounded at 3 m/s (rad/s), 17 solves unconverged",
    ),
];

/// robosuite 1.5.2's robots from `qpos0` under random controls (uniform
/// in each actuator's control range, redrawn every step), 4 000 steps at
/// the file's time step, the files the loader warns overlap with the
/// penetration compliance it names: every state finite, no step refused,
/// every solve converged or within 10 tolerances, but for the robots
/// named above with the reasons measured.
#[test]
fn robosuite_robots_run_under_random_controls() {
    let Some(robots) = installed("robosuite/models/assets/robots", "robosuite") else {
        return;
    };
    let mut names: Vec<String> = std::fs::read_dir(&robots)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| robots.join(n).join("robot.xml").is_file())
        .collect();
    names.sort();
    assert_eq!(names.len(), 12);
    let mut rng = common::Lcg(11);
    let mut counts = Vec::new();
    for name in &names {
        let m = load_mjcf(robots.join(name).join("robot.xml"), &MjcfOptions::default()).unwrap();
        let model = Arc::new(m.model.clone());
        let mut params = SimParams::with_dt(m.timestep);
        if overlaps_at_qpos0(&m) {
            params.penetration_compliance = OVERLAP_COMPLIANCE;
        }
        let refused = RANDOM_CONTROLS_REFUSED.iter().find(|r| r.0 == name);
        let ranges: Vec<(f64, f64)> = (model.actuators.iter())
            .map(|a| a.ctrl_range.unwrap_or((-1.0, 1.0)))
            .collect();
        let run = |params: SimParams, rng: &mut common::Lcg| {
            let mut sim = Simulator::new(model.clone(), params).unwrap();
            let tol = sim.params.solver_settings.tolerance;
            let mut state = State::new(m.q0.clone(), DVector::zeros(model.nv));
            let mut unconverged = 0;
            for step in 0..4000 {
                let ctrl: Vec<f64> = ranges.iter().map(|&(lo, hi)| rng.range(lo, hi)).collect();
                let before = state.clone();
                match sim.step_controls(&mut state, &ctrl) {
                    Ok(report) => {
                        let s = report.solver.filter(|s| !s.converged);
                        unconverged +=
                            s.is_some_and(|s| s.residuals.eps_abs >= 10.0 * tol) as usize;
                    }
                    Err(e) => {
                        // Refused, the state kept.
                        assert_eq!(state.q, before.q, "{name}");
                        return Err(format!("step {step}: {e}"));
                    }
                }
                assert!(
                    state.q.iter().chain(&state.v).all(|x| x.is_finite()),
                    "{name}: step {step}"
                );
            }
            Ok(unconverged)
        };
        match refused {
            Some((_, why)) => {
                let failed = run(params, &mut rng);
                assert!(failed.is_err(), "{name} ran: remove it from the list");
                println!("{name}: {} ({why})", failed.unwrap_err());
                if *name == "jaco" {
                    params.max_recovery_speed = Some(3.0);
                    let bounded = run(params, &mut rng);
                    println!("{name} bounded at 3 m/s: {bounded:?} solves unconverged");
                    assert!(bounded.is_ok(), "{name}: {bounded:?}");
                }
            }
            None => {
                let unconverged = run(params, &mut rng).unwrap_or_else(|e| panic!("{name}: {e}"));
                counts.push(format!("{name} {unconverged}"));
                // At most the count measured (0 for a robot not named).
                let known = UNCONVERGED_UNDER_RANDOM_CONTROLS
                    .iter()
                    .find(|k| k.0 == name)
                    .map_or(0, |k| k.1);
                assert!(
                    unconverged <= known,
                    "{name}: {unconverged} of 4000 solves unconverged (measured {known})"
                );
            }
        }
    }
    println!(
        "solves unconverged of 4000 (beyond 10 tolerances): {}",
        counts.join(", ")
    );
}
