//! Resident worlds (`gpu::resident`, f32 on the device) against their twin,
//! the f64 CPU step of the same model: one step from random states and
//! torques, and 100-step trajectories, on a tree of hinge, slide and fixed
//! joints with armature, damping and springs; the models this slice cannot
//! run are refused naming why; a world whose state overflows is flagged and
//! the others step on.

mod common;

use moreau::gpu::GpuContext;
use moreau::gpu::resident::{ResidentBatch, ResidentError};
use moreau::math::{Inertia, Mat3, Rng, SE3, Vec3};
use moreau::model::{JointSpec, JointType, Model, ModelBuilder};
use moreau::sim::{SimParams, Simulator, State};
use nalgebra::{DVector, UnitQuaternion};
use std::sync::Arc;

/// A branching tree: a cart on a rail, a two-link arm on it, a wheel on a
/// second branch, a slider at the arm's tip, and a fixed camera; bodies
/// with offset, rotated placements and full inertias.
fn tree() -> Model {
    let mut b = ModelBuilder::new("tree");
    b.set_gravity(Vec3::new(0.3, -0.2, -9.81)).unwrap();
    let inertia = |m: f64, c: [f64; 3], d: [f64; 3], off: f64| {
        let mut i = Mat3::from_diagonal(&Vec3::new(d[0], d[1], d[2]));
        i[(0, 1)] = off;
        i[(1, 0)] = off;
        Inertia::new(m, Vec3::new(c[0], c[1], c[2]), i)
    };
    let turned = |axis: Vec3, angle: f64, t: [f64; 3]| {
        SE3::from_quaternion(
            &UnitQuaternion::from_scaled_axis(axis * angle),
            Vec3::new(t[0], t[1], t[2]),
        )
    };
    let cart = b
        .add_body(
            "cart",
            0,
            JointType::Prismatic(Vec3::x()),
            turned(Vec3::z(), 0.2, [0.0, 0.1, 0.5]),
            inertia(2.0, [0.0, 0.0, 0.05], [0.05, 0.06, 0.07], 0.004),
        )
        .unwrap();
    let upper = b
        .add_body(
            "upper",
            cart,
            JointType::Revolute(Vec3::y()),
            turned(Vec3::x(), 0.3, [0.1, 0.0, 0.1]),
            inertia(0.5, [0.0, 0.0, 0.25], [0.011, 0.012, 0.003], 0.0005),
        )
        .unwrap();
    let lower = b
        .add_body(
            "lower",
            upper,
            JointType::Revolute(Vec3::new(1.0, 1.0, 0.0).normalize()),
            turned(Vec3::y(), -0.4, [0.0, 0.02, 0.5]),
            inertia(0.3, [0.02, 0.0, 0.2], [0.005, 0.004, 0.002], -0.0003),
        )
        .unwrap();
    let wheel = b
        .add_body(
            "wheel",
            cart,
            JointType::Revolute(Vec3::z()),
            turned(Vec3::new(1.0, 2.0, 3.0).normalize(), 0.7, [-0.2, 0.1, 0.0]),
            inertia(0.4, [0.05, 0.01, 0.0], [0.002, 0.002, 0.003], 0.0),
        )
        .unwrap();
    let tip = b
        .add_body(
            "tip",
            lower,
            JointType::Prismatic(Vec3::new(0.0, 0.6, 0.8)),
            turned(Vec3::z(), 0.1, [0.0, 0.0, 0.4]),
            inertia(0.1, [0.0, 0.0, 0.02], [1e-4, 1e-4, 1.5e-4], 0.0),
        )
        .unwrap();
    b.add_body(
        "camera",
        upper,
        JointType::Fixed,
        turned(Vec3::x(), 0.5, [0.05, 0.05, 0.3]),
        inertia(0.2, [0.01, 0.0, 0.0], [1e-3, 1.5e-3, 1e-3], 0.0),
    )
    .unwrap();
    let spec = |damping: f64, armature: f64, stiffness: f64, springref: f64| JointSpec {
        damping,
        armature,
        stiffness,
        springref,
        ..JointSpec::default()
    };
    b.set_joint_spec(cart, spec(0.5, 0.1, 0.0, 0.0)).unwrap();
    b.set_joint_spec(upper, spec(0.05, 0.01, 2.0, 0.3)).unwrap();
    b.set_joint_spec(lower, spec(0.02, 0.0, 0.0, 0.0)).unwrap();
    b.set_joint_spec(wheel, spec(0.0, 0.02, 0.0, 0.0)).unwrap();
    b.set_joint_spec(tip, spec(1.0, 0.05, 20.0, 0.05)).unwrap();
    b.build().unwrap()
}

fn random_states(model: &Model, n: usize, rng: &mut Rng) -> Vec<State> {
    (0..n)
        .map(|_| {
            State::new(
                DVector::from_fn(model.nq, |_, _| rng.range(-1.0, 1.0)),
                DVector::from_fn(model.nv, |_, _| rng.range(-2.0, 2.0)),
            )
        })
        .collect()
}

/// The CPU twin: the f64 simulator of the same model and time step.
fn cpu_step(model: &Model, dt: f64, state: &mut State, tau: &[f64]) {
    let params = SimParams {
        dt,
        ..Default::default()
    };
    let mut sim = Simulator::new(Arc::new(model.clone()), params).unwrap();
    let report = sim.step(state, tau).unwrap();
    assert_eq!(
        (report.nc, report.nl),
        (0, 0),
        "no constraints in these models"
    );
}

fn max_difference(a: &[State], b: &[State]) -> (f64, f64) {
    let mut worst = (0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        worst.0 = worst.0.max((&x.q - &y.q).amax());
        worst.1 = worst.1.max((&x.v - &y.v).amax());
    }
    worst
}

#[test]
fn one_resident_step_matches_the_cpu_step_from_random_states() {
    let Some(ctx) = GpuContext::for_tests() else {
        return;
    };
    let model = tree();
    let (n, dt) = (256, 2e-3);
    let mut rng = Rng::new(7);
    let states = random_states(&model, n, &mut rng);
    let tau: Vec<f64> = (0..n * model.nv).map(|_| rng.range(-3.0, 3.0)).collect();
    let mut gpu = ResidentBatch::new(&ctx, &model, dt, &states, n).unwrap();
    gpu.step(&tau).unwrap();
    let (got, flagged) = gpu.states().unwrap();
    assert!(flagged.is_empty());
    let mut want = states.clone();
    for (w, s) in want.iter_mut().enumerate() {
        cpu_step(&model, dt, s, &tau[w * model.nv..(w + 1) * model.nv]);
    }
    // The velocity change is dt·q̈ with |q̈| up to a few hundred: f32
    // rounding of the state (|q| ≤ 1, |v| ≤ 2) and of q̈.
    let (dq, dv) = max_difference(&got, &want);
    println!("one step, {n} worlds: |Δq| = {dq:.1e}, |Δv| = {dv:.1e}");
    assert!(dq < 1e-6 && dv < 2e-5, "{dq:e} {dv:e}");
    // A wrong body frame or inertia moves v by dt·q̈-sized amounts, far
    // above the bound: the step must have changed the state.
    let (mq, mv) = max_difference(&got, &states);
    assert!(mv > 1e-2 && mq > 1e-3, "{mq:e} {mv:e}");
}

#[test]
fn resident_trajectories_follow_the_cpu_for_100_steps() {
    let Some(ctx) = GpuContext::for_tests() else {
        return;
    };
    let model = tree();
    let (n, dt) = (64, 2e-3);
    let mut rng = Rng::new(11);
    let states: Vec<State> = random_states(&model, n, &mut rng)
        .into_iter()
        .map(|mut s| {
            s.v *= 0.25;
            s
        })
        .collect();
    let mut gpu = ResidentBatch::new(&ctx, &model, dt, &states, n).unwrap();
    let mut want = states.clone();
    let nv = model.nv;
    let mut tau = vec![0.0; n * nv];
    for t in 0..100 {
        for (k, x) in tau.iter_mut().enumerate() {
            *x = 0.5 * (0.05 * t as f64 + 0.7 * k as f64).sin();
        }
        gpu.step(&tau).unwrap();
        for (w, s) in want.iter_mut().enumerate() {
            cpu_step(&model, dt, s, &tau[w * nv..(w + 1) * nv]);
        }
    }
    let (got, flagged) = gpu.states().unwrap();
    assert!(flagged.is_empty());
    let (dq, dv) = max_difference(&got, &want);
    let (mq, _) = max_difference(&want, &states);
    println!("100 steps, {n} worlds: |Δq| = {dq:.1e}, |Δv| = {dv:.1e} (moved {mq:.2})");
    assert!(dq < 2e-5 && dv < 1e-4, "{dq:e} {dv:e}");
    assert!(mq > 0.05, "the worlds moved");
}

#[test]
fn models_the_slice_cannot_run_are_refused_naming_why() {
    let Some(ctx) = GpuContext::for_tests() else {
        return;
    };
    let quadruped = moreau::scenes::scene("quadruped").unwrap();
    let e = ResidentBatch::new(
        &ctx,
        &quadruped.model,
        1e-3,
        std::slice::from_ref(&quadruped.state),
        4,
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("is free"), "{e}");
    if let Some(m) = common::gymnasium("inverted_pendulum.xml") {
        let s = State::new(m.q0.clone(), DVector::zeros(m.model.nv));
        let e = ResidentBatch::new(&ctx, &m.model, 0.02, &[s], 4)
            .err()
            .unwrap();
        assert!(e.to_string().contains("has a range"), "{e}");
    }
    let model = tree();
    let s = State::new(DVector::zeros(model.nq), DVector::zeros(model.nv));
    let e = ResidentBatch::new(&ctx, &model, 1e-3, &[s.clone(), s.clone()], 3)
        .err()
        .unwrap();
    assert!(matches!(e, ResidentError::DimensionMismatch { .. }), "{e}");
    // A batch over the device's capacity (6 GB of q, 4.7M workgroups) is
    // refused before allocating.
    let e = ResidentBatch::new(&ctx, &model, 1e-3, std::slice::from_ref(&s), 300_000_000)
        .err()
        .unwrap();
    assert!(matches!(e, ResidentError::Capacity { .. }), "{e}");
    // Bad torques are refused before anything moves.
    let mut gpu = ResidentBatch::new(&ctx, &model, 1e-3, std::slice::from_ref(&s), 3).unwrap();
    let mut tau = vec![0.0; 3 * model.nv];
    tau[model.nv + 2] = f64::NAN;
    let e = gpu.step(&tau).unwrap_err();
    assert!(
        e.to_string().contains("world 1: tau[2] is not finite"),
        "{e}"
    );
    assert!(gpu.step(&tau[1..]).is_err());
    let (states, _) = gpu.states().unwrap();
    assert!(states.iter().all(|x| x.q == s.q && x.v == s.v));
}

#[test]
fn a_world_whose_state_overflows_is_flagged_and_the_others_step() {
    let Some(ctx) = GpuContext::for_tests() else {
        return;
    };
    let model = tree();
    let s = State::new(DVector::zeros(model.nq), DVector::zeros(model.nv));
    let mut gpu = ResidentBatch::new(&ctx, &model, 1e-3, std::slice::from_ref(&s), 3).unwrap();
    let mut tau = vec![0.1; 3 * model.nv];
    // Finite in f32, but the light slider's q̈ overflows f32 in world 1.
    tau[model.nv + 4] = 3e38;
    gpu.step(&tau).unwrap();
    let (states, flagged) = gpu.states().unwrap();
    assert_eq!(flagged, vec![1]);
    assert_eq!(states[1].q, s.q, "the flagged world keeps its last state");
    assert!(
        states[0].v != s.v && states[2].v != s.v,
        "the others stepped"
    );
}
