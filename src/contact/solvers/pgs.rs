//! NCP via projected Gauss-Seidel: for each contact in turn, a normal step
//! `λ_N ← max(0, λ_N − c_N / W_NN)`, then a tangential step projected onto
//! the disk `‖λ_T‖ ≤ μ λ_N` (the "horizontal" projection, which keeps the
//! normal impulse and so solves the NCP rather than its CCP relaxation).
//! `W` is the contact's 3×3 diagonal block of `G + R`.

use super::{ContactSolution, ContactSolver, SolverSettings, SolverStats};
use crate::contact::ContactProblem;
use crate::contact::cone::get3;
use crate::contact::criteria::ncp_residuals;
use crate::error::ProblemError;

#[derive(Default)]
pub struct NcpPgs;

impl ContactSolver for NcpPgs {
    fn name(&self) -> &'static str {
        "ncp-pgs"
    }

    fn solve(
        &mut self,
        p: &ContactProblem,
        settings: &SolverSettings,
        out: &mut ContactSolution,
    ) -> Result<(), ProblemError> {
        p.validate()?;
        let nc = p.nc();
        let m = 3 * nc;
        out.resize(m);
        let g = &p.delassus;
        for i in 0..nc {
            let w = get3(p.warm_start.as_slice(), i);
            let t = (w[0] * w[0] + w[1] * w[1]).sqrt();
            let n = w[2].max(0.0);
            let s = if t > p.mu[i] * n && t > 0.0 {
                p.mu[i] * n / t
            } else {
                1.0
            };
            out.lambda[3 * i] = w[0] * s;
            out.lambda[3 * i + 1] = w[1] * s;
            out.lambda[3 * i + 2] = n;
        }
        let omega = settings.over_relaxation;
        let mut stats = SolverStats::default();
        for it in 0..=settings.max_iterations {
            p.contact_velocity(out.lambda.as_slice(), out.c.as_mut_slice());
            stats.residuals = ncp_residuals(&p.mu, out.lambda.as_slice(), out.c.as_slice());
            stats.iterations = it;
            if stats.residuals.eps_abs <= settings.tolerance {
                stats.converged = true;
                break;
            }
            if it == settings.max_iterations {
                break;
            }
            for i in 0..nc {
                let (t1, t2, n) = (3 * i, 3 * i + 1, 3 * i + 2);
                // Contact velocity of contact i with the current impulses.
                let mut c = [p.g[t1], p.g[t2], p.g[n]];
                for (r, cr) in c.iter_mut().enumerate() {
                    let row = 3 * i + r;
                    *cr += p.compliance[row] * out.lambda[row];
                    for j in 0..m {
                        *cr += g[(row, j)] * out.lambda[j];
                    }
                }
                let wnn = g[(n, n)] + p.compliance[n];
                let old_n = out.lambda[n];
                let mut ln = old_n;
                if wnn > 0.0 {
                    ln = (old_n - c[2] / wnn).max(0.0);
                    ln = (omega * ln + (1.0 - omega) * old_n).max(0.0);
                }
                let dn = ln - old_n;
                out.lambda[n] = ln;
                c[0] += g[(t1, n)] * dn;
                c[1] += g[(t2, n)] * dn;
                // Step on the tangential block with its largest eigenvalue.
                let (a, b, d) = (
                    g[(t1, t1)] + p.compliance[t1],
                    g[(t1, t2)],
                    g[(t2, t2)] + p.compliance[t2],
                );
                let sigma = 0.5 * (a + d) + (0.25 * (a - d) * (a - d) + b * b).sqrt();
                if sigma > 0.0 {
                    let mut lt = [out.lambda[t1] - c[0] / sigma, out.lambda[t2] - c[1] / sigma];
                    let norm = (lt[0] * lt[0] + lt[1] * lt[1]).sqrt();
                    let radius = p.mu[i] * ln;
                    if norm > radius {
                        let s = if norm > 0.0 { radius / norm } else { 0.0 };
                        lt = [lt[0] * s, lt[1] * s];
                    }
                    out.lambda[t1] = lt[0];
                    out.lambda[t2] = lt[1];
                }
            }
        }
        out.stats = stats;
        Ok(())
    }
}
