//! Lemke's complementary pivoting algorithm for the linear complementarity
//! problem `LCP(M, q)`: find `z ≥ 0` with `w = Mz + q ≥ 0` and `zᵀw = 0`.
//!
//! The tableau `w − Mz − d·z₀ = q` starts from the basis `w` and the
//! artificial variable `z₀` with covering vector `d = 1`: `z₀` enters at the
//! row of the most negative `qᵢ`, then the complement of each leaving
//! variable enters, until `z₀` leaves (a solution) or an entering column
//! has no positive entry (ray termination: the algorithm cannot solve this
//! LCP; it always solves those with `M` a P-matrix, e.g. positive definite,
//! and copositive-plus ones that are feasible). The ratio test is
//! lexicographic (ties broken by the rows of the basis inverse), so a
//! degenerate problem cannot make it cycle; a pivot cap ends it anyway.
//! The basis inverse is kept explicitly (dense, `O(n²)` per pivot), which
//! suits the problems of inverse dynamics (tens to a few hundred unknowns).

use nalgebra::{DMatrix, DVector};
use thiserror::Error;

/// Why [`lemke`] returned no solution.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum LemkeError {
    #[error("LCP: M is {rows}×{cols} and q has length {n}: M must be n×n")]
    Shape { rows: usize, cols: usize, n: usize },
    #[error("LCP: {what} has a non-finite entry")]
    NonFinite { what: &'static str },
    #[error(
        "LCP: ray termination after {pivots} pivots (the entering variable {entering} is unbounded): Lemke's algorithm cannot solve this problem (it may have no solution)"
    )]
    Ray { pivots: usize, entering: String },
    #[error("LCP: no solution after the cap of {pivots} pivots")]
    PivotLimit { pivots: usize },
}

/// Settings of [`lemke`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LemkeSettings {
    /// Most pivots before giving up (default `50·n + 100`, see [`Self::for_size`]).
    pub max_pivots: usize,
    /// Entries of the entering column at or below this (relative to the
    /// column's largest) do not bound the step.
    pub pivot_tolerance: f64,
}

impl LemkeSettings {
    /// The defaults for an LCP of `n` unknowns.
    pub fn for_size(n: usize) -> Self {
        LemkeSettings {
            max_pivots: 50 * n + 100,
            pivot_tolerance: 1e-12,
        }
    }
}

/// A solution of `LCP(M, q)`.
#[derive(Clone, Debug, PartialEq)]
pub struct LemkeSolution {
    pub z: DVector<f64>,
    /// `w = Mz + q`, recomputed from `z`.
    pub w: DVector<f64>,
    pub pivots: usize,
}

impl LemkeSolution {
    /// `max(max(−z), max(−w), max |zᵢ wᵢ|)`: 0 for an exact solution.
    pub fn residual(&self) -> f64 {
        self.z
            .iter()
            .zip(self.w.iter())
            .map(|(&z, &w)| (-z).max(-w).max((z * w).abs()))
            .fold(0.0, f64::max)
    }
}

/// A variable of the tableau.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Var {
    W(usize),
    Z(usize),
    Z0,
}

impl Var {
    fn name(self) -> String {
        match self {
            Var::W(i) => format!("w[{i}]"),
            Var::Z(i) => format!("z[{i}]"),
            Var::Z0 => "z0".into(),
        }
    }
}

/// Solves `LCP(M, q)` by Lemke's algorithm (see the module's docs).
pub fn lemke(
    m: &DMatrix<f64>,
    q: &DVector<f64>,
    settings: &LemkeSettings,
) -> Result<LemkeSolution, LemkeError> {
    let n = q.len();
    if m.nrows() != n || m.ncols() != n {
        return Err(LemkeError::Shape {
            rows: m.nrows(),
            cols: m.ncols(),
            n,
        });
    }
    if m.iter().any(|x| !x.is_finite()) {
        return Err(LemkeError::NonFinite { what: "M" });
    }
    if q.iter().any(|x| !x.is_finite()) {
        return Err(LemkeError::NonFinite { what: "q" });
    }
    let solution = |z: DVector<f64>, pivots| {
        let w = m * &z + q;
        LemkeSolution { z, w, pivots }
    };
    if q.iter().all(|&x| x >= 0.0) {
        return Ok(solution(DVector::zeros(n), 0));
    }
    // Columns of the tableau `[I, −M, −d] x = q`: a variable's column.
    let column = |v: Var| -> DVector<f64> {
        match v {
            Var::W(i) => DVector::from_fn(n, |r, _| if r == i { 1.0 } else { 0.0 }),
            Var::Z(j) => -m.column(j),
            Var::Z0 => DVector::from_element(n, -1.0),
        }
    };
    let mut basis: Vec<Var> = (0..n).map(Var::W).collect();
    // B⁻¹ and the basic values x_B = B⁻¹ q.
    let mut b_inv = DMatrix::<f64>::identity(n, n);
    let mut x = q.clone();
    let mut entering = Var::Z0;
    // z₀ enters at the most negative qᵢ (lexicographically least row of
    // [q, B⁻¹] scaled by the column entry −1, as the ratio test below).
    let mut leave = {
        let col = column(Var::Z0);
        lexicographic_min(&x, &b_inv, &col, |i| x[i] < 0.0, true).expect("some qᵢ < 0")
    };
    for pivots in 1..=settings.max_pivots {
        // Pivot `entering` into row `leave`.
        let col = &b_inv * column(entering);
        let p = col[leave];
        let leaving = basis[leave];
        let row = b_inv.row(leave) / p;
        let xr = x[leave] / p;
        for i in 0..n {
            if i == leave {
                continue;
            }
            let f = col[i];
            if f != 0.0 {
                let r = b_inv.row(i) - &row * f;
                b_inv.set_row(i, &r);
                x[i] -= f * xr;
            }
        }
        b_inv.set_row(leave, &row);
        x[leave] = xr;
        basis[leave] = entering;
        if leaving == Var::Z0 {
            let mut z = DVector::zeros(n);
            for (i, v) in basis.iter().enumerate() {
                if let Var::Z(j) = v {
                    z[*j] = x[i].max(0.0);
                }
            }
            return Ok(solution(z, pivots));
        }
        // The complement of the variable that left enters.
        entering = match leaving {
            Var::W(i) => Var::Z(i),
            Var::Z(i) => Var::W(i),
            Var::Z0 => unreachable!("handled above"),
        };
        let col = &b_inv * column(entering);
        let scale = col.amax().max(f64::MIN_POSITIVE);
        let tol = settings.pivot_tolerance * scale;
        match lexicographic_min(&x, &b_inv, &col, |i| col[i] > tol, false) {
            Some(r) => leave = r,
            None => {
                return Err(LemkeError::Ray {
                    pivots,
                    entering: entering.name(),
                });
            }
        }
    }
    Err(LemkeError::PivotLimit {
        pivots: settings.max_pivots,
    })
}

/// The row `i` (among those `eligible`) minimizing `(xᵢ, B⁻¹ᵢ,·) / colᵢ`
/// lexicographically (`negate`: for `z₀`'s first entry, whose column is
/// `−d`, the most negative `xᵢ`).
fn lexicographic_min(
    x: &DVector<f64>,
    b_inv: &DMatrix<f64>,
    col: &DVector<f64>,
    eligible: impl Fn(usize) -> bool,
    negate: bool,
) -> Option<usize> {
    let n = x.len();
    let key = |i: usize, k: usize| -> f64 {
        let v = if k == 0 { x[i] } else { b_inv[(i, k - 1)] };
        let c = if negate { -1.0 } else { col[i] };
        v / c
    };
    let mut best: Option<usize> = None;
    for i in (0..n).filter(|&i| eligible(i)) {
        best = match best {
            None => Some(i),
            Some(b) => {
                let mut choice = b;
                for k in 0..=n {
                    let (ki, kb) = (key(i, k), key(b, k));
                    // (With `negate`, the ratio is −xᵢ: the largest, i.e.
                    // the most negative xᵢ, is the entering row.)
                    let (better, worse) = if negate {
                        (ki > kb, ki < kb)
                    } else {
                        (ki < kb, ki > kb)
                    };
                    if better {
                        choice = i;
                        break;
                    }
                    if worse {
                        break;
                    }
                }
                Some(choice)
            }
        };
    }
    best
}
