//! Tree-sparse `M = Lᵀ D L` (Featherstone, RBDA §6.5, "LTDL"): with parents
//! preceding children there is no fill-in, and row `k` of `L` is non-zero only
//! on the ancestors of dof `k`.

use super::Data;
use crate::model::{Model, NO_DOF};
use nalgebra::DMatrix;

/// Factorizes `data.mass_matrix` into `data.ltdl` (L strictly below the diagonal, D on it).
pub fn ltdl_factorize(model: &Model, data: &mut Data) {
    data.ltdl.copy_from(&data.mass_matrix);
    ltdl_factorize_in_place(&model.dof_parent, &mut data.ltdl);
}

/// Factorizes in place a symmetric `h` (nv × nv) whose entries vanish
/// between dofs that are not ancestor and descendant (the mass matrix's
/// pattern, which the factorization keeps). Reads only the entries `(k, i)`
/// with `i` an ancestor of `k` or `k` itself. The tree is `parent`, each
/// dof's parent dof ([`Model::dof_parent`], `NO_DOF` at a root): these
/// primitives need nothing else of the model.
pub fn ltdl_factorize_in_place(parent: &[usize], h: &mut DMatrix<f64>) {
    for k in (0..parent.len()).rev() {
        let hkk = h[(k, k)];
        let mut i = parent[k];
        while i != NO_DOF {
            let a = h[(k, i)] / hkk;
            let mut j = i;
            while j != NO_DOF {
                h[(i, j)] -= a * h[(k, j)];
                j = parent[j];
            }
            h[(k, i)] = a;
            i = parent[i];
        }
    }
}

/// Solves `Lᵀ y = x` in place (leaf to root).
pub fn ltdl_solve_lt_in_place(parent: &[usize], ltdl: &DMatrix<f64>, x: &mut [f64]) {
    let (nv, l) = (parent.len(), ltdl.as_slice());
    debug_assert_eq!(ltdl.shape(), (nv, nv));
    for k in (0..nv).rev() {
        let xk = x[k];
        if xk == 0.0 {
            continue;
        }
        let mut i = parent[k];
        while i != NO_DOF {
            // (Column-major: (k, i) at i·nv + k.)
            x[i] -= l[i * nv + k] * xk;
            i = parent[i];
        }
    }
}

/// Solves `L y = x` in place (root to leaf).
pub fn ltdl_solve_l_in_place(parent: &[usize], ltdl: &DMatrix<f64>, x: &mut [f64]) {
    let (nv, l) = (parent.len(), ltdl.as_slice());
    debug_assert_eq!(ltdl.shape(), (nv, nv));
    for k in 0..nv {
        let mut i = parent[k];
        let mut s = x[k];
        while i != NO_DOF {
            s -= l[i * nv + k] * x[i];
            i = parent[i];
        }
        x[k] = s;
    }
}

/// Solves `M x = b` in place with the factorization in `data.ltdl`: O(nv · depth).
pub fn ltdl_solve_in_place(parent: &[usize], ltdl: &DMatrix<f64>, x: &mut [f64]) {
    ltdl_solve_lt_in_place(parent, ltdl, x);
    let nv = parent.len();
    for (k, x) in x.iter_mut().enumerate().take(nv) {
        *x /= ltdl.as_slice()[k * nv + k];
    }
    ltdl_solve_l_in_place(parent, ltdl, x);
}

/// Solves `M X = B` in place for `k` right-hand sides at once, `x` holding
/// `B` row-major (`nv × k`: row `i` at `x[i·k..(i + 1)·k]`), with the
/// factorization `ltdl`: each elimination step is an axpy across the
/// columns.
pub fn ltdl_solve_rows_in_place(parent: &[usize], ltdl: &DMatrix<f64>, x: &mut [f64], k: usize) {
    let nv = parent.len();
    let lt = ltdl.as_slice();
    debug_assert_eq!(ltdl.shape(), (nv, nv));
    debug_assert_eq!(x.len(), nv * k);
    // Lᵀ Y = X, leaf to root: row i (an ancestor, i < j) -= L_ji row j.
    for j in (0..nv).rev() {
        let mut i = parent[j];
        while i != NO_DOF {
            let l = lt[i * nv + j];
            let (head, tail) = x.split_at_mut(j * k);
            axpy_neg(&mut head[i * k..(i + 1) * k], l, &tail[..k]);
            i = parent[i];
        }
    }
    for j in 0..nv {
        let d = 1.0 / lt[j * nv + j];
        for v in &mut x[j * k..(j + 1) * k] {
            *v *= d;
        }
    }
    // L X = Y, root to leaf: row j -= L_ji row i.
    for j in 0..nv {
        let mut i = parent[j];
        while i != NO_DOF {
            let l = lt[i * nv + j];
            let (head, tail) = x.split_at_mut(j * k);
            axpy_neg(&mut tail[..k], l, &head[i * k..(i + 1) * k]);
            i = parent[i];
        }
    }
}

/// `y -= a x`.
#[inline]
fn axpy_neg(y: &mut [f64], a: f64, x: &[f64]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y -= a * x;
    }
}
