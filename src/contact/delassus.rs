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

/// Constraint Jacobian workspace: `nc` contacts (3 rows each) then `nl`
/// joint-limit rows (1 row each), the row order of [`crate::contact::ContactProblem`].
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
    /// (nv, 3·nc + nl) `Y = L⁻ᵀ Jᵀ`.
    pub y: DMatrix<f64>,
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
}

/// Fills `cj.jacobian` and the supports for `contacts`, after forward kinematics.
pub fn contact_jacobian(
    model: &Model,
    data: &Data,
    contacts: &[Contact],
    cj: &mut ContactJacobian,
) {
    constraint_jacobian(model, data, contacts, &[], cj);
}

/// Fills `cj.jacobian` and the supports for `contacts` and then `limits`,
/// after forward kinematics.
pub fn constraint_jacobian(
    model: &Model,
    data: &Data,
    contacts: &[Contact],
    limits: &[JointLimitRow],
    cj: &mut ContactJacobian,
) {
    let (nc, nv) = (contacts.len(), model.nv);
    reshape_zeroed(&mut cj.jacobian, 3 * nc + limits.len(), nv);
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
}

/// `G = Yᵀ D⁻¹ Y` from the factorization in `data.ltdl` (see
/// [`crate::dynamics::ltdl_factorize`]); fills `cj.y` and `g` (m, m) with
/// `m = 3·nc + nl` the rows of `cj`.
pub fn delassus_ltdl(model: &Model, data: &Data, cj: &mut ContactJacobian, g: &mut DMatrix<f64>) {
    delassus_ltdl_coupled(model, data, cj, &BlockCoupling::default(), g);
}

/// [`delassus_ltdl`] computing only the blocks of `coupling` (the others
/// are zero: their supports do not meet, see [`BlockCoupling`]).
pub fn delassus_ltdl_coupled(
    model: &Model,
    data: &Data,
    cj: &mut ContactJacobian,
    coupling: &BlockCoupling,
    g: &mut DMatrix<f64>,
) {
    let (m, nv) = (cj.rows(), model.nv);
    let l = &data.ltdl;
    reshape_zeroed(&mut cj.y, nv, m);
    for b in 0..cj.nblocks() {
        let (s0, s1) = (cj.offsets[b], cj.offsets[b + 1]);
        for col in cj.block_rows(b) {
            for &k in &cj.support[s0..s1] {
                cj.y[(k, col)] = cj.jacobian[(col, k)];
            }
            // Lᵀ y = jᵀ, leaf to root over the (descending) support.
            for &k in &cj.support[s0..s1] {
                let yk = cj.y[(k, col)];
                if yk == 0.0 {
                    continue;
                }
                let mut a = model.dof_parent[k];
                while a != NO_DOF {
                    cj.y[(a, col)] -= l[(k, a)] * yk;
                    a = model.dof_parent[a];
                }
            }
        }
    }
    if g.shape() != (m, m) || !coupling.is_dense() {
        // (Uncoupled blocks are never written: zero them.)
        reshape_zeroed(g, m, m);
    }
    let pair = |g: &mut DMatrix<f64>, a: usize, c: usize, s0: usize, s1: usize| {
        let mut s = 0.0;
        // Y[:, a] vanishes outside block b's support.
        for &k in &cj.support[s0..s1] {
            s += cj.y[(k, a)] * cj.y[(k, c)] / l[(k, k)];
        }
        g[(a, c)] = s;
        g[(c, a)] = s;
    };
    for b in 0..cj.nblocks() {
        let (s0, s1) = (cj.offsets[b], cj.offsets[b + 1]);
        match coupling.neighbors(b) {
            None => {
                for a in cj.block_rows(b) {
                    for c in a..m {
                        pair(g, a, c, s0, s1);
                    }
                }
            }
            Some(near) => {
                for &other in near.iter().filter(|&&o| o >= b) {
                    for a in cj.block_rows(b) {
                        for c in cj.block_rows(other).filter(|&c| c >= a) {
                            pair(g, a, c, s0, s1);
                        }
                    }
                }
            }
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
