//! A torque-free rigid body (no gravity, no contact) stepped by the full
//! simulator: a spherical inertia spins at a constant rate; an asymmetric one
//! keeps its kinetic energy and world angular momentum bounded, with errors
//! shrinking at least linearly with dt (semi-implicit Euler is first order).

use moreau::math::{Inertia, Mat3, SE3, Vec3, ang};
use moreau::model::{JointType, ModelBuilder, WORLD};
use moreau::sim::{SimParams, Simulator, State};
use nalgebra::DVector;
use std::sync::Arc;

fn body(inertia: Inertia) -> Arc<moreau::Model> {
    let mut b = ModelBuilder::new("torque-free");
    b.set_gravity(Vec3::zeros()).unwrap();
    b.add_body("body", WORLD, JointType::Free, SE3::identity(), inertia)
        .unwrap();
    Arc::new(b.build().unwrap())
}

fn initial_state(model: &moreau::Model, omega: Vec3) -> State {
    let q = model.neutral_configuration();
    let mut v = DVector::zeros(6);
    v.fixed_rows_mut::<3>(3).copy_from(&omega);
    State::new(q, v)
}

/// Runs 10 s; returns the max relative errors of kinetic energy and world angular momentum.
fn drift(model: &Arc<moreau::Model>, omega: Vec3, dt: f64) -> (f64, f64) {
    let mut sim = Simulator::new(model.clone(), SimParams::with_dt(dt)).unwrap();
    let mut state = initial_state(model, omega);
    let tau = DVector::zeros(6);
    let momentum = |sim: &mut Simulator, s: &State| {
        sim.energy(s).unwrap();
        let d = sim.data();
        ang(&d.body_inertia_world[1].apply(&d.body_velocity[1]))
    };
    let (e0, _) = sim.energy(&state).unwrap();
    let l0 = momentum(&mut sim, &state);
    let (mut de, mut dl): (f64, f64) = (0.0, 0.0);
    let steps = (10.0 / dt).round() as usize;
    for _ in 0..steps {
        sim.step(&mut state, tau.as_slice()).unwrap();
        let (e, _) = sim.energy(&state).unwrap();
        de = de.max((e - e0).abs() / e0);
        dl = dl.max((momentum(&mut sim, &state) - l0).norm() / l0.norm());
    }
    (de, dl)
}

#[test]
fn spherical_body_spins_at_a_constant_rate() {
    let model = body(Inertia::sphere(2.0, 0.3));
    let omega = Vec3::new(1.0, -2.0, 3.0);
    let mut sim = Simulator::new(model.clone(), SimParams::default()).unwrap();
    let mut state = initial_state(&model, omega);
    let tau = DVector::zeros(6);
    let mut worst: f64 = 0.0;
    for _ in 0..10_000 {
        sim.step(&mut state, tau.as_slice()).unwrap();
        worst = worst.max((state.v.fixed_rows::<3>(3) - omega).amax());
        worst = worst.max(state.v.fixed_rows::<3>(0).amax());
    }
    // The world-frame spin axis is fixed too: R ω = ω for a rotation about ω.
    let r = moreau::math::quat_from_slice(&state.q.as_slice()[3..7]);
    let axis_err = (r * omega - omega).amax();
    println!("spherical body, 10 s: max |ω − ω0| = {worst:.2e} rad/s, |R ω − ω| = {axis_err:.2e}");
    assert!(worst < 1e-12);
    assert!(axis_err < 1e-9);
}

#[test]
fn asymmetric_body_conserves_energy_and_momentum_to_first_order() {
    let model = body(Inertia::new(
        1.0,
        Vec3::zeros(),
        Mat3::from_diagonal(&Vec3::new(0.1, 0.2, 0.25)),
    ));
    let omega = Vec3::new(1.0, 0.3, 2.0);
    let dts = [4e-3, 2e-3, 1e-3];
    let errs: Vec<(f64, f64)> = dts.iter().map(|&dt| drift(&model, omega, dt)).collect();
    for (dt, (de, dl)) in dts.iter().zip(&errs) {
        println!(
            "dt = {dt:.0e}: max relative error over 10 s, energy {de:.3e}, angular momentum {dl:.3e}"
        );
    }
    for w in errs.windows(2) {
        let order_e = (w[0].0 / w[1].0).log2();
        let order_l = (w[0].1 / w[1].1).log2();
        println!("observed order: energy {order_e:.2}, angular momentum {order_l:.2}");
        assert!(
            order_e > 0.9 && order_l > 0.9,
            "errors must shrink at least linearly with dt"
        );
    }
    let (de, dl) = errs[2];
    assert!(de < 0.05 && dl < 0.05, "bounded over 10 s at dt = 1 ms");
}
