//! Staggered projections (Kaufman, Sueda, James, Pai, "Staggered projections
//! for frictional contact in multibody systems", SIGGRAPH Asia 2008):
//! alternate two convex sub-problems until the pair is consistent,
//!
//! ```text
//! normal:   λ_N = argmin_{λ_N ≥ 0} ½ λ_Nᵀ W_NN λ_N + (g_N + W_NT λ_T)ᵀ λ_N
//! friction: λ_T = argmin_{‖λ_T,i‖ ≤ μ_i λ_N,i} ½ λ_Tᵀ W_TT λ_T + (g_T + W_TN λ_N)ᵀ λ_T
//! ```
//!
//! (`W = G + R`). The normal sub-problem also holds the problem's
//! one-dimensional rows (limits, equalities, dry friction on dofs: each in
//! its own set), which have no friction. The first is Signorini given friction, the second maximum
//! dissipation inside the disks fixed by the normal impulses, so a
//! consistent pair solves the NCP. Each sub-problem is solved to a tenth of
//! the tolerance by the ADMM core ([`super::admm`]), warm-started from the previous
//! alternation, its factorization kept while `ρ` does not change. There is no
//! convergence guarantee for the alternation; it stops on the NCP's `ε_abs`.
//! `SolverStats::iterations` counts alternations, `inner_iterations` the
//! sub-problems' ADMM iterations.

use super::admm::{AdmmCore, AdmmModel, AdmmOptions};
use super::{ContactSolution, ContactSolver, SolverKind, SolverSettings, SolverStats};
use crate::contact::criteria::{ContactModel, Residuals, nan_max, row_residuals, rows_residuals};
use crate::contact::linalg::reshape_zeroed;
use crate::contact::operator::Delassus;
use crate::contact::{ContactProblem, RowSet};
use crate::error::ProblemError;
use nalgebra::DMatrix;

/// Each `z_k` in its set: the contacts' normal rows `ℝ₊`, then the rows'
/// own sets.
struct RowSets<'a>(&'a [RowSet]);

impl AdmmModel for RowSets<'_> {
    fn project(&self, v: &[f64], z: &mut [f64]) {
        for ((zi, vi), set) in z.iter_mut().zip(v).zip(self.0) {
            *zi = set.project(*vi);
        }
    }
    fn correction(&self, _c: &[f64], s: &mut [f64]) {
        s.fill(0.0);
    }
    fn residuals(&self, z: &[f64], c: &[f64]) -> Residuals {
        let mut r = Residuals::default();
        for ((&zi, &ci), &set) in z.iter().zip(c).zip(self.0) {
            let (primal, dual, complementarity) = match set {
                // (The unnormalized complementarity of the sub-problem.)
                RowSet::Unilateral => (
                    (-zi).max(0.0),
                    (-ci).max(0.0),
                    if zi > 0.0 { ci.abs() } else { 0.0 },
                ),
                set => {
                    let q = row_residuals(set, zi, ci);
                    (q.primal, q.dual, q.complementarity)
                }
            };
            r.primal = nan_max(r.primal, primal);
            r.dual = nan_max(r.dual, dual);
            r.complementarity = nan_max(r.complementarity, complementarity);
        }
        r.eps_abs = nan_max(nan_max(r.primal, r.dual), r.complementarity);
        r
    }
    fn corrected(&self) -> bool {
        false
    }
}

/// `‖z_i‖ ≤ radius_i` for each 2-vector `z_i`.
struct Disks<'a> {
    radius: &'a [f64],
}

impl AdmmModel for Disks<'_> {
    fn project(&self, v: &[f64], z: &mut [f64]) {
        for (i, &r) in self.radius.iter().enumerate() {
            let (x, y) = (v[2 * i], v[2 * i + 1]);
            let n = x.hypot(y);
            let s = if n > r {
                if n > 0.0 { r / n } else { 0.0 }
            } else {
                1.0
            };
            z[2 * i] = x * s;
            z[2 * i + 1] = y * s;
        }
    }
    fn correction(&self, _c: &[f64], s: &mut [f64]) {
        s.fill(0.0);
    }
    /// Primal: `‖z_i‖ − r_i`; dual: distance of `−c_i` to the normal cone of the disk at `z_i`.
    fn residuals(&self, z: &[f64], c: &[f64]) -> Residuals {
        let mut r = Residuals::default();
        for (i, &rad) in self.radius.iter().enumerate() {
            let (zx, zy, cx, cy) = (z[2 * i], z[2 * i + 1], c[2 * i], c[2 * i + 1]);
            let n = zx.hypot(zy);
            let primal = (n - rad).max(0.0);
            let dual = if !(rad > 0.0) {
                0.0
            } else if n < rad * (1.0 - 1e-12) {
                cx.hypot(cy)
            } else {
                let t = -(cx * zx + cy * zy) / n;
                if t >= 0.0 {
                    (cx + t * zx / n).hypot(cy + t * zy / n)
                } else {
                    cx.hypot(cy)
                }
            };
            r.primal = nan_max(r.primal, primal);
            r.dual = nan_max(r.dual, dual);
        }
        r.eps_abs = nan_max(r.primal, r.dual);
        r
    }
    fn corrected(&self) -> bool {
        false
    }
}

#[derive(Default)]
pub struct Staggered {
    normal: AdmmCore,
    friction: AdmmCore,
    /// The rows of the normal sub-problem: each contact's normal row, then
    /// the one-dimensional rows; and the set of each.
    normal_rows: Vec<usize>,
    normal_sets: Vec<RowSet>,
    /// (nc + nl, nc + nl) `W_NN`, (2nc, 2nc) `W_TT` without the compliance, which goes in `d_*`.
    g_nn: DMatrix<f64>,
    g_tt: DMatrix<f64>,
    d_n: Vec<f64>,
    d_t: Vec<f64>,
    b_n: Vec<f64>,
    b_t: Vec<f64>,
    z_n: Vec<f64>,
    z_t: Vec<f64>,
    c_n: Vec<f64>,
    c_t: Vec<f64>,
    radius: Vec<f64>,
}

impl ContactSolver for Staggered {
    fn kind(&self) -> SolverKind {
        SolverKind::Staggered
    }
    fn forget_kept(&mut self) {
        self.normal.forget_kept();
        self.friction.forget_kept();
    }

    fn solve(
        &mut self,
        p: &ContactProblem,
        settings: &SolverSettings,
        out: &mut ContactSolution,
    ) -> Result<(), ProblemError> {
        p.validate()?;
        settings.validate()?;
        super::pgs::check_blocks(p)?;
        p.refuse_cone_rows("staggered")?;
        let nc = p.nc();
        let m = p.m();
        out.resize(m);
        let g = &p.delassus;
        self.normal_rows.clear();
        self.normal_rows.extend((0..nc).map(|i| 3 * i + 2));
        self.normal_rows.extend(3 * nc..m);
        self.normal_sets.clear();
        self.normal_sets.resize(nc, RowSet::Unilateral);
        self.normal_sets
            .extend((3 * nc..m).map(|k| p.row_set(k - 3 * nc)));
        let rows = &self.normal_rows;
        let nn = rows.len();
        reshape_zeroed(&mut self.g_nn, nn, nn);
        reshape_zeroed(&mut self.g_tt, 2 * nc, 2 * nc);
        for (j, &rj) in rows.iter().enumerate() {
            for (i, &ri) in rows.iter().enumerate() {
                self.g_nn[(i, j)] = g[(ri, rj)];
            }
        }
        for j in 0..nc {
            for i in 0..nc {
                for (a, b) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                    self.g_tt[(2 * i + a, 2 * j + b)] = g[(3 * i + a, 3 * j + b)];
                }
            }
        }
        for v in [&mut self.d_n, &mut self.b_n, &mut self.z_n, &mut self.c_n] {
            v.clear();
            v.resize(nn, 0.0);
        }
        for v in [&mut self.d_t, &mut self.b_t, &mut self.z_t, &mut self.c_t] {
            v.clear();
            v.resize(2 * nc, 0.0);
        }
        self.radius.clear();
        self.radius.resize(nc, 0.0);
        for (i, &r) in rows.iter().enumerate() {
            self.d_n[i] = p.compliance[r];
        }
        for i in 0..nc {
            self.d_t[2 * i] = p.compliance[3 * i];
            self.d_t[2 * i + 1] = p.compliance[3 * i + 1];
            // Warm start, in the cone.
            let w = crate::contact::cone::project_cone(
                p.mu[i],
                crate::contact::cone::get3(p.warm_start.as_slice(), i),
            );
            out.lambda[3 * i] = w[0];
            out.lambda[3 * i + 1] = w[1];
            out.lambda[3 * i + 2] = w[2];
        }
        for k in 3 * nc..m {
            out.lambda[k] = p.row_set(k - 3 * nc).project(p.warm_start[k]);
        }
        // Sub-problems a decade tighter than the alternation's test, so that
        // their inexactness does not make the alternation cycle.
        let inner = SolverSettings {
            tolerance: 0.1 * settings.tolerance,
            max_iterations: settings.max_iterations,
            ..*settings
        };
        let mut stats = SolverStats::default();
        let (mut rho_n, mut rho_t) = (None, None);
        for it in 0..=settings.max_iterations {
            p.contact_velocity(out.lambda.as_slice(), out.c.as_mut_slice());
            stats.iterations = it;
            stats.residuals = rows_residuals(
                ContactModel::Ncp,
                &p.mu,
                &p.row_sets,
                out.lambda.as_slice(),
                out.c.as_slice(),
            );
            if stats.residuals.eps_abs.is_nan() {
                return Err(ProblemError::Diverged { iteration: it });
            }
            if stats.residuals.eps_abs <= settings.tolerance || m == 0 {
                stats.converged = true;
                break;
            }
            if it == settings.max_iterations {
                break;
            }
            // Normal sub-problem: b_N = g_N + W_NT λ_T = c_N − W_NN λ_N.
            for (i, &ri) in rows.iter().enumerate() {
                self.z_n[i] = out.lambda[ri];
                let mut b = out.c[ri] - p.compliance[ri] * self.z_n[i];
                for (j, &rj) in rows.iter().enumerate() {
                    b -= self.g_nn[(i, j)] * out.lambda[rj];
                }
                self.b_n[i] = b;
            }
            let s = self.normal.run(
                &RowSets(&self.normal_sets),
                &Delassus::Dense(&self.g_nn),
                &self.d_n,
                &self.b_n,
                &mut self.z_n,
                &mut self.c_n,
                &inner,
                AdmmOptions {
                    adaptive: true,
                    rho: rho_n,
                },
            )?;
            rho_n = Some(s.rho);
            stats.inner_iterations += s.iterations;
            stats.factorizations += s.factorizations;
            // Friction sub-problem with the new normal impulses:
            // b_T = g_T + W_TN λ_N = c_T − W_TT λ_T + W_TN δλ_N.
            for (i, &ri) in rows.iter().enumerate() {
                let dn = self.z_n[i] - out.lambda[ri];
                if dn != 0.0 {
                    for (ck, gk) in out.c.iter_mut().zip(g.column(ri).iter()) {
                        *ck += gk * dn;
                    }
                    out.c[ri] += p.compliance[ri] * dn;
                }
                out.lambda[ri] = self.z_n[i];
            }
            for i in 0..nc {
                self.radius[i] = p.mu[i] * self.z_n[i];
            }
            for i in 0..nc {
                for a in 0..2 {
                    let k = 2 * i + a;
                    self.z_t[k] = out.lambda[3 * i + a];
                    let mut b = out.c[3 * i + a] - self.d_t[k] * self.z_t[k];
                    for j in 0..nc {
                        for e in 0..2 {
                            b -= self.g_tt[(k, 2 * j + e)] * out.lambda[3 * j + e];
                        }
                    }
                    self.b_t[k] = b;
                }
            }
            let s = self.friction.run(
                &Disks {
                    radius: &self.radius,
                },
                &Delassus::Dense(&self.g_tt),
                &self.d_t,
                &self.b_t,
                &mut self.z_t,
                &mut self.c_t,
                &inner,
                AdmmOptions {
                    adaptive: true,
                    rho: rho_t,
                },
            )?;
            rho_t = Some(s.rho);
            stats.inner_iterations += s.iterations;
            stats.factorizations += s.factorizations;
            for i in 0..nc {
                out.lambda[3 * i] = self.z_t[2 * i];
                out.lambda[3 * i + 1] = self.z_t[2 * i + 1];
            }
        }
        out.stats = stats;
        Ok(())
    }
}
