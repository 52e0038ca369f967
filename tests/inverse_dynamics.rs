//! Inverse dynamics with rigid contact (`moreau::inverse`), inverse then
//! forward: the torques each formulation finds, applied in the simulator
//! with the contact model the formulation assumes, give the desired
//! accelerations of the actuated joints.
//!
//! The quadruped stands on its four feet (settled under its PD
//! controller), asked for accelerations of its twelve joints that the
//! feet can follow while they stick (those of a forward step under pushed
//! PD torques; arbitrary ones would move the feet apart, and no sticking
//! contact forces could realize them: the no-slip QP is then unbounded,
//! reported as an error). The feet stick:
//! - no-slip (infinite friction) against the NCP with friction scaled ×100
//!   (so that its impulses stay inside the cones): 1e-8;
//! - Coulomb (Lemke, the 4-facet pyramid) against `lcp-pgs` on the same
//!   pyramid: 1e-8;
//! - two-stage (the convex stage I) against `ccp-admm`: 1e-8;
//! - the NCP (Gauss–Newton through the step) against `ncp-admm`: 1e-8.
//!
//! And each formulation's torques on the others' models, printed (the
//! models' difference). The four impulses are indeterminate (12 rows, 6
//! base dofs): reported.

use moreau::contact::SolverKind;
use moreau::inverse::{Formulation, InverseDynamics, InverseSettings};
use moreau::scenes::Scene;
use moreau::sim::{SimParams, Simulator, State};
use nalgebra::DVector;

fn params(dt: f64, solver: SolverKind, friction_scale: f64) -> SimParams {
    let mut p = SimParams {
        dt,
        solver,
        friction_scale,
        ..Default::default()
    };
    p.solver_settings.tolerance = 1e-13;
    p.solver_settings.max_iterations = 200_000;
    p
}

/// The quadruped settled on its feet, and accelerations toward a crouch.
fn standing() -> (Scene, State, Vec<f64>) {
    let scene = moreau::scenes::scene("quadruped").unwrap();
    let mut sim = Simulator::new(
        scene.model.clone(),
        params(scene.dt, SolverKind::NcpAdmm, 1.0),
    )
    .unwrap();
    let mut state = scene.state.clone();
    let mut tau = DVector::zeros(scene.model.nv);
    for _ in 0..600 {
        scene.control(&state, tau.as_mut_slice());
        sim.step(&mut state, tau.as_slice()).unwrap();
    }
    // Accelerations the feet can follow while they stick: those of one
    // forward step under the controller's torques plus a push of each
    // joint (friction ×100: the feet stick).
    scene.control(&state, tau.as_mut_slice());
    for k in 6..scene.model.nv {
        tau[k] += 0.3 * ((k as f64) * 0.9).sin();
    }
    let (accelerations, nc) = forward(
        &scene,
        &state,
        &tau,
        params(scene.dt, SolverKind::NcpAdmm, 100.0),
    );
    assert_eq!(nc, 4);
    (scene, state, accelerations)
}

/// The actuated joints' accelerations over one forward step under `tau`.
fn forward(scene: &Scene, state: &State, tau: &DVector<f64>, p: SimParams) -> (Vec<f64>, usize) {
    let mut sim = Simulator::new(scene.model.clone(), p).unwrap();
    let mut next = state.clone();
    let report = sim.step(&mut next, tau.as_slice()).unwrap();
    let acc = (6..scene.model.nv)
        .map(|k| (next.v[k] - state.v[k]) / scene.dt)
        .collect();
    (acc, report.nc)
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).fold(0.0, |m, (x, y)| m.max((x - y).abs()))
}

#[test]
fn inverse_then_forward_gives_the_desired_accelerations() {
    let (scene, state, desired) = standing();
    let dt = scene.dt;
    let models = [
        ("ncp ×100 friction", params(dt, SolverKind::NcpAdmm, 100.0)),
        ("lcp-pgs", params(dt, SolverKind::LcpPgs, 1.0)),
        ("ccp-admm", params(dt, SolverKind::CcpAdmm, 1.0)),
        ("ncp-admm", params(dt, SolverKind::NcpAdmm, 1.0)),
    ];
    let mut id = InverseDynamics::new(
        scene.model.clone(),
        params(dt, SolverKind::NcpAdmm, 1.0),
        None,
    )
    .unwrap();
    assert_eq!(id.actuated(), (6..18).collect::<Vec<_>>().as_slice());
    let scale = desired.iter().fold(0.0f64, |m, a| m.max(a.abs()));
    println!("largest desired acceleration {scale:.3} rad/s²");
    println!(
        "{:>10} {:>9} {:>6} {:>9}  error on each model (rad/s²)",
        "formulation", "residual", "iters", "|τ|"
    );
    for (k, formulation) in Formulation::ALL.into_iter().enumerate() {
        let settings = InverseSettings {
            formulation,
            ..Default::default()
        };
        let sol = id.solve(&state, &desired, &settings).unwrap();
        assert_eq!(sol.nc, 4, "{}: the four feet", formulation.name());
        assert!(
            sol.indeterminate,
            "four feet on a floating base are indeterminate"
        );
        let errors: Vec<(f64, usize)> = models
            .iter()
            .map(|(_, p)| {
                let (acc, nc) = forward(&scene, &state, &sol.tau, *p);
                (max_diff(&acc, &desired), nc)
            })
            .collect();
        println!(
            "{:>10} {:>9.1e} {:>6} {:>9.3}  {}",
            formulation.name(),
            sol.residual,
            sol.iterations,
            sol.tau.norm(),
            models
                .iter()
                .zip(&errors)
                .map(|((name, _), (e, _))| format!("{name}: {e:.1e}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        // The formulation's own model: the model it inverts (relative to
        // the largest desired acceleration).
        let (own, nc) = errors[k];
        assert_eq!(nc, 4);
        assert!(own < 1e-8 * scale, "{}: {own:e}", formulation.name());
    }
}

/// With a compliance on the problem (`penetration_compliance`, the
/// quadruped's feet 3 mm into the ground; `compliance`), the inverse
/// dynamics inverts the same law as the forward step: the NCP
/// formulation's torques give the desired accelerations back.
#[test]
fn inverse_dynamics_takes_the_problems_compliance() {
    let (scene, mut state, _) = standing();
    state.q[2] -= 0.003;
    let dt = scene.dt;
    let mut tau = DVector::zeros(scene.model.nv);
    scene.control(&state, tau.as_mut_slice());
    for (name, p) in [
        (
            "penetration_compliance",
            SimParams {
                penetration_compliance: moreau::sim::OVERLAP_COMPLIANCE,
                ..params(dt, SolverKind::NcpAdmm, 1.0)
            },
        ),
        (
            "compliance",
            SimParams {
                compliance: 0.05,
                ..params(dt, SolverKind::NcpAdmm, 1.0)
            },
        ),
    ] {
        let (desired, nc) = forward(&scene, &state, &tau, p);
        assert_eq!(nc, 4);
        let rigid = forward(&scene, &state, &tau, params(dt, SolverKind::NcpAdmm, 1.0)).0;
        let mut id = InverseDynamics::new(scene.model.clone(), p, None).unwrap();
        let settings = InverseSettings {
            formulation: Formulation::Ncp,
            ..Default::default()
        };
        let sol = id.solve(&state, &desired, &settings).unwrap();
        let (acc, _) = forward(&scene, &state, &sol.tau, p);
        let scale = desired.iter().fold(0.0f64, |m, a| m.max(a.abs()));
        let (error, effect) = (max_diff(&acc, &desired), max_diff(&rigid, &desired));
        println!(
            "{name}: inverse then forward {error:.1e} rad/s², the compliance moves the step by {effect:.1e}"
        );
        assert!(effect > 1e-3 * scale, "{name}: {effect}");
        assert!(error < 1e-8 * scale, "{name}: {error:e}");
    }
}

#[test]
fn bad_input_is_refused() {
    let (scene, state, desired) = standing();
    let p = params(scene.dt, SolverKind::NcpAdmm, 1.0);
    let e = InverseDynamics::new(scene.model.clone(), p, Some(vec![6, 6]))
        .err()
        .unwrap();
    assert!(e.to_string().contains("listed twice"), "{e}");
    let mut id = InverseDynamics::new(scene.model.clone(), p, None).unwrap();
    let s = InverseSettings::default();
    let e = id.solve(&state, &desired[..3], &s).unwrap_err();
    assert!(e.to_string().contains("accelerations has length 3"), "{e}");
    let mut bad = desired.clone();
    bad[2] = f64::NAN;
    let e = id.solve(&state, &bad, &s).unwrap_err();
    assert!(e.to_string().contains("accelerations[2]"), "{e}");
    assert!("kkt".parse::<Formulation>().is_err());
    assert_eq!(
        "two-stage".parse::<Formulation>().unwrap(),
        Formulation::TwoStage
    );
}

/// A box on 1, 4 and 16 telescopic legs (`scenes::legged`), its feet 0.1
/// mm into the ground, asked to hold its legs still: every formulation's
/// torques give that on its own model (within 1e-8 of the largest of the
/// legs' accelerations without torques; Coulomb's 1e-7: Lemke leaves LCP
/// residuals of 1e-10), and the contact count is the legs'. On 16 legs
/// Lemke's pivoting reaches its cap (printed: a known limit, reported as
/// an error rather than a loop).
#[test]
fn inverse_then_forward_on_many_legs() {
    for legs in [1, 4, 16] {
        let scene = moreau::scenes::legged(legs).unwrap();
        let dt = scene.dt;
        let own = [
            params(dt, SolverKind::NcpAdmm, 100.0),
            params(dt, SolverKind::LcpPgs, 1.0),
            params(dt, SolverKind::CcpAdmm, 1.0),
            params(dt, SolverKind::NcpAdmm, 1.0),
        ];
        let nv = scene.model.nv;
        let zero = vec![0.0; nv - 6];
        let (free, _) = forward(&scene, &scene.state, &nalgebra::DVector::zeros(nv), own[3]);
        let scale = free.iter().fold(1.0f64, |m, a| m.max(a.abs()));
        let mut id = InverseDynamics::new(scene.model.clone(), own[3], None).unwrap();
        for (formulation, p) in Formulation::ALL.into_iter().zip(own) {
            let settings = InverseSettings {
                formulation,
                ..Default::default()
            };
            let sol = match id.solve(&scene.state, &zero, &settings) {
                // Known limit: on 16 redundant contacts (96 LCP unknowns)
                // Lemke's pivoting reaches its cap; it says so.
                Err(e) if formulation == Formulation::Coulomb && legs > 8 => {
                    println!("{legs} legs, coulomb: {e}");
                    assert!(e.to_string().contains("pivots"), "{e}");
                    continue;
                }
                other => other.unwrap(),
            };
            assert_eq!(sol.nc, legs);
            let (acc, nc) = forward(&scene, &scene.state, &sol.tau, p);
            assert_eq!(nc, legs);
            let err = max_diff(&acc, &zero);
            println!(
                "{legs} legs, {}: error {err:.1e} rad/s² (legs' free accelerations up to {scale:.1}), indeterminate {}",
                formulation.name(),
                sol.indeterminate
            );
            // (Lemke's tableau leaves LCP residuals of 1e-10: Coulomb's
            // answers are good to 1e-7.)
            let tolerance = if formulation == Formulation::Coulomb {
                1e-7
            } else {
                1e-8
            };
            assert!(
                err < tolerance * scale,
                "{legs} legs, {}: {err:e} (LCP/QP residual {:e})",
                formulation.name(),
                sol.residual
            );
        }
    }
}
