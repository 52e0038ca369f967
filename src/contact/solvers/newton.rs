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
//! A contact with rows beyond its three ([`crate::contact::wide`]: MuJoCo's
//! `condim` 4 and 6) is one block of `d ≤ 6` rows: the problem is
//! reordered so that its rows are contiguous (`[t1, t2, its cone rows…,
//! n]`), `F_T` and its derivatives taken over all `d − 1` tangential rows;
//! without such rows the order, and the arithmetic, are the three-row ones.
//!
//! The linear system is dense `m × m` (formed from `G`'s operator on the
//! tree path). Its identity rows (a breaking contact's `F = λ`, a row on a
//! bound's piece) fix their step at `−F`; the other rows' system is
//! factorized by LU with partial pivoting on `J + εI` and refined against
//! `J`: `J` is singular when `G` is (a body with more contacts than dofs),
//! and the regularized solve then takes a small step along the null space.

use crate::contact::RowSet;
use crate::contact::linalg::{lu_apply, lu_factor};
use crate::contact::operator::{Delassus, DelassusOperator};
use crate::contact::wide::{ConeRows, MAX_CONE_ROWS};

/// Newton steps per attempt (measured: the solves it finishes take 2 to 6).
pub(crate) const NEWTON_STEPS: usize = 10;
/// The scales of `r` tried in turn, each from the same iterate: where the
/// first stalls, a larger `r` (velocity-weighted pieces) often does not
/// (measured with the NumPy prototype: on the humanoid's 280 hard problems
/// 8 left unsolved instead of 22, on the Allegro hand's 50 problems 6.8
/// ADMM iterations per solve instead of 13.6).
pub(crate) const R_SCALES: [f64; 2] = [1.0, 100.0];
/// The row stride of a block's derivatives: the largest cone's rows
/// (three, and [`MAX_CONE_ROWS`] more).
const STRIDE: usize = 3 + MAX_CONE_ROWS;
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
    /// Per block, `∂F/∂λ` and `∂F/∂c` (`d × d` row-major, at the block's
    /// `d_at`: a contact's `d` its rows, a one-dimensional row's 1).
    d_lambda: Vec<f64>,
    d_c: Vec<f64>,
    d_at: Vec<usize>,
    /// Each contact's first row and dimension in the working order.
    blocks: Vec<(usize, usize)>,
    /// Each working row's block and place in it (contacts' rows only).
    row_block: Vec<(usize, usize)>,
    /// Where the one-dimensional rows start in the working order.
    rows_start: usize,
    /// With cone rows: the problem's row of each working row (each
    /// contact's rows made contiguous, `[t1, t2, its cone rows…, n]`),
    /// and the problem's `b` and starting point in that order; empty
    /// without (the working order is the problem's).
    order: Vec<usize>,
    b_work: Vec<f64>,
    z_work: Vec<f64>,
    /// `A` in the problem's order, while it is permuted.
    a_problem: Vec<f64>,
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
/// `nc = mu.len()` contacts (with the rows `cones` adds to their cones) and
/// the rows after `3·nc` in `row_sets` (empty: all unilateral). Each
/// iterate is offered to `accept`, which returns its `ε_abs`, or `None` to
/// stop (it solves the problem). `candidate` holds the last iterate offered.
#[allow(clippy::too_many_arguments)]
pub(crate) fn newton(
    work: &mut NewtonWork,
    mu: &[f64],
    row_sets: &[RowSet],
    cones: &ConeRows,
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
    layout(work, nc, m, row_sets, cones);
    a.dense_into(d, &mut work.a, &mut work.unit);
    if !work.order.is_empty() {
        // Each contact's rows made contiguous: A, b and z reordered.
        std::mem::swap(&mut work.a, &mut work.a_problem);
        work.a.clear();
        work.a.resize(m * m, 0.0);
        for (j, &oj) in work.order.iter().enumerate() {
            for (i, &oi) in work.order.iter().enumerate() {
                work.a[j * m + i] = work.a_problem[oj * m + oi];
            }
        }
        work.b_work.clear();
        work.b_work.extend(work.order.iter().map(|&o| b[o]));
        work.z_work.clear();
        work.z_work.extend(work.order.iter().map(|&o| z[o]));
    }
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
    let nb = nc + (m - work.rows_start);
    work.d_at.clear();
    let mut at = 0;
    for b in 0..nb {
        work.d_at.push(at);
        at += work.blocks.get(b).map_or(1, |&(_, d)| d * d);
    }
    work.d_lambda.resize(at, 0.0);
    work.d_c.resize(at, 0.0);
    work.jac.resize(m * m, 0.0);
    work.pivot.resize(m, 0);
    // With cone rows, b and z in the working order (taken out of `work`
    // for the attempts, put back after).
    let (b_work, z_work) = (
        std::mem::take(&mut work.b_work),
        std::mem::take(&mut work.z_work),
    );
    let (b, z) = if work.order.is_empty() {
        (b, z)
    } else {
        (&b_work[..], &z_work[..])
    };
    // Each scale of r in turn, from z, until one solves the problem; the
    // last one that did first (consecutive problems of a simulation are alike).
    for k in 0..R_SCALES.len() {
        let which = (work.last_scale + k) % R_SCALES.len();
        let scale = R_SCALES[which];
        // r: the inverse of each block's mean diagonal entry (impulse per
        // velocity), times the scale.
        work.r.clear();
        for i in 0..nc {
            let (first, dim) = work.blocks[i];
            let tr: f64 = (first..first + dim).map(|k| work.a[k * m + k]).sum();
            work.r
                .push(scale * if tr > 0.0 { dim as f64 / tr } else { 1.0 });
        }
        for k in work.rows_start..m {
            let akk = work.a[k * m + k];
            work.r.push(scale * if akk > 0.0 { 1.0 / akk } else { 1.0 });
        }
        if attempt(work, mu, b, z, candidate, accept) {
            work.last_scale = which;
            break;
        }
    }
    (work.b_work, work.z_work) = (b_work, z_work);
}

/// The working order of a problem: each contact's block (its first row and
/// dimension), each row's block, the sets of the one-dimensional rows and,
/// with cone rows, the permutation that makes each contact's rows
/// contiguous (`[t1, t2, its cone rows…, n]`, then the other rows in order).
fn layout(work: &mut NewtonWork, nc: usize, m: usize, row_sets: &[RowSet], cones: &ConeRows) {
    let set = |l: usize| row_sets.get(l).copied().unwrap_or_default();
    work.blocks.clear();
    work.row_block.clear();
    work.order.clear();
    work.sets.clear();
    if cones.is_empty() {
        for i in 0..nc {
            work.blocks.push((3 * i, 3));
            work.row_block.extend((0..3).map(|s| (i, s)));
        }
        work.rows_start = 3 * nc;
        work.sets.extend((0..m - 3 * nc).map(set));
        return;
    }
    for i in 0..nc {
        let extra = cones.of(i);
        work.blocks.push((work.order.len(), 3 + extra.len()));
        work.order.extend([3 * i, 3 * i + 1]);
        work.order.extend_from_slice(extra);
        work.order.push(3 * i + 2);
        work.row_block.extend((0..3 + extra.len()).map(|s| (i, s)));
    }
    work.rows_start = work.order.len();
    for k in 3 * nc..m {
        let s = set(k - 3 * nc);
        if !matches!(s, RowSet::Cone(_)) {
            work.order.push(k);
            work.sets.push(s);
        }
    }
}

/// Newton steps from `z` with the current `work.r`, in the working order
/// (`b`, `z` in it); each iterate offered to `accept` in the problem's
/// order. Whether `accept` stopped them (solved).
fn attempt(
    work: &mut NewtonWork,
    mu: &[f64],
    b: &[f64],
    z: &[f64],
    candidate: &mut [f64],
    accept: &mut dyn FnMut(&[f64]) -> Option<f64>,
) -> bool {
    let m = b.len();
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
        assemble(work, m);
        let jmax = work.jac.iter().fold(0.0f64, |s, x| s.max(x.abs()));
        work.free.clear();
        for k in 0..m {
            if identity_row(work, k) {
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
        if work.order.is_empty() {
            candidate.copy_from_slice(&work.lambda);
        } else {
            for (&o, &l) in work.order.iter().zip(&work.lambda) {
                candidate[o] = l;
            }
        }
        if accept(candidate).is_none() {
            return true;
        }
    }
    false
}

/// Whether row `k` of the Newton matrix is `e_kᵀ` (its `∂F/∂c` row is
/// zero and its `∂F/∂λ` row the unit row), from the blocks `evaluate` kept.
fn identity_row(work: &NewtonWork, k: usize) -> bool {
    if k >= work.rows_start {
        let b = work.blocks.len() + k - work.rows_start;
        let at = work.d_at[b];
        return work.d_c[at] == 0.0 && work.d_lambda[at] == 1.0;
    }
    let (b, s) = work.row_block[k];
    let dim = work.blocks[b].1;
    let at = work.d_at[b] + dim * s;
    let (dl, dc) = (&work.d_lambda[at..at + dim], &work.d_c[at..at + dim]);
    (0..dim).all(|t| dc[t] == 0.0 && dl[t] == if t == s { 1.0 } else { 0.0 })
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
        let (k, dim) = work.blocks[i];
        let n = k + dim - 1;
        if work.lambda[n] - work.r[i] * work.c[n] <= 0.0
            && work.lambda[k..k + dim].iter().any(|&x| x != 0.0)
        {
            work.lambda[k..k + dim].fill(0.0);
            changed = true;
        }
    }
    let first = work.rows_start;
    for k in first..m {
        let (lo, hi) = work.sets[k - first].bounds();
        let w = work.lambda[k] - work.r[nc + k - first] * work.c[k];
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
/// blocks `∂F/∂λ`, `∂F/∂c`; returns `‖F‖²`. A contact's block of `d` rows
/// has `d − 1` tangential rows and its normal last.
fn evaluate(work: &mut NewtonWork, mu: &[f64], jacobian: bool) -> f64 {
    let nc = mu.len();
    let m = work.lambda.len();
    let mut phi = 0.0;
    for (i, &mu_i) in mu.iter().enumerate() {
        let (k, dim) = work.blocks[i];
        let (l, c, r) = (&work.lambda[k..k + dim], &work.c[k..k + dim], work.r[i]);
        let n = dim - 1;
        let mut dl = [0.0; STRIDE * STRIDE];
        let mut dc = [0.0; STRIDE * STRIDE];
        let mut f = [0.0; STRIDE];
        let rn = l[n] - r * c[n];
        if rn <= 0.0 {
            // Breaking: F = λ.
            for s in 0..dim {
                dl[STRIDE * s + s] = 1.0;
                f[s] = l[s];
            }
        } else {
            dc[STRIDE * n + n] = r;
            f[n] = r * c[n];
            let mut w = [0.0; STRIDE];
            for s in 0..n {
                w[s] = l[s] - r * c[s];
            }
            let nw = if n == 2 {
                w[0].hypot(w[1])
            } else {
                w[..n].iter().map(|x| x * x).sum::<f64>().sqrt()
            };
            let rad = mu_i * rn;
            if rad > 0.0 && nw <= rad {
                // Sticking: F = r c.
                for s in 0..n {
                    dc[STRIDE * s + s] = r;
                    f[s] = r * c[s];
                }
            } else if nw > 0.0 {
                // Sliding: F_T = λ_T − rad ŵ.
                let mut u = [0.0; STRIDE];
                for s in 0..n {
                    u[s] = w[s] / nw;
                }
                let sc = rad / nw;
                // P = sc (I − ûûᵀ): dF_T = (I − P) dλ_T − μ û dλ_N + r P dc_T + μ r û dc_N.
                for s in 0..n {
                    for t in 0..n {
                        // (The lower index first: the three-row block's
                        // arithmetic, rounding included.)
                        let p = if s == t {
                            sc * (1.0 - u[s] * u[s])
                        } else {
                            -sc * u[s.min(t)] * u[s.max(t)]
                        };
                        dl[STRIDE * s + t] = if s == t { 1.0 - p } else { -p };
                        dc[STRIDE * s + t] = r * p;
                    }
                    dl[STRIDE * s + n] = -mu_i * u[s];
                    dc[STRIDE * s + n] = mu_i * r * u[s];
                    f[s] = l[s] - rad * u[s];
                }
            } else {
                // No friction (μ = 0) and w = 0: F_T = λ_T.
                for s in 0..n {
                    dl[STRIDE * s + s] = 1.0;
                    f[s] = l[s];
                }
            }
        }
        for (s, &v) in f[..dim].iter().enumerate() {
            work.f[k + s] = v;
            phi += v * v;
        }
        if jacobian {
            let at = work.d_at[i];
            for s in 0..dim {
                for t in 0..dim {
                    work.d_lambda[at + dim * s + t] = dl[STRIDE * s + t];
                    work.d_c[at + dim * s + t] = dc[STRIDE * s + t];
                }
            }
        }
    }
    let first = work.rows_start;
    for k in first..m {
        let (l, c) = (work.lambda[k], work.c[k]);
        let r = work.r[nc + k - first];
        let (lo, hi) = work.sets[k - first].bounds();
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
            let at = work.d_at[nc + k - first];
            work.d_lambda[at] = dl;
            work.d_c[at] = dc;
        }
    }
    phi
}

/// The Newton matrix `∂_λF + ∂_cF A` into `work.jac`.
fn assemble(work: &mut NewtonWork, m: usize) {
    let (a, jac) = (&work.a, &mut work.jac);
    let nc = work.blocks.len();
    for (i, &(k, dim)) in work.blocks.iter().enumerate() {
        let at = work.d_at[i];
        let (dl, dc) = (&work.d_lambda[at..], &work.d_c[at..]);
        for j in 0..m {
            let col = &a[j * m..(j + 1) * m];
            for s in 0..dim {
                let mut v = 0.0;
                for t in 0..dim {
                    v += dc[dim * s + t] * col[k + t];
                }
                jac[j * m + k + s] = v;
            }
        }
        for s in 0..dim {
            for t in 0..dim {
                jac[(k + t) * m + k + s] += dl[dim * s + t];
            }
        }
    }
    let first = work.rows_start;
    for k in first..m {
        let (dl, dc) = (
            work.d_lambda[work.d_at[nc + k - first]],
            work.d_c[work.d_at[nc + k - first]],
        );
        for j in 0..m {
            jac[j * m + k] = dc * a[j * m + k];
        }
        jac[k * m + k] += dl;
    }
}
