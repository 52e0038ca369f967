//! Vectorized reinforcement-learning environments on top of [`BatchSim`].
//!
//! A [`VecEnv`] runs `nenv` copies of one [`Task`] in one batch, with the
//! shape of Gymnasium's `VectorEnv`:
//!
//! - [`VecEnv::reset`]`(seed) -> obs`, `obs`: `(nenv, obs_dim)` flat, row-major
//!   (environment after environment), `f32`;
//! - [`VecEnv::step`]`(actions) -> `[`StepResult`] `{ obs, reward, terminated,
//!   truncated, final_obs, .. }`, `actions`: `(nenv, action_dim)` flat `f32`;
//! - [`VecEnv::observation_space`] and [`VecEnv::action_space`]: [`BoxSpace`]s
//!   (per-component bounds, infinite where unbounded).
//!
//! **Control and physics.** One environment step holds the action for
//! [`Task::substeps`] physics steps of [`Task::sim_params`]`.dt` (50 Hz
//! control over 1 ms physics for the built-in tasks); the task turns the
//! action into joint torques at every physics step ([`Task::torques`]), so a
//! PD controller whose targets are the action runs at the physics rate.
//!
//! **Actions.** Every component lives in `[-1, 1]` ([`Task::action_space`]);
//! out-of-range components are **clipped** to it (counted in
//! [`StepResult::clipped`]); the task scales them to torques. A world whose
//! actions are not all finite (NaN, ±∞) is not stepped: it is **terminated**
//! with reward 0 and flagged in [`StepResult::invalid`] with the reason, then
//! reset like any finished episode; the other worlds step normally. A world
//! whose physics step fails (a solver error, a non-finite state; reported by
//! [`BatchSim::step`]) is handled the same way.
//!
//! **Autoreset** (Gymnasium's "same-step" mode, the default): when an
//! episode ends in a step (`terminated`: the task's failure or success
//! condition, or an invalid action; `truncated`: the time limit
//! [`Task::max_episode_steps`] reached without termination), the world is
//! reset in that same step and the returned `obs` row is the **first
//! observation of its new episode**; the last observation of the finished
//! episode is in [`StepResult::final_obs`] (which, for worlds that did not
//! finish, equals `obs`), and its undiscounted return and length are in
//! [`StepResult::episode_return`] and [`StepResult::episode_length`].
//! With [`VecEnvOptions::autoreset`] `false`, a finished world is frozen
//! until the next reset instead (not simulated; reward 0, `terminated` and
//! `truncated` false, `obs` its final observation; see [`VecEnv::finished`]):
//! the mode for evaluating one episode per world, as the lab's random search does.
//!
//! **Determinism.** Each world draws its initial states from its own
//! [`Rng`] (SplitMix64), seeded from the reset seed and the world's index
//! ([`world_seed`]) or given explicitly ([`VecEnv::reset_with_seeds`]); the
//! CPU backends step each world independently of the others and of the
//! thread count, so a seed and an action sequence give bit-identical
//! observations and rewards (tested across `CpuParallel` and `CpuSingle`).
//! The GPU backend is compared with the CPU within a tolerance, not bit for
//! bit.
//!
//! Tasks: [`CartPoleSwingUp`], [`QuadrupedWalk`] (and
//! [`QuadrupedWalk::stand_up`]), [`BoxPush`]; `Box<dyn Task>` is a task too. A robot loaded
//! from a URDF or MJCF file plugs in the same way: a [`Task`] owns its
//! [`Model`] and says how to observe, actuate, reward and reset it.

mod box_push;
mod cartpole;
pub mod gymnasium;
mod quadruped;
mod registry;

pub use box_push::BoxPush;
pub use cartpole::CartPoleSwingUp;
pub use quadruped::QuadrupedWalk;
pub use registry::{DerivativeCheck, TASK_NAMES, check_task_derivatives, make_task};

use crate::batch::{Backend, BatchError, BatchOptions, BatchSim};
pub use crate::math::Rng;
use crate::model::Model;
use crate::sim::{SimParams, State};
use std::sync::Arc;
use thiserror::Error;

/// The seed of world `world` for reset seed `seed`: distinct, well-mixed
/// streams per world.
pub fn world_seed(seed: u64, world: usize) -> u64 {
    Rng::new(seed ^ (world as u64).wrapping_mul(0xD1B5_4A32_D192_ED03)).next_u64()
}

/// A box in `R^n`: per-component bounds (`±∞` where unbounded), as
/// Gymnasium's `Box`.
#[derive(Clone, Debug, PartialEq)]
pub struct BoxSpace {
    pub low: Vec<f32>,
    pub high: Vec<f32>,
}

impl BoxSpace {
    /// `[-1, 1]^n`.
    pub fn symmetric(n: usize, bound: f32) -> Self {
        BoxSpace {
            low: vec![-bound; n],
            high: vec![bound; n],
        }
    }
    pub fn dim(&self) -> usize {
        self.low.len()
    }
    /// Whether `x` (one row) lies in the box (NaN does not).
    pub fn contains(&self, x: &[f32]) -> bool {
        x.len() == self.dim()
            && x.iter()
                .zip(self.low.iter().zip(&self.high))
                .all(|(v, (l, h))| *l <= *v && *v <= *h)
    }
}

/// What the task sees of one environment step of one world, to reward it.
pub struct Transition<'a> {
    /// The state before and after the step.
    pub prev: &'a State,
    pub state: &'a State,
    /// The clipped action, `[-1, 1]^action_dim`.
    pub action: &'a [f64],
    /// The world's episode parameters ([`Task::episode_dim`]).
    pub episode: &'a [f64],
    /// Mechanical work of the joint torques over the step, `Σ_substeps Σ_k
    /// |τ_k v_k| dt` (J): the energy term of a reward.
    pub energy: f64,
    /// Duration of the step (s): substeps × physics dt.
    pub dt: f64,
}

/// An RL task: a model, how it is observed, actuated, rewarded, ended and reset.
///
/// The methods are called for one world at a time with that world's state;
/// they must be pure functions of their arguments (determinism).
pub trait Task: Send + Sync {
    fn name(&self) -> &str;
    /// The model every world simulates.
    fn model(&self) -> &Arc<Model>;
    /// Physics parameters (time step, solver); default: [`BatchOptions`]'
    /// defaults (1 ms, NCP-ADMM, tolerance 1e-6).
    fn sim_params(&self) -> SimParams {
        BatchOptions::default().params
    }
    /// Physics steps per environment step.
    fn substeps(&self) -> usize;
    /// Time limit: environment steps after which an episode is truncated.
    fn max_episode_steps(&self) -> usize;
    fn observation_space(&self) -> BoxSpace;
    fn action_dim(&self) -> usize;
    /// Actions are clipped to this box; the default `[-1, 1]^action_dim` is
    /// what the built-in tasks scale to torques.
    fn action_space(&self) -> BoxSpace {
        BoxSpace::symmetric(self.action_dim(), 1.0)
    }
    /// Per-world, per-episode parameters drawn at reset (a goal, a
    /// command), passed to every other method; 0 by default.
    fn episode_dim(&self) -> usize {
        0
    }
    /// An initial state drawn from `rng`; writes the episode parameters.
    fn reset(&self, rng: &mut Rng, episode: &mut [f64]) -> State;
    /// Writes the observation, `(obs_dim)`.
    fn observe(&self, state: &State, episode: &[f64], out: &mut [f32]);
    /// Joint torques `(nv)` for the clipped `action` at `state`; called at
    /// every physics step.
    fn torques(&self, state: &State, action: &[f64], episode: &[f64], tau: &mut [f64]);
    fn reward(&self, t: &Transition) -> f64;
    /// Whether the episode ends at `state` (a fall, a success).
    fn terminated(&self, state: &State, episode: &[f64]) -> bool;

    /// The task's parameters by name, with their values (counts as whole
    /// numbers); none by default. See [`make_task`].
    fn parameters(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
    /// Sets one of [`Task::parameters`]; `Err` says why not (the value is
    /// out of range).
    fn set_parameter(&mut self, name: &str, value: f64) -> Result<(), String> {
        let _ = value;
        Err(format!(
            "`{name}` is not a parameter of task `{}`",
            self.name()
        ))
    }

    /// Reverse mode of [`Task::observe`]: adds `(∂obs/∂q)ᵀ g_obs` to
    /// `grad.q` and `(∂obs/∂v)ᵀ g_obs` to `grad.v` (`grad.action` is not
    /// touched). Derivatives are those of the observation before its
    /// rounding to `f32`, with respect to `q`'s coordinates as they are (a
    /// quaternion's four components are four inputs). A task without
    /// written derivatives (the default) answers
    /// [`EnvError::NoDerivatives`]; see [`check_task_derivatives`].
    fn observe_vjp(
        &self,
        state: &State,
        episode: &[f64],
        g_obs: &[f64],
        grad: &mut InputGradient,
    ) -> Result<(), EnvError> {
        let _ = (state, episode, g_obs, grad);
        Err(EnvError::NoDerivatives {
            task: self.name().to_string(),
            function: "observe",
        })
    }
    /// Reverse mode of [`Task::torques`]: adds the adjoints of `q`, `v`
    /// and the (clipped) `action` for the torques' adjoint `g_tau` to
    /// `grad`. Where a torque saturates, its derivative is 0 (at the bound
    /// itself, the unsaturated one).
    fn torques_vjp(
        &self,
        state: &State,
        action: &[f64],
        episode: &[f64],
        g_tau: &[f64],
        grad: &mut InputGradient,
    ) -> Result<(), EnvError> {
        let _ = (state, action, episode, g_tau, grad);
        Err(EnvError::NoDerivatives {
            task: self.name().to_string(),
            function: "torques",
        })
    }
    /// Reverse mode of [`Task::reward`]: adds `g ∂r/∂x` to `grad` for every
    /// input `x` of the transition (the states before and after, the
    /// action, the step's energy).
    fn reward_vjp(
        &self,
        t: &Transition,
        g: f64,
        grad: &mut TransitionGradient,
    ) -> Result<(), EnvError> {
        let _ = (t, g, grad);
        Err(EnvError::NoDerivatives {
            task: self.name().to_string(),
            function: "reward",
        })
    }
}

/// Adjoints of a task function's inputs (see [`Task::observe_vjp`],
/// [`Task::torques_vjp`]): `q` (nq), `v` (nv), `action` (action_dim).
#[derive(Clone, Debug, PartialEq)]
pub struct InputGradient {
    pub q: Vec<f64>,
    pub v: Vec<f64>,
    pub action: Vec<f64>,
}

impl InputGradient {
    pub fn zeros(nq: usize, nv: usize, na: usize) -> Self {
        InputGradient {
            q: vec![0.0; nq],
            v: vec![0.0; nv],
            action: vec![0.0; na],
        }
    }
}

/// Adjoints of a [`Transition`]'s inputs (see [`Task::reward_vjp`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TransitionGradient {
    /// The state before the step.
    pub prev: InputGradient,
    /// The state after the step (its `action` is the step's action).
    pub next: InputGradient,
    /// The step's energy ([`Transition::energy`]).
    pub energy: f64,
}

impl TransitionGradient {
    pub fn zeros(nq: usize, nv: usize, na: usize) -> Self {
        TransitionGradient {
            prev: InputGradient::zeros(nq, nv, 0),
            next: InputGradient::zeros(nq, nv, na),
            energy: 0.0,
        }
    }
}

/// A boxed task is a task: `VecEnv<Box<dyn Task>>` picks its task at run
/// time (from a name, a robot file).
impl<T: Task + ?Sized> Task for Box<T> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn model(&self) -> &Arc<Model> {
        (**self).model()
    }
    fn sim_params(&self) -> SimParams {
        (**self).sim_params()
    }
    fn substeps(&self) -> usize {
        (**self).substeps()
    }
    fn max_episode_steps(&self) -> usize {
        (**self).max_episode_steps()
    }
    fn observation_space(&self) -> BoxSpace {
        (**self).observation_space()
    }
    fn action_dim(&self) -> usize {
        (**self).action_dim()
    }
    fn action_space(&self) -> BoxSpace {
        (**self).action_space()
    }
    fn episode_dim(&self) -> usize {
        (**self).episode_dim()
    }
    fn reset(&self, rng: &mut Rng, episode: &mut [f64]) -> State {
        (**self).reset(rng, episode)
    }
    fn observe(&self, state: &State, episode: &[f64], out: &mut [f32]) {
        (**self).observe(state, episode, out)
    }
    fn torques(&self, state: &State, action: &[f64], episode: &[f64], tau: &mut [f64]) {
        (**self).torques(state, action, episode, tau)
    }
    fn reward(&self, t: &Transition) -> f64 {
        (**self).reward(t)
    }
    fn terminated(&self, state: &State, episode: &[f64]) -> bool {
        (**self).terminated(state, episode)
    }
    fn parameters(&self) -> Vec<(&'static str, f64)> {
        (**self).parameters()
    }
    fn set_parameter(&mut self, name: &str, value: f64) -> Result<(), String> {
        (**self).set_parameter(name, value)
    }
    fn observe_vjp(
        &self,
        state: &State,
        episode: &[f64],
        g_obs: &[f64],
        grad: &mut InputGradient,
    ) -> Result<(), EnvError> {
        (**self).observe_vjp(state, episode, g_obs, grad)
    }
    fn torques_vjp(
        &self,
        state: &State,
        action: &[f64],
        episode: &[f64],
        g_tau: &[f64],
        grad: &mut InputGradient,
    ) -> Result<(), EnvError> {
        (**self).torques_vjp(state, action, episode, g_tau, grad)
    }
    fn reward_vjp(
        &self,
        t: &Transition,
        g: f64,
        grad: &mut TransitionGradient,
    ) -> Result<(), EnvError> {
        (**self).reward_vjp(t, g, grad)
    }
}

/// A vectorized environment that cannot be built or stepped.
#[derive(Debug, Error)]
pub enum EnvError {
    #[error(transparent)]
    Batch(#[from] BatchError),
    #[error("{what} has length {got}, expected {expected} ({nenv} environments × {per_env})")]
    DimensionMismatch {
        what: &'static str,
        got: usize,
        expected: usize,
        nenv: usize,
        per_env: usize,
    },
    #[error("task `{task}`: {reason}")]
    Task { task: String, reason: String },
    #[error("task `{task}` has no written derivatives of its {function}")]
    NoDerivatives {
        task: String,
        function: &'static str,
    },
}

/// Options of a [`VecEnv`]. The control period is [`Task::substeps`] ×
/// the physics `dt`; changing one world's `dt` through
/// [`BatchSim::params_mut`] is not supported (rewards and energies use
/// world 0's).
#[derive(Clone, Debug)]
pub struct VecEnvOptions {
    /// Default: [`Backend::CpuParallel`].
    pub backend: Backend,
    /// Same-step autoreset (default) or freeze finished worlds until the
    /// next reset (see the module doc).
    pub autoreset: bool,
    /// Physics parameters instead of the task's [`Task::sim_params`].
    pub params: Option<SimParams>,
}

impl Default for VecEnvOptions {
    fn default() -> Self {
        VecEnvOptions {
            backend: Backend::CpuParallel,
            autoreset: true,
            params: None,
        }
    }
}

/// What one [`VecEnv::step`] returns. Per-world vectors have length `nenv`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepResult {
    /// `(nenv, obs_dim)`: the observation after the step, or, for a world
    /// whose episode ended in this step (autoreset), the first observation
    /// of its next episode.
    pub obs: Vec<f32>,
    /// `(nenv)` reward of the step (0 for an invalid action or a frozen world).
    pub reward: Vec<f32>,
    /// `(nenv)` the episode ended by the task's condition or an invalid action.
    pub terminated: Vec<bool>,
    /// `(nenv)` the episode hit the time limit (and was not terminated).
    pub truncated: Vec<bool>,
    /// `(nenv, obs_dim)`: the observation at the end of the step, before any
    /// reset: the final observation of the worlds that finished.
    pub final_obs: Vec<f32>,
    /// `(nenv)` undiscounted return and length (environment steps) of the
    /// episode that ended in this step; 0 where none ended.
    pub episode_return: Vec<f64>,
    pub episode_length: Vec<usize>,
    /// Worlds terminated because their actions were not finite or their
    /// physics step failed, with why.
    pub invalid: Vec<(usize, String)>,
    /// Action components clipped to the action space in this step.
    pub clipped: usize,
}

impl StepResult {
    /// Whether world `w`'s episode ended in this step.
    pub fn done(&self, w: usize) -> bool {
        self.terminated[w] || self.truncated[w]
    }
}

/// `nenv` worlds of one task stepped together (see the module doc).
pub struct VecEnv<T: Task> {
    task: T,
    sim: BatchSim,
    nenv: usize,
    obs_dim: usize,
    action_dim: usize,
    obs_space: BoxSpace,
    action_space: BoxSpace,
    autoreset: bool,
    rngs: Vec<Rng>,
    /// (nenv, episode_dim)
    episode: Vec<f64>,
    /// (nenv) steps and return of the current episode.
    steps: Vec<usize>,
    returns: Vec<f64>,
    /// (nenv) finished and frozen (autoreset off).
    frozen: Vec<bool>,
    /// (nenv, obs_dim) the current observation.
    obs: Vec<f32>,
    /// Workspaces: (nenv, action_dim), (nenv, nv), (nenv).
    action: Vec<f64>,
    tau: Vec<f64>,
    energy: Vec<f64>,
}

impl<T: Task> VecEnv<T> {
    /// `nenv` worlds of `task`, reset with seed 0. The GPU backend without a
    /// usable adapter is an error (the batch's), not a silent fallback.
    pub fn new(task: T, nenv: usize, options: &VecEnvOptions) -> Result<Self, EnvError> {
        let model = task.model().clone();
        let obs_space = task.observation_space();
        let action_space = task.action_space();
        let (obs_dim, action_dim, edim) = (obs_space.dim(), action_space.dim(), task.episode_dim());
        if action_dim != task.action_dim() || task.substeps() == 0 || task.max_episode_steps() == 0
        {
            return Err(EnvError::Task {
                task: task.name().into(),
                reason: "action space, substeps and time limit must be consistent and positive"
                    .into(),
            });
        }
        let params = options.params.unwrap_or_else(|| task.sim_params());
        let batch_options = BatchOptions {
            backend: options.backend,
            params,
            ..BatchOptions::default()
        };
        let mut scratch = vec![0.0; edim];
        let initial = task.reset(&mut Rng::new(0), &mut scratch);
        let sim = BatchSim::new(model.clone(), &initial, nenv, &batch_options)?;
        let mut env = VecEnv {
            sim,
            nenv,
            obs_dim,
            action_dim,
            obs_space,
            action_space,
            autoreset: options.autoreset,
            rngs: vec![Rng::new(0); nenv],
            episode: vec![0.0; nenv * edim],
            steps: vec![0; nenv],
            returns: vec![0.0; nenv],
            frozen: vec![false; nenv],
            obs: vec![0.0; nenv * obs_dim],
            action: vec![0.0; nenv * action_dim],
            tau: vec![0.0; nenv * model.nv],
            energy: vec![0.0; nenv],
            task,
        };
        env.reset(0)?;
        Ok(env)
    }

    pub fn task(&self) -> &T {
        &self.task
    }
    pub fn num_envs(&self) -> usize {
        self.nenv
    }
    pub fn obs_dim(&self) -> usize {
        self.obs_dim
    }
    pub fn action_dim(&self) -> usize {
        self.action_dim
    }
    pub fn observation_space(&self) -> &BoxSpace {
        &self.obs_space
    }
    pub fn action_space(&self) -> &BoxSpace {
        &self.action_space
    }
    /// The batch underneath (states, per-world parameters for domain
    /// randomization, timers).
    pub fn sim(&self) -> &BatchSim {
        &self.sim
    }
    pub fn sim_mut(&mut self) -> &mut BatchSim {
        &mut self.sim
    }
    /// `(nenv, obs_dim)` the current observations.
    pub fn observations(&self) -> &[f32] {
        &self.obs
    }
    /// `(nenv)` worlds finished and frozen until the next reset (autoreset off).
    pub fn finished(&self) -> &[bool] {
        &self.frozen
    }
    /// World `w`'s episode parameters ([`Task::episode_dim`]: a goal, a command).
    pub fn episode_params(&self, w: usize) -> &[f64] {
        let edim = self.task.episode_dim();
        &self.episode[w * edim..(w + 1) * edim]
    }
    /// Duration of one environment step (s).
    pub fn control_dt(&self) -> f64 {
        self.task.substeps() as f64 * self.sim.simulator(0).map_or(0.0, |s| s.params.dt)
    }

    /// Resets every world from seed `seed` (world `w` from
    /// [`world_seed`]`(seed, w)`); returns the observations `(nenv, obs_dim)`.
    pub fn reset(&mut self, seed: u64) -> Result<&[f32], EnvError> {
        let seeds: Vec<u64> = (0..self.nenv).map(|w| world_seed(seed, w)).collect();
        self.reset_with_seeds(&seeds)
    }

    /// Resets world `w` with its own RNG seed `seeds[w]` (several worlds may
    /// share a seed, hence an initial state: antithetic rollouts).
    pub fn reset_with_seeds(&mut self, seeds: &[u64]) -> Result<&[f32], EnvError> {
        if seeds.len() != self.nenv {
            return Err(EnvError::DimensionMismatch {
                what: "seeds",
                got: seeds.len(),
                expected: self.nenv,
                nenv: self.nenv,
                per_env: 1,
            });
        }
        for w in 0..self.nenv {
            self.rngs[w] = Rng::new(seeds[w]);
            self.frozen[w] = false;
            self.reset_world(w)?;
        }
        Ok(&self.obs)
    }

    /// Draws a new episode for world `w` from its RNG and observes it.
    fn reset_world(&mut self, w: usize) -> Result<(), EnvError> {
        let edim = self.task.episode_dim();
        let episode = &mut self.episode[w * edim..(w + 1) * edim];
        let state = self.task.reset(&mut self.rngs[w], episode);
        self.task.observe(
            &state,
            episode,
            &mut self.obs[w * self.obs_dim..(w + 1) * self.obs_dim],
        );
        self.sim.set_state(w, state)?;
        self.steps[w] = 0;
        self.returns[w] = 0.0;
        Ok(())
    }

    /// Steps every world by one environment step under `actions`
    /// `(nenv, action_dim)` flat (see the module doc for clipping, invalid
    /// actions and autoreset). A wrong length is an error and nothing moves.
    pub fn step(&mut self, actions: &[f32]) -> Result<StepResult, EnvError> {
        let (n, na, no, edim) = (
            self.nenv,
            self.action_dim,
            self.obs_dim,
            self.task.episode_dim(),
        );
        let nv = self.sim.model().nv;
        if actions.len() != n * na {
            return Err(EnvError::DimensionMismatch {
                what: "actions",
                got: actions.len(),
                expected: n * na,
                nenv: n,
                per_env: na,
            });
        }
        let mut out = StepResult {
            obs: vec![0.0; n * no],
            reward: vec![0.0; n],
            terminated: vec![false; n],
            truncated: vec![false; n],
            final_obs: vec![0.0; n * no],
            episode_return: vec![0.0; n],
            episode_length: vec![0; n],
            invalid: Vec::new(),
            clipped: 0,
        };
        // Which worlds step; clip the others' actions.
        let mut active = vec![false; n];
        for w in 0..n {
            if self.frozen[w] {
                continue;
            }
            let a = &actions[w * na..(w + 1) * na];
            if let Some(k) = a.iter().position(|x| !x.is_finite()) {
                out.invalid
                    .push((w, format!("action {k} is not finite ({})", a[k])));
                continue;
            }
            active[w] = true;
            for k in 0..na {
                let (lo, hi) = (self.action_space.low[k], self.action_space.high[k]);
                out.clipped += usize::from(a[k] < lo || a[k] > hi);
                self.action[w * na + k] = a[k].clamp(lo, hi) as f64;
            }
        }
        let prev: Vec<Option<State>> = (0..n)
            .map(|w| active[w].then(|| self.sim.state(w).expect("world exists").clone()))
            .collect();
        self.energy.fill(0.0);
        let dt = self.sim.simulator(0)?.params.dt;
        for _ in 0..self.task.substeps() {
            if !active.iter().any(|&a| a) {
                break;
            }
            for w in 0..n {
                let tau = &mut self.tau[w * nv..(w + 1) * nv];
                if active[w] {
                    let state = self.sim.state(w)?;
                    self.task.torques(
                        state,
                        &self.action[w * na..(w + 1) * na],
                        &self.episode[w * edim..(w + 1) * edim],
                        tau,
                    );
                }
            }
            let report = self.sim.step_active(&self.tau, Some(&active))?;
            for (w, why) in report.failed {
                if active[w] {
                    active[w] = false;
                    out.invalid.push((w, format!("physics step failed: {why}")));
                }
            }
            for w in 0..n {
                if active[w] {
                    let v = &self.sim.state(w)?.v;
                    let tau = &self.tau[w * nv..(w + 1) * nv];
                    self.energy[w] += tau
                        .iter()
                        .zip(v.iter())
                        .map(|(t, v)| (t * v).abs())
                        .sum::<f64>()
                        * dt;
                }
            }
        }
        out.invalid.sort_by_key(|(w, _)| *w);
        let control_dt = dt * self.task.substeps() as f64;
        for w in 0..n {
            let row = w * no..(w + 1) * no;
            if self.frozen[w] {
                out.obs[row.clone()].copy_from_slice(&self.obs[row.clone()]);
                out.final_obs[row.clone()].copy_from_slice(&self.obs[row]);
                continue;
            }
            let episode = &self.episode[w * edim..(w + 1) * edim];
            let state = self.sim.state(w)?;
            self.task
                .observe(state, episode, &mut out.final_obs[row.clone()]);
            if let Some(prev) = prev[w].as_ref().filter(|_| active[w]) {
                let r = self.task.reward(&Transition {
                    prev,
                    state,
                    action: &self.action[w * na..(w + 1) * na],
                    episode,
                    energy: self.energy[w],
                    dt: control_dt,
                });
                out.reward[w] = r as f32;
                self.returns[w] += r;
                out.terminated[w] = self.task.terminated(state, episode);
            } else {
                out.terminated[w] = true; // invalid action or failed step
            }
            self.steps[w] += 1;
            out.truncated[w] = !out.terminated[w] && self.steps[w] >= self.task.max_episode_steps();
            self.obs[row.clone()].copy_from_slice(&out.final_obs[row.clone()]);
            if out.done(w) {
                out.episode_return[w] = self.returns[w];
                out.episode_length[w] = self.steps[w];
                if self.autoreset {
                    self.reset_world(w)?;
                } else {
                    self.frozen[w] = true;
                }
            }
            out.obs[row.clone()].copy_from_slice(&self.obs[row]);
        }
        Ok(out)
    }
}

/// [`BatchOptions`]' default parameters with the physics step `dt` (the
/// built-in tasks' [`Task::sim_params`], `dt` one of their parameters).
pub(crate) fn params_with_dt(dt: f64) -> SimParams {
    SimParams {
        dt,
        ..BatchOptions::default().params
    }
}

/// Quaternion `(x, y, z, w)` of a free joint's `q[iq + 3..iq + 7]` as a rotation.
pub(crate) fn free_rotation(q: &[f64], iq: usize) -> nalgebra::UnitQuaternion<f64> {
    nalgebra::UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(
        q[iq + 6],
        q[iq + 3],
        q[iq + 4],
        q[iq + 5],
    ))
}
