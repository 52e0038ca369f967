//! Resident worlds (`gpu::resident`, f32 on the device) against their twin,
//! the f64 CPU step of the same model: one step from random states and
//! torques, and 100-step trajectories, on a tree of hinge, slide and fixed
//! joints with armature, damping and springs, on floating robots in the
//! air (free and ball joints: a test tree, the built-in quadruped,
//! Gymnasium's ant and humanoid), and on Gymnasium's contact-free tasks (actuators driven by random controls, joint limits
//! hit, the swimmer's viscous fluid); the models the path cannot run are
//! refused naming why; a world whose state overflows is flagged and the
//! others step on.

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

fn params(dt: f64) -> SimParams {
    SimParams::with_dt(dt)
}

/// The CPU twin: the f64 simulator of the same model and time step.
fn cpu_step(model: &Model, dt: f64, state: &mut State, tau: &[f64]) {
    let mut sim = Simulator::new(Arc::new(model.clone()), params(dt)).unwrap();
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
    let mut gpu = ResidentBatch::new(&ctx, &model, &params(dt), &states, n).unwrap();
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

/// Controls of a model without actuators (zero per world): every world
/// still steps, under gravity, as on the CPU backend.
#[test]
fn controls_of_a_model_without_actuators_step_every_world() {
    use moreau::batch::{Backend, BatchOptions, BatchSim};
    let model = Arc::new(tree());
    assert_eq!(model.nu(), 0);
    let mut rng = Rng::new(8);
    let states = random_states(&model, 16, &mut rng);
    let options = |backend| BatchOptions {
        backend,
        ..Default::default()
    };
    let Some(mut gpu) = common::gpu_batch(model.clone(), &states[0], 16, &options(Backend::Gpu))
    else {
        return;
    };
    assert!(gpu.is_resident(), "{:?}", gpu.notice());
    let mut cpu =
        BatchSim::new(model.clone(), &states[0], 16, &options(Backend::CpuSingle)).unwrap();
    for (w, s) in states.iter().enumerate() {
        gpu.set_state(w, s.clone()).unwrap();
        cpu.set_state(w, s.clone()).unwrap();
    }
    gpu.step_controls(&[]).unwrap();
    cpu.step_controls(&[]).unwrap();
    let got: Vec<State> = gpu.states().cloned().collect();
    let want: Vec<State> = cpu.states().cloned().collect();
    let (dq, dv) = max_difference(&got, &want);
    let (_, mv) = max_difference(&got, &states);
    assert!(dq < 1e-6 && dv < 2e-5, "{dq:e} {dv:e}");
    for (w, (g, s)) in got.iter().zip(&states).enumerate() {
        assert!((&g.v - &s.v).amax() > 1e-4, "world {w} stepped ({mv:e})");
    }
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
    let mut gpu = ResidentBatch::new(&ctx, &model, &params(dt), &states, n).unwrap();
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
    // Capsules against boxes do not collide on the device yet.
    let (rod, state) = common::capsule_on_a_table();
    let e = ResidentBatch::new(&ctx, &rod, &params(1e-3), std::slice::from_ref(&state), 4)
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .contains("`rod` (capsule) and `table` (cuboid) can collide"),
        "{e}"
    );
    let model = tree();
    let s = State::new(DVector::zeros(model.nq), DVector::zeros(model.nv));
    let e = ResidentBatch::new(&ctx, &model, &params(1e-3), &[s.clone(), s.clone()], 3)
        .err()
        .unwrap();
    assert!(matches!(e, ResidentError::DimensionMismatch { .. }), "{e}");
    // A batch over the device's capacity (6 GB of q, 4.7M workgroups) is
    // refused before allocating.
    let e = ResidentBatch::new(
        &ctx,
        &model,
        &params(1e-3),
        std::slice::from_ref(&s),
        300_000_000,
    )
    .err()
    .unwrap();
    assert!(matches!(e, ResidentError::Capacity { .. }), "{e}");
    // Bad torques are refused before anything moves.
    let mut gpu =
        ResidentBatch::new(&ctx, &model, &params(1e-3), std::slice::from_ref(&s), 3).unwrap();
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
    let mut gpu =
        ResidentBatch::new(&ctx, &model, &params(1e-3), std::slice::from_ref(&s), 3).unwrap();
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

/// Random states of a Gymnasium task around its `q0`, half of its limited
/// joints within a few mm (or mrad) of a stop, inside or past it, moving
/// into it; random controls up to 1.5× their ranges (clamped by the step).
fn task_inputs(
    m: &moreau::load::mjcf::MjcfModel,
    n: usize,
    rng: &mut Rng,
) -> (Vec<State>, Vec<f64>) {
    let model = &m.model;
    let states = (0..n)
        .map(|_| {
            let mut q = m.q0.clone();
            for x in q.iter_mut() {
                *x += rng.range(-0.3, 0.3);
            }
            let mut v = DVector::from_fn(model.nv, |_, _| rng.range(-2.0, 2.0));
            for (i, _, (lo, hi)) in model.limited_joints() {
                let (iq, iv) = (model.joint_idx_q[i], model.joint_idx_v[i]);
                q[iq] = q[iq].clamp(lo, hi);
                if rng.range(0.0, 1.0) < 0.5 {
                    let past = rng.range(-0.005, 0.005);
                    if rng.range(0.0, 1.0) < 0.5 {
                        q[iq] = lo - past;
                        v[iv] = -v[iv].abs();
                    } else {
                        q[iq] = hi + past;
                        v[iv] = v[iv].abs();
                    }
                }
            }
            State::new(q, v)
        })
        .collect();
    let mut ctrl = Vec::with_capacity(n * model.nu());
    for _ in 0..n {
        for a in &model.actuators {
            let (lo, hi) = a.ctrl_range.unwrap_or((-1.0, 1.0));
            ctrl.push(rng.range(1.5 * lo, 1.5 * hi));
        }
    }
    (states, ctrl)
}

/// Gymnasium's contact-free tasks: one resident step from random states
/// under random controls, then 100 steps, against the f64 CPU step.
#[test]
fn gymnasium_contact_free_tasks_step_resident_as_on_the_cpu() {
    let Some(ctx) = GpuContext::for_tests() else {
        return;
    };
    for (file, seed) in [
        ("inverted_pendulum.xml", 1),
        ("inverted_double_pendulum.xml", 2),
        ("reacher.xml", 3),
        ("swimmer.xml", 4),
    ] {
        let Some(m) = common::gymnasium(file) else {
            return;
        };
        let model = &m.model;
        let dt = m.timestep;
        let n = 128;
        let mut rng = Rng::new(seed);
        let (states, ctrl) = task_inputs(&m, n, &mut rng);
        let nu = model.nu();
        assert!(nu > 0, "{file} has actuators");
        let p = params(dt);
        let mut gpu = ResidentBatch::new(&ctx, model, &p, &states, n).unwrap();
        gpu.step_controls(&ctrl).unwrap();
        let (got, flagged) = gpu.states().unwrap();
        assert!(flagged.is_empty(), "{file}: {flagged:?}");
        let shared = Arc::new(model.clone());
        let mut sims: Vec<Simulator> = (0..n)
            .map(|_| Simulator::new(shared.clone(), p).unwrap())
            .collect();
        let mut want = states.clone();
        let mut limited_worlds = 0;
        for (w, s) in want.iter_mut().enumerate() {
            let r = sims[w]
                .step_controls(s, &ctrl[w * nu..(w + 1) * nu])
                .unwrap();
            assert_eq!(r.nc, 0, "{file}: no contacts");
            limited_worlds += usize::from(r.nl > 0);
        }
        let (dq, dv) = max_difference(&got, &want);
        let (_, mv) = max_difference(&want, &states);
        println!(
            "{file}: one step, {n} worlds ({limited_worlds} at a stop): |Δq| = {dq:.1e}, |Δv| = {dv:.1e} (|v⁺ − v| up to {mv:.2})"
        );
        if model.limited_joints().next().is_some() {
            assert!(
                limited_worlds > n / 4,
                "{file}: {limited_worlds} worlds at a stop"
            );
        }
        assert!(
            dq < 1e-6 && dv < 2e-5 * mv.max(1.0),
            "{file}: {dq:e} {dv:e}"
        );
        if model.medium.is_active() {
            // The fluid's drag is well above the agreement: without it the
            // CPU step lands elsewhere.
            let mut vacuum = model.clone();
            vacuum.medium = Default::default();
            let mut sim = Simulator::new(Arc::new(vacuum), p).unwrap();
            let mut dry = states.clone();
            for (w, s) in dry.iter_mut().enumerate() {
                sim.step_controls(s, &ctrl[w * nu..(w + 1) * nu]).unwrap();
            }
            let (_, drag) = max_difference(&dry, &want);
            println!("{file}: the fluid changes v⁺ by up to {drag:.1e}");
            assert!(drag > 100.0 * dv, "{file}: drag {drag:e}, agreement {dv:e}");
        }

        // 100 steps from gentler states, under smooth controls.
        let mut gpu = ResidentBatch::new(&ctx, model, &p, &states, n).unwrap();
        let mut want = states.clone();
        for s in sims.iter_mut() {
            s.clear_warm_start();
        }
        let mut c = vec![0.0; n * nu];
        for t in 0..100 {
            for (k, x) in c.iter_mut().enumerate() {
                *x = (0.1 * t as f64 + 0.9 * k as f64).sin();
            }
            gpu.step_controls(&c).unwrap();
            for (w, s) in want.iter_mut().enumerate() {
                sims[w].step_controls(s, &c[w * nu..(w + 1) * nu]).unwrap();
            }
        }
        let (got, flagged) = gpu.states().unwrap();
        assert!(flagged.is_empty(), "{file}: {flagged:?}");
        let (dq, dv) = max_difference(&got, &want);
        let (mq, _) = max_difference(&want, &states);
        println!("{file}: 100 steps: |Δq| = {dq:.1e}, |Δv| = {dv:.1e} (moved {mq:.2})");
        assert!(mq > 0.05, "{file}: the worlds moved");
        assert!(dq < 1e-3 && dv < 1e-2, "{file}: {dq:e} {dv:e}");
    }
}

/// `BatchSim` on the `gpu` backend: Gymnasium's swimmer lives on the
/// device and steps as the CPU backend does; masked worlds do not move;
/// a world with a NaN control sits the step out, flagged, and the others
/// step; a reset lands on the device; an invalid parameter of one world is
/// refused at the step; a world model of another joint structure moves the
/// batch to the host-prepared path, saying so, and it steps on from the
/// same states; a model with pairs the device cannot collide runs
/// host-prepared and says why.
#[test]
fn batch_sim_runs_resident_on_the_gpu_backend() {
    use moreau::batch::{Backend, BatchSim};
    let Some(m) = common::gymnasium("swimmer.xml") else {
        return;
    };
    let model = Arc::new(m.model.clone());
    let (n, nu) = (8, model.nu());
    let options = |backend| common::batch_options(backend, m.timestep);
    let initial = State::new(m.q0.clone(), DVector::zeros(model.nv));
    let Some(mut gpu) = common::gpu_batch(model.clone(), &initial, n, &options(Backend::Gpu))
    else {
        return;
    };
    assert!(
        gpu.is_resident() && gpu.notice().is_none(),
        "{:?}",
        gpu.notice()
    );
    let mut cpu = BatchSim::new(model.clone(), &initial, n, &options(Backend::CpuSingle)).unwrap();
    let mut ctrl = vec![0.0; n * nu];
    for t in 0..50 {
        for (k, x) in ctrl.iter_mut().enumerate() {
            *x = (0.2 * t as f64 + 0.7 * k as f64).sin();
        }
        let r = gpu.step_controls(&ctrl).unwrap();
        assert!(r.failed.is_empty(), "{:?}", r.failed);
        cpu.step_controls(&ctrl).unwrap();
    }
    let diff = |a: &BatchSim, b: &BatchSim| {
        a.states()
            .zip(b.states())
            .map(|(x, y)| (&x.q - &y.q).amax().max((&x.v - &y.v).amax()))
            .fold(0.0, f64::max)
    };
    let d = diff(&gpu, &cpu);
    assert!(d < 1e-4, "resident and CPU batches differ by {d:e}");
    assert!((gpu.state(3).unwrap().t - cpu.state(3).unwrap().t).abs() < 1e-12);
    // A frame skip: 4 steps under the same controls, one readback.
    let t0 = gpu.state(0).unwrap().t;
    gpu.step_controls_repeated(&ctrl, 4, None).unwrap();
    cpu.step_controls_repeated(&ctrl, 4, None).unwrap();
    let d = diff(&gpu, &cpu);
    assert!(d < 1e-4, "after a frame skip: {d:e}");
    let dt = m.timestep;
    assert!((gpu.state(0).unwrap().t - t0 - 4.0 * dt).abs() < 1e-12);

    // A mask, and a NaN control in world 2.
    let before: Vec<State> = gpu.states().cloned().collect();
    let mut active = vec![true; n];
    active[5] = false;
    ctrl[2 * nu] = f64::NAN;
    ctrl[5 * nu] = f64::NAN; // not read: world 5 sits out
    let r = gpu.step_controls_active(&ctrl, Some(&active)).unwrap();
    assert_eq!(r.failed.len(), 1, "{:?}", r.failed);
    assert_eq!(r.failed[0].0, 2);
    assert!(
        r.failed[0].1.to_string().contains("ctrl[0] is not finite"),
        "{}",
        r.failed[0].1
    );
    for w in [2, 5] {
        assert_eq!(gpu.state(w).unwrap(), &before[w], "world {w} did not move");
    }
    assert!(gpu.state(0).unwrap().q != before[0].q, "world 0 stepped");

    // A reset lands on the device: world 1 restarts from `initial`, as a
    // fresh CPU world does.
    gpu.set_state(1, initial.clone()).unwrap();
    ctrl.iter_mut().for_each(|x| *x = 0.5);
    gpu.step_controls(&ctrl).unwrap();
    let mut fresh =
        BatchSim::new(model.clone(), &initial, 1, &options(Backend::CpuSingle)).unwrap();
    fresh.step_controls(&ctrl[..nu]).unwrap();
    let (a, b) = (gpu.state(1).unwrap(), fresh.state(0).unwrap());
    assert!((&a.v - &b.v).amax() < 1e-5, "{} {}", a.v, b.v);

    // An invalid parameter of one world is refused at the step, naming
    // the world, and nothing moves; corrected, the worlds step on.
    let at: Vec<State> = gpu.states().cloned().collect();
    gpu.params_mut(3).unwrap().dt = -1.0;
    let e = gpu.step_controls(&ctrl).unwrap_err().to_string();
    assert!(e.contains("world 3") && e.contains("dt"), "{e}");
    assert_eq!(gpu.states().cloned().collect::<Vec<_>>(), at);
    gpu.params_mut(3).unwrap().dt = dt;
    gpu.step_controls(&ctrl).unwrap();
    assert!(gpu.is_resident() && gpu.notice().is_none());

    // A world model whose limited joints differ from the batch's cannot
    // share its kernel: the batch leaves the device, saying why.
    let at: Vec<State> = gpu.states().cloned().collect();
    let mut unlimited = model.as_ref().clone();
    let j = (1..unlimited.nbodies)
        .find(|&i| unlimited.joint_range[i].is_some())
        .unwrap();
    unlimited.joint_range[j] = None;
    gpu.set_world_model(0, Arc::new(unlimited)).unwrap();
    assert!(!gpu.is_resident());
    let notice = gpu.notice().unwrap();
    assert!(
        notice.contains("left the device") && notice.contains("joints differ"),
        "{notice}"
    );
    assert_eq!(
        gpu.states().cloned().collect::<Vec<_>>(),
        at,
        "the states carried over"
    );
    gpu.step_controls(&ctrl).unwrap();
    assert!(gpu.state(0).unwrap().q != at[0].q);

    // Pairs the device cannot collide: host-prepared, with the reason.
    let (rod, state) = common::capsule_on_a_table();
    let o = options(Backend::Gpu);
    let b = BatchSim::new(rod, &state, 2, &o).unwrap();
    assert!(!b.is_resident());
    let notice = b.notice().unwrap();
    assert!(
        notice.contains("can collide") && notice.contains("gpu-solve"),
        "{notice}"
    );
}

/// A bounded recovery speed (`max_recovery_speed`) on the device as on the
/// CPU: a cube started 5 cm into the ground rises at the bound (10 m/s
/// unbounded; its contacts rigid, `penetration_compliance` 0), and a rod started 0.5 rad past its stop comes back at it
/// (100 rad/s unbounded); resident, the worlds follow the CPU's.
#[test]
fn bounded_recovery_on_the_device_as_on_the_cpu() {
    use moreau::batch::{Backend, BatchSim};
    let cube = moreau::scenes::scene("cube-resting").unwrap();
    let mut sunk = cube.state.clone();
    sunk.q[2] -= 0.05;
    let (rod, _) = common::rod(
        2.0,
        Vec3::zeros(),
        moreau::model::JointSpec {
            range: Some((0.0, 1.0)),
            ..Default::default()
        },
    );
    let rod = Arc::new(rod.build().unwrap());
    let past = State::new(DVector::from_element(1, -0.5), DVector::zeros(1));
    // (The model, its start, the dof that recovers.)
    for (model, start, dof) in [(cube.model.clone(), sunk, 2), (rod, past, 0)] {
        let options = |backend| {
            let mut o = common::batch_options(backend, 1e-3);
            o.params.max_recovery_speed = Some(0.5);
            o.params.penetration_compliance = 0.0;
            o
        };
        let Some(mut gpu) = common::gpu_batch(model.clone(), &start, 4, &options(Backend::Gpu))
        else {
            return;
        };
        assert!(gpu.is_resident(), "{:?}", gpu.notice());
        let mut cpu =
            BatchSim::new(model.clone(), &start, 4, &options(Backend::CpuSingle)).unwrap();
        let zeros = vec![0.0; 4 * model.nv];
        let (mut fastest, mut apart): (f64, f64) = (0.0, 0.0);
        for _ in 0..30 {
            gpu.step(&zeros).unwrap();
            cpu.step(&zeros).unwrap();
            for (g, c) in gpu.states().zip(cpu.states()) {
                apart = apart.max((&g.q - &c.q).amax()).max((&g.v - &c.v).amax());
                fastest = fastest.max(g.v[dof]);
            }
        }
        assert!((fastest - 0.5).abs() < 1e-4, "{}: {fastest}", model.name);
        assert!(apart < 1e-4, "{}: {apart:e}", model.name);
    }
}

/// A penetrating contact's compliance (`penetration_compliance`) on the
/// device as on the CPU: a cube started 2 cm into the ground comes out
/// slower than the rigid one (at about `G/(G + R)` of its speed); the same α for every world (the
/// uniform's) and one per world (worlds 1 and 3 rigid), resident, the
/// worlds following the CPU's, the compliant ones slower than the rigid.
#[test]
fn penetration_compliance_on_the_device_as_on_the_cpu() {
    use moreau::batch::{Backend, BatchSim};
    let cube = moreau::scenes::scene("cube-resting").unwrap();
    let mut sunk = cube.state.clone();
    sunk.q[2] -= 0.02;
    let model = cube.model.clone();
    for per_world in [false, true] {
        let make = |backend| {
            let mut o = common::batch_options(backend, 1e-3);
            o.params.penetration_compliance = 0.1;
            let batch = if backend == Backend::Gpu {
                common::gpu_batch(model.clone(), &sunk, 4, &o)
            } else {
                Some(BatchSim::new(model.clone(), &sunk, 4, &o).unwrap())
            };
            batch.map(|mut b| {
                if per_world {
                    for w in [1, 3] {
                        b.params_mut(w).unwrap().penetration_compliance = 0.0;
                    }
                }
                b
            })
        };
        let Some(mut gpu) = make(Backend::Gpu) else {
            return;
        };
        assert!(gpu.is_resident(), "{:?}", gpu.notice());
        let mut cpu = make(Backend::CpuSingle).unwrap();
        let zeros = vec![0.0; 4 * model.nv];
        let mut apart: f64 = 0.0;
        let mut fastest = [0.0f64; 4];
        for _ in 0..30 {
            gpu.step(&zeros).unwrap();
            cpu.step(&zeros).unwrap();
            for (w, (g, c)) in gpu.states().zip(cpu.states()).enumerate() {
                apart = apart.max((&g.q - &c.q).amax()).max((&g.v - &c.v).amax());
                fastest[w] = fastest[w].max(g.v[2]);
            }
        }
        println!("per world {per_world}: fastest rise {fastest:?}, GPU and CPU {apart:.1e} apart");
        assert!(apart < 1e-4, "{apart:e}");
        for (w, v) in fastest.into_iter().enumerate() {
            if per_world && w % 2 == 1 {
                assert!((v - 4.0).abs() < 1e-5, "world {w}: {v}");
            } else {
                // α = 0.1: about 0.1 of G in R, so about 9 % slower.
                assert!(v < 0.97 * 4.0 && v > 0.85 * 4.0, "world {w}: {v}");
            }
        }
    }
}

/// Domain randomization on the device: every world of Gymnasium's swimmer
/// (a fluid, joint stops) and double pendulum its own masses and inertias,
/// damping, armature, gear, gravity, fluid density, `dt` and limit
/// settings, through `BatchSim::set_world_model` and `params_mut`; the
/// batch stays resident and steps as the CPU batch with the same worlds,
/// one step from random states and 20 under smooth controls. The
/// randomization moves the step far more than the agreement.
#[test]
fn each_world_its_own_model_and_parameters_on_the_device() {
    use moreau::batch::{Backend, BatchOptions, BatchSim};
    for (file, seed) in [("swimmer.xml", 5), ("inverted_double_pendulum.xml", 6)] {
        let Some(m) = common::gymnasium(file) else {
            return;
        };
        let base = Arc::new(m.model.clone());
        let dt = m.timestep;
        let n = 32;
        let mut rng = Rng::new(seed);
        let (states, ctrl) = task_inputs(&m, n, &mut rng);
        let options = |backend| {
            let mut o = BatchOptions {
                backend,
                ..Default::default()
            };
            o.params.dt = dt;
            o
        };
        let make = |backend| BatchSim::new(base.clone(), &states[0], n, &options(backend));
        let Some(mut gpu) = common::gpu_batch(base.clone(), &states[0], n, &options(Backend::Gpu))
        else {
            return;
        };
        let mut cpu = make(Backend::CpuSingle).unwrap();
        let mut plain = make(Backend::CpuSingle).unwrap();
        let mut u = |lo: f64, hi: f64| lo + (hi - lo) * rng.uniform();
        for w in 0..n {
            let mut mw = base.as_ref().clone();
            for b in mw.body_inertia.iter_mut().skip(1) {
                let s = u(0.5, 2.0);
                b.mass *= s;
                b.rotational *= s;
            }
            for k in 0..mw.nv {
                mw.dof_damping[k] = mw.dof_damping[k] * u(0.5, 2.0) + u(0.0, 0.05);
                mw.dof_armature[k] += u(0.0, 0.02);
            }
            for a in mw.actuators.iter_mut() {
                a.gear *= u(0.5, 1.5);
            }
            mw.gravity = Vec3::new(u(-1.0, 1.0), u(-1.0, 1.0), -9.81 * u(0.5, 1.5));
            mw.medium.density *= u(0.5, 2.0);
            let mw = Arc::new(mw);
            let dt_w = dt * u(0.5, 1.5);
            let (beta, margin) = (u(0.1, 0.5), u(0.0, 0.05));
            for b in [&mut gpu, &mut cpu] {
                b.set_world_model(w, mw.clone()).unwrap();
                let p = b.params_mut(w).unwrap();
                p.dt = dt_w;
                p.baumgarte = beta;
                p.limit_margin = margin;
                b.set_state(w, states[w].clone()).unwrap();
            }
            plain.set_state(w, states[w].clone()).unwrap();
        }
        gpu.step_controls(&ctrl).unwrap();
        cpu.step_controls(&ctrl).unwrap();
        plain.step_controls(&ctrl).unwrap();
        assert!(
            gpu.is_resident() && gpu.notice().is_none(),
            "{:?}",
            gpu.notice()
        );
        let got: Vec<State> = gpu.states().cloned().collect();
        let want: Vec<State> = cpu.states().cloned().collect();
        let unrandomized: Vec<State> = plain.states().cloned().collect();
        let (dq, dv) = max_difference(&got, &want);
        let (_, mv) = max_difference(&want, &states);
        let (rq, rv) = max_difference(&want, &unrandomized);
        println!(
            "{file}: one step, {n} randomized worlds: |Δq| = {dq:.1e}, |Δv| = {dv:.1e} (|v⁺ − v| up to {mv:.2}; the randomization moves q⁺ by {rq:.1e}, v⁺ by {rv:.1e})"
        );
        assert!(
            dq < 1e-6 && dv < 2e-5 * mv.max(1.0),
            "{file}: {dq:e} {dv:e}"
        );
        assert!(rq > 100.0 * dq && rv > 100.0 * dv, "{file}: {rq:e} {rv:e}");
        for w in 0..n {
            let (a, b) = (gpu.state(w).unwrap().t, cpu.state(w).unwrap().t);
            assert!(
                (a - b).abs() < 1e-12,
                "{file}: world {w}: t {a} against {b}"
            );
        }
        let mut c = vec![0.0; ctrl.len()];
        for t in 0..20 {
            for (k, x) in c.iter_mut().enumerate() {
                *x = (0.1 * t as f64 + 0.9 * k as f64).sin();
            }
            gpu.step_controls(&c).unwrap();
            cpu.step_controls(&c).unwrap();
        }
        let got: Vec<State> = gpu.states().cloned().collect();
        let want: Vec<State> = cpu.states().cloned().collect();
        let (dq, dv) = max_difference(&got, &want);
        println!("{file}: 20 more steps: |Δq| = {dq:.1e}, |Δv| = {dv:.1e}");
        assert!(dq < 1e-3 && dv < 1e-2, "{file}: {dq:e} {dv:e}");
        assert!(gpu.is_resident());
    }
}

/// `model` with no geometry that can collide (robots in the air).
fn in_the_air(model: &Model) -> Model {
    let mut m = model.clone();
    for g in m.geometries.iter_mut() {
        g.material.contype = 0;
        g.material.conaffinity = 0;
    }
    m
}

/// A floating base on a free joint, a ball joint, a hinge after it, and
/// a second ball joint on another branch.
fn floating() -> Model {
    let mut b = ModelBuilder::new("floating");
    let inertia = |m: f64, c: [f64; 3], d: [f64; 3]| {
        let mut i = Mat3::from_diagonal(&Vec3::new(d[0], d[1], d[2]));
        i[(0, 2)] = 0.1 * d[0];
        i[(2, 0)] = 0.1 * d[0];
        Inertia::new(m, Vec3::new(c[0], c[1], c[2]), i)
    };
    let at = |t: [f64; 3], angle: f64| {
        SE3::from_quaternion(
            &UnitQuaternion::from_scaled_axis(Vec3::new(0.3, -0.5, 0.8).normalize() * angle),
            Vec3::new(t[0], t[1], t[2]),
        )
    };
    let base = b
        .add_body(
            "base",
            0,
            JointType::Free,
            SE3::identity(),
            inertia(3.0, [0.01, 0.02, 0.0], [0.05, 0.08, 0.1]),
        )
        .unwrap();
    let shoulder = b
        .add_body(
            "shoulder",
            base,
            JointType::Spherical,
            at([0.2, 0.0, 0.1], 0.4),
            inertia(0.6, [0.0, 0.0, -0.15], [0.01, 0.012, 0.004]),
        )
        .unwrap();
    let elbow = b
        .add_body(
            "elbow",
            shoulder,
            JointType::Revolute(Vec3::y()),
            at([0.0, 0.0, -0.3], -0.2),
            inertia(0.4, [0.0, 0.0, -0.12], [0.006, 0.006, 0.002]),
        )
        .unwrap();
    b.add_body(
        "hip",
        base,
        JointType::Spherical,
        at([-0.2, 0.05, -0.1], 1.1),
        inertia(0.8, [0.0, 0.05, -0.1], [0.02, 0.01, 0.015]),
    )
    .unwrap();
    let spec = |damping: f64, armature: f64| JointSpec {
        damping,
        armature,
        ..JointSpec::default()
    };
    b.set_joint_spec(shoulder, spec(0.2, 0.01)).unwrap();
    b.set_joint_spec(elbow, spec(0.1, 0.02)).unwrap();
    b.build().unwrap()
}

/// Random states around `q0` (±`spread`, quaternions renormalized, hinges
/// and slides kept in their ranges) with velocities in ±`speed`.
fn random_unit_states(
    model: &Model,
    q0: &DVector<f64>,
    n: usize,
    spread: f64,
    speed: f64,
    rng: &mut Rng,
) -> Vec<State> {
    (0..n)
        .map(|_| {
            let mut q = q0 + DVector::from_fn(model.nq, |_, _| rng.range(-spread, spread));
            for i in 1..model.nbodies {
                let k = model.joint_idx_q[i];
                if let Some(o) = model.joint_type[i].quaternion_offset() {
                    let mut quat = q.rows(k + o, 4).into_owned();
                    quat.normalize_mut();
                    q.rows_mut(k + o, 4).copy_from(&quat);
                } else if let Some((lo, hi)) = model.joint_range[i] {
                    q[k] = q[k].clamp(lo, hi);
                }
            }
            let v = DVector::from_fn(model.nv, |_, _| rng.range(-speed, speed));
            State::new(q, v)
        })
        .collect()
}

/// Free and ball joints: a floating tree with two ball joints, the
/// built-in quadruped and Gymnasium's ant and humanoid in the air (their
/// geometries made non-colliding), one step from random states and
/// torques and 100 steps, against the f64 CPU step.
#[test]
fn floating_robots_in_the_air_step_resident_as_on_the_cpu() {
    let Some(ctx) = GpuContext::for_tests() else {
        return;
    };
    let f = floating();
    let mut q0 = DVector::zeros(f.nq);
    q0[6] = 1.0;
    q0[10] = 1.0;
    q0[15] = 1.0;
    // (model, q0, spread of q around it, dt)
    let mut models = vec![(f, q0, 1.0, 2e-3), {
        let q = moreau::scenes::scene("quadruped").unwrap();
        (in_the_air(&q.model), q.state.q.clone(), 0.5, q.dt)
    }];
    for file in ["ant.xml", "humanoid.xml"] {
        if let Some(m) = common::gymnasium(file) {
            let dt = m.timestep;
            models.push((in_the_air(&m.model), m.q0.clone(), 0.3, dt));
        }
    }
    for (model, q0, spread, dt) in &models {
        assert!(
            moreau::gpu::resident::unsupported(model).is_none(),
            "{}",
            model.name
        );
        let n = 32;
        let mut rng = Rng::new(21);
        let states = random_unit_states(model, q0, n, *spread, 1.0, &mut rng);
        let tau: Vec<f64> = (0..n * model.nv).map(|_| rng.range(-1.0, 1.0)).collect();
        let mut gpu = ResidentBatch::new(&ctx, model, &params(*dt), &states, n).unwrap();
        gpu.step(&tau).unwrap();
        let (got, flagged) = gpu.states().unwrap();
        assert!(flagged.is_empty(), "{}: {flagged:?}", model.name);
        let shared = Arc::new(model.clone());
        let mut want = states.clone();
        let mut sims: Vec<Simulator> = (0..n)
            .map(|_| Simulator::new(shared.clone(), params(*dt)).unwrap())
            .collect();
        let mut at_stops = 0;
        for (w, s) in want.iter_mut().enumerate() {
            let r = sims[w]
                .step(s, &tau[w * model.nv..(w + 1) * model.nv])
                .unwrap();
            assert_eq!(r.nc, 0);
            at_stops += usize::from(r.nl > 0);
        }
        if model.limited_joints().next().is_some() {
            // Joints clamped onto their stops: limit rows through the free base.
            assert!(
                at_stops > n / 4,
                "{}: {at_stops} worlds at a stop",
                model.name
            );
        }
        let (dq, dv) = max_difference(&got, &want);
        let (_, mv) = max_difference(&want, &states);
        println!(
            "{}: one step, {n} worlds: |Δq| = {dq:.1e}, |Δv| = {dv:.1e} (|v⁺ − v| up to {mv:.2})",
            model.name
        );
        assert!(
            dq < 1e-6 && dv < 1e-4 * mv.max(1.0),
            "{}: {dq:e} {dv:e}",
            model.name
        );

        let states = random_unit_states(model, q0, n, *spread, 0.25, &mut rng);
        let mut gpu = ResidentBatch::new(&ctx, model, &params(*dt), &states, n).unwrap();
        let mut want = states.clone();
        sims.iter_mut().for_each(|s| s.clear_warm_start());
        let mut t = vec![0.0; n * model.nv];
        for step in 0..100 {
            for (k, x) in t.iter_mut().enumerate() {
                *x = 0.3 * (0.07 * step as f64 + 0.9 * k as f64).sin();
            }
            gpu.step(&t).unwrap();
            for (w, s) in want.iter_mut().enumerate() {
                sims[w]
                    .step(s, &t[w * model.nv..(w + 1) * model.nv])
                    .unwrap();
            }
        }
        let (got, flagged) = gpu.states().unwrap();
        assert!(flagged.is_empty(), "{}: {flagged:?}", model.name);
        let (dq, dv) = max_difference(&got, &want);
        let (mq, _) = max_difference(&want, &states);
        println!(
            "{}: 100 steps: |Δq| = {dq:.1e}, |Δv| = {dv:.1e} (moved {mq:.2})",
            model.name
        );
        assert!(mq > 0.05, "{}: the worlds moved", model.name);
        assert!(dq < 1e-3 && dv < 1e-2, "{}: {dq:e} {dv:e}", model.name);
    }
}

/// Each stage against its f64 twin, on random states and controls of
/// Gymnasium's contact-free tasks and of the ant and humanoid in the air:
/// forward kinematics (every body's world rotation and position), the
/// generalized forces the dynamics see (actuators, springs, explicit
/// damping), the free velocity (ABA, fluid), the joint stops' constraint
/// forces (the limit LCP), and the state after integration.
#[test]
fn each_stage_matches_its_cpu_twin() {
    use moreau::dynamics::{Data, forward_kinematics};
    use moreau::sim::actuator_forces;
    let Some(ctx) = GpuContext::for_tests() else {
        return;
    };
    let files = [
        ("inverted_pendulum.xml", false),
        ("inverted_double_pendulum.xml", false),
        ("reacher.xml", false),
        ("swimmer.xml", false),
        ("ant.xml", true),
        ("humanoid.xml", true),
    ];
    for (file, air) in files {
        let Some(mut m) = common::gymnasium(file) else {
            return;
        };
        if air {
            m.model = in_the_air(&m.model);
        }
        let model = &m.model;
        let dt = m.timestep;
        let n = 32;
        let mut rng = Rng::new(5);
        let (states, ctrl) = if air {
            let s = random_unit_states(model, &m.q0, n, 0.3, 1.0, &mut rng);
            let c = (0..n * model.nu()).map(|_| rng.range(-1.5, 1.5)).collect();
            (s, c)
        } else {
            task_inputs(&m, n, &mut rng)
        };
        let nu = model.nu();
        let mut gpu =
            ResidentBatch::with_stage_probe(&ctx, model, &params(dt), &states, n).unwrap();
        gpu.step_controls(&ctrl).unwrap();
        let stages = gpu.read_stages().unwrap();
        let mut qfrc = vec![vec![0.0; model.nv]; n];
        let mut after = states.clone();
        let flagged = gpu.read_states(&mut after).unwrap();
        assert!(flagged.is_empty());
        gpu.read_raw(|w, _, _, f, _| qfrc[w].iter_mut().zip(f).for_each(|(x, y)| *x = y))
            .unwrap();
        let shared = Arc::new(model.clone());
        let mut data = Data::new(model);
        let mut worst = [0.0f64; 6];
        let (mut scale_tau, mut scale_f, mut scale_dv, mut at_stops) = (0.0f64, 0.0f64, 0.0f64, 0);
        for (w, start) in states.iter().enumerate() {
            let got = &stages[w];
            forward_kinematics(model, &mut data, start.q.as_slice());
            for i in 0..model.nbodies {
                let x = &data.world_from_body[i];
                worst[0] = worst[0].max((got.body_rotation[i] - x.rotation).amax());
                worst[0] = worst[0].max((got.body_position[i] - x.translation).amax());
            }
            let u = &ctrl[w * nu..(w + 1) * nu];
            let mut tau = vec![0.0; model.nv];
            actuator_forces(
                model,
                start.q.as_slice(),
                start.v.as_slice(),
                u,
                &[],
                0.0,
                &mut tau,
            );
            for k in 0..model.nv {
                let qk = start.q[model.joint_idx_q[model.dof_body[k]]];
                tau[k] -= model.dof_stiffness[k] * (qk - model.dof_springref[k])
                    + model.dof_damping[k] * start.v[k];
                worst[1] = worst[1].max((got.tau[k] - tau[k]).abs());
                scale_tau = scale_tau.max(tau[k].abs());
            }
            let mut sim = Simulator::new(shared.clone(), params(dt)).unwrap();
            let mut s = start.clone();
            let r = sim.step_controls(&mut s, u).unwrap();
            at_stops += usize::from(r.nl > 0);
            worst[2] = worst[2].max((&got.v_free - sim.free_velocity()).amax());
            scale_dv = scale_dv.max((sim.free_velocity() - &start.v).amax());
            let m_rows = sim.problem().m();
            for k in 0..model.nv {
                let f = (0..m_rows)
                    .map(|r| sim.jacobian().jacobian[(r, k)] * sim.solution().lambda[r])
                    .sum::<f64>()
                    / dt;
                worst[3] = worst[3].max((qfrc[w][k] - f).abs());
                scale_f = scale_f.max(f.abs());
            }
            worst[4] = worst[4].max((&after[w].q - &s.q).amax());
            worst[5] = worst[5].max((&after[w].v - &s.v).amax());
        }
        println!(
            "{file}: kinematics {:.1e}, forces {:.1e} (of {scale_tau:.1}), v_f {:.1e} (|v_f − v| up to {scale_dv:.1}), stop forces {:.1e} (of {scale_f:.1}, {at_stops} worlds at a stop), q⁺ {:.1e}, v⁺ {:.1e}",
            worst[0], worst[1], worst[2], worst[3], worst[4], worst[5]
        );
        assert!(worst[0] < 2e-6, "{file}: kinematics {:e}", worst[0]);
        assert!(
            worst[1] < 1e-6 * scale_tau.max(1.0),
            "{file}: forces {:e}",
            worst[1]
        );
        // f32: the velocity change dt·q̈ to a few 1e-6 of itself (1.3e-5
        // on the humanoid: its ABA runs through 13 bodies of very unequal
        // inertias).
        let dv = 3e-5 * scale_dv.max(1.0);
        assert!(worst[2] < dv, "{file}: v_f {:e}", worst[2]);
        assert!(
            worst[3] < 1e-4 * scale_f.max(1.0),
            "{file}: stop forces {:e}",
            worst[3]
        );
        assert!(
            worst[4] < 1e-6 && worst[5] < dv,
            "{file}: {:e} {:e}",
            worst[4],
            worst[5]
        );
        if model.limited_joints().next().is_some() {
            assert!(at_stops > 0 && scale_f > 0.0, "{file}: the limit stage ran");
        }
    }
}
