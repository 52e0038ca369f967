//! Implicit derivatives of the contact problem at its solution (after the
//! seed paper "Highly-Efficient Differentiable Simulation for Robotics",
//! Le Lidec, Montaut, de Mont-Marin, Schramm, Carpentier, its eq. 9–11):
//! how the impulses `λ*` of `K ∋ λ ⟂ c + Γ(c) ∈ K*`, `c = (G + R)λ + g`,
//! change with the free velocity `g` and with the friction coefficients.
//!
//! Each block keeps its mode, read off the solution:
//! - **breaking** (`λ_N ≤ ε_λ` and `c_N ≥ −1e-14`, or an open unilateral
//!   row): `dλ_i = 0`;
//! - **sticking** (`‖c_T‖ ≤ ε_c`, or an active unilateral row): `dc_i = 0`;
//! - **sliding**: `dc_N = 0` and, from `λ_T = −μ λ_N ĉ_T` (`ĉ_T = c_T/‖c_T‖`),
//!   `dλ_T + μ ĉ_T dλ_N + μ λ_N (I − ĉ_T ĉ_Tᵀ)/‖c_T‖ dc_T = 0`.
//!
//! With `dc = (G + R) dλ + dg` these are `(D_λ + D_c (G + R)) dλ = −D_c dg`,
//! block by block (`D_λ`, `D_c` 3 × 3 per contact): the generalized
//! Jacobian of the NCP's piecewise-smooth system at `λ*`, the reduced system
//! of the paper written in full size (a breaking block's rows are `dλ_i = 0`,
//! a sliding block's 3 rows carry its 2 degrees of freedom on the cone). The
//! matrix is singular where `G` is (a body with more contacts than dofs):
//! the impulses are then not unique, but the velocity changes `M⁻¹Jᵀ dλ` are;
//! the system is solved by LU with partial pivoting on `A` where every
//! pivot exceeds 1e-10 of its largest entry, otherwise on `A + εI` (`ε` =
//! 1e-9 of its largest entry) refined three times against `A`, which picks
//! a small `dλ` along the null space. Apply it to the directions a step
//! perturbs `g` in (`J δv`, the range of `G`): along others a singular
//! system has no solution and the regularized one grows like `1/ε`, so
//! forming `∂λ*/∂g` on the identity and multiplying afterwards loses the
//! answer to cancellation (measured on the resting cube: 6e-5 instead of
//! 2e-11 against finite differences).
//!
//! Thresholds (documented choices): `ε_λ = 1e-9·max(1, max λ_N)` N·s,
//! `ε_c = 1e-7` m/s. A contact exactly at a mode boundary (a sticking
//! contact at the cone's edge, a breaking one with `c_N = 0`) has one-sided
//! derivatives; the mode read off the solution picks one side.

use super::ContactProblem;
use super::cone::get3;
use super::linalg::{
    cholesky_in_place, cholesky_solve_columns, lu_apply, lu_apply_transpose, lu_factor, on_rows,
    reshape_zeroed,
};
use crate::error::ProblemError;
use crate::math::small;
use nalgebra::DMatrix;

/// `ε_c`: a contact slower than this (m/s) is sticking.
pub const STICK_VELOCITY: f64 = 1e-7;
/// `ε_λ` relative to `max(1, max λ_N)`: a lighter contact is breaking.
pub const BREAK_IMPULSE: f64 = 1e-9;
/// A block with `λ ≈ 0` and `c_N` below `−PENETRATION` (m/s) is active.
pub const PENETRATION: f64 = 1e-14;
const REGULARIZATION: f64 = 1e-9;
const REFINEMENTS: usize = 3;
/// A column of [`ContactSensitivity::apply`] whose relative residual is
/// below this is not refined further (rounding: one refinement of a
/// regularized solve brings Gymnasium's ant's columns from 1e-8 to 4e-15).
const REFINED: f64 = 1e-13;
/// A pivot below this fraction of `A`'s largest entry: `A` is taken as
/// singular and regularized.
const SINGULAR: f64 = 1e-10;
/// Tikhonov regularization of [`ContactSensitivity::apply_least_squares`],
/// relative to `AᵀA`'s largest diagonal entry.
const TIKHONOV: f64 = 1e-12;

/// A block's mode at the solution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ContactMode {
    Breaking,
    Sticking,
    Sliding,
}

/// The factorized sensitivity system of one solution (reusable buffers).
#[derive(Clone, Debug, Default)]
pub struct ContactSensitivity {
    /// The mode of each contact, then of each unilateral row.
    pub modes: Vec<ContactMode>,
    /// `D_c` per block (3 × 3 row-major for contacts, a scalar at 0 for rows).
    d_c: Vec<[f64; 9]>,
    /// `A = D_λ + D_c (G + R)`, then its LU factors (m × m column-major).
    a: DMatrix<f64>,
    lu: Vec<f64>,
    pivot: Vec<usize>,
    rhs: Vec<f64>,
    x: Vec<f64>,
    residual: Vec<f64>,
    nc: usize,
    /// The worst relative residual `‖A dλ + D_c dg‖∞ / ‖D_c dg‖∞` over the
    /// columns of the last [`Self::apply`].
    worst_residual: f64,
    /// That residual per column (0 where `A` was not singular).
    column_residuals: Vec<f64>,
    /// Whether `A` was regularized (found singular).
    regularized: bool,
    /// Right-hand sides transposed, for [`Self::lu_solve_columns`].
    xt: Vec<f64>,
    /// [`Self::apply`]'s right-hand sides and residuals, where `A` is
    /// refined against.
    b: DMatrix<f64>,
    r: DMatrix<f64>,
    /// `Aᵀ` and `AᵀA + εI` (then its Cholesky factor), for
    /// [`Self::apply_least_squares`].
    at: DMatrix<f64>,
    normal: DMatrix<f64>,
}

impl ContactSensitivity {
    /// Reads the modes of `lambda` (with `c = (G + R)λ + g`) for the dense
    /// problem `p` and factorizes the sensitivity system.
    pub fn factorize(
        &mut self,
        p: &ContactProblem,
        lambda: &[f64],
        c: &[f64],
    ) -> Result<(), ProblemError> {
        self.factorize_at_accuracy(p, lambda, c, 0.0)
    }

    /// [`Self::factorize`] for a solution known only to `accuracy` (an
    /// absolute NCP residual, e.g. an f32 GPU solve's `ε_abs`): the modes'
    /// thresholds are raised to it, so that a sticking contact whose
    /// tangential velocity is the solver's residual is read as sticking
    /// (a slide slower than the solution's accuracy cannot be told from a
    /// stick), a breaking one whose normal impulse is rounding as
    /// breaking. `accuracy` 0 is [`Self::factorize`].
    pub fn factorize_at_accuracy(
        &mut self,
        p: &ContactProblem,
        lambda: &[f64],
        c: &[f64],
        accuracy: f64,
    ) -> Result<(), ProblemError> {
        let accuracy = if accuracy.is_finite() {
            accuracy.max(0.0)
        } else {
            0.0
        };
        let (stick, penetration) = (STICK_VELOCITY.max(accuracy), PENETRATION.max(accuracy));
        let (nc, m) = (p.nc(), p.m());
        self.nc = nc;
        if p.delassus.shape() != (m, m) || lambda.len() != m || c.len() != m {
            return Err(ProblemError::DimensionMismatch {
                what: "sensitivity: delassus, lambda and c",
                got: lambda.len().min(c.len()),
                expected: m,
            });
        }
        let lmax = (0..nc).map(|i| lambda[3 * i + 2]).fold(1.0f64, f64::max);
        let zero = (BREAK_IMPULSE * lmax).max(accuracy);
        self.modes.clear();
        self.d_c.clear();
        reshape_zeroed(&mut self.a, m, m);
        let a = self.a.as_mut_slice();
        for i in 0..nc {
            let (l, ci) = (get3(lambda, i), get3(c, i));
            let ct = ci[0].hypot(ci[1]);
            let mut dl = [0.0; 9];
            let mut dc = [0.0; 9];
            // (A light contact that penetrates is not breaking: its solution
            // has λ_N > 0, however small.)
            let mode = if l[2] <= zero && ci[2] >= -penetration {
                dl[0] = 1.0;
                dl[4] = 1.0;
                dl[8] = 1.0;
                ContactMode::Breaking
            } else if ct <= stick {
                dc[0] = 1.0;
                dc[4] = 1.0;
                dc[8] = 1.0;
                ContactMode::Sticking
            } else {
                let (u, mu) = ([ci[0] / ct, ci[1] / ct], p.mu[i]);
                let s = mu * l[2] / ct;
                dc[8] = 1.0;
                dl[0] = 1.0;
                dl[4] = 1.0;
                dl[2] = mu * u[0];
                dl[5] = mu * u[1];
                dc[0] = s * (1.0 - u[0] * u[0]);
                dc[1] = -s * u[0] * u[1];
                dc[3] = -s * u[0] * u[1];
                dc[4] = s * (1.0 - u[1] * u[1]);
                ContactMode::Sliding
            };
            self.modes.push(mode);
            self.d_c.push(dc);
            // Rows 3i..3i+3 of A: D_λ at the diagonal block, D_c (G + R) across.
            for j in 0..m {
                for r in 0..3 {
                    let mut v = 0.0;
                    for t in 0..3 {
                        let g = p.delassus[(3 * i + t, j)]
                            + if 3 * i + t == j { p.compliance[j] } else { 0.0 };
                        v += dc[3 * r + t] * g;
                    }
                    a[j * m + 3 * i + r] = v;
                }
            }
            for r in 0..3 {
                for t in 0..3 {
                    a[(3 * i + t) * m + 3 * i + r] += dl[3 * r + t];
                }
            }
        }
        for k in 3 * nc..m {
            // Active (`c = 0`): strictly inside the row's set, or on a bound
            // while the law's velocity there is violated beyond rounding
            // (`c < 0` on the lower bound, `c > 0` on the upper).
            let (lo, hi) = p.row_set(k - 3 * nc).bounds();
            let active = (lambda[k] > lo + zero && lambda[k] < hi - zero)
                || (lambda[k] <= lo + zero && c[k] < -penetration)
                || (lambda[k] >= hi - zero && c[k] > penetration);
            self.modes.push(if active {
                ContactMode::Sticking
            } else {
                ContactMode::Breaking
            });
            let mut dc = [0.0; 9];
            if active {
                dc[0] = 1.0;
                for j in 0..m {
                    a[j * m + k] = p.delassus[(k, j)] + if k == j { p.compliance[k] } else { 0.0 };
                }
            } else {
                a[k * m + k] = 1.0;
            }
            self.d_c.push(dc);
        }
        // A itself where its pivots stay above SINGULAR of its largest
        // entry (then one solve is exact to rounding); otherwise A + εI,
        // its solves refined against A.
        let amax = self.a.iter().fold(0.0f64, |s, x| s.max(x.abs()));
        self.pivot.resize(m, 0);
        self.lu.clear();
        self.lu.extend_from_slice(self.a.as_slice());
        self.regularized = !(lu_factor(&mut self.lu, m, &mut self.pivot)
            && (0..m).all(|k| self.lu[k * m + k].abs() > SINGULAR * amax));
        if self.regularized {
            self.lu.clear();
            self.lu.extend_from_slice(self.a.as_slice());
            for k in 0..m {
                self.lu[k * m + k] += REGULARIZATION * amax.max(f64::MIN_POSITIVE);
            }
        }
        if m > 0 && self.regularized && !lu_factor(&mut self.lu, m, &mut self.pivot) {
            return Err(ProblemError::NotPsd {
                index: 0,
                value: 0.0,
            });
        }
        Ok(())
    }

    /// Newton steps on the equations of the modes read off `lambda` (those
    /// of [`Self::factorize`]: `λ_i = 0`, `c_i = 0`, or `c_N = 0` with
    /// `λ_T = −μ λ_N ĉ_T`), whose Jacobian is the sensitivity matrix `A`:
    /// they bring a solution whose modes are right to rounding, in
    /// particular the direction of a sliding contact's friction, which the
    /// NCP residual sees only at second order (an error `θ` costs
    /// `μ λ_N ‖c_T‖ θ²/2`). `c` is updated with `lambda`.
    pub fn refine(
        &mut self,
        p: &ContactProblem,
        lambda: &mut [f64],
        c: &mut [f64],
        steps: usize,
    ) -> Result<(), ProblemError> {
        let (nc, m) = (p.nc(), p.m());
        for _ in 0..steps {
            self.factorize(p, lambda, c)?;
            self.rhs.clear();
            self.rhs.resize(m, 0.0);
            for (i, mode) in self.modes.iter().enumerate().take(nc) {
                let (l, ci) = (get3(lambda, i), get3(c, i));
                let f = match mode {
                    ContactMode::Breaking => l,
                    ContactMode::Sticking => ci,
                    ContactMode::Sliding => {
                        let ct = ci[0].hypot(ci[1]);
                        let k = p.mu[i] * l[2] / ct;
                        [l[0] + k * ci[0], l[1] + k * ci[1], ci[2]]
                    }
                };
                for r in 0..3 {
                    self.rhs[3 * i + r] = -f[r];
                }
            }
            for k in 3 * nc..m {
                self.rhs[k] = -match self.modes[nc + k - 3 * nc] {
                    ContactMode::Breaking => lambda[k] - self.row_bound(p, k, lambda[k]),
                    _ => c[k],
                };
            }
            self.solve(false);
            for (l, d) in lambda.iter_mut().zip(&self.x) {
                *l += d;
            }
            // Breaking blocks exactly zero (rounding would leave a λ of
            // 1e-50 whose normalized complementarity is its whole velocity).
            for (b, mode) in self.modes.iter().enumerate() {
                if *mode == ContactMode::Breaking {
                    if b < nc {
                        lambda[3 * b..3 * b + 3].fill(0.0);
                    } else {
                        let k = 3 * nc + b - nc;
                        lambda[k] = self.row_bound(p, k, lambda[k]);
                    }
                }
            }
            p.contact_velocity(lambda, c);
        }
        Ok(())
    }

    /// The bound of row `k`'s set nearer to `lambda` (the value a row in
    /// the breaking mode is held at: 0 for a unilateral row, `±b` for a box).
    fn row_bound(&self, p: &ContactProblem, k: usize, lambda: f64) -> f64 {
        let (lo, hi) = p.row_set(k - 3 * self.nc).bounds();
        if (lambda - lo).abs() <= (hi - lambda).abs() {
            lo
        } else {
            hi
        }
    }

    /// `dλ = −A⁻¹ D_c dg` for each column of `dg` (m × k), in place. Where
    /// `A` is singular, a column outside its range has no solution (see
    /// [`Self::worst_residual`]).
    pub fn apply(&mut self, dg: &mut DMatrix<f64>) {
        self.apply_refined(dg, f64::INFINITY);
    }

    /// [`Self::apply`] for a caller that takes the least-squares answer
    /// ([`Self::apply_least_squares`]) where the worst relative residual
    /// exceeds `unsolvable`: the refinement stops once it is above and
    /// falls by less than a tenth in a round (a direction outside `A`'s
    /// range, whose residual no refinement removes). At that rate the two
    /// rounds left would lower it by at most a factor 0.81: only a residual
    /// within 1/0.81 of `unsolvable` could have crossed it.
    pub fn apply_unless_unsolvable(&mut self, dg: &mut DMatrix<f64>, unsolvable: f64) {
        self.apply_refined(dg, unsolvable);
    }

    fn apply_refined(&mut self, dg: &mut DMatrix<f64>, unsolvable: f64) {
        let (m, k) = (dg.nrows(), dg.ncols());
        self.worst_residual = 0.0;
        self.column_residuals.clear();
        self.column_residuals.resize(k, 0.0);
        // B = −D_c dg, in `dg`'s place; X = LU⁻¹ B.
        for j in 0..k {
            self.rhs_of(dg, j);
            dg.column_mut(j).copy_from_slice(&self.rhs);
        }
        if !self.regularized {
            self.lu_solve_columns(dg);
            return;
        }
        // (Buffers kept: B and the residual.)
        let (mut b, mut r) = (std::mem::take(&mut self.b), std::mem::take(&mut self.r));
        for (buffer, shape) in [(&mut b, (m, k)), (&mut r, (m, k))] {
            if buffer.shape() != shape {
                *buffer = DMatrix::zeros(shape.0, shape.1);
            }
        }
        b.copy_from(dg);
        self.lu_solve_columns(dg);
        // Refined against A: X += LU⁻¹ (B − A X), up to REFINEMENTS times,
        // until every column's relative residual is below REFINED; the
        // residuals of the answer measured last.
        let mut previous = f64::INFINITY;
        for round in 0..=REFINEMENTS {
            r.copy_from(&b);
            small::gemm(&mut r, -1.0, &self.a, dg, 1.0);
            self.measure_residuals(&r, &b);
            let stalled = self.worst_residual > unsolvable && self.worst_residual > 0.9 * previous;
            if round == REFINEMENTS || self.worst_residual <= REFINED || stalled {
                break;
            }
            previous = self.worst_residual;
            self.lu_solve_columns(&mut r);
            *dg += &r;
        }
        (self.b, self.r) = (b, r);
    }

    /// The relative residual of each column, and the worst.
    fn measure_residuals(&mut self, r: &DMatrix<f64>, b: &DMatrix<f64>) {
        self.worst_residual = 0.0;
        self.column_residuals.clear();
        let m = b.nrows();
        if m == 0 {
            self.column_residuals.resize(b.ncols(), 0.0);
            return;
        }
        let amax = |x: &[f64]| x.iter().fold(0.0f64, |s, v| s.max(v.abs()));
        for (rj, bj) in r
            .as_slice()
            .chunks_exact(m)
            .zip(b.as_slice().chunks_exact(m))
        {
            let scale = amax(bj);
            let e = if scale > 0.0 { amax(rj) / scale } else { 0.0 };
            self.column_residuals.push(e);
            self.worst_residual = self.worst_residual.max(e);
        }
    }

    /// `X = LU⁻¹ X` for every column of `x` at once (the factors of
    /// [`Self::factorize`]), on the rows of `Xᵀ` ([`on_rows`]).
    fn lu_solve_columns(&mut self, x: &mut DMatrix<f64>) {
        let m = x.nrows();
        let (lu, pivot) = (&self.lu, &self.pivot);
        on_rows(x.as_mut_slice(), m, &mut self.xt, |xt, k| {
            for (p, &q) in pivot.iter().enumerate().take(m) {
                if q != p {
                    for j in 0..k {
                        xt.swap(p * k + j, q * k + j);
                    }
                }
            }
            for p in 0..m {
                for i in p + 1..m {
                    let l = lu[p * m + i];
                    if l != 0.0 {
                        let (head, tail) = xt.split_at_mut(i * k);
                        let src = &head[p * k..(p + 1) * k];
                        for (x, s) in tail[..k].iter_mut().zip(src) {
                            *x -= l * s;
                        }
                    }
                }
            }
            for p in (0..m).rev() {
                let (head, tail) = xt.split_at_mut((p + 1) * k);
                let row = &mut head[p * k..];
                for jj in p + 1..m {
                    let u = lu[jj * m + p];
                    if u != 0.0 {
                        let src = &tail[(jj - p - 1) * k..(jj - p) * k];
                        for (x, s) in row.iter_mut().zip(src) {
                            *x -= u * s;
                        }
                    }
                }
                let d = 1.0 / lu[p * m + p];
                for x in row.iter_mut() {
                    *x *= d;
                }
            }
        });
    }

    /// [`Self::apply`] in the least-squares sense, for directions along
    /// which the modes' equations have no solution (see
    /// [`Self::worst_residual`]): `dλ = (AᵀA + εI)⁻¹ Aᵀ (−D_c dg)`, every
    /// column at once, `ε = 1e-12` of `AᵀA`'s largest diagonal entry
    /// (Tikhonov: the minimum-norm least-squares answer along the
    /// directions whose singular values exceed `1e-6` of the largest,
    /// damped along the others). The residuals are measured against `A`.
    pub fn apply_least_squares(&mut self, dg: &mut DMatrix<f64>) {
        let (m, k) = (dg.nrows(), dg.ncols());
        // (Buffers kept: B, Aᵀ, AᵀA + εI and its factor, the residual.)
        let (mut b, mut r) = (std::mem::take(&mut self.b), std::mem::take(&mut self.r));
        for (buffer, shape) in [(&mut b, (m, k)), (&mut r, (m, k))] {
            if buffer.shape() != shape {
                *buffer = DMatrix::zeros(shape.0, shape.1);
            }
        }
        for j in 0..k {
            self.rhs_of(dg, j);
            b.column_mut(j).copy_from_slice(&self.rhs);
        }
        let at = &mut self.at;
        if at.shape() != (m, m) {
            *at = DMatrix::zeros(m, m);
        }
        self.a.transpose_to(at);
        let normal = &mut self.normal;
        if normal.shape() != (m, m) {
            *normal = DMatrix::zeros(m, m);
        }
        small::gemm(normal, 1.0, at, &self.a, 0.0);
        let dmax = (0..m).fold(f64::MIN_POSITIVE, |d, i| d.max(normal[(i, i)]));
        for i in 0..m {
            normal[(i, i)] += TIKHONOV * dmax;
        }
        small::gemm(dg, 1.0, at, &b, 0.0);
        // (Positive definite by construction; rounding aside.)
        if m > 0 && cholesky_in_place(normal.as_mut_slice(), m).is_ok() {
            cholesky_solve_columns(normal.as_slice(), m, dg.as_mut_slice(), &mut self.xt);
        } else {
            dg.fill(0.0);
        }
        r.copy_from(&b);
        small::gemm(&mut r, -1.0, &self.a, dg, 1.0);
        self.measure_residuals(&r, &b);
        (self.b, self.r) = (b, r);
    }

    /// The worst relative residual of the linearized mode equations over
    /// the columns of the last [`Self::apply`]: rounding where each
    /// direction keeps the modes solvable, of order 1 where one does not
    /// (`G` singular and the direction outside its range, e.g. a change
    /// of the stabilization that the contacts' motions cannot produce: the
    /// step is then not differentiable in that direction, its modes must
    /// change).
    pub fn worst_residual(&self) -> f64 {
        self.worst_residual
    }

    /// [`Self::worst_residual`] of each column of the last apply: a column
    /// above 1e-6 has no solution (its direction must change the modes).
    pub fn column_residuals(&self) -> &[f64] {
        &self.column_residuals
    }

    /// Whether `A` was found singular (then regularized, see the module
    /// doc).
    pub fn singular(&self) -> bool {
        self.regularized
    }

    /// `∂λ*/∂μ` (m × nc) at the solution `lambda`, `c` given to
    /// [`Self::factorize`]: μ enters the equations of the sliding contacts
    /// only, `λ_T + μ λ_N ĉ_T = 0`, so column `i` is `−A⁻¹ (λ_N ĉ_T)` on
    /// contact `i`'s tangent rows if it slides, zero otherwise.
    pub fn apply_mu(&mut self, lambda: &[f64], c: &[f64], out: &mut DMatrix<f64>) {
        let m = self.a.nrows();
        if out.shape() != (m, self.nc) {
            *out = DMatrix::zeros(m, self.nc);
        }
        for i in 0..self.nc {
            self.rhs.clear();
            self.rhs.resize(m, 0.0);
            if self.modes[i] == ContactMode::Sliding {
                let ci = get3(c, i);
                let ct = ci[0].hypot(ci[1]);
                for r in 0..2 {
                    self.rhs[3 * i + r] = -lambda[3 * i + 2] * ci[r] / ct;
                }
                self.solve(false);
                out.column_mut(i).copy_from_slice(&self.x);
            } else {
                out.column_mut(i).fill(0.0);
            }
        }
    }

    /// The vector–Jacobian product `wᵀ ∂λ/∂g = −(D_cᵀ A⁻ᵀ w)ᵀ`, into `w` (m).
    pub fn apply_transpose(&mut self, w: &mut [f64]) {
        let m = w.len();
        self.rhs.clear();
        self.rhs.extend_from_slice(w);
        self.solve(true);
        for b in 0..self.d_c.len() {
            let (first, width) = if b < self.nc {
                (3 * b, 3)
            } else {
                (3 * self.nc + b - self.nc, 1)
            };
            for t in 0..width {
                let mut v = 0.0;
                for r in 0..width {
                    v += self.d_c[b][if width == 3 { 3 * r + t } else { 0 }] * self.x[first + r];
                }
                w[first + t] = -v;
            }
        }
        debug_assert_eq!(m, self.a.nrows());
    }

    /// `x = A⁻¹ rhs` (or `A⁻ᵀ rhs`), refined against `A`.
    fn solve(&mut self, transpose: bool) {
        let m = self.rhs.len();
        self.x.clear();
        self.x.resize(m, 0.0);
        self.residual.clear();
        self.residual.resize(m, 0.0);
        let rounds = if self.regularized { REFINEMENTS } else { 0 };
        for round in 0..=rounds {
            // residual = rhs − op(A) x
            for r in 0..m {
                let mut v = self.rhs[r];
                if round > 0 {
                    for k in 0..m {
                        let a = if transpose {
                            self.a.as_slice()[r * m + k]
                        } else {
                            self.a.as_slice()[k * m + r]
                        };
                        v -= a * self.x[k];
                    }
                }
                self.residual[r] = v;
            }
            if transpose {
                lu_apply_transpose(&self.lu, m, &self.pivot, &mut self.residual);
            } else {
                lu_apply(&self.lu, m, &self.pivot, &mut self.residual);
            }
            for (x, d) in self.x.iter_mut().zip(&self.residual) {
                *x += d;
            }
        }
    }

    /// `rhs = −D_c dg` for column `j` of `dg`.
    fn rhs_of(&mut self, dg: &DMatrix<f64>, j: usize) {
        let m = self.a.nrows();
        self.rhs.clear();
        self.rhs.resize(m, 0.0);
        for b in 0..self.d_c.len() {
            let (first, width) = if b < self.nc {
                (3 * b, 3)
            } else {
                (3 * self.nc + b - self.nc, 1)
            };
            for r in 0..width {
                let mut v = 0.0;
                for t in 0..width {
                    v += self.d_c[b][if width == 3 { 3 * r + t } else { 0 }] * dg[(first + t, j)];
                }
                self.rhs[first + r] = -v;
            }
        }
    }
}

/// One world's contact stage at its solution, and the adjoint of its
/// impulses.
#[derive(Clone, Copy, Debug)]
pub struct VjpWorld<'a> {
    /// The problem with its dense `G` (and compliance `R`, and `μ`).
    pub problem: &'a ContactProblem,
    pub lambda: &'a [f64],
    /// `c = (G + R)λ + g` at the solution.
    pub c: &'a [f64],
    /// The mode of each contact, then of each limit row (as
    /// [`ContactSensitivity::modes`]).
    pub modes: &'a [ContactMode],
    pub lambda_bar: &'a [f64],
}
