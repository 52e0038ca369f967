//! Independent contact problems solved as one batch: on the CPU (one core,
//! or all of them) or by the GPU kernels in one submission. `moreau solve`
//! and the Python package's `moreau.solve` both call [`solve_problems`].

use super::Backend;
use crate::contact::{ContactProblem, ContactSolution, Residuals, SolverKind, SolverSettings};
use crate::error::ProblemError;
use crate::gpu::{
    BatchCapacity, BatchOutput, GpuContext, GpuError, GpuSolver, check_kernel, flag_names,
};
use rayon::prelude::*;
use std::time::Instant;
use thiserror::Error;

/// One problem's solution, in f64 (the GPU's f32 results widened).
#[derive(Clone, Debug, PartialEq)]
pub struct SolvedProblem {
    pub lambda: Vec<f64>,
    /// `c = (G + R)λ + g` as the solver returned it.
    pub c: Vec<f64>,
    pub iterations: usize,
    /// `ncp-admm`: semismooth Newton steps taken (see `SolverStats`).
    pub newton_steps: usize,
    /// `ncp-admm` (CPU): sweeps of the `ncp-pgs` fallback where
    /// ADMM reached its cap (see `SolverStats`).
    pub fallback_sweeps: usize,
    pub converged: bool,
    /// f32's floor under `ε_abs` at the returned λ (the GPU's ADMM; 0 on
    /// the CPU): see [`crate::contact::SolverStats::at_floor`].
    pub eps_floor: f64,
    /// Short of the tolerance within f32's floor (see `eps_floor`).
    pub at_floor: bool,
    /// The solver's own residuals (on the GPU, the kernel's).
    pub residuals: Residuals,
    /// Wall time of this problem's solve (µs); on the GPU, and on all CPU
    /// cores, the batch's time divided by its problems.
    pub time_us: f64,
}

/// Why a batch was not solved. Nothing is returned for any problem then.
#[derive(Debug, Error)]
pub enum SolveError {
    /// A problem the CPU solver refused (bad input), by index.
    #[error("problem {index}: {error}")]
    Problem { index: usize, error: ProblemError },
    /// No adapter, a solver without a kernel, a batch over the device's
    /// limits.
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// Problems the GPU flagged (not PSD, over capacity, a driver loop
    /// limit, ...), by index with the flags' names.
    #[error("flagged by the GPU solver: {}", flagged(.0))]
    Flagged(Vec<(usize, Vec<&'static str>)>),
}

fn flagged(problems: &[(usize, Vec<&'static str>)]) -> String {
    problems
        .iter()
        .map(|(k, names)| format!("problem {k}: {}", names.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Solves every problem with `kind` at `settings` on `backend`: `CpuSingle`
/// one after the other, `CpuParallel` on all cores (the same results, bit
/// for bit), `Gpu` in f32, all problems in one batch on a new context.
pub fn solve_problems(
    problems: &[ContactProblem],
    kind: SolverKind,
    settings: &SolverSettings,
    backend: Backend,
) -> Result<Vec<SolvedProblem>, SolveError> {
    let one = |(index, p): (usize, &ContactProblem)| {
        let mut s = ContactSolution::default();
        let start = Instant::now();
        kind.build()
            .solve(p, settings, &mut s)
            .map_err(|error| SolveError::Problem { index, error })?;
        Ok(SolvedProblem {
            lambda: s.lambda.as_slice().to_vec(),
            c: s.c.as_slice().to_vec(),
            iterations: s.stats.iterations,
            newton_steps: s.stats.newton_steps,
            fallback_sweeps: s.stats.fallback_sweeps,
            converged: s.stats.converged,
            eps_floor: s.stats.eps_floor,
            at_floor: s.stats.at_floor(),
            residuals: s.stats.residuals,
            time_us: start.elapsed().as_secs_f64() * 1e6,
        })
    };
    match backend {
        Backend::CpuSingle => problems.iter().enumerate().map(one).collect(),
        Backend::CpuParallel => {
            let start = Instant::now();
            let mut out: Vec<SolvedProblem> = problems
                .par_iter()
                .enumerate()
                .map(one)
                .collect::<Result<_, _>>()?;
            let each = start.elapsed().as_secs_f64() * 1e6 / problems.len().max(1) as f64;
            out.iter_mut().for_each(|s| s.time_us = each);
            Ok(out)
        }
        Backend::Gpu | Backend::GpuSolve => {
            check_kernel(kind)?;
            let ctx = GpuContext::new()?;
            let mut gpu = GpuSolver::new(&ctx, kind, BatchCapacity::for_problems(problems))?;
            let mut out = BatchOutput::default();
            let start = Instant::now();
            gpu.solve(problems, settings, &mut out)?;
            let each = start.elapsed().as_secs_f64() * 1e6 / problems.len().max(1) as f64;
            let mut flagged = Vec::new();
            let mut solved = Vec::with_capacity(problems.len());
            for k in 0..problems.len() {
                let p = out.problem(k);
                if p.flags() != 0 {
                    flagged.push((k, flag_names(p.flags())));
                    continue;
                }
                let r = &p.result;
                solved.push(SolvedProblem {
                    lambda: p.lambda.iter().map(|&x| f64::from(x)).collect(),
                    c: p.c.iter().map(|&x| f64::from(x)).collect(),
                    iterations: r.iterations as usize,
                    newton_steps: r.newton_steps as usize,
                    fallback_sweeps: 0,
                    converged: p.converged(),
                    eps_floor: f64::from(r.eps_floor),
                    at_floor: p.at_floor(),
                    residuals: Residuals {
                        primal: f64::from(r.primal),
                        dual: f64::from(r.dual),
                        complementarity: f64::from(r.complementarity),
                        eps_abs: f64::from(r.eps_abs),
                    },
                    time_us: each,
                });
            }
            if flagged.is_empty() {
                Ok(solved)
            } else {
                Err(SolveError::Flagged(flagged))
            }
        }
    }
}
