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

/// The set a one-dimensional row's impulse lies in, with its law
/// `−c ∈ N_S(λ)` (`N_S` the normal cone of the set):
/// - [`RowSet::Unilateral`] `ℝ₊`: `λ ≥ 0 ⟂ c ≥ 0` (a joint or tendon limit);
/// - [`RowSet::Bilateral`] `ℝ`: `c = 0`, `λ` free (an equality constraint);
/// - [`RowSet::Box`] `[−b, b]`: `c = 0` while `|λ| < b`, else `λ = −b·sign(c)`
///   (dry friction on a dof, MJCF's `frictionloss`: the impulse opposes the
///   motion with at most `b`, the maximal dissipation of a 1-D friction).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum RowSet {
    #[default]
    Unilateral,
    Bilateral,
    /// `|λ| ≤ b`, `b ≥ 0` finite.
    Box(f64),
    /// A row of contact `i`'s friction cone beyond its three: the spin and
    /// rolling rows of MuJoCo's `condim` 4 and 6, scaled (by `μ_t/μ`,
    /// `μ_r/μ`) so that the contact's impulse lies in the second-order cone
    /// `‖(λ_t1, λ_t2, λ_rows…)‖ ≤ μ λ_N`, de Saxcé's correction taken over
    /// the same tangential rows. Projected with its contact, never alone:
    /// only the solvers that say so take it (`ncp-admm`, `ccp-admm`, `ncp-pgs`; the
    /// others refuse the problem by name).
    Cone(usize),
}

impl RowSet {
    /// `(lower, upper)` bounds of `λ` (infinite where unbounded).
    #[inline]
    pub fn bounds(self) -> (f64, f64) {
        match self {
            RowSet::Unilateral => (0.0, f64::INFINITY),
            RowSet::Bilateral => (f64::NEG_INFINITY, f64::INFINITY),
            RowSet::Box(b) => (-b, b),
            RowSet::Cone(_) => (f64::NEG_INFINITY, f64::INFINITY),
        }
    }

    /// The projection of `x` onto the set.
    #[inline]
    pub fn project(self, x: f64) -> f64 {
        match self {
            RowSet::Unilateral => x.max(0.0),
            RowSet::Bilateral => x,
            RowSet::Box(b) => x.clamp(-b, b),
            // Alone, only the bound that holds whatever the normal impulse.
            RowSet::Cone(_) => x,
        }
    }

    /// Whether `λ` lies strictly inside the set's bounds (the row then
    /// holds `c = 0`); a bilateral row always does.
    #[inline]
    pub fn interior(self, lambda: f64) -> bool {
        let (lo, hi) = self.bounds();
        lo < lambda && lambda < hi
    }

    /// The set's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            RowSet::Unilateral => "unilateral",
            RowSet::Bilateral => "bilateral",
            RowSet::Box(_) => "box",
            RowSet::Cone(_) => "cone",
        }
    }
}

/// A constraint problem: `nc` frictional contacts followed by `nl`
/// one-dimensional rows (joint and tendon limits, equality constraints, dry
/// friction on dofs), `m = 3·nc + nl` unknowns:
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
    /// (nl, or empty) the set of each row after `3·nc`; empty: every such
    /// row is unilateral (`ℝ₊`). See [`Self::row_set`].
    pub row_sets: Vec<RowSet>,
    /// Which blocks of `G` may be non-zero (default: all of them). The
    /// simulator fills it for scenes of several bodies; the per-contact
    /// solvers then update velocities with the coupled blocks only.
    pub coupling: BlockCoupling,
}

/// The blocks of `G` that may be non-zero. A block is a contact (3 rows)
/// or a unilateral row; blocks `a` and `b` couple when `J_a M⁻¹ J_bᵀ` can
/// be non-zero, i.e. when the dofs supporting them (the bodies' joints and
/// their ancestors) meet: bodies that share no contact, on separate trees,
/// do not couple. Empty: every block with every other (dense `G`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BlockCoupling {
    /// For block `b`, the blocks it couples with (itself included),
    /// ascending: `blocks[offsets[b]..offsets[b + 1]]`.
    offsets: Vec<usize>,
    blocks: Vec<usize>,
}

/// The rows of block `b` of a problem with `nc` contacts.
#[inline]
pub fn block_rows(nc: usize, b: usize) -> std::ops::Range<usize> {
    if b < nc {
        3 * b..3 * b + 3
    } else {
        let r = 3 * nc + (b - nc);
        r..r + 1
    }
}

/// Reusable buffers of [`BlockCoupling::from_supports`].
#[derive(Clone, Debug, Default)]
pub struct CouplingWork {
    start: Vec<usize>,
    list: Vec<usize>,
    mark: Vec<usize>,
}

/// Fewer blocks than this, or a dof shared by more than half of them
/// (a floating base under every contact), and `G` is treated as dense.
pub const COUPLING_MIN_BLOCKS: usize = 8;

impl BlockCoupling {
    /// Whether every block is taken to couple with every other.
    pub fn is_dense(&self) -> bool {
        self.offsets.is_empty()
    }

    /// The blocks coupled with block `b` (itself included), ascending;
    /// `None` when dense.
    #[inline]
    pub fn neighbors(&self, b: usize) -> Option<&[usize]> {
        (!self.is_dense()).then(|| &self.blocks[self.offsets[b]..self.offsets[b + 1]])
    }

    /// Dense again (every block with every other).
    pub fn clear(&mut self) {
        self.offsets.clear();
        self.blocks.clear();
    }

    /// The coupling of `nb` blocks whose supporting dofs (among `nv`) are
    /// `support[offsets[b]..offsets[b + 1]]` (see
    /// [`super::ContactJacobian`]); dense when there are fewer than
    /// `COUPLING_MIN_BLOCKS` (8) blocks or a dof supports more than half of
    /// them (then nearly every pair couples).
    pub fn from_supports(
        &mut self,
        nb: usize,
        nv: usize,
        support: &[usize],
        offsets: &[usize],
        work: &mut CouplingWork,
    ) {
        self.clear();
        if nb < COUPLING_MIN_BLOCKS {
            return;
        }
        // The blocks each dof supports (CSR by dof).
        work.start.clear();
        work.start.resize(nv + 1, 0);
        for &k in &support[..offsets[nb]] {
            work.start[k + 1] += 1;
        }
        if work.start.iter().any(|&n| 2 * n > nb) {
            return;
        }
        for k in 0..nv {
            work.start[k + 1] += work.start[k];
        }
        work.list.clear();
        work.list.resize(offsets[nb], 0);
        work.mark.clear();
        work.mark.resize(nv, 0);
        for b in 0..nb {
            for &k in &support[offsets[b]..offsets[b + 1]] {
                work.list[work.start[k] + work.mark[k]] = b;
                work.mark[k] += 1;
            }
        }
        // Each block's neighbors: the union over its dofs (marked by b + 1).
        work.mark.clear();
        work.mark.resize(nb, 0);
        self.offsets.push(0);
        for b in 0..nb {
            let first = self.blocks.len();
            for &k in &support[offsets[b]..offsets[b + 1]] {
                for &a in &work.list[work.start[k]..work.start[k + 1]] {
                    if work.mark[a] != b + 1 {
                        work.mark[a] = b + 1;
                        self.blocks.push(a);
                    }
                }
            }
            self.blocks[first..].sort_unstable();
            self.offsets.push(self.blocks.len());
        }
    }

    /// Checks that `coupling` describes `nb` blocks and that `G`'s entries
    /// outside it are zero (to `1e-12` of `G`'s largest).
    fn check(&self, g: &DMatrix<f64>, nc: usize, nb: usize) -> Result<(), ProblemError> {
        if self.is_dense() {
            return Ok(());
        }
        dimension("coupling blocks", self.offsets.len(), nb + 1)?;
        let scale = g.amax();
        for b in 0..nb {
            let near = self.neighbors(b).unwrap_or(&[]);
            if near.iter().any(|&a| a >= nb) {
                return Err(ProblemError::DimensionMismatch {
                    what: "coupling: a block index",
                    got: near.iter().copied().max().unwrap_or(0),
                    expected: nb,
                });
            }
            let mut next = near.iter().peekable();
            for a in 0..nb {
                if next.peek() == Some(&&a) {
                    next.next();
                    continue;
                }
                for r in block_rows(nc, b) {
                    for c in block_rows(nc, a) {
                        if g[(r, c)].abs() > 1e-12 * scale {
                            return Err(ProblemError::Uncoupled {
                                row: r,
                                col: c,
                                value: g[(r, c)],
                            });
                        }
                    }
                }
            }
        }
        Ok(())
    }
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
            row_sets: Vec::new(),
            coupling: BlockCoupling::default(),
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

    /// The set of row `3·nc + l` ([`RowSet::Unilateral`] when `row_sets`
    /// is empty).
    #[inline]
    pub fn row_set(&self, l: usize) -> RowSet {
        self.row_sets.get(l).copied().unwrap_or_default()
    }

    /// Whether every row after the contacts is unilateral (the problems
    /// the GPU kernels, the LCP solvers and the inverse dynamics take).
    pub fn all_unilateral(&self) -> bool {
        self.row_sets.iter().all(|s| *s == RowSet::Unilateral)
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
        self.row_sets.clear();
        self.coupling.clear();
    }

    /// Checks sizes, finiteness, `μ ≥ 0`, `R ≥ 0`, symmetry of `G`, a
    /// non-negative diagonal (a cheap necessary condition for PSD; the
    /// solvers report a failed factorization as `NotPsd`) and that `G`
    /// vanishes outside the [`BlockCoupling`].
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
        if !self.row_sets.is_empty() {
            dimension("row_sets", self.row_sets.len(), m - 3 * self.mu.len())?;
        }
        for (row, set) in self.row_sets.iter().enumerate() {
            if let RowSet::Box(b) = *set
                && !(b.is_finite() && b >= 0.0)
            {
                return Err(ProblemError::BadBox { row, bound: b });
            }
        }
        super::ConeRows::new(self.nc(), &self.row_sets)?;
        Ok(())
    }

    /// Refuses a problem with rows of a contact's cone ([`RowSet::Cone`])
    /// for solver `who`, which does not solve such cones.
    pub fn refuse_cone_rows(&self, who: &'static str) -> Result<(), ProblemError> {
        let cone = |(row, s): (usize, &RowSet)| match *s {
            RowSet::Cone(contact) => Some((row, contact)),
            _ => None,
        };
        match self.row_sets.iter().enumerate().find_map(cone) {
            Some((row, contact)) => Err(ProblemError::ConeRowUnsupported { row, contact, who }),
            None => Ok(()),
        }
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
        let nc = self.mu.len();
        self.coupling.check(&self.delassus, nc, nc + (m - 3 * nc))
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
        if !self.coupling.is_dense() {
            for j in 0..m {
                self.add_column(j, lambda[j], c);
            }
            return;
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

    /// `c += G[:, k] d` (without `R`), over the rows of the blocks coupled
    /// with `k`'s ([`BlockCoupling`]).
    #[inline]
    pub fn add_column(&self, k: usize, d: f64, c: &mut [f64]) {
        if d == 0.0 {
            return;
        }
        let col = self.delassus.column(k);
        let nc = self.mu.len();
        let b = if k < 3 * nc { k / 3 } else { nc + k - 3 * nc };
        match self.coupling.neighbors(b) {
            None => {
                for (ci, gi) in c.iter_mut().zip(col.iter()) {
                    *ci += gi * d;
                }
            }
            Some(near) => {
                for &a in near {
                    for r in block_rows(nc, a) {
                        c[r] += col[r] * d;
                    }
                }
            }
        }
    }
}
