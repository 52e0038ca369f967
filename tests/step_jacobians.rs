//! The Jacobians of one step with respect to the velocity and the torques
//! (`Simulator::step_with_jacobians`) against central finite differences of
//! the step, away from mode switches: a cube in free fall, resting
//! (sticking), sliding, the standing quadruped, Gymnasium's ant on its legs
//! (contacts and joint limits). Solver tolerance 1e-12. (Steps of 1e-4 m/s
//! where contacts slide: the NCP residual sees a sliding contact's friction
//! direction only at second order, so a solve to 1e-12 leaves ~1e-10 of
//! noise in its velocities, too much for steps of 1e-6.)

mod common;

use moreau::scenes::Scene;
use moreau::sim::{SimParams, Simulator, StepJacobians, step_jacobians_by_differences};
use moreau::{Model, State};
use nalgebra::DVector;
use std::sync::Arc;

fn params(dt: f64) -> SimParams {
    let mut p = SimParams {
        dt,
        ..Default::default()
    };
    p.solver_settings.tolerance = 1e-12;
    p.solver_settings.max_iterations = 5000;
    p
}

/// Steps `scene` `steps` times under its controller (or zero torques), then
/// once more with the Jacobians: the simulator, the state that last step
/// started from, its torques, the Jacobians and the step's report.
fn settle_and_differentiate(
    scene: &Scene,
    steps: usize,
) -> (
    Simulator,
    State,
    DVector<f64>,
    StepJacobians,
    moreau::sim::StepReport,
) {
    let mut sim = Simulator::new(scene.model.clone(), params(scene.dt)).unwrap();
    let mut state = scene.state.clone();
    let mut tau = DVector::zeros(scene.model.nv);
    for _ in 0..steps {
        scene.control(&state, tau.as_mut_slice());
        sim.step(&mut state, tau.as_slice()).unwrap();
    }
    scene.control(&state, tau.as_mut_slice());
    let at = state.clone();
    let mut jac = StepJacobians::default();
    let report = sim
        .step_with_jacobians(&mut state, tau.as_slice(), &mut jac)
        .unwrap();
    (sim, at, tau, jac, report)
}

/// Compares the step Jacobians at the state [`settle_and_differentiate`]
/// reaches with differences; the worst relative difference.
fn check(scene: &Scene, steps: usize, eps: f64) -> f64 {
    let model = scene.model.clone();
    let (_, at, tau, jac, report) = settle_and_differentiate(scene, steps);
    let fd =
        step_jacobians_by_differences(&model, params(scene.dt), &at, tau.as_slice(), eps).unwrap();
    let mut worst = 0.0f64;
    let mut parts = Vec::new();
    // Each relative to its largest entry, but at least its scale in free
    // flight (a resting body's are near zero): 1 for ∂v⁺/∂v, dt for ∂q⁺/∂v,
    // dt/m and dt²/m for the torques (m the total mass).
    let (dt, mass) = (scene.dt, model.total_mass());
    for (name, ours, theirs, floor) in [
        ("dv/dv", &jac.dv_dv, &fd.dv_dv, 1.0),
        ("dv/dtau", &jac.dv_dtau, &fd.dv_dtau, dt / mass),
        ("dq/dv", &jac.dq_dv, &fd.dq_dv, dt),
        ("dq/dtau", &jac.dq_dtau, &fd.dq_dtau, dt * dt / mass),
    ] {
        let e = (ours - theirs).amax() / theirs.amax().max(floor);
        parts.push(format!("{name} {e:.1e}"));
        worst = worst.max(e);
    }
    println!(
        "{}: nv {}, {} contacts, {} limits: {}",
        scene.name,
        model.nv,
        report.nc,
        report.nl,
        parts.join(", ")
    );
    worst
}

#[test]
fn step_jacobians_match_finite_differences() {
    let mut falling = moreau::scenes::scene("cube-resting").unwrap();
    falling.name = "cube-falling".into();
    falling.state.q[2] += 0.5;
    let mut cases: Vec<(Scene, usize, f64)> = vec![
        (falling, 0, 1e-6),
        (moreau::scenes::scene("cube-resting").unwrap(), 50, 1e-6),
        (moreau::scenes::scene("cube-sliding").unwrap(), 50, 1e-4),
        (moreau::scenes::scene("quadruped").unwrap(), 300, 1e-6),
    ];
    if let Some(files) = common::robot_files() {
        let loaded = moreau::load::load_model_file(
            files.gymnasium_assets.join("ant.xml"),
            &Default::default(),
        )
        .unwrap();
        cases.push((
            moreau::scenes::from_loaded(&loaded, true).unwrap(),
            1500,
            1e-6,
        ));
    }
    for (scene, steps, eps) in &cases {
        let worst = check(scene, *steps, *eps);
        assert!(worst < 1e-5, "{}: {worst:e}", scene.name);
    }
}

/// With respect to `q` (through `⊕`), on steps without contacts and limit
/// rows: a tumbling cube in the air (free joint), the cart-pole (prismatic
/// and revolute), the 7-dof arm, a random tree with every joint type, and
/// Gymnasium's half-cheetah in the air (joint springs); against
/// `sim::step_jacobians_by_differences`.
#[test]
fn step_jacobians_with_respect_to_q_match_finite_differences() {
    let mut falling = moreau::scenes::scene("cube-resting").unwrap();
    falling.state.q[2] += 0.5;
    falling.state.v = DVector::from_vec(vec![0.3, -0.2, 0.1, 2.0, -1.0, 0.5]);
    falling.name = "cube-tumbling".into();
    let tree = Arc::new(moreau::scenes::random_tree(10, 5).unwrap());
    let mut rng = common::Lcg(4);
    let tree_state = State::new(
        common::random_q(&tree, &mut rng),
        rng.vector(tree.nv, -1.0, 1.0),
    );
    let mut cases: Vec<(String, Arc<Model>, State, f64)> = vec![
        (
            falling.name.clone(),
            falling.model.clone(),
            falling.state.clone(),
            falling.dt,
        ),
        ("random-tree".into(), tree, tree_state, 1e-3),
    ];
    for name in ["cartpole", "arm"] {
        let s = moreau::scenes::scene(name).unwrap();
        cases.push((name.into(), s.model.clone(), s.state.clone(), s.dt));
    }
    // Gymnasium's half-cheetah in the air: its joints have springs.
    if let Some(files) = common::robot_files() {
        let loaded = moreau::load::load_model_file(
            files.gymnasium_assets.join("half_cheetah.xml"),
            &Default::default(),
        )
        .unwrap();
        let scene = moreau::scenes::from_loaded(&loaded, true).unwrap();
        assert!(scene.model.dof_stiffness.iter().any(|&k| k > 0.0));
        let mut state = scene.state.clone();
        state.q[1] += 1.0;
        cases.push((
            "half_cheetah (springs)".into(),
            scene.model.clone(),
            state,
            scene.dt,
        ));
    }
    for (name, model, state, dt) in cases {
        let tau = DVector::from_fn(model.nv, |i, _| 0.3 * (i as f64 + 1.0).sin());
        let mut sim = Simulator::new(model.clone(), params(dt)).unwrap();
        let mut jac = StepJacobians::default();
        let mut s = state.clone();
        let report = sim
            .step_with_jacobians(&mut s, tau.as_slice(), &mut jac)
            .unwrap();
        assert!(jac.wrt_q && report.nc + report.nl == 0, "{name}");
        let fd = step_jacobians_by_differences(&model, params(dt), &state, tau.as_slice(), 1e-6)
            .unwrap();
        let ev = (&jac.dv_dq - &fd.dv_dq).amax() / fd.dv_dq.amax().max(1.0 / dt);
        let eq = (&jac.dq_dq - &fd.dq_dq).amax() / fd.dq_dq.amax().max(1.0);
        println!("{name}: nv {}, dv/dq {ev:.1e}, dq/dq {eq:.1e}", model.nv);
        assert!(ev < 1e-6 && eq < 1e-6, "{name}: {ev:e} {eq:e}");
    }
}

/// With respect to the friction coefficients: `∂v⁺/∂μ` against central
/// differences of the step in `SimParams::friction_scale` (which scales
/// every μ: the derivative is `Σ_i μ_i ∂v⁺/∂μ_i`), on the sliding cube and
/// on the quadruped with two feet sliding; a resting cube's is zero.
#[test]
fn step_jacobians_with_respect_to_friction_match_finite_differences() {
    for (name, steps, moving) in [
        ("cube-sliding", 50, true),
        ("quadruped", 300, true),
        ("cube-resting", 50, false),
    ] {
        let scene = moreau::scenes::scene(name).unwrap();
        let model = scene.model.clone();
        let (sim, at, tau, jac, _) = settle_and_differentiate(&scene, steps);
        let mu = DVector::from_iterator(sim.contacts().len(), sim.contacts().iter().map(|c| c.mu));
        let ours = &jac.dv_dmu * &mu;
        let h = 1e-4;
        let step = |scale: f64| {
            let mut p = params(scene.dt);
            p.friction_scale = scale;
            let mut s = Simulator::new(model.clone(), p).unwrap();
            let mut st = at.clone();
            s.step(&mut st, tau.as_slice()).unwrap();
            st.v
        };
        let fd = (step(1.0 + h) - step(1.0 - h)) / (2.0 * h);
        let e = (&ours - &fd).amax() / fd.amax().max(1e-3);
        println!("{name}: |dv/dscale| {:.3e}, difference {e:.1e}", fd.amax());
        assert!(e < 1e-5, "{name}: {e:e}");
        assert_eq!(moving, fd.amax() > 1e-6, "{name}");
    }
}
