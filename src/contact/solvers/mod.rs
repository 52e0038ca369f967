//! Contact solvers. Each takes a [`ContactProblem`] and fills a
//! [`ContactSolution`] (`λ`, `c` and [`SolverStats`]); none reads the model.
//! Every solver stops when `ε_abs` (see [`crate::contact::criteria`]) falls
//! below `SolverSettings::tolerance` or after `max_iterations`.

mod admm;
mod pgs;

pub use admm::NcpAdmm;
pub use pgs::NcpPgs;

use super::{ContactProblem, Residuals};
use crate::error::ProblemError;
use nalgebra::DVector;
use std::str::FromStr;

/// Stopping and tuning parameters shared by the solvers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolverSettings {
    pub max_iterations: usize,
    /// Target `ε_abs`.
    pub tolerance: f64,
    /// Over-relaxation factor (1 = none); used by ADMM (relaxed x-update) and PGS.
    pub over_relaxation: f64,
    /// ADMM: initial penalty `ρ`; `None` picks it from the spectrum of `G`.
    pub rho: Option<f64>,
    /// ADMM: adapt `ρ` by residual balancing (refactorizing `G + R + ρI`).
    pub adaptive_rho: bool,
}

impl Default for SolverSettings {
    fn default() -> Self {
        SolverSettings {
            max_iterations: 1000,
            tolerance: 1e-8,
            over_relaxation: 1.0,
            rho: None,
            adaptive_rho: true,
        }
    }
}

/// What a solve did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SolverStats {
    pub iterations: usize,
    pub converged: bool,
    /// Residuals of the returned `(λ, c)`.
    pub residuals: Residuals,
    /// ADMM: final `ρ` (0 for other solvers).
    pub rho: f64,
    /// ADMM: number of `ρ` changes (each a refactorization).
    pub rho_updates: usize,
}

/// A solution: `λ` and `c = (G + R) λ + g`, both (3·nc), with stats.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContactSolution {
    pub lambda: DVector<f64>,
    pub c: DVector<f64>,
    pub stats: SolverStats,
}

impl ContactSolution {
    pub(crate) fn resize(&mut self, m: usize) {
        super::linalg::reshape_vector_zeroed(&mut self.lambda, m);
        super::linalg::reshape_vector_zeroed(&mut self.c, m);
        self.stats = SolverStats::default();
    }
}

/// A contact solver with its own reusable workspace.
pub trait ContactSolver: Send {
    fn name(&self) -> &'static str;
    /// Solves `problem` (validated first) into `out`.
    fn solve(
        &mut self,
        problem: &ContactProblem,
        settings: &SolverSettings,
        out: &mut ContactSolution,
    ) -> Result<(), ProblemError>;
    /// ADMM's penalty from the last solve, to warm start the next one.
    fn last_rho(&self) -> Option<f64> {
        None
    }
}

/// The solvers a user can pick by name (`--solver NAME`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SolverKind {
    /// NCP via ADMM with de Saxcé's correction and adaptive ρ (the default).
    NcpAdmm,
    /// NCP via projected Gauss-Seidel (per-contact, horizontal cone projection).
    NcpPgs,
}

impl SolverKind {
    pub const ALL: [SolverKind; 2] = [SolverKind::NcpAdmm, SolverKind::NcpPgs];
    pub fn name(&self) -> &'static str {
        match self {
            SolverKind::NcpAdmm => "ncp-admm",
            SolverKind::NcpPgs => "ncp-pgs",
        }
    }
    pub fn build(&self) -> Box<dyn ContactSolver> {
        match self {
            SolverKind::NcpAdmm => Box::new(NcpAdmm::default()),
            SolverKind::NcpPgs => Box::new(NcpPgs::default()),
        }
    }
}

impl FromStr for SolverKind {
    type Err = ProblemError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SolverKind::ALL
            .iter()
            .copied()
            .find(|k| k.name() == s)
            .ok_or_else(|| ProblemError::UnknownSolver {
                name: s.into(),
                known: SolverKind::ALL
                    .iter()
                    .map(|k| k.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}
