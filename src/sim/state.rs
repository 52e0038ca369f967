//! The state of one world.

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
