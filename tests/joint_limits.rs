//! Joint limits, armature and damping on a single hinge, against the
//! analytic answers of the time-stepping scheme.

use moreau::dynamics::{Data, crba};
use moreau::math::Vec3;
use moreau::model::{Actuator, JointSpec, Model};
use moreau::sim::{SimParams, Simulator, State};
use nalgebra::DVector;
use std::sync::Arc;

mod common;

/// A rod of mass 2 kg whose centre of mass is 0.5 m from a hinge about y,
/// driven by a motor.
fn hinge(spec: JointSpec, gravity: Vec3) -> Arc<Model> {
    let (mut b, j) = common::rod(2.0, gravity, spec);
    b.add_actuator(Actuator::motor("m", j, 1.0)).unwrap();
    Arc::new(b.build().unwrap())
}

fn joint_inertia(model: &Model) -> f64 {
    let mut data = Data::new(model);
    crba(model, &mut data, &[0.0])[(0, 0)]
}

/// A rod spinning into its stop with no gravity: the stop is inelastic,
/// so the limit's impulses add up to the rod's angular momentum `I ω₀`
/// (over the step that closes the gap and the one that takes the rest),
/// then the rod rests at the stop; its energy never increases.
#[test]
fn a_rod_spinning_into_its_stop_is_stopped_by_the_analytic_impulse() {
    for solver in [
        "ncp-admm",
        "ncp-pgs",
        "ccp-admm",
        "lcp-pgs",
        "raisim-ds",
        "staggered",
    ] {
        let model = hinge(
            JointSpec {
                range: Some((-1.0, 0.5)),
                armature: 0.3,
                ..Default::default()
            },
            Vec3::zeros(),
        );
        let inertia = joint_inertia(&model);
        let omega0 = 2.0;
        let params = SimParams {
            dt: 1e-3,
            solver: solver.parse().unwrap(),
            ..Default::default()
        };
        let mut sim = Simulator::new(model.clone(), params).unwrap();
        let mut state = State::new(
            DVector::from_element(1, 0.0),
            DVector::from_element(1, omega0),
        );
        let mut impulse = 0.0;
        let mut energy = 0.5 * inertia * omega0 * omega0;
        for step in 0..600 {
            let r = sim.step(&mut state, &[0.0]).unwrap();
            if r.nl > 0 {
                assert_eq!(sim.limits().len(), 1);
                impulse += sim.solution().lambda[0];
            }
            assert!(
                state.q[0] <= 0.5 + 1e-9,
                "{solver}: step {step}: q = {}",
                state.q[0]
            );
            let e = 0.5 * inertia * state.v[0] * state.v[0];
            assert!(
                e <= energy * (1.0 + 1e-12) + 1e-15,
                "{solver}: energy rose at step {step}"
            );
            energy = e;
        }
        let want = inertia * omega0;
        println!(
            "{solver}: limit impulse {impulse:.12} N·m·s, I ω₀ = {want:.12}; q = {:.3e} from the stop, v = {:.1e}",
            0.5 - state.q[0],
            state.v[0]
        );
        assert!(
            (impulse - want).abs() < 1e-6 * want,
            "{solver}: {impulse} vs {want}"
        );
        assert!((state.q[0] - 0.5).abs() < 1e-6 && state.v[0].abs() < 1e-6);
    }
}

/// Gravity pushing the rod into its lower stop, from rest at the stop:
/// it stays there (restitution 0), the stop carrying the gravity torque.
#[test]
fn a_rod_resting_on_its_stop_stays_there() {
    // The centre of mass on +x, gravity along +z: the torque about y is
    // −m g l < 0, into the lower stop.
    let model = hinge(
        JointSpec {
            range: Some((0.0, 1.0)),
            ..Default::default()
        },
        Vec3::new(0.0, 0.0, 9.81),
    );
    let mut sim = Simulator::new(model.clone(), SimParams::default()).unwrap();
    let mut state = State::new(DVector::from_element(1, 0.0), DVector::zeros(1));
    for _ in 0..2000 {
        let r = sim.step(&mut state, &[0.0]).unwrap();
        assert_eq!(r.nl, 1);
        // The stop carries the gravity torque m g l over the step, to the
        // solver's tolerance (1e-8 rad/s on the joint's velocity, i.e.
        // about I·1e-8 on the impulse).
        let lambda = sim.solution().lambda[0];
        assert!((lambda - 2.0 * 9.81 * 0.5 * 1e-3).abs() < 2e-8, "{lambda}");
    }
    println!(
        "after 2 s on the stop: q = {:.2e}, v = {:.2e}",
        state.q[0], state.v[0]
    );
    assert!(state.q[0].abs() < 1e-7 && state.v[0].abs() < 1e-7);
}

/// A damped joint without gravity decays at the implicit scheme's rate:
/// `(I + dt D) v⁺ = I v`, so `v_n = v₀ (I / (I + dt D))ⁿ` exactly, with `I`
/// the joint inertia armature included; the continuous decay `e^{−D t / I}`
/// is approached to first order in `dt`.
#[test]
fn a_damped_joint_decays_at_the_implicit_rate() {
    let (damping, armature) = (3.0, 0.2);
    let model = hinge(
        JointSpec {
            damping,
            armature,
            ..Default::default()
        },
        Vec3::zeros(),
    );
    let inertia = joint_inertia(&model);
    // 2 kg at 0.5 m plus the rod's own 0.01 and the armature.
    assert!((inertia - (2.0 * 0.25 + 0.01 + armature)).abs() < 1e-12);
    for dt in [1e-2, 1e-3] {
        let params = SimParams::with_dt(dt);
        let mut sim = Simulator::new(model.clone(), params).unwrap();
        let v0 = 5.0;
        let mut state = State::new(DVector::zeros(1), DVector::from_element(1, v0));
        let n = (1.0 / dt).round() as i32;
        for _ in 0..n {
            sim.step(&mut state, &[0.0]).unwrap();
        }
        let discrete = v0 * (inertia / (inertia + dt * damping)).powi(n);
        let continuous = v0 * (-damping * 1.0 / inertia).exp();
        println!(
            "dt {dt}: v(1 s) = {:.12}, implicit rate {discrete:.12}, continuous {continuous:.12}",
            state.v[0]
        );
        assert!((state.v[0] - discrete).abs() < 1e-12 * v0);
        assert!((state.v[0] - continuous).abs() < 20.0 * dt * continuous);
    }
    // Stiff damping is unconditionally stable: D dt / I = 1000.
    let model = hinge(
        JointSpec {
            damping: 7.1e5,
            ..Default::default()
        },
        Vec3::zeros(),
    );
    let mut sim = Simulator::new(model, SimParams::default()).unwrap();
    let mut state = State::new(DVector::zeros(1), DVector::from_element(1, 1.0));
    for _ in 0..10 {
        sim.step(&mut state, &[0.0]).unwrap();
        assert!(state.v[0] >= 0.0 && state.v[0] < 1e-2);
    }
}

/// Controls drive the actuator: a position servo (`kp`, `kv` as MuJoCo's
/// `<position>`) brings the joint to its control, a motor's control is
/// clamped to its range and its force to the effort limit.
#[test]
fn actuators_turn_controls_into_joint_forces() {
    let (mut b, j) = common::rod(
        2.0,
        Vec3::zeros(),
        JointSpec {
            effort_limit: 4.0,
            ..Default::default()
        },
    );
    let (kp, kv) = (20.0, 4.0);
    b.add_actuator(Actuator {
        gain: kp,
        bias: [0.0, -kp, -kv],
        ctrl_range: Some((-0.5, 0.5)),
        ..Actuator::motor("servo", j, 1.0)
    })
    .unwrap();
    let model = Arc::new(b.build().unwrap());
    let mut tau = vec![0.0];
    // Far from its target, the servo's force is cut at the effort limit.
    moreau::sim::actuator_forces(&model, &[0.0], &[0.0], &[0.3], &[], 0.0, &mut tau);
    assert_eq!(tau[0], 4.0);
    // The control is clamped to the range: 2 → 0.5.
    moreau::sim::actuator_forces(&model, &[0.45], &[0.1], &[2.0], &[], 0.0, &mut tau);
    assert!((tau[0] - (kp * (0.5 - 0.45) - kv * 0.1)).abs() < 1e-12);
    let mut sim = Simulator::new(model.clone(), SimParams::default()).unwrap();
    let mut state = State::new(DVector::zeros(1), DVector::zeros(1));
    for _ in 0..5000 {
        sim.step_controls(&mut state, &[0.3]).unwrap();
    }
    assert!((state.q[0] - 0.3).abs() < 1e-6, "{}", state.q[0]);
    // Bad controls are refused, the state left as it was.
    let before = state.clone();
    assert!(sim.step_controls(&mut state, &[f64::NAN]).is_err());
    assert!(sim.step_controls(&mut state, &[0.1, 0.2]).is_err());
    assert_eq!(state, before);
}

/// A joint starting 0.5 rad past its stop (no gravity) is pushed back at
/// the recovery speed `β e / dt` (100 rad/s at 1 ms, β = 0.2: back in a
/// few steps, 2 J of kinetic energy out of nothing) unless
/// `max_recovery_speed` bounds it: then at 1 rad/s exactly while the
/// error lasts, never faster, with at most `½ I (1 rad/s)²` of kinetic
/// energy, and back within the range; the step's derivative in `q` is 0
/// beyond the bound's depth, `β/dt` short of it (against differences). A
/// bound that is not positive and finite is refused.
#[test]
fn a_start_past_a_stop_is_recovered_at_the_bounded_speed() {
    let model = hinge(
        JointSpec {
            range: Some((0.0, 1.0)),
            ..Default::default()
        },
        Vec3::zeros(),
    );
    let inertia = joint_inertia(&model);
    let run = |bound: Option<f64>, steps: usize| {
        let params = SimParams {
            max_recovery_speed: bound,
            ..SimParams::default()
        };
        let mut sim = Simulator::new(model.clone(), params).unwrap();
        let mut state = State::new(DVector::from_element(1, -0.5), DVector::zeros(1));
        let mut fastest: f64 = 0.0;
        for _ in 0..steps {
            sim.step(&mut state, &[0.0]).unwrap();
            fastest = fastest.max(state.v[0].abs());
        }
        (state, fastest)
    };
    let (_, unbounded) = run(None, 20);
    assert!((unbounded - 0.2 * 0.5 / 1e-3).abs() < 1e-6, "{unbounded}");
    // 1 rad/s while more than dt/β = 5 mrad is left, then β e / dt.
    let (state, fastest) = run(Some(1.0), 1000);
    assert!((fastest - 1.0).abs() < 1e-9, "{fastest}");
    assert!(0.5 * inertia * fastest * fastest <= 0.5 * inertia + 1e-12);
    assert!(state.q[0] > -1e-3 && state.q[0] <= 1.0, "{}", state.q[0]);
    let (early, _) = run(Some(1.0), 100);
    assert!((early.q[0] - (-0.5 + 0.1)).abs() < 1e-9, "{}", early.q[0]);

    // The step's derivatives with the bound, against differences: past
    // the bound's depth (5 mrad) recovery does not depend on q, short of
    // it at β/dt.
    let params = SimParams {
        max_recovery_speed: Some(1.0),
        solver_settings: moreau::contact::SolverSettings {
            tolerance: 1e-12,
            ..Default::default()
        },
        ..SimParams::default()
    };
    for (start, slope) in [(-0.5, 0.0), (-1e-3, 0.2 / 1e-3)] {
        let mut sim = Simulator::new(model.clone(), params).unwrap();
        let mut state = State::new(DVector::from_element(1, start), DVector::zeros(1));
        let at = state.clone();
        let mut jac = moreau::sim::StepJacobians::default();
        sim.step_with_jacobians(&mut state, &[0.0], &mut jac)
            .unwrap();
        let fd =
            moreau::sim::step_jacobians_by_differences(&model, params, &at, &[0.0], 1e-7).unwrap();
        // v⁺ = −recovery(q − stop): ∂v⁺/∂q = −slope.
        assert!((jac.dv_dq[(0, 0)] + slope).abs() < 1e-6, "{}", jac.dv_dq);
        assert!(
            (&jac.dv_dq - &fd.dv_dq).amax() < 1e-5 * slope.max(1.0),
            "{} {}",
            jac.dv_dq,
            fd.dv_dq
        );
    }
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let params = SimParams {
            max_recovery_speed: Some(bad),
            ..SimParams::default()
        };
        let e = Simulator::new(model.clone(), params)
            .err()
            .expect("refused");
        assert!(e.to_string().contains("max_recovery_speed"), "{e}");
    }
}
