//! Cart-pole swing-up.

use super::registry::{count, finite, positive, time_step};
use super::{BoxSpace, EnvError, InputGradient, Rng, Task, Transition, TransitionGradient};
use crate::batch::BatchOptions;
use crate::model::Model;
use crate::sim::{SimParams, State};
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
///
/// Differentiable: [`Task::observe_vjp`], [`Task::torques_vjp`] and
/// [`Task::reward_vjp`] are written (the clamp of the observed `x` has
/// derivative 0 off the rail).
#[derive(Clone, Debug)]
pub struct CartPoleSwingUp {
    model: Arc<Model>,
    pub force_max: f64,
    pub x_limit: f64,
    pub episode_steps: usize,
    pub substeps: usize,
    /// Physics time step (s; 1 ms): the control period is `substeps · dt`.
    pub dt: f64,
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
            dt: BatchOptions::default().params.dt,
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
    fn sim_params(&self) -> SimParams {
        super::params_with_dt(self.dt)
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
    fn observe_vjp(
        &self,
        state: &State,
        _episode: &[f64],
        g: &[f64],
        grad: &mut InputGradient,
    ) -> Result<(), EnvError> {
        let (x, th) = (state.q[0], state.q[1]);
        if x.abs() <= self.x_limit {
            grad.q[0] += g[0];
        }
        grad.q[1] += -th.sin() * g[1] + th.cos() * g[2];
        grad.v[0] += g[3];
        grad.v[1] += g[4];
        Ok(())
    }
    fn torques_vjp(
        &self,
        _state: &State,
        _action: &[f64],
        _episode: &[f64],
        g_tau: &[f64],
        grad: &mut InputGradient,
    ) -> Result<(), EnvError> {
        grad.action[0] += self.force_max * g_tau[0];
        Ok(())
    }
    fn reward_vjp(
        &self,
        t: &Transition,
        g: f64,
        grad: &mut TransitionGradient,
    ) -> Result<(), EnvError> {
        let (x, th) = (t.state.q[0], t.state.q[1]);
        grad.next.q[0] += -0.02 * x * g;
        grad.next.q[1] += -0.5 * th.sin() * g;
        grad.next.action[0] += -0.02 * t.action[0] * g;
        Ok(())
    }

    fn parameters(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("force_max", self.force_max),
            ("x_limit", self.x_limit),
            ("episode_steps", self.episode_steps as f64),
            ("substeps", self.substeps as f64),
            ("dt", self.dt),
        ]
    }
    fn set_parameter(&mut self, name: &str, value: f64) -> Result<(), String> {
        match name {
            "force_max" => self.force_max = finite(value)?,
            "x_limit" => self.x_limit = positive(value, "distance (m)")?,
            "episode_steps" => self.episode_steps = count(value)?,
            "substeps" => self.substeps = count(value)?,
            "dt" => self.dt = time_step(value)?,
            _ => return Err(format!("is not one of {:?}", self.parameters())),
        }
        Ok(())
    }
}
