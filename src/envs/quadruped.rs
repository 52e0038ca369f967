//! Quadruped standing and walking forward.

use super::registry::{count, finite, non_negative, positive, time_step};
use super::{
    BoxSpace, EnvError, InputGradient, Rng, Task, Transition, TransitionGradient, free_rotation,
};
use crate::batch::BatchOptions;
use crate::math::Vec3;
use crate::model::Model;
use crate::scenes::solo::{FOOT_RADIUS, LOWER_LEG, UPPER_LEG};
use crate::scenes::{quadruped_model, quadruped_standing, quadruped_standing_height};
use crate::sim::{SimParams, State};
use nalgebra::DVector;
use std::sync::Arc;

/// The 12-dof quadruped of [`crate::scenes::quadruped`] (Solo-12's
/// proportions; `q = [base x y z, base quaternion x y z w, 4 legs × (HAA,
/// HFE, KFE)]`, legs FL, FR, HL, HR; `v = [base linear, base angular (base
/// frame), 12 joint rates]`) standing up and walking forward along world x.
///
/// - Reset: the standing posture ([`quadruped_standing`]) with joint angles
///   `± joint_noise` (0.1 rad), the base 3 cm above standing height, joint
///   rates `U(−0.1, 0.1)`, heading along x. With `crouched_start`
///   ([`Self::stand_up`]): crouched instead, hips and knees folded 0.5 and
///   1 rad further (base about 0.11 m high), feet 1 cm above the ground.
/// - Observation (36): base height (1), gravity direction in the base frame
///   (3), base linear velocity (3) and angular velocity (3) in the base
///   frame, joint angles minus the standing posture (12), joint rates (12),
///   and a gait clock `cos, sin (2π f t)` (2, `f = gait_frequency`, 2 Hz):
///   a periodic input that lets a linear policy produce a periodic gait.
/// - Action (12): PD targets around the standing posture,
///   `q_ref = q_stand + action_scale · a` (0.5 rad); at every physics step
///   `τ = clamp(kp (q_ref − q) − kd q̇, ±tau_max)` (kp 8 N·m/rad, kd 0.3
///   N·m·s/rad, 3 N·m).
/// - Reward per step: forward velocity of the base over the step (m/s,
///   world x) `+ 0.5 · up_z` (the base's z axis along world z) `+ 0.5`
///   (alive) `+ height_weight · min(z / z_stand, 1)` (0 by default; 1 for
///   [`Self::stand_up`]) `− energy_cost · P` with `P` the mean mechanical
///   power `Σ|τ q̇|` (W) over the step (energy_cost 0.002).
/// - Terminated: the base falls, height < `min_height` (0.12 m; 0 for
///   [`Self::stand_up`]) or `up_z < 0.5`.
/// - Time limit: 150 steps at 50 Hz (3 s; 20 physics steps of 1 ms).
///
/// Differentiable: [`Task::observe_vjp`], [`Task::torques_vjp`] and
/// [`Task::reward_vjp`] are written, with respect to `q`'s coordinates
/// (the quaternion's four components, through its normalization). A
/// saturated torque and a clamped height term have derivative 0.
#[derive(Clone, Debug)]
pub struct QuadrupedWalk {
    model: Arc<Model>,
    q_stand: DVector<f64>,
    z_stand: f64,
    pub kp: f64,
    pub kd: f64,
    pub tau_max: f64,
    pub action_scale: f64,
    pub joint_noise: f64,
    pub energy_cost: f64,
    pub min_height: f64,
    pub height_weight: f64,
    pub crouched_start: bool,
    pub gait_frequency: f64,
    pub episode_steps: usize,
    pub substeps: usize,
    /// Physics time step (s; 1 ms): the control period is `substeps · dt`.
    pub dt: f64,
}

impl QuadrupedWalk {
    pub fn new() -> Self {
        let model = Arc::new(quadruped_model().expect("the quadruped model builds"));
        let z_stand = quadruped_standing_height();
        let q_stand = quadruped_standing(&model, z_stand);
        QuadrupedWalk {
            model,
            q_stand,
            z_stand,
            kp: 8.0,
            kd: 0.3,
            tau_max: 3.0,
            action_scale: 0.5,
            joint_noise: 0.1,
            energy_cost: 0.002,
            min_height: 0.12,
            height_weight: 0.0,
            crouched_start: false,
            gait_frequency: 2.0,
            episode_steps: 150,
            substeps: 20,
            dt: BatchOptions::default().params.dt,
        }
    }
    /// Standing up from a crouch, then walking: crouched resets, a height
    /// term in the reward, no termination on height (only on tipping over).
    /// With actions as PD targets around the standing posture, the zero
    /// action already stands up: the policy's work is the rest.
    pub fn stand_up() -> Self {
        QuadrupedWalk {
            crouched_start: true,
            min_height: 0.0,
            height_weight: 1.0,
            ..Self::new()
        }
    }
    /// The base's z axis in the world frame.
    fn up(state: &State) -> Vec3 {
        free_rotation(state.q.as_slice(), 0) * Vec3::z()
    }
}

/// World z in the base frame (the third row of the base's rotation, the
/// quaternion `q[3..7] = (x, y, z, w)` normalized) and its derivatives
/// with respect to `(x, y, z, w)`: `N/s` with `N = (2(xz − wy), 2(yz +
/// wx), w² + z² − x² − y²)`, `s = x² + y² + z² + w²`.
fn base_z_row(q: &[f64]) -> ([f64; 3], [[f64; 4]; 3]) {
    let (x, y, z, w) = (q[3], q[4], q[5], q[6]);
    let s = x * x + y * y + z * z + w * w;
    let n = [
        2.0 * (x * z - w * y),
        2.0 * (y * z + w * x),
        w * w + z * z - x * x - y * y,
    ];
    let dn = [
        [2.0 * z, -2.0 * w, 2.0 * x, -2.0 * y],
        [2.0 * w, 2.0 * z, 2.0 * y, 2.0 * x],
        [-2.0 * x, -2.0 * y, 2.0 * z, 2.0 * w],
    ];
    let c = [x, y, z, w];
    let mut jac = [[0.0; 4]; 3];
    for r in 0..3 {
        for k in 0..4 {
            jac[r][k] = dn[r][k] / s - n[r] * 2.0 * c[k] / (s * s);
        }
    }
    (n.map(|v| v / s), jac)
}

impl Default for QuadrupedWalk {
    fn default() -> Self {
        Self::new()
    }
}

impl Task for QuadrupedWalk {
    fn name(&self) -> &str {
        if self.crouched_start {
            "quadruped-stand-up"
        } else {
            "quadruped-walk"
        }
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
        let inf = f32::INFINITY;
        let mut low = vec![-inf; 36];
        let mut high = vec![inf; 36];
        for k in [1, 2, 3, 34, 35] {
            low[k] = -1.0;
            high[k] = 1.0;
        }
        BoxSpace { low, high }
    }
    fn action_dim(&self) -> usize {
        12
    }
    fn reset(&self, rng: &mut Rng, _episode: &mut [f64]) -> State {
        let mut q = self.q_stand.clone();
        for k in 7..19 {
            q[k] += rng.range(-self.joint_noise, self.joint_noise);
        }
        if self.crouched_start {
            for leg in 0..4 {
                q[7 + 3 * leg + 1] += 0.5;
                q[7 + 3 * leg + 2] -= 1.0;
            }
            // Feet 1 cm above the ground: the lowest foot of the drawn posture.
            let foot = (0..4)
                .map(|leg| {
                    let (hfe, kfe) = (q[7 + 3 * leg + 1], q[7 + 3 * leg + 2]);
                    UPPER_LEG * hfe.cos() + LOWER_LEG * (hfe + kfe).cos()
                })
                .fold(0.0, f64::max);
            q[2] = foot + FOOT_RADIUS + 0.01;
        } else {
            q[2] += 0.03;
        }
        let mut v = DVector::zeros(18);
        for k in 6..18 {
            v[k] = rng.range(-0.1, 0.1);
        }
        State::new(q, v)
    }
    fn observe(&self, state: &State, _episode: &[f64], out: &mut [f32]) {
        let (q, v) = (&state.q, &state.v);
        let rot = free_rotation(q.as_slice(), 0);
        let gravity = rot.inverse() * -Vec3::z();
        out[0] = q[2] as f32;
        for k in 0..3 {
            out[1 + k] = gravity[k] as f32;
            out[4 + k] = v[k] as f32;
            out[7 + k] = v[3 + k] as f32;
        }
        for j in 0..12 {
            out[10 + j] = (q[7 + j] - self.q_stand[7 + j]) as f32;
            out[22 + j] = v[6 + j] as f32;
        }
        let phase = std::f64::consts::TAU * self.gait_frequency * state.t;
        out[34] = phase.cos() as f32;
        out[35] = phase.sin() as f32;
    }
    fn torques(&self, state: &State, action: &[f64], _episode: &[f64], tau: &mut [f64]) {
        tau[..6].fill(0.0);
        for j in 0..12 {
            let q_ref = self.q_stand[7 + j] + self.action_scale * action[j];
            let t = self.kp * (q_ref - state.q[7 + j]) - self.kd * state.v[6 + j];
            tau[6 + j] = t.clamp(-self.tau_max, self.tau_max);
        }
    }
    fn reward(&self, t: &Transition) -> f64 {
        let forward = (t.state.q[0] - t.prev.q[0]) / t.dt;
        let up_z = Self::up(t.state).z;
        let height = (t.state.q[2] / self.z_stand).clamp(0.0, 1.0);
        forward + 0.5 * up_z + 0.5 + self.height_weight * height
            - self.energy_cost * t.energy / t.dt
    }
    fn terminated(&self, state: &State, _episode: &[f64]) -> bool {
        state.q[2] < self.min_height || Self::up(state).z < 0.5
    }
    fn observe_vjp(
        &self,
        state: &State,
        _episode: &[f64],
        g: &[f64],
        grad: &mut InputGradient,
    ) -> Result<(), EnvError> {
        grad.q[2] += g[0];
        // gravity = −(world z in the base frame).
        let (_, jac) = base_z_row(state.q.as_slice());
        for (r, row) in jac.iter().enumerate() {
            for k in 0..4 {
                grad.q[3 + k] -= row[k] * g[1 + r];
            }
        }
        for k in 0..6 {
            grad.v[k] += g[4 + k];
        }
        for j in 0..12 {
            grad.q[7 + j] += g[10 + j];
            grad.v[6 + j] += g[22 + j];
        }
        // The gait clock depends on the time alone.
        Ok(())
    }
    fn torques_vjp(
        &self,
        state: &State,
        action: &[f64],
        _episode: &[f64],
        g_tau: &[f64],
        grad: &mut InputGradient,
    ) -> Result<(), EnvError> {
        for j in 0..12 {
            let q_ref = self.q_stand[7 + j] + self.action_scale * action[j];
            let t = self.kp * (q_ref - state.q[7 + j]) - self.kd * state.v[6 + j];
            if t.abs() <= self.tau_max {
                let g = g_tau[6 + j];
                grad.q[7 + j] -= self.kp * g;
                grad.v[6 + j] -= self.kd * g;
                grad.action[j] += self.kp * self.action_scale * g;
            }
        }
        Ok(())
    }
    fn reward_vjp(
        &self,
        t: &Transition,
        g: f64,
        grad: &mut TransitionGradient,
    ) -> Result<(), EnvError> {
        grad.next.q[0] += g / t.dt;
        grad.prev.q[0] -= g / t.dt;
        let (_, jac) = base_z_row(t.state.q.as_slice());
        for k in 0..4 {
            grad.next.q[3 + k] += 0.5 * jac[2][k] * g;
        }
        let height = t.state.q[2] / self.z_stand;
        if (0.0..=1.0).contains(&height) {
            grad.next.q[2] += self.height_weight / self.z_stand * g;
        }
        grad.energy -= self.energy_cost / t.dt * g;
        Ok(())
    }

    fn parameters(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("kp", self.kp),
            ("kd", self.kd),
            ("tau_max", self.tau_max),
            ("action_scale", self.action_scale),
            ("joint_noise", self.joint_noise),
            ("energy_cost", self.energy_cost),
            ("min_height", self.min_height),
            ("height_weight", self.height_weight),
            ("gait_frequency", self.gait_frequency),
            ("episode_steps", self.episode_steps as f64),
            ("substeps", self.substeps as f64),
            ("dt", self.dt),
        ]
    }
    fn set_parameter(&mut self, name: &str, value: f64) -> Result<(), String> {
        match name {
            "kp" => self.kp = finite(value)?,
            "kd" => self.kd = finite(value)?,
            "tau_max" => self.tau_max = positive(value, "torque (N·m)")?,
            "action_scale" => self.action_scale = finite(value)?,
            "joint_noise" => self.joint_noise = non_negative(value, "angle (rad)")?,
            "energy_cost" => self.energy_cost = finite(value)?,
            "min_height" => self.min_height = finite(value)?,
            "height_weight" => self.height_weight = finite(value)?,
            "gait_frequency" => self.gait_frequency = finite(value)?,
            "episode_steps" => self.episode_steps = count(value)?,
            "substeps" => self.substeps = count(value)?,
            "dt" => self.dt = time_step(value)?,
            _ => return Err(format!("is not one of {:?}", self.parameters())),
        }
        Ok(())
    }
}
