//! Gymnasium's MuJoCo models simulated by moreau against MuJoCo 4.0 on the
//! same files, stage by stage (as MuJoCo Warp tests each stage of
//! `mj_forward` against C MuJoCo): CRBA's mass matrix with armature, RNEA's
//! bias forces, ABA's accelerations; then contact-free trajectories
//! under the same controls (MuJoCo's Euler integrator, implicit in the
//! joint damping like moreau's step), the fluid forces of the swimmer,
//! joint limits, and the passive robots settling on the floor.
//!
//! MuJoCo's numbers are in tests/data/mujoco/dynamics.json, written by the
//! committed tests/data/mujoco/dynamics_reference.py (its header says how).

mod common;

use moreau::dynamics::{Data, aba, crba, fluid_forces, forward_kinematics, forward_velocity, rnea};
use moreau::load::mjcf::MjcfModel;
use moreau::sim::{SimParams, Simulator, State};
use nalgebra::DVector;
use serde::Deserialize;
use std::sync::Arc;

#[derive(Deserialize)]
struct Reference {
    mass_matrix: Vec<MassReference>,
    trajectories: Vec<Trajectory>,
    limit_trajectories: Vec<Trajectory>,
    settle: Vec<Settle>,
}

#[derive(Deserialize)]
struct MassReference {
    file: String,
    poses: Vec<Pose>,
    dof_armature: Vec<f64>,
    dof_damping: Vec<f64>,
    /// Per joint; these files' joints are all hinges and slides (one dof,
    /// one coordinate each).
    jnt_stiffness: Vec<f64>,
    qpos_spring: Vec<f64>,
}

#[derive(Deserialize)]
struct Pose {
    qpos: Vec<f64>,
    /// `mj_fullM`, armature included.
    mass_matrix: Vec<Vec<f64>>,
}

#[derive(Deserialize)]
struct Trajectory {
    file: String,
    timestep: f64,
    steps: usize,
    jnt_limited: Vec<bool>,
    jnt_range: Vec<[f64; 2]>,
    qpos_init: Vec<f64>,
    qvel_init: Vec<f64>,
    /// `qfrc_passive` at the initial state (springs, damping `−D v`, fluid).
    qfrc_passive: Vec<f64>,
    /// `mj_forward`'s stages at the initial state, with the first controls.
    at_init: AtInit,
    ctrl: Vec<Vec<f64>>,
    /// After each step.
    qpos: Vec<Vec<f64>>,
    qvel: Vec<Vec<f64>>,
    /// The first step at which MuJoCo had a joint-limit constraint row.
    first_limit_step: Option<usize>,
}

#[derive(Deserialize)]
struct AtInit {
    /// `C(q, v)v + g(q)`: RNEA with zero acceleration.
    qfrc_bias: Vec<f64>,
    qfrc_actuator: Vec<f64>,
    qfrc_passive: Vec<f64>,
    /// `M⁻¹(qfrc_passive + qfrc_actuator − qfrc_bias)` (no constraints).
    qacc: Vec<f64>,
}

#[derive(Deserialize)]
struct Settle {
    file: String,
    euler_perturbed: SettleRun,
    file_integrator: SettleRun,
    /// From qpos0 without friction (the half-cheetah only).
    euler_frictionless: Option<SettleRun>,
}

#[derive(Deserialize)]
struct SettleRun {
    /// qpos0 with the hinges and slides moved by up to 5 mm or 5 mrad (like
    /// Gymnasium's reset noise), in MuJoCo's coordinates.
    qpos_init: Vec<f64>,
    timestep: f64,
    steps: usize,
    integrator: String,
    torso_height_final: f64,
    ncon: usize,
    /// The final state.
    qpos: Vec<f64>,
}

fn reference() -> Reference {
    serde_json::from_str(include_str!("data/mujoco/dynamics.json")).expect("dynamics.json")
}

fn load(file: &str) -> Option<MjcfModel> {
    common::gymnasium(file)
}

#[test]
fn crba_mass_matrix_with_armature_equals_mujocos_full_m() {
    let r = reference();
    for m in &r.mass_matrix {
        let Some(loaded) = load(&m.file) else { return };
        let model = &loaded.model;
        // The joint parameters as MuJoCo compiled them.
        assert_eq!(model.dof_armature, m.dof_armature, "{}", m.file);
        assert_eq!(model.dof_damping, m.dof_damping, "{}", m.file);
        assert_eq!(model.dof_stiffness, m.jnt_stiffness, "{}", m.file);
        assert_eq!(model.dof_springref, m.qpos_spring, "{}", m.file);
        let mut data = Data::new(model);
        for pose in &m.poses {
            let q = loaded.q_from_mujoco(&pose.qpos).unwrap();
            let mm = crba(model, &mut data, q.as_slice());
            let mut worst: f64 = 0.0;
            let scale = pose
                .mass_matrix
                .iter()
                .flatten()
                .fold(1.0f64, |a, b| a.max(b.abs()));
            for (i, row) in pose.mass_matrix.iter().enumerate() {
                for (j, want) in row.iter().enumerate() {
                    worst = worst.max((mm[(i, j)] - want).abs());
                }
            }
            println!(
                "{}: |M − mj_fullM|max = {worst:.2e} (max |M| {scale:.2})",
                m.file
            );
            assert!(worst <= 1e-12 * scale, "{}: {worst:e}", m.file);
        }
    }
}

/// The passive forces at the initial state: MuJoCo's `qfrc_passive` is the
/// springs, the damping `−D v` and the fluid; moreau applies the damping
/// implicitly, so its explicit part is compared here: springs and fluid
/// against `qfrc_passive + D v`.
#[test]
fn springs_and_fluid_forces_equal_mujocos_passive_forces() {
    let r = reference();
    for t in &r.trajectories {
        let Some(loaded) = load(&t.file) else { return };
        let model = &loaded.model;
        let q = loaded.q_from_mujoco(&t.qpos_init).unwrap();
        let v = &t.qvel_init;
        let mut data = Data::new(model);
        forward_kinematics(model, &mut data, q.as_slice());
        forward_velocity(model, &mut data, v);
        let mut tau = vec![0.0; model.nv];
        fluid_forces(model, &data, v, &mut tau);
        for k in 0..model.nv {
            let qk = q[model.joint_idx_q[model.dof_body[k]]];
            tau[k] -= model.dof_stiffness[k] * (qk - model.dof_springref[k]);
        }
        let worst = (0..model.nv)
            .map(|k| (tau[k] - (t.qfrc_passive[k] + model.dof_damping[k] * v[k])).abs())
            .fold(0.0, f64::max);
        let scale = t.qfrc_passive.iter().fold(1.0f64, |a, b| a.max(b.abs()));
        println!(
            "{}: medium {:?}, passive force error {worst:.2e} (max |qfrc_passive| {scale:.2})",
            t.file, model.medium
        );
        assert!(
            worst <= 1e-9 * scale,
            "{}: {tau:?} vs {:?}",
            t.file,
            t.qfrc_passive
        );
    }
}

/// The steps compared with MuJoCo: those before the step that brings a
/// joint to its stop (which moreau's speculative limit row stops at the
/// stop, where MuJoCo's soft limit lets it cross, then pushes it back).
fn compared_steps(t: &Trajectory) -> usize {
    t.first_limit_step
        .map_or(t.steps, |s| s.saturating_sub(1))
        .min(t.steps)
}

/// Runs `t`'s controls from its initial state; returns the worst errors in
/// q and v over the steps before MuJoCo's first joint-limit row, and the
/// worst excursion beyond a joint range over the whole run.
fn replay(loaded: &MjcfModel, t: &Trajectory) -> (f64, f64, f64) {
    let model = Arc::new(loaded.model.clone());
    let params = SimParams {
        dt: t.timestep,
        ..Default::default()
    };
    let mut sim = Simulator::new(model.clone(), params).unwrap();
    let q = loaded.q_from_mujoco(&t.qpos_init).unwrap();
    let mut state = State::new(q, DVector::from_column_slice(&t.qvel_init));
    let (mut eq, mut ev, mut beyond) = (0.0f64, 0.0f64, 0.0f64);
    let compared = compared_steps(t);
    for s in 0..t.steps {
        let report = sim.step_controls(&mut state, &t.ctrl[s]).unwrap();
        assert_eq!(report.nc, 0, "{}: step {s} has contacts", t.file);
        if s < compared {
            for k in 0..model.nq {
                eq = eq.max((state.q[k] - t.qpos[s][k]).abs());
            }
            for k in 0..model.nv {
                ev = ev.max((state.v[k] - t.qvel[s][k]).abs());
            }
        }
        for (j, (&limited, r)) in t.jnt_limited.iter().zip(&t.jnt_range).enumerate() {
            if limited {
                let qj = state.q[j];
                beyond = beyond.max(r[0] - qj).max(qj - r[1]);
            }
        }
    }
    (eq, ev, beyond)
}

/// Without contacts, moreau's step is MuJoCo's Euler step (semi-implicit,
/// implicit in the damping): the same initial state and controls give the
/// same trajectory up to rounding, amplified by the instability of the
/// pendulums (the double pendulum is chaotic). The comparison stops at
/// MuJoCo's first joint-limit row: MuJoCo's limits are soft (a spring-damper
/// with `solref`), moreau's rigid, so the trajectories part there by design.
#[test]
fn contact_free_trajectories_follow_mujocos_euler_integrator() {
    let r = reference();
    for t in &r.trajectories {
        let Some(loaded) = load(&t.file) else { return };
        let (eq, ev, beyond) = replay(&loaded, t);
        let compared = compared_steps(t);
        println!(
            "{}: {compared} of {} steps compared: |q − q_mj| ≤ {eq:.2e}, |v − v_mj| ≤ {ev:.2e}; beyond a joint range by {beyond:.2e}",
            t.file, t.steps
        );
        assert!(compared >= 20, "{}: only {compared} steps compared", t.file);
        assert!(eq < 1e-6 && ev < 1e-5, "{}: {eq:e} {ev:e}", t.file);
        assert!(
            beyond < 1e-3,
            "{}: a joint went {beyond} beyond its range",
            t.file
        );
    }
}

/// The pendulums driven into their stops: rigid limits hold (to the
/// constraint tolerance), where MuJoCo's soft ones give way a little.
#[test]
fn pendulums_driven_into_their_stops_stay_within_range() {
    let r = reference();
    for t in &r.limit_trajectories {
        let Some(loaded) = load(&t.file) else { return };
        let (_, _, beyond) = replay(&loaded, t);
        let mj_beyond = t
            .qpos
            .iter()
            .flat_map(|q| {
                t.jnt_limited
                    .iter()
                    .zip(&t.jnt_range)
                    .enumerate()
                    .filter(|(_, (l, _))| **l)
                    .map(move |(j, (_, r))| (r[0] - q[j]).max(q[j] - r[1]))
            })
            .fold(0.0, f64::max);
        println!(
            "{}: {} steps, limit first met at step {:?}: moreau beyond a range by {beyond:.2e}, MuJoCo by {mj_beyond:.2e}",
            t.file, t.steps, t.first_limit_step
        );
        assert!(t.first_limit_step.is_some());
        assert!(beyond < 1e-3, "{}: {beyond}", t.file);
    }
}

/// The half-cheetah on its two feet without friction: its equilibrium is
/// unique (springs, gravity, frictionless contacts), and moreau's is
/// MuJoCo's to a millimetre. With friction it is not: the feet stay where
/// they landed under rigid Coulomb friction, and creep under MuJoCo's soft
/// one, so the torso settles 3 cm apart (`passive_robots_settle_like_mujocos`).
#[test]
fn frictionless_half_cheetah_settles_at_mujocos_pose() {
    let r = reference();
    let s = r
        .settle
        .iter()
        .find(|s| s.file == "half_cheetah.xml")
        .unwrap();
    let run = s.euler_frictionless.as_ref().unwrap();
    let Some(loaded) = load(&s.file) else { return };
    let model = Arc::new(loaded.model.clone());
    let params = SimParams {
        dt: run.timestep,
        friction_scale: 0.0,
        ..Default::default()
    };
    let mut sim = Simulator::new(model.clone(), params).unwrap();
    let mut state = State::new(loaded.q0.clone(), DVector::zeros(model.nv));
    let ctrl = vec![0.0; model.nu()];
    for _ in 0..run.steps {
        sim.step_controls(&mut state, &ctrl).unwrap();
    }
    let worst = (0..model.nq)
        .map(|k| (state.q[k] - run.qpos[k]).abs())
        .fold(0.0, f64::max);
    println!(
        "frictionless half-cheetah after {} steps: |q − q_mj| ≤ {worst:.2e}",
        run.steps
    );
    assert!(worst < 2e-3, "{:?} vs {:?}", state.q.as_slice(), run.qpos);
}

/// The passive robots on the floor for MuJoCo's settling time, zero
/// control, from `qpos0` slightly perturbed (from the exact `qpos0` the
/// hopper stands balanced on an unstable equilibrium): final torso height
/// and contacts side by side.
/// The ant stands on its four legs held by its joint limits, at MuJoCo's
/// height (Euler) within 1 cm; the others fall and lie down like MuJoCo's.
#[test]
fn passive_robots_settle_like_mujocos() {
    let r = reference();
    for s in &r.settle {
        let Some(loaded) = load(&s.file) else { return };
        let model = Arc::new(loaded.model.clone());
        let run = &s.euler_perturbed;
        let params = SimParams {
            dt: run.timestep,
            ..Default::default()
        };
        let mut sim = Simulator::new(model.clone(), params).unwrap();
        let q = loaded.q_from_mujoco(&run.qpos_init).unwrap();
        let mut state = State::new(q, DVector::zeros(model.nv));
        let ctrl = vec![0.0; model.nu()];
        let mut beyond = 0.0f64;
        let mut last = None;
        // The ant and the humanoid start beyond some of their ranges (at
        // qpos0): the excursion is measured after the first second.
        let settled = (1.0 / run.timestep).round() as usize;
        for step in 0..run.steps {
            last = Some(sim.step_controls(&mut state, &ctrl).unwrap());
            if step >= settled {
                for (j, _, (lo, hi)) in model.limited_joints() {
                    let q = state.q[model.joint_idx_q[j]];
                    beyond = beyond.max(lo - q).max(q - hi);
                }
            }
        }
        let torso = &loaded.mjcf_bodies[1];
        let mut data = Data::new(&model);
        forward_kinematics(&model, &mut data, state.q.as_slice());
        let height = data.world_from_body[torso.body]
            .mul(&torso.body_from_mjcf)
            .translation
            .z;
        let report = last.unwrap();
        println!(
            "{}: torso height {height:.4} m (MuJoCo {}: {:.4}, {}: {:.4}), contacts {} (MuJoCo {}), limits active {}, worst excursion beyond a range after 1 s {:.1e}",
            s.file,
            run.integrator,
            run.torso_height_final,
            s.file_integrator.integrator,
            s.file_integrator.torso_height_final,
            report.nc,
            run.ncon,
            report.nl,
            beyond
        );
        if s.file == "ant.xml" {
            assert!(
                (height - run.torso_height_final).abs() < 0.01,
                "ant: {height} vs MuJoCo's {}",
                run.torso_height_final
            );
            assert_eq!(report.nc, 4, "the ant stands on its four feet");
        }
        assert!(beyond < 1e-3, "{}: {beyond} beyond a joint range", s.file);
        // Fallen or standing alike: the hopper standing on its unstable
        // equilibrium, or a robot resting on a different part, would fail.
        assert!(
            (height - run.torso_height_final).abs() < 0.05,
            "{}: torso at {height}, MuJoCo's at {}",
            s.file,
            run.torso_height_final
        );
        assert!(report.nc.abs_diff(run.ncon) <= 2, "{}", s.file);
    }
}

/// The initial states of the trajectories with MuJoCo's stages at them
/// (`at_init`). These files have hinges and slides only, so `v` is `qvel`.
fn stage_cases() -> Vec<(MjcfModel, Trajectory)> {
    let r = reference();
    let mut cases = Vec::new();
    for t in r.trajectories {
        let Some(loaded) = load(&t.file) else {
            return Vec::new();
        };
        assert_eq!(loaded.model.nq, loaded.model.nv, "{}", t.file);
        cases.push((loaded, t));
    }
    cases
}

/// RNEA with zero acceleration is MuJoCo's `qfrc_bias` (gravity, Coriolis
/// and centrifugal forces) at the same state.
#[test]
fn rnea_bias_forces_equal_mujocos_qfrc_bias() {
    for (loaded, t) in stage_cases() {
        let model = &loaded.model;
        let mut data = Data::new(model);
        let q = loaded.q_from_mujoco(&t.qpos_init).unwrap();
        let zero = vec![0.0; model.nv];
        let b = rnea(model, &mut data, q.as_slice(), &t.qvel_init, &zero);
        let want = &t.at_init.qfrc_bias;
        let scale = want.iter().fold(1.0f64, |m, x| m.max(x.abs()));
        let worst = (0..model.nv).fold(0.0f64, |m, k| m.max((b[k] - want[k]).abs()));
        println!(
            "{}: |b − qfrc_bias|max = {worst:.2e} (max |b| {scale:.2})",
            t.file
        );
        assert!(worst <= 1e-10 * scale, "{}: {worst:e}", t.file);
    }
}

/// ABA under MuJoCo's own generalized forces (`qfrc_passive +
/// qfrc_actuator`) gives MuJoCo's `qacc`: the articulated-body recursion,
/// the armature and the bias forces together, with the force stages taken
/// from MuJoCo so that only ABA is judged.
#[test]
fn aba_accelerations_equal_mujocos_qacc() {
    for (loaded, t) in stage_cases() {
        let model = &loaded.model;
        let mut data = Data::new(model);
        let q = loaded.q_from_mujoco(&t.qpos_init).unwrap();
        let tau: Vec<f64> = (0..model.nv)
            .map(|k| t.at_init.qfrc_passive[k] + t.at_init.qfrc_actuator[k])
            .collect();
        let a = aba(model, &mut data, q.as_slice(), &t.qvel_init, &tau);
        let want = &t.at_init.qacc;
        let scale = want.iter().fold(1.0f64, |m, x| m.max(x.abs()));
        let worst = (0..model.nv).fold(0.0f64, |m, k| m.max((a[k] - want[k]).abs()));
        println!(
            "{}: |a − qacc|max = {worst:.2e} (max |qacc| {scale:.2})",
            t.file
        );
        assert!(worst <= 1e-9 * scale, "{}: {worst:e}", t.file);
    }
}
