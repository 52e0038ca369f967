use crate::error::ProblemError;
use nalgebra::{DMatrix, DVector};
use std::cell::Cell;

thread_local! {
    /// Set while the simulator solves a problem it assembled itself.
    static BUILT_BY_SIMULATOR: Cell<bool> = const { Cell::new(false) };
}

/// While alive, [`ContactProblem::validate`] on this thread trusts the
/// problem's construction (release builds): the simulator assembles `G`
/// symmetric by construction from a finite state, so the `O(m²)` symmetry,
/// finiteness and diagonal checks of `G` leave the hot path. The `O(m)`
/// checks stay, and debug builds check everything. Problems from files and
/// users never run under it.
pub(crate) struct BuiltBySimulator(bool);

impl BuiltBySimulator {
    pub(crate) fn enter() -> Self {
        BuiltBySimulator(BUILT_BY_SIMULATOR.with(|b| b.replace(true)))
    }
}

impl Drop for BuiltBySimulator {
    fn drop(&mut self) {
        let previous = self.0;
        BUILT_BY_SIMULATOR.with(|b| b.set(previous));
    }
}

/// `got == expected`, or the mismatch naming `what`.
fn dimension(what: &'static str, got: usize, expected: usize) -> Result<(), ProblemError> {
    if got != expected {
        return Err(ProblemError::DimensionMismatch {
            what,
            got,
            expected,
        });
    }
    Ok(())
}

/// A constraint problem: `nc` frictional contacts followed by `nl` unilateral
/// constraints (joint limits), `m = 3·nc + nl` unknowns:
///
/// find `λ ∈ K` with `c = (G + R) λ + g` and `K ∋ λ ⟂ c + Γ(c) ∈ K*`,
///
/// where `K` is the product of the blocks' cones, as in Pinocchio 4's and
/// Simple's constraint problems:
/// - rows `3i..3i+3` (contact `i < nc`): the friction cone `K_μᵢ` in the
///   contact frame `[t1, t2, n]`, with de Saxcé's correction `Γ`;
/// - row `3·nc + l` (unilateral constraint `l < nl`): the 1-D cone `ℝ₊`,
///   i.e. `λ ≥ 0 ⟂ c ≥ 0`, which is its own dual and has no correction.
///
/// The number of contacts is `mu.len()`; every row after `3·nc` is a
/// unilateral one.
/// `g` already contains the stabilization terms added by the simulator
/// (see [`crate::sim::SimParams`]): it is the contact velocity that the
/// impulses must correct.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContactProblem {
    /// (m, m) Delassus matrix `G = J M⁻¹ Jᵀ`, symmetric positive semi-definite.
    pub delassus: DMatrix<f64>,
    /// (m) free contact velocity.
    pub g: DVector<f64>,
    /// (nc) friction coefficients of the contacts (the first `3·nc` rows).
    pub mu: Vec<f64>,
    /// (m) diagonal compliance `R` (zero: rigid contact). A numerical
    /// regularization: contacts then obey `c = (G + R)λ + g`.
    pub compliance: DVector<f64>,
    /// (m) initial guess for `λ` (zero: cold start).
    pub warm_start: DVector<f64>,
}

impl ContactProblem {
    /// A rigid, cold-started problem; validated.
    pub fn new(
        delassus: DMatrix<f64>,
        g: DVector<f64>,
        mu: Vec<f64>,
    ) -> Result<Self, ProblemError> {
        let m = g.len();
        let p = ContactProblem {
            delassus,
            g,
            mu,
            compliance: DVector::zeros(m),
            warm_start: DVector::zeros(m),
        };
        p.validate()?;
        Ok(p)
    }

    /// Number of contacts.
    pub fn nc(&self) -> usize {
        self.mu.len()
    }

    /// Number of unilateral rows (after the contacts' `3·nc`).
    pub fn nl(&self) -> usize {
        self.g.len().saturating_sub(3 * self.mu.len())
    }

    /// Number of unknowns `m = 3·nc + nl`.
    pub fn m(&self) -> usize {
        self.g.len()
    }

    /// Resizes every field for `nc` contacts and `nl` unilateral rows,
    /// keeping allocations where possible; contents are zeroed.
    pub fn resize(&mut self, nc: usize, nl: usize) {
        self.resize_without_delassus(nc, nl);
        let m = 3 * nc + nl;
        super::linalg::reshape_zeroed(&mut self.delassus, m, m);
    }

    /// [`Self::resize`] for a problem whose `G` is given as its factors
    /// ([`super::TreeDelassus`]): `delassus` becomes empty (0 × 0).
    pub fn resize_without_delassus(&mut self, nc: usize, nl: usize) {
        use super::linalg::{reshape_vector_zeroed, reshape_zeroed};
        let m = 3 * nc + nl;
        reshape_zeroed(&mut self.delassus, 0, 0);
        reshape_vector_zeroed(&mut self.g, m);
        reshape_vector_zeroed(&mut self.compliance, m);
        reshape_vector_zeroed(&mut self.warm_start, m);
        self.mu.clear();
        self.mu.resize(nc, 0.0);
    }

    /// Checks sizes, finiteness, `μ ≥ 0`, `R ≥ 0`, symmetry of `G` and a
    /// non-negative diagonal (a cheap necessary condition for PSD; the
    /// solvers report a failed factorization as `NotPsd`).
    pub fn validate(&self) -> Result<(), ProblemError> {
        let m = self.g.len();
        self.validate_vectors(m)?;
        dimension("delassus rows", self.delassus.nrows(), m)?;
        dimension("delassus columns", self.delassus.ncols(), m)?;
        self.check_delassus()
    }

    /// The `O(m)` checks of [`Self::validate`], for a problem of `m` rows
    /// whose `G` is given otherwise ([`super::TreeDelassus`]): sizes,
    /// finiteness, `μ ≥ 0`, `R ≥ 0`. `delassus` is not read.
    pub fn validate_vectors(&self, m: usize) -> Result<(), ProblemError> {
        if m < 3 * self.mu.len() {
            return Err(ProblemError::DimensionMismatch {
                what: "constraint rows (3 per contact, then the unilateral rows)",
                got: m,
                expected: 3 * self.mu.len(),
            });
        }
        dimension("g", self.g.len(), m)?;
        dimension("compliance", self.compliance.len(), m)?;
        dimension("warm_start", self.warm_start.len(), m)?;
        for (i, &mu) in self.mu.iter().enumerate() {
            if !(mu.is_finite() && mu >= 0.0) {
                return Err(ProblemError::BadFriction { contact: i, mu });
            }
        }
        let finite = |what, v: &[f64]| match v.iter().position(|x| !x.is_finite()) {
            Some(index) => Err(ProblemError::NonFinite { what, index }),
            None => Ok(()),
        };
        finite("g", self.g.as_slice())?;
        finite("compliance", self.compliance.as_slice())?;
        finite("warm_start", self.warm_start.as_slice())?;
        if let Some(i) = self.compliance.iter().position(|&r| r < 0.0) {
            return Err(ProblemError::BadCompliance {
                index: i,
                value: self.compliance[i],
            });
        }
        Ok(())
    }

    /// `G`'s `O(m²)` checks (skipped in release builds for the simulator's
    /// own problems, see [`BuiltBySimulator`]).
    fn check_delassus(&self) -> Result<(), ProblemError> {
        let m = self.g.len();
        if !cfg!(debug_assertions) && BUILT_BY_SIMULATOR.with(|b| b.get()) {
            return Ok(());
        }
        if let Some(index) = self.delassus.iter().position(|x| !x.is_finite()) {
            return Err(ProblemError::NonFinite {
                what: "delassus",
                index,
            });
        }
        let scale = self.delassus.amax().max(f64::MIN_POSITIVE);
        for i in 0..m {
            if self.delassus[(i, i)] < -1e-12 * scale {
                return Err(ProblemError::NotPsd {
                    index: i,
                    value: self.delassus[(i, i)],
                });
            }
            for j in 0..i {
                let d = self.delassus[(i, j)] - self.delassus[(j, i)];
                if d.abs() > 1e-9 * scale {
                    return Err(ProblemError::NotSymmetric {
                        row: i,
                        col: j,
                        diff: d,
                    });
                }
            }
        }
        Ok(())
    }

    /// MuJoCo-like compliance `R = α·diag(G)` (replacing the current `R`), a
    /// numerical regularization that makes `G + R` positive definite; the
    /// contacts then obey `c = (G + R)λ + g`, so they yield at the velocity
    /// `Rλ` (and, with Baumgarte stabilization, settle at a penetration
    /// proportional to `α`). `alpha` must be finite and non-negative.
    pub fn set_diagonal_compliance(&mut self, alpha: f64) -> Result<(), ProblemError> {
        if !(alpha.is_finite() && alpha >= 0.0) {
            return Err(ProblemError::InvalidSetting {
                name: "compliance",
                reason: format!("α must be finite and ≥ 0, got {alpha}"),
            });
        }
        self.validate()?;
        for i in 0..self.g.len() {
            self.compliance[i] = alpha * self.delassus[(i, i)].max(0.0);
        }
        Ok(())
    }

    /// `c = (G + R) λ + g`. `lambda`, `c`: (m).
    pub fn contact_velocity(&self, lambda: &[f64], c: &mut [f64]) {
        let m = self.g.len();
        for i in 0..m {
            c[i] = self.g[i] + self.compliance[i] * lambda[i];
        }
        for j in 0..m {
            let lj = lambda[j];
            if lj == 0.0 {
                continue;
            }
            let col = self.delassus.column(j);
            for i in 0..m {
                c[i] += col[i] * lj;
            }
        }
    }
}
