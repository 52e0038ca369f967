//! Convergence and physical-correctness criteria of a contact solution.
//!
//! For the NCP `K_μ ∋ λ ⟂ c + Γ(c) ∈ K_μ*`, per contact:
//! - primal residual `ε_p = ‖λ − P_K(λ)‖` (impulse units, N·s);
//! - dual residual `ε_d = ‖y − P_{K*}(y)‖` with `y = c + Γ(c)` (velocity units, m/s);
//! - complementarity `ε_c = |⟨λ, y⟩| / ‖λ‖` (0 when `λ = 0`): the component of
//!   `y` along `λ`, in velocity units (m/s). The plain product `|⟨λ, y⟩|` of
//!   the seed study scales with the impulse, so with light contacts it lets a
//!   "stuck" contact creep (`λ_T ≈ 0`, `c_T ≠ 0` costs only `μ λ_N ‖c_T‖`);
//!   normalized, it bounds that creep by `ε/μ` whatever the masses;
//! - `ε_abs = max(ε_p, ε_d, ε_c)`, the stopping criterion of every solver.

use super::cone::{de_saxce, dist3, get3, project_cone, project_dual_cone};

/// Residuals of a contact solution; for a set of contacts, the maximum over them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Residuals {
    pub primal: f64,
    pub dual: f64,
    pub complementarity: f64,
    pub eps_abs: f64,
}

/// `max` that propagates NaN (`f64::max` drops it), so a NaN impulse can never look converged.
#[inline]
pub fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

impl Residuals {
    fn max(self, o: Residuals) -> Residuals {
        Residuals {
            primal: nan_max(self.primal, o.primal),
            dual: nan_max(self.dual, o.dual),
            complementarity: nan_max(self.complementarity, o.complementarity),
            eps_abs: nan_max(self.eps_abs, o.eps_abs),
        }
    }
}

/// Residuals of one contact with impulse `lambda` and velocity `c` (both `[t1, t2, n]`).
pub fn contact_residuals(mu: f64, lambda: [f64; 3], c: [f64; 3]) -> Residuals {
    let primal = dist3(lambda, project_cone(mu, lambda));
    let s = de_saxce(mu, c);
    let y = [c[0] + s[0], c[1] + s[1], c[2] + s[2]];
    let dual = dist3(y, project_dual_cone(mu, y));
    let norm = (lambda[0] * lambda[0] + lambda[1] * lambda[1] + lambda[2] * lambda[2]).sqrt();
    let complementarity = if norm > 0.0 {
        (lambda[0] * y[0] + lambda[1] * y[1] + lambda[2] * y[2]).abs() / norm
    } else {
        0.0
    };
    Residuals {
        primal,
        dual,
        complementarity,
        eps_abs: nan_max(nan_max(primal, dual), complementarity),
    }
}

/// Maximum residuals over all contacts. `mu`: (nc); `lambda`, `c`: (3·nc).
pub fn ncp_residuals(mu: &[f64], lambda: &[f64], c: &[f64]) -> Residuals {
    let mut r = Residuals::default();
    for (i, &m) in mu.iter().enumerate() {
        r = r.max(contact_residuals(m, get3(lambda, i), get3(c, i)));
    }
    r
}
