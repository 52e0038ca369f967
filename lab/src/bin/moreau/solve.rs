//! `moreau solve`: problem files through a solver, on the CPU or the GPU, one
//! JSON line per problem.

use super::*;
use moreau::batch::solve::solve_problems;

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
    newton_steps: usize,
    fallback_sweeps: usize,
    converged: bool,
    /// f32's floor under the solver's `ε_abs` (the GPU's ADMM; 0 on the
    /// CPU), and whether the solve ended short of its tolerance within it.
    eps_floor: f64,
    at_floor: bool,
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
    (tol, max_iter, (polish, newton, scaled_rho)): (f64, usize, (bool, bool, bool)),
    device: Device,
) -> Result<(), AnyError> {
    let settings = SolverSettings {
        tolerance: tol,
        max_iterations: max_iter,
        polish,
        newton,
        scaled_rho,
        ..Default::default()
    };
    if let Err(e) = settings.validate() {
        return Err(format!("--tol {tol}: {e}").into());
    }
    let problems = read_problems(file)?;
    let backend = match device {
        Device::Gpu => Backend::Gpu,
        Device::Cpu => Backend::CpuSingle,
    };
    let solved = solve_problems(&problems, kind, &settings, backend)
        .map_err(|e| format!("{}: solver {}: {e}", file.display(), kind.name()))?;
    let own_model = kind.contact_model(&settings);
    let model = study::model_name(own_model);
    let mut stdout = std::io::stdout().lock();
    for (i, (p, s)) in problems.iter().zip(&solved).enumerate() {
        // Residuals of the returned lambda with c recomputed from the problem,
        // so that a solver's own bookkeeping is not taken on trust (raisim,
        // which solves no cone problem: its own stopping residual).
        let Evaluation { c, model: own, ncp } = evaluate(p, own_model, &s.lambda);
        let line = serde_json::to_string(&SolveLine {
            problem: i,
            nc: p.nc(),
            solver: kind.name(),
            model: &model,
            lambda: &s.lambda,
            c: &c,
            iterations: s.iterations,
            newton_steps: s.newton_steps,
            fallback_sweeps: s.fallback_sweeps,
            converged: s.converged,
            eps_floor: s.eps_floor,
            at_floor: s.at_floor,
            eps: Eps::new(own.unwrap_or(s.residuals), ncp),
            time_us: s.time_us,
        })?;
        if writeln!(stdout, "{line}").is_err() {
            break; // stdout closed (e.g. piped into `head`)
        }
    }
    Ok(())
}
