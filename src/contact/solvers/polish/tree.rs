//! The polish's reduced system on the tree path: solved through `G`'s
//! factors by the Woodbury identity, one dense block per set of dofs the
//! tree and the unknowns' supports join, and re-solved with the factors
//! kept from an earlier problem of the same unknowns.

use super::{PolishWork, REFINEMENTS, REGULARIZATION, column};
use crate::contact::TreeDelassus;
use crate::contact::linalg::{lu_apply, lu_factor};
use crate::contact::operator::{Delassus, DelassusOperator};
use crate::model::NO_DOF;

/// The reduced system with `G`'s factors: `H + εI = Δ + U M⁻¹ Vᵀ`, with
/// `U`'s rows `E J` (the equations' rows of `J`), `V`'s rows `Bᵀ J` (the
/// unknowns' impulse directions) and `Δ` diagonal (`E R B` is: each unknown
/// has its own equation row), solved by the Woodbury identity through the
/// `nv × nv` matrix `M + Vᵀ Δ⁻¹ U` (LU: `V ≠ U` where contacts slide),
/// then refined against `H` like the dense path. `ε` is relative to `H`'s
/// largest diagonal entry (the dense path's largest entry, for sticking
/// contacts the same).
pub(super) fn solve_tree(
    work: &mut PolishWork,
    mu: &[f64],
    t: &TreeDelassus,
    d: &[f64],
    b: &[f64],
) -> bool {
    work.kept = false;
    let (n, nv) = (work.unknowns.len(), t.nv());
    let jac = t.jacobian();
    t.block_diagonal(&mut work.gdiag);
    work.rows.clear();
    work.offsets.clear();
    work.delta.clear();
    work.dofs.clear();
    let mut hmax = 0.0f64;
    for e in 0..n {
        let (first, dir) = column(work, mu, e);
        let row = work.equations[e];
        let block = jac.block_of_row(row);
        let (support, entries) = (jac.contact_support(block), jac.block_entries(block));
        let (c, start) = (
            row - jac.block_rows(block).start,
            first - jac.block_rows(block).start,
        );
        work.offsets.push(work.dofs.len());
        work.dofs.extend_from_slice(support);
        for e in entries {
            work.rows.push(e[c]);
        }
        for e in entries {
            let mut v = 0.0;
            for (s, &w) in dir.iter().enumerate() {
                if w != 0.0 {
                    v += w * e[start + s];
                }
            }
            work.rows.push(v);
        }
        let mut hjj = d[row];
        for (s, &w) in dir.iter().enumerate() {
            if w != 0.0 {
                hjj += w * t.block_entry(&work.gdiag, row, first + s);
            }
        }
        hmax = hmax.max(hjj.abs());
        work.delta.push(d[row]);
    }
    work.offsets.push(work.dofs.len());
    for x in work.delta.iter_mut() {
        *x += REGULARIZATION * hmax;
    }
    if !work.delta.iter().all(|&x| x > 0.0) {
        return false;
    }
    // K = M + Σ_j v_j u_jᵀ / Δ_j, one dense block (column-major in h) per
    // set of dofs the tree and the unknowns' supports join: separate bodies
    // (a grid of boxes) factor separately, and a body no unknown touches
    // not at all.
    let bl = &mut work.blocks;
    bl.split(t.dof_parent(), &work.dofs, &work.offsets);
    work.h.clear();
    work.h.resize(bl.hoff[bl.count()], 0.0);
    let h = &mut work.h[..];
    let mass = t.mass();
    for c in (0..bl.count()).filter(|&c| bl.used[c]) {
        let (dofs, base) = (bl.dofs(c), bl.hoff[c]);
        let size = dofs.len();
        for (jl, &kj) in dofs.iter().enumerate() {
            let col = &mut h[base + jl * size..base + (jl + 1) * size];
            for (x, &ki) in col.iter_mut().zip(dofs) {
                *x = mass[(ki, kj)];
            }
        }
    }
    // Each support's places in its block.
    work.local.clear();
    work.local.extend(work.dofs.iter().map(|&k| bl.local[k]));
    for e in 0..n {
        let (start, end) = (work.offsets[e], work.offsets[e + 1]);
        let Some(&first) = work.dofs[start..end].first() else {
            continue;
        };
        let c = bl.of[first];
        let (base, size) = (bl.hoff[c], bl.start[c + 1] - bl.start[c]);
        let (u, v) = work.rows[2 * start..2 * end].split_at(end - start);
        let local = &work.local[start..end];
        let inv = 1.0 / work.delta[e];
        for (&uc, &lc) in u.iter().zip(local) {
            let uc = uc * inv;
            if uc != 0.0 {
                scatter_axpy(
                    &mut h[base + lc * size..base + (lc + 1) * size],
                    local,
                    v,
                    uc,
                );
            }
        }
    }
    work.pivot.resize(nv, 0);
    for c in 0..bl.count() {
        let (base, start, size) = (bl.hoff[c], bl.start[c], bl.start[c + 1] - bl.start[c]);
        if bl.used[c]
            && !lu_factor(
                &mut h[base..base + size * size],
                size,
                &mut work.pivot[start..start + size],
            )
        {
            return false;
        }
    }
    work.w.resize(nv, 0.0);
    tree_rhs(work, mu, t, d, b);
    work.y.clear();
    work.y.extend_from_slice(&work.rhs);
    woodbury_solve(work);
    for _ in 0..REFINEMENTS {
        apply_h(work, mu, t, d, b, Source::Y);
        work.residual.clear();
        for e in 0..n {
            work.residual
                .push(work.rhs[e] - work.column[work.equations[e]]);
        }
        if refined(&work.residual, work.target) {
            break;
        }
        std::mem::swap(&mut work.y, &mut work.residual);
        woodbury_solve(work);
        std::mem::swap(&mut work.y, &mut work.residual);
        for e in 0..n {
            work.y[e] += work.residual[e];
        }
    }
    for e in 0..n {
        work.y[e] += work.y0[e];
    }
    true
}

/// `work.rhs = −E((G + R) B y₀ + b)`: the change `δ` from `y₀` solves
/// `H δ = rhs` (the tree path's buffers sized for the problem's `m` rows).
fn tree_rhs(work: &mut PolishWork, mu: &[f64], t: &TreeDelassus, d: &[f64], b: &[f64]) {
    let m = b.len();
    work.lambda.resize(m, 0.0);
    work.zero.clear();
    work.zero.resize(m, 0.0);
    work.column.resize(m, 0.0);
    apply_h(work, mu, t, d, b, Source::Y0);
    work.rhs.clear();
    for e in 0..work.unknowns.len() {
        work.rhs.push(-work.column[work.equations[e]]);
    }
}

/// The most refinements [`resolve_tree`] makes.
const KEPT_REFINEMENTS: usize = 4;

/// How far above `work.target` a stalled [`resolve_tree`] may end.
const KEPT_FLOOR: f64 = 16.0;

/// The reduced system of this problem solved with the factors kept from the
/// last problem solved with the same unknowns: `H` changes from step to
/// step with the contact frames and the tree's configuration, so the old
/// `(H_old + εI)⁻¹` is a preconditioner of the refinement against this
/// `H` (one Delassus product a round, no factorization: a pile at rest
/// converges in one or two). Refines until the residual reaches
/// `work.target` or stops halving, at most [`KEPT_REFINEMENTS`] times;
/// fails, leaving the kept factors as they are, where it grows. The
/// polish accepts the answer only if it solves the NCP to the solve's
/// tolerance, as it does [`solve_tree`]'s.
pub(super) fn resolve_tree(
    work: &mut PolishWork,
    mu: &[f64],
    t: &TreeDelassus,
    d: &[f64],
    b: &[f64],
) -> bool {
    let n = work.unknowns.len();
    if !(work.target > 0.0) || work.w.len() != t.nv() {
        return false;
    }
    tree_rhs(work, mu, t, d, b);
    work.y.clear();
    work.y.resize(n, 0.0);
    let mut last = f64::INFINITY;
    for round in 0..=KEPT_REFINEMENTS {
        // r = rhs − H y (y = 0 first: r = rhs).
        work.residual.clear();
        if round == 0 {
            work.residual.extend_from_slice(&work.rhs);
        } else {
            apply_h(work, mu, t, d, b, Source::Y);
            for e in 0..n {
                work.residual
                    .push(work.rhs[e] - work.column[work.equations[e]]);
            }
        }
        if refined(&work.residual, work.target) {
            for e in 0..n {
                work.y[e] += work.y0[e];
            }
            return true;
        }
        let r = work.residual.iter().fold(0.0f64, |s, x| s.max(x.abs()));
        // Growing: the kept factors are too far from this system's.
        if !(r <= 2.0 * last) {
            return false;
        }
        // Stalled near the target: the rounding (a pile at rest stalls
        // at 1.04 times the target). Farther from it, fail: the new `H`
        // is factorized.
        let stalled = round > 0 && (r >= 0.5 * last || round == KEPT_REFINEMENTS);
        if stalled {
            if r > KEPT_FLOOR * work.target {
                return false;
            }
            for e in 0..n {
                work.y[e] += work.y0[e];
            }
            return true;
        }
        last = r;
        std::mem::swap(&mut work.y, &mut work.residual);
        woodbury_solve(work);
        std::mem::swap(&mut work.y, &mut work.residual);
        for e in 0..n {
            work.y[e] += work.residual[e];
        }
    }
    false
}

/// Which unknowns [`apply_h`] multiplies.
#[derive(Clone, Copy, PartialEq)]
enum Source {
    /// `work.y0`, with `b` added: `(G + R) B y₀ + b`.
    Y0,
    /// `work.y`, without `b`.
    Y,
}

/// `work.column = (G + R) B y (+ b)` for the unknowns `y` of `source`
/// (`H y` is its equations' rows).
fn apply_h(
    work: &mut PolishWork,
    mu: &[f64],
    t: &TreeDelassus,
    d: &[f64],
    b: &[f64],
    source: Source,
) {
    work.lambda.fill(0.0);
    for e in 0..work.unknowns.len() {
        let (first, dir) = column(work, mu, e);
        let y = if source == Source::Y0 {
            work.y0[e]
        } else {
            work.y[e]
        };
        for (s, &w) in dir.iter().enumerate() {
            if w != 0.0 {
                work.lambda[first + s] += w * y;
            }
        }
    }
    let rhs = if source == Source::Y0 {
        b
    } else {
        &work.zero[..]
    };
    Delassus::Tree(t).affine(d, rhs, &work.lambda, &mut work.column);
}

/// `work.y ← (Δ + U M⁻¹ Vᵀ)⁻¹ work.y` with the LU of `M + Vᵀ Δ⁻¹ U` in `work.h`.
fn woodbury_solve(work: &mut PolishWork) {
    work.w.fill(0.0);
    for e in 0..work.unknowns.len() {
        let (start, end) = (work.offsets[e], work.offsets[e + 1]);
        let v = &work.rows[start + end..2 * end];
        let te = work.y[e] / work.delta[e];
        scatter_axpy(&mut work.w, &work.dofs[start..end], v, te);
    }
    let bl = &work.blocks;
    for c in 0..bl.count() {
        if !bl.used[c] {
            continue;
        }
        let (dofs, base, start) = (bl.dofs(c), bl.hoff[c], bl.start[c]);
        let size = dofs.len();
        work.gather.clear();
        work.gather.extend(dofs.iter().map(|&k| work.w[k]));
        lu_apply(
            &work.h[base..base + size * size],
            size,
            &work.pivot[start..start + size],
            &mut work.gather,
        );
        for (&k, &x) in dofs.iter().zip(&work.gather) {
            work.w[k] = x;
        }
    }
    for e in 0..work.unknowns.len() {
        let (start, end) = (work.offsets[e], work.offsets[e + 1]);
        let u = &work.rows[2 * start..start + end];
        let dot = gather_dot(&work.w, &work.dofs[start..end], u);
        work.y[e] = (work.y[e] - dot) / work.delta[e];
    }
}

/// `x[idx[i]] += v[i] · a` for every `i` (a function of its own: the
/// slices' noalias lets the loop keep them in registers).
fn scatter_axpy(x: &mut [f64], idx: &[usize], v: &[f64], a: f64) {
    for (&i, &vi) in idx.iter().zip(v) {
        x[i] += vi * a;
    }
}

/// `Σ v[i] · x[idx[i]]`, summed in order.
fn gather_dot(x: &[f64], idx: &[usize], v: &[f64]) -> f64 {
    let mut s = 0.0;
    for (&i, &vi) in idx.iter().zip(v) {
        s += vi * x[i];
    }
    s
}

/// Whether a refinement's residual `r` (the reduced system's equation
/// rows) is within `target` everywhere: the next correction would move the
/// candidate's velocities by less than that.
fn refined(r: &[f64], target: f64) -> bool {
    target > 0.0 && r.iter().all(|x| x.abs() <= target)
}

/// The dofs split into the sets the kinematic tree and the supports of a
/// system's unknowns join (union–find), each set's dofs in increasing
/// order: `K = M + Vᵀ Δ⁻¹ U` is block diagonal over them.
#[derive(Default)]
pub(super) struct Blocks {
    /// Union–find parents, then each dof's root.
    root: Vec<usize>,
    /// A root's set, while numbering them.
    label: Vec<usize>,
    /// Each dof's set.
    of: Vec<usize>,
    /// The sets' dofs, `sorted[start[c]..start[c + 1]]`.
    start: Vec<usize>,
    sorted: Vec<usize>,
    /// Each dof's place in its set.
    local: Vec<usize>,
    /// Where each set's block starts in `h` (`hoff[count]`: the total).
    hoff: Vec<usize>,
    /// Whether a set holds an unknown's support (else its block is skipped:
    /// the Woodbury solve never reaches it).
    used: Vec<bool>,
}

impl Blocks {
    fn find(&mut self, mut k: usize) -> usize {
        while self.root[k] != k {
            self.root[k] = self.root[self.root[k]];
            k = self.root[k];
        }
        k
    }

    fn join(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        if a != b {
            self.root[a.max(b)] = a.min(b);
        }
    }

    fn count(&self) -> usize {
        self.start.len() - 1
    }

    fn dofs(&self, c: usize) -> &[usize] {
        &self.sorted[self.start[c]..self.start[c + 1]]
    }

    /// The sets of the tree `parent` joined by the supports
    /// `dofs[offsets[e]..offsets[e + 1]]`.
    fn split(&mut self, parent: &[usize], dofs: &[usize], offsets: &[usize]) {
        let nv = parent.len();
        self.root.clear();
        self.root.extend(0..nv);
        for (k, &p) in parent.iter().enumerate() {
            if p != NO_DOF {
                self.join(k, p);
            }
        }
        for w in offsets.windows(2) {
            let support = &dofs[w[0]..w[1]];
            if let Some((&first, rest)) = support.split_first() {
                for &k in rest {
                    self.join(first, k);
                }
            }
        }
        self.label.clear();
        self.label.resize(nv, usize::MAX);
        self.of.clear();
        self.start.clear();
        self.start.push(0);
        for k in 0..nv {
            let r = self.find(k);
            if self.label[r] == usize::MAX {
                self.label[r] = self.start.len() - 1;
                self.start.push(0);
            }
            self.of.push(self.label[r]);
        }
        let count = self.start.len() - 1;
        for k in 0..nv {
            self.start[self.of[k] + 1] += 1;
        }
        for c in 0..count {
            self.start[c + 1] += self.start[c];
        }
        // Each set's dofs in increasing order (`label` reused as cursors).
        self.label.clear();
        self.label.extend_from_slice(&self.start[..count]);
        self.sorted.clear();
        self.sorted.resize(nv, 0);
        self.local.clear();
        self.local.resize(nv, 0);
        for k in 0..nv {
            let c = self.of[k];
            self.sorted[self.label[c]] = k;
            self.local[k] = self.label[c] - self.start[c];
            self.label[c] += 1;
        }
        self.used.clear();
        self.used.resize(count, false);
        for w in offsets.windows(2) {
            if let Some(&k) = dofs[w[0]..w[1]].first() {
                self.used[self.of[k]] = true;
            }
        }
        self.hoff.clear();
        self.hoff.push(0);
        for c in 0..count {
            let size = self.start[c + 1] - self.start[c];
            let used = if self.used[c] { size * size } else { 0 };
            self.hoff.push(self.hoff[c] + used);
        }
    }
}
