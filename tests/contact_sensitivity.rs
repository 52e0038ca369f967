//! The implicit derivatives of the contact problem's solution against
//! central finite differences of the solver (`ncp-admm`, refined to
//! rounding; steps of 1e-5 m/s), on problems harvested from scenes where each mode occurs: a resting cube
//! (sticking, statically indeterminate), a sliding cube (sliding), the
//! standing quadruped, a stack of cubes, a cube with an edge pulled up
//! (breaking), and Gymnasium's ant on its legs
//! (contacts and joint limits) and landing (sliding, `G` singular).

mod common;

use moreau::contact::{
    ContactMode, ContactProblem, ContactSensitivity, ContactSolution, SolverKind, SolverSettings,
};
use moreau::sim::SimParams;
use nalgebra::{DMatrix, DVector};

fn harvest(scene: &moreau::scenes::Scene, steps: usize) -> ContactProblem {
    let params = SimParams {
        dt: scene.dt,
        ..Default::default()
    };
    moreau::scenes::harvest(scene, params, steps, steps, None)
        .unwrap()
        .pop()
        .expect("a contact problem")
}

/// `ncp-admm` asked for 1e-14 (its Newton finisher reaches it on most of
/// these), accepted at 1e-9, then, with sliding contacts, refined by Newton
/// on the modes of its answer to rounding: the NCP residual sees a sliding
/// contact's friction direction only at second order, so two answers with
/// residuals of 1e-16 may differ by 1e-10 in `c` (measured on the sliding
/// cube), too much for finite differences.
fn solve(p: &ContactProblem) -> ContactSolution {
    let settings = SolverSettings {
        tolerance: 1e-14,
        max_iterations: 2000,
        ..Default::default()
    };
    let mut out = ContactSolution::default();
    SolverKind::NcpAdmm
        .build()
        .solve(p, &settings, &mut out)
        .unwrap();
    assert!(
        out.stats.residuals.eps_abs < 1e-9,
        "{:?}",
        out.stats.residuals
    );
    // Only sliding contacts need it (a sticking one's c is pinned at first
    // order); on statically indeterminate problems the Newton steps on the
    // modes may wander along the null space and out of the cones.
    let mut s = ContactSensitivity::default();
    s.factorize(p, out.lambda.as_slice(), out.c.as_slice())
        .unwrap();
    if s.modes.contains(&ContactMode::Sliding) {
        s.refine(p, out.lambda.as_mut_slice(), out.c.as_mut_slice(), 3)
            .unwrap();
        let e = moreau::contact::evaluate(p, None, out.lambda.as_slice());
        assert!(e.ncp.eps_abs < 1e-12, "refined: {:?}", e.ncp);
    }
    out
}

#[test]
fn contact_velocity_derivatives_match_finite_differences() {
    let mut problems = vec![
        (
            "cube-resting",
            harvest(&moreau::scenes::scene("cube-resting").unwrap(), 50),
        ),
        (
            "cube-sliding",
            harvest(&moreau::scenes::scene("cube-sliding").unwrap(), 50),
        ),
        (
            "quadruped",
            harvest(&moreau::scenes::scene("quadruped").unwrap(), 300),
        ),
        (
            "cube-stack",
            harvest(&moreau::scenes::cube_stack(10.0).unwrap(), 100),
        ),
    ];
    // A cube pulled up along one edge: its two contacts break, the other
    // two hold. (Pulled at one corner, it would rest on the diagonal with
    // the opposite corner at λ = 0, c = 0: a mode boundary.)
    let mut lifted = problems[0].1.clone();
    lifted.g[2] += 0.05;
    lifted.g[5] += 0.05;
    problems.push(("cube-edge-lifting", lifted));
    if let Some(files) = common::robot_files() {
        let loaded = moreau::load::load_model_file(
            files.gymnasium_assets.join("ant.xml"),
            &Default::default(),
        )
        .unwrap();
        let scene = moreau::scenes::from_loaded(&loaded, true).unwrap();
        problems.push(("ant", harvest(&scene, 1500)));
        // Landing under its PD: four feet sliding outwards, four stops
        // pressed, G singular (16 rows on 14 dofs). Here `moreau grad`'s
        // central differences of whole steps solved to 1e-12 are 3e-2 off
        // the Jacobians: the solver's friction directions are that
        // inaccurate (a direction error enters the NCP residual only at
        // second order); the refined solves below agree.
        let under_pd = moreau::scenes::from_loaded(&loaded, false).unwrap();
        problems.push(("ant-landing", harvest(&under_pd, 31)));
    }
    for (name, p) in &problems {
        let m = p.m();
        let sol = solve(p);
        let mut sens = ContactSensitivity::default();
        sens.factorize(p, sol.lambda.as_slice(), sol.c.as_slice())
            .unwrap();
        let modes = sens.modes.clone();
        let count = |mode| modes.iter().filter(|&&x| x == mode).count();
        // dc/dg = (G + R) dλ/dg + I, from the sensitivity and by differences,
        // along the directions the simulator perturbs g in: g = J v_f + …
        // moves in the range of J, which is G's (`G = J M⁻¹ Jᵀ`). (Along
        // other directions a statically indeterminate sticking contact set
        // cannot stay stuck: the modes change.)
        let gr = &p.delassus + DMatrix::from_diagonal(&p.compliance);
        let directions = gr.clone() / gr.amax();
        let mut dl = directions.clone();
        sens.apply(&mut dl);
        let dc = &gr * &dl + &directions;
        let eps = 1e-5;
        let mut fd = DMatrix::zeros(m, m);
        for k in 0..m {
            let (mut pp, mut pm) = (p.clone(), p.clone());
            pp.g += directions.column(k) * eps;
            pm.g -= directions.column(k) * eps;
            pp.warm_start.copy_from(&sol.lambda);
            pm.warm_start.copy_from(&sol.lambda);
            let (sp, sm) = (solve(&pp), solve(&pm));
            fd.set_column(k, &((&sp.c - &sm.c) / (2.0 * eps)));
        }
        let err = (&dc - &fd).amax() / fd.amax().max(1.0);
        println!(
            "{name}: m {m}, {} breaking, {} sticking, {} sliding; dc/dg against differences {err:.1e}",
            count(ContactMode::Breaking),
            count(ContactMode::Sticking),
            count(ContactMode::Sliding)
        );
        // (The ant's four limit rows sit at their mode boundary, λ = 0 with
        // c = −2.5e-10: one-sided derivatives, 1.7e-6 from the differences.)
        assert!(err < 1e-5, "{name}: {err:e}");
        // The vector–Jacobian product is the transpose of the forward one,
        // for cotangents and directions in the range of G (those of a loss
        // on the velocities and of the simulator's perturbations; the
        // impulses along G's null space are not determined).
        let w = &directions * DVector::from_fn(m, |i, _| ((i * 7 + 3) as f64).sin());
        let mut vjp = w.as_slice().to_vec();
        sens.apply_transpose(&mut vjp);
        let got = DVector::from_vec(vjp).transpose() * &directions;
        let want = w.transpose() * &dl;
        let e = (&got - &want).amax() / want.amax().max(1.0);
        assert!(e < 1e-10, "{name}: vjp {e:e}");
    }
}
