//! Contacts whose friction cone has more than three rows: MuJoCo's
//! `condim` 4 (torsional friction) and 6 (rolling friction too).
//!
//! Such a contact keeps its three rows `[t1, t2, n]` among the contacts and
//! adds one to three rows after them, each marked [`RowSet::Cone`] with its
//! contact: the spin row `n·(ω_a − ω_b)` and the rolling rows
//! `t1·(ω_a − ω_b)`, `t2·(ω_a − ω_b)`. The simulator scales them by `μ_t/μ`
//! and `μ_r/μ` (the torsional and rolling coefficients over the sliding
//! one), so that MuJoCo's elliptic cone
//!
//! `‖(λ_t1/μ, λ_t2/μ, λ_spin/μ_t, λ_roll1/μ_r, λ_roll2/μ_r)‖ ≤ λ_N`
//!
//! becomes the second-order cone `‖λ_T‖ ≤ μ λ_N` over all the tangential
//! rows (the three-row contact's cone, wider). A row's impulse and velocity
//! scale reciprocally, so the power `λᵀc`, maximum dissipation and de
//! Saxcé's correction `Γ = μ‖c_T‖` (over the same rows) carry over: the
//! NCP is the three-row one in `d ≤ 6` dimensions.
//!
//! A contact's rows gathered are a [`Wide`]: its tangential rows, then the
//! normal last, as the three-row functions of [`super::cone`] store them.

use super::RowSet;
use super::cone::{Real, de_saxce, get3, project_cone, set3};
use crate::error::ProblemError;

/// Rows a contact's cone may add beyond its three (the spin row and two
/// rolling rows of `condim` 6).
pub const MAX_CONE_ROWS: usize = 3;

/// Each contact's rows beyond its three ([`RowSet::Cone`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConeRows {
    /// Per contact, its added rows (problem row indices) and their count.
    rows: Vec<([usize; MAX_CONE_ROWS], usize)>,
    any: bool,
}

impl ConeRows {
    /// The added rows of a problem of `nc` contacts whose rows after the
    /// contacts' `3·nc` have the sets `row_sets`; refused where a row names
    /// no contact or a contact gets more than [`MAX_CONE_ROWS`].
    pub fn new(nc: usize, row_sets: &[RowSet]) -> Result<Self, ProblemError> {
        let mut out = ConeRows::default();
        for (l, set) in row_sets.iter().enumerate() {
            let RowSet::Cone(i) = *set else { continue };
            if !out.any {
                out.rows = vec![([0; MAX_CONE_ROWS], 0); nc];
                out.any = true;
            }
            let Some((rows, n)) = out.rows.get_mut(i) else {
                return Err(ProblemError::BadConeRow {
                    row: l,
                    reason: format!("its contact {i} is not among the {nc} contacts"),
                });
            };
            if *n == MAX_CONE_ROWS {
                return Err(ProblemError::BadConeRow {
                    row: l,
                    reason: format!(
                        "contact {i} has {MAX_CONE_ROWS} rows beyond its three already"
                    ),
                });
            }
            rows[*n] = 3 * nc + l;
            *n += 1;
        }
        Ok(out)
    }

    /// Whether no contact has added rows.
    pub fn is_empty(&self) -> bool {
        !self.any
    }

    /// Contact `i`'s added rows (empty for a three-row contact).
    #[inline]
    pub fn of(&self, i: usize) -> &[usize] {
        match self.rows.get(i) {
            Some((rows, n)) => &rows[..*n],
            None => &[],
        }
    }
}

/// A contact's rows gathered: `x[..d − 1]` its tangential rows (`t1`, `t2`,
/// then its added rows), `x[d − 1]` its normal row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Wide<T> {
    pub x: [T; 3 + MAX_CONE_ROWS],
    pub d: usize,
}

impl<T: Real> Wide<T> {
    /// Contact `i`'s rows of `v` (`[t1, t2, n]` at `3i`, its added rows at `rows`).
    #[inline]
    pub fn gather(v: &[T], i: usize, rows: &[usize]) -> Self {
        let mut x = [T::zero(); 3 + MAX_CONE_ROWS];
        x[0] = v[3 * i];
        x[1] = v[3 * i + 1];
        for (k, &r) in rows.iter().enumerate() {
            x[2 + k] = v[r];
        }
        let d = 3 + rows.len();
        x[d - 1] = v[3 * i + 2];
        Wide { x, d }
    }

    /// Writes the rows back where [`Self::gather`] read them.
    #[inline]
    pub fn scatter(&self, v: &mut [T], i: usize, rows: &[usize]) {
        v[3 * i] = self.x[0];
        v[3 * i + 1] = self.x[1];
        for (k, &r) in rows.iter().enumerate() {
            v[r] = self.x[2 + k];
        }
        v[3 * i + 2] = self.x[self.d - 1];
    }

    /// The normal row.
    #[inline]
    pub fn normal(&self) -> T {
        self.x[self.d - 1]
    }

    /// `‖x_T‖`, the tangential rows' norm.
    #[inline]
    pub fn tangent_norm(&self) -> T {
        self.x[..self.d - 1]
            .iter()
            .fold(T::zero(), |s, &t| s + t * t)
            .sqrt()
    }

    pub(crate) fn dot(&self, o: &Self) -> T {
        (0..self.d).fold(T::zero(), |s, k| s + self.x[k] * o.x[k])
    }

    pub(crate) fn dist(&self, o: &Self) -> T {
        (0..self.d)
            .fold(T::zero(), |s, k| {
                s + (self.x[k] - o.x[k]) * (self.x[k] - o.x[k])
            })
            .sqrt()
    }
}

/// Projection onto the second-order cone `{x : ‖x_T‖ ≤ a x_N}` (`a ≥ 0`;
/// `None`, an infinite slope: the half-space `x_N ≥ 0`), in `d` dimensions:
/// [`super::cone::project_soc`]'s formula with `‖x_T‖` over all the
/// tangential rows.
pub fn project_soc_wide<T: Real>(a: Option<T>, x: Wide<T>) -> Wide<T> {
    let (zero, one) = (T::zero(), T::one());
    let n = x.normal();
    let mut out = x;
    let Some(a) = a else {
        out.x[x.d - 1] = n.max(zero);
        return out;
    };
    let t = x.tangent_norm();
    if t <= a * n && n >= zero {
        return x;
    }
    if a * t <= -n {
        out.x = [zero; 3 + MAX_CONE_ROWS];
        return out;
    }
    let np = if a > one {
        (t + n / a) / (a + one / a)
    } else {
        (a * t + n) / (one + a * a)
    };
    let s = a * np / t;
    for v in &mut out.x[..x.d - 1] {
        *v *= s;
    }
    out.x[x.d - 1] = np;
    out
}

/// Projection onto the friction cone `K_μ` of `d` rows (`μ = ∞`: the
/// half-space `λ_N ≥ 0`).
pub fn project_cone_wide<T: Real>(mu: T, x: Wide<T>) -> Wide<T> {
    let infinite = mu > T::zero() && !mu.is_finite();
    project_soc_wide((!infinite).then_some(mu), x)
}

/// Projection onto the dual cone `K_μ* = {y : μ‖y_T‖ ≤ y_N}`.
pub fn project_dual_cone_wide<T: Real>(mu: T, x: Wide<T>) -> Wide<T> {
    project_soc_wide((mu > T::zero()).then(|| T::one() / mu), x)
}

/// De Saxcé's correction on the normal row, `μ‖c_T‖`.
#[inline]
pub fn de_saxce_wide<T: Real>(mu: T, c: &Wide<T>) -> T {
    mu * c.tangent_norm()
}

/// `z = P_K(v)` over a whole problem of contacts with coefficients `mu`
/// (`3·nc` rows, then the rows of `row_sets`; empty: all unilateral): each
/// contact onto its cone, wide where `cones` gives it rows, every other row
/// onto its set.
pub fn project_problem(
    mu: &[f64],
    row_sets: &[RowSet],
    cones: &ConeRows,
    v: &[f64],
    z: &mut [f64],
) {
    let first = 3 * mu.len();
    for k in first..v.len() {
        z[k] = match row_sets.get(k - first) {
            Some(set) => set.project(v[k]),
            None => v[k].max(0.0),
        };
    }
    for (i, &m) in mu.iter().enumerate() {
        let rows = cones.of(i);
        if rows.is_empty() {
            set3(z, i, project_cone(m, get3(v, i)));
        } else {
            project_cone_wide(m, Wide::gather(v, i, rows)).scatter(z, i, rows);
        }
    }
}

/// De Saxcé's correction `s = Γ(c)` over a whole problem: `μ‖c_T‖` on each
/// contact's normal row (its cone rows among the tangential ones), zero on
/// every other row.
pub fn correct_problem(mu: &[f64], cones: &ConeRows, c: &[f64], s: &mut [f64]) {
    for (i, &m) in mu.iter().enumerate() {
        let rows = cones.of(i);
        if rows.is_empty() {
            set3(s, i, de_saxce(m, get3(c, i)));
        } else {
            s[3 * i] = 0.0;
            s[3 * i + 1] = 0.0;
            s[3 * i + 2] = de_saxce_wide(m, &Wide::gather(c, i, rows));
        }
    }
    // No correction on the rows (a cone row's is on its contact's normal).
    s[3 * mu.len()..].fill(0.0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contact::cone::{de_saxce, project_cone, project_dual_cone};

    fn three(v: [f64; 3]) -> Wide<f64> {
        Wide::gather(&v, 0, &[])
    }

    #[test]
    fn three_rows_are_the_three_row_cone() {
        let mut rng = crate::math::Rng::new(7);
        for _ in 0..200 {
            let v = [0; 3].map(|_| rng.range(-2.0, 2.0));
            let c = [0; 3].map(|_| rng.range(-2.0, 2.0));
            let mu = rng.range(0.0, 1.5);
            let (p, q) = (project_cone(mu, v), project_cone_wide(mu, three(v)));
            assert_eq!(p, [q.x[0], q.x[1], q.x[2]]);
            let (p, q) = (
                project_dual_cone(mu, v),
                project_dual_cone_wide(mu, three(v)),
            );
            assert_eq!(p, [q.x[0], q.x[1], q.x[2]]);
            assert_eq!(de_saxce(mu, c)[2], de_saxce_wide(mu, &three(c)));
        }
    }

    #[test]
    fn the_projection_is_the_nearest_point_of_the_cone() {
        // Against sampled points of the cone in 6 dimensions: none nearer,
        // and the projection in the cone, idempotent, its residual normal to it.
        let mut rng = crate::math::Rng::new(11);
        for _ in 0..100 {
            let mu = rng.range(0.1, 2.0);
            let v: Vec<f64> = (0..9).map(|_| rng.range(-1.0, 1.0)).collect();
            let rows = [3, 5, 8];
            let x = Wide::gather(&v, 0, &rows);
            let p = project_cone_wide(mu, x);
            assert_eq!(p.d, 6);
            assert!(p.tangent_norm() <= mu * p.normal() * (1.0 + 1e-12) + 1e-15);
            assert!(project_cone_wide(mu, p).dist(&p) < 1e-14);
            let r: Vec<f64> = (0..6).map(|k| x.x[k] - p.x[k]).collect();
            let rp: f64 = (0..6).map(|k| r[k] * p.x[k]).sum();
            assert!(
                rp.abs() < 1e-12,
                "residual not normal to the cone at p: {rp}"
            );
            let best = x.dist(&p);
            for _ in 0..200 {
                let mut s = Wide { x: [0.0; 6], d: 6 };
                let n = rng.range(0.0, 2.0);
                let dir: Vec<f64> = (0..5).map(|_| rng.range(-1.0, 1.0)).collect();
                let norm = dir.iter().map(|a| a * a).sum::<f64>().sqrt();
                let t = rng.range(0.0, mu * n);
                for k in 0..5 {
                    s.x[k] = dir[k] / norm * t;
                }
                s.x[5] = n;
                assert!(x.dist(&s) >= best - 1e-12);
            }
            // Round trip through the rows.
            let mut back = v.clone();
            x.scatter(&mut back, 0, &rows);
            assert_eq!(back, v);
        }
    }

    #[test]
    fn cone_rows_are_indexed_by_contact_and_bad_ones_refused() {
        let sets = [
            RowSet::Unilateral,
            RowSet::Cone(1),
            RowSet::Cone(0),
            RowSet::Cone(1),
        ];
        let c = ConeRows::new(2, &sets).unwrap();
        assert!(!c.is_empty());
        assert_eq!(c.of(0), &[8]);
        assert_eq!(c.of(1), &[7, 9]);
        assert!(ConeRows::new(2, &[RowSet::Unilateral]).unwrap().is_empty());
        let err = ConeRows::new(1, &[RowSet::Cone(1)])
            .unwrap_err()
            .to_string();
        assert!(err.contains("contact 1"), "{err}");
        let err = ConeRows::new(1, &[RowSet::Cone(0); 4])
            .unwrap_err()
            .to_string();
        assert!(err.contains("row_sets[3]"), "{err}");
    }
}
