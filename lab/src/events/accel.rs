//! The held contacts' acceleration-level problem and the checks of their modes.

use super::{EventError, EventParams, Mode};
use moreau::collision::{Contact, ContactKey};
use moreau::contact::{ContactProblem, ContactSolution, ContactSolver, SolverSettings};
use moreau::dynamics::Data;
use moreau::math::{Mat3, Vec3, Vec6, ang, lin};
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

    /// Non-negative while a sticking contact stays slow: `v_z − ‖u_T‖`
    /// (m/s), `v_z` the Zeno rule's speed. A sticking contact's force
    /// solves the cone problem on accelerations, which lets it slip
    /// slowly, the force on the cone's boundary against the tangential
    /// acceleration; past `v_z` it slides (Coulomb against the velocity).
    pub fn slip_margin(&self, p: &EventParams) -> f64 {
        p.zeno_velocity.max(p.velocity_tolerance) - self.velocity.xy().norm()
    }

    /// Non-negative while a sliding contact slides along `dir` (world).
    pub fn stop_margin(&self, dir: &Vec3, p: &EventParams) -> f64 {
        let ut = self.frame * Vec3::new(self.velocity.x, self.velocity.y, 0.0);
        ut.dot(dir) + p.velocity_tolerance
    }

    /// The world direction a contact that slips slides in: its sliding
    /// velocity's.
    pub fn slip_direction(&self) -> Vec3 {
        let u = self.frame * Vec3::new(self.velocity.x, self.velocity.y, 0.0);
        if u.norm() > 0.0 {
            u.normalize()
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

/// The largest `ε_abs` a contact solve that did not reach its tolerance
/// is accepted with: `10⁻⁶ max(1, ‖g‖∞)` (held contacts on a face are
/// redundant, and ADMM's convergence on them is linear).
pub fn acceptable(settings: &SolverSettings, g: &DVector<f64>) -> f64 {
    (1e-6 * g.amax().max(1.0)).max(settings.tolerance)
}

/// Solves the held contacts' problem for their forces (contact frames,
/// `3·n`): sticking contacts in the cone complementarity problem, sliding
/// ones with `f_T = −μ f_N û` (see `follow` for `û`): their normal forces
/// are a fixed point of the cone problem where the sliding contacts are
/// frictionless and their friction a known term of `g`, iterated until
/// `G f` stops changing.
#[allow(clippy::too_many_arguments)]
pub fn solve_modes(
    delassus: &DMatrix<f64>,
    alpha_free: &DVector<f64>,
    contacts: &[Contact],
    modes: &[Mode],
    u: &DVector<f64>,
    follow: Option<f64>,
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
                // With `follow: Some(tolerance)`, along the sliding
                // velocity while it keeps to the mode's side (faster than
                // the tolerance); else, and past a reversal (the stop
                // event's bisection finds it), along the mode's direction.
                let ut = [u[3 * i], u[3 * i + 1]];
                let norm = (ut[0] * ut[0] + ut[1] * ut[1]).sqrt();
                let local = c.frame.tr_mul(dir);
                let along = ut[0] * local.x + ut[1] * local.y;
                let d = if follow.is_some_and(|tol| norm > tol) && along > 0.0 {
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
    let mut problem = ContactProblem::new(delassus.clone(), alpha_free.clone(), mu)
        .expect("the held contacts' problem is built from a valid model");
    let sliding: Vec<usize> = (0..n).filter(|&i| slides[i].is_some()).collect();
    // Φ: the forces of the cone problem given the sliding contacts' normal
    // forces `x` (their friction a known term of `g`), warm-started at `warm`.
    let mut phi = |x: &[f64], warm: &DVector<f64>| -> Result<DVector<f64>, EventError> {
        let mut friction = DVector::zeros(3 * n);
        for (&i, &xi) in sliding.iter().zip(x) {
            let (mu, d) = slides[i].expect("sliding");
            friction[3 * i] = -mu * xi * d[0];
            friction[3 * i + 1] = -mu * xi * d[1];
        }
        problem.g.copy_from(alpha_free);
        problem.g += delassus * &friction;
        problem.warm_start.copy_from(warm);
        problem.warm_start -= &friction;
        solver
            .solve(&problem, settings, solution)
            .map_err(|_| EventError::ContactSolve {
                what: "held contacts'",
                t,
                residual: f64::NAN,
            })?;
        let stats = solution.stats;
        if !stats.converged && stats.residuals.eps_abs > acceptable(settings, &problem.g) {
            return Err(EventError::ContactSolve {
                what: "held contacts'",
                t,
                residual: stats.residuals.eps_abs,
            });
        }
        let mut forces = solution.lambda.clone();
        for &i in &sliding {
            let (mu, d) = slides[i].expect("sliding");
            forces[3 * i] = -mu * forces[3 * i + 2] * d[0];
            forces[3 * i + 1] = -mu * forces[3 * i + 2] * d[1];
        }
        Ok(forces)
    };
    let normals =
        |f: &DVector<f64>| -> Vec<f64> { sliding.iter().map(|&i| f[3 * i + 2]).collect() };
    let mut forces = phi(&vec![0.0; sliding.len()], &DVector::zeros(3 * n))?;
    if sliding.is_empty() {
        return Ok(forces);
    }
    // The sliding normal forces are a fixed point `x = Φ(x)`: plain
    // iterations (they keep an indeterminate distribution where the warm
    // start has it), then, if they are slow, Newton's method on `x − Φ(x)`
    // with a difference Jacobian (Φ is piecewise affine).
    let mut x = normals(&forces);
    let mut effect = delassus * &forces;
    const PLAIN: usize = 20;
    const ROUNDS: usize = 60;
    for round in 0..ROUNDS {
        forces = phi(&x, &forces)?;
        let next = normals(&forces);
        let next_effect = delassus * &forces;
        let change = (&next_effect - &effect).amax();
        effect = next_effect;
        // (At the solves' accuracy: an indeterminate distribution wanders
        // at that level from round to round.)
        if change <= 100.0 * settings.tolerance * (1.0 + effect.amax()) {
            return Ok(forces);
        }
        if round < PLAIN {
            x = next;
            continue;
        }
        let ns = x.len();
        let scale = 1.0 + next.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let delta = 1e-6 * scale;
        let mut jac = DMatrix::<f64>::identity(ns, ns);
        for j in 0..ns {
            let mut xj = x.clone();
            xj[j] += delta;
            let pj = normals(&phi(&xj, &forces)?);
            for k in 0..ns {
                jac[(k, j)] -= (pj[k] - next[k]) / delta;
            }
        }
        let r = DVector::from_iterator(ns, x.iter().zip(&next).map(|(a, b)| a - b));
        match jac
            .lu()
            .solve(&r)
            .filter(|s| s.iter().all(|v| v.is_finite()))
        {
            Some(step) => {
                for k in 0..ns {
                    x[k] = (x[k] - step[k]).max(0.0);
                }
            }
            None => x = next,
        }
    }
    Err(EventError::SlidingFixedPoint {
        t,
        iterations: ROUNDS,
    })
}
