//! The tree path (`G = J M⁻¹ Jᵀ` kept as its factors, `TreeDelassus`)
//! against the dense `G`: the operator, its solves, and `ncp-admm`'s
//! solutions on random trees and on Gymnasium's robots; the simulator's
//! choice between them.

mod common;

use common::{Lcg, random_contacts, random_q};
use moreau::contact::{
    ContactJacobian, ContactProblem, ContactSolution, JointLimitRow, LimitSide, SolverKind,
    SolverSettings, TreeDelassus, TreeFactor, TreeWork, constraint_jacobian, delassus_ltdl,
};
use moreau::dynamics::{Data, crba, ltdl_factorize};
use moreau::model::WORLD;
use moreau::scenes::{quadruped_model, random_tree};
use moreau::sim::DelassusPath;
use moreau::{Model, SimParams, Simulator};
use nalgebra::{DMatrix, DVector};

/// One limit row per one-dof joint among the first few.
fn some_limits(model: &Model, n: usize) -> Vec<JointLimitRow> {
    (1..model.nbodies)
        .filter(|&i| model.joint_type[i].nv() == 1)
        .take(n)
        .enumerate()
        .map(|(k, i)| JointLimitRow {
            joint: i,
            dof: model.joint_idx_v[i],
            side: if k % 2 == 0 {
                LimitSide::Lower
            } else {
                LimitSide::Upper
            },
            distance: 0.0,
        })
        .collect()
}

#[test]
fn tree_operator_equals_dense_on_random_trees() {
    let mut rng = Lcg(21);
    let models = [
        random_tree(40, 3).unwrap(),
        random_tree(12, 5).unwrap(),
        quadruped_model().unwrap(),
    ];
    let work = TreeWork::default();
    let (mut dense_solver, mut tree_solver) =
        (SolverKind::NcpAdmm.build(), SolverKind::NcpAdmm.build());
    let (mut sd, mut st) = (ContactSolution::default(), ContactSolution::default());
    let mut report = Vec::new();
    let mut compared = 0;
    for model in &models {
        let mut data = Data::new(model);
        for (nc, world_only) in [
            (2, false),
            (3, false),
            (2, true),
            (4, true),
            (30, false),
            (30, true),
        ] {
            let q = random_q(model, &mut rng);
            crba(model, &mut data, q.as_slice());
            ltdl_factorize(model, &mut data);
            let mut contacts = random_contacts(model, &mut rng, nc);
            if world_only {
                contacts.iter_mut().for_each(|c| c.body_b = WORLD);
            }
            let limits = some_limits(model, 3);
            let mut cj = ContactJacobian::default();
            constraint_jacobian(
                model,
                &data,
                &contacts,
                &limits,
                &Default::default(),
                &mut cj,
            );
            let mut g = DMatrix::zeros(0, 0);
            delassus_ltdl(model, &data, &mut cj, &mut g);
            let t = TreeDelassus::new(model, &data, &cj, &work);
            let m = t.rows();
            let what = format!(
                "{} nv={} nc={nc} world_only={world_only}",
                model.name, model.nv
            );
            if world_only {
                assert!(
                    t.is_chain(),
                    "{what}: contacts against the world keep the tree's pattern"
                );
            }
            // The operator.
            let gmax = g.amax();
            assert!((t.to_dense() - &g).amax() <= 1e-12 * gmax, "{what}: G z");
            let mut blocks = Vec::new();
            t.block_diagonal(&mut blocks);
            for i in 0..nc {
                for (r, c) in (0..3).flat_map(|r| (0..3).map(move |c| (r, c))) {
                    let want = g[(3 * i + r, 3 * i + c)];
                    assert!(
                        (blocks[9 * i + 3 * c + r] - want).abs() <= 1e-12 * gmax,
                        "{what}: block {i}"
                    );
                }
            }
            for l in 0..limits.len() {
                let k = 3 * nc + l;
                assert!(
                    (blocks[9 * nc + l] - g[(k, k)]).abs() <= 1e-12 * gmax,
                    "{what}: limit {l}"
                );
            }
            // (G + Δ) x = r through K = M + JᵀΔ⁻¹J, against the dense Cholesky.
            let delta: Vec<f64> = (0..m).map(|_| gmax * rng.range(1e-3, 1e-1)).collect();
            let r = rng.vector(m, -1.0, 1.0);
            let mut factor = TreeFactor::default();
            factor.factorize(&t, &delta).unwrap();
            let mut x = r.clone();
            factor.solve(&t, x.as_mut_slice());
            let want = (&g + DMatrix::from_diagonal(&DVector::from_vec(delta.clone())))
                .cholesky()
                .unwrap()
                .solve(&r);
            let err = (&x - &want).amax() / want.amax();
            assert!(err <= 1e-10, "{what}: (G + Δ)⁻¹ r off by {err:.1e}");
            // ncp-admm from a cold start on the problem of a random velocity
            // (g = J v: the bodies move, the contacts must stop them).
            let v = rng.vector(model.nv, -1.0, 1.0);
            let p = ContactProblem::new(g.clone(), &cj.jacobian * v, vec![0.6; nc]).unwrap();
            let settings = SolverSettings {
                tolerance: 1e-12,
                max_iterations: 3000,
                ..Default::default()
            };
            dense_solver.solve(&p, &settings, &mut sd).unwrap();
            tree_solver.solve_tree(&p, &t, &settings, &mut st).unwrap();
            let scale = sd.lambda.amax().max(1e-300);
            let dl = (&sd.lambda - &st.lambda).amax() / scale;
            let dc = (&sd.c - &st.c).amax() / p.g.amax();
            // The velocity change M⁻¹ Jᵀ λ of each.
            let dv = |l: &DVector<f64>| {
                let mut w = vec![0.0; model.nv];
                t.jt_mul(l.as_slice(), &mut w);
                t.mass_solve(&mut w);
                DVector::from_vec(w)
            };
            let (vd, vt) = (dv(&sd.lambda), dv(&st.lambda));
            let dvel = (&vd - &vt).amax() / vd.amax().max(1e-300);
            report.push(format!(
                "{what} m={m}: converged {} / {}, iterations {} / {}, λ off by {dl:.1e}, c by {dc:.1e}",
                sd.stats.converged, st.stats.converged, sd.stats.iterations, st.stats.iterations
            ));
            // Where the solution is unique and well conditioned, the two
            // paths give the same impulses (elsewhere they drift apart at
            // the rate ADMM amplifies rounding, like two dense runs would).
            let ev = g.clone().symmetric_eigenvalues();
            if ev.min() > 1e-8 * ev.max() {
                compared += 1;
                assert!(
                    sd.stats.converged && st.stats.converged,
                    "{}",
                    report.last().unwrap()
                );
                assert!(
                    dl <= 1e-10 && dc <= 1e-10 && dvel <= 1e-10,
                    "{}",
                    report.last().unwrap()
                );
            }
        }
    }
    assert!(
        compared >= 4,
        "{compared} well-conditioned problems compared"
    );
    println!("{}", report.join("\n"));
}

/// What [`both_paths`] counts.
#[derive(Debug, Default)]
struct Alike {
    solves: usize,
    converged: [usize; 2],
    iterations: [usize; 2],
    /// Over the solves both paths converged: the worst relative difference
    /// of the velocity changes `M⁻¹Jᵀλ`, and how many exceed 1e-10.
    worst: f64,
    over: usize,
    /// The worst NCP residual of the tree path's answer on the dense
    /// path's problem (both paths' answers solve the same problem).
    cross: f64,
    /// Tree-path solves whose polish refined with the last polish's
    /// factors (counted in the above like the others).
    reused: usize,
}

/// Steps a scene with the dense `G`; at every step solves its problem both
/// ways from the same warm start and ρ (dense, then tree).
fn both_paths(scene: &moreau::scenes::Scene, steps: usize) -> Alike {
    let params = SimParams {
        dt: scene.dt,
        delassus: DelassusPath::Dense,
        ..Default::default()
    };
    let mut sim = Simulator::new(scene.model.clone(), params).unwrap();
    let mut state = scene.state.clone();
    let (mut dense, mut tree) = (SolverKind::NcpAdmm.build(), SolverKind::NcpAdmm.build());
    let (mut sd, mut st) = (ContactSolution::default(), ContactSolution::default());
    let work = TreeWork::default();
    let mut tau = vec![0.0; scene.model.nv];
    let mut out = Alike::default();
    for _ in 0..steps {
        scene.control(&state, &mut tau);
        sim.prepare(&state, &tau).unwrap();
        if sim.problem().m() == 0 {
            sim.finish(&mut state, &[], Default::default()).unwrap();
            continue;
        }
        let mut settings = params.solver_settings;
        settings.rho = sim.warm_rho();
        dense.solve(sim.problem(), &settings, &mut sd).unwrap();
        let t = TreeDelassus::new(&scene.model, sim.data(), sim.jacobian(), &work);
        tree.solve_tree(sim.problem(), &t, &settings, &mut st)
            .unwrap();
        let dv = |l: &DVector<f64>| {
            let mut w = vec![0.0; scene.model.nv];
            t.jt_mul(l.as_slice(), &mut w);
            t.mass_solve(&mut w);
            DVector::from_vec(w)
        };
        out.solves += 1;
        for (k, s) in [&sd, &st].iter().enumerate() {
            out.converged[k] += s.stats.converged as usize;
            out.iterations[k] += s.stats.iterations;
        }
        if sd.stats.converged && st.stats.converged {
            let e = moreau::contact::evaluate(sim.problem(), None, st.lambda.as_slice());
            out.cross = out.cross.max(e.ncp.eps_abs);
            let (vd, vt) = (dv(&sd.lambda), dv(&st.lambda));
            let d = (&vd - &vt).amax() / vd.amax().max(1e-300);
            out.worst = out.worst.max(d);
            out.over += usize::from(d > 1e-10);
            out.reused += usize::from(st.stats.reused_factors > 0);
        }
        sim.finish(&mut state, sd.lambda.as_slice(), sd.stats)
            .unwrap();
    }
    out
}

#[test]
fn scenes_solve_alike_on_both_paths() {
    let mut scenes: Vec<_> = ["pyramid", "cube-stack", "quadruped"]
        .iter()
        .map(|n| moreau::scenes::scene(n).unwrap())
        .collect();
    scenes.push(moreau::scenes::box_grid(3).unwrap());
    if let Some(files) = common::robot_files() {
        for name in ["humanoid.xml", "ant.xml", "walker2d_v5.xml", "hopper.xml"] {
            let loaded = moreau::load::load_model_file(
                files.gymnasium_assets.join(name),
                &Default::default(),
            )
            .unwrap();
            scenes.push(moreau::scenes::from_loaded(&loaded, true).unwrap());
        }
    }
    for scene in &scenes {
        let r = both_paths(scene, 1000);
        println!("{}: {r:?}", scene.name);
        let n = r.solves;
        assert!(n > 800, "{}: {n} solves", scene.name);
        // The same algorithm on the same problems: the same outcomes, up to
        // the odd solve where rounding tips a stopping test.
        assert!(
            r.converged[0].abs_diff(r.converged[1]) <= n / 100,
            "{}: {r:?}",
            scene.name
        );
        assert!(
            r.iterations[0].abs_diff(r.iterations[1]) <= r.iterations[0] / 50 + 10,
            "{}: {r:?}",
            scene.name
        );
        // Every answer of the tree path solves the dense path's problem.
        assert!(r.cross <= 1.01e-8, "{}: {r:?}", scene.name);
        // The humanoid and the ant lying on the ground have Delassus
        // matrices with condition numbers near 1e6 (and rank-deficient):
        // two answers within the stopping tolerance 1e-8 may differ by
        // that much more, and the NCP may have several solutions (Coulomb
        // friction's is not unique): measured over 1000 steps, one ant
        // solve where the Newton finisher ends at another solution on each
        // path (velocity changes 50 % apart, both answers solve the dense
        // problem to 1e-8). Elsewhere the paths agree to rounding, as
        // amplified by the conditioning: on the pyramid (36 contacts on 6
        // bodies, rank-deficient), one solve of 1000 differed by 1.7e-10
        // while Newton finished some of its solves (measured 2026-11-29);
        // with its 108 rows over `NEWTON_MAX_ROWS`, the worst is 3e-12.
        if scene.name == "humanoid" || scene.name == "ant" {
            assert!(r.over <= n / 100, "{}: {r:?}", scene.name);
        } else {
            assert!(r.worst <= 1e-9, "{}: {r:?}", scene.name);
            assert!(r.over <= 1, "{}: {r:?}", scene.name);
        }
        // The piles' comparison covers the polish with kept factors.
        if scene.name == "pyramid" || scene.name == "box-grid" {
            assert!(r.reused >= n / 2, "{}: {r:?}", scene.name);
        }
    }
}

/// `DelassusPath::Auto` takes the tree path on the pyramid (m = 3·nv) and
/// the dense one on the standing quadruped (m < nv); the tree path leaves
/// `G` unformed until asked, and its trajectory is the dense path's.
#[test]
fn the_simulator_picks_its_path() {
    for (name, tree) in [("pyramid", true), ("quadruped", false)] {
        let scene = moreau::scenes::scene(name).unwrap();
        let mut sims = [DelassusPath::Auto, DelassusPath::Dense].map(|delassus| {
            Simulator::new(
                scene.model.clone(),
                SimParams {
                    dt: scene.dt,
                    delassus,
                    ..Default::default()
                },
            )
            .unwrap()
        });
        let mut states = [scene.state.clone(), scene.state.clone()];
        let mut tau = vec![0.0; scene.model.nv];
        for _ in 0..300 {
            for (sim, state) in sims.iter_mut().zip(states.iter_mut()) {
                scene.control(state, &mut tau);
                sim.step(state, &tau).unwrap();
            }
        }
        assert_eq!(sims[0].tree_path(), tree, "{name}");
        assert!(!sims[1].tree_path());
        let m = sims[0].problem().m();
        assert!(m > 0);
        if tree {
            assert_eq!(
                sims[0].problem().delassus.nrows(),
                0,
                "{name}: G formed on the tree path"
            );
            assert_eq!(sims[0].problem_with_delassus().delassus.shape(), (m, m));
            sims[0].problem().validate().unwrap();
        }
        let dq = (&states[0].q - &states[1].q).amax();
        let dv = (&states[0].v - &states[1].v).amax();
        assert!(
            dq <= 1e-9 && dv <= 1e-7,
            "{name}: the paths' trajectories part by {dq:.1e} (q), {dv:.1e} (v)"
        );
    }
}

/// Piles at rest on the simulator's own (tree) path: most steps' polishes
/// finish with the factors kept from the step before, and every such
/// answer solves that step's NCP to the solver's tolerance, checked
/// against the dense `G` formed afresh.
#[test]
fn settled_piles_reuse_their_polish_factors() {
    for scene in [
        moreau::scenes::scene("pyramid").unwrap(),
        moreau::scenes::box_grid(4).unwrap(),
    ] {
        let params = SimParams {
            dt: scene.dt,
            ..Default::default()
        };
        let tol = params.solver_settings.tolerance;
        let mut sim = Simulator::new(scene.model.clone(), params).unwrap();
        let mut state = scene.state.clone();
        let mut tau = vec![0.0; scene.model.nv];
        let (mut solves, mut reused, mut worst) = (0usize, 0usize, 0.0f64);
        for _ in 0..1000 {
            scene.control(&state, &mut tau);
            sim.step(&mut state, &tau).unwrap();
            if sim.problem().m() == 0 {
                continue;
            }
            assert!(sim.tree_path(), "{}", scene.name);
            let stats = sim.solution().stats;
            assert!(stats.converged, "{}: {stats:?}", scene.name);
            solves += 1;
            if stats.reused_factors > 0 {
                reused += 1;
                let lambda = sim.solution().lambda.clone();
                let e =
                    moreau::contact::evaluate(sim.problem_with_delassus(), None, lambda.as_slice());
                worst = worst.max(e.ncp.eps_abs);
            }
        }
        println!(
            "{}: {reused} of {solves} reused, worst NCP {worst:.1e}",
            scene.name
        );
        assert!(solves > 900, "{}: {solves} solves", scene.name);
        assert!(reused >= solves / 2, "{}: {reused} of {solves}", scene.name);
        assert!(worst <= tol * (1.0 + 1e-9), "{}: {worst:.2e}", scene.name);
    }
}
