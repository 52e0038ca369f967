//! Cart-pole swing-up.

use super::{BoxSpace, Rng, Task, Transition};
use crate::model::Model;
use crate::sim::State;
use nalgebra::DVector;
use std::sync::Arc;

/// Cart-pole swing-up on [`crate::scenes::cartpole`]'s model (1 kg cart on a
/// rail along x, 0.1 kg pole of 1 m hinged about y; `q = [x, θ]`, `θ = 0`
/// upright).
///
/// - Reset: the pole hangs down, `θ = π + U(−0.1, 0.1)`, `x ∈ U(−0.2, 0.2)`,
///   velocities `U(−0.05, 0.05)`.
/// - Observation (5): `[x, cos θ, sin θ, ẋ, θ̇]`.
/// - Action (1): the force on the cart, `force_max · a` (10 N), `a ∈ [−1, 1]`.
/// - Reward: `(1 + cos θ)/2 − 0.01 a² − 0.01 x²` per step: in `[0, 1]`
///   up to the small penalties, so ending an episode early never pays.
/// - Terminated: the cart leaves the rail, `|x| > x_limit` (3 m).
/// - Time limit: 250 steps at 50 Hz (5 s; 20 physics steps of 1 ms).
#[derive(Clone, Debug)]
pub struct CartPoleSwingUp {
    model: Arc<Model>,
    pub force_max: f64,
    pub x_limit: f64,
    pub episode_steps: usize,
    pub substeps: usize,
}

impl CartPoleSwingUp {
    pub fn new() -> Self {
        let scene = crate::scenes::cartpole().expect("the cart-pole scene builds");
        CartPoleSwingUp {
            model: scene.model,
            force_max: 10.0,
            x_limit: 3.0,
            episode_steps: 250,
            substeps: 20,
        }
    }
}

impl Default for CartPoleSwingUp {
    fn default() -> Self {
        Self::new()
    }
}

impl Task for CartPoleSwingUp {
    fn name(&self) -> &str {
        "cartpole-swingup"
    }
    fn model(&self) -> &Arc<Model> {
        &self.model
    }
    fn substeps(&self) -> usize {
        self.substeps
    }
    fn max_episode_steps(&self) -> usize {
        self.episode_steps
    }
    fn observation_space(&self) -> BoxSpace {
        let x = self.x_limit as f32;
        let inf = f32::INFINITY;
        BoxSpace {
            low: vec![-x, -1.0, -1.0, -inf, -inf],
            high: vec![x, 1.0, 1.0, inf, inf],
        }
    }
    fn action_dim(&self) -> usize {
        1
    }
    fn reset(&self, rng: &mut Rng, _episode: &mut [f64]) -> State {
        let q = DVector::from_vec(vec![
            rng.range(-0.2, 0.2),
            std::f64::consts::PI + rng.range(-0.1, 0.1),
        ]);
        let v = DVector::from_vec(vec![rng.range(-0.05, 0.05), rng.range(-0.05, 0.05)]);
        State::new(q, v)
    }
    fn observe(&self, state: &State, _episode: &[f64], out: &mut [f32]) {
        let (x, th) = (state.q[0], state.q[1]);
        // The observation space bounds x: the cart is observed on the rail
        // even in the step it leaves it (then terminated).
        out[0] = x.clamp(-self.x_limit, self.x_limit) as f32;
        out[1] = th.cos() as f32;
        out[2] = th.sin() as f32;
        out[3] = state.v[0] as f32;
        out[4] = state.v[1] as f32;
    }
    fn torques(&self, _state: &State, action: &[f64], _episode: &[f64], tau: &mut [f64]) {
        tau[0] = self.force_max * action[0];
        tau[1] = 0.0;
    }
    fn reward(&self, t: &Transition) -> f64 {
        let (x, th) = (t.state.q[0], t.state.q[1]);
        0.5 * (1.0 + th.cos()) - 0.01 * t.action[0] * t.action[0] - 0.01 * x * x
    }
    fn terminated(&self, state: &State, _episode: &[f64]) -> bool {
        state.q[0].abs() > self.x_limit
    }
}
