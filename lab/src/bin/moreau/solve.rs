//! `moreau solve`: problem files through a solver, on the CPU or the GPU, one
//! JSON line per problem.

use super::*;

/// One output line of `moreau solve` (a struct, so that the keys keep this order).
#[derive(serde::Serialize)]
pub(crate) struct SolveLine<'a> {
    problem: usize,
    nc: usize,
    solver: &'a str,
    model: &'a str,
    lambda: &'a [f64],
    c: &'a [f64],
    iterations: usize,
    converged: bool,
    #[serde(flatten)]
    eps: Eps,
    time_us: f64,
}

/// The residuals of a line: the solver's own model's, then the NCP's `ε_abs`.
#[derive(serde::Serialize)]
struct Eps {
    eps_abs: f64,
    eps_p: f64,
    eps_d: f64,
    eps_c: f64,
    eps_ncp: f64,
}

impl Eps {
    fn new(own: moreau::contact::Residuals, ncp: moreau::contact::Residuals) -> Self {
        Eps {
            eps_abs: own.eps_abs,
            eps_p: own.primal,
            eps_d: own.dual,
            eps_c: own.complementarity,
            eps_ncp: ncp.eps_abs,
        }
    }
}

/// `moreau solve`: every problem is read and validated before the first solve.
pub(crate) fn solve(
    file: &std::path::Path,
    kind: SolverKind,
    (tol, max_iter, (polish, newton)): (f64, usize, (bool, bool)),
    device: Device,
) -> Result<(), AnyError> {
    let settings = SolverSettings {
        tolerance: tol,
        max_iterations: max_iter,
        polish,
        newton,
        ..Default::default()
    };
    if let Err(e) = settings.validate() {
        return Err(format!("--tol {tol}: {e}").into());
    }
    let problems = read_problems(file)?;
    if device == Device::Gpu {
        return solve_gpu(file, &problems, kind, &settings);
    }
    let own_model = kind.contact_model(&settings);
    let model = study::model_name(own_model);
    let mut solver = kind.build();
    let mut sol = ContactSolution::default();
    let mut stdout = std::io::stdout().lock();
    for (i, p) in problems.iter().enumerate() {
        let start = Instant::now();
        let solved = solver.solve(p, &settings, &mut sol);
        let time_us = start.elapsed().as_secs_f64() * 1e6;
        solved.map_err(|e| {
            format!(
                "{}: problem {i}: solver {}: {e}",
                file.display(),
                kind.name()
            )
        })?;
        // Residuals of the returned lambda with c recomputed from the problem,
        // so that a solver's own bookkeeping is not taken on trust.
        let eval = evaluate(p, own_model, sol.lambda.as_slice());
        let (c, ncp) = (&eval.c, eval.ncp);
        let res = eval.model.unwrap_or(sol.stats.residuals);
        let line = serde_json::to_string(&SolveLine {
            problem: i,
            nc: p.nc(),
            solver: kind.name(),
            model: &model,
            lambda: sol.lambda.as_slice(),
            c,
            iterations: sol.stats.iterations,
            converged: sol.stats.converged,
            eps: Eps::new(res, ncp),
            time_us,
        })?;
        if writeln!(stdout, "{line}").is_err() {
            break; // stdout closed (e.g. piped into `head`)
        }
    }
    Ok(())
}

/// `moreau solve --device gpu`: every problem in one batch.
pub(crate) fn solve_gpu(
    file: &std::path::Path,
    problems: &[moreau::contact::ContactProblem],
    kind: SolverKind,
    settings: &SolverSettings,
) -> Result<(), AnyError> {
    use moreau::gpu::{BatchCapacity, BatchOutput, GpuContext, GpuSolver, flag_names};
    moreau::gpu::check_kernel(kind)?;
    let ctx = GpuContext::new()?;
    let mut solver = GpuSolver::new(&ctx, kind, BatchCapacity::for_problems(problems))?;
    let mut out = BatchOutput::default();
    let start = Instant::now();
    solver.solve(problems, settings, &mut out)?;
    let time_us = start.elapsed().as_secs_f64() * 1e6 / problems.len().max(1) as f64;
    let own_model = kind.contact_model(settings);
    let model = study::model_name(own_model);
    let mut flagged = Vec::new();
    let mut stdout = std::io::stdout().lock();
    for (i, p) in problems.iter().enumerate() {
        let o = out.problem(i);
        if o.flags() != 0 {
            flagged.push(format!("problem {i}: {}", flag_names(o.flags()).join(", ")));
            continue;
        }
        let lambda: Vec<f64> = o.lambda.iter().map(|&x| x as f64).collect();
        let Evaluation { c, model: own, ncp } = evaluate(p, own_model, &lambda);
        // raisim: its own stopping residual, from the kernel.
        let res = own.unwrap_or(moreau::contact::Residuals {
            primal: o.result.primal as f64,
            dual: o.result.dual as f64,
            complementarity: o.result.complementarity as f64,
            eps_abs: o.result.eps_abs as f64,
        });
        let line = serde_json::to_string(&SolveLine {
            problem: i,
            nc: p.nc(),
            solver: kind.name(),
            model: &model,
            lambda: &lambda,
            c: &c,
            iterations: o.result.iterations as usize,
            converged: o.converged(),
            eps: Eps::new(res, ncp),
            time_us,
        })?;
        if writeln!(stdout, "{line}").is_err() {
            break;
        }
    }
    if !flagged.is_empty() {
        return Err(format!(
            "{}: solver {} on {}: {}",
            file.display(),
            kind.name(),
            ctx.adapter.name,
            flagged.join("; ")
        )
        .into());
    }
    Ok(())
}
