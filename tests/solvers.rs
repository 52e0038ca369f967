//! The NCP solvers agree with each other and certify their answers, and warm
//! starts pay off.

use moreau::contact::{ContactSolution, SolverKind, SolverSettings, ncp_residuals};
use moreau::scenes;
use moreau::sim::{SimParams, Simulator};
use nalgebra::DVector;

/// Contact problems harvested from the sliding cube (4 contacts) and the landing quadruped.
fn harvested() -> Vec<moreau::contact::ContactProblem> {
    let mut out = Vec::new();
    for (name, steps) in [("cube-sliding", 50), ("quadruped", 400)] {
        let scene = scenes::scene(name).unwrap();
        let mut sim = Simulator::new(scene.model.clone(), SimParams::default()).unwrap();
        let mut state = scene.state.clone();
        let mut tau = DVector::zeros(scene.model.nv);
        for _ in 0..steps {
            if let Some(c) = &scene.controller {
                c.torques(&state, tau.as_mut_slice());
            }
            sim.step(&mut state, tau.as_slice()).unwrap();
        }
        assert!(sim.problem().nc() >= 4, "{name}: expected contacts");
        out.push(sim.problem_with_delassus().clone());
    }
    out
}

#[test]
fn admm_and_pgs_agree_and_certify_their_solutions() {
    let settings = SolverSettings {
        tolerance: 1e-10,
        max_iterations: 5000,
        ..Default::default()
    };
    for p in harvested() {
        let mut cold = p.clone();
        cold.warm_start.fill(0.0);
        let mut sols: Vec<ContactSolution> = Vec::new();
        for kind in [SolverKind::NcpAdmm, SolverKind::NcpPgs] {
            let mut out = ContactSolution::default();
            kind.build().solve(&cold, &settings, &mut out).unwrap();
            // Recompute the residuals independently of the solver's own bookkeeping.
            let mut c = DVector::zeros(out.lambda.len());
            cold.contact_velocity(out.lambda.as_slice(), c.as_mut_slice());
            let r = ncp_residuals(&cold.mu, out.lambda.as_slice(), c.as_slice());
            println!(
                "{} nc={}: {} iterations, eps_abs {:.1e}",
                kind.name(),
                cold.nc(),
                out.stats.iterations,
                r.eps_abs
            );
            assert!(out.stats.converged && r.eps_abs <= 1e-10);
            sols.push(out);
        }
        // Contact velocities are unique even where impulses are not (redundant contacts).
        let dc = (&sols[0].c - &sols[1].c).amax();
        println!("  |c_admm − c_pgs| = {dc:.1e}");
        assert!(dc < 1e-6);
    }
}

#[test]
fn warm_started_solves_take_fewer_iterations() {
    for name in ["cube-resting", "quadruped"] {
        let mut total = [0usize; 2];
        for (k, warm) in [true, false].into_iter().enumerate() {
            let scene = scenes::scene(name).unwrap();
            let params = SimParams {
                warm_start: warm,
                ..Default::default()
            };
            let mut sim = Simulator::new(scene.model.clone(), params).unwrap();
            let mut state = scene.state.clone();
            let mut tau = DVector::zeros(scene.model.nv);
            for _ in 0..1500 {
                if let Some(c) = &scene.controller {
                    c.torques(&state, tau.as_mut_slice());
                }
                let r = sim.step(&mut state, tau.as_slice()).unwrap();
                // ADMM iterations and Newton steps (a cold start from λ = 0
                // is often finished by Newton without any iteration).
                total[k] += r.solver.map(|s| s.iterations + s.newton_steps).unwrap_or(0);
            }
        }
        println!(
            "{name}: ADMM iterations + Newton steps over 1500 steps, warm {} vs cold {}",
            total[0], total[1]
        );
        assert!(total[0] < total[1], "warm start must save iterations");
    }
}
