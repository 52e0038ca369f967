//! What a batch's solve returns: its λ, c and per-problem results
//! ([`BatchOutput`]), and one problem's view of them ([`ProblemOutput`]).

use super::batch::{GpuProblem, GpuResult};
use crate::contact::criteria::at_floor;

/// The results of a batch, read back from the device; reused across solves.
#[derive(Clone, Debug, Default)]
pub struct BatchOutput {
    /// (3·blocks) impulses, problem after problem (see the module's layout;
    /// [`Self::problem`] gives each problem's `m`).
    pub lambda: Vec<f32>,
    /// (3·blocks) contact velocities `(G + R)λ + g`, exact for the returned λ (in f32).
    pub c: Vec<f32>,
    /// (problems) per-problem stats and flags.
    pub results: Vec<GpuResult>,
    pub(crate) headers: Headers,
}

/// The problems' headers as solved, with the contact and row counts they
/// were declared with (a problem flagged by the host is solved as empty).
#[derive(Clone, Debug, Default)]
pub(crate) struct Headers {
    pub(crate) problems: Vec<GpuProblem>,
    pub(crate) declared_nc: Vec<u32>,
    pub(crate) declared_nl: Vec<u32>,
}

impl Headers {
    /// These headers, reusing the vectors.
    pub(crate) fn assign(&mut self, problems: &[GpuProblem], nc: &[u32], nl: &[u32]) {
        self.problems.clear();
        self.problems.extend_from_slice(problems);
        self.declared_nc.clear();
        self.declared_nc.extend_from_slice(nc);
        self.declared_nl.clear();
        self.declared_nl.extend_from_slice(nl);
    }
}

/// One problem's view of a [`BatchOutput`].
#[derive(Clone, Copy, Debug)]
pub struct ProblemOutput<'a> {
    /// Contacts of the problem as given (λ and c are empty when it was flagged by the host).
    pub nc: usize,
    /// Unilateral rows of the problem as given.
    pub nl: usize,
    pub lambda: &'a [f32],
    pub c: &'a [f32],
    pub result: GpuResult,
    /// The tolerance the problem was given.
    pub tolerance: f32,
}

impl ProblemOutput<'_> {
    pub fn flags(&self) -> u32 {
        self.result.flags
    }
    /// Solved without any flag and reached its tolerance.
    pub fn converged(&self) -> bool {
        // (A finished solve; unfinished ones are flagged by the solver.)
        self.result.flags == 0 && self.result.eps_abs <= self.tolerance
    }
    /// Solved without any flag, short of its tolerance but within
    /// [`FLOOR_STALL_FACTOR`](crate::contact::criteria::FLOOR_STALL_FACTOR) of f32's floor ([`GpuResult::eps_floor`]):
    /// as far as f32 goes, counted apart from the unconverged.
    pub fn at_floor(&self) -> bool {
        let r = &self.result;
        r.flags == 0 && !self.converged() && at_floor(r.eps_abs as f64, r.eps_floor as f64)
    }
    /// λ as f64.
    pub fn lambda_f64(&self) -> nalgebra::DVector<f64> {
        nalgebra::DVector::from_iterator(self.lambda.len(), self.lambda.iter().map(|&x| x as f64))
    }
}

impl BatchOutput {
    pub fn len(&self) -> usize {
        self.results.len()
    }
    pub fn is_empty(&self) -> bool {
        self.results.is_empty()
    }
    pub fn problem(&self, i: usize) -> ProblemOutput<'_> {
        let h = &self.headers.problems[i];
        let a = 3 * h.contact_offset as usize;
        let b = a + h.m();
        ProblemOutput {
            nc: self.headers.declared_nc[i] as usize,
            nl: self.headers.declared_nl.get(i).map_or(0, |&n| n as usize),
            lambda: &self.lambda[a..b],
            c: &self.c[a..b],
            result: self.results[i],
            tolerance: h.tolerance,
        }
    }
}
