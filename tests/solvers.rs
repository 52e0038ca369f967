//! The NCP solvers agree with each other and certify their answers, and warm
//! starts pay off.

use moreau::contact::{ContactModel, ContactSolution, SolverKind, SolverSettings, ncp_residuals};
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

/// The problems of `tests/data/{name}.json`.
fn data_problems(name: &str) -> Vec<moreau::contact::ContactProblem> {
    let path = format!("{}/tests/data/{name}.json", env!("CARGO_MANIFEST_DIR"));
    moreau::contact::io::read_problems(&path).unwrap()
}

fn solve_with(
    kind: SolverKind,
    p: &moreau::contact::ContactProblem,
    settings: &SolverSettings,
) -> ContactSolution {
    let mut s = ContactSolution::default();
    kind.build().solve(p, settings, &mut s).unwrap();
    s
}

/// ρ scaled per row (`SolverSettings::scaled_rho`, the default): six
/// problems of robosuite's UR5e under random controls
/// (`tests/data/ur5e_spread_diagonal.json`, from `moreau run
/// …/ur5e/robot.xml --random-controls 1 --dump-problems`: 6 dofs, up to 6
/// contacts, the joints' stops and dry friction, `G` of rank 6 whose
/// diagonal spans 1e-10 to 7.5e3, units spreading over 1e5: scaled from
/// the start) that one ρ for every row leaves at ADMM's cap are solved by
/// ADMM's own iterations, and each answer meets the NCP, judged
/// independently.
#[test]
fn scaled_rho_solves_problems_whose_diagonal_spans_orders_of_magnitude() {
    let problems = data_problems("ur5e_spread_diagonal");
    assert_eq!(problems.len(), 6);
    assert!(problems.iter().all(|p| unit_spread(p) > 1e5));
    let scaled = SolverSettings::default();
    for (i, p) in problems.iter().enumerate() {
        let iterations = scaled_against_one(&format!("problem {i}"), p);
        assert!(iterations < scaled.max_iterations, "problem {i}");
    }
}

/// `p` solved by `ncp-admm` with one ρ (which reaches the cap, then the
/// `ncp-pgs` fallback) and with ρ scaled (which converges by ADMM's own
/// iterations, to an answer that meets the NCP judged independently);
/// returns the scaled run's iterations.
fn scaled_against_one(name: &str, p: &moreau::contact::ContactProblem) -> usize {
    let scaled = SolverSettings::default();
    assert!(scaled.scaled_rho);
    let one = SolverSettings {
        scaled_rho: false,
        ..scaled
    };
    let s = solve_with(SolverKind::NcpAdmm, p, &scaled);
    let u = solve_with(SolverKind::NcpAdmm, p, &one);
    println!(
        "{name}: scaled {} iterations, eps_abs {:.1e}; one rho {} iterations, eps_abs {:.1e} before {} fallback sweeps",
        s.stats.iterations,
        s.stats.residuals.eps_abs,
        u.stats.iterations,
        u.stats.residuals.eps_abs,
        u.stats.fallback_sweeps
    );
    assert_eq!(u.stats.iterations, one.max_iterations, "{name}");
    assert!(u.stats.fallback_sweeps > 0, "{name}");
    assert!(
        s.stats.converged && s.stats.fallback_sweeps == 0,
        "{name}: {:?}",
        s.stats
    );
    let e = moreau::contact::evaluate(p, Some(ContactModel::Ncp), s.lambda.as_slice());
    assert!(
        e.ncp.eps_abs <= scaled.tolerance,
        "{name}: {:e}",
        e.ncp.eps_abs
    );
    s.stats.iterations
}

/// Scaling ρ changes ADMM's path, not its answer: on strictly convex
/// problems (random `G` positive definite, each contact's and row's scale
/// multiplied by a factor from 10^−1.5 to 10^1.5) `ccp-admm` with scaled ρ
/// ends at the unique solution that `ccp-pgs` finds (its per-contact sweeps
/// are the same whatever each contact's scale); with one ρ it is still
/// short of the tolerance after 20 000 iterations.
#[test]
fn scaled_rho_keeps_the_solution_of_a_determinate_problem() {
    for seed in 0..4 {
        let mut p = moreau::contact::random::random_mixed_problem(seed, 4, 3);
        let m = p.g.len();
        // Per unit (a contact's three rows, or a row) its factor.
        let unit = |k: usize| if k < 12 { k / 3 } else { k - 8 };
        let f = |k: usize| 10f64.powf(-1.5 + 3.0 * unit(k) as f64 / 6.0);
        for i in 0..m {
            for j in 0..m {
                p.delassus[(i, j)] *= f(i) * f(j);
            }
            p.g[i] *= f(i);
        }
        let settings = SolverSettings {
            tolerance: 1e-12,
            max_iterations: 20_000,
            ..Default::default()
        };
        let s = solve_with(SolverKind::CcpAdmm, &p, &settings);
        let pgs = solve_with(SolverKind::CcpPgs, &p, &settings);
        let one = solve_with(
            SolverKind::CcpAdmm,
            &p,
            &SolverSettings {
                scaled_rho: false,
                ..settings
            },
        );
        println!(
            "seed {seed}: ccp-admm scaled {} iterations, ccp-pgs {} sweeps, ccp-admm with one rho {} iterations (eps_abs {:.1e})",
            s.stats.iterations,
            pgs.stats.iterations,
            one.stats.iterations,
            one.stats.residuals.eps_abs
        );
        assert!(s.stats.converged && pgs.stats.converged, "seed {seed}");
        assert!(!one.stats.converged, "seed {seed}");
        let scale = s.lambda.amax().max(1e-30);
        let gap = (&s.lambda - &pgs.lambda).amax() / scale;
        assert!(gap <= 1e-8, "seed {seed}: the answers differ by {gap:e}");
    }
}

/// The spread of a problem's unit diagonals (a contact's three rows
/// averaged, each row after them alone): what decides whether and when
/// `ncp-admm` scales ρ.
fn unit_spread(p: &moreau::contact::ContactProblem) -> f64 {
    let nc = p.nc();
    let d = |k: usize| p.delassus[(k, k)] + p.compliance[k];
    let units = (0..nc)
        .map(|i| (d(3 * i) + d(3 * i + 1) + d(3 * i + 2)) / 3.0)
        .chain((3 * nc..p.g.len()).map(d));
    let (lo, hi) = units.fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    hi / lo
}

/// Where the units' diagonals span less (Gymnasium's humanoid lying on the
/// floor, 10 contacts and 4 stops, a spread of 689:
/// `tests/data/humanoid_lying_stall.json`, three of the seven problems of
/// `moreau run humanoid.xml --passive --steps 1500 --unscaled-rho` left
/// unconverged), `ncp-admm` starts with one ρ, which keeps a warm start's
/// modes, and scales ρ per row where the stall guard would first raise it:
/// each then converges by ADMM's own iterations after that first window,
/// where one ρ throughout reaches the cap and falls back to `ncp-pgs`.
#[test]
fn scaled_rho_at_the_first_stall_solves_the_lying_humanoids_problems() {
    let problems = data_problems("humanoid_lying_stall");
    assert_eq!(problems.len(), 3);
    for (i, p) in problems.iter().enumerate() {
        let spread = unit_spread(p);
        assert!((10.0..1e5).contains(&spread), "problem {i}: {spread}");
        let iterations = scaled_against_one(&format!("problem {i} (spread {spread:.0})"), p);
        // Scaled after the first window, converged before the cap.
        assert!(
            (101..1000).contains(&iterations),
            "problem {i}: {iterations} iterations"
        );
    }
}
