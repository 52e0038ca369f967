//! Contact Jacobian and the Delassus matrix `G = J M⁻¹ Jᵀ` through the
//! tree-sparse factorization `M = Lᵀ D L`:
//!
//! `G = J L⁻¹ D⁻¹ L⁻ᵀ Jᵀ = Yᵀ D⁻¹ Y`, with `Y = L⁻ᵀ Jᵀ`.
//!
//! A contact's Jacobian rows are non-zero only on the dofs supporting its two
//! bodies (an ancestor-closed set), and the leaf-to-root solve with `Lᵀ` keeps
//! that support, so each column of `Y` costs O(depth²) and each block of `G`
//! O(depth). `M⁻¹` is never formed.

use super::linalg::reshape_zeroed;
use crate::collision::Contact;
use crate::dynamics::{Data, point_velocity_column};
use crate::model::{Model, NO_DOF};
use nalgebra::DMatrix;

/// Contact Jacobian workspace for `nc` contacts.
#[derive(Clone, Debug, Default)]
pub struct ContactJacobian {
    /// (3·nc, nv) rows `[t1, t2, n]` of each contact: `c = J v` is `v_a − v_b`
    /// at the contact point, in the contact frame.
    pub jacobian: DMatrix<f64>,
    /// Dofs supporting each contact, in descending order:
    /// `support[offsets[i]..offsets[i + 1]]`.
    pub support: Vec<usize>,
    pub offsets: Vec<usize>,
    /// (nv, 3·nc) `Y = L⁻ᵀ Jᵀ`.
    pub y: DMatrix<f64>,
    mark: Vec<usize>,
    stamp: usize,
}

impl ContactJacobian {
    pub fn nc(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }
    pub fn contact_support(&self, i: usize) -> &[usize] {
        &self.support[self.offsets[i]..self.offsets[i + 1]]
    }
}

/// Fills `cj.jacobian` and the supports for `contacts`, after forward kinematics.
pub fn contact_jacobian(
    model: &Model,
    data: &Data,
    contacts: &[Contact],
    cj: &mut ContactJacobian,
) {
    let (nc, nv) = (contacts.len(), model.nv);
    reshape_zeroed(&mut cj.jacobian, 3 * nc, nv);
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
}

/// `G = Yᵀ D⁻¹ Y` from the factorization in `data.ltdl` (see
/// [`crate::dynamics::ltdl_factorize`]); fills `cj.y` and `g` (3·nc, 3·nc).
pub fn delassus_ltdl(model: &Model, data: &Data, cj: &mut ContactJacobian, g: &mut DMatrix<f64>) {
    let nc = cj.nc();
    let (m, nv) = (3 * nc, model.nv);
    let l = &data.ltdl;
    reshape_zeroed(&mut cj.y, nv, m);
    for i in 0..nc {
        let (s0, s1) = (cj.offsets[i], cj.offsets[i + 1]);
        for r in 0..3 {
            let col = 3 * i + r;
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
    if g.shape() != (m, m) {
        reshape_zeroed(g, m, m);
    }
    for i in 0..nc {
        let (s0, s1) = (cj.offsets[i], cj.offsets[i + 1]);
        for r in 0..3 {
            let a = 3 * i + r;
            for b in a..m {
                let mut s = 0.0;
                // Y[:, a] vanishes outside contact i's support.
                for &k in &cj.support[s0..s1] {
                    s += cj.y[(k, a)] * cj.y[(k, b)] / l[(k, k)];
                }
                g[(a, b)] = s;
                g[(b, a)] = s;
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
