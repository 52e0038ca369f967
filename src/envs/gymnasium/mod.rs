//! Gymnasium's v5 MuJoCo tasks evaluated in the batch: observations,
//! rewards, terminations and infos of every world in one pass after the
//! frame skip, on rayon's threads (one core on `cpu1`), no Python per
//! environment.
//!
//! Each task is the function of its v5 source in Gymnasium
//! (`gymnasium/envs/mujoco/*_v5.py`) with its keyword arguments
//! ([`GymParams`]), read at MuJoCo's state conventions (`qpos` with
//! quaternions `(w, x, y, z)`, a free joint's linear velocity in the
//! world frame) and at the state MuJoCo's `data` holds after `mj_step`:
//! body positions, `cinert`, `cvel`, `qfrc_actuator`, `cfrc_ext` and the
//! tendons at the state the last physics step started from; `qpos` and
//! `qvel` at the state it ended in. `moreau.gym` (Python) is the
//! Gymnasium `VectorEnv` around it: it keeps Gymnasium's reset draws
//! (numpy's generators, seed for seed) and the NEXT_STEP autoreset.
//!
//! A [`GymBatch`] holds what a world's next evaluation needs of its past:
//! the state its last physics step started from, its controls, the
//! position its velocity reward starts from, and whether it was reset
//! since its last step.

mod task;

pub use task::{GymRow, GymScratch, GymTask, GymWorld};

use crate::SimError;
use crate::batch::{Backend, BatchError, BatchSim};
use crate::math::{PhiloxStream, Vec3};
use rayon::prelude::*;
use std::time::{Duration, Instant};

/// Gymnasium's v5 MuJoCo tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GymKind {
    Ant,
    Humanoid,
    InvertedPendulum,
    InvertedDoublePendulum,
    Reacher,
    Swimmer,
    HalfCheetah,
    Hopper,
    Walker2d,
}

impl GymKind {
    pub const ALL: [GymKind; 9] = [
        GymKind::Ant,
        GymKind::Humanoid,
        GymKind::InvertedPendulum,
        GymKind::InvertedDoublePendulum,
        GymKind::Reacher,
        GymKind::Swimmer,
        GymKind::HalfCheetah,
        GymKind::Hopper,
        GymKind::Walker2d,
    ];
    /// Gymnasium's id, `"Ant-v5"`, ….
    pub fn id(self) -> &'static str {
        match self {
            GymKind::Ant => "Ant-v5",
            GymKind::Humanoid => "Humanoid-v5",
            GymKind::InvertedPendulum => "InvertedPendulum-v5",
            GymKind::InvertedDoublePendulum => "InvertedDoublePendulum-v5",
            GymKind::Reacher => "Reacher-v5",
            GymKind::Swimmer => "Swimmer-v5",
            GymKind::HalfCheetah => "HalfCheetah-v5",
            GymKind::Hopper => "Hopper-v5",
            GymKind::Walker2d => "Walker2d-v5",
        }
    }
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.id() == id)
    }
    /// Gymnasium 1.2's registration: its file among Gymnasium's MuJoCo
    /// assets, its frame skip and its episodes' length.
    pub fn registration(self) -> (&'static str, usize, usize) {
        match self {
            GymKind::Ant => ("ant.xml", 5, 1000),
            GymKind::Humanoid => ("humanoid.xml", 5, 1000),
            GymKind::InvertedPendulum => ("inverted_pendulum.xml", 2, 1000),
            GymKind::InvertedDoublePendulum => ("inverted_double_pendulum.xml", 5, 1000),
            GymKind::Reacher => ("reacher.xml", 2, 50),
            GymKind::Swimmer => ("swimmer.xml", 4, 1000),
            GymKind::HalfCheetah => ("half_cheetah.xml", 5, 1000),
            GymKind::Hopper => ("hopper.xml", 4, 1000),
            GymKind::Walker2d => ("walker2d_v5.xml", 4, 1000),
        }
    }
}

/// Gymnasium's keyword arguments of the v5 tasks that their step reads
/// (each task reads its own; the others are not used). Ranges are `(low,
/// high)`; Gymnasium's names but the shortened switches
/// (`exclude_current_positions` for
/// `exclude_current_positions_from_observation`, `include_cinert` for
/// `include_cinert_in_observation`, …).
#[derive(Clone, Debug, PartialEq)]
pub struct GymParams {
    pub forward_reward_weight: f64,
    pub ctrl_cost_weight: f64,
    pub contact_cost_weight: f64,
    pub contact_cost_range: (f64, f64),
    pub healthy_reward: f64,
    pub terminate_when_unhealthy: bool,
    pub healthy_z_range: (f64, f64),
    pub healthy_state_range: (f64, f64),
    pub healthy_angle_range: (f64, f64),
    pub contact_force_range: (f64, f64),
    pub exclude_current_positions: bool,
    pub include_cfrc_ext: bool,
    pub include_cinert: bool,
    pub include_cvel: bool,
    pub include_qfrc_actuator: bool,
    pub reward_dist_weight: f64,
    pub reward_control_weight: f64,
    /// Ant's main body (a body's name).
    pub main_body: String,
    /// The reset noise's scale ([`GymTask::draw_reset`]; Reacher's is its own).
    pub reset_noise_scale: f64,
}

impl GymParams {
    /// Gymnasium 1.2's defaults of task `kind` (`gymnasium.spec(id)` and
    /// its class's signature; `moreau.gym` checks them against the
    /// installed Gymnasium and passes its own).
    pub fn gymnasium(kind: GymKind) -> Self {
        let inf = f64::INFINITY;
        let mut p = GymParams {
            forward_reward_weight: 1.0,
            ctrl_cost_weight: 0.0,
            contact_cost_weight: 0.0,
            contact_cost_range: (-inf, inf),
            healthy_reward: 1.0,
            terminate_when_unhealthy: true,
            healthy_z_range: (-inf, inf),
            healthy_state_range: (-inf, inf),
            healthy_angle_range: (-inf, inf),
            contact_force_range: (-1.0, 1.0),
            exclude_current_positions: true,
            include_cfrc_ext: true,
            include_cinert: true,
            include_cvel: true,
            include_qfrc_actuator: true,
            reward_dist_weight: 1.0,
            reward_control_weight: 1.0,
            main_body: "torso".into(),
            reset_noise_scale: 0.1,
        };
        match kind {
            GymKind::Ant => {
                p.ctrl_cost_weight = 0.5;
                p.contact_cost_weight = 5e-4;
                p.healthy_z_range = (0.2, 1.0);
            }
            GymKind::Humanoid => {
                p.forward_reward_weight = 1.25;
                p.ctrl_cost_weight = 0.1;
                p.contact_cost_weight = 5e-7;
                p.contact_cost_range = (-inf, 10.0);
                p.healthy_reward = 5.0;
                p.healthy_z_range = (1.0, 2.0);
                p.reset_noise_scale = 1e-2;
            }
            GymKind::InvertedDoublePendulum => p.healthy_reward = 10.0,
            GymKind::Swimmer => p.ctrl_cost_weight = 1e-4,
            GymKind::HalfCheetah => p.ctrl_cost_weight = 0.1,
            GymKind::InvertedPendulum => p.reset_noise_scale = 1e-2,
            GymKind::Hopper => {
                p.reset_noise_scale = 5e-3;
                p.ctrl_cost_weight = 1e-3;
                p.healthy_state_range = (-100.0, 100.0);
                p.healthy_z_range = (0.7, inf);
                p.healthy_angle_range = (-0.2, 0.2);
            }
            GymKind::Walker2d => {
                p.reset_noise_scale = 5e-3;
                p.ctrl_cost_weight = 1e-3;
                p.healthy_z_range = (0.8, 2.0);
                p.healthy_angle_range = (-1.0, 1.0);
            }
            GymKind::Reacher => {}
        }
        p
    }
}

/// The environments' step outputs, world after world (row-major).
#[derive(Clone, Debug, Default)]
pub struct GymOutput {
    /// (nworlds, obs_dim).
    pub obs: Vec<f64>,
    pub reward: Vec<f64>,
    pub terminated: Vec<bool>,
    /// (nworlds, info_dim): [`GymTask::info_columns`].
    pub info: Vec<f64>,
}

/// `got == n` (one value per world), or the mismatch naming `what`.
fn per_world(what: &'static str, got: usize, n: usize) -> Result<(), BatchError> {
    if got == n {
        return Ok(());
    }
    Err(BatchError::DimensionMismatch {
        what,
        got,
        expected: n,
        nworlds: n,
        per_world: 1,
    })
}

/// One world's output slots: its observation and info rows, reward,
/// termination and position.
type RowSlots<'a> = (
    (((&'a mut [f64], &'a mut [f64]), &'a mut f64), &'a mut bool),
    &'a mut [f64; 2],
);

/// A task evaluated over a batch's worlds (see the module doc).
pub struct GymBatch {
    task: GymTask,
    frame_skip: usize,
    nworlds: usize,
    /// The state each world's last physics step started from (nworlds ×
    /// nq, nworlds × nv).
    kin_q: Vec<f64>,
    kin_v: Vec<f64>,
    /// Reset since its last step.
    fresh: Vec<bool>,
    ctrl: Vec<f64>,
    position: Vec<[f64; 2]>,
    out: GymOutput,
    times: GymTimes,
    /// Each world's reset stream: its key and the episodes drawn since
    /// it was set ([`Self::seed`], [`Self::reset_worlds`]).
    seeds: Vec<u64>,
    episodes: Vec<u32>,
    /// Whether the task is computed on the device (resident worlds and a
    /// task the device evaluates), decided at the first call that has the
    /// batch; why not, where not.
    device: Option<Result<(), String>>,
}

/// Where a [`GymBatch`]'s calls spent their time, summed since it was made
/// or [`GymBatch::reset_times`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GymTimes {
    /// In the batch's physics steps (the frame skips).
    pub physics: Duration,
    /// Everything else in [`GymBatch::step`] and [`GymBatch::observe`]: the
    /// kinematic states kept, the contact forces gathered, the worlds
    /// evaluated.
    pub task: Duration,
    /// Environment steps taken ([`GymBatch::step`] calls).
    pub steps: u64,
}

impl GymBatch {
    /// The task over `batch`'s worlds, `frame_skip` physics steps per
    /// environment step; every world is taken as just reset (call
    /// [`Self::observe`] after setting their states).
    pub fn new(task: GymTask, batch: &BatchSim, frame_skip: usize) -> Result<Self, String> {
        if frame_skip == 0 {
            return Err("frame_skip must be at least 1".into());
        }
        let m = batch.model();
        if !std::sync::Arc::ptr_eq(m, task.model()) && m.nq != task.model().nq {
            return Err(format!(
                "the batch's model ({}) is not the task's ({})",
                m.name,
                task.model().name
            ));
        }
        let n = batch.nworlds();
        let (nq, nv, nu) = (m.nq, m.nv, m.nu());
        let mut kin_q = Vec::with_capacity(n * nq);
        let mut kin_v = Vec::with_capacity(n * nv);
        for s in batch.states() {
            kin_q.extend_from_slice(s.q.as_slice());
            kin_v.extend_from_slice(s.v.as_slice());
        }
        let out = GymOutput {
            obs: vec![0.0; n * task.obs_dim()],
            reward: vec![0.0; n],
            terminated: vec![false; n],
            info: vec![0.0; n * task.info_dim()],
        };
        Ok(GymBatch {
            frame_skip,
            nworlds: n,
            kin_q,
            kin_v,
            fresh: vec![true; n],
            ctrl: vec![0.0; n * nu],
            position: vec![[0.0; 2]; n],
            out,
            task,
            times: GymTimes::default(),
            seeds: vec![0; n],
            episodes: vec![0; n],
            device: None,
        })
    }

    pub fn task(&self) -> &GymTask {
        &self.task
    }
    pub fn frame_skip(&self) -> usize {
        self.frame_skip
    }
    /// The last outputs ([`Self::step`], [`Self::observe`]).
    pub fn output(&self) -> &GymOutput {
        &self.out
    }
    /// The states the worlds' last physics steps started from (their
    /// states for worlds reset since), (nworlds × nq, nworlds × nv).
    pub fn kinematic_states(&self) -> (&[f64], &[f64]) {
        (&self.kin_q, &self.kin_v)
    }
    /// Where the calls spent their time (see [`GymTimes`]).
    pub fn times(&self) -> GymTimes {
        self.times
    }
    pub fn reset_times(&mut self) {
        self.times = GymTimes::default();
    }
    /// Whether each world was reset since its last step.
    pub fn fresh(&self) -> &[bool] {
        &self.fresh
    }

    /// Whether the task is computed on the device (`Ok`), or why not
    /// (`None`: not decided yet, before the first call with the batch).
    pub fn on_device(&self) -> Option<&Result<(), String>> {
        self.device.as_ref()
    }

    /// Computes the task on the host even where the device could (for
    /// comparisons); before the first call with the batch.
    pub fn keep_on_host(&mut self) {
        self.device
            .get_or_insert(Err("kept on the host (keep_on_host)".into()));
    }

    /// Whether the task runs on the device, attached there at the first
    /// call: where the worlds are resident and the device evaluates the task.
    fn use_device(&mut self, batch: &mut BatchSim) -> bool {
        let device = self.device.get_or_insert_with(|| {
            if !batch.is_resident() {
                return Err("the worlds are not resident on a device".into());
            }
            let spec = self.task.device_spec(self.frame_skip)?;
            batch.attach_device_task(&spec).map_err(|e| e.to_string())
        });
        device.is_ok()
    }

    /// Keys the reset streams of the worlds where `which` is true:
    /// `seeds` (nworlds) their keys, their episodes counted from 0 again.
    pub fn seed(&mut self, which: &[bool], seeds: &[u64]) -> Result<(), BatchError> {
        let n = self.nworlds;
        per_world("which", which.len(), n)?;
        per_world("seeds", seeds.len(), n)?;
        for w in (0..n).filter(|&w| which[w]) {
            (self.seeds[w], self.episodes[w]) = (seeds[w], 0);
        }
        Ok(())
    }

    /// Resets the worlds where `which` is true to initial states drawn
    /// from their streams ([`GymTask::draw_reset`] from Philox4x32-10 keyed
    /// by the world's seed, its index and its episode: the same states on
    /// every backend, whatever the other worlds do), counting an episode
    /// each. Their observations come with the next [`Self::step`] or
    /// [`Self::observe`].
    pub fn reset_worlds(&mut self, batch: &mut BatchSim, which: &[bool]) -> Result<(), BatchError> {
        self.check(batch, which)?;
        if self.use_device(batch) {
            // Drawn on the device from the same streams.
            batch.device_task_reset(which, &self.seeds, &self.episodes)?;
            for w in (0..self.nworlds).filter(|&w| which[w]) {
                self.episodes[w] = self.episodes[w].wrapping_add(1);
            }
            return Ok(());
        }
        let m = batch.model().clone();
        let (mut qpos, mut qvel) = (vec![0.0; m.nq], vec![0.0; m.nv]);
        for w in (0..self.nworlds).filter(|&w| which[w]) {
            let mut rng = PhiloxStream::new(self.seeds[w], w as u32, self.episodes[w]);
            self.task.draw_reset(&mut rng, &mut qpos, &mut qvel);
            let mut state = crate::sim::State::new(
                nalgebra::DVector::zeros(m.nq),
                nalgebra::DVector::zeros(m.nv),
            );
            m.q_from_mujoco(&qpos, state.q.as_mut_slice());
            m.v_from_mujoco(state.q.as_slice(), &qvel, state.v.as_mut_slice());
            batch.set_state(w, state)?;
            self.episodes[w] = self.episodes[w].wrapping_add(1);
        }
        Ok(())
    }

    /// Takes the worlds where `reset` is true as just reset at their
    /// states (set by the caller) and evaluates them: their observation
    /// and reset info; the other worlds' outputs are kept.
    pub fn observe(&mut self, batch: &mut BatchSim, reset: &[bool]) -> Result<(), BatchError> {
        let start = Instant::now();
        self.check(batch, reset)?;
        self.mark_reset(batch, reset)?;
        let evaluated = if self.use_device(batch) {
            self.evaluate_on_device(batch, reset, reset, &vec![0.0; self.nworlds])
        } else {
            self.evaluate(batch, reset)
        };
        self.times.task += start.elapsed();
        evaluated
    }

    /// One environment step: the worlds where `reset` is true were just
    /// reset by the caller (their states set) and are observed without
    /// stepping; the others step `frame_skip` times under controls `ctrl`
    /// (nworlds × nu), then are observed, rewarded and ended.
    /// `action_sq`: each world's `Σ a²` of its actions as the caller's
    /// task costs them (Gymnasium's, in the actions' own precision).
    /// Returns the worlds whose physics failed (they keep the state they
    /// failed from and are evaluated there).
    pub fn step(
        &mut self,
        batch: &mut BatchSim,
        ctrl: &[f64],
        action_sq: &[f64],
        reset: &[bool],
    ) -> Result<Vec<(usize, SimError)>, BatchError> {
        let start = Instant::now();
        let mut physics = Duration::ZERO;
        self.check(batch, reset)?;
        let (n, nu) = (self.nworlds, batch.model().nu());
        let (what, got, expected, per_world) = if ctrl.len() != n * nu {
            ("controls", ctrl.len(), n * nu, nu)
        } else {
            ("action_sq", action_sq.len(), n, 1)
        };
        if got != expected {
            return Err(BatchError::DimensionMismatch {
                what,
                got,
                expected,
                nworlds: n,
                per_world,
            });
        }
        if let Some(w) = action_sq.iter().position(|x| !(x.is_finite() && *x >= 0.0)) {
            return Err(BatchError::Input(SimError::InvalidParameter {
                name: "action_sq",
                reason: format!(
                    "world {w}'s sum of squared actions must be finite and at least 0, got {}",
                    action_sq[w]
                ),
            }));
        }
        // The frame skip in one call, the state its last step started from
        // kept (on the device: one submission, one readback).
        let active: Vec<bool> = reset.iter().map(|r| !r).collect();
        batch.keep_last_start(true)?;
        let mut failed = Vec::new();
        if active.iter().any(|&a| a) {
            let t = Instant::now();
            let report = batch.step_controls_repeated(ctrl, self.frame_skip, Some(&active))?;
            physics += t.elapsed();
            failed = report.failed;
        }
        let (nq, nv) = (batch.model().nq, batch.model().nv);
        for w in (0..n).filter(|&w| !reset[w]) {
            // A world that failed keeps the state it failed from: read there.
            let start = if failed.iter().any(|(f, _)| *f == w) {
                None
            } else {
                batch.last_start(w)?
            };
            let s = batch.state(w)?;
            let (q, v) = start.unwrap_or((s.q.as_slice(), s.v.as_slice()));
            self.kin_q[w * nq..(w + 1) * nq].copy_from_slice(q);
            self.kin_v[w * nv..(w + 1) * nv].copy_from_slice(v);
        }
        for w in 0..n {
            if !reset[w] {
                self.fresh[w] = false;
                self.ctrl[w * nu..(w + 1) * nu].copy_from_slice(&ctrl[w * nu..(w + 1) * nu]);
            }
        }
        self.mark_reset(batch, reset)?;
        if self.use_device(batch) {
            self.evaluate_on_device(batch, &vec![true; n], reset, action_sq)?;
        } else {
            self.evaluate_with(batch, &vec![true; n], action_sq)?;
        }
        failed.sort_by_key(|(w, _)| *w);
        self.times.physics += physics;
        self.times.task += start.elapsed() - physics;
        self.times.steps += 1;
        Ok(failed)
    }

    fn check(&self, batch: &BatchSim, reset: &[bool]) -> Result<(), BatchError> {
        per_world("the batch's worlds", batch.nworlds(), self.nworlds)?;
        per_world("reset mask", reset.len(), self.nworlds)
    }

    /// Worlds reset: their kinematic state is their state, no forces, no controls.
    fn mark_reset(&mut self, batch: &BatchSim, reset: &[bool]) -> Result<(), BatchError> {
        let m = batch.model();
        let (nq, nv, nu) = (m.nq, m.nv, m.nu());
        for w in (0..self.nworlds).filter(|&w| reset[w]) {
            let s = batch.state(w)?;
            self.kin_q[w * nq..(w + 1) * nq].copy_from_slice(s.q.as_slice());
            self.kin_v[w * nv..(w + 1) * nv].copy_from_slice(s.v.as_slice());
            self.fresh[w] = true;
            self.ctrl[w * nu..(w + 1) * nu].fill(0.0);
        }
        Ok(())
    }

    fn evaluate(&mut self, batch: &BatchSim, which: &[bool]) -> Result<(), BatchError> {
        self.evaluate_with(batch, which, &vec![0.0; self.nworlds])
    }

    /// Evaluates every world on the device (those where `fresh` is true as
    /// just reset) and takes the rows of the worlds where `which` is true
    /// into the outputs.
    fn evaluate_on_device(
        &mut self,
        batch: &mut BatchSim,
        which: &[bool],
        fresh: &[bool],
        action_sq: &[f64],
    ) -> Result<(), BatchError> {
        let (od, id) = (self.task.obs_dim(), self.task.info_dim());
        let row = od + 2 + id;
        let out = &mut self.out;
        batch.device_task_evaluate(fresh, action_sq, |first, rows| {
            for (k, r) in rows.chunks_exact(row).enumerate() {
                let w = first + k;
                if !which[w] {
                    continue;
                }
                let widen = |to: &mut [f64], from: &[f32]| {
                    to.iter_mut().zip(from).for_each(|(t, &f)| *t = f as f64)
                };
                widen(&mut out.obs[w * od..(w + 1) * od], &r[..od]);
                out.reward[w] = r[od] as f64;
                out.terminated[w] = r[od + 1] != 0.0;
                widen(&mut out.info[w * id..(w + 1) * id], &r[od + 2..]);
            }
        })
    }

    /// Evaluates the worlds where `which` is true into the outputs.
    fn evaluate_with(
        &mut self,
        batch: &BatchSim,
        which: &[bool],
        action_sq: &[f64],
    ) -> Result<(), BatchError> {
        let task = &self.task;
        let m = batch.model();
        let (nq, nv, nu) = (m.nq, m.nv, m.nu());
        // The last step's contact forces on the file's bodies.
        let forces: Vec<Vec<(usize, Vec3, Vec3)>> = if task.reads_contact_forces() {
            batch
                .contact_forces()?
                .into_iter()
                .map(|world| {
                    world
                        .into_iter()
                        .filter_map(|(g, p, f)| m.geometries[g].frame.map(|fr| (fr, p, f)))
                        .collect()
                })
                .collect()
        } else {
            vec![Vec::new(); self.nworlds]
        };
        let cart: Vec<f64> = if task.kind() == GymKind::InvertedDoublePendulum {
            (0..self.nworlds)
                .map(|w| Ok(batch.constraint_forces(w)?[0]))
                .collect::<Result<_, BatchError>>()?
        } else {
            vec![0.0; self.nworlds]
        };
        let states: Vec<_> = batch.states().collect();
        let dts: Vec<f64> = (0..self.nworlds)
            .map(|w| Ok(batch.params(w)?.dt))
            .collect::<Result<_, BatchError>>()?;
        let (od, id) = (task.obs_dim(), task.info_dim());
        let (skip, kin_q, kin_v) = (self.frame_skip as f64, &self.kin_q, &self.kin_v);
        let (fresh, ctrl) = (&self.fresh, &self.ctrl);
        let out = &mut self.out;
        let position = &mut self.position;
        let each =
            |s: &mut GymScratch,
             (w, ((((obs, info), reward), terminated), position)): (usize, RowSlots)| {
                if !which[w] {
                    return;
                }
                let world = GymWorld {
                    q: states[w].q.as_slice(),
                    v: states[w].v.as_slice(),
                    act: states[w].act.as_slice(),
                    kin_q: &kin_q[w * nq..(w + 1) * nq],
                    kin_v: &kin_v[w * nv..(w + 1) * nv],
                    fresh: fresh[w],
                    forces: &forces[w],
                    constraint_force0: cart[w],
                    ctrl: &ctrl[w * nu..(w + 1) * nu],
                    action_sq: action_sq[w],
                    position_before: *position,
                    dt: dts[w] * skip,
                    physics_dt: dts[w],
                };
                let mut row = GymRow {
                    obs,
                    info,
                    reward: 0.0,
                    terminated: false,
                    position: [0.0; 2],
                };
                task.evaluate(s, &world, &mut row);
                (*reward, *terminated, *position) = (row.reward, row.terminated, row.position);
            };
        if batch.backend() == Backend::CpuSingle {
            let mut s = GymScratch::new(m);
            (out.obs.chunks_mut(od))
                .zip(out.info.chunks_mut(id))
                .zip(out.reward.iter_mut())
                .zip(out.terminated.iter_mut())
                .zip(position.iter_mut())
                .enumerate()
                .for_each(|x| each(&mut s, x));
        } else {
            (out.obs.par_chunks_mut(od))
                .zip(out.info.par_chunks_mut(id))
                .zip(out.reward.par_iter_mut())
                .zip(out.terminated.par_iter_mut())
                .zip(position.par_iter_mut())
                .enumerate()
                .for_each_init(|| GymScratch::new(m), |s, x| each(s, x));
        }
        Ok(())
    }
}
