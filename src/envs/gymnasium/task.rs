//! One world of a Gymnasium v5 task: its observation, reward, termination
//! and info at a state (see the module's doc).

use super::{GymKind, GymParams};
use crate::dynamics::{
    COM_INERTIA, Data, com_inertias, com_velocities, com_wrenches, forward_kinematics,
    forward_velocity, subtree_coms,
};
use crate::gpu::resident::{DeviceTaskSpec, TaskFloats};
use crate::math::{PhiloxStream, Vec3};
use crate::model::{Coordinate, Model};
use crate::sim::actuator_forces;
use std::sync::Arc;

/// A Gymnasium v5 task on a model: what it observes and how it rewards,
/// resolved against the model once (frames, sizes, the info's columns).
#[derive(Clone, Debug)]
pub struct GymTask {
    kind: GymKind,
    params: GymParams,
    model: Arc<Model>,
    /// MuJoCo's `qpos0` and `qvel0` (the reset noise's centre).
    qpos0: Vec<f64>,
    qvel0: Vec<f64>,
    /// Frames read: Ant's main body, Reacher's fingertip and target, the
    /// double pendulum's tip (indices into `Model::frames`).
    frames: Vec<usize>,
    body_frames: usize,
    obs_dim: usize,
    info: Vec<(&'static str, usize)>,
    info_dim: usize,
}

/// What the task reads of one world (see [`GymTask::evaluate`]).
pub struct GymWorld<'a> {
    /// The state now (moreau's conventions) and its activations.
    pub q: &'a [f64],
    pub v: &'a [f64],
    pub act: &'a [f64],
    /// The state the last physics step started from (MuJoCo's `data.xpos`
    /// after `mj_step`), the state now for a world just reset.
    pub kin_q: &'a [f64],
    pub kin_v: &'a [f64],
    /// Reset since its last step: no step to reward, no forces, controls 0.
    pub fresh: bool,
    /// The last step's contact forces `(frame, world point, world force)`.
    pub forces: &'a [(usize, Vec3, Vec3)],
    /// The last step's generalized constraint force on dof 0 (the double
    /// pendulum's cart).
    pub constraint_force0: f64,
    /// The last step's controls (nu) and `Σ a²` of the actions as given
    /// (in their own precision, as Gymnasium's costs).
    pub ctrl: &'a [f64],
    pub action_sq: f64,
    /// The position the velocity reward differentiates, before the step.
    pub position_before: [f64; 2],
    /// The environment step (physics dt × frame skip) and the physics dt.
    pub dt: f64,
    pub physics_dt: f64,
}

/// What the task writes for one world.
pub struct GymRow<'a> {
    pub obs: &'a mut [f64],
    pub info: &'a mut [f64],
    pub reward: f64,
    pub terminated: bool,
    /// The position the next step's velocity reward starts from.
    pub position: [f64; 2],
}

/// Per-thread working memory of [`GymTask::evaluate`].
pub struct GymScratch {
    data: Data,
    qpos: Vec<f64>,
    qvel: Vec<f64>,
    coms: Vec<Vec3>,
    values: Vec<f64>,
    jac: Vec<(usize, f64)>,
}

impl GymScratch {
    pub fn new(model: &Model) -> Self {
        GymScratch {
            data: Data::new(model),
            qpos: vec![0.0; model.nq],
            qvel: vec![0.0; model.nv],
            coms: Vec::new(),
            values: Vec::new(),
            jac: Vec::new(),
        }
    }
}

/// `lo < x < hi` (or `≤` when `closed`).
fn within(x: f64, (lo, hi): (f64, f64), closed: bool) -> bool {
    if closed {
        lo <= x && x <= hi
    } else {
        lo < x && x < hi
    }
}

/// Appends to an observation row.
struct Cursor<'a> {
    out: &'a mut [f64],
    at: usize,
}

impl Cursor<'_> {
    fn push(&mut self, x: f64) {
        self.out[self.at] = x;
        self.at += 1;
    }
    fn extend(&mut self, xs: impl IntoIterator<Item = f64>) {
        for x in xs {
            self.push(x);
        }
    }
}

impl GymTask {
    /// The task `kind` with Gymnasium's keyword arguments `params` on
    /// `model` (Gymnasium's file of the task, or a user's in its place),
    /// `qpos0` and `qvel0`: MuJoCo's initial state of the file. Refused,
    /// naming it, when the model lacks what the task reads (a frame, dofs).
    pub fn new(
        kind: GymKind,
        params: GymParams,
        model: Arc<Model>,
        qpos0: &[f64],
        qvel0: &[f64],
    ) -> Result<Self, String> {
        let frame = |name: &str| {
            model
                .frames
                .iter()
                .position(|f| f.name == name)
                .ok_or_else(|| format!("{}: the model has no body or site {name:?}", kind.id()))
        };
        let frames = match kind {
            GymKind::Ant => vec![frame(&params.main_body)?],
            GymKind::Reacher => vec![frame("fingertip")?, frame("target")?],
            GymKind::InvertedDoublePendulum => vec![frame("tip")?],
            _ => Vec::new(),
        };
        if let Some(&f) = frames.iter().find(|&&f| model.mocap_of_frame(f).is_some()) {
            return Err(format!(
                "{}: `{}` is on a mocap body, whose frames the task does not move",
                kind.id(),
                model.frames[f].name
            ));
        }
        let (nq, nv) = (model.nq, model.nv);
        // (Every task reads its first three coordinates but the pendulum, two.)
        let least = if kind == GymKind::InvertedPendulum {
            2
        } else {
            3
        };
        if nq < least || nv < least || qpos0.len() != nq || qvel0.len() != nv {
            return Err(format!(
                "{}: a model of nq {nq}, nv {nv} (qpos0 of {}, qvel0 of {}) does not fit the task",
                kind.id(),
                qpos0.len(),
                qvel0.len()
            ));
        }
        if !(params.reset_noise_scale.is_finite() && params.reset_noise_scale >= 0.0) {
            return Err(format!(
                "{}: reset_noise_scale must be finite and at least 0, got {}",
                kind.id(),
                params.reset_noise_scale
            ));
        }
        let body_frames = model.body_frames().count();
        let drop = |n: usize| {
            if params.exclude_current_positions {
                n
            } else {
                0
            }
        };
        let obs_dim = match kind {
            GymKind::InvertedPendulum => nq + nv,
            GymKind::InvertedDoublePendulum => 1 + 2 * (nq - 1) + nv + 1,
            GymKind::Reacher => 2 + 2 + (nq - 2) + 2 + 2,
            GymKind::Swimmer => nq - drop(2) + nv,
            GymKind::HalfCheetah | GymKind::Hopper | GymKind::Walker2d => nq - drop(1) + nv,
            GymKind::Ant => {
                nq - drop(2)
                    + nv
                    + if params.include_cfrc_ext {
                        6 * body_frames
                    } else {
                        0
                    }
            }
            GymKind::Humanoid => {
                let p = &params;
                nq - drop(2)
                    + nv
                    + if p.include_cinert {
                        COM_INERTIA * body_frames
                    } else {
                        0
                    }
                    + if p.include_cvel { 6 * body_frames } else { 0 }
                    + if p.include_qfrc_actuator { nv - 6 } else { 0 }
                    + if p.include_cfrc_ext {
                        6 * body_frames
                    } else {
                        0
                    }
            }
        };
        if kind == GymKind::Humanoid && nv < 6 {
            return Err("Humanoid-v5: the model has no free joint (nv < 6)".into());
        }
        let info = info_columns(kind, model.tendons.len());
        let info_dim = info.iter().map(|(_, w)| w).sum();
        Ok(GymTask {
            kind,
            params,
            qpos0: qpos0.to_vec(),
            qvel0: qvel0.to_vec(),
            model,
            frames,
            body_frames,
            obs_dim,
            info,
            info_dim,
        })
    }

    pub fn kind(&self) -> GymKind {
        self.kind
    }
    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }
    pub fn obs_dim(&self) -> usize {
        self.obs_dim
    }
    /// The info's terms, `(name, width)`, in the order of a row.
    pub fn info_columns(&self) -> &[(&'static str, usize)] {
        &self.info
    }
    pub fn info_dim(&self) -> usize {
        self.info_dim
    }
    /// The info's terms that Gymnasium's `reset` reports too (its
    /// `_get_reset_info`), which a world just reset fills.
    pub fn reset_info(&self, name: &str) -> bool {
        matches!(
            (self.kind, name),
            (
                GymKind::Ant | GymKind::Humanoid | GymKind::Swimmer,
                "x_position" | "y_position" | "distance_from_origin"
            ) | (GymKind::HalfCheetah, "x_position")
                | (
                    GymKind::Hopper | GymKind::Walker2d,
                    "x_position" | "z_distance_from_origin"
                )
                | (GymKind::Humanoid, "tendon_length" | "tendon_velocity")
        )
    }
    /// Whether the task reads the last step's contact forces.
    pub fn reads_contact_forces(&self) -> bool {
        matches!(self.kind, GymKind::Ant | GymKind::Humanoid)
    }

    /// Evaluates one world: its observation, and, unless `w.fresh`, its
    /// reward, termination and info (a world just reset gets reward 0, not
    /// terminated, and only its reset info).
    pub fn evaluate(&self, s: &mut GymScratch, w: &GymWorld, row: &mut GymRow) {
        let (m, p) = (&*self.model, &self.params);
        m.mujoco_qpos(w.q, &mut s.qpos);
        m.mujoco_qvel(w.q, w.v, &mut s.qvel);
        // The kinematics at the state the last physics step started from
        // (read by the frames, the body quantities, the tendons).
        forward_kinematics(m, &mut s.data, w.kin_q);
        // The position the velocity reward differentiates.
        row.position = match self.kind {
            GymKind::Ant => {
                let x = self.frame_position(s, 0);
                [x.x, x.y]
            }
            GymKind::Humanoid => {
                let c = crate::dynamics::center_of_mass(m, &s.data);
                [c.x, c.y]
            }
            GymKind::Swimmer => [w.q[0], w.q[1]],
            _ => [w.q[0], 0.0],
        };
        let (qpos, qvel) = (&s.qpos[..], &s.qvel[..]);
        let mut o = Cursor {
            out: &mut *row.obs,
            at: 0,
        };
        let positions = |o: &mut Cursor, n: usize| {
            let from = if p.exclude_current_positions { n } else { 0 };
            o.extend(qpos[from..].iter().copied());
        };
        let clipped_velocities =
            |o: &mut Cursor| o.extend(qvel.iter().map(|x| x.clamp(-10.0, 10.0)));
        match self.kind {
            GymKind::InvertedPendulum => {
                o.extend(qpos.iter().copied());
                o.extend(qvel.iter().copied());
            }
            GymKind::InvertedDoublePendulum => {
                o.push(qpos[0]);
                o.extend(qpos[1..].iter().map(|x| x.sin()));
                o.extend(qpos[1..].iter().map(|x| x.cos()));
                clipped_velocities(&mut o);
                o.push(if w.fresh {
                    0.0
                } else {
                    w.constraint_force0.clamp(-10.0, 10.0)
                });
            }
            GymKind::Reacher => {
                o.extend(qpos[..2].iter().map(|x| x.cos()));
                o.extend(qpos[..2].iter().map(|x| x.sin()));
                o.extend(qpos[2..].iter().copied());
                o.extend(qvel[..2].iter().copied());
                let d = self.frame_position(s, 0) - self.frame_position(s, 1);
                o.extend([d.x, d.y]);
            }
            GymKind::Swimmer => {
                positions(&mut o, 2);
                o.extend(qvel.iter().copied());
            }
            GymKind::HalfCheetah => {
                positions(&mut o, 1);
                o.extend(qvel.iter().copied());
            }
            GymKind::Hopper | GymKind::Walker2d => {
                positions(&mut o, 1);
                clipped_velocities(&mut o);
            }
            GymKind::Ant | GymKind::Humanoid => {
                positions(&mut o, 2);
                o.extend(qvel.iter().copied());
            }
        }
        let at = o.at;
        // Ant's and Humanoid's body quantities, at the kinematic state.
        let mut contact_cost = 0.0;
        if matches!(self.kind, GymKind::Ant | GymKind::Humanoid) {
            subtree_coms(m, &s.data, &mut s.coms);
            let mut o = Cursor {
                out: &mut *row.obs,
                at,
            };
            if self.kind == GymKind::Humanoid {
                if p.include_cinert {
                    com_inertias(m, &s.data, &s.coms, &mut s.values);
                    o.extend(s.values.iter().copied());
                }
                if p.include_cvel {
                    forward_velocity(m, &mut s.data, w.kin_v);
                    com_velocities(m, &s.data, &s.coms, &mut s.values);
                    o.extend(s.values.iter().copied());
                }
                if p.include_qfrc_actuator {
                    s.values.clear();
                    s.values.resize(m.nv, 0.0);
                    if !w.fresh {
                        actuator_forces(
                            m,
                            w.kin_q,
                            w.kin_v,
                            w.ctrl,
                            w.act,
                            w.physics_dt,
                            &mut s.values,
                        );
                    }
                    o.extend(s.values[6..].iter().copied());
                }
            }
            // cfrc_ext: zero for a world just reset.
            let forces = if w.fresh { &[][..] } else { w.forces };
            com_wrenches(m, &s.coms, forces.iter().copied(), &mut s.values);
            debug_assert_eq!(s.values.len(), 6 * self.body_frames);
            if self.kind == GymKind::Ant {
                let (lo, hi) = p.contact_force_range;
                for f in s.values.iter_mut() {
                    *f = f.clamp(lo, hi);
                }
                contact_cost = p.contact_cost_weight * s.values.iter().map(|f| f * f).sum::<f64>();
            } else {
                let (lo, hi) = p.contact_cost_range;
                let sq: f64 = s.values.iter().map(|f| f * f).sum();
                contact_cost = (p.contact_cost_weight * sq).clamp(lo, hi);
            }
            if p.include_cfrc_ext {
                o.extend(s.values.iter().copied());
            }
            debug_assert_eq!(o.at, self.obs_dim);
        } else {
            debug_assert_eq!(at, self.obs_dim);
        }
        self.outcome(s, w, row, contact_cost);
    }

    /// An initial state drawn from `rng` as the task's v5 source draws it
    /// (its `reset_model`), in MuJoCo's conventions: `qpos0` plus uniform
    /// noise in `±reset_noise_scale`, `qvel0` plus the same (or, for Ant,
    /// InvertedDoublePendulum and HalfCheetah, `reset_noise_scale` times a
    /// standard normal); Reacher: its arm's angles ±0.1, a goal uniform in
    /// the disc of radius 0.2 (drawn in its square until inside), velocities
    /// ±0.005 and the goal's zero. The same distributions as Gymnasium's,
    /// not its numbers (another generator).
    pub fn draw_reset(&self, rng: &mut PhiloxStream, qpos: &mut [f64], qvel: &mut [f64]) {
        let s = self.params.reset_noise_scale;
        let (nq, nv) = (qpos.len(), qvel.len());
        if self.kind == GymKind::Reacher {
            for (x, x0) in qpos.iter_mut().zip(&self.qpos0) {
                *x = x0 + rng.range(-0.1, 0.1);
            }
            let goal = loop {
                let g = [rng.range(-0.2, 0.2), rng.range(-0.2, 0.2)];
                if g[0].hypot(g[1]) < 0.2 {
                    break g;
                }
            };
            qpos[nq - 2..].copy_from_slice(&goal);
            for (v, v0) in qvel.iter_mut().zip(&self.qvel0) {
                *v = v0 + rng.range(-0.005, 0.005);
            }
            qvel[nv - 2..].fill(0.0);
            return;
        }
        for (x, x0) in qpos.iter_mut().zip(&self.qpos0) {
            *x = x0 + rng.range(-s, s);
        }
        let normal = self.normal_velocities();
        for (v, v0) in qvel.iter_mut().zip(&self.qvel0) {
            *v = v0
                + if normal {
                    s * rng.normal()
                } else {
                    rng.range(-s, s)
                };
        }
    }

    /// Whether the reset draws velocities' noise from a normal (else uniform).
    fn normal_velocities(&self) -> bool {
        matches!(
            self.kind,
            GymKind::Ant | GymKind::InvertedDoublePendulum | GymKind::HalfCheetah
        )
    }

    /// The task as the resident worlds' kernel computes it, `frame_skip`
    /// physics steps per environment step, or why the device cannot.
    pub fn device_spec(&self, frame_skip: usize) -> Result<DeviceTaskSpec, String> {
        use crate::gpu::resident::DeviceTaskKind as D;
        let kind = match self.kind {
            GymKind::InvertedPendulum => D::InvertedPendulum,
            GymKind::InvertedDoublePendulum => D::InvertedDoublePendulum,
            GymKind::Reacher => D::Reacher,
            GymKind::Swimmer => D::Swimmer,
            GymKind::HalfCheetah => D::HalfCheetah,
            GymKind::Hopper => D::Hopper,
            GymKind::Walker2d => D::Walker2d,
            GymKind::Ant => D::Ant,
            GymKind::Humanoid => D::Humanoid,
        };
        let p = &self.params;
        // An open end as ±f32::MAX (every finite f32 within it, as an
        // infinite bound in f64).
        let f = |x: f64| (x as f32).clamp(-f32::MAX, f32::MAX);
        let range = |(lo, hi): (f64, f64)| [f(lo), f(hi)];
        let frame = |k: usize| {
            self.frames.get(k).map_or((0, [0.0; 3]), |&i| {
                let fr = &self.model.frames[i];
                let t = fr.body_from_frame.translation;
                (fr.body, [t.x as f32, t.y as f32, t.z as f32])
            })
        };
        let ((body_a, frame_a), (body_b, frame_b)) = (frame(0), frame(1));
        let floats = TaskFloats {
            forward_reward_weight: f(p.forward_reward_weight),
            ctrl_cost_weight: f(p.ctrl_cost_weight),
            healthy_reward: f(p.healthy_reward),
            reward_dist_weight: f(p.reward_dist_weight),
            reward_control_weight: f(p.reward_control_weight),
            reset_noise_scale: f(p.reset_noise_scale),
            z0: f(self.qpos0[1]),
            healthy_z: range(p.healthy_z_range),
            healthy_state: range(p.healthy_state_range),
            healthy_angle: range(p.healthy_angle_range),
            contact_cost_weight: f(p.contact_cost_weight),
            contact_force_range: range(p.contact_force_range),
            contact_cost_range: range(p.contact_cost_range),
            frame_a,
            frame_b,
        };
        let spec = DeviceTaskSpec {
            kind,
            obs_dim: self.obs_dim,
            info_dim: self.info_dim,
            floats,
            qpos0: self.qpos0.clone(),
            qvel0: self.qvel0.clone(),
            frame_bodies: [body_a, body_b],
            exclude_positions: p.exclude_current_positions,
            terminate_unhealthy: p.terminate_when_unhealthy,
            normal_velocities: self.normal_velocities(),
            include_cfrc_ext: p.include_cfrc_ext,
            include_cinert: p.include_cinert,
            include_cvel: p.include_cvel,
            include_qfrc_actuator: p.include_qfrc_actuator,
            frame_skip,
        };
        match spec.unsupported(&self.model) {
            Some(why) => Err(format!("{}: {why}", self.kind.id())),
            None => Ok(spec),
        }
    }

    /// World position of the task's frame `k`, after the kinematics.
    fn frame_position(&self, s: &GymScratch, k: usize) -> Vec3 {
        let f = &self.model.frames[self.frames[k]];
        s.data.world_from_body[f.body].act_point(&f.body_from_frame.translation)
    }

    /// Reward, termination and info of one world, after its observation.
    fn outcome(&self, s: &mut GymScratch, w: &GymWorld, row: &mut GymRow, contact_cost: f64) {
        let p = &self.params;
        let (qpos, qvel) = (&s.qpos, &s.qvel);
        let before = w.position_before;
        let dt = w.dt;
        let ctrl_cost = p.ctrl_cost_weight * w.action_sq;
        // Terms by name, written where the info's layout puts them.
        let mut terms: [(&str, f64); 10] = [("", 0.0); 10];
        let mut n = 0;
        let mut term = |name: &'static str, value: f64| {
            terms[n] = (name, value);
            n += 1;
        };
        let mut reward: f64;
        let mut terminated = false;
        // The healthy tasks' survival reward and termination.
        let healthy = |ok: bool, term: &mut dyn FnMut(&'static str, f64)| {
            let survive = if ok { p.healthy_reward } else { 0.0 };
            term("reward_survive", survive);
            (survive, p.terminate_when_unhealthy && !ok)
        };
        match self.kind {
            GymKind::InvertedPendulum => {
                let finite = qpos.iter().chain(qvel.iter()).all(|x| x.is_finite());
                terminated = !finite || qpos[1].abs() > 0.2;
                reward = if terminated { 0.0 } else { 1.0 };
                term("reward_survive", reward);
            }
            GymKind::InvertedDoublePendulum => {
                let tip = self.frame_position(s, 0);
                let (tx, ty) = (tip.x, tip.z);
                terminated = ty <= 1.0;
                let distance = 0.01 * tx * tx + (ty - 2.0).powi(2);
                let velocity = 1e-3 * qvel[1] * qvel[1] + 5e-3 * qvel[2] * qvel[2];
                let alive = if terminated { 0.0 } else { p.healthy_reward };
                reward = alive - distance - velocity;
                term("reward_survive", alive);
                term("distance_penalty", -distance);
                term("velocity_penalty", -velocity);
            }
            GymKind::Reacher => {
                let d = self.frame_position(s, 0) - self.frame_position(s, 1);
                let distance = -d.norm() * p.reward_dist_weight;
                let ctrl = -w.action_sq * p.reward_control_weight;
                reward = distance + ctrl;
                term("reward_dist", distance);
                term("reward_ctrl", ctrl);
            }
            GymKind::Swimmer | GymKind::HalfCheetah | GymKind::Hopper | GymKind::Walker2d => {
                let x_velocity = (qpos[0] - before[0]) / dt;
                let forward = p.forward_reward_weight * x_velocity;
                term("x_position", qpos[0]);
                term("x_velocity", x_velocity);
                term("reward_forward", forward);
                term("reward_ctrl", -ctrl_cost);
                reward = forward - ctrl_cost;
                match self.kind {
                    GymKind::Swimmer => {
                        term("y_position", qpos[1]);
                        term("distance_from_origin", qpos[0].hypot(qpos[1]));
                        term("y_velocity", (qpos[1] - before[1]) / dt);
                    }
                    GymKind::Hopper | GymKind::Walker2d => {
                        term("z_distance_from_origin", qpos[1] - self.qpos0[1]);
                        let mut ok = within(qpos[1], p.healthy_z_range, false)
                            && within(qpos[2], p.healthy_angle_range, false);
                        if self.kind == GymKind::Hopper {
                            ok &= qpos[2..]
                                .iter()
                                .chain(qvel.iter())
                                .all(|&x| within(x, p.healthy_state_range, false));
                        }
                        let (survive, end) = healthy(ok, &mut term);
                        reward += survive;
                        terminated = end;
                    }
                    _ => {}
                }
            }
            GymKind::Ant | GymKind::Humanoid => {
                let vx = (row.position[0] - before[0]) / dt;
                let vy = (row.position[1] - before[1]) / dt;
                let forward = p.forward_reward_weight * vx;
                term("x_position", qpos[0]);
                term("y_position", qpos[1]);
                term("distance_from_origin", qpos[0].hypot(qpos[1]));
                term("x_velocity", vx);
                term("y_velocity", vy);
                term("reward_forward", forward);
                term("reward_ctrl", -ctrl_cost);
                term("reward_contact", -contact_cost);
                let ok = if self.kind == GymKind::Ant {
                    qpos.iter().chain(qvel.iter()).all(|x| x.is_finite())
                        && within(qpos[2], p.healthy_z_range, true)
                } else {
                    within(qpos[2], p.healthy_z_range, false)
                };
                let (survive, end) = healthy(ok, &mut term);
                reward = forward + survive - (ctrl_cost + contact_cost);
                terminated = end;
            }
        }
        // A world just reset: no step to reward.
        if w.fresh {
            reward = 0.0;
            terminated = false;
        }
        row.reward = reward;
        row.terminated = terminated;
        let mut at = 0;
        for &(name, width) in &self.info {
            let cols = &mut row.info[at..at + width];
            at += width;
            if w.fresh && !self.reset_info(name) {
                cols.fill(0.0);
                continue;
            }
            match name {
                "tendon_length" | "tendon_velocity" => {
                    for (t, c) in cols.iter_mut().enumerate() {
                        s.jac.clear();
                        let length = crate::sim::rows::coordinate(
                            &self.model,
                            Coordinate::Tendon(t),
                            &s.data,
                            w.kin_q,
                            1.0,
                            &mut s.jac,
                        );
                        *c = if name == "tendon_length" {
                            length
                        } else {
                            s.jac.iter().map(|&(k, a)| a * w.kin_v[k]).sum()
                        };
                    }
                }
                _ => {
                    cols[0] = terms[..n]
                        .iter()
                        .find(|(t, _)| *t == name)
                        .map_or(f64::NAN, |&(_, v)| v);
                }
            }
        }
    }
}

/// The info's terms of each task, as its v5 source's `step` reports them.
fn info_columns(kind: GymKind, ntendon: usize) -> Vec<(&'static str, usize)> {
    let one = |names: &[&'static str]| names.iter().map(|&n| (n, 1)).collect::<Vec<_>>();
    let walker = ["x_position", "x_velocity", "reward_forward", "reward_ctrl"];
    let planar = [
        "x_position",
        "y_position",
        "distance_from_origin",
        "x_velocity",
        "y_velocity",
        "reward_forward",
        "reward_ctrl",
        "reward_contact",
        "reward_survive",
    ];
    match kind {
        GymKind::InvertedPendulum => one(&["reward_survive"]),
        GymKind::InvertedDoublePendulum => {
            one(&["reward_survive", "distance_penalty", "velocity_penalty"])
        }
        GymKind::Reacher => one(&["reward_dist", "reward_ctrl"]),
        GymKind::HalfCheetah => one(&walker),
        GymKind::Swimmer => {
            let mut v = one(&walker);
            v.extend(one(&["y_position", "distance_from_origin", "y_velocity"]));
            v
        }
        GymKind::Hopper | GymKind::Walker2d => {
            let mut v = one(&walker);
            v.extend(one(&["z_distance_from_origin", "reward_survive"]));
            v
        }
        GymKind::Ant => one(&planar),
        GymKind::Humanoid => {
            let mut v = one(&planar);
            v.extend([("tendon_length", ntendon), ("tendon_velocity", ntendon)]);
            v
        }
    }
}
