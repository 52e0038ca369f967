//! Random well-posed contact problems, deterministic in a seed: the
//! problems of `moreau bench solve`, the GPU solver benches and the
//! solver tests (`G = AAᵀ/m + ½I`, a free velocity that pushes every
//! contact into its surface and slides it, μ in [0.1, 1]).

use super::ContactProblem;
use nalgebra::{DMatrix, DVector};

/// A random well-posed problem of `nc` contacts, deterministic in `seed`.
pub fn random_problem(seed: u64, nc: usize) -> ContactProblem {
    random_mixed_problem(seed, nc, 0)
}

/// A random well-posed problem of `nc` contacts followed by `nl` unilateral
/// rows (`G = AAᵀ/m + ½I`): as [`random_problem`] for the contacts, and a
/// free velocity in `[−1, 0.5]` for each unilateral row, so that some rows
/// push (`λ > 0`) and some stay open. Deterministic in `seed`.
pub fn random_mixed_problem(seed: u64, nc: usize, nl: usize) -> ContactProblem {
    let mut state = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    let mut next = move |lo: f64, hi: f64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + (hi - lo) * ((state >> 11) as f64 / (1u64 << 53) as f64)
    };
    let m = 3 * nc + nl;
    let a = DMatrix::from_fn(m, m, |_, _| next(-1.0, 1.0)) / (m.max(1) as f64).sqrt();
    let g = &a * a.transpose() + DMatrix::identity(m, m) * 0.5;
    let mut free = DVector::from_fn(m, |_, _| next(-1.0, 1.0));
    for i in 0..nc {
        free[3 * i + 2] = next(-1.0, 0.2);
    }
    for k in 3 * nc..m {
        free[k] = next(-1.0, 0.5);
    }
    let mu = (0..nc).map(|_| next(0.1, 1.0)).collect();
    ContactProblem {
        delassus: g,
        g: free,
        mu,
        compliance: DVector::zeros(m),
        warm_start: DVector::zeros(m),
        row_sets: Vec::new(),
        coupling: Default::default(),
    }
}
