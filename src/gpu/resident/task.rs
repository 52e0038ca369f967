//! An RL task on the resident worlds (issue 73): the reset draws and every
//! world's observation, reward, termination and info computed on the
//! device (`shaders/gym_task.wgsl` after `shaders/philox.wgsl`), so that
//! an environment step reads back one row of f32 per world and no state.
//!
//! The task is described here in plain numbers ([`DeviceTaskSpec`]: its
//! code, its weights and ranges, MuJoCo's `qpos0` and `qvel0`, the frames
//! it reads); `envs::gymnasium` makes it from its `GymTask`, the CPU twin
//! the device's outputs are checked against. The kernel is the resident
//! kernel's source with the task's entry points and bindings (group 2)
//! appended, built when the task is attached.

use super::{ResidentBatch, ResidentError, WORKGROUP};
use crate::gpu::contract::{WgslConst, declaration, header, offsets};
use crate::gpu::with_mapped;
use crate::model::Model;
use bytemuck::{Pod, Zeroable};
use std::time::Instant;

/// The tasks the device evaluates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceTaskKind {
    InvertedPendulum,
    InvertedDoublePendulum,
    Reacher,
    Swimmer,
    HalfCheetah,
    Hopper,
    Walker2d,
    Ant,
    Humanoid,
}

impl DeviceTaskKind {
    pub const ALL: [DeviceTaskKind; 9] = [
        DeviceTaskKind::InvertedPendulum,
        DeviceTaskKind::InvertedDoublePendulum,
        DeviceTaskKind::Reacher,
        DeviceTaskKind::Swimmer,
        DeviceTaskKind::HalfCheetah,
        DeviceTaskKind::Hopper,
        DeviceTaskKind::Walker2d,
        DeviceTaskKind::Ant,
        DeviceTaskKind::Humanoid,
    ];
    fn wgsl_name(self) -> &'static str {
        match self {
            DeviceTaskKind::InvertedPendulum => "TASK_INVERTED_PENDULUM",
            DeviceTaskKind::InvertedDoublePendulum => "TASK_INVERTED_DOUBLE_PENDULUM",
            DeviceTaskKind::Reacher => "TASK_REACHER",
            DeviceTaskKind::Swimmer => "TASK_SWIMMER",
            DeviceTaskKind::HalfCheetah => "TASK_HALF_CHEETAH",
            DeviceTaskKind::Hopper => "TASK_HOPPER",
            DeviceTaskKind::Walker2d => "TASK_WALKER2D",
            DeviceTaskKind::Ant => "TASK_ANT",
            DeviceTaskKind::Humanoid => "TASK_HUMANOID",
        }
    }
    fn code(self) -> u32 {
        Self::ALL.iter().position(|&k| k == self).expect("listed") as u32
    }
}

/// The most scalar info terms of a task on the device (Ant's and
/// Humanoid's 9; Humanoid's tendon columns come after them).
pub const INFO_CAP: usize = 9;

crate::wgsl_struct! {
    /// The task's weights and ranges (ranges `(low, high)`, an open end
    /// ±f32::MAX), the frames' offsets in their bodies, `qpos0[1]`; then
    /// `task_f32` holds qpos0, qvel0, [`body_frames`], [`fixed_tendons`]
    /// and [`pair_frames`].
    #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
    pub struct TaskFloats as "TaskFloats" {
        pub forward_reward_weight: f32 => "TF_FORWARD_REWARD_WEIGHT",
        pub ctrl_cost_weight: f32 => "TF_CTRL_COST_WEIGHT",
        pub healthy_reward: f32 => "TF_HEALTHY_REWARD",
        pub reward_dist_weight: f32 => "TF_REWARD_DIST_WEIGHT",
        pub reward_control_weight: f32 => "TF_REWARD_CONTROL_WEIGHT",
        pub reset_noise_scale: f32 => "TF_RESET_NOISE_SCALE",
        pub z0: f32 => "TF_Z0",
        pub healthy_z: [f32; 2] => "TF_HEALTHY_Z",
        pub healthy_state: [f32; 2] => "TF_HEALTHY_STATE",
        pub healthy_angle: [f32; 2] => "TF_HEALTHY_ANGLE",
        pub contact_cost_weight: f32 => "TF_CONTACT_COST_WEIGHT",
        pub contact_force_range: [f32; 2] => "TF_CONTACT_FORCE_RANGE",
        pub contact_cost_range: [f32; 2] => "TF_CONTACT_COST_RANGE",
        pub frame_a: [f32; 3] => "TF_FRAME_A",
        pub frame_b: [f32; 3] => "TF_FRAME_B",
    }
}

crate::wgsl_struct! {
    /// A body frame of the file ([`Model::body_frames`]) as the task reads
    /// it (Humanoid's `cinert`, `cvel`): the body carrying it, its own
    /// mass, centre of mass and rotational inertia about it (`xx, yy, zz,
    /// xy, xz, yz`) in that body's frame.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
    pub struct TaskBodyFrame as "TaskBodyFrame" {
        pub body: f32 => "TBF_BODY",
        pub mass: f32 => "TBF_MASS",
        pub com: [f32; 3] => "TBF_COM",
        pub inertia: [f32; 6] => "TBF_INERTIA",
    }
}

crate::wgsl_struct! {
    /// The task kernel's uniform.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
    pub struct TaskUniform as "TaskUniform" {
        pub first_world: u32 => "u32",
        pub frame_skip: u32 => "u32",
        pub unused: [u32; 2] => "vec2<u32>",
    }
}

/// A task as the device computes it (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceTaskSpec {
    pub kind: DeviceTaskKind,
    pub obs_dim: usize,
    pub info_dim: usize,
    pub floats: TaskFloats,
    /// MuJoCo's initial state (the reset noise's centre).
    pub qpos0: Vec<f64>,
    pub qvel0: Vec<f64>,
    /// The bodies of the frames read (`floats.frame_a`, `frame_b` their
    /// offsets); 0 where unused.
    pub frame_bodies: [usize; 2],
    pub exclude_positions: bool,
    pub terminate_unhealthy: bool,
    /// Velocities reset with normal noise (else uniform).
    pub normal_velocities: bool,
    /// The contact wrenches on the body frames (`cfrc_ext`) in the
    /// observation (Ant, Humanoid).
    pub include_cfrc_ext: bool,
    /// Humanoid's other body terms in the observation: `cinert`, `cvel`,
    /// `qfrc_actuator`.
    pub include_cinert: bool,
    pub include_cvel: bool,
    pub include_qfrc_actuator: bool,
    pub frame_skip: usize,
}

impl DeviceTaskSpec {
    /// Floats of a world's output row: observation, reward, termination, info.
    pub fn row(&self) -> usize {
        self.obs_dim + 2 + self.info_dim
    }

    /// The observation's and the info's widths the kernel writes for this
    /// task on `model` (`GymTask`'s, for a spec made from one).
    pub fn kernel_dims(&self, model: &Model) -> (usize, usize) {
        use DeviceTaskKind as K;
        let (nq, nv) = (model.nq, model.nv);
        let nbf = model.body_frames().count();
        let drop = |k: usize| if self.exclude_positions { k } else { 0 };
        let when = |on: bool, k: usize| if on { k } else { 0 };
        let sub = |a: usize, b: usize| a.saturating_sub(b);
        match self.kind {
            K::InvertedPendulum => (nq + nv, 1),
            K::InvertedDoublePendulum => (1 + 2 * sub(nq, 1) + nv + 1, 3),
            K::Reacher => (4 + sub(nq, 2) + 4, 2),
            K::Swimmer => (sub(nq, drop(2)) + nv, 7),
            K::HalfCheetah => (sub(nq, drop(1)) + nv, 4),
            K::Hopper | K::Walker2d => (sub(nq, drop(1)) + nv, 6),
            K::Ant => (
                sub(nq, drop(2)) + nv + when(self.include_cfrc_ext, 6 * nbf),
                9,
            ),
            K::Humanoid => (
                sub(nq, drop(2))
                    + nv
                    + when(self.include_cinert, crate::dynamics::COM_INERTIA * nbf)
                    + when(self.include_cvel, 6 * nbf)
                    + when(self.include_qfrc_actuator, sub(nv, 6))
                    + when(self.include_cfrc_ext, 6 * nbf),
                9 + 2 * model.tendons.len(),
            ),
        }
    }

    /// Why the device cannot evaluate this task on `model`, if it cannot.
    pub fn unsupported(&self, model: &Model) -> Option<String> {
        let (obs, info) = self.kernel_dims(model);
        if (obs, info) != (self.obs_dim, self.info_dim) {
            return Some(format!(
                "an observation of {} and an info of {} where the kernel writes {obs} and {info}",
                self.obs_dim, self.info_dim
            ));
        }
        if self.scalar_info(model) > INFO_CAP {
            return Some(format!("{} info terms, over {INFO_CAP}", self.info_dim));
        }
        if self.kind == DeviceTaskKind::Humanoid {
            if let Some(t) = model.tendons.iter().find(|t| t.is_spatial()) {
                return Some(format!(
                    "tendon `{}` is spatial (the device reads fixed tendons' lengths only)",
                    t.name
                ));
            }
            if model.nv < 6 {
                return Some("no free joint (nv < 6)".into());
            }
        }
        if self.qpos0.len() != model.nq || self.qvel0.len() != model.nv {
            return Some("qpos0 or qvel0 is not the model's size".into());
        }
        if self.frame_bodies.iter().any(|&b| b >= model.nbodies) || self.frame_skip == 0 {
            return Some("a frame's body is not the model's, or the frame skip is 0".into());
        }
        None
    }

    /// The info's scalar terms (Humanoid's tendon columns excluded).
    fn scalar_info(&self, model: &Model) -> usize {
        if self.kind == DeviceTaskKind::Humanoid {
            self.info_dim.saturating_sub(2 * model.tendons.len())
        } else {
            self.info_dim
        }
    }

    fn constants(&self, model: &Model) -> Vec<WgslConst> {
        let u = |name, x: usize| WgslConst::u32(name, x as u32);
        let mut c: Vec<WgslConst> = DeviceTaskKind::ALL
            .iter()
            .map(|&k| WgslConst::u32(k.wgsl_name(), k.code()))
            .collect();
        let record = std::mem::size_of::<TaskFloats>() / 4;
        let frame = std::mem::size_of::<TaskBodyFrame>() / 4;
        let nbf = model.body_frames().count();
        let (nq, nv, nt) = (model.nq, model.nv, model.tendons.len());
        let body_frames = record + nq + nv;
        let tendons = body_frames + frame * nbf;
        c.extend([
            WgslConst::u32("TASK_KIND", self.kind.code()),
            u("OBS_DIM", self.obs_dim),
            u("INFO_DIM", self.info_dim),
            u("INFO_CAP", INFO_CAP),
            u("TASK_ROW", self.row()),
            u("TASK_FRAME_A", self.frame_bodies[0]),
            u("TASK_FRAME_B", self.frame_bodies[1]),
            WgslConst::bool("TASK_EXCLUDE_POSITIONS", self.exclude_positions),
            WgslConst::bool("TASK_TERMINATE_UNHEALTHY", self.terminate_unhealthy),
            WgslConst::bool("TASK_NORMAL_VELOCITIES", self.normal_velocities),
            WgslConst::bool("TASK_INCLUDE_CFRC_EXT", self.include_cfrc_ext),
            WgslConst::bool("TASK_INCLUDE_CINERT", self.include_cinert),
            WgslConst::bool("TASK_INCLUDE_CVEL", self.include_cvel),
            WgslConst::bool("TASK_INCLUDE_QFRC_ACTUATOR", self.include_qfrc_actuator),
            u("TASK_SCALAR_INFO", self.scalar_info(model)),
            u("TASK_BODY_FRAMES", nbf),
            u("TASK_WRENCHES", 6 * nbf.max(1)),
            u("TASK_TENDONS", nt),
            u("TASK_QPOS0", record),
            u("TASK_QVEL0", record + nq),
            u("TASK_BODY_FRAME_AT", body_frames),
            u("TASK_BODY_FRAME_FLOATS", frame),
            u("TASK_TENDON_AT", tendons),
            u("TASK_PAIR_FRAMES", tendons + nt * (nq + nv)),
        ]);
        c.extend(crate::math::philox_constants().map(|(name, x)| WgslConst::u32(name, x)));
        c.extend(offsets::<TaskFloats>());
        c.extend(offsets::<TaskBodyFrame>());
        c
    }

    /// `task_f32`: the record, then qpos0, qvel0, [`body_frames`],
    /// [`fixed_tendons`] and [`pair_frames`].
    fn words(&self, model: &Model) -> Vec<f32> {
        let mut w: Vec<f32> = bytemuck::cast_slice(&[self.floats]).to_vec();
        w.extend(self.qpos0.iter().chain(&self.qvel0).map(|&x| x as f32));
        w.extend(bytemuck::cast_slice::<TaskBodyFrame, f32>(&body_frames(
            model,
        )));
        w.extend(fixed_tendons(model));
        w.extend(pair_frames(model));
        w
    }
}

/// The file's body frames ([`Model::body_frames`]' order) as the task
/// reads them (`dynamics::com_inertias`' inertia of each, in its body's
/// frame).
pub fn body_frames(model: &Model) -> Vec<TaskBodyFrame> {
    model
        .body_frames()
        .map(|(_, f)| {
            let own = f.inertia.unwrap_or_else(crate::math::Inertia::zero);
            let i = own.transformed(&f.body_from_frame);
            TaskBodyFrame {
                body: f.body as f32,
                mass: i.mass as f32,
                com: [i.com.x as f32, i.com.y as f32, i.com.z as f32],
                inertia: crate::math::symmetric_entries(&i.rotational).map(|x| x as f32),
            }
        })
        .collect()
}

/// Per tendon, its fixed coefficients on `q` (nq) then on `v` (nv): a
/// fixed tendon's length `Σ c q` and velocity `Σ c v`
/// (`Tendon::length`, `Tendon::velocity`); zero for a spatial tendon.
pub fn fixed_tendons(model: &Model) -> Vec<f32> {
    let (nq, nv) = (model.nq, model.nv);
    let mut out = vec![0.0f32; model.tendons.len() * (nq + nv)];
    for (t, tendon) in model.tendons.iter().enumerate() {
        let row = &mut out[t * (nq + nv)..(t + 1) * (nq + nv)];
        for &(j, c) in &tendon.joints {
            row[model.joint_idx_q[j]] += c as f32;
            row[nq + model.joint_idx_v[j]] += c as f32;
        }
    }
    out
}

/// Per device pair (`contacts::device_pairs`' order), 4 floats: for its
/// geometry `a`, then `b`, the place of its frame among
/// [`Model::body_frames`] (−1: not a body frame, its force dropped, as
/// `dynamics::com_wrenches` drops it) and that frame's body (whose
/// subtree's centre of mass is the wrench's origin).
pub fn pair_frames(model: &Model) -> Vec<f32> {
    let mut slot = vec![-1.0f32; model.frames.len()];
    for (k, (f, _)) in model.body_frames().enumerate() {
        slot[f] = k as f32;
    }
    let side = |g: usize| match model.geometries[g].frame {
        Some(f) => [slot[f], model.frames[f].body as f32],
        None => [-1.0, 0.0],
    };
    let pairs = super::contacts::device_pairs(model).unwrap_or_default();
    pairs
        .iter()
        .flat_map(|p| {
            let ([sa, ba], [sb, bb]) = (side(p.geom_a), side(p.geom_b));
            [sa, ba, sb, bb]
        })
        .collect()
}

/// The task kernel's source for `model` (the resident kernel's, with its
/// per-world records or not, room for `initial_moving` contacts), then the
/// task's header, `philox.wgsl`, `gym_task.wgsl` and, where the model has
/// contacts, `gym_task_forces.wgsl` (else a function that adds none).
pub fn task_source(
    model: &Model,
    per_world: bool,
    initial_moving: usize,
    spec: &DeviceTaskSpec,
) -> String {
    let forces = if super::contacts::device_pairs(model).is_ok_and(|p| !p.is_empty()) {
        include_str!("../../../shaders/gym_task_forces.wgsl")
    } else {
        "fn task_contact_wrenches() {}\n"
    };
    format!(
        "{}{}{}{}{}{forces}",
        super::source_for(model, per_world, initial_moving),
        header(&spec.constants(model)),
        declaration::<TaskUniform>(),
        include_str!("../../../shaders/philox.wgsl"),
        include_str!("../../../shaders/gym_task.wgsl"),
    )
}

/// The task's pipelines, buffers and bind group on one resident batch.
pub(super) struct TaskStage {
    spec: DeviceTaskSpec,
    /// The kernel was built for per-world records (see `set_world`).
    per_world: bool,
    reset: wgpu::ComputePipeline,
    evaluate: wgpu::ComputePipeline,
    group2: wgpu::BindGroupLayout,
    /// Over the batch's start buffers ([`ResidentBatch::rebind_task`]).
    bind_group: Option<wgpu::BindGroup>,
    uniform: wgpu::Buffer,
    task_f32: wgpu::Buffer,
    streams: wgpu::Buffer,
    reset_mask: wgpu::Buffer,
    fresh_mask: wgpu::Buffer,
    action_sq: wgpu::Buffer,
    position: wgpu::Buffer,
    out: wgpu::Buffer,
    readback: wgpu::Buffer,
    /// Host staging of the uploads (kept: a step allocates nothing).
    words: Vec<u32>,
    floats: Vec<f32>,
}

/// Whether each binding of group 2 is read-only (binding 0 the uniform).
const GROUP2_READ_ONLY: [bool; 10] = [true, true, true, true, true, true, true, true, false, false];

impl ResidentBatch {
    /// Computes `spec`'s task on the device from now on: its kernel built
    /// (refused, naming why, for a model or task it cannot run, or where
    /// another task is attached; the same task again changes nothing), the
    /// last step's start kept ([`Self::keep_last_start`]). `first_world`: the global
    /// index of this batch's world 0 (a chunk of a larger batch), which
    /// keys its streams.
    pub fn attach_task(
        &mut self,
        spec: DeviceTaskSpec,
        first_world: usize,
    ) -> Result<(), ResidentError> {
        if let Some(t) = &self.task {
            // One task per batch: a second would change the first's outputs.
            if t.spec == spec {
                return Ok(());
            }
            return Err(ResidentError::Unsupported {
                model: self.model.name.clone(),
                reason: "another task is attached to its worlds".into(),
            });
        }
        if let Some(reason) = spec.unsupported(&self.model) {
            return Err(ResidentError::Unsupported {
                model: self.model.name.clone(),
                reason: format!("its task on the device: {reason}"),
            });
        }
        self.keep_last_start(true)?;
        let n = self.nworlds;
        let ctx = &self.ctx;
        let device = &ctx.device;
        let storage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC;
        let buffer = |label: &str, bytes: u64, usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes.max(4),
                usage,
                mapped_at_creation: false,
            })
        };
        let words = spec.words(&self.model);
        let task_f32 = buffer("task floats", words.len() as u64 * 4, storage);
        ctx.queue
            .write_buffer(&task_f32, 0, bytemuck::cast_slice(&words));
        let uniform = buffer(
            "task uniform",
            std::mem::size_of::<TaskUniform>() as u64,
            wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        );
        let u = TaskUniform {
            first_world: first_world as u32,
            frame_skip: spec.frame_skip as u32,
            unused: [0; 2],
        };
        ctx.queue.write_buffer(&uniform, 0, bytemuck::bytes_of(&u));
        let n4 = n as u64 * 4;
        let row = (spec.row() * n) as u64 * 4;
        let group2 = super::buffers::layout(ctx, "task", &GROUP2_READ_ONLY, true);
        let (reset, evaluate) = self.task_pipelines(&spec, &group2)?;
        let stage = TaskStage {
            per_world: self.per_world,
            reset,
            evaluate,
            uniform,
            task_f32,
            streams: buffer("task streams", 4 * n4, storage),
            reset_mask: buffer("task reset mask", n4, storage),
            fresh_mask: buffer("task fresh mask", n4, storage),
            action_sq: buffer("task action_sq", n4, storage),
            position: buffer("task positions", 2 * n4, storage),
            out: buffer("task outputs", row, storage),
            readback: buffer(
                "task readback",
                row,
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            ),
            bind_group: None,
            group2,
            spec,
            words: Vec::new(),
            floats: Vec::new(),
        };
        self.task = Some(stage);
        self.rebind_task();
        self.ctx.take_error("attaching the task")?;
        Ok(())
    }

    /// The task's reset and evaluation pipelines for this batch's kernel.
    fn task_pipelines(
        &self,
        spec: &DeviceTaskSpec,
        group2: &wgpu::BindGroupLayout,
    ) -> Result<(wgpu::ComputePipeline, wgpu::ComputePipeline), ResidentError> {
        let device = &self.ctx.device;
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("resident task"),
            source: wgpu::ShaderSource::Wgsl(
                task_source(&self.model, self.per_world, self.initial_moving, spec).into(),
            ),
        });
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("resident task"),
            bind_group_layouts: &[
                Some(&self.kernel.group0),
                self.kernel.group1.as_ref(),
                Some(group2),
            ],
            immediate_size: 0,
        });
        let pipeline = |entry: &str| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(&layout),
                module: &module,
                entry_point: Some(entry),
                compilation_options: wgpu::PipelineCompilationOptions::default(),
                cache: None,
            })
        };
        let pipelines = (pipeline("gym_reset"), pipeline("gym_evaluate"));
        if let Some(e) = pollster::block_on(validation.pop()) {
            return Err(ResidentError::Kernel {
                model: self.model.name.clone(),
                adapter: self.ctx.adapter.name.clone(),
                reason: format!("the task's kernel: {e}"),
            });
        }
        Ok(pipelines)
    }

    /// The task's group 2 over its buffers and the batch's start buffers.
    fn task_bind_group(&self, t: &TaskStage) -> Option<wgpu::BindGroup> {
        let (sq, sv) = self.start.as_ref()?;
        let buffers = [
            &t.uniform,
            &t.task_f32,
            sq,
            sv,
            &t.streams,
            &t.reset_mask,
            &t.fresh_mask,
            &t.action_sq,
            &t.position,
            &t.out,
        ];
        Some(super::buffers::bind_group(
            &self.ctx, "task", &t.group2, &buffers,
        ))
    }

    /// Rebuilds the task's bind group (its start buffers were replaced)
    /// and, where the batch's kernel changed to per-world records, its
    /// pipelines.
    pub(super) fn rebind_task(&mut self) {
        let Some(mut t) = self.task.take() else {
            return;
        };
        if t.per_world != self.per_world
            && let Ok((reset, evaluate)) = self.task_pipelines(&t.spec, &t.group2)
        {
            (t.reset, t.evaluate, t.per_world) = (reset, evaluate, self.per_world);
        }
        t.bind_group = self.task_bind_group(&t);
        self.task = Some(t);
    }

    /// Resets the worlds where `which` is true to states drawn on the
    /// device (the task's reset distribution) from Philox4x32-10 keyed by
    /// the world's `seeds` entry, its global index and its `episodes`
    /// entry (nworlds each), as `PhiloxStream::new(seed, world, episode)`
    /// on the host; their flags cleared and their contacts' warm starts
    /// dropped.
    pub fn task_reset(
        &mut self,
        which: &[bool],
        seeds: &[u64],
        episodes: &[u32],
    ) -> Result<(), ResidentError> {
        let n = self.nworlds;
        ResidentError::check_len("which", which.len(), n)?;
        ResidentError::check_len("seeds", seeds.len(), n)?;
        ResidentError::check_len("episodes", episodes.len(), n)?;
        let fresh: Vec<usize> = (0..n).filter(|&w| which[w]).collect();
        if fresh.is_empty() {
            return Ok(());
        }
        let ctx = self.ctx.clone();
        let t = bound(&mut self.task, &self.model)?;
        t.words.clear();
        t.words.extend(which.iter().map(|&x| u32::from(x)));
        ctx.queue
            .write_buffer(&t.reset_mask, 0, bytemuck::cast_slice(&t.words));
        t.words.clear();
        for (s, &e) in seeds.iter().zip(episodes) {
            t.words.extend([*s as u32, (s >> 32) as u32, e, 0]);
        }
        ctx.queue
            .write_buffer(&t.streams, 0, bytemuck::cast_slice(&t.words));
        let groups = (&self.bind_group, self.contacts.as_ref().map(|c| &c.1));
        let encoder = encode_pass(&ctx, "task reset", &t.reset, groups, t, n);
        ctx.queue.submit(Some(encoder.finish()));
        if let Some((stage, _)) = self.contacts.as_mut() {
            stage.reset_warm_starts(&ctx.queue, &fresh, &self.model);
        }
        ctx.take_error("a task reset")?;
        Ok(())
    }

    /// Evaluates every world after the submitted steps: the worlds where
    /// `fresh` is true as just reset (observed, not rewarded), the others
    /// as having taken an environment step whose actions' `Σ a²` is
    /// `action_sq`; then reads the rows back (waiting for the device) and
    /// hands them to `read`: (nworlds × [`DeviceTaskSpec::row`]) f32,
    /// world after world.
    pub fn task_evaluate<R>(
        &mut self,
        fresh: &[bool],
        action_sq: &[f64],
        read: impl FnOnce(&[f32]) -> R,
    ) -> Result<R, ResidentError> {
        let n = self.nworlds;
        ResidentError::check_len("fresh", fresh.len(), n)?;
        ResidentError::check_len("action_sq", action_sq.len(), n)?;
        let ctx = self.ctx.clone();
        let t = bound(&mut self.task, &self.model)?;
        t.words.clear();
        t.words.extend(fresh.iter().map(|&x| u32::from(x)));
        ctx.queue
            .write_buffer(&t.fresh_mask, 0, bytemuck::cast_slice(&t.words));
        t.floats.clear();
        t.floats.extend(action_sq.iter().map(|&x| x as f32));
        ctx.queue
            .write_buffer(&t.action_sq, 0, bytemuck::cast_slice(&t.floats));
        let groups = (&self.bind_group, self.contacts.as_ref().map(|c| &c.1));
        let mut encoder = encode_pass(&ctx, "task evaluate", &t.evaluate, groups, t, n);
        encoder.copy_buffer_to_buffer(&t.out, 0, &t.readback, 0, t.out.size());
        let wait = Instant::now();
        let index = ctx.queue.submit(Some(encoder.finish()));
        let mut waited = None;
        let rows = n * t.spec.row();
        let out = with_mapped(
            &ctx.device,
            &t.readback,
            index,
            "reading task outputs",
            |b| {
                waited.get_or_insert(wait.elapsed());
                read(&bytemuck::cast_slice::<u8, f32>(b)[..rows])
            },
        )
        .map_err(ResidentError::Gpu)?;
        self.waited += waited.unwrap_or_default();
        ctx.take_error("a task evaluation")?;
        Ok(out)
    }
}

/// The attached task, bound (its start buffers kept).
fn bound<'a>(
    task: &'a mut Option<TaskStage>,
    model: &Model,
) -> Result<&'a mut TaskStage, ResidentError> {
    match task.as_mut() {
        Some(t) if t.bind_group.is_some() => Ok(t),
        _ => Err(ResidentError::Unsupported {
            model: model.name.clone(),
            reason: "no task is attached (attach_task)".into(),
        }),
    }
}

/// An encoder with one pass of `pipeline` over `n` worlds (groups 0 and 1
/// the batch's, the second where it has contacts; group 2 the task's).
fn encode_pass(
    ctx: &crate::gpu::GpuContext,
    label: &str,
    pipeline: &wgpu::ComputePipeline,
    (group0, group1): (&wgpu::BindGroup, Option<&wgpu::BindGroup>),
    t: &TaskStage,
    n: usize,
) -> wgpu::CommandEncoder {
    let mut encoder = ctx
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
    {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(label),
            timestamp_writes: None,
        });
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, group0, &[]);
        if let Some(g) = group1 {
            pass.set_bind_group(1, g, &[]);
        }
        pass.set_bind_group(2, t.bind_group.as_ref(), &[]);
        pass.dispatch_workgroups((n as u32).div_ceil(WORKGROUP), 1, 1);
    }
    encoder
}
