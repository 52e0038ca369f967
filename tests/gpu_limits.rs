//! Unilateral rows (joint limits) on the GPU: mixed problems (contacts then
//! unilateral rows, `λ ≥ 0 ⟂ c ≥ 0`) solved by every GPU solver kind in
//! both decompositions, against the f64 CPU solvers (residuals of the GPU
//! λ under the solver's model, re-evaluated in f64; λ against the CPU twin)
//! and the f32 CPU twin; the per-problem and batch capacities counting the
//! rows; and `BatchSim` stepping a hinge onto its stop on the GPU as on the
//! CPU. On a machine without an adapter the GPU tests print a notice and
//! pass, unless `MOREAU_REQUIRE_GPU=1`.

mod common;

use moreau::batch::{Backend, BatchOptions, BatchSim};
use moreau::contact::random::random_mixed_problem;
use moreau::contact::{
    ContactProblem, ContactSolution, RowSet, SolverKind, SolverSettings, model_residuals,
    rows_residuals,
};
use moreau::gpu::cpu_f32::{has_f32_twin, solve_batch_f32};
use moreau::gpu::{
    BatchCapacity, BatchOutput, Decomposition, FLAG_INVALID, FLAG_OVER_CAPACITY, GpuContext,
    GpuError, GpuSolver, HostBatch, Layout, flag_names,
};
use moreau::load::mjcf::{MjcfOptions, parse_mjcf};
use moreau::math::Vec3;
use moreau::model::JointSpec;
use moreau::{State, sim::SimParams};
use std::path::Path;
use std::sync::Arc;

/// The kernels' target `ε_abs` (f32), as on the contact-only random problems.
const TOL: f64 = 1e-5;
/// λ of the GPU against its f64 CPU twin run at the same tolerance, relative.
const REL_TWIN: f64 = 1e-3;
/// λ of the GPU against the f32 CPU twin (the same algorithm in f32), relative.
const REL_F32: f64 = 1e-4;

/// Every solver with a GPU kernel (from the catalog).
fn gpu_kinds() -> impl Iterator<Item = SolverKind> {
    SolverKind::ALL.into_iter().filter(|k| k.kernel().is_some())
}

/// The kernels' algorithm on the CPU: no active-set polish and no stall
/// guard (the kernels have neither), so that iteration counts compare.
fn settings(tolerance: f64, max_iterations: usize) -> SolverSettings {
    SolverSettings {
        tolerance,
        max_iterations,
        polish: false,
        stall_guard: false,
        ..Default::default()
    }
}

/// (nc, nl) of the mixed batch: only unilateral rows, only contacts, and both.
const SHAPES: [(usize, usize); 14] = [
    (0, 1),
    (0, 4),
    (0, 9),
    (1, 1),
    (2, 3),
    (3, 0),
    (4, 5),
    (6, 2),
    (8, 8),
    (5, 0),
    (12, 3),
    (16, 7),
    (1, 12),
    (24, 4),
];

fn mixed_batch() -> Vec<ContactProblem> {
    SHAPES
        .iter()
        .enumerate()
        .map(|(i, &(nc, nl))| random_mixed_problem(100 + i as u64, nc, nl))
        .collect()
}

/// ε_abs in f64 of `lambda` under `kind`'s model, with c recomputed (0 for raisim).
fn f64_eps(kind: SolverKind, p: &ContactProblem, lambda: &[f64]) -> f64 {
    let Some(model) = kind.contact_model(&SolverSettings::default()) else {
        return 0.0;
    };
    let mut c = vec![0.0; p.m()];
    p.contact_velocity(lambda, &mut c);
    model_residuals(model, &p.mu, lambda, &c).eps_abs
}

fn rel(a: &[f64], b: &[f64]) -> f64 {
    let d: f64 = a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum();
    let n: f64 = b.iter().map(|y| y * y).sum();
    d.sqrt() / n.sqrt().max(1e-30)
}

#[test]
fn the_random_problems_have_active_and_inactive_unilateral_rows() {
    // The batch exercises both sides of λ ≥ 0 ⟂ c ≥ 0 (judged on the f64 NCP solution).
    let (mut active, mut open) = (0, 0);
    let mut solver = SolverKind::NcpAdmm.build();
    for p in mixed_batch() {
        let mut sol = ContactSolution::default();
        solver
            .solve(&p, &settings(1e-10, 10_000), &mut sol)
            .unwrap();
        assert!(sol.stats.converged);
        for k in 3 * p.nc()..p.m() {
            if sol.lambda[k] > 1e-6 {
                active += 1;
            } else {
                open += 1;
            }
        }
    }
    eprintln!("unilateral rows: {active} active, {open} open");
    assert!(active >= 5 && open >= 5, "{active} active, {open} open");
}

#[test]
fn every_gpu_kind_solves_mixed_problems_like_its_cpu_twins() {
    let Some(ctx) = GpuContext::for_tests() else {
        return;
    };
    eprintln!("adapter: {}", ctx.adapter);
    let problems = mixed_batch();
    let s = settings(TOL, 5000);
    for kind in gpu_kinds() {
        let decompositions: &[Decomposition] = if kind.name().contains("admm") {
            &[Decomposition::Invocation]
        } else {
            &Decomposition::ALL
        };
        let mut cpu = kind.build();
        for &decomposition in decompositions {
            let label = format!("{} ({})", kind.name(), decomposition.name());
            let cap = BatchCapacity::for_problems(&problems);
            let mut gpu = GpuSolver::with_decomposition(&ctx, kind, cap, decomposition).unwrap();
            let mut batch = gpu.new_batch();
            for p in &problems {
                batch.push(p, s.max_iterations, s.tolerance);
            }
            let mut out = BatchOutput::default();
            gpu.solve_batch(&batch, &s, &mut out).unwrap();
            let (mut worst_eps, mut worst_twin) = (0.0f64, 0.0f64);
            for (i, p) in problems.iter().enumerate() {
                let o = out.problem(i);
                let what = format!("{label}: problem {i} (nc {}, nl {})", p.nc(), p.nl());
                assert_eq!(o.flags(), 0, "{what}: {:?}", flag_names(o.flags()));
                assert!(o.converged(), "{what}: {:?}", o.result);
                assert_eq!((o.nc, o.nl, o.lambda.len()), (p.nc(), p.nl(), p.m()));
                let l: Vec<f64> = o.lambda.iter().map(|&x| x as f64).collect();
                for k in 3 * p.nc()..p.m() {
                    assert!(l[k] >= 0.0, "{what}: row {k} λ = {}", l[k]);
                }
                // (a) The GPU λ solves the model's problem, judged in f64.
                let eps = f64_eps(kind, p, &l);
                worst_eps = worst_eps.max(eps);
                assert!(eps <= 10.0 * TOL, "{what}: f64 ε_abs {eps:e}");
                // (b) The same algorithm in f64 at the same tolerance.
                let mut twin = ContactSolution::default();
                cpu.solve(p, &s, &mut twin).unwrap();
                assert!(twin.stats.converged, "{what}: CPU twin");
                let r = rel(&l, twin.lambda.as_slice());
                worst_twin = worst_twin.max(r);
                assert!(r <= REL_TWIN, "{what}: |λ_gpu − λ_cpu| / |λ_cpu| = {r:e}");
                // RaiSim relaxes the impulse of a contact that takes off
                // geometrically towards 0, and the CPU's normalized
                // complementarity only vanishes once it underflows f64, long
                // after the kernel has flushed it (as in gpu_solvers.rs):
                // iteration counts are then not compared.
                let vanishing = twin.lambda.iter().any(|&x| x != 0.0 && x.abs() < 1e-25);
                if kind != SolverKind::Raisim && !vanishing {
                    let gi = o.result.iterations as usize;
                    let ci = twin.stats.iterations;
                    assert!(
                        gi.abs_diff(ci) <= 3.max(ci / 5),
                        "{what}: GPU {gi} iterations, CPU {ci}"
                    );
                }
            }
            eprintln!(
                "{label}: {} mixed problems, worst f64 ε_abs {worst_eps:.2e} (tolerance {TOL:e}), worst λ vs CPU twin {worst_twin:.2e}",
                problems.len()
            );
            // (c) The f32 CPU twin takes the kernel's path.
            if has_f32_twin(kind) {
                let mut twin = BatchOutput::default();
                solve_batch_f32(kind, &batch, &s, &mut twin).unwrap();
                let mut worst = 0.0f64;
                for i in 0..problems.len() {
                    let (x, y) = (out.problem(i), twin.problem(i));
                    assert_eq!(y.flags(), 0);
                    assert!(
                        x.result.iterations.abs_diff(y.result.iterations) <= 1,
                        "{label}: problem {i}: GPU {} iterations, f32 twin {}",
                        x.result.iterations,
                        y.result.iterations
                    );
                    let r = rel(x.lambda_f64().as_slice(), y.lambda_f64().as_slice());
                    worst = worst.max(r);
                    assert!(r <= REL_F32, "{label}: problem {i}: λ vs f32 twin {r:e}");
                }
                eprintln!("{label}: f32 CPU twin: worst relative λ difference {worst:.2e}");
            }
        }
    }
}

#[test]
fn capacities_count_unilateral_rows() {
    let problems = mixed_batch();
    let cap = BatchCapacity::for_problems(&problems);
    let nl: usize = problems.iter().map(|p| p.nl()).sum();
    assert!(cap.unilateral_rows >= nl && cap.unilateral_rows <= nl + 2 * problems.len());
    assert_eq!(cap.max_unilateral_rows_per_problem, 12);
    // The packed batch uses exactly that room (rows three to a block).
    let mut batch = HostBatch::for_capacity(&cap);
    for p in &problems {
        batch.push(p, 100, TOL);
    }
    assert_eq!(
        batch.check_capacity(&cap).map_err(|e| e.to_string()),
        Ok(())
    );
    assert_eq!(batch.unilateral_rows(), cap.unilateral_rows);
    assert_eq!(batch.contacts(), cap.contacts);
    // A problem with more rows than the per-problem capacity is flagged.
    let mut small = HostBatch::for_capacity(&BatchCapacity::uniform_with_rows(2, 24, 4));
    let i = small.push(&random_mixed_problem(1, 2, 5), 100, TOL);
    let j = small.push(&random_mixed_problem(2, 2, 4), 100, TOL);
    assert_eq!(small.blocks(), 2 + 2); // the flagged problem uploads nothing
    let Some(ctx) = GpuContext::for_tests() else {
        return;
    };
    let s = settings(TOL, 1000);
    let mut gpu = GpuSolver::new(
        &ctx,
        SolverKind::NcpPgs,
        BatchCapacity::uniform_with_rows(2, 24, 4),
    )
    .unwrap();
    let mut out = BatchOutput::default();
    gpu.solve_batch(&small, &s, &mut out).unwrap();
    assert_eq!(out.problem(i).flags(), FLAG_OVER_CAPACITY);
    assert_eq!(out.problem(i).nl, 5);
    assert!(out.problem(j).converged());
    // A contact-only capacity refuses a batch with rows before anything is uploaded.
    let mut gpu = GpuSolver::new(&ctx, SolverKind::NcpPgs, BatchCapacity::uniform(2, 24)).unwrap();
    let mut batch = HostBatch::new(24);
    batch.push(&random_mixed_problem(3, 2, 2), 100, TOL);
    let e = gpu.solve_batch(&batch, &s, &mut out).unwrap_err();
    assert!(
        matches!(e, GpuError::CapacityExceeded { .. }) && e.to_string().contains("unilateral"),
        "{e}"
    );
}

/// A hinge (mass 1 kg at 0.5 m) falling under gravity onto its stop at
/// `HI` rad, from different starting angles.
const LO: f64 = -0.5;
const HI: f64 = 0.4;

fn hinge_model() -> Arc<moreau::model::Model> {
    let spec = JointSpec {
        range: Some((LO, HI)),
        ..Default::default()
    };
    let (b, _) = common::rod(1.0, Vec3::new(0.0, 0.0, -9.81), spec);
    Arc::new(b.build().unwrap())
}

#[test]
fn batch_sim_steps_a_hinge_onto_its_stop_on_the_gpu_as_on_the_cpu() {
    let model = hinge_model();
    let nworlds = 4;
    let steps = 600;
    let starts = [0.0, -0.3, 0.2, 0.39];
    for solver in [SolverKind::NcpPgs, SolverKind::NcpAdmm] {
        let run = |backend: Backend| -> Option<(Vec<State>, f64)> {
            let options = BatchOptions {
                backend,
                params: SimParams {
                    solver,
                    // The GPU's f32 floor (the default 1e-8 is refused).
                    solver_settings: settings(1e-6, 500),
                    ..Default::default()
                },
                ..Default::default()
            };
            let initial = State::new(
                nalgebra::DVector::zeros(model.nq),
                nalgebra::DVector::zeros(model.nv),
            );
            let batch = BatchSim::new(model.clone(), &initial, nworlds, &options);
            let mut batch = match (backend, batch) {
                (_, Ok(b)) => b,
                (b, Err(e)) if b.uses_gpu() => {
                    assert!(
                        std::env::var("MOREAU_REQUIRE_GPU").as_deref() != Ok("1"),
                        "GPU backend required: {e}"
                    );
                    eprintln!("SKIPPED (no GPU): {e}");
                    return None;
                }
                (_, Err(e)) => panic!("{e}"),
            };
            // `gpu` runs this contact-free hinge resident (its limit rows
            // solved in the resident kernel, whatever the solver);
            // `gpu-solve` solves them with the solver's batched kernel.
            assert_eq!(batch.is_resident(), backend == Backend::Gpu, "{backend}");
            for (w, &q0) in starts.iter().enumerate() {
                let mut s = initial.clone();
                s.q[0] = q0;
                batch.set_state(w, s).unwrap();
            }
            let actions = vec![0.0; nworlds * model.nv];
            let mut overshoot = f64::NEG_INFINITY;
            for _ in 0..steps {
                let r = batch.step(&actions).unwrap();
                assert!(r.failed.is_empty(), "{:?}", r.failed);
                assert!(r.fallbacks.is_empty(), "{:?}", r.fallbacks);
                for s in batch.states() {
                    overshoot = overshoot.max(s.q[0] - HI).max(LO - s.q[0]);
                }
            }
            Some((batch.states().cloned().collect(), overshoot))
        };
        let (cpu, cpu_over) = run(Backend::CpuSingle).unwrap();
        // The arm falls towards +q (its mass along +x, gravity −z) and rests on its stop.
        for (w, s) in cpu.iter().enumerate() {
            assert!(
                (s.q[0] - HI).abs() < 1e-3 && s.v[0].abs() < 1e-2,
                "{}: CPU world {w} not resting on its stop: q {}, v {}",
                solver.name(),
                s.q[0],
                s.v[0]
            );
        }
        for backend in [Backend::GpuSolve, Backend::Gpu] {
            let Some((gpu, gpu_over)) = run(backend) else {
                return;
            };
            let dq = cpu
                .iter()
                .zip(&gpu)
                .map(|(a, b)| (&a.q - &b.q).amax())
                .fold(0.0, f64::max);
            eprintln!(
                "{} on {backend}: hinge onto its stop, {nworlds} worlds × {steps} steps: max |q_gpu − q_cpu| = {dq:.2e}, overshoot past the stop: CPU {cpu_over:.2e}, GPU {gpu_over:.2e} rad",
                solver.name()
            );
            assert!(dq < 1e-4, "{}: GPU and CPU differ by {dq:e}", solver.name());
            assert!(
                gpu_over < 5e-3,
                "{}: GPU overshoot {gpu_over:e}",
                solver.name()
            );
            assert!(
                cpu_over < 5e-3,
                "{}: CPU overshoot {cpu_over:e}",
                solver.name()
            );
        }
    }
}

/// Contacts and joint limits in the same problems: Gymnasium's ant,
/// passive, settling onto its four feet held by its ankle stops, in four
/// worlds on the GPU and on the CPU; the torso heights agree to the f32
/// solves' tolerance and the ant stands on both backends.
#[test]
fn the_ant_stands_on_its_feet_and_stops_on_the_gpu_as_on_the_cpu() {
    let Some(loaded) = common::gymnasium("ant.xml") else {
        return;
    };
    let model = Arc::new(loaded.model.clone());
    let nworlds = 4;
    let initial = State::new(loaded.q0.clone(), nalgebra::DVector::zeros(model.nv));
    let run = |backend: Backend| -> Option<Vec<(f64, usize)>> {
        let options = BatchOptions {
            backend,
            params: SimParams {
                dt: loaded.timestep,
                solver: SolverKind::NcpAdmm,
                solver_settings: settings(1e-6, 500),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut batch = match BatchSim::new(model.clone(), &initial, nworlds, &options) {
            Ok(b) => b,
            Err(e) if backend == Backend::Gpu => {
                assert!(
                    std::env::var("MOREAU_REQUIRE_GPU").as_deref() != Ok("1"),
                    "GPU backend required: {e}"
                );
                eprintln!("SKIPPED (no GPU): {e}");
                return None;
            }
            Err(e) => panic!("{e}"),
        };
        let ctrl = vec![0.0; nworlds * model.nu()];
        let mut last = None;
        for _ in 0..200 {
            let r = batch.step_controls(&ctrl).unwrap();
            assert!(r.failed.is_empty(), "{:?}", r.failed);
            assert!(r.fallbacks.is_empty(), "{:?}", r.fallbacks);
            last = Some(r);
        }
        let r = last.unwrap();
        assert_eq!(r.contacts, 4 * nworlds, "four feet per world");
        Some(batch.states().map(|s| (s.q[2], r.contacts)).collect())
    };
    let cpu = run(Backend::CpuParallel).unwrap();
    let Some(gpu) = run(Backend::Gpu) else { return };
    for ((hc, _), (hg, _)) in cpu.iter().zip(&gpu) {
        eprintln!("ant torso after 2 s: CPU {hc:.6} m, GPU {hg:.6} m");
        assert!((hc - 0.6116).abs() < 5e-3, "CPU ant at {hc}");
        assert!((hc - hg).abs() < 1e-3, "CPU {hc} vs GPU {hg}");
    }
}

/// The mixed batch's problems with rows of every set: row `l` after the
/// contacts is unilateral, bilateral or a box (`[−0.3, 0.3]` on even
/// rows, which the random free velocities saturate, `[−3, 3]` else), in
/// turn.
fn sets_batch() -> Vec<ContactProblem> {
    let mut problems = mixed_batch();
    for p in problems.iter_mut().filter(|p| p.nl() > 0) {
        p.row_sets = (0..p.nl())
            .map(|l| match l % 3 {
                0 => RowSet::Unilateral,
                1 => RowSet::Bilateral,
                _ => RowSet::Box(if l % 2 == 0 { 0.3 } else { 3.0 }),
            })
            .collect();
    }
    problems
}

/// ε_abs in f64 of `lambda` under `kind`'s model and the rows' own sets.
fn f64_eps_sets(kind: SolverKind, p: &ContactProblem, lambda: &[f64]) -> f64 {
    let Some(model) = kind.contact_model(&SolverSettings::default()) else {
        return 0.0;
    };
    let mut c = vec![0.0; p.m()];
    p.contact_velocity(lambda, &mut c);
    rows_residuals(model, &p.mu, &p.row_sets, lambda, &c).eps_abs
}

#[test]
fn bilateral_and_box_rows_are_solved_on_the_gpu_as_on_the_cpu() {
    let problems = sets_batch();
    // The batch exercises every piece: bilateral rows, boxes inside and on
    // their bounds, unilateral rows pushing and open (the f64 NCP solution).
    let mut counts = [0usize; 4];
    let mut solver = SolverKind::NcpAdmm.build();
    for p in &problems {
        let mut sol = ContactSolution::default();
        solver.solve(p, &settings(1e-10, 10_000), &mut sol).unwrap();
        assert!(sol.stats.converged);
        for l in 0..p.nl() {
            let x = sol.lambda[3 * p.nc() + l];
            match p.row_set(l) {
                RowSet::Bilateral => counts[0] += 1,
                RowSet::Box(b) if (x.abs() - b).abs() < 1e-9 => counts[1] += 1,
                RowSet::Box(_) => counts[2] += 1,
                RowSet::Unilateral => counts[3] += (x > 1e-6) as usize,
                RowSet::Cone(_) => panic!("no contact here has cone rows"),
            }
        }
    }
    eprintln!(
        "rows: {} bilateral, {} boxes on a bound, {} inside, {} unilateral pushing",
        counts[0], counts[1], counts[2], counts[3]
    );
    assert!(counts.iter().all(|&n| n >= 3), "{counts:?}");
    // The sets travel after G's triangle: the capacity counts them.
    let cap = BatchCapacity::for_problems(&problems);
    let mut batch = HostBatch::for_capacity(&cap);
    for p in &problems {
        batch.push(p, 100, TOL);
    }
    assert_eq!(
        batch.check_capacity(&cap).map_err(|e| e.to_string()),
        Ok(())
    );
    let with_sets = batch.headers().iter().filter(|h| h.row_bounds != 0).count();
    assert_eq!(
        with_sets,
        problems.iter().filter(|p| !p.all_unilateral()).count()
    );
    // A box bound f32 cannot hold is refused, the problem flagged.
    let mut huge = problems[1].clone();
    huge.row_sets[2] = RowSet::Box(1e39);
    let mut refused = HostBatch::for_capacity(&BatchCapacity::for_problems(&[huge.clone()]));
    refused.push(&huge, 100, TOL);
    assert_eq!(refused.headers()[0].flags, FLAG_INVALID);
    let Some(ctx) = GpuContext::for_tests() else {
        return;
    };
    // Every kernel, the kernels' algorithm (no finishers), then ncp-admm
    // as the simulator runs it (polish and Newton on).
    let plain = settings(TOL, 5000);
    let finished = SolverSettings {
        tolerance: TOL,
        max_iterations: 5000,
        ..Default::default()
    };
    let runs = gpu_kinds()
        .map(|k| (k, plain, "kernels' algorithm"))
        .chain([(SolverKind::NcpAdmm, finished, "polish and Newton")]);
    for (kind, s, how) in runs {
        // (ADMM's workgroup kernel runs the same per-unit projections,
        // residuals and finisher steps as the invocation kernel; compiling
        // it here would add 40 s to CI's cold shader cache. It passed this
        // test when run once, 2026-12-02.)
        let decompositions: &[Decomposition] = if kind.name().contains("admm") {
            &[Decomposition::Invocation]
        } else {
            &Decomposition::ALL
        };
        let mut cpu = kind.build();
        for &decomposition in decompositions {
            let mut gpu = GpuSolver::with_decomposition(&ctx, kind, cap, decomposition).unwrap();
            for layout in Layout::ALL {
                let mut polished_on_bounds = 0;
                let label = format!(
                    "{} ({}, {}, {how})",
                    kind.name(),
                    decomposition.name(),
                    layout.name()
                );
                gpu.set_layout(layout);
                let mut out = BatchOutput::default();
                gpu.solve_batch(&batch, &s, &mut out).unwrap();
                let (mut worst_eps, mut worst_twin) = (0.0f64, 0.0f64);
                for (i, p) in problems.iter().enumerate() {
                    let o = out.problem(i);
                    let what = format!("{label}: problem {i} (nc {}, nl {})", p.nc(), p.nl());
                    assert_eq!(o.flags(), 0, "{what}: {:?}", flag_names(o.flags()));
                    assert!(o.converged(), "{what}: {:?}", o.result);
                    let l: Vec<f64> = o.lambda.iter().map(|&x| x as f64).collect();
                    for k in 3 * p.nc()..p.m() {
                        // (In the set with its bounds in f32, as the kernel holds them.)
                        let set = p.row_set(k - 3 * p.nc());
                        let (lo, hi) = set.bounds();
                        let x = o.lambda[k];
                        assert!(
                            lo as f32 <= x && x <= hi as f32,
                            "{what}: row {k} λ = {x} outside its set {set:?}"
                        );
                    }
                    // The GPU λ solves the problem, judged in f64 with the rows' sets.
                    let eps = f64_eps_sets(kind, p, &l);
                    worst_eps = worst_eps.max(eps);
                    assert!(eps <= 10.0 * TOL, "{what}: f64 ε_abs {eps:e}");
                    // The same algorithm in f64 at the same tolerance.
                    let mut twin = ContactSolution::default();
                    cpu.solve(p, &s, &mut twin).unwrap();
                    assert!(twin.stats.converged, "{what}: CPU twin");
                    let r = rel(&l, twin.lambda.as_slice());
                    worst_twin = worst_twin.max(r);
                    assert!(r <= REL_TWIN, "{what}: |λ_gpu − λ_cpu| / |λ_cpu| = {r:e}");
                    // Solves that the polish or Newton ended with a box on its bound.
                    let on_bound = (0..p.nl()).any(|l| {
                        matches!(p.row_set(l), RowSet::Box(b) if (o.lambda[3 * p.nc() + l] as f64).abs() >= b as f32 as f64)
                    });
                    polished_on_bounds += (o.result.polishes > 0 && on_bound) as usize;
                }
                eprintln!(
                    "{label}: {} problems with bilateral and box rows, worst f64 ε_abs {worst_eps:.2e}, worst λ vs CPU twin {worst_twin:.2e}, {polished_on_bounds} ended by a finisher with a box on its bound",
                    problems.len()
                );
                if s.polish {
                    assert!(
                        polished_on_bounds > 0,
                        "{label}: no finisher met a box on its bound"
                    );
                }
                if has_f32_twin(kind) && layout == Layout::Packed {
                    let mut twin = BatchOutput::default();
                    solve_batch_f32(kind, &batch, &s, &mut twin).unwrap();
                    for i in 0..problems.len() {
                        let (x, y) = (out.problem(i), twin.problem(i));
                        assert_eq!(y.flags(), 0);
                        assert!(
                            x.result.iterations.abs_diff(y.result.iterations) <= 1,
                            "{label}: problem {i}: GPU {} iterations, f32 twin {}",
                            x.result.iterations,
                            y.result.iterations
                        );
                        let r = rel(x.lambda_f64().as_slice(), y.lambda_f64().as_slice());
                        assert!(r <= REL_F32, "{label}: problem {i}: λ vs f32 twin {r:e}");
                    }
                }
            }
        }
    }
}

/// A loop closed by `connect` (3 bilateral rows), two hinges coupled by a
/// joint equality, dry friction on two inclined slides (one held, one
/// sliding) and a box dropped on the floor (contacts), in one model.
const ROWS_XML: &str = r#"<mujoco model="rows">
  <option timestep="0.002"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="a" pos="0 0 2">
      <joint name="hinge_a" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.04" mass="1" contype="0" conaffinity="0"/>
    </body>
    <body name="b" pos="0.5 0 2">
      <freejoint/>
      <geom type="capsule" fromto="0 0 0 0.3 0 -0.3" size="0.04" mass="0.5" contype="0" conaffinity="0"/>
    </body>
    <body name="w1" pos="0 1 2">
      <joint name="w1" type="hinge" axis="0 1 0"/>
      <geom type="sphere" pos="0.2 0 0" size="0.05" mass="1" contype="0" conaffinity="0"/>
    </body>
    <body name="w2" pos="1 1 2">
      <joint name="w2" type="hinge" axis="0 1 0"/>
      <geom type="sphere" pos="0 0 0.2" size="0.05" mass="1" contype="0" conaffinity="0"/>
    </body>
    <body name="held" pos="0 -1 1">
      <joint name="held" type="slide" axis="1 0 1" frictionloss="20"/>
      <geom type="sphere" size="0.05" mass="2" contype="0" conaffinity="0"/>
    </body>
    <body name="sliding" pos="1 -1 1">
      <joint name="sliding" type="slide" axis="1 0 1" frictionloss="3"/>
      <geom type="sphere" size="0.05" mass="2" contype="0" conaffinity="0"/>
    </body>
    <body name="box" pos="2 0 0.3">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.1" mass="1"/>
    </body>
  </worldbody>
  <equality>
    <connect body1="a" body2="b" anchor="0.5 0 0"/>
    <joint joint1="w2" joint2="w1" polycoef="0 0.5 0 0 0"/>
  </equality>
</mujoco>"#;

#[test]
fn batch_sim_steps_equalities_and_dry_friction_on_the_gpu_as_on_the_cpu() {
    let loaded = parse_mjcf(
        ROWS_XML,
        "rows.xml",
        Path::new("."),
        &MjcfOptions::default(),
    )
    .unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let model = Arc::new(loaded.model.clone());
    assert!(model.constraint_features().is_some());
    let jq =
        |name: &str| model.joint_idx_q[model.joint_name.iter().position(|n| n == name).unwrap()];
    let (held, sliding, w1, w2) = (jq("held"), jq("sliding"), jq("w1"), jq("w2"));
    let nworlds = 3;
    let steps = 250;
    let initial = State::new(loaded.q0.clone(), nalgebra::DVector::zeros(model.nv));
    let run = |backend: Backend| -> Option<(Vec<State>, Option<String>)> {
        let options = BatchOptions {
            backend,
            params: SimParams {
                dt: loaded.timestep,
                solver: SolverKind::NcpAdmm,
                solver_settings: SolverSettings {
                    tolerance: 1e-6,
                    ..Default::default()
                },
                ..Default::default()
            },
            ..Default::default()
        };
        let mut batch = match BatchSim::new(model.clone(), &initial, nworlds, &options) {
            Ok(b) => b,
            Err(e) if backend.uses_gpu() => {
                assert!(
                    std::env::var("MOREAU_REQUIRE_GPU").as_deref() != Ok("1"),
                    "GPU backend required: {e}"
                );
                eprintln!("SKIPPED (no GPU): {e}");
                return None;
            }
            Err(e) => panic!("{e}"),
        };
        assert!(!batch.is_resident());
        for w in 0..nworlds {
            let mut s = initial.clone();
            s.q[w1] = 0.1 * w as f64;
            s.q[w2] = 0.05 * w as f64;
            batch.set_state(w, s).unwrap();
        }
        let actions = vec![0.0; nworlds * model.nv];
        for _ in 0..steps {
            let r = batch.step(&actions).unwrap();
            assert!(r.failed.is_empty(), "{:?}", r.failed);
            assert!(r.fallbacks.is_empty(), "{:?}", r.fallbacks);
            assert_eq!(r.unconverged, 0, "{backend}");
        }
        Some((
            batch.states().cloned().collect(),
            batch.notice().map(String::from),
        ))
    };
    let (cpu, _) = run(Backend::CpuSingle).unwrap();
    let t = steps as f64 * loaded.timestep;
    for (w, s) in cpu.iter().enumerate() {
        // Held below its friction (2·9.81/√2 = 13.9 N < 20 N), sliding above
        // it (a = (13.9 − 3)/2 m/s² along the axis, down: q < 0; semi-implicit
        // Euler's q after n steps is a·dt²·n(n + 1)/2 = a t (t + dt)/2).
        assert!(
            s.q[held].abs() < 1e-6,
            "world {w}: held slide at {}",
            s.q[held]
        );
        let expected = -0.5 * (2.0 * 9.81 / 2f64.sqrt() - 3.0) / 2.0 * t * (t + loaded.timestep);
        assert!(
            (s.q[sliding] - expected).abs() < 1e-9,
            "world {w}: slide {} against {expected}",
            s.q[sliding]
        );
        // The coupling holds the joint equality.
        assert!(
            (s.q[w2] - 0.5 * s.q[w1]).abs() < 1e-6,
            "world {w}: {} {}",
            s.q[w1],
            s.q[w2]
        );
    }
    for backend in [Backend::GpuSolve, Backend::Gpu] {
        let Some((gpu, notice)) = run(backend) else {
            return;
        };
        if backend == Backend::Gpu {
            let notice = notice.expect("the gpu backend says why it runs the host-prepared path");
            assert!(notice.contains("equality"), "{notice}");
        }
        let dq = cpu
            .iter()
            .zip(&gpu)
            .map(|(a, b)| (&a.q - &b.q).amax())
            .fold(0.0, f64::max);
        eprintln!(
            "rows on {backend}: {nworlds} worlds × {steps} steps: max |q_gpu − q_cpu| = {dq:.2e}"
        );
        assert!(dq < 1e-3, "{backend}: GPU and CPU differ by {dq:e}");
        for s in &gpu {
            assert!(
                s.q[held].abs() < 1e-4,
                "{backend}: held slide at {}",
                s.q[held]
            );
            assert!(
                (s.q[w2] - 0.5 * s.q[w1]).abs() < 1e-4,
                "{backend}: coupling {} {}",
                s.q[w1],
                s.q[w2]
            );
        }
    }
}
