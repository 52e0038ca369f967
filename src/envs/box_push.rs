//! A box pushed to a goal by a point pusher.

use super::registry::{count, positive, time_step};
use super::{BoxSpace, Rng, Task, Transition};
use crate::batch::BatchOptions;
use crate::math::{Inertia, SE3, Vec3};
use crate::model::{JointType, Material, Model, ModelBuilder, Shape, WORLD};
use crate::sim::{SimParams, State};
use nalgebra::DVector;
use std::sync::Arc;

/// Half the box's side (m).
const BOX_HALF: f64 = 0.1;
const PUSHER_RADIUS: f64 = 0.04;

/// A 1 kg box (0.2 m cube, μ = 0.4 on the ground) pushed on the ground to a
/// goal by a point pusher: a 0.5 kg ball of 4 cm radius, carried at the
/// box's mid-height by two prismatic joints (x, y). The model's `q = [box x
/// y z, box quaternion x y z w, pusher x, pusher y]`, `v = [box linear,
/// box angular (box frame), pusher ẋ, ẏ]`. The goal, per episode, is the
/// world's episode parameter `(goal x, goal y)`.
///
/// - Reset: box at the origin with a random yaw, goal at `U(0.3, 0.6)` m in
///   a random direction, pusher `U(0.25, 0.4)` m from the box in a random
///   direction, everything at rest.
/// - The **goal frame**: horizontal axes with x from the box to the goal
///   (angle `φ` in the world). Observations and actions are expressed in it,
///   so the task looks the same whatever the goal's direction: "get behind
///   the box and push along x" is then nearly linear in the observation, in
///   reach of a linear policy.
/// - Observation (9), in the goal frame: pusher − box (2), pusher velocity
///   (2), box–goal distance (1), box velocity (2), the box's yaw relative to
///   the frame as `cos(ψ − φ), sin(ψ − φ)` (2).
/// - Action (2): the pusher's velocity command `v_max · a` (0.5 m/s per
///   axis) in the goal frame, tracked by a force `clamp(k (v_cmd − v),
///   ±f_max)` per world axis (20 N·s/m, 20 N).
/// - Reward: `−‖box − goal‖ − 0.1 ‖pusher − box‖` (m) per step: the box's
///   distance to the goal, shaped by the pusher's distance to the box.
/// - Terminated: success, the box within 5 cm of the goal.
/// - Time limit: 200 steps at 50 Hz (4 s; 20 physics steps of 1 ms).
#[derive(Clone, Debug)]
pub struct BoxPush {
    model: Arc<Model>,
    pub v_max: f64,
    pub gain: f64,
    pub f_max: f64,
    pub success_distance: f64,
    pub episode_steps: usize,
    pub substeps: usize,
    /// Physics time step (s; 1 ms): the control period is `substeps · dt`.
    pub dt: f64,
}

impl BoxPush {
    pub fn new() -> Self {
        BoxPush {
            model: Arc::new(Self::build_model().expect("the box-push model builds")),
            v_max: 0.5,
            gain: 20.0,
            f_max: 20.0,
            success_distance: 0.05,
            episode_steps: 200,
            substeps: 20,
            dt: BatchOptions::default().params.dt,
        }
    }

    /// The ground, the box, the pusher (see the type's doc).
    pub fn build_model() -> Result<Model, crate::ModelError> {
        let mut b = ModelBuilder::new("box-push");
        b.add_ground("ground", Material::with_friction(0.4))?;
        let size = Vec3::repeat(2.0 * BOX_HALF);
        let body = b.add_body(
            "box",
            WORLD,
            JointType::Free,
            SE3::identity(),
            Inertia::cuboid(1.0, size),
        )?;
        b.add_geometry(
            "box",
            body,
            SE3::identity(),
            Shape::Cuboid {
                half_extents: size / 2.0,
            },
            Material::with_friction(0.4),
        )?;
        let slide_x = b.add_massless_body(
            "pusher_x",
            WORLD,
            JointType::Prismatic(Vec3::x()),
            SE3::from_translation(Vec3::new(0.0, 0.0, BOX_HALF)),
        )?;
        let pusher = b.add_body(
            "pusher",
            slide_x,
            JointType::Prismatic(Vec3::y()),
            SE3::identity(),
            Inertia::sphere(0.5, PUSHER_RADIUS),
        )?;
        b.add_geometry(
            "pusher",
            pusher,
            SE3::identity(),
            Shape::Ball {
                radius: PUSHER_RADIUS,
            },
            Material::with_friction(0.2),
        )?;
        b.build()
    }

    fn box_yaw(q: &DVector<f64>) -> f64 {
        let (x, y, z, w) = (q[3], q[4], q[5], q[6]);
        (2.0 * (w * z + x * y)).atan2(1.0 - 2.0 * (y * y + z * z))
    }
    /// `(cos φ, sin φ)` of the goal frame.
    fn goal_frame(q: &DVector<f64>, goal: &[f64]) -> (f64, f64) {
        let phi = (goal[1] - q[1]).atan2(goal[0] - q[0]);
        (phi.cos(), phi.sin())
    }
    fn box_velocity_world(state: &State) -> (f64, f64) {
        let rot = super::free_rotation(state.q.as_slice(), 0);
        let v = rot * Vec3::new(state.v[0], state.v[1], state.v[2]);
        (v.x, v.y)
    }
}

impl Default for BoxPush {
    fn default() -> Self {
        Self::new()
    }
}

impl Task for BoxPush {
    fn name(&self) -> &str {
        "box-push"
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
        let mut space = BoxSpace::symmetric(9, inf);
        space.low[4] = 0.0;
        for k in 7..9 {
            space.low[k] = -1.0;
            space.high[k] = 1.0;
        }
        space
    }
    fn action_dim(&self) -> usize {
        2
    }
    fn episode_dim(&self) -> usize {
        2
    }
    fn reset(&self, rng: &mut Rng, episode: &mut [f64]) -> State {
        let tau = std::f64::consts::TAU;
        let mut q = self.model.neutral_configuration();
        let yaw = rng.range(-std::f64::consts::PI, std::f64::consts::PI);
        q[2] = BOX_HALF;
        q[5] = (yaw / 2.0).sin();
        q[6] = (yaw / 2.0).cos();
        let (r, a) = (rng.range(0.25, 0.4), rng.range(0.0, tau));
        q[7] = r * a.cos();
        q[8] = r * a.sin();
        let (r, a) = (rng.range(0.3, 0.6), rng.range(0.0, tau));
        episode[0] = r * a.cos();
        episode[1] = r * a.sin();
        let nv = self.model.nv;
        State::new(q, DVector::zeros(nv))
    }
    fn observe(&self, state: &State, episode: &[f64], out: &mut [f32]) {
        let (q, v) = (&state.q, &state.v);
        let (c, s) = Self::goal_frame(q, episode);
        // World → goal frame.
        let local = |x: f64, y: f64| (c * x + s * y, -s * x + c * y);
        let (px, py) = local(q[7] - q[0], q[8] - q[1]);
        let (pvx, pvy) = local(v[6], v[7]);
        let (bvx, bvy) = {
            let (x, y) = Self::box_velocity_world(state);
            local(x, y)
        };
        let rel_yaw = Self::box_yaw(q) - s.atan2(c);
        let d_goal = (episode[0] - q[0]).hypot(episode[1] - q[1]);
        let vals = [
            px,
            py,
            pvx,
            pvy,
            d_goal,
            bvx,
            bvy,
            rel_yaw.cos(),
            rel_yaw.sin(),
        ];
        for (o, x) in out.iter_mut().zip(vals) {
            *o = x as f32;
        }
    }
    fn torques(&self, state: &State, action: &[f64], episode: &[f64], tau: &mut [f64]) {
        tau[..6].fill(0.0);
        let (c, s) = Self::goal_frame(&state.q, episode);
        // Goal frame → world.
        let command = [
            self.v_max * (c * action[0] - s * action[1]),
            self.v_max * (s * action[0] + c * action[1]),
        ];
        for k in 0..2 {
            let f = self.gain * (command[k] - state.v[6 + k]);
            tau[6 + k] = f.clamp(-self.f_max, self.f_max);
        }
    }
    fn reward(&self, t: &Transition) -> f64 {
        let q = &t.state.q;
        let d_goal = (t.episode[0] - q[0]).hypot(t.episode[1] - q[1]);
        let d_pusher = (q[7] - q[0]).hypot(q[8] - q[1]);
        -d_goal - 0.1 * d_pusher
    }
    fn terminated(&self, state: &State, episode: &[f64]) -> bool {
        let q = &state.q;
        (episode[0] - q[0]).hypot(episode[1] - q[1]) < self.success_distance
    }

    fn parameters(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("v_max", self.v_max),
            ("gain", self.gain),
            ("f_max", self.f_max),
            ("success_distance", self.success_distance),
            ("episode_steps", self.episode_steps as f64),
            ("substeps", self.substeps as f64),
            ("dt", self.dt),
        ]
    }
    fn set_parameter(&mut self, name: &str, value: f64) -> Result<(), String> {
        match name {
            "v_max" => self.v_max = positive(value, "speed (m/s)")?,
            "gain" => self.gain = positive(value, "gain (N·s/m)")?,
            "f_max" => self.f_max = positive(value, "force (N)")?,
            "success_distance" => self.success_distance = positive(value, "distance (m)")?,
            "episode_steps" => self.episode_steps = count(value)?,
            "substeps" => self.substeps = count(value)?,
            "dt" => self.dt = time_step(value)?,
            _ => return Err(format!("is not one of {:?}", self.parameters())),
        }
        Ok(())
    }
}
