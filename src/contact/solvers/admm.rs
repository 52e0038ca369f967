//! NCP via ADMM with de Saxcé's correction (after Carpentier, Le Lidec,
//! Montaut, "From compliant to rigid contact simulation: a unified and
//! efficient approach", RSS 2024).
//!
//! For a fixed correction `s = Γ(c)` the NCP is the optimality condition of
//! the convex cone-constrained QP `min ½ λᵀ(G + R)λ + (g + s)ᵀλ, λ ∈ K_μ`.
//! ADMM splits `λ = x = z`, `z ∈ K_μ`, with scaled dual `u`:
//!
//! ```text
//! x⁺ = (G + R + ρI)⁻¹ (−(g + s) + ρ (z − u))
//! x̂  = α x⁺ + (1 − α) z                     (over-relaxation α)
//! z⁺ = P_K(x̂ + u)
//! u⁺ = u + x̂ − z⁺
//! s⁺ = Γ((G + R) z⁺ + g)                    (de Saxcé fixed point)
//! ```
//!
//! At a fixed point `c + Γ(c) = −ρu ∈ K_μ*` and `u ∈ N_K(z)`, which is the
//! NCP. Warm start: `z = P_K(λ₀)` and `u = −(c(λ₀) + Γ)/ρ`, so that an exact
//! `λ₀` is a fixed point from the first iteration. `ρ` starts at `0.1·L`
//! (`L` the largest eigenvalue of `G + R`, by power iteration) or at the
//! caller's value, and is adapted by residual balancing on the normalized
//! primal and dual ADMM residuals, each change costing one refactorization
//! of the m × m matrix.

use super::{ContactSolution, ContactSolver, SolverSettings, SolverStats};
use crate::contact::cone::{de_saxce, get3, project_cone, set3};
use crate::contact::criteria::ncp_residuals;
use crate::contact::linalg::{cholesky_in_place, cholesky_solve_in_place};
use crate::contact::{ContactProblem, Residuals};
use crate::error::ProblemError;

/// Residual-balancing trigger: adapt ρ when the normalized primal and dual
/// residuals differ by more than this ratio.
const RHO_RATIO: f64 = 10.0;
/// A run whose `ε_abs` exceeds this factor times its starting value has diverged.
const DIVERGENCE_FACTOR: f64 = 1e4;
/// Minimum iterations between two changes of ρ.
const RHO_MIN_INTERVAL: usize = 5;
/// Largest factor by which one update may change ρ.
const RHO_MAX_STEP: f64 = 10.0;
/// ρ stays within [RHO_RANGE.0, RHO_RANGE.1] × L (L the largest eigenvalue of G + R).
const RHO_RANGE: (f64, f64) = (1e-6, 1e3);

#[derive(Default)]
pub struct NcpAdmm {
    chol: Vec<f64>,
    x: Vec<f64>,
    z_prev: Vec<f64>,
    u: Vec<f64>,
    s: Vec<f64>,
    tmp: Vec<f64>,
    best: Vec<f64>,
    last_rho: Option<f64>,
}

fn inf_norm(v: &[f64]) -> f64 {
    v.iter()
        .fold(0.0, |a, &x| crate::contact::criteria::nan_max(a, x.abs()))
}

impl NcpAdmm {
    fn factorize(&mut self, p: &ContactProblem, rho: f64) -> Result<(), ProblemError> {
        let m = p.g.len();
        self.chol.clear();
        self.chol.extend_from_slice(p.delassus.as_slice());
        for i in 0..m {
            self.chol[i * m + i] += p.compliance[i] + rho;
        }
        cholesky_in_place(&mut self.chol, m).map_err(|(j, pivot)| ProblemError::NotPsd {
            index: j,
            value: pivot,
        })
    }

    /// For `z = out.lambda`: the contact velocity `out.c`, the de Saxcé
    /// correction `s = Γ(c)` and the residuals; remembers `z` if it is the best so far.
    fn evaluate(
        &mut self,
        p: &ContactProblem,
        out: &mut ContactSolution,
        best_eps: &mut f64,
    ) -> Residuals {
        p.contact_velocity(out.lambda.as_slice(), out.c.as_mut_slice());
        for (i, &mu) in p.mu.iter().enumerate() {
            set3(&mut self.s, i, de_saxce(mu, get3(out.c.as_slice(), i)));
        }
        let r = ncp_residuals(&p.mu, out.lambda.as_slice(), out.c.as_slice());
        if r.eps_abs < *best_eps {
            *best_eps = r.eps_abs;
            self.best.copy_from_slice(out.lambda.as_slice());
        }
        r
    }

    /// Estimate of the largest eigenvalue of `G + R` by 20 power iterations
    /// (a lower bound; it sets ρ's scale, so a factor of a few is harmless).
    /// The start vector is not symmetric, so that it is unlikely to be an
    /// eigenvector of a smaller eigenvalue.
    fn largest_eigenvalue(&mut self, p: &ContactProblem) -> f64 {
        let m = p.g.len();
        self.x.clear();
        self.x
            .extend((0..m).map(|i| 1.0 + 0.5 * ((i * 7919) % 13) as f64 / 13.0));
        let n0 = self.x.iter().map(|v| v * v).sum::<f64>().sqrt();
        self.x.iter_mut().for_each(|v| *v /= n0);
        let mut l = 0.0;
        for _ in 0..20 {
            self.tmp.clear();
            self.tmp.resize(m, 0.0);
            for j in 0..m {
                let col = p.delassus.column(j);
                for i in 0..m {
                    self.tmp[i] += col[i] * self.x[j];
                }
                self.tmp[j] += p.compliance[j] * self.x[j];
            }
            let n = self.tmp.iter().map(|v| v * v).sum::<f64>().sqrt();
            if !(n > 0.0) {
                return 0.0;
            }
            l = n;
            for i in 0..m {
                self.x[i] = self.tmp[i] / n;
            }
        }
        l
    }
}

impl ContactSolver for NcpAdmm {
    fn name(&self) -> &'static str {
        "ncp-admm"
    }

    fn last_rho(&self) -> Option<f64> {
        self.last_rho
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
        if m == 0 {
            out.stats.converged = true;
            return Ok(());
        }
        let lmax = self.largest_eigenvalue(p);
        let scale = if lmax > 0.0 { lmax } else { 1.0 };
        let (rho_min, rho_max) = (RHO_RANGE.0 * scale, RHO_RANGE.1 * scale);
        let mut rho = match settings.rho {
            Some(r) if r.is_finite() && r > 0.0 => r.clamp(rho_min, rho_max),
            _ => 0.1 * scale,
        };
        let alpha = settings.over_relaxation;
        for v in [
            &mut self.x,
            &mut self.z_prev,
            &mut self.u,
            &mut self.s,
            &mut self.tmp,
        ] {
            v.clear();
            v.resize(m, 0.0);
        }
        let mut stats = SolverStats::default();
        let mut best_eps = f64::INFINITY;
        self.best.clear();
        self.best.resize(m, 0.0);
        // A warm-started run that diverges (the de Saxcé fixed point is not a
        // contraction for every ρ) is restarted once from a cold start.
        'attempts: for attempt in 0..2 {
            let cold = attempt > 0;
            if cold {
                rho = 0.1 * scale;
            }
            // z (the returned λ) lives in out.lambda; c in out.c.
            for i in 0..nc {
                let guess = if cold {
                    [0.0; 3]
                } else {
                    get3(p.warm_start.as_slice(), i)
                };
                set3(out.lambda.as_mut_slice(), i, project_cone(p.mu[i], guess));
            }
            stats.residuals = self.evaluate(p, out, &mut best_eps);
            for k in 0..m {
                self.u[k] = -(out.c[k] + self.s[k]) / rho;
            }
            let start_eps = stats.residuals.eps_abs;
            if start_eps <= settings.tolerance {
                stats.converged = true;
                break 'attempts;
            }
            self.factorize(p, rho)?;
            let mut last_update = stats.iterations;
            let first = stats.iterations + 1;
            for it in first..=settings.max_iterations {
                stats.iterations = it;
                // x-update.
                for k in 0..m {
                    self.x[k] = -(p.g[k] + self.s[k]) + rho * (out.lambda[k] - self.u[k]);
                }
                cholesky_solve_in_place(&self.chol, m, &mut self.x);
                // z- and u-updates, with over-relaxation.
                self.z_prev.copy_from_slice(out.lambda.as_slice());
                for k in 0..m {
                    self.tmp[k] = alpha * self.x[k] + (1.0 - alpha) * self.z_prev[k];
                }
                for i in 0..nc {
                    let xh = get3(&self.tmp, i);
                    let u = get3(&self.u, i);
                    let z = project_cone(p.mu[i], [xh[0] + u[0], xh[1] + u[1], xh[2] + u[2]]);
                    set3(out.lambda.as_mut_slice(), i, z);
                }
                for k in 0..m {
                    self.u[k] += self.tmp[k] - out.lambda[k];
                }
                stats.residuals = self.evaluate(p, out, &mut best_eps);
                let eps = stats.residuals.eps_abs;
                if eps <= settings.tolerance {
                    stats.converged = true;
                    break 'attempts;
                }
                if !eps.is_finite() || eps > DIVERGENCE_FACTOR * start_eps.max(settings.tolerance) {
                    continue 'attempts;
                }
                if settings.adaptive_rho && it - last_update >= RHO_MIN_INTERVAL {
                    let z = out.lambda.as_slice();
                    let mut rp = 0.0f64;
                    let mut rd = 0.0f64;
                    for k in 0..m {
                        rp = rp.max((self.x[k] - z[k]).abs());
                        rd = rd.max((z[k] - self.z_prev[k]).abs());
                    }
                    let rp = rp / inf_norm(z).max(inf_norm(&self.x)).max(1e-30);
                    let rd = rho * rd
                        / inf_norm(p.g.as_slice())
                            .max(rho * inf_norm(&self.u))
                            .max(1e-30);
                    // A stalled z (rd = 0) with x ≠ z calls for a larger ρ.
                    let ratio = if rd > 0.0 {
                        rp / rd
                    } else if rp > 0.0 {
                        f64::INFINITY
                    } else {
                        1.0
                    };
                    if !(1.0 / RHO_RATIO..=RHO_RATIO).contains(&ratio) {
                        let new_rho = (rho * ratio.sqrt())
                            .clamp(rho / RHO_MAX_STEP, rho * RHO_MAX_STEP)
                            .clamp(rho_min, rho_max);
                        if new_rho != rho {
                            for u in self.u.iter_mut() {
                                *u *= rho / new_rho;
                            }
                            rho = new_rho;
                            self.factorize(p, rho)?;
                            stats.rho_updates += 1;
                            last_update = it;
                        }
                    }
                }
            }
            break;
        }
        if !stats.converged {
            // Return the best iterate seen, with its own velocity and residuals.
            out.lambda.as_mut_slice().copy_from_slice(&self.best);
            p.contact_velocity(out.lambda.as_slice(), out.c.as_mut_slice());
            stats.residuals = ncp_residuals(&p.mu, out.lambda.as_slice(), out.c.as_slice());
        }
        stats.rho = rho;
        self.last_rho = Some(rho);
        out.stats = stats;
        Ok(())
    }
}
