//! The held contacts' acceleration-level problem and the checks of their modes.

use super::{EventError, EventParams, Mode};
use crate::collision::{Contact, ContactKey};
use crate::contact::{ContactProblem, ContactSolution, ContactSolver, SolverSettings};
use crate::dynamics::Data;
use crate::math::{Mat3, Vec3, Vec6, ang, lin};
use nalgebra::{DMatrix, DVector};

/// A held contact at one evaluation: its force, acceleration and velocity
/// in its contact frame (`[t1, t2, n]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Held {
    pub key: ContactKey,
    pub mode: Mode,
    /// `world_from_contact`.
    pub frame: Mat3,
    pub mu: f64,
    pub force: Vec3,
    pub accel: Vec3,
    pub velocity: Vec3,
    /// `G`'s normal diagonal entry (1/kg): turns an acceleration into a force.
    pub g_nn: f64,
    /// `G`'s mean tangential diagonal entry.
    pub g_tt: f64,
}

impl Held {
    /// Non-negative while the contact pushes: `f_N − α_N / G_NN` (+ tolerance).
    pub fn lift_margin(&self, p: &EventParams) -> f64 {
        self.force.z - self.accel.z.max(0.0) / self.g_nn + p.force_tolerance
    }

    /// Non-negative while a sticking contact can stick: the cone's margin
    /// `μ f_N − ‖f_T‖` minus the tangential acceleration as a force.
    pub fn slip_margin(&self, p: &EventParams) -> f64 {
        let ft = self.force.xy().norm();
        let at = self.accel.xy().norm();
        self.mu * self.force.z - ft - at / self.g_tt + p.force_tolerance
    }

    /// Non-negative while a sliding contact slides along `dir` (world).
    pub fn stop_margin(&self, dir: &Vec3, p: &EventParams) -> f64 {
        let ut = self.frame * Vec3::new(self.velocity.x, self.velocity.y, 0.0);
        ut.dot(dir) + p.velocity_tolerance
    }

    /// The world direction a contact that can no longer stick starts to
    /// slide in: its tangential acceleration's (or, if that vanishes,
    /// against its tangential force).
    pub fn slip_direction(&self) -> Vec3 {
        let a = self.frame * Vec3::new(self.accel.x, self.accel.y, 0.0);
        if a.norm() > 0.0 {
            return a.normalize();
        }
        let f = self.frame * Vec3::new(-self.force.x, -self.force.y, 0.0);
        if f.norm() > 0.0 {
            f.normalize()
        } else {
            self.frame.column(0).into_owned()
        }
    }
}

/// The contact-frame acceleration, at zero joint accelerations, of the
/// point of contact `c` fixed on each of its bodies (`a`'s minus `b`'s):
/// `J̇ v` up to the turning of the normal. `bias` (nbodies): each body's
/// spatial acceleration at zero joint accelerations, world frame at the
/// origin.
pub fn drift(data: &Data, bias: &[Vec6], c: &Contact) -> Vec3 {
    let point = |body: usize| {
        let (v, a0) = (&data.body_velocity[body], &bias[body]);
        let w = ang(v);
        let vp = lin(v) + w.cross(&c.point);
        lin(a0) + ang(a0).cross(&c.point) + w.cross(&vp)
    };
    c.frame.tr_mul(&(point(c.body_a) - point(c.body_b)))
}

/// Solves the held contacts' problem for their forces (contact frames,
/// `3·n`): sticking contacts in the cone complementarity problem, sliding
/// ones with `f_T = −μ f_N û` by a fixed point on their normal forces
/// (each round one cone problem where the sliding contacts are
/// frictionless and their friction a known term of `g`), until `G f` stops
/// changing.
#[allow(clippy::too_many_arguments)]
pub fn solve_modes(
    delassus: &DMatrix<f64>,
    alpha_free: &DVector<f64>,
    contacts: &[Contact],
    modes: &[Mode],
    u: &DVector<f64>,
    velocity_tolerance: f64,
    solver: &mut dyn ContactSolver,
    settings: &SolverSettings,
    solution: &mut ContactSolution,
    t: f64,
) -> Result<DVector<f64>, EventError> {
    let n = contacts.len();
    // Sliding directions in each contact's tangent plane (contact frame).
    let slides: Vec<Option<(f64, [f64; 2])>> = contacts
        .iter()
        .zip(modes)
        .enumerate()
        .map(|(i, (c, m))| match m {
            Mode::Stick => None,
            Mode::Slide { dir } => {
                // Along the sliding velocity while it keeps to the mode's
                // side; past a reversal (the stop event's bisection finds
                // it), along the mode's direction: the mode is frozen
                // within a step.
                let ut = [u[3 * i], u[3 * i + 1]];
                let norm = (ut[0] * ut[0] + ut[1] * ut[1]).sqrt();
                let local = c.frame.tr_mul(dir);
                let along = ut[0] * local.x + ut[1] * local.y;
                let d = if norm > velocity_tolerance && along > 0.0 {
                    [ut[0] / norm, ut[1] / norm]
                } else {
                    let l = (local.x * local.x + local.y * local.y).sqrt().max(1e-300);
                    [local.x / l, local.y / l]
                };
                Some((c.mu, d))
            }
        })
        .collect();
    let mu: Vec<f64> = contacts
        .iter()
        .zip(&slides)
        .map(|(c, s)| if s.is_some() { 0.0 } else { c.mu })
        .collect();
    let mut forces = DVector::zeros(3 * n);
    let mut effect = DVector::zeros(3 * n);
    let mut problem = ContactProblem::new(delassus.clone(), alpha_free.clone(), mu)
        .expect("the held contacts' problem is built from a valid model");
    let any_slide = slides.iter().any(|s| s.is_some());
    const ROUNDS: usize = 200;
    for round in 0..ROUNDS {
        // g = α_free + G f_friction of the sliding contacts.
        problem.g.copy_from(alpha_free);
        let mut friction = DVector::zeros(3 * n);
        for (i, s) in slides.iter().enumerate() {
            if let Some((mu, d)) = s {
                friction[3 * i] = -mu * forces[3 * i + 2] * d[0];
                friction[3 * i + 1] = -mu * forces[3 * i + 2] * d[1];
            }
        }
        problem.g += delassus * &friction;
        problem.warm_start.copy_from(&forces);
        problem.warm_start -= &friction;
        solver
            .solve(&problem, settings, solution)
            .map_err(|_| EventError::ContactSolve {
                what: "held contacts'",
                t,
                residual: f64::NAN,
            })?;
        let stats = solution.stats;
        if !stats.converged && stats.residuals.eps_abs > 1e3 * settings.tolerance {
            return Err(EventError::ContactSolve {
                what: "held contacts'",
                t,
                residual: stats.residuals.eps_abs,
            });
        }
        forces.copy_from(&solution.lambda);
        for (i, s) in slides.iter().enumerate() {
            if let Some((mu, d)) = s {
                forces[3 * i] = -mu * forces[3 * i + 2] * d[0];
                forces[3 * i + 1] = -mu * forces[3 * i + 2] * d[1];
            }
        }
        if !any_slide {
            return Ok(forces);
        }
        let next = delassus * &forces;
        let change = (&next - &effect).amax();
        effect = next;
        if round > 0 && change <= 1e-13 * (1.0 + effect.amax()) {
            return Ok(forces);
        }
    }
    Err(EventError::SlidingFixedPoint {
        t,
        iterations: ROUNDS,
    })
}
