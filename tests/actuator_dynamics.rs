//! Actuators with activation dynamics (MuJoCo's `dyntype`) against their
//! analytic responses: a first-order filter's step response (explicit
//! Euler and exact), an integrator held by its range, `actearly`'s removed
//! delay; raw torques leave the activations alone; bad activations and
//! bad dynamics are refused. (MuJoCo's own trajectories:
//! tests/mjcf_mujoco.rs, `activation_dynamics_match_mujoco`.)

mod common;

use moreau::math::Vec3;
use moreau::model::{Actuator, ActuatorDynamics, JointSpec, Model};
use moreau::sim::{SimParams, Simulator, State};
use moreau::{ModelError, SimError};
use nalgebra::DVector;
use std::sync::Arc;

/// Rotational inertia of `common::rod(MASS, …)` about its hinge.
const MASS: f64 = 2.0;
const INERTIA: f64 = 0.01 + MASS * 0.25;

/// A weightless-world rod driven by one actuator of `gain` with `dynamics`.
fn driven_rod(gain: f64, dynamics: ActuatorDynamics, tweak: impl Fn(&mut Actuator)) -> Arc<Model> {
    let (mut b, j) = common::rod(MASS, Vec3::zeros(), JointSpec::default());
    let mut a = Actuator {
        gain,
        dynamics,
        ..Actuator::motor("drive", j, 1.0)
    };
    tweak(&mut a);
    b.add_actuator(a).unwrap();
    Arc::new(b.build().unwrap())
}

fn at_rest() -> State {
    State::new(DVector::zeros(1), DVector::zeros(1))
}

/// A unit step through a filter of time constant τ: the activation rises
/// as `1 − (1 − dt/τ)^k` (MuJoCo's explicit Euler), within `dt/τ` of the
/// continuous `1 − e^(−t/τ)`, and the force of step `k` is `gain·act_k`
/// (the activation at the start of the step: one step of delay).
#[test]
fn filter_step_response_is_first_order() {
    let (gain, tau, dt) = (3.0, 0.05, 1e-3);
    for exact in [false, true] {
        let dynamics = if exact {
            ActuatorDynamics::FilterExact(tau)
        } else {
            ActuatorDynamics::Filter(tau)
        };
        let model = driven_rod(gain, dynamics, |_| {});
        assert_eq!(model.na(), 1);
        let params = SimParams::with_dt(dt);
        let mut sim = Simulator::new(model, params).unwrap();
        let mut state = at_rest();
        let mut omega = 0.0;
        let mut act = 0.0;
        for k in 1..=200 {
            sim.step_controls(&mut state, &[1.0]).unwrap();
            omega += dt * gain * act / INERTIA;
            let t = k as f64 * dt;
            act = if exact {
                1.0 - (-t / tau).exp()
            } else {
                1.0 - (1.0 - dt / tau).powi(k)
            };
            assert!(
                (state.act[0] - act).abs() < 1e-13,
                "step {k}: act {} against {act}",
                state.act[0]
            );
            assert!((state.v[0] - omega).abs() < 1e-12, "step {k}");
            let continuous = 1.0 - (-t / tau).exp();
            assert!((state.act[0] - continuous).abs() <= dt / tau);
        }
        // Four time constants: within 2 % of the command.
        assert!((state.act[0] - 1.0).abs() < 0.02, "{}", state.act[0]);
    }
}

/// An integrator's activation ramps at the control's rate and stops at
/// its range; the control is clamped to its own range first.
#[test]
fn integrator_ramps_to_its_range() {
    let dt = 1e-3;
    let model = driven_rod(1.0, ActuatorDynamics::Integrator, |a| {
        a.act_range = Some((-0.2, 0.15));
        a.ctrl_range = Some((-1.0, 1.0));
    });
    let params = SimParams::with_dt(dt);
    let mut sim = Simulator::new(model, params).unwrap();
    let mut state = at_rest();
    for k in 1..=300 {
        // 5 is clamped to 1: the rate is 1/s.
        sim.step_controls(&mut state, &[5.0]).unwrap();
        let want = (k as f64 * dt).min(0.15);
        assert!((state.act[0] - want).abs() < 1e-12, "step {k}");
    }
    for _ in 0..500 {
        sim.step_controls(&mut state, &[-1.0]).unwrap();
    }
    assert_eq!(state.act[0], -0.2);
}

/// `act_early`: the force of a step uses the activation at its end, so a
/// control acts in the step it is given; without it, one step later.
#[test]
fn act_early_removes_the_step_of_delay() {
    let (gain, tau, dt) = (2.0, 0.02, 1e-3);
    let params = SimParams::with_dt(dt);
    for early in [false, true] {
        let model = driven_rod(gain, ActuatorDynamics::Filter(tau), |a| a.act_early = early);
        let mut sim = Simulator::new(model, params).unwrap();
        let mut state = at_rest();
        sim.step_controls(&mut state, &[1.0]).unwrap();
        let act = dt / tau;
        assert!((state.act[0] - act).abs() < 1e-15);
        let want = if early {
            dt * gain * act / INERTIA
        } else {
            0.0
        };
        assert!(
            (state.v[0] - want).abs() < 1e-15,
            "early {early}: {}",
            state.v[0]
        );
    }
}

/// Under raw torques the actuators are bypassed: their activations stay.
/// A state's activations of the wrong length or not finite are refused
/// naming `act`, the state untouched; so are dynamics without a positive
/// time constant and empty activation ranges.
#[test]
fn torques_keep_activations_and_bad_ones_are_refused() {
    let model = driven_rod(1.0, ActuatorDynamics::Filter(0.1), |_| {});
    let mut sim = Simulator::new(model.clone(), SimParams::default()).unwrap();
    let mut state = at_rest();
    state.act = DVector::from_element(1, 0.4);
    sim.step(&mut state, &[0.5]).unwrap();
    assert_eq!(state.act[0], 0.4);
    assert!(state.v[0] > 0.0);

    for (act, expected) in [
        (vec![0.1, 0.2], "DimensionMismatch"),
        (vec![f64::NAN], "NonFinite"),
    ] {
        let mut bad = state.clone();
        bad.act = DVector::from_vec(act);
        let before = bad.clone();
        let err = sim.step_controls(&mut bad, &[1.0]).unwrap_err();
        match (&err, expected) {
            (SimError::DimensionMismatch { what: "act", .. }, "DimensionMismatch")
            | (SimError::NonFinite { what: "act", .. }, "NonFinite") => {}
            _ => panic!("{err:?}"),
        }
        // (Debug: NaN ≠ NaN.)
        assert_eq!(format!("{bad:?}"), format!("{before:?}"));
    }

    for (dynamics, range, needle) in [
        (ActuatorDynamics::Filter(0.0), None, "time constant"),
        (
            ActuatorDynamics::FilterExact(f64::NAN),
            None,
            "time constant",
        ),
        (ActuatorDynamics::Integrator, Some((0.5, 0.5)), "act range"),
    ] {
        let (mut b, j) = common::rod(MASS, Vec3::zeros(), JointSpec::default());
        let err = b
            .add_actuator(Actuator {
                dynamics,
                act_range: range,
                ..Actuator::motor("drive", j, 1.0)
            })
            .unwrap_err();
        let ModelError::Invalid { what, reason } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(what, "actuator `drive`");
        assert!(reason.contains(needle), "{reason}");
    }
}
