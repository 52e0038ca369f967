//! The state of one world.

use super::Simulator;
use crate::math::Vec3;
use nalgebra::DVector;

/// The state of one world: configuration, velocity, the actuators'
/// activations, time.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct State {
    /// (nq)
    pub q: DVector<f64>,
    /// (nv)
    pub v: DVector<f64>,
    /// (`Model::na`) the activations of the actuators with activation
    /// dynamics, or empty: all zero, as MuJoCo starts them (a step under
    /// controls then writes all `na`).
    pub act: DVector<f64>,
    pub t: f64,
}

impl State {
    /// At `(q, v)`, time 0, activations zero.
    pub fn new(q: DVector<f64>, v: DVector<f64>) -> Self {
        State {
            q,
            v,
            act: DVector::zeros(0),
            t: 0.0,
        }
    }
}

/// A contact of a world's last step with its impulse (what a batch reports
/// of each world, on every backend).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorldContact {
    pub geom_a: usize,
    pub geom_b: usize,
    /// World point, midway between the surfaces.
    pub point: Vec3,
    /// World normal, from `geom_b` to `geom_a`.
    pub normal: Vec3,
    /// Signed distance between the surfaces (< 0: penetration).
    pub distance: f64,
    /// The step's impulse on `geom_a` (world frame; `−impulse` on
    /// `geom_b`): the force times `dt`.
    pub impulse: Vec3,
}

impl Simulator {
    /// The last step's contacts with their impulses (none before a step
    /// has solved its contacts).
    pub fn solved_contacts(&self) -> impl Iterator<Item = WorldContact> + '_ {
        let l = &self.solution.lambda;
        let solved = if l.len() >= 3 * self.contacts.len() {
            &self.contacts[..]
        } else {
            &[]
        };
        solved.iter().enumerate().map(move |(k, c)| WorldContact {
            geom_a: c.geom_a,
            geom_b: c.geom_b,
            point: c.point,
            normal: c.normal(),
            distance: c.distance,
            impulse: c.frame * Vec3::new(l[3 * k], l[3 * k + 1], l[3 * k + 2]),
        })
    }
}
