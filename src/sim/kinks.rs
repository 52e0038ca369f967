//! Where the step's derivative with respect to `q` is one-sided (issue 37).
//!
//! The step is piecewise smooth in `q`: its pieces change where a contact
//! or a joint stop changes mode (a sticking contact reaches its cone's
//! edge, a sliding one stops, a pressed one lets go, a breaking one
//! touches) or where the stabilization's slope changes (a contact's or a
//! stop's distance crossing 0: `φ/dt` on a gap, `βφ/dt` in penetration;
//! and, with [`super::SimParams::max_recovery_speed`], crossing the depth
//! where `βφ/dt` reaches the bound).
//! A robot at rest sits on such a boundary: its feet settle at distance 0.
//! [`StepJacobians::dv_dq`](super::StepJacobians::dv_dq) is the derivative
//! of the piece the step is on; for each direction `k` of `q` (a column),
//! `q_sides` says for which perturbations `δq_k` that piece holds:
//!
//! - each quantity that decides a piece (a distance, an impulse, a
//!   velocity, a cone margin) is at some value `s` moving at rate `ṡ`
//!   along the column (from the step's own derivatives `∂λ/∂q` and
//!   `∂c/∂q`);
//! - where `|s| ≤ KINK_REACH·|ṡ|` the boundary is within [`KINK_REACH`] of
//!   `q` along the column, and only the side that keeps the piece counts;
//! - a column with no such quantity is [`QSide::Both`]; one whose
//!   quantities all keep the piece on the same side is [`QSide::Plus`] or
//!   [`QSide::Minus`] (the derivative is that side's one-sided
//!   derivative); one whose quantities disagree is [`QSide::Kink`]: no
//!   side's derivative, a generalized one (a base rotated on four settled
//!   feet lifts two and presses two).
//!
//! A column along which the linearized mode equations have no solution
//! (its residual above [`super::Q_EXACT_RESIDUAL`]: the least-squares
//! derivative, see `StepJacobians::q_residual`) and which moves a
//! constraint is a kink.

use crate::collision::Contact;
use crate::contact::{ContactMode, JointLimitRow};
use nalgebra::DMatrix;

/// How far from `q` (along a column, in its units: m or rad) a boundary of
/// the step's piece may lie and still count: a finite difference of step
/// `h ≤ KINK_REACH` crosses no boundary the side does not report.
pub const KINK_REACH: f64 = 1e-6;

/// Changes below this (in the quantity's units: m, m/s, N·s) over
/// [`KINK_REACH`] are rounding: a rate that small moves nothing (a corner
/// of a cube turned about the vertical keeps its distance to the floor up
/// to rounding).
const NOISE: f64 = 1e-12;

/// Which perturbations `δq_k` of one column of `q` the step's derivative
/// holds for (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QSide {
    /// Both signs: no boundary within [`KINK_REACH`].
    Both,
    /// `δq_k ≥ 0` only: the one-sided derivative from above.
    Plus,
    /// `δq_k ≤ 0` only: the one-sided derivative from below.
    Minus,
    /// Neither: both signs change the piece (a kink).
    Kink,
}

impl QSide {
    /// `+1` ([`QSide::Plus`]), `−1` ([`QSide::Minus`]), `0` ([`QSide::Both`])
    /// or `2` ([`QSide::Kink`]), as the Python bindings report it.
    pub fn code(self) -> i8 {
        match self {
            QSide::Both => 0,
            QSide::Plus => 1,
            QSide::Minus => -1,
            QSide::Kink => 2,
        }
    }
}

/// What [`q_sides`] reads of a step.
pub(crate) struct StepPieces<'a> {
    pub contacts: &'a [Contact],
    pub limits: &'a [JointLimitRow],
    pub mu: &'a [f64],
    /// Modes of the contacts, then of the limit rows.
    pub modes: &'a [ContactMode],
    pub lambda: &'a [f64],
    pub c: &'a [f64],
    /// `∂λ/∂x` and `∂c/∂x` (m × nv) along the columns of `x`, and for `x =
    /// q` `∂φ/∂q` (nc × nv); `None` for `x = v` or `τ`, which move no
    /// distance within the step.
    pub dlambda: &'a DMatrix<f64>,
    pub dc: &'a DMatrix<f64>,
    pub dphi: Option<&'a DMatrix<f64>>,
    /// Rows whose normal carried restitution (their slope is 0).
    pub impacts: &'a [(usize, f64)],
    /// Each column's relative residual of the modes' linearized equations
    /// (above [`super::Q_EXACT_RESIDUAL`]: no solution, the modes change).
    pub residuals: &'a [f64],
    /// The penetration (or a stop's overrun) at which recovery reaches
    /// [`super::SimParams::max_recovery_speed`]: its slope changes there.
    pub recovery_kink: Option<f64>,
}

/// The side of the stabilization's pieces a distance `d` is on, as a
/// quantity kept ≥ 0 by that piece: measured from 0 (the gap's `φ/dt`
/// against recovery) or, in penetration deeper than the bound's kink
/// `b`, from `−b` (bounded against `β φ / dt`).
fn stabilization_piece(d: f64, kink: Option<f64>) -> (f64, f64) {
    let boundary = match kink {
        Some(b) if d < -b / 2.0 => -b,
        _ => 0.0,
    };
    let sign = if d >= boundary { 1.0 } else { -1.0 };
    (sign * (d - boundary), sign)
}

/// The side of each of the `nv` columns of `q` (see the module doc).
pub(crate) fn q_sides(p: &StepPieces, nv: usize, out: &mut Vec<QSide>) {
    sides(p, nv, KINK_REACH, out);
}

/// The side of each of the `nv` columns of `v` or `τ` (`p.dphi` `None`):
/// the same quantities but the distances, which a change of `v` or `τ`
/// does not move within the step, each boundary counted within `reach`
/// of the column's unit ([`KINK_REACH`] m/s for `v`, `KINK_REACH/dt` N·m
/// or N for `τ`: a velocity change of order `KINK_REACH` on a unit mass,
/// as `moreau grad --fd` perturbs). Every such direction keeps the modes'
/// equations solvable (`J δv` lies in the range of `G`).
pub(crate) fn velocity_sides(p: &StepPieces, nv: usize, reach: f64, out: &mut Vec<QSide>) {
    debug_assert!(p.dphi.is_none());
    sides(p, nv, reach, out);
}

fn sides(p: &StepPieces, nv: usize, reach: f64, out: &mut Vec<QSide>) {
    let nc = p.contacts.len();
    out.clear();
    for k in 0..nv {
        // (plus allowed, minus allowed)
        let mut sides = (true, true);
        let mut moved = false;
        // A piece kept while `s` (its value) stays ≥ 0, moving at `rate`.
        let mut keep = |s: f64, rate: f64| {
            // (A rate whose move over the reach is below rounding: none.)
            if !(rate.abs() * reach > NOISE) {
                return;
            }
            moved = true;
            if s.abs() <= reach * rate.abs() {
                if rate > 0.0 {
                    sides.1 = false;
                } else {
                    sides.0 = false;
                }
            }
        };
        for i in 0..nc {
            let (n, t1, t2) = (3 * i + 2, 3 * i, 3 * i + 1);
            let dl = |r: usize| p.dlambda[(r, k)];
            let dc = |r: usize| p.dc[(r, k)];
            match p.modes[i] {
                ContactMode::Breaking => keep(p.c[n], dc(n)),
                mode => {
                    keep(p.lambda[n], dl(n));
                    // The stabilization's slope: the gap side's for
                    // φ ≥ 0, the penetration side's below.
                    if let Some(dphi) = p.dphi
                        && !p.impacts.iter().any(|&(row, _)| row == n)
                    {
                        let (s, sign) =
                            stabilization_piece(p.contacts[i].distance, p.recovery_kink);
                        keep(s, sign * dphi[(i, k)]);
                    }
                    let (lt1, lt2) = (p.lambda[t1], p.lambda[t2]);
                    if mode == ContactMode::Sticking {
                        // Inside the cone: μλ_N − ‖λ_T‖ ≥ 0.
                        let lt = (lt1 * lt1 + lt2 * lt2).sqrt();
                        let rate_t = if lt > 0.0 {
                            (lt1 * dl(t1) + lt2 * dl(t2)) / lt
                        } else {
                            (dl(t1) * dl(t1) + dl(t2) * dl(t2)).sqrt()
                        };
                        keep(p.mu[i] * p.lambda[n] - lt, p.mu[i] * dl(n) - rate_t);
                    } else {
                        // Sliding: ‖c_T‖ > 0.
                        let ct = (p.c[t1] * p.c[t1] + p.c[t2] * p.c[t2]).sqrt();
                        if ct > 0.0 {
                            keep(ct, (p.c[t1] * dc(t1) + p.c[t2] * dc(t2)) / ct);
                        }
                    }
                }
            }
        }
        for (l, limit) in p.limits.iter().enumerate() {
            let r = 3 * nc + l;
            if p.modes[nc + l] == ContactMode::Breaking {
                keep(p.c[r], p.dc[(r, k)]);
            } else {
                keep(p.lambda[r], p.dlambda[(r, k)]);
                if p.dphi.is_some() && k == limit.dof {
                    let (s, sign) = stabilization_piece(limit.distance, p.recovery_kink);
                    keep(s, sign * limit.sign());
                }
            }
        }
        let exact = p
            .residuals
            .get(k)
            .is_none_or(|&r| r <= super::Q_EXACT_RESIDUAL);
        out.push(match (sides, moved && !exact) {
            (_, true) => QSide::Kink,
            ((true, true), _) => QSide::Both,
            ((true, false), _) => QSide::Plus,
            ((false, true), _) => QSide::Minus,
            ((false, false), _) => QSide::Kink,
        });
    }
}
