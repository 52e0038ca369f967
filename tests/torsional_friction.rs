//! Torsional and rolling friction (MuJoCo's `condim` 4 and 6) against
//! their analytic motions: a spinning sphere stops at the torsional rate,
//! a rolling ball stops over the rolling-resistance distance, a box pinched
//! between two point fingers holds a torque about the pinch axis up to the
//! torsional bound, only with `condim` 4. Each also with `condim` 3, where
//! the motion must differ; then the three together against MuJoCo's run
//! of them (tests/data/mujoco/torsional.xml and .json).

mod common;

use common::mjcf::parse;
use moreau::contact::SolverKind;
use moreau::sim::{SimParams, Simulator, State};
use nalgebra::DVector;
use std::sync::Arc;

const G: f64 = 9.81;

fn simulator(xml: &str) -> (Simulator, State) {
    let m = parse(xml);
    let model = Arc::new(m.model);
    let params = SimParams {
        dt: m.timestep,
        ..Default::default()
    };
    let sim = Simulator::new(model.clone(), params).unwrap();
    let state = State::new(m.q0.clone(), DVector::zeros(model.nv));
    (sim, state)
}

/// A sphere of radius `r` and mass 1 kg resting on a plane, with the
/// pair's `condim` and `friction`.
fn sphere_on_plane(r: f64, condim: u8, friction: &str) -> (Simulator, State) {
    simulator(&format!(
        r#"<mujoco><option timestep="0.001"/><worldbody>
        <geom name="floor" type="plane" size="5 5 .1" condim="{condim}" friction="{friction}"/>
        <body name="ball" pos="0 0 {r}"><freejoint/>
          <geom type="sphere" size="{r}" mass="1" condim="{condim}" friction="{friction}"/></body>
        </worldbody></mujoco>"#
    ))
}

#[test]
fn a_spinning_sphere_stops_at_the_torsional_rate() {
    let (mu_t, omega0) = (0.01, 5.0);
    // I = 2/5 m r², the torque μ_t m g: ω(t) = ω0 − α t until it stops.
    let alpha = mu_t * G / (0.4 * 0.1 * 0.1);
    let t_stop = omega0 / alpha;
    for condim in [3, 4, 6] {
        let (mut sim, mut state) = sphere_on_plane(0.1, condim, &format!("0.8 {mu_t} 0"));
        state.v[5] = omega0;
        let mut at_half = f64::NAN;
        for k in 1..=400 {
            let report = sim.step(&mut state, &[0.0; 6]).unwrap();
            assert!(
                report.solver.is_some_and(|s| s.converged),
                "condim {condim}, step {k}"
            );
            if k == 100 {
                at_half = state.v[5];
            }
        }
        if condim == 3 {
            // No torsional friction: it spins on.
            assert!((state.v[5] - omega0).abs() < 1e-9, "{}", state.v[5]);
            continue;
        }
        let expected = omega0 - alpha * 0.1;
        assert!(
            (at_half - expected).abs() < 1e-6 * omega0,
            "condim {condim}: ω(0.1 s) = {at_half}, analytic {expected}"
        );
        assert!(t_stop < 0.4);
        assert!(state.v[5].abs() < 1e-9, "stopped: {}", state.v[5]);
        // No sliding, no drift, resting on the plane.
        assert!(state.v.rows(0, 5).amax() < 1e-6, "{}", state.v);
        assert!((state.q[2] - 0.1).abs() < 1e-4, "{}", state.q[2]);
    }
}

#[test]
fn a_rolling_ball_stops_over_the_rolling_distance() {
    // A large ball turning slowly (1 rad/s): the free joint's body-frame
    // velocity gains (ω dt)²/2 a step from the explicit ω × v term
    // (docs/limitations.md), 4e-4 over this run.
    let (mu_r, v0, r) = (0.05, 0.5, 0.5);
    // Rolling without slip, the rolling torque τ resisting: (I + m r²) ω̇ = −τ,
    // so a = τ / (1.4 m r), over v0² / 2a. MuJoCo's elliptic cone shares
    // the normal force between the rolling torque and the friction force
    // F = m a that keeps the ball rolling: (F/μ)² + (τ/μ_r)² = N², so
    // a = μ_r g / (1.4 r) · √(1 − (a / μ g)²) (0.26 % below the
    // uncoupled bound here), solved by fixed-point iteration.
    let mu = 1.0;
    let mut a = mu_r * G / (1.4 * r);
    for _ in 0..50 {
        a = mu_r * G / (1.4 * r) * (1.0 - (a / (mu * G)).powi(2)).sqrt();
    }
    let distance = v0 * v0 / (2.0 * a);
    for condim in [4, 6] {
        let (mut sim, mut state) = sphere_on_plane(r, condim, &format!("1 0 {mu_r}"));
        // (The free joint's velocity is the body's, in its own frame:
        // the world's at the start.)
        state.v[0] = v0;
        state.v[4] = v0 / r;
        let mut at_half = f64::NAN;
        let steps = (1.2 * v0 / a / 1e-3) as usize;
        for k in 1..=steps {
            let x = state.q[0];
            let report = sim.step(&mut state, &[0.0; 6]).unwrap();
            assert!(
                report.solver.is_some_and(|s| s.converged),
                "condim {condim}, step {k}"
            );
            if k == 300 {
                at_half = (state.q[0] - x) / 1e-3;
            }
        }
        if condim == 4 {
            // No rolling friction: it rolls on, 1.2 × the distance in the time.
            let rolled = state.q[0];
            assert!((rolled - v0 * steps as f64 * 1e-3).abs() < 1e-3, "{rolled}");
            continue;
        }
        // (The step's mean velocity: at its middle.)
        let expected = v0 - a * 0.2995;
        assert!(
            (at_half - expected).abs() < 1e-3 * v0,
            "v(0.3 s) = {at_half}, analytic {expected}"
        );
        assert!(
            (state.q[0] - distance).abs() < 2e-3 * distance,
            "rolled {} m, analytic {distance} m",
            state.q[0]
        );
        assert!(state.v.amax() < 1e-6, "at rest: {}", state.v);
    }
}

/// A 0.1 m cube on a slide and a hinge about x, pinched along x between a
/// fixed sphere and a sphere pushed with 10 N: both contacts lie on the
/// hinge's axis, so only torsional friction resists a torque about it.
fn pinch(condim: u8, torque: f64) -> f64 {
    let (mut sim, mut state) = simulator(&format!(
        r#"<mujoco><option timestep="0.001" gravity="0 0 0"/>
        <default><geom condim="{condim}" friction="0.8 0.01 0"/></default>
        <worldbody>
          <geom name="left" type="sphere" size="0.02" pos="-0.07 0 0"/>
          <body name="box"><joint name="slide" type="slide" axis="1 0 0"/>
            <joint name="turn" type="hinge" axis="1 0 0"/>
            <geom type="box" size="0.05 0.05 0.05" mass="0.1"/></body>
          <body name="finger" pos="0.07 0 0"><joint name="push" type="slide" axis="1 0 0"/>
            <geom type="sphere" size="0.02" mass="0.1"/></body>
        </worldbody>
        <actuator><motor joint="turn" ctrlrange="-1 1"/><motor joint="push" ctrlrange="-20 20"/></actuator>
        </mujoco>"#
    ));
    let ctrl = [torque, -10.0];
    for k in 0..500 {
        let report = sim.step_controls(&mut state, &ctrl).unwrap();
        assert!(
            report.solver.is_some_and(|s| s.converged),
            "condim {condim}, step {k}"
        );
    }
    // The hinge's angle after 0.5 s.
    state.q[1]
}

#[test]
fn a_pinched_box_holds_a_torque_up_to_the_torsional_bound_only_with_condim_4() {
    // Bound: two contacts of 10 N, each at most 0.01 m × 10 N.
    let bound = 2.0 * 0.01 * 10.0;
    let held = pinch(4, 0.75 * bound);
    assert!(
        held.abs() < 1e-3,
        "held at 0.75 of the bound: turned {held} rad"
    );
    let slipped = pinch(4, 1.25 * bound);
    assert!(
        slipped > 1.0,
        "slipped at 1.25 of the bound: turned {slipped} rad"
    );
    let free = pinch(3, 0.25 * bound);
    assert!(
        free > 1.0,
        "condim 3 at 0.25 of the bound: turned {free} rad"
    );
}

#[test]
fn a_restored_warm_start_continues_bit_for_bit_with_cone_rows() {
    // A ball spinning and rolling on a plane (spin and rolling rows), its
    // warm start moved into a fresh simulator halfway.
    let (mut sim, mut state) = sphere_on_plane(0.1, 6, "0.8 0.01 0.002");
    state.v[0] = 0.3;
    state.v[4] = 2.0;
    state.v[5] = 4.0;
    for _ in 0..50 {
        sim.step(&mut state, &[0.0; 6]).unwrap();
    }
    let warm = sim.warm_start();
    assert_eq!(
        warm.contact_spins.len(),
        1,
        "the contact's spin and rolling impulses"
    );
    assert!(warm.contact_spins[0].1.iter().any(|x| *x != 0.0));
    let (mut twin, _) = sphere_on_plane(0.1, 6, "0.8 0.01 0.002");
    twin.set_warm_start(warm).unwrap();
    let mut twin_state = state.clone();
    for _ in 0..50 {
        sim.step(&mut state, &[0.0; 6]).unwrap();
        twin.step(&mut twin_state, &[0.0; 6]).unwrap();
    }
    assert_eq!(state.q, twin_state.q);
    assert_eq!(state.v, twin_state.v);
}

#[test]
fn solvers_and_backends_without_wide_cones_refuse_them_by_name() {
    use moreau::batch::{Backend, BatchError, BatchOptions, BatchSim};
    for solver in [
        SolverKind::LcpPgs,
        SolverKind::CcpPgs,
        SolverKind::Raisim,
        SolverKind::Staggered,
    ] {
        let (mut sim, mut state) = sphere_on_plane(0.1, 4, "0.8 0.01 0");
        sim.params.solver = solver;
        let before = state.clone();
        let err = sim.step(&mut state, &[0.0; 6]).unwrap_err().to_string();
        assert!(
            err.contains("friction cone") && err.contains("condim 4 or 6"),
            "{err}"
        );
        assert_eq!(state.q, before.q, "state untouched");
    }
    // ccp-admm and ncp-pgs take them: the spin slows at the torsional rate.
    let alpha = 0.01 * G / (0.4 * 0.1 * 0.1);
    for solver in [SolverKind::CcpAdmm, SolverKind::NcpPgs] {
        let (mut sim, mut state) = sphere_on_plane(0.1, 4, "0.8 0.01 0");
        sim.params.solver = solver;
        state.v[5] = 1.0;
        for _ in 0..10 {
            let s = sim.step(&mut state, &[0.0; 6]).unwrap().solver.unwrap();
            assert!(s.converged, "{solver:?}");
        }
        // (The CCP lifts a sliding contact, at c_N = μ‖c_T‖: less normal
        // force, less torque.)
        let want = 1.0 - alpha * 0.01;
        let tol = if solver == SolverKind::NcpPgs {
            1e-6
        } else {
            1e-3
        };
        assert!(
            (state.v[5] - want).abs() < tol,
            "{solver:?}: {} vs {want}",
            state.v[5]
        );
    }
    let (sim, state) = sphere_on_plane(0.1, 4, "0.8 0.01 0");
    // The GPU backends with a PGS kernel, before any adapter is looked for
    // (their ADMM kernels take them: the_gpu_backends_take_wide_cones_with_admm).
    let model = sim.model().clone();
    for backend in [Backend::Gpu, Backend::GpuSolve] {
        let mut options = BatchOptions {
            backend,
            ..Default::default()
        };
        options.params.solver = SolverKind::NcpPgs;
        match BatchSim::new(model.clone(), &state, 2, &options) {
            Err(e @ BatchError::GpuUnsupported(_)) => {
                let e = e.to_string();
                assert!(
                    e.contains("condim 4 or 6") && e.contains("ncp-admm") && e.contains("ncp-pgs"),
                    "{e}"
                )
            }
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("a GPU batch with PGS took cone rows"),
        }
    }
}

/// The GPU backends with `ncp-admm` (the default) take torsional and
/// rolling friction: host-prepared (the resident step says why not), each
/// problem's cone rows solved by the ADMM kernel (`tests/gpu_solvers.rs`,
/// `wide_cones_on_the_device_as_on_the_cpu`). `condim` 6, three worlds: a
/// sphere spinning at 5 and at 2 rad/s, and one rolling at 0.3 m/s; over
/// 0.3 s each follows the CPU backend's run within f32's reach, the
/// spinners slow at the torsional rate (the second stopped by 0.1 s) and
/// stop, and no world falls back to the CPU.
#[test]
fn the_gpu_backends_take_wide_cones_with_admm() {
    use moreau::batch::{Backend, BatchSim};
    let (mu_t, r) = (0.01, 0.1);
    let (sim, rest) = sphere_on_plane(r, 6, &format!("0.8 {mu_t} 0.002"));
    let model = sim.model().clone();
    let mut starts = vec![rest.clone(); 3];
    starts[0].v[5] = 5.0;
    starts[1].v[5] = 2.0;
    (starts[2].v[0], starts[2].v[4]) = (0.3, 0.3 / r);
    let alpha = mu_t * G / (0.4 * r * r);
    let run = |backend: Backend| {
        let mut options = common::batch_options(backend, 1e-3);
        options.params.solver_settings.tolerance = 1e-6;
        let mut batch = if backend == Backend::CpuSingle {
            BatchSim::new(model.clone(), &rest, 3, &options).unwrap()
        } else {
            common::gpu_batch(model.clone(), &rest, 3, &options)?
        };
        if backend == Backend::Gpu {
            let notice = batch.notice().unwrap_or_default().to_string();
            assert!(notice.contains("condim 4 or 6"), "{notice}");
        }
        for (w, s) in starts.iter().enumerate() {
            batch.set_state(w, s.clone()).unwrap();
        }
        let mut spin_at = [0.0; 2];
        for k in 1..=300 {
            let report = batch.step(&vec![0.0; 3 * model.nv]).unwrap();
            assert!(report.failed.is_empty(), "{backend:?} step {k}");
            assert!(
                report.fallbacks.is_empty(),
                "{backend:?} step {k}: {:?}",
                report.fallbacks
            );
            if k == 100 {
                spin_at = [0, 1].map(|w| batch.state(w).unwrap().v[5]);
            }
        }
        let end: Vec<State> = (0..3).map(|w| batch.state(w).unwrap().clone()).collect();
        Some((spin_at, end))
    };
    let (cpu_spin, cpu) = run(Backend::CpuSingle).unwrap();
    for backend in [Backend::Gpu, Backend::GpuSolve] {
        let Some((spin, end)) = run(backend) else {
            return;
        };
        for (w, omega0) in [5.0, 2.0].into_iter().enumerate() {
            let analytic = (omega0 - alpha * 0.1).max(0.0);
            assert!(
                (spin[w] - analytic).abs() < 1e-3 * omega0,
                "{backend:?} world {w}: ω(0.1 s) = {}, analytic {analytic}, CPU {}",
                spin[w],
                cpu_spin[w]
            );
            assert!(
                end[w].v.amax() < 1e-3,
                "{backend:?} world {w}: {}",
                end[w].v
            );
        }
        for w in 0..3 {
            let dq = (&end[w].q - &cpu[w].q).amax();
            let dv = (&end[w].v - &cpu[w].v).amax();
            println!("{backend:?} world {w}: |q − q_cpu| {dq:.1e}, |v − v_cpu| {dv:.1e}");
            assert!(
                dq < 1e-4 && dv < 1e-3,
                "{backend:?} world {w}: {dq:.1e}, {dv:.1e}"
            );
        }
    }
}

#[derive(serde::Deserialize)]
struct MjSample {
    t: f64,
    qpos: Vec<f64>,
    qvel: Vec<f64>,
}

#[derive(serde::Deserialize)]
struct MjTorsional {
    samples: Vec<MjSample>,
}

/// tests/data/mujoco/torsional.xml against MuJoCo 4.0.1's run of it
/// (torsional.json, `mujoco_reference.py --only torsional`, MuJoCo's
/// elliptic cone with its default soft contacts): the spinner's spin, the
/// roller's path, the pinched cube's turn, each within the stated
/// distance, which is what MuJoCo's soft contacts add to the rigid law.
#[test]
fn the_three_scenes_follow_mujocos_elliptic_cone() {
    let r: MjTorsional =
        serde_json::from_str(include_str!("data/mujoco/torsional.json")).expect("torsional.json");
    let m = parse(include_str!("data/mujoco/torsional.xml"));
    let model = Arc::new(m.model);
    let params = SimParams {
        dt: m.timestep,
        ..Default::default()
    };
    let mut sim = Simulator::new(model.clone(), params).unwrap();
    let mut state = State::new(m.q0.clone(), DVector::zeros(model.nv));
    // (MuJoCo's qvel: the free joints' linear velocity in world axes, ours
    // in the body's: the same at the identity orientation.)
    state.v[5] = 5.0;
    state.v[6] = 0.5;
    state.v[10] = 1.0;
    let (spin, roll, turn) = (5, 7, 15);
    let (mut worst_spin, mut worst_roll, mut worst_speed) = (0.0f64, 0.0f64, 0.0f64);
    let mut turned_at_switch = (0.0, 0.0);
    let mut turn_rate = [(0.0, 0.0); 2];
    let mut step = 0;
    for s in &r.samples {
        let until = (s.t / m.timestep).round() as usize;
        while step < until {
            let ctrl = if step < 500 {
                [0.15, -10.0]
            } else {
                [0.25, -10.0]
            };
            let report = sim.step_controls(&mut state, &ctrl).unwrap();
            assert!(report.solver.is_none_or(|s| s.converged), "step {step}");
            step += 1;
        }
        worst_spin = worst_spin.max((state.v[spin] - s.qvel[spin]).abs());
        worst_roll = worst_roll.max((state.q[roll] - s.qpos[roll]).abs());
        // The roller's world velocity along x: its body-frame velocity turned.
        let quat = nalgebra::UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(
            state.q[13],
            state.q[10],
            state.q[11],
            state.q[12],
        ));
        let vx = (quat * nalgebra::Vector3::new(state.v[6], state.v[7], state.v[8])).x;
        if s.t <= 0.6 {
            // (Until shortly before the rigid ball stops, at 0.715 s.)
            worst_speed = worst_speed.max((vx - s.qvel[6]).abs());
        }
        if (s.t - 0.5).abs() < 1e-9 {
            turned_at_switch = (state.q[turn], s.qpos[turn]);
            turn_rate[0] = (state.v[13], s.qvel[13]);
        }
        if (s.t - 1.0).abs() < 1e-9 {
            turn_rate[1] = (state.v[13], s.qvel[13]);
        }
    }
    println!(
        "spin within {worst_spin:.3} rad/s, roller within {worst_roll:.4} m, and {worst_speed:.4} m/s until 0.6 s; the cube turned {:.2e} rad at 0.75 of the bound (MuJoCo {:.3}), then gained {:.2} rad/s above it (MuJoCo {:.2})",
        turned_at_switch.0,
        turned_at_switch.1,
        turn_rate[1].0 - turn_rate[0].0,
        turn_rate[1].1 - turn_rate[0].1
    );
    // MuJoCo's soft contact stops the spin about 40 ms later.
    assert!(worst_spin < 0.3, "spin {worst_spin}");
    // Its ball rolls on slowly (3 cm/s at 0.75 s, 4 mm/s at 1 s), 6 mm
    // further, after the rigid one has stopped.
    assert!(
        worst_roll < 0.01 && worst_speed < 0.005,
        "{worst_roll} m, {worst_speed} m/s"
    );
    // Below the bound the rigid pinch holds where MuJoCo's soft one creeps
    // at 2.1 rad/s (its friction rows' regularization: a slip velocity
    // for any force); above it both accelerate at (τ − 2 μ_t F) / I.
    assert!(turned_at_switch.0.abs() < 1e-3 && turned_at_switch.1 > 0.5);
    let (ours, theirs) = (
        turn_rate[1].0 - turn_rate[0].0,
        turn_rate[1].1 - turn_rate[0].1,
    );
    assert!((ours - theirs).abs() < 0.02 * theirs, "{ours} vs {theirs}");
}

/// The Newton finisher takes wide cones (each contact's rows made
/// contiguous): on torsional.xml's three scenes, 1 s, every solve
/// converges, finished by Newton steps where ADMM alone needs many more
/// iterations.
#[test]
fn newton_finishes_solves_with_cone_rows() {
    let run = |newton: bool| {
        let m = parse(include_str!("data/mujoco/torsional.xml"));
        let model = Arc::new(m.model);
        let mut params = SimParams {
            dt: m.timestep,
            ..Default::default()
        };
        params.solver_settings.newton = newton;
        let mut sim = Simulator::new(model.clone(), params).unwrap();
        let mut state = State::new(m.q0.clone(), DVector::zeros(model.nv));
        state.v[5] = 5.0;
        state.v[6] = 0.5;
        state.v[10] = 1.0;
        let (mut iterations, mut unconverged, mut newton_steps) = (0, 0, 0);
        for step in 0..1000 {
            let ctrl = if step < 500 {
                [0.15, -10.0]
            } else {
                [0.25, -10.0]
            };
            let s = sim
                .step_controls(&mut state, &ctrl)
                .unwrap()
                .solver
                .unwrap();
            iterations += s.iterations;
            unconverged += !s.converged as usize;
            newton_steps += s.newton_steps;
        }
        (iterations, unconverged, newton_steps)
    };
    let (with, without) = (run(true), run(false));
    println!(
        "ADMM iterations, unconverged, Newton steps: with Newton {with:?}, without {without:?}"
    );
    assert_eq!(with.1, 0);
    assert!(with.2 > 0, "Newton took no step");
    assert!(with.0 * 2 < without.0, "{with:?} against {without:?}");
}
