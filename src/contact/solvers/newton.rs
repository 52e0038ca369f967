//! A semismooth Newton finisher for the NCP on the Alart–Curnier function
//! (Alart and Curnier 1991; the generalized Newton method of Siconos'
//! `fc3d_nsn_ac`), tried when the active-set polish of [`super::polish`]
//! fails.
//!
//! Per contact, with `c = (G + R)λ + g` and a scale `r > 0`:
//!
//! ```text
//! F_N = λ_N − max(0, λ_N − r c_N)
//! F_T = λ_T − P_D(μ max(0, λ_N − r c_N)) (λ_T − r c_T)     (D(ρ): the disk of radius ρ)
//! ```
//!
//! and `F = λ − P_S(λ − r c)` for a one-dimensional row of set `S`
//! ([`crate::contact::RowSet`]: `max(0, ·)` for a unilateral row, the
//! identity for a bilateral one, a clamp for a box). `F(λ) = 0` exactly at
//! the solutions of the NCP `K_μ ∋ λ ⟂ c + Γ(c) ∈ K_μ*`: the pieces of `F`
//! are breaking (`λ = 0`), sticking (`c = 0`) and sliding (`c_N = 0`,
//! `λ_T = −μλ_N c_T/‖c_T‖` at the solution), chosen at each iterate by the
//! signs of `λ_N − r c_N` and the size of `λ_T − r c_T`, so the modes are
//! revised by every step rather than guessed once. The step solves
//! `(∂_λF + ∂_cF (G + R)) δ = −F` with an element of the generalized
//! Jacobian, then backtracks on `‖F‖²`.
//!
//! Why a second finisher: the polish fixes each sliding direction and
//! revises it by the fixed point `t ← −c_T/‖c_T‖`, which diverges when a
//! contact slides slowly (measured on Gymnasium's humanoid lying down, where
//! `ε_abs` went from 5e-8 to 2e-2 over four revisions), and its mode guesses
//! come from an ADMM iterate whose modes may still be wrong; Newton on `F`
//! differentiates the sliding direction (the term `(I − ŵŵᵀ)μR_N/‖ŵ‖`),
//! converges quadratically once the pieces are right, and its line search
//! moves between pieces. Measured on the 280 solves of the humanoid's
//! 1962 dumped problems that `ncp-admm` left unconverged at 1e-8 (a NumPy
//! prototype of this method): 258 solved; on Go1's 50 four-foot problems
//! from `scripts/compare-pinocchio`, all 50, most from the zero guess.
//!
//! What it does not solve: problems whose sticking contacts are statically
//! indeterminate and whose exact solution needs a different distribution of
//! the internal forces than the iterate's (the all-sticking system is then
//! inconsistent by about the tolerance, and `‖F‖²` has a stationary point
//! there that is not a zero). ADMM goes on from there.
//!
//! The linear system is dense `m × m` (formed from `G`'s operator on the
//! tree path). Its identity rows (a breaking contact's `F = λ`, a row on a
//! bound's piece) fix their step at `−F`; the other rows' system is
//! factorized by LU with partial pivoting on `J + εI` and refined against
//! `J`: `J` is singular when `G` is (a body with more contacts than dofs),
//! and the regularized solve then takes a small step along the null space.

use crate::contact::RowSet;
use crate::contact::cone::get3;
use crate::contact::linalg::{lu_apply, lu_factor};
use crate::contact::operator::{Delassus, DelassusOperator};

/// Newton steps per attempt (measured: the solves it finishes take 2 to 6).
pub(crate) const NEWTON_STEPS: usize = 10;
/// The scales of `r` tried in turn, each from the same iterate: where the
/// first stalls, a larger `r` (velocity-weighted pieces) often does not
/// (measured with the NumPy prototype: on the humanoid's 280 hard problems
/// 8 left unsolved instead of 22, on the Allegro hand's 50 problems 6.8
/// ADMM iterations per solve instead of 13.6).
pub(crate) const R_SCALES: [f64; 2] = [1.0, 100.0];
/// `ε` of `J + εI`, relative to `J`'s largest entry (as the polish's).
const REGULARIZATION: f64 = 1e-6;
/// Iterative refinements of each step against `J`.
pub(crate) const REFINEMENTS: usize = 3;
/// Backtracking: the smallest step, and the sufficient decrease of `‖F‖²`.
pub(crate) const MIN_STEP: f64 = 1e-4;
pub(crate) const ARMIJO: f64 = 1e-4;

/// Reusable buffers (no allocation once grown).
#[derive(Default)]
pub(crate) struct NewtonWork {
    /// Steps taken since this was created (the caller counts differences).
    pub(crate) steps: usize,
    /// The index in [`R_SCALES`] of the last scale that solved a problem.
    last_scale: usize,
    /// `A = G + diag(d)`, `m × m` column-major.
    a: Vec<f64>,
    /// The scale `r` of each block (contacts, then the rows).
    r: Vec<f64>,
    /// The set of each row after the contacts.
    sets: Vec<RowSet>,
    lambda: Vec<f64>,
    trial: Vec<f64>,
    c: Vec<f64>,
    c_trial: Vec<f64>,
    /// `A δ`.
    a_step: Vec<f64>,
    f: Vec<f64>,
    f_trial: Vec<f64>,
    /// Per block, `∂F/∂λ` and `∂F/∂c` (3 × 3 row-major; a row's entry at 0).
    d_lambda: Vec<[f64; 9]>,
    d_c: Vec<[f64; 9]>,
    /// The Newton matrix, `m × m` column-major, then its LU factors.
    jac: Vec<f64>,
    lu: Vec<f64>,
    pivot: Vec<usize>,
    step: Vec<f64>,
    residual: Vec<f64>,
    unit: Vec<f64>,
    /// The rows of the reduced step (not identity rows), its right-hand
    /// side and solution (its matrix `J_FF` is packed into `jac`).
    free: Vec<usize>,
    rhs: Vec<f64>,
    y: Vec<f64>,
}

impl NewtonWork {
    /// The index in [`R_SCALES`] tried first by the next solve.
    pub(crate) fn scale(&self) -> usize {
        self.last_scale
    }
    /// Sets [`Self::scale`]; false (and nothing changes) for an index
    /// out of range.
    pub(crate) fn set_scale(&mut self, scale: usize) -> bool {
        let ok = scale < R_SCALES.len();
        if ok {
            self.last_scale = scale;
        }
        ok
    }
}

/// Newton steps from `z` on the problem `c = (a + diag d) λ + b` with
/// `nc = mu.len()` contacts and the rows after `3·nc` in `row_sets` (empty:
/// all unilateral). Each
/// iterate is offered to `accept`, which returns its `ε_abs`, or `None` to
/// stop (it solves the problem). `candidate` holds the last iterate offered.
#[allow(clippy::too_many_arguments)]
pub(crate) fn newton(
    work: &mut NewtonWork,
    mu: &[f64],
    row_sets: &[RowSet],
    a: &Delassus,
    d: &[f64],
    b: &[f64],
    z: &[f64],
    candidate: &mut [f64],
    accept: &mut dyn FnMut(&[f64]) -> Option<f64>,
) {
    let (nc, m) = (mu.len(), b.len());
    if m == 0 {
        return;
    }
    work.sets.clear();
    work.sets
        .extend((0..m - 3 * nc).map(|l| row_sets.get(l).copied().unwrap_or_default()));
    a.dense_into(d, &mut work.a, &mut work.unit);
    for v in [
        &mut work.c,
        &mut work.c_trial,
        &mut work.a_step,
        &mut work.f,
        &mut work.f_trial,
        &mut work.trial,
        &mut work.step,
    ] {
        v.clear();
        v.resize(m, 0.0);
    }
    work.d_lambda.resize(nc + (m - 3 * nc), [0.0; 9]);
    work.d_c.resize(nc + (m - 3 * nc), [0.0; 9]);
    work.jac.resize(m * m, 0.0);
    work.pivot.resize(m, 0);
    // Each scale of r in turn, from z, until one solves the problem; the
    // last one that did first (consecutive problems of a simulation are alike).
    for k in 0..R_SCALES.len() {
        let which = (work.last_scale + k) % R_SCALES.len();
        let scale = R_SCALES[which];
        // r: the inverse of each block's mean diagonal entry (impulse per
        // velocity), times the scale.
        work.r.clear();
        for i in 0..nc {
            let tr: f64 = (3 * i..3 * i + 3).map(|k| work.a[k * m + k]).sum();
            work.r.push(scale * if tr > 0.0 { 3.0 / tr } else { 1.0 });
        }
        for k in 3 * nc..m {
            let akk = work.a[k * m + k];
            work.r.push(scale * if akk > 0.0 { 1.0 / akk } else { 1.0 });
        }
        if attempt(work, mu, b, z, candidate, accept) {
            work.last_scale = which;
            return;
        }
    }
}

/// Newton steps from `z` with the current `work.r`; whether `accept` stopped them (solved).
fn attempt(
    work: &mut NewtonWork,
    mu: &[f64],
    b: &[f64],
    z: &[f64],
    candidate: &mut [f64],
    accept: &mut dyn FnMut(&[f64]) -> Option<f64>,
) -> bool {
    let (nc, m) = (mu.len(), b.len());
    work.lambda.clear();
    work.lambda.extend_from_slice(z);
    multiply(&work.a, m, &work.lambda, &mut work.c);
    for (ci, bi) in work.c.iter_mut().zip(b) {
        *ci += bi;
    }
    for _ in 0..NEWTON_STEPS {
        let phi = evaluate(work, mu, true);
        // The step: (∂_λF + ∂_cF A) δ = −F, reduced to the rows that are
        // not identity rows (a breaking block's `F = λ`, a row on a bound's
        // piece): there `δ = −F`, and the others solve
        // `J_FF δ_F = −F_F − J_FI δ_I`.
        assemble(work, nc, m);
        let jmax = work.jac.iter().fold(0.0f64, |s, x| s.max(x.abs()));
        work.free.clear();
        for k in 0..m {
            if identity_row(work, nc, k) {
                work.step[k] = -work.f[k];
            } else {
                work.free.push(k);
            }
        }
        let n = work.free.len();
        // rhs_F = −F_F − J_FI δ_I.
        work.rhs.clear();
        work.rhs.extend(work.free.iter().map(|&k| -work.f[k]));
        {
            let mut next = 0;
            for j in 0..m {
                if next < n && work.free[next] == j {
                    next += 1;
                    continue;
                }
                let sj = work.step[j];
                if sj != 0.0 {
                    for (e, &k) in work.free.iter().enumerate() {
                        work.rhs[e] -= work.jac[j * m + k] * sj;
                    }
                }
            }
        }
        // J_FF packed into the front of `jac` (column-major n × n): every
        // entry moves to an index no larger than its own, in order, so no
        // entry is overwritten before it is read.
        for ec in 0..n {
            for er in 0..n {
                work.jac[ec * n + er] = work.jac[work.free[ec] * m + work.free[er]];
            }
        }
        let jff = &work.jac[..n * n];
        work.lu.clear();
        work.lu.extend_from_slice(jff);
        for e in 0..n {
            work.lu[e * n + e] += REGULARIZATION * jmax;
        }
        if !lu_factor(&mut work.lu, n, &mut work.pivot) {
            return false;
        }
        work.y.clear();
        work.y.extend_from_slice(&work.rhs);
        lu_apply(&work.lu, n, &work.pivot, &mut work.y);
        for _ in 0..REFINEMENTS {
            // residual = rhs − J_FF y
            work.residual.clear();
            work.residual.extend_from_slice(&work.rhs);
            for (j, &yj) in work.y.iter().enumerate() {
                if yj != 0.0 {
                    for (rk, jk) in work.residual.iter_mut().zip(&jff[j * n..(j + 1) * n]) {
                        *rk -= jk * yj;
                    }
                }
            }
            lu_apply(&work.lu, n, &work.pivot, &mut work.residual);
            for (y, r) in work.y.iter_mut().zip(&work.residual) {
                *y += r;
            }
        }
        for (&k, &y) in work.free.iter().zip(&work.y) {
            work.step[k] = y;
        }
        if !work.step.iter().all(|x| x.is_finite()) {
            return false;
        }
        work.steps += 1;
        // Backtracking on ‖F‖², with c along the step from A δ.
        multiply(&work.a, m, &work.step, &mut work.a_step);
        let mut t = 1.0;
        loop {
            for k in 0..m {
                work.trial[k] = work.lambda[k] + t * work.step[k];
                work.c_trial[k] = work.c[k] + t * work.a_step[k];
            }
            std::mem::swap(&mut work.lambda, &mut work.trial);
            std::mem::swap(&mut work.c, &mut work.c_trial);
            let phi_t = evaluate(work, mu, false);
            if phi_t <= (1.0 - ARMIJO * t) * phi {
                break;
            }
            // Rejected: back to the iterate.
            std::mem::swap(&mut work.lambda, &mut work.trial);
            std::mem::swap(&mut work.c, &mut work.c_trial);
            t *= 0.5;
            if t < MIN_STEP {
                return false;
            }
        }
        // A breaking block is exactly zero (a tiny λ would count its whole
        // velocity in the normalized complementarity residual).
        if clean(work, mu, m) {
            multiply(&work.a, m, &work.lambda, &mut work.c);
            for (ci, bi) in work.c.iter_mut().zip(b) {
                *ci += bi;
            }
        }
        candidate.copy_from_slice(&work.lambda);
        if accept(candidate).is_none() {
            return true;
        }
    }
    false
}

/// Whether row `k` of the Newton matrix is `e_kᵀ` (its `∂F/∂c` row is
/// zero and its `∂F/∂λ` row the unit row), from the blocks `evaluate` kept.
fn identity_row(work: &NewtonWork, nc: usize, k: usize) -> bool {
    if k >= 3 * nc {
        let b = nc + k - 3 * nc;
        return work.d_c[b][0] == 0.0 && work.d_lambda[b][0] == 1.0;
    }
    let (b, s) = (k / 3, k % 3);
    let (dl, dc) = (&work.d_lambda[b], &work.d_c[b]);
    (0..3).all(|t| dc[3 * s + t] == 0.0 && dl[3 * s + t] == if t == s { 1.0 } else { 0.0 })
}

/// `out = A x` (`A` column-major `m × m`).
fn multiply(a: &[f64], m: usize, x: &[f64], out: &mut [f64]) {
    out.fill(0.0);
    for (j, &xj) in x.iter().enumerate() {
        if xj != 0.0 {
            for (o, aij) in out.iter_mut().zip(&a[j * m..(j + 1) * m]) {
                *o += aij * xj;
            }
        }
    }
}

/// Zeroes the blocks in their breaking piece (`λ_N − r c_N ≤ 0`) and puts
/// the rows in a bound's piece on the bound; whether any changed.
fn clean(work: &mut NewtonWork, mu: &[f64], m: usize) -> bool {
    let nc = mu.len();
    let mut changed = false;
    for i in 0..nc {
        let k = 3 * i;
        if work.lambda[k + 2] - work.r[i] * work.c[k + 2] <= 0.0
            && work.lambda[k..k + 3].iter().any(|&x| x != 0.0)
        {
            work.lambda[k..k + 3].fill(0.0);
            changed = true;
        }
    }
    for k in 3 * nc..m {
        let (lo, hi) = work.sets[k - 3 * nc].bounds();
        let w = work.lambda[k] - work.r[nc + k - 3 * nc] * work.c[k];
        let bound = if w <= lo {
            lo
        } else if w >= hi {
            hi
        } else {
            continue;
        };
        if work.lambda[k] != bound {
            work.lambda[k] = bound;
            changed = true;
        }
    }
    changed
}

/// `F` at `(work.lambda, work.c)` into `work.f`, and with `jacobian` its
/// blocks `∂F/∂λ`, `∂F/∂c`; returns `‖F‖²`.
fn evaluate(work: &mut NewtonWork, mu: &[f64], jacobian: bool) -> f64 {
    let nc = mu.len();
    let m = work.lambda.len();
    let mut phi = 0.0;
    for (i, &mu_i) in mu.iter().enumerate() {
        let (l, c, r) = (get3(&work.lambda, i), get3(&work.c, i), work.r[i]);
        let mut dl = [0.0; 9];
        let mut dc = [0.0; 9];
        let rn = l[2] - r * c[2];
        let f = if rn <= 0.0 {
            // Breaking: F = λ.
            dl[0] = 1.0;
            dl[4] = 1.0;
            dl[8] = 1.0;
            l
        } else {
            dc[8] = r;
            let w = [l[0] - r * c[0], l[1] - r * c[1]];
            let nw = w[0].hypot(w[1]);
            let rad = mu_i * rn;
            if rad > 0.0 && nw <= rad {
                // Sticking: F = r c.
                dc[0] = r;
                dc[4] = r;
                [r * c[0], r * c[1], r * c[2]]
            } else if nw > 0.0 {
                // Sliding: F_T = λ_T − rad ŵ.
                let u = [w[0] / nw, w[1] / nw];
                let s = rad / nw;
                // P = s (I − ûûᵀ): dF_T = (I − P) dλ_T − μ û dλ_N + r P dc_T + μ r û dc_N.
                let p = [
                    s * (1.0 - u[0] * u[0]),
                    -s * u[0] * u[1],
                    s * (1.0 - u[1] * u[1]),
                ];
                dl[0] = 1.0 - p[0];
                dl[1] = -p[1];
                dl[3] = -p[1];
                dl[4] = 1.0 - p[2];
                dl[2] = -mu_i * u[0];
                dl[5] = -mu_i * u[1];
                dc[0] = r * p[0];
                dc[1] = r * p[1];
                dc[3] = r * p[1];
                dc[4] = r * p[2];
                dc[2] = mu_i * r * u[0];
                dc[5] = mu_i * r * u[1];
                [l[0] - rad * u[0], l[1] - rad * u[1], r * c[2]]
            } else {
                // No friction (μ = 0) and w = 0: F_T = λ_T.
                dl[0] = 1.0;
                dl[4] = 1.0;
                [l[0], l[1], r * c[2]]
            }
        };
        for (s, &v) in f.iter().enumerate() {
            work.f[3 * i + s] = v;
            phi += v * v;
        }
        if jacobian {
            work.d_lambda[i] = dl;
            work.d_c[i] = dc;
        }
    }
    for k in 3 * nc..m {
        let (l, c) = (work.lambda[k], work.c[k]);
        let r = work.r[nc + k - 3 * nc];
        let (lo, hi) = work.sets[k - 3 * nc].bounds();
        let w = l - r * c;
        // F = λ − P_S(λ − r c): on a bound's piece λ − bound, else r c.
        let (f, dl, dc) = if w <= lo {
            (l - lo, 1.0, 0.0)
        } else if w >= hi {
            (l - hi, 1.0, 0.0)
        } else {
            (r * c, 0.0, r)
        };
        work.f[k] = f;
        phi += f * f;
        if jacobian {
            work.d_lambda[nc + k - 3 * nc][0] = dl;
            work.d_c[nc + k - 3 * nc][0] = dc;
        }
    }
    phi
}

/// The Newton matrix `∂_λF + ∂_cF A` into `work.jac`.
fn assemble(work: &mut NewtonWork, nc: usize, m: usize) {
    let (a, jac) = (&work.a, &mut work.jac);
    for i in 0..nc {
        let (dl, dc) = (&work.d_lambda[i], &work.d_c[i]);
        for j in 0..m {
            let col = &a[j * m..(j + 1) * m];
            for s in 0..3 {
                let mut v = 0.0;
                for t in 0..3 {
                    v += dc[3 * s + t] * col[3 * i + t];
                }
                jac[j * m + 3 * i + s] = v;
            }
        }
        for s in 0..3 {
            for t in 0..3 {
                jac[(3 * i + t) * m + 3 * i + s] += dl[3 * s + t];
            }
        }
    }
    for k in 3 * nc..m {
        let (dl, dc) = (
            work.d_lambda[nc + k - 3 * nc][0],
            work.d_c[nc + k - 3 * nc][0],
        );
        for j in 0..m {
            jac[j * m + k] = dc * a[j * m + k];
        }
        jac[k * m + k] += dl;
    }
}
