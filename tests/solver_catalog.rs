//! Every solver of the catalog on the same problems: each reaches its own
//! model's tolerance where it should, the solvers of one model agree, the
//! ADMM factorization is reused, and warm starts from a solution are free.

mod common;

use common::Lcg;
use moreau::contact::{
    ContactProblem, ContactSolution, SolverKind, SolverSettings, model_residuals,
};
use moreau::scenes;
use moreau::sim::SimParams;
use nalgebra::{DMatrix, DVector};

/// A random well-conditioned problem: G = AAᵀ + I/2 with nc contacts, a
/// free velocity that pushes every contact into its surface and slides it.
fn random_problem(rng: &mut Lcg, nc: usize) -> ContactProblem {
    let m = 3 * nc;
    let a = DMatrix::from_fn(m, m, |_, _| rng.range(-1.0, 1.0)) / (m as f64).sqrt();
    let g = &a * a.transpose() + DMatrix::identity(m, m) * 0.5;
    let mut free = rng.vector(m, -1.0, 1.0);
    for i in 0..nc {
        free[3 * i + 2] = rng.range(-1.0, 0.2);
    }
    let mu = (0..nc).map(|_| rng.range(0.1, 1.0)).collect();
    ContactProblem::new(g, free, mu).unwrap()
}

/// Problems harvested from the scenes (4 to 8 contacts; the stack of equal
/// cubes: the ill-conditioned stacks are the business of `seed_findings`).
fn harvested() -> Vec<ContactProblem> {
    let mut out = Vec::new();
    for (name, steps) in [("cube-sliding", 50), ("quadruped", 400), ("stack-1", 100)] {
        let scene = match name {
            "stack-1" => scenes::cube_stack(1.0).unwrap(),
            _ => scenes::scene(name).unwrap(),
        };
        // The last step's problem.
        let mut p = moreau::scenes::harvest(&scene, SimParams::default(), steps, steps, None)
            .unwrap()
            .pop()
            .unwrap_or_default();
        assert!(p.nc() >= 4, "{name}: expected contacts");
        p.warm_start.fill(0.0);
        out.push(p);
    }
    out
}

#[test]
fn every_solver_certifies_its_own_model_on_random_problems() {
    let mut rng = Lcg(7);
    let settings = SolverSettings {
        tolerance: 1e-9,
        max_iterations: 20_000,
        ..Default::default()
    };
    let problems: Vec<_> = [1, 2, 4, 8, 16]
        .iter()
        .map(|&nc| random_problem(&mut rng, nc))
        .collect();
    for kind in SolverKind::ALL {
        let mut solver = kind.build();
        let mut worst: f64 = 0.0;
        let mut iters = 0;
        for p in &problems {
            let mut out = ContactSolution::default();
            solver.solve(p, &settings, &mut out).unwrap();
            assert!(out.lambda.iter().all(|x| x.is_finite()));
            // c is what the solver says it is.
            let mut c = DVector::zeros(p.g.len());
            p.contact_velocity(out.lambda.as_slice(), c.as_mut_slice());
            assert!((&c - &out.c).amax() < 1e-9);
            let eps = match kind.contact_model(&settings) {
                Some(model) => {
                    model_residuals(model, &p.mu, out.lambda.as_slice(), c.as_slice()).eps_abs
                }
                None => out.stats.residuals.eps_abs,
            };
            assert!(
                out.stats.converged && eps <= 1e-8,
                "{} nc={}: converged {} after {} iterations, eps {eps:e}",
                kind.name(),
                p.nc(),
                out.stats.converged,
                out.stats.iterations
            );
            worst = worst.max(eps);
            iters += out.stats.iterations;
        }
        println!(
            "{:<10} worst own-model eps_abs {worst:.1e}, {iters} iterations over 5 problems",
            kind.name()
        );
    }
}

#[test]
fn solvers_of_one_model_agree_on_harvested_problems() {
    // Not tighter: the stack's g has a ~1e-9 component outside the range of G
    // (stabilization terms), which puts a floor under the CCP's residuals.
    let settings = SolverSettings {
        tolerance: 1e-9,
        max_iterations: 20_000,
        ..Default::default()
    };
    for p in harvested() {
        let solve = |kind: SolverKind| {
            let mut out = ContactSolution::default();
            kind.build().solve(&p, &settings, &mut out).unwrap();
            out
        };
        // Contact velocities are unique even where impulses are not (redundant contacts).
        let ncp = solve(SolverKind::NcpAdmm);
        assert!(ncp.stats.converged);
        for kind in [
            SolverKind::NcpPgs,
            SolverKind::RaisimDs,
            SolverKind::Staggered,
        ] {
            let out = solve(kind);
            let dc = (&out.c - &ncp.c).amax();
            println!(
                "nc={:>2} {:<10} {:>5} iterations, eps_abs {:.1e}, |c − c_ncp-admm| = {dc:.1e}",
                p.nc(),
                kind.name(),
                out.stats.iterations,
                out.stats.residuals.eps_abs
            );
            if out.stats.converged {
                assert!(dc < 1e-6);
            }
        }
        let ccp = solve(SolverKind::CcpAdmm);
        let ccp_pgs = solve(SolverKind::CcpPgs);
        let dc = (&ccp.c - &ccp_pgs.c).amax();
        println!(
            "nc={:>2} ccp-admm {} it. vs ccp-pgs {} it.: |Δc| = {dc:.1e}",
            p.nc(),
            ccp.stats.iterations,
            ccp_pgs.stats.iterations
        );
        assert!(ccp.stats.converged);
        if ccp_pgs.stats.converged {
            assert!(dc < 1e-6);
        }
    }
}

#[test]
fn a_solution_is_a_fixed_point_and_admm_keeps_its_factorization() {
    let mut rng = Lcg(11);
    let settings = SolverSettings {
        tolerance: 1e-9,
        max_iterations: 20_000,
        ..Default::default()
    };
    let p = random_problem(&mut rng, 6);
    for kind in SolverKind::ALL {
        let mut solver = kind.build();
        let mut out = ContactSolution::default();
        solver.solve(&p, &settings, &mut out).unwrap();
        let mut warm = p.clone();
        warm.warm_start.copy_from(&out.lambda);
        let mut again = ContactSolution::default();
        solver.solve(&warm, &settings, &mut again).unwrap();
        println!(
            "{:<10} cold {:>5} iterations, warm from its solution {}",
            kind.name(),
            out.stats.iterations,
            again.stats.iterations
        );
        assert!(again.stats.iterations <= 1, "{}", kind.name());
    }
    // Same G and ρ: the Cholesky factor of G + ρI is reused.
    let mut solver = SolverKind::CcpAdmm.build();
    let mut out = ContactSolution::default();
    solver.solve(&p, &settings, &mut out).unwrap();
    assert_eq!(out.stats.factorizations, 1);
    let mut q = p.clone();
    q.g *= 0.5;
    solver.solve(&q, &settings, &mut out).unwrap();
    println!(
        "ccp-admm on a second g with the same G: {} factorizations",
        out.stats.factorizations
    );
    assert_eq!(out.stats.factorizations, 0);
}

/// Problems with bilateral and box rows after the contacts (equality
/// constraints, dry friction on dofs): every solver reaches its own model's
/// tolerance with each row in its set, and on the rows-only problems (a
/// strictly convex QP over a box, whose solution is unique) all solvers
/// find the same impulse. One box row alone has the closed form
/// `λ = clamp(−g/G, −b, b)`.
#[test]
fn every_solver_solves_bilateral_and_box_rows() {
    use moreau::contact::RowSet;
    use moreau::contact::criteria::rows_residuals;
    use moreau::contact::random::random_mixed_problem;
    let settings = SolverSettings {
        tolerance: 1e-9,
        max_iterations: 20_000,
        ..Default::default()
    };
    let sets = [
        RowSet::Unilateral,
        RowSet::Bilateral,
        RowSet::Box(0.3),
        RowSet::Box(0.05),
        RowSet::Bilateral,
        RowSet::Box(0.0),
    ];
    let mut problems = Vec::new();
    for (seed, nc) in [(1, 0), (2, 0), (3, 1), (4, 3), (5, 6)] {
        let mut p = random_mixed_problem(seed, nc, sets.len());
        p.row_sets = sets.to_vec();
        p.validate().unwrap();
        problems.push(p);
    }
    for kind in SolverKind::ALL {
        let mut solver = kind.build();
        for (n, p) in problems.iter().enumerate() {
            let mut out = ContactSolution::default();
            solver.solve(p, &settings, &mut out).unwrap();
            let mut c = DVector::zeros(p.m());
            p.contact_velocity(out.lambda.as_slice(), c.as_mut_slice());
            let eps = match kind.contact_model(&settings) {
                Some(model) => {
                    rows_residuals(
                        model,
                        &p.mu,
                        &p.row_sets,
                        out.lambda.as_slice(),
                        c.as_slice(),
                    )
                    .eps_abs
                }
                None => out.stats.residuals.eps_abs,
            };
            assert!(
                out.stats.converged && eps <= 1e-8,
                "{} problem {n} (nc = {}): converged {} after {} iterations, eps {eps:e}",
                kind.name(),
                p.nc(),
                out.stats.converged,
                out.stats.iterations
            );
            // Each row in its set, and its law: a box row strictly inside
            // has c = 0, one on its bound pushes against c.
            let first = 3 * p.nc();
            for (l, set) in p.row_sets.iter().enumerate() {
                let (lam, ck) = (out.lambda[first + l], c[first + l]);
                let (lo, hi) = set.bounds();
                assert!(
                    lam >= lo - 1e-9 && lam <= hi + 1e-9,
                    "{}: row {l} λ {lam}",
                    kind.name()
                );
                if *set == RowSet::Bilateral {
                    assert!(
                        ck.abs() <= 1e-8,
                        "{}: bilateral row {l} c {ck:e}",
                        kind.name()
                    );
                }
            }
            if p.nc() == 0 {
                let reference = problems_reference(p);
                assert!(
                    (&out.lambda - &reference).amax() < 1e-6,
                    "{} problem {n}: λ {:?}, the QP's {:?}",
                    kind.name(),
                    out.lambda.as_slice(),
                    reference.as_slice()
                );
            }
        }
    }
    // One box row: the closed form.
    for (g, b, want) in [(0.5, 0.2, -0.2), (-0.1, 0.2, 0.05), (0.04, 0.2, -0.02)] {
        let mut p = ContactProblem::new(
            DMatrix::from_element(1, 1, 2.0),
            DVector::from_element(1, g),
            vec![],
        )
        .unwrap();
        p.row_sets = vec![RowSet::Box(b)];
        for kind in SolverKind::ALL {
            let mut out = ContactSolution::default();
            kind.build().solve(&p, &settings, &mut out).unwrap();
            assert!(
                (out.lambda[0] - want).abs() < 1e-9,
                "{}: g {g}, b {b}: λ {} (want {want})",
                kind.name(),
                out.lambda[0]
            );
        }
    }
}

/// The rows-only problem's solution by projected gradient with a fixed
/// step `1/‖G‖` run to convergence (a strictly convex QP over a box).
fn problems_reference(p: &ContactProblem) -> DVector<f64> {
    let m = p.m();
    let step = 1.0 / p.delassus.norm();
    let mut x = DVector::zeros(m);
    for _ in 0..200_000 {
        let grad = &p.delassus * &x + &p.g;
        let next = DVector::from_fn(m, |k, _| p.row_set(k).project(x[k] - step * grad[k]));
        let moved = (&next - &x).amax();
        x = next;
        if moved < 1e-15 {
            break;
        }
    }
    x
}
