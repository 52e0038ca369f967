//! Contact physics on the named scenes: a resting box stays put, a sliding
//! cube follows Coulomb's law with maximum dissipation, the quadruped lands.

use moreau::scenes::{self, quadruped_standing_height};
use moreau::sim::{SimParams, Simulator};
use nalgebra::DVector;

fn sim_for(scene: &scenes::Scene) -> Simulator {
    let params = SimParams {
        dt: scene.dt,
        ..Default::default()
    };
    Simulator::new(scene.model.clone(), params).unwrap()
}

#[test]
fn resting_box_stays_at_rest_with_four_converged_contacts() {
    let scene = scenes::scene("cube-resting").unwrap();
    let mut sim = sim_for(&scene);
    let mut state = scene.state.clone();
    let q0 = state.q.clone();
    let tau = DVector::zeros(scene.model.nv);
    let (mut worst_eps, mut worst_drift, mut max_iters): (f64, f64, usize) = (0.0, 0.0, 0);
    for step in 0..10_000 {
        let report = sim.step(&mut state, tau.as_slice()).unwrap();
        assert_eq!(report.nc, 4, "step {step}: expected 4 contacts");
        let stats = report.solver.unwrap();
        worst_eps = worst_eps.max(stats.residuals.eps_abs);
        max_iters = max_iters.max(stats.iterations);
        assert!(
            stats.residuals.eps_abs <= 1e-6,
            "step {step}: eps_abs {:e}",
            stats.residuals.eps_abs
        );
        let drift = (state.q.rows(0, 3) - q0.rows(0, 3)).norm();
        worst_drift = worst_drift.max(drift);
    }
    let rot = (state.q.rows(3, 4) - q0.rows(3, 4)).norm();
    println!(
        "10 s at rest: max position drift {worst_drift:.2e} m, orientation change {rot:.2e}, max eps_abs {worst_eps:.2e}, max iterations {max_iters}"
    );
    assert!(worst_drift < 1e-4);
    assert!(rot < 1e-4);
}

#[test]
fn sliding_cube_goes_straight_stops_where_coulomb_says_and_follows_the_energy_curve() {
    let (mu, v0, g) = (0.3, 1.0, 9.81);
    let scene = scenes::scene("cube-sliding").unwrap();
    let mut sim = sim_for(&scene);
    let mut state = scene.state.clone();
    let tau = DVector::zeros(scene.model.nv);
    let (y0, dt) = (state.q[1], scene.dt);
    let mut worst_lateral: f64 = 0.0;
    let mut worst_energy: f64 = 0.0;
    let mut stop_time = None;
    for _ in 0..1000 {
        let report = sim.step(&mut state, tau.as_slice()).unwrap();
        assert!(report.solver.unwrap().residuals.eps_abs <= 1e-6);
        worst_lateral = worst_lateral.max(state.q[0].abs());
        let (ke, _) = sim.energy(&state).unwrap();
        let t = state.t;
        let analytic = 0.5 * (v0 - mu * g * t).max(0.0).powi(2);
        worst_energy = worst_energy.max((ke - analytic).abs());
        if stop_time.is_none() && state.v.rows(0, 3).norm() < 1e-6 {
            stop_time = Some(t);
        }
    }
    let distance = state.q[1] - y0;
    let expected = v0 * v0 / (2.0 * mu * g);
    let t_stop = stop_time.expect("the cube must stop");
    println!(
        "slide: distance {distance:.5} m (Coulomb: {expected:.5}, error {:.3} %), stop at {t_stop:.3} s (Coulomb: {:.3}), lateral drift {worst_lateral:.2e} m, max |KE − ½m(v0 − μgt)²| = {worst_energy:.2e} J ({:.3} % of KE0)",
        100.0 * (distance - expected).abs() / expected,
        v0 / (mu * g),
        100.0 * worst_energy / 0.5
    );
    assert!(worst_lateral < 1e-6);
    assert!((distance - expected).abs() < 0.01 * expected);
    assert!((t_stop - v0 / (mu * g)).abs() < 0.01 * v0 / (mu * g) + dt);
    assert!(
        worst_energy < 0.01 * 0.5,
        "kinetic energy departs from the analytic curve by {worst_energy}"
    );
    // At rest afterwards: static friction holds it (to the solver tolerance).
    println!("speed after stopping: {:.2e} m/s", state.v.norm());
    assert!(state.v.norm() < 1e-6);
}

#[test]
fn quadruped_dropped_on_the_ground_comes_to_rest_on_its_four_feet() {
    let scene = scenes::scene("quadruped").unwrap();
    let model = scene.model.clone();
    let mut sim = sim_for(&scene);
    let mut state = scene.state.clone();
    let ctrl = scene.controller.clone().unwrap();
    let mut tau = DVector::zeros(model.nv);
    let (ke0, pe0) = sim.energy(&state).unwrap();
    let mut max_energy = ke0 + pe0;
    let mut last = None;
    for _ in 0..3000 {
        ctrl.torques(&state, tau.as_mut_slice());
        let r = sim.step(&mut state, tau.as_slice()).unwrap();
        let (ke, pe) = sim.energy(&state).unwrap();
        max_energy = max_energy.max(ke + pe);
        last = Some(r);
    }
    let r = last.unwrap();
    let feet: Vec<&str> = sim
        .contacts()
        .iter()
        .map(|c| model.geometries[c.geom_a].name.as_str())
        .collect();
    let height = state.q[2];
    println!(
        "quadruped after 3 s: {} contacts {:?}, base height {height:.4} m (standing {:.4}), |v| {:.2e}, max energy {max_energy:.3} J (initial {:.3} J), eps_abs {:.1e}",
        r.nc,
        feet,
        quadruped_standing_height(),
        state.v.norm(),
        ke0 + pe0,
        r.solver.map(|s| s.residuals.eps_abs).unwrap_or(0.0)
    );
    assert_eq!(r.nc, 4);
    assert!(
        feet.iter().all(|n| n.ends_with("_foot")),
        "only the feet touch the ground"
    );
    assert!(
        height > 0.5 * quadruped_standing_height(),
        "the base must stay up"
    );
    assert!(state.v.norm() < 1e-2, "it must come to rest");
    assert!(
        max_energy <= ke0 + pe0 + 1e-3,
        "energy must not grow (no explosion)"
    );
    // Upright: base z axis close to world z.
    let quat = moreau::math::quat_from_slice(&state.q.as_slice()[3..7]);
    assert!((quat * moreau::math::Vec3::z()).z > 0.99);
}

/// A cube started 5 cm into the ground comes out at the recovery speed
/// `β φ / dt` (10 m/s at 1 ms, β = 0.2: thrown up) with rigid contacts
/// (`penetration_compliance` 0), unless `max_recovery_speed` bounds it:
/// then at 0.5 m/s, never faster.
#[test]
fn a_cube_started_in_the_ground_comes_out_at_the_bounded_speed() {
    let scene = scenes::scene("cube-resting").unwrap();
    let rise = |bound: Option<f64>| {
        let params = SimParams {
            dt: 1e-3,
            max_recovery_speed: bound,
            penetration_compliance: 0.0,
            ..SimParams::default()
        };
        let mut sim = Simulator::new(scene.model.clone(), params).unwrap();
        let mut state = scene.state.clone();
        state.q[2] -= 0.05;
        let mut fastest: f64 = 0.0;
        for _ in 0..20 {
            sim.step(&mut state, &[0.0; 6]).unwrap();
            fastest = fastest.max(state.v[2]);
        }
        fastest
    };
    let unbounded = rise(None);
    assert!((unbounded - 0.2 * 0.05 / 1e-3).abs() < 1e-3, "{unbounded}");
    let bounded = rise(Some(0.5));
    assert!((bounded - 0.5).abs() < 1e-6, "{bounded}");
}
