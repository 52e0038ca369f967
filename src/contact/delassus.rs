//! Constraint Jacobian (contacts and joint limits) and the Delassus matrix `G = J M⁻¹ Jᵀ` through the
//! tree-sparse factorization `M = Lᵀ D L`:
//!
//! `G = J L⁻¹ D⁻¹ L⁻ᵀ Jᵀ = Yᵀ D⁻¹ Y`, with `Y = L⁻ᵀ Jᵀ`.
//!
//! A contact's Jacobian rows are non-zero only on the dofs supporting its two
//! bodies (an ancestor-closed set), and the leaf-to-root solve with `Lᵀ` keeps
//! that support, so each column of `Y` costs O(depth²) and each block of `G`
//! O(depth). `M⁻¹` is never formed.

use super::BlockCoupling;
use super::linalg::reshape_zeroed;
use crate::collision::Contact;
use crate::dynamics::{Data, point_velocity_column};
use crate::model::{Model, NO_DOF};
use nalgebra::DMatrix;

/// Which side of its range a joint limit stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LimitSide {
    /// `q ≥ lower`: the row is `c = q̇`.
    Lower,
    /// `q ≤ upper`: the row is `c = −q̇`.
    Upper,
}

/// An active joint-position limit of a one-dof joint: a unilateral row
/// `λ ≥ 0 ⟂ c ≥ 0` of the constraint problem, `c = ±q̇_dof` (+ stabilization).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JointLimitRow {
    /// The joint (its body's index).
    pub joint: usize,
    pub dof: usize,
    pub side: LimitSide,
    /// Distance to the stop, `q − lower` or `upper − q` (negative: beyond it).
    pub distance: f64,
}

impl JointLimitRow {
    /// `c = sign · q̇_dof`.
    pub fn sign(&self) -> f64 {
        match self.side {
            LimitSide::Lower => 1.0,
            LimitSide::Upper => -1.0,
        }
    }
}

/// One-dimensional rows with sparse Jacobians over the dofs (tendon limits,
/// equality constraints, dry friction): row `r` is `c = Σ_i coefs[i]·v[dofs[i]]`
/// over `i ∈ offsets[r]..offsets[r + 1]` (a dof may appear twice: the
/// entries add).
#[derive(Clone, Debug, PartialEq)]
pub struct SparseRows {
    pub dofs: Vec<usize>,
    pub coefs: Vec<f64>,
    pub offsets: Vec<usize>,
}

impl Default for SparseRows {
    fn default() -> Self {
        SparseRows {
            dofs: Vec::new(),
            coefs: Vec::new(),
            offsets: vec![0],
        }
    }
}

impl SparseRows {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Removes every row (keeps the allocations).
    pub fn clear(&mut self) {
        self.dofs.clear();
        self.coefs.clear();
        self.offsets.clear();
        self.offsets.push(0);
    }
    /// Appends a row of `(dof, coef)` entries.
    pub fn push(&mut self, entries: impl IntoIterator<Item = (usize, f64)>) {
        for (k, c) in entries {
            self.dofs.push(k);
            self.coefs.push(c);
        }
        self.offsets.push(self.dofs.len());
    }
    /// The entries of row `r`.
    pub fn row(&self, r: usize) -> impl Iterator<Item = (usize, f64)> + Clone + '_ {
        let range = self.offsets[r]..self.offsets[r + 1];
        self.dofs[range.clone()]
            .iter()
            .copied()
            .zip(self.coefs[range].iter().copied())
    }
}

/// Constraint Jacobian workspace: `nc` contacts (3 rows each) then `nl`
/// one-dimensional rows (joint limits, then the [`SparseRows`]: 1 row
/// each), the row order of [`crate::contact::ContactProblem`].
#[derive(Clone, Debug, Default)]
pub struct ContactJacobian {
    /// (3·nc + nl, nv): rows `[t1, t2, n]` of each contact (`c = J v` is
    /// `v_a − v_b` at the contact point, in the contact frame), then each
    /// limit's row.
    pub jacobian: DMatrix<f64>,
    /// Dofs supporting each block (contact or limit), in descending order:
    /// `support[offsets[b]..offsets[b + 1]]`.
    pub support: Vec<usize>,
    pub offsets: Vec<usize>,
    /// `J`'s entries on the supports, packed: `packed[offsets[b] + s]` holds
    /// block `b`'s rows (up to three; zero past the block's width) at dof
    /// `support[offsets[b] + s]` (contiguous for the products).
    packed: Vec<[f64; 3]>,
    /// `Y = L⁻ᵀ Jᵀ` by block: `y[b·nv + k]` holds row `k` of block `b`'s
    /// (up to three) columns, zero outside the block's support.
    y: Vec<[f64; 3]>,
    /// (nv) `D_kk` of the factorization.
    d: Vec<f64>,
    contacts: usize,
    mark: Vec<usize>,
    stamp: usize,
}

impl ContactJacobian {
    /// Number of contacts.
    pub fn nc(&self) -> usize {
        self.contacts
    }
    /// Number of blocks: contacts, then limit rows.
    pub fn nblocks(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }
    /// Number of rows `3·nc + nl`.
    pub fn rows(&self) -> usize {
        3 * self.contacts + (self.nblocks() - self.contacts)
    }
    /// The rows of block `b` (a contact's three, or a limit's one).
    pub fn block_rows(&self, b: usize) -> std::ops::Range<usize> {
        if b < self.contacts {
            3 * b..3 * b + 3
        } else {
            let r = 3 * self.contacts + (b - self.contacts);
            r..r + 1
        }
    }
    /// The block that row `row` belongs to.
    pub fn block_of_row(&self, row: usize) -> usize {
        let nc = self.contacts;
        if row < 3 * nc { row / 3 } else { row - 2 * nc }
    }
    /// The dofs supporting block `b`, in descending order.
    pub fn contact_support(&self, b: usize) -> &[usize] {
        &self.support[self.offsets[b]..self.offsets[b + 1]]
    }
    /// Block `b`'s rows of `J` on its support: entry `s` holds the rows'
    /// entries (up to three, zero past the block's width) at dof
    /// `contact_support(b)[s]`.
    pub fn block_entries(&self, b: usize) -> &[[f64; 3]] {
        &self.packed[self.offsets[b]..self.offsets[b + 1]]
    }
    /// Packs `jacobian` on the supports ([`Self::block_entries`]).
    fn pack(&mut self) {
        self.packed.clear();
        for b in 0..self.nblocks() {
            let rows = self.block_rows(b);
            for &k in &self.support[self.offsets[b]..self.offsets[b + 1]] {
                let mut v = [0.0; 3];
                for (c, r) in rows.clone().enumerate() {
                    v[c] = self.jacobian[(r, k)];
                }
                self.packed.push(v);
            }
        }
    }
}

/// Fills `cj.jacobian` and the supports for `contacts`, after forward kinematics.
pub fn contact_jacobian(
    model: &Model,
    data: &Data,
    contacts: &[Contact],
    cj: &mut ContactJacobian,
) {
    constraint_jacobian(model, data, contacts, &[], &SparseRows::default(), cj);
}

/// Fills `cj.jacobian` and the supports for `contacts`, then `limits`,
/// then `rows`, after forward kinematics.
pub fn constraint_jacobian(
    model: &Model,
    data: &Data,
    contacts: &[Contact],
    limits: &[JointLimitRow],
    rows: &SparseRows,
    cj: &mut ContactJacobian,
) {
    let (nc, nv) = (contacts.len(), model.nv);
    let nl = limits.len();
    reshape_zeroed(&mut cj.jacobian, 3 * nc + nl + rows.len(), nv);
    cj.contacts = nc;
    cj.support.clear();
    cj.offsets.clear();
    cj.offsets.push(0);
    if cj.mark.len() != nv {
        cj.mark = vec![0; nv];
        cj.stamp = 0;
    }
    for (i, c) in contacts.iter().enumerate() {
        cj.stamp += 1;
        let start = cj.support.len();
        for (body, sign) in [(c.body_a, 1.0), (c.body_b, -1.0)] {
            let mut k = model.body_last_dof[body];
            while k != NO_DOF {
                let pv = point_velocity_column(&data.dof_jacobian[k], &c.point) * sign;
                let rows = c.frame.tr_mul(&pv);
                for r in 0..3 {
                    cj.jacobian[(3 * i + r, k)] += rows[r];
                }
                if cj.mark[k] != cj.stamp {
                    cj.mark[k] = cj.stamp;
                    cj.support.push(k);
                }
                k = model.dof_parent[k];
            }
        }
        cj.support[start..].sort_unstable_by(|a, b| b.cmp(a));
        cj.offsets.push(cj.support.len());
    }
    for (l, limit) in limits.iter().enumerate() {
        cj.jacobian[(3 * nc + l, limit.dof)] = limit.sign();
        // The dof and its ancestors (descending): where `L⁻ᵀ` fills the row in.
        let mut k = limit.dof;
        while k != NO_DOF {
            cj.support.push(k);
            k = model.dof_parent[k];
        }
        cj.offsets.push(cj.support.len());
    }
    for r in 0..rows.len() {
        cj.stamp += 1;
        let start = cj.support.len();
        for (dof, coef) in rows.row(r) {
            cj.jacobian[(3 * nc + nl + r, dof)] += coef;
            // The dof and its ancestors, each once.
            let mut k = dof;
            while k != NO_DOF && cj.mark[k] != cj.stamp {
                cj.mark[k] = cj.stamp;
                cj.support.push(k);
                k = model.dof_parent[k];
            }
        }
        cj.support[start..].sort_unstable_by(|a, b| b.cmp(a));
        cj.offsets.push(cj.support.len());
    }
    cj.pack();
}

/// `G = Yᵀ D⁻¹ Y` from the factorization in `data.ltdl` (see
/// [`crate::dynamics::ltdl_factorize`]); fills `g` (m, m) with
/// `m = 3·nc + nl` the rows of `cj`.
pub fn delassus_ltdl(model: &Model, data: &Data, cj: &mut ContactJacobian, g: &mut DMatrix<f64>) {
    delassus_ltdl_coupled(model, data, cj, &BlockCoupling::default(), g);
}

/// [`delassus_ltdl`] computing only the blocks of `coupling` (the others
/// are zero: their supports do not meet, see [`BlockCoupling`]).
///
/// A block's rows share its support, so `Y`'s columns are solved three at a
/// time (one load of `L` for three updates) and each pair of blocks is one
/// 3×3 product summed over the shorter support. `G` is bit for bit the
/// column-at-a-time formula's.
pub fn delassus_ltdl_coupled(
    model: &Model,
    data: &Data,
    cj: &mut ContactJacobian,
    coupling: &BlockCoupling,
    g: &mut DMatrix<f64>,
) {
    let (m, nv, nb) = (cj.rows(), model.nv, cj.nblocks());
    // Column-major (nv, nv): L[(k, a)] at k + a·nv.
    let l = data.ltdl.as_slice();
    let parent = &model.dof_parent[..nv];
    cj.d.clear();
    cj.d.extend((0..nv).map(|k| l[k + k * nv]));
    cj.y.clear();
    cj.y.resize(nb * nv, [0.0; 3]);
    // Column-major (m, nv): J[(row, k)] at row + k·m.
    let jac = cj.jacobian.as_slice();
    for b in 0..nb {
        let support = &cj.support[cj.offsets[b]..cj.offsets[b + 1]];
        let rows = cj.block_rows(b);
        let y = &mut cj.y[b * nv..(b + 1) * nv];
        for &k in support {
            for (r, row) in rows.clone().enumerate() {
                y[k][r] = jac[row + k * m];
            }
        }
        // Lᵀ y = jᵀ, leaf to root over the (descending) support.
        for &k in support {
            let yk = y[k];
            if yk == [0.0; 3] {
                continue;
            }
            let mut a = parent[k];
            while a != NO_DOF {
                let lka = l[k + a * nv];
                let ya = &mut y[a];
                ya[0] -= lka * yk[0];
                ya[1] -= lka * yk[1];
                ya[2] -= lka * yk[2];
                a = parent[a];
            }
        }
    }
    if g.shape() != (m, m) || !coupling.is_dense() {
        // (Uncoupled blocks are never written: zero them.)
        reshape_zeroed(g, m, m);
    }
    let cj = &*cj;
    // G's block (b, o), o ≥ b: Y_bᵀ D⁻¹ Y_o over the dofs both support
    // (outside them a product is an exact zero), each entry summed in the
    // order and with the rounding of `Σ_k y_ka y_kc / D_kk`.
    let pair = |g: &mut DMatrix<f64>, b: usize, o: usize| {
        let (sb, so) = (cj.contact_support(b), cj.contact_support(o));
        let support = if so.len() < sb.len() { so } else { sb };
        let (yb, yo) = (&cj.y[b * nv..(b + 1) * nv], &cj.y[o * nv..(o + 1) * nv]);
        // All nine sums, unrolled (a limit's unused rows are zeros, and the
        // diagonal block's lower triangle is not written).
        let mut s = [[0.0; 3]; 3];
        for &k in support {
            let dk = cj.d[k];
            let (u, w) = (yb[k], yo[k]);
            for i in 0..3 {
                for j in 0..3 {
                    s[i][j] += u[i] * w[j] / dk;
                }
            }
        }
        let (rb, ro) = (cj.block_rows(b), cj.block_rows(o));
        for (i, a) in rb.enumerate() {
            // On the diagonal block, the upper triangle (mirrored).
            let j0 = if b == o { i } else { 0 };
            for (j, c) in ro.clone().enumerate().skip(j0) {
                g[(a, c)] = s[i][j];
                g[(c, a)] = s[i][j];
            }
        }
    };
    for b in 0..nb {
        match coupling.neighbors(b) {
            None => (b..nb).for_each(|o| pair(g, b, o)),
            Some(near) => near
                .iter()
                .filter(|&&o| o >= b)
                .for_each(|&o| pair(g, b, o)),
        }
    }
}

/// Reference `G = J M⁻¹ Jᵀ` with a dense Cholesky of `data.mass_matrix`
/// (allocates; for tests and cross-checks only).
pub fn delassus_dense(data: &Data, jacobian: &DMatrix<f64>) -> DMatrix<f64> {
    let chol = data
        .mass_matrix
        .clone()
        .cholesky()
        .expect("mass matrix must be positive definite");
    let minv_jt = chol.solve(&jacobian.transpose());
    jacobian * minv_jt
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{DelassusPath, SimParams, Simulator};

    /// `G` one entry at a time, `Σ_{k ∈ S_b} y_ka y_kc / D_kk` over the
    /// support of `a`'s block with `Y` solved one column at a time.
    fn column_at_a_time(model: &Model, data: &Data, cj: &ContactJacobian) -> DMatrix<f64> {
        let (m, nv, l) = (cj.rows(), model.nv, &data.ltdl);
        let mut y = DMatrix::zeros(nv, m);
        for b in 0..cj.nblocks() {
            for col in cj.block_rows(b) {
                for &k in cj.contact_support(b) {
                    y[(k, col)] = cj.jacobian[(col, k)];
                }
                for &k in cj.contact_support(b) {
                    let mut a = model.dof_parent[k];
                    while a != NO_DOF {
                        y[(a, col)] -= l[(k, a)] * y[(k, col)];
                        a = model.dof_parent[a];
                    }
                }
            }
        }
        let mut g = DMatrix::zeros(m, m);
        for b in 0..cj.nblocks() {
            for a in cj.block_rows(b) {
                for c in a..m {
                    let mut s = 0.0;
                    for &k in cj.contact_support(b) {
                        s += y[(k, a)] * y[(k, c)] / l[(k, k)];
                    }
                    g[(a, c)] = s;
                    g[(c, a)] = s;
                }
            }
        }
        g
    }

    /// The blocked formation gives the same bits as the plain formula, on
    /// a floating base with four feet, a stack, and a grid whose blocks
    /// are sparsely coupled (separate bodies).
    #[test]
    fn blocked_delassus_is_the_column_formula_bit_for_bit() {
        let scenes = [
            crate::scenes::scene("quadruped").unwrap(),
            crate::scenes::scene("pyramid").unwrap(),
            crate::scenes::box_grid(3).unwrap(),
        ];
        for scene in &scenes {
            let params = SimParams {
                dt: scene.dt,
                delassus: DelassusPath::Dense,
                ..Default::default()
            };
            let mut sim = Simulator::new(scene.model.clone(), params).unwrap();
            let mut state = scene.state.clone();
            let mut tau = vec![0.0; scene.model.nv];
            let mut checked = 0;
            // (The quadruped falls onto its feet first.)
            for _ in 0..400 {
                scene.control(&state, &mut tau);
                sim.prepare(&state, &tau).unwrap();
                if sim.problem().m() > 0 {
                    let mut cj = sim.jacobian().clone();
                    let expected = column_at_a_time(&scene.model, sim.data(), &cj);
                    for coupling in [&BlockCoupling::default(), &sim.problem().coupling] {
                        let mut g = DMatrix::zeros(0, 0);
                        delassus_ltdl_coupled(&scene.model, sim.data(), &mut cj, coupling, &mut g);
                        for (a, c) in
                            (0..g.nrows()).flat_map(|a| (0..g.ncols()).map(move |c| (a, c)))
                        {
                            let coupled = coupling
                                .neighbors(cj.block_of_row(a))
                                .is_none_or(|n| n.contains(&cj.block_of_row(c)));
                            let want = if coupled { expected[(a, c)] } else { 0.0 };
                            assert!(
                                g[(a, c)] == want,
                                "{}: G[({a}, {c})] = {:e}, the column formula {want:e}",
                                scene.name,
                                g[(a, c)]
                            );
                        }
                    }
                    checked += 1;
                }
                sim.solve_and_finish(&mut state).unwrap();
            }
            assert!(checked > 10, "{}: {checked} problems", scene.name);
        }
    }
}
