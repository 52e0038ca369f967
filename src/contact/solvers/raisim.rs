//! RaiSim's per-contact iteration (Hwangbo, Lee, Hutter, "Per-contact
//! iteration method for solving contact dynamics", RA-L 2018), and the same
//! with de Saxcé's correction (as in the seed study's reference code).
//!
//! Each contact `i` in turn, with `c_f = c_i − W λ_i` its velocity without
//! its own impulse (`W = G_ii + R_i`), solves a 3-D problem exactly:
//! - take-off: `c_f,N ≥ 0` → `λ* = 0`;
//! - stiction: `λ₀ = −W⁻¹ c_f` inside the cone → `λ* = λ₀` (the contact stops);
//! - sliding: `λ*` on the ellipse `∂K_μ ∩ {(W λ + c_f)_N = 0}` (on the cone's
//!   boundary, with zero normal velocity), at the minimum of
//!   `E(λ) = ½ λᵀWλ + c̃ᵀλ` along it, found by a 1-D search on the polar
//!   angle `θ` of `λ_T` from the direction of `λ₀`: march downhill until
//!   `dE/dθ` changes sign, then regula falsi (Illinois) on the bracket.
//!
//! RaiSim takes `c̃ = c_f`: the impulse closest to `λ₀` in `W`'s metric. Its
//! optimality conditions give `c_T ∝ −λ_T − (μ²λ_N / W_NN)·W_NT`, so friction
//! is not opposite to the slip whenever `W_NT ≠ 0`: the model keeps Signorini
//! and Coulomb's cone but violates maximum dissipation (and, summed over
//! contacts, leaves internal forces while sliding). RaiSim+DS takes
//! `c̃ = c_f + [0, 0, μ ‖c_i,T‖]` (de Saxcé's correction at the current
//! velocity), whose minimizer on the ellipse has `c_T ∥ −λ_T`: its fixed
//! points solve the NCP.
//!
//! Relaxation: `λ_i ← (1 − α) λ_i + α λ*`, with `α` decaying once per sweep,
//! `α ← γ α + (1 − γ) α_min` from `α₀` (RaiSim's schedule; the constants are
//! those of the seed study's reference implementation).
//!
//! Stopping: RaiSim+DS on the NCP's `ε_abs`; RaiSim, whose fixed points solve
//! no cone problem, on the largest velocity correction of a sweep,
//! `max_i ‖W (λ*_i − λ_i)‖` (m/s), which vanishes exactly at its fixed points.

use super::pgs::{Criterion, block, gauss_seidel};
use super::{ContactSolution, ContactSolver, SolverKind, SolverSettings};
use crate::contact::ContactProblem;
use crate::contact::cone::project_cone;
use crate::contact::criteria::ContactModel;
use crate::error::ProblemError;
use nalgebra::{Matrix3, Vector3};
use std::cell::Cell;

/// Initial relaxation factor.
pub const ALPHA_0: f64 = 1.0;
/// Asymptotic relaxation factor.
pub const ALPHA_MIN: f64 = 0.1;
/// Per-sweep decay of the relaxation factor.
pub const ALPHA_DECAY: f64 = 0.99;
/// Largest step of the downhill march (rad).
pub(crate) const MAX_STEP: f64 = 0.2;
/// Angular tolerance of the 1-D search (rad).
const THETA_TOLERANCE: f64 = 1e-12;

pub struct Raisim {
    de_saxce: bool,
}

impl Raisim {
    /// `de_saxce = false`: RaiSim; `true`: RaiSim with de Saxcé's correction.
    pub fn new(de_saxce: bool) -> Self {
        Raisim { de_saxce }
    }
}

/// One point of the ellipse: `λ(θ) = s(θ) (μ cos θ, μ sin θ, 1)` with `s`
/// fixed by `(Wλ + c_f)_N = 0`; `None` where the plane does not cut that ray.
struct Ellipse {
    w: Matrix3<f64>,
    cf: Vector3<f64>,
    ctilde: Vector3<f64>,
    mu: f64,
}

impl Ellipse {
    fn point(&self, theta: f64) -> Option<(Vector3<f64>, Vector3<f64>)> {
        let (sn, cs) = theta.sin_cos();
        let u = Vector3::new(self.mu * cs, self.mu * sn, 1.0);
        let du = Vector3::new(-self.mu * sn, self.mu * cs, 0.0);
        let a = self.w.row(2).transpose();
        let au = a.dot(&u);
        if !(au > 0.0) {
            return None;
        }
        let s = -self.cf[2] / au;
        let ds = -s * a.dot(&du) / au;
        Some((u * s, u * ds + du * s))
    }

    /// `dE/dθ` at `θ` (`None` off the valid arc).
    fn slope(&self, theta: f64) -> Option<f64> {
        self.point(theta)
            .map(|(l, dl)| (self.w * l + self.ctilde).dot(&dl))
    }

    /// Minimizer of `E` along the ellipse, searching from `theta0`.
    fn minimize(&self, theta0: f64) -> Option<Vector3<f64>> {
        let d0 = self.slope(theta0)?;
        if d0 == 0.0 {
            return self.point(theta0).map(|p| p.0);
        }
        // March downhill until the slope changes sign.
        let dir = -d0.signum();
        let (mut lo, mut d_lo) = (theta0, d0);
        let mut step = 0.1;
        let mut travelled = 0.0;
        let (mut hi, mut d_hi) = loop {
            if travelled > std::f64::consts::TAU || step < 1e-14 {
                // No sign change on a whole turn: keep the best point seen.
                return self.point(lo).map(|p| p.0);
            }
            let t = lo + dir * step;
            match self.slope(t) {
                None => step *= 0.5,
                Some(d) if d * d0 > 0.0 => {
                    travelled += step;
                    lo = t;
                    d_lo = d;
                    // Capped, so that a step does not jump over a gap of
                    // the valid arc (where the ray misses the plane).
                    step = (step * 1.5).min(MAX_STEP);
                }
                Some(d) => break (t, d),
            }
        };
        // Illinois regula falsi on [lo, hi] (d_lo, d_hi of opposite signs).
        let mut side = 0;
        for _ in 0..100 {
            if (hi - lo).abs() < THETA_TOLERANCE {
                break;
            }
            let t = (lo * d_hi - hi * d_lo) / (d_hi - d_lo);
            let t = if t.is_finite() && (t - lo) * (t - hi) < 0.0 {
                t
            } else {
                0.5 * (lo + hi)
            };
            // Off the valid arc E is +∞ beyond the minimum: an "uphill" end
            // without a finite slope (the next point is then the midpoint).
            let d = self.slope(t).unwrap_or(-d0.signum() * f64::INFINITY);
            if d == 0.0 {
                lo = t;
                break;
            }
            if d * d_lo > 0.0 {
                lo = t;
                d_lo = d;
                if side == -1 {
                    d_hi *= 0.5;
                }
                side = -1;
            } else {
                hi = t;
                d_hi = d;
                if side == 1 {
                    d_lo *= 0.5;
                }
                side = 1;
            }
        }
        self.point(lo).map(|p| p.0)
    }
}

/// The exact per-contact step: `λ*` from the velocity `c` of contact `i`
/// (which includes its current impulse `l`).
fn local_step(w: &[[f64; 3]; 3], mu: f64, l: [f64; 3], c: [f64; 3], de_saxce: bool) -> [f64; 3] {
    let w = Matrix3::from_fn(|r, s| w[r][s]);
    let l = Vector3::from(l);
    let c = Vector3::from(c);
    let cf = c - w * l;
    if cf[2] >= 0.0 {
        return [0.0; 3];
    }
    // A singular block: a contact that cannot move along some direction (a
    // planar robot's contacts have no velocity along the second tangent).
    // A tiny diagonal (1e-10 of the trace) makes that direction cost an
    // impulse without changing the others; without it the contact kept
    // its impulse, zero when it first touched, and sank.
    let w = match w.try_inverse() {
        Some(_) => w,
        None => w + Matrix3::identity() * (1e-10 * w.trace().max(f64::MIN_POSITIVE)),
    };
    let Some(w_inv) = w.try_inverse() else {
        // A contact that cannot move at all: keep the impulse.
        return l.into();
    };
    let l0 = -(w_inv * cf);
    if l0[2] >= 0.0 && (l0[0] * l0[0] + l0[1] * l0[1]).sqrt() <= mu * l0[2] {
        return l0.into();
    }
    if !(mu > 0.0) {
        return [0.0, 0.0, (-cf[2] / w[(2, 2)]).max(0.0)];
    }
    let mut ctilde = cf;
    if de_saxce {
        ctilde[2] += mu * (c[0] * c[0] + c[1] * c[1]).sqrt();
    }
    let e = Ellipse { w, cf, ctilde, mu };
    let target = -(w_inv * ctilde);
    let mut theta0 = target[1].atan2(target[0]);
    if e.point(theta0).is_none() {
        // Start from the direction where the ray meets the plane most easily.
        theta0 = (-w[(2, 1)]).atan2(-w[(2, 0)]) + std::f64::consts::PI;
    }
    match e.minimize(theta0) {
        Some(v) if v.iter().all(|x| x.is_finite()) => project_cone(mu, v.into()),
        _ => l.into(),
    }
}

impl ContactSolver for Raisim {
    fn kind(&self) -> SolverKind {
        if self.de_saxce {
            SolverKind::RaisimDs
        } else {
            SolverKind::Raisim
        }
    }

    fn solve(
        &mut self,
        p: &ContactProblem,
        settings: &SolverSettings,
        out: &mut ContactSolution,
    ) -> Result<(), ProblemError> {
        let ds = self.de_saxce;
        let alpha = Cell::new(ALPHA_0);
        let criterion = if ds {
            Criterion::Model(ContactModel::Ncp)
        } else {
            Criterion::LocalCorrection
        };
        out.stats = gauss_seidel(
            p,
            settings,
            criterion,
            out,
            |i, w| project_cone(p.mu[i], w),
            |i, l, c| {
                let w = block(p, i);
                let star = local_step(&w, p.mu[i], l, c, ds);
                let d = [star[0] - l[0], star[1] - l[1], star[2] - l[2]];
                let mut corr = 0.0;
                for row in &w {
                    corr += (row[0] * d[0] + row[1] * d[1] + row[2] * d[2]).powi(2);
                }
                let a = alpha.get();
                let new = [l[0] + a * d[0], l[1] + a * d[1], l[2] + a * d[2]];
                (new, corr.sqrt())
            },
            || alpha.set(ALPHA_DECAY * alpha.get() + (1.0 - ALPHA_DECAY) * ALPHA_MIN),
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Brute force: the minimum of E over a fine sampling of the ellipse.
    fn brute(w: &[[f64; 3]; 3], mu: f64, cf: [f64; 3], extra: f64) -> Vector3<f64> {
        let wm = Matrix3::from_fn(|r, s| w[r][s]);
        let cf = Vector3::from(cf);
        let mut ct = cf;
        ct[2] += extra;
        let e = Ellipse {
            w: wm,
            cf,
            ctilde: ct,
            mu,
        };
        let mut best = (f64::INFINITY, Vector3::zeros());
        for k in 0..200_000 {
            let t = std::f64::consts::TAU * k as f64 / 200_000.0;
            if let Some((l, _)) = e.point(t) {
                let en = 0.5 * l.dot(&(wm * l)) + ct.dot(&l);
                if en < best.0 {
                    best = (en, l);
                }
            }
        }
        best.1
    }

    #[test]
    fn sliding_step_finds_the_minimum_on_the_ellipse_and_de_saxce_restores_mdp() {
        let w = [[2.0, 0.3, 0.8], [0.3, 1.5, -0.5], [0.8, -0.5, 1.2]];
        let mu = 0.8;
        let cf = [1.0, -0.5, -0.4];
        let got = local_step(&w, mu, [0.0; 3], cf, false);
        let want = brute(&w, mu, cf, 0.0);
        let err = (Vector3::from(got) - want).norm();
        println!("raisim sliding step {got:?}, brute force {want:?}, error {err:.1e}");
        assert!(err < 1e-4);
        let wm = Matrix3::from_fn(|r, s| w[r][s]);
        let v = wm * Vector3::from(got) + Vector3::from(cf);
        assert!(v[2].abs() < 1e-9, "zero normal velocity while sliding");
        assert!((got[0].hypot(got[1]) - mu * got[2]).abs() < 1e-9);
        let cos = -(got[0] * v[0] + got[1] * v[1]) / (got[0].hypot(got[1]) * v[0].hypot(v[1]));
        let angle = cos.clamp(-1.0, 1.0).acos().to_degrees();
        println!("raisim: angle(λ_T, −c_T) = {angle:.3}°");
        assert!(
            angle > 1.0,
            "W_NT ≠ 0 must make RaiSim miss maximum dissipation"
        );
        // With de Saxcé's correction at its own fixed point, friction opposes the slip.
        let mut l = [0.0; 3];
        let mut c = cf;
        for _ in 0..200 {
            let new = local_step(&w, mu, l, c, true);
            let v = wm * Vector3::from(new) + Vector3::from(cf);
            l = new;
            c = v.into();
        }
        let cos = -(l[0] * c[0] + l[1] * c[1]) / (l[0].hypot(l[1]) * c[0].hypot(c[1]));
        println!(
            "raisim-ds fixed point: cos(λ_T, −c_T) = {cos:.12}, c_N = {:.1e}",
            c[2]
        );
        assert!((1.0 - cos).abs() < 1e-9 && c[2].abs() < 1e-9);
        // Stiction and take-off.
        let stick = local_step(&w, 1.0, [0.0; 3], [0.01, 0.0, -1.0], false);
        let v = wm * Vector3::from(stick) + Vector3::new(0.01, 0.0, -1.0);
        assert!(v.norm() < 1e-12);
        assert_eq!(
            local_step(&w, mu, [0.0; 3], [1.0, 0.0, 0.5], false),
            [0.0; 3]
        );
    }

    #[test]
    fn sliding_step_on_an_open_curve_stays_on_its_valid_arc() {
        // W_NN < μ‖W_NT‖: the plane cuts the cone in an unbounded curve, and
        // the rays of a range of angles miss it.
        let w = [[1.0, 0.0, 0.9], [0.0, 1.0, 0.0], [0.9, 0.0, 1.0]];
        let mu = 2.0;
        for cf in [[1.0, 0.5, -1.0], [-3.0, 0.2, -1.0], [0.1, -4.0, -0.5]] {
            let got = local_step(&w, mu, [0.0; 3], cf, false);
            let want = brute(&w, mu, cf, 0.0);
            let v = Matrix3::from_fn(|r, s| w[r][s]) * Vector3::from(got) + Vector3::from(cf);
            println!(
                "open curve, c_f = {cf:?}: λ = {got:?} (brute force {want:?}), c_N = {:.1e}",
                v[2]
            );
            assert!(got.iter().all(|x| x.is_finite()));
            assert!((got[0] * got[0] + got[1] * got[1]).sqrt() <= mu * got[2] + 1e-9);
            let stuck = v.norm() < 1e-9;
            assert!(
                stuck || v[2].abs() < 1e-9,
                "zero normal velocity while sliding"
            );
            if !stuck {
                assert!((Vector3::from(got) - want).norm() < 1e-3 * want.norm().max(1.0));
            }
        }
    }
}
