//! The Delassus operator `G = J M⁻¹ Jᵀ` kept as its factors, for problems
//! with many more constraint rows than dofs (`m = 3·nc + nl ≫ nv`).
//!
//! Nothing here forms `G`. A product `G z` is `J (M⁻¹ (Jᵀ z))`: two sparse
//! products over the blocks' supports and a solve with the tree-sparse
//! `M = Lᵀ D L` ([`crate::dynamics::ltdl_factorize`]), `O(m·s + nv·depth)`
//! with `s` a block's support. ADMM's system `(G + Δ) x = r`, `Δ = R + ρI`
//! diagonal, is solved through the `nv × nv` matrix of the KKT system
//! `[[M, Jᵀ], [J, −Δ]]` with the constraint rows eliminated first (the
//! Woodbury identity):
//!
//! ```text
//! K = M + Jᵀ Δ⁻¹ J,    x = Δ⁻¹ (r − J K⁻¹ Jᵀ Δ⁻¹ r)
//! ```
//!
//! When every block's support is one chain of the kinematic tree (a body
//! against the ground, a joint limit), `Jᵀ Δ⁻¹ J` adds entries only between
//! a dof and its ancestors, `M`'s own pattern, so `K` is factorized like `M`
//! ([`crate::dynamics::ltdl_factorize_in_place`], no fill-in,
//! `O(Σ depth²)`): a change of ρ costs `O(m·s² + nv·depth²)` instead of the
//! dense `O(m³/3)`. A contact between two branches (or two bodies) couples
//! them, and `K` is then factorized densely, `O(nv³/3)`, still small when
//! `m ≫ nv`.
//!
//! The solve loses accuracy like the dense Cholesky of `G + Δ` (relative
//! error of order `ε_mach · cond(G + Δ)`); ADMM's iterates of both paths
//! agree to rounding.

use super::delassus::ContactJacobian;
use super::linalg::{cholesky_in_place, cholesky_solve_in_place, reshape_zeroed};
use crate::dynamics::{Data, ltdl_factorize_in_place, ltdl_solve_in_place};
use crate::model::{Model, NO_DOF};
use nalgebra::DMatrix;
use std::cell::RefCell;

/// `G = J M⁻¹ Jᵀ` by its factors: the constraint Jacobian and the factorized
/// mass matrix of one step (borrowed from the simulator).
pub struct TreeDelassus<'a> {
    /// Each dof's parent dof (`Model::dof_parent`): the tree, all of the
    /// model the operator needs.
    parent: &'a [usize],
    /// `M` (with armature and implicit damping: the matrix `ltdl` factors).
    mass: &'a DMatrix<f64>,
    ltdl: &'a DMatrix<f64>,
    jac: &'a ContactJacobian,
    /// Every block's support is one chain of the tree.
    chain: bool,
    work: &'a TreeWork,
}

/// Buffers of a [`TreeDelassus`]'s products, kept across steps by its owner
/// (a step then allocates nothing).
#[derive(Default)]
pub struct TreeWork {
    scratch: RefCell<Vec<f64>>,
    block_columns: RefCell<Vec<[f64; 3]>>,
}

impl<'a> TreeDelassus<'a> {
    /// The operator of the Jacobian `jac` with the mass matrix and its
    /// factorization in `data` (after [`crate::dynamics::ltdl_factorize`]),
    /// computing in `work`.
    pub fn new(
        model: &'a Model,
        data: &'a Data,
        jac: &'a ContactJacobian,
        work: &'a TreeWork,
    ) -> Self {
        work.scratch.borrow_mut().resize(model.nv, 0.0);
        let chain = (0..jac.nblocks()).all(|b| {
            let s = jac.contact_support(b);
            s.iter()
                .enumerate()
                .all(|(i, &k)| model.dof_parent[k] == s.get(i + 1).copied().unwrap_or(NO_DOF))
        });
        TreeDelassus {
            parent: &model.dof_parent,
            mass: &data.mass_matrix,
            ltdl: &data.ltdl,
            jac,
            chain,
            work,
        }
    }

    /// Number of rows `m`.
    pub fn rows(&self) -> usize {
        self.jac.rows()
    }

    /// Number of dofs.
    pub fn nv(&self) -> usize {
        self.parent.len()
    }

    /// Whether `K` keeps the tree's pattern (see the module notes).
    pub fn is_chain(&self) -> bool {
        self.chain
    }

    /// Each dof's parent dof (`Model::dof_parent`).
    pub fn dof_parent(&self) -> &[usize] {
        self.parent
    }

    /// The mass matrix `M` (both triangles).
    pub fn mass(&self) -> &DMatrix<f64> {
        self.mass
    }

    /// The Jacobian.
    pub fn jacobian(&self) -> &ContactJacobian {
        self.jac
    }

    /// `w = Jᵀ z` (w: nv, zeroed here).
    pub fn jt_mul(&self, z: &[f64], w: &mut [f64]) {
        w.fill(0.0);
        for b in 0..self.jac.nblocks() {
            let rows = self.jac.block_rows(b);
            let mut zb = [0.0; 3];
            for (c, r) in rows.clone().enumerate() {
                zb[c] = z[r];
            }
            let (support, entries) = (self.jac.contact_support(b), self.jac.block_entries(b));
            if rows.len() == 1 {
                for (&k, e) in support.iter().zip(entries) {
                    w[k] += e[0] * zb[0];
                }
            } else {
                for (&k, e) in support.iter().zip(entries) {
                    w[k] += e[0] * zb[0] + e[1] * zb[1] + e[2] * zb[2];
                }
            }
        }
    }

    /// `f(r, J_r · w)` for every row `r`.
    fn for_each_row_dot(&self, w: &[f64], mut f: impl FnMut(usize, f64)) {
        for b in 0..self.jac.nblocks() {
            let (support, entries) = (self.jac.contact_support(b), self.jac.block_entries(b));
            let mut s = [0.0; 3];
            for (&k, e) in support.iter().zip(entries) {
                let wk = w[k];
                s[0] += e[0] * wk;
                s[1] += e[1] * wk;
                s[2] += e[2] * wk;
            }
            for (c, r) in self.jac.block_rows(b).enumerate() {
                f(r, s[c]);
            }
        }
    }

    /// `out[r] = scale · out[r] + J_r · w` for every row `r`.
    pub fn j_mul(&self, w: &[f64], scale: f64, out: &mut [f64]) {
        self.for_each_row_dot(w, |r, s| out[r] = scale * out[r] + s);
    }

    /// `w ← M⁻¹ w`.
    pub fn mass_solve(&self, w: &mut [f64]) {
        ltdl_solve_in_place(self.parent, self.ltdl, w);
    }

    /// `out += G z`.
    pub fn apply_add(&self, z: &[f64], out: &mut [f64]) {
        let mut w = self.work.scratch.borrow_mut();
        self.jt_mul(z, &mut w);
        self.mass_solve(&mut w);
        self.j_mul(&w, 1.0, out);
    }

    /// The diagonal blocks of `G`: for contact `i` the 3 × 3 block
    /// (column-major) at `out[9i..9i + 9]`, then for each unilateral row its
    /// entry at `out[9·nc + l]`. `O(s · depth)` per row, with `G`'s block
    /// `Yᵀ D⁻¹ Y`, `Y = L⁻ᵀ Jᵀ` restricted to the block's support.
    pub fn block_diagonal(&self, out: &mut Vec<f64>) {
        let (nc, nb) = (self.jac.nc(), self.jac.nblocks());
        out.clear();
        out.resize(9 * nc + (nb - nc), 0.0);
        let l = self.ltdl;
        let mut y = self.work.scratch.borrow_mut();
        // Y's columns for the block's rows (up to three side by side, one
        // walk up the tree for all), on the support only.
        let mut ys = self.work.block_columns.borrow_mut();
        ys.resize(self.nv(), [0.0; 3]);
        for b in 0..nb {
            let support = self.jac.contact_support(b);
            let rows = self.jac.block_rows(b);
            let width = rows.len();
            for (&k, e) in support.iter().zip(self.jac.block_entries(b)) {
                ys[k] = *e;
            }
            for &k in support {
                let yk = ys[k];
                if yk == [0.0; 3] {
                    continue;
                }
                let mut a = self.parent[k];
                while a != NO_DOF {
                    let lka = l[(k, a)];
                    let ya = &mut ys[a];
                    for c in 0..3 {
                        ya[c] -= lka * yk[c];
                    }
                    a = self.parent[a];
                }
            }
            // `Yᵀ D⁻¹ Y` on the support: one division per dof (`y` holds
            // `1 / D_k` meanwhile), the upper triangle mirrored.
            for &k in support {
                y[k] = 1.0 / l[(k, k)];
            }
            let base = block_offset(nc, b);
            for c1 in 0..width {
                for c2 in c1..width {
                    let mut s = 0.0;
                    for &k in support {
                        s += ys[k][c1] * ys[k][c2] * y[k];
                    }
                    out[base + c2 * width + c1] = s;
                    out[base + c1 * width + c2] = s;
                }
            }
            for &k in support {
                y[k] = 0.0;
                ys[k] = [0.0; 3];
            }
        }
    }

    /// `G[r, c]` for two rows of one block, from [`Self::block_diagonal`]'s `blocks`.
    pub fn block_entry(&self, blocks: &[f64], r: usize, c: usize) -> f64 {
        let b = self.jac.block_of_row(r);
        let rows = self.jac.block_rows(b);
        let (w, first) = (rows.len(), rows.start);
        blocks[block_offset(self.jac.nc(), b) + (c - first) * w + (r - first)]
    }

    /// The dense `G` (allocates; for tests and cross-checks).
    pub fn to_dense(&self) -> DMatrix<f64> {
        let m = self.rows();
        let mut g = DMatrix::zeros(m, m);
        let mut e = vec![0.0; m];
        let mut col = vec![0.0; m];
        for c in 0..m {
            e[c] = 1.0;
            col.fill(0.0);
            self.apply_add(&e, &mut col);
            g.column_mut(c).copy_from_slice(&col);
            e[c] = 0.0;
        }
        g
    }
}

/// Where block `b`'s entries start in [`TreeDelassus::block_diagonal`]'s output.
fn block_offset(nc: usize, b: usize) -> usize {
    if b < nc { 9 * b } else { 9 * nc + (b - nc) }
}

/// The factorization of `K = M + Jᵀ Δ⁻¹ J` for one `Δ`, and the solve of
/// `(G + Δ) x = r` with it (reusable buffers).
#[derive(Default)]
pub struct TreeFactor {
    k: DMatrix<f64>,
    chain: bool,
    inv_delta: Vec<f64>,
    w: Vec<f64>,
}

impl TreeFactor {
    /// Factorizes `K` for the diagonal `delta` (m, all positive). On a
    /// non-positive pivot returns its dof and value (`M` is then not
    /// positive definite).
    pub fn factorize(&mut self, t: &TreeDelassus, delta: &[f64]) -> Result<(), (usize, f64)> {
        let nv = t.nv();
        reshape_zeroed(&mut self.k, nv, nv);
        self.k.copy_from(t.mass);
        self.inv_delta.clear();
        self.inv_delta.extend(delta.iter().map(|d| 1.0 / d));
        let jac = t.jac;
        // The lower triangle (descendant row, ancestor column; the supports
        // are in descending order): all that either factorization reads.
        for b in 0..jac.nblocks() {
            let (support, entries) = (jac.contact_support(b), jac.block_entries(b));
            for (c, r) in jac.block_rows(b).enumerate() {
                let w = self.inv_delta[r];
                for (i, &ki) in support.iter().enumerate() {
                    let ji = entries[i][c] * w;
                    if ji == 0.0 {
                        continue;
                    }
                    for (&kj, e) in support[i..].iter().zip(&entries[i..]) {
                        self.k[(ki, kj)] += ji * e[c];
                    }
                }
            }
        }
        self.chain = t.chain;
        if self.chain {
            ltdl_factorize_in_place(t.parent, &mut self.k);
            for i in 0..nv {
                let p = self.k[(i, i)];
                if !(p > 0.0) || !p.is_finite() {
                    return Err((i, p));
                }
            }
            Ok(())
        } else {
            cholesky_in_place(self.k.as_mut_slice(), nv)
        }
    }

    /// `x ← (G + Δ)⁻¹ x` with the factorized `K`.
    pub fn solve(&mut self, t: &TreeDelassus, x: &mut [f64]) {
        let nv = t.nv();
        self.w.resize(nv, 0.0);
        for (xi, d) in x.iter_mut().zip(&self.inv_delta) {
            *xi *= d;
        }
        // x now holds Δ⁻¹ r; w = K⁻¹ Jᵀ Δ⁻¹ r.
        t.jt_mul(x, &mut self.w);
        if self.chain {
            ltdl_solve_in_place(t.parent, &self.k, &mut self.w);
        } else {
            cholesky_solve_in_place(self.k.as_slice(), nv, &mut self.w);
        }
        // x = Δ⁻¹ r − Δ⁻¹ J w.
        let inv_delta = &self.inv_delta;
        t.for_each_row_dot(&self.w, |r, s| x[r] -= inv_delta[r] * s);
    }
}
