//! The Delassus operator `G = J M̃⁻¹ Jᵀ` as the solvers see it (after
//! Pinocchio's `DelassusOperatorBase` and its dense and sparse
//! implementations): something that multiplies a vector, whatever it
//! stores. Two implementations:
//!
//! - the **dense** matrix (`DMatrix<f64>`), formed by the Delassus
//!   assembly (`contact/delassus.rs`) or read from a problem file;
//! - the **tree** operator ([`TreeDelassus`], `contact/tree.rs`): `J` and
//!   the tree factorization of `M̃`, `G` never formed.
//!
//! [`Delassus`] is a run's operator, one or the other: the products go
//! through [`DelassusOperator`], and the few algorithms that need the
//! representation (ADMM's factorization of `G + diag + ρI`, the polish's
//! reduced systems, Newton's dense matrix) match on it.

use super::tree::TreeDelassus;
use nalgebra::DMatrix;

/// A Delassus operator: `m × m`, symmetric positive semi-definite.
pub trait DelassusOperator {
    /// `m`, the rows (and columns) of `G`.
    fn rows(&self) -> usize;

    /// `out += G z`.
    fn apply_add(&self, z: &[f64], out: &mut [f64]);

    /// `c = (G + diag(d)) z + b`.
    fn affine(&self, d: &[f64], b: &[f64], z: &[f64], c: &mut [f64]) {
        for i in 0..b.len() {
            c[i] = b[i] + d[i] * z[i];
        }
        self.apply_add(z, c);
    }

    /// `G + diag(d)` densely into `out` (column-major, `m²` entries), a
    /// column at a time (`unit` is scratch, kept by the caller so that a
    /// step allocates nothing).
    fn dense_into(&self, d: &[f64], out: &mut Vec<f64>, unit: &mut Vec<f64>) {
        let m = self.rows();
        out.clear();
        out.resize(m * m, 0.0);
        unit.clear();
        unit.resize(m, 0.0);
        for j in 0..m {
            unit[j] = 1.0;
            self.apply_add(unit, &mut out[j * m..(j + 1) * m]);
            unit[j] = 0.0;
        }
        for i in 0..m {
            out[i * m + i] += d[i];
        }
    }
}

impl DelassusOperator for DMatrix<f64> {
    fn rows(&self) -> usize {
        self.nrows()
    }

    /// Column by column, skipping the zero entries of `z` (the columns of
    /// breaking contacts).
    fn apply_add(&self, z: &[f64], out: &mut [f64]) {
        let m = self.nrows();
        for (&zj, col) in z.iter().zip(self.as_slice().chunks_exact(m.max(1))) {
            if zj == 0.0 {
                continue;
            }
            for (ci, aij) in out.iter_mut().zip(col) {
                *ci += aij * zj;
            }
        }
    }

    fn dense_into(&self, d: &[f64], out: &mut Vec<f64>, _unit: &mut Vec<f64>) {
        let m = self.nrows();
        out.clear();
        out.extend_from_slice(self.as_slice());
        for i in 0..m {
            out[i * m + i] += d[i];
        }
    }
}

impl DelassusOperator for TreeDelassus<'_> {
    fn rows(&self) -> usize {
        TreeDelassus::rows(self)
    }

    fn apply_add(&self, z: &[f64], out: &mut [f64]) {
        TreeDelassus::apply_add(self, z, out)
    }
}

/// The operator of one solve: dense, or as the factors `J`, `M` of
/// [`TreeDelassus`] (never formed).
#[derive(Clone, Copy)]
pub enum Delassus<'a> {
    Dense(&'a DMatrix<f64>),
    Tree(&'a TreeDelassus<'a>),
}

impl DelassusOperator for Delassus<'_> {
    fn rows(&self) -> usize {
        match self {
            Delassus::Dense(a) => a.nrows(),
            Delassus::Tree(t) => DelassusOperator::rows(*t),
        }
    }

    fn apply_add(&self, z: &[f64], out: &mut [f64]) {
        match self {
            Delassus::Dense(a) => a.apply_add(z, out),
            Delassus::Tree(t) => DelassusOperator::apply_add(*t, z, out),
        }
    }

    fn dense_into(&self, d: &[f64], out: &mut Vec<f64>, unit: &mut Vec<f64>) {
        match self {
            Delassus::Dense(a) => a.dense_into(d, out, unit),
            Delassus::Tree(t) => t.dense_into(d, out, unit),
        }
    }
}
