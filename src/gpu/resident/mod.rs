//! Worlds that live on the GPU (issue 33): the state of every world stays
//! in device buffers across steps and one dispatch steps them all, the
//! host only uploading the step's torques or controls and reading back
//! what it is asked for.
//!
//! The kernel (`shaders/resident.wgsl`, one invocation per world, f32)
//! runs the whole step of trees of free, ball, hinge, slide and fixed
//! joints: the actuators' forces from the controls (gear, gain, affine
//! bias, control and force ranges, effort limits), springs, the fluid's
//! drag (MuJoCo's inertia box), forward kinematics, the articulated-body
//! algorithm in the world frame with armature, implicit damping and
//! gravity, the free velocity, the joint-limit rows (the LCP on
//! `G = S M̃⁻¹ Sᵀ`, whose columns the articulated-body recursion gives
//! again from the same factorization, solved exactly by Murty's principal
//! pivoting), the velocity update
//! and `q⁺ = q ⊕ v⁺ dt` (the SE(3) and SO(3) exponentials, quaternions
//! normalized). A model with geometries that can collide gets the contact
//! stage ([`contacts`], issue 34): the limit rows then join the contact
//! problem, which the batch's contact kernel solves in place, and the
//! kernel's `finish` ends the step. Its twin is the f64 CPU step
//! (`Simulator::step` of the same model), compared in `tests/resident.rs`
//! and `tests/resident_contacts.rs`. A model it cannot run yet is
//! refused, naming what: a pair of geometries the device cannot collide,
//! a tree over [`MAX_BODIES`].
//!
//! Layout: world-minor (element `t` of world `w` at `t·N + w`) for `q`, `v`
//! and `tau`, so that neighbouring invocations read neighbouring words.

use super::{GpuContext, GpuError, wgpu_error};
use crate::error::SimError;
use crate::model::Model;
use crate::sim::{SimParams, State};
use std::time::Duration;
use thiserror::Error;

/// Words per body record of the model's u32 buffer ([`layout::BodyWords`]).
pub const BODY_U32: usize = std::mem::size_of::<layout::BodyWords>() / 4;
/// Floats per body record of the model's f32 buffer ([`layout::BodyFloats`]).
pub const BODY_F32: usize = std::mem::size_of::<layout::BodyFloats>() / 4;
/// Floats per dof record ([`layout::DofFloats`]).
pub const DOF_F32: usize = std::mem::size_of::<layout::DofFloats>() / 4;
/// Words per actuator record ([`layout::ActuatorWords`]).
pub const ACT_WORDS: usize = std::mem::size_of::<layout::ActuatorWords>() / 4;
/// The most principal pivots of one step's joint-limit LCP per row
/// capacity (Murty's method ends in far fewer on the small LCPs of joint
/// stops; see the shader).
pub const LIMIT_PIVOTS_PER_ROW: u32 = 4;
/// Invocations per workgroup.
pub const WORKGROUP: u32 = 64;
/// The largest tree the kernel is compiled for (bodies, world included):
/// its per-world arrays live in each invocation's private memory.
pub const MAX_BODIES: usize = 64;

/// Why a batch of resident worlds cannot be made or stepped.
#[derive(Debug, Error)]
pub enum ResidentError {
    #[error("the resident GPU path cannot run model `{model}` yet: {reason}")]
    Unsupported { model: String, reason: String },
    #[error("{what} has length {got}, expected {expected}")]
    DimensionMismatch {
        what: &'static str,
        got: usize,
        expected: usize,
    },
    #[error("world index {world} is out of range: the batch has {nworlds} worlds")]
    NoSuchWorld { world: usize, nworlds: usize },
    #[error("world {world}: {what}[{index}] is not finite ({value})")]
    NonFinite {
        what: &'static str,
        world: usize,
        index: usize,
        value: f64,
    },
    #[error("{nworlds} resident worlds need {needed} {what}, over the device's {limit}")]
    Capacity {
        nworlds: usize,
        what: &'static str,
        needed: u64,
        limit: u64,
    },
    #[error(
        "the driver of {adapter} could not build the resident kernel for model `{model}`: {reason}"
    )]
    Kernel {
        model: String,
        adapter: String,
        reason: String,
    },
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error(transparent)]
    Gpu(#[from] GpuError),
}

impl ResidentError {
    /// `DimensionMismatch` unless `got == expected`.
    pub(crate) fn check_len(what: &'static str, got: usize, expected: usize) -> Result<(), Self> {
        if got == expected {
            return Ok(());
        }
        Err(Self::DimensionMismatch {
            what,
            got,
            expected,
        })
    }

    /// `NoSuchWorld` unless `world < nworlds`.
    pub(crate) fn check_world(world: usize, nworlds: usize) -> Result<(), Self> {
        if world < nworlds {
            return Ok(());
        }
        Err(Self::NoSuchWorld { world, nworlds })
    }
}

/// Why `model` cannot live on the GPU in this slice, if it cannot.
pub fn unsupported(model: &Model) -> Option<String> {
    if model.nv == 0 {
        return Some("it has no degrees of freedom".into());
    }
    // Dry friction on dofs is solved with the contacts: a model with pairs
    // that can collide only (the step without contacts pivots unilateral
    // rows); where the device cannot collide some pair, that is said below.
    let pairs = contacts::device_pairs(model);
    let collides = pairs.as_ref().map_or(true, |p| !p.is_empty());
    let features = if collides {
        model.constraint_features_but_dof_friction()
    } else {
        model.constraint_features()
    };
    if let Some(what) = features {
        let alone = if collides || records::friction_dofs(model) == 0 {
            ""
        } else {
            " (the kernel solves dry friction with the contacts, and no pair of its geoms can collide)"
        };
        return Some(format!("the kernel does not simulate its {what}{alone}"));
    }
    if model.na() > 0 {
        return Some(format!(
            "the kernel has no activation state: {} actuator(s) with activation dynamics",
            model.na()
        ));
    }
    if !model.spin_pairs().is_empty() {
        return Some(format!(
            "the resident step builds three-row friction cones, and {} pair(s) of its geoms have torsional or rolling friction (condim 4 or 6)",
            model.spin_pairs().len()
        ));
    }
    if model.nbodies > MAX_BODIES {
        return Some(format!(
            "{} bodies, over the {MAX_BODIES} the kernel is compiled for",
            model.nbodies
        ));
    }
    pairs.err()
}

/// A world's flag (see [`Columns::flag`]): its state would have become
/// non-finite.
pub const WORLD_FLAG_NON_FINITE: u32 = 1;
/// A world's flag: its contact solve failed (the solver flagged the
/// problem: not positive semi-definite, invalid, diverged; or λ not finite).
pub const WORLD_FLAG_CONTACT_SOLVE: u32 = 2;
/// A world's flag: its contact solve did not finish within the step's
/// dispatches.
pub const WORLD_FLAG_UNFINISHED: u32 = 3;
/// A world's flag: the driver cut the step kernel's loops (lavapipe's
/// loop limit), so its problem could not be trusted.
pub const WORLD_FLAG_LOOP_LIMIT: u32 = 4;

mod buffers;
mod chunks;
pub mod contacts;
pub mod layout;
pub mod pairs;
mod records;
mod state_io;
mod step;
mod task;
mod timing;

use buffers::{Bindings, Kernel, bind_group as make_bind_group, kernel};
pub use buffers::{Columns, DeviceSolve};
pub use chunks::ResidentChunks;
use chunks::check_model;
use contacts::{ContactSizes, ContactStage, contact_uniform, device_pairs};
use records::{WORLD_PARAMS, actuator_records, lcp_floats, model_records, world_params};
pub use records::{constants_for, limit_rows, source, source_for};
pub use task::{
    DeviceTaskKind, DeviceTaskSpec, INFO_CAP, TaskBodyFrame, TaskFloats, TaskUniform, body_frames,
    fixed_tendons, pair_frames, task_source,
};

/// Each actuator's (dof, q index) from its records.
fn actuated_joints(actuator_words: &[u32]) -> Vec<(u32, u32)> {
    (actuator_words.chunks(ACT_WORDS))
        .map(|a| (a[0], a[1]))
        .collect()
}

/// Many worlds of one model, their state on the GPU.
pub struct ResidentBatch {
    ctx: GpuContext,
    model: Model,
    /// The most contacts between moving shapes at the initial states (the
    /// contact room is at least a quarter more; see
    /// [`contacts::initial_moving_contacts`]).
    initial_moving: usize,
    nworlds: usize,
    params: SimParams,
    kernel: Kernel,
    bind_group: wgpu::BindGroup,
    /// The contact stage, when the model has pairs that can collide, and
    /// its bind group (the kernel's group 1).
    contacts: Option<(ContactStage, wgpu::BindGroup)>,
    /// Whether every world has its own model records and parameters
    /// ([`ResidentBatch::set_world`]).
    per_world: bool,
    /// The batch's structure, which every world's model must share: the
    /// body records' words and each actuator's (dof, q index).
    body_u32: Vec<u32>,
    actuated_joints: Vec<(u32, u32)>,
    step_params: layout::StepParams,
    b: Bindings,
    /// Whether `active` holds all ones.
    all_active: bool,
    /// Whether the next step clears the flags first.
    clear_flags: bool,
    active_words: Vec<u32>,
    /// `q`, `v`, the constraint forces and the flags, copied here to be
    /// read (kept: a step allocates nothing on the device); then, while
    /// [`ResidentBatch::keep_last_start`] is on, `start`'s `q` and `v`.
    readback: wgpu::Buffer,
    /// While on: `q` and `v` as the last step of each call found them
    /// (copied on the device before it; read back with the state).
    start: Option<(wgpu::Buffer, wgpu::Buffer)>,
    /// Host staging, world-minor f32 (kept: a step allocates nothing).
    staging: Vec<f32>,
    /// Time spent waiting for the device in reads, since creation.
    waited: Duration,
    /// The stages' timer, while stage timing is on (`timing.rs`).
    timer: Option<timing::StageTimer>,
    /// The RL task computed on the device, when attached (`task.rs`).
    task: Option<task::TaskStage>,
}

/// One world's stage outputs in a step (see [`ResidentBatch::read_stages`]).
#[derive(Clone, Debug)]
pub struct StageOutputs {
    /// Forward kinematics: each body's world rotation and position (the
    /// world first).
    pub body_rotation: Vec<crate::math::Mat3>,
    pub body_position: Vec<crate::math::Vec3>,
    /// The generalized forces the dynamics saw (applied or actuators',
    /// springs, explicit damping; the fluid's enters the bias instead).
    pub tau: nalgebra::DVector<f64>,
    /// The free velocity `v + dt·M̃⁻¹(τ − b)`, before the joint limits.
    pub v_free: nalgebra::DVector<f64>,
}

/// Floats of one world's stage outputs: 12 per body, then `v_f` and `τ`.
fn stage_width(model: &Model) -> usize {
    12 * model.nbodies + 2 * model.nv
}

/// `x` (rows of `width` per world) world-minor, in f32; the rows of the
/// worlds `keep` rejects are zeros (not read).
fn world_minor(
    x: &[f64],
    nworlds: usize,
    width: usize,
    keep: impl Fn(usize) -> bool,
    out: &mut Vec<f32>,
) {
    out.clear();
    out.resize(nworlds * width, 0.0);
    for w in (0..nworlds).filter(|&w| keep(w)) {
        for t in 0..width {
            out[t * nworlds + w] = x[w * width + t] as f32;
        }
    }
}

impl ResidentBatch {
    /// `nworlds` worlds of `model` starting from `initial` (one state for
    /// all, or one per world), stepped with `params` (its `dt`; for the
    /// joint limits its `limit_margin`, `baumgarte`, `compliance` and
    /// solver tolerance, and for contacts its margin, friction scale,
    /// bounce velocity, warm start and solver. Without contacts the limit
    /// rows are solved by principal pivoting, whatever `params.solver`;
    /// with contacts they join the contact problem).
    pub fn new(
        ctx: &GpuContext,
        model: &Model,
        params: &SimParams,
        initial: &[State],
        nworlds: usize,
    ) -> Result<Self, ResidentError> {
        Self::build(ctx, model, params, initial, nworlds, false)
    }

    /// [`Self::new`], the kernel also writing each stage's output for
    /// [`Self::read_stages`] (the stage-by-stage comparison with the CPU).
    pub fn with_stage_probe(
        ctx: &GpuContext,
        model: &Model,
        params: &SimParams,
        initial: &[State],
        nworlds: usize,
    ) -> Result<Self, ResidentError> {
        Self::build(ctx, model, params, initial, nworlds, true)
    }

    fn build(
        ctx: &GpuContext,
        model: &Model,
        params: &SimParams,
        initial: &[State],
        nworlds: usize,
        probe: bool,
    ) -> Result<Self, ResidentError> {
        check_model(model, params)?;
        ResidentError::check_initial(initial.len(), nworlds)?;
        let initial_moving = chunks::initial_moving(model, params, initial);
        chunks::check_capacity(ctx, model, nworlds, initial_moving)?;
        // The kernel is built first and checked before any buffer is made:
        // a driver that fails to build it loses the device (NVIDIA's, on
        // Gymnasium's humanoid, H100, 2026-11-26), and every later call on
        // it would fail for that reason.
        let built = kernel(ctx, model, false, initial_moving)?;
        Self::assemble(
            ctx,
            model,
            params,
            initial,
            nworlds,
            probe,
            initial_moving,
            built,
        )
    }

    /// The batch of `nworlds` worlds from `initial` (one state, or one per
    /// world) with a kernel built for `initial_moving` moving contacts,
    /// its model and capacity checked ([`check_model`],
    /// [`chunks::check_capacity`]).
    #[allow(clippy::too_many_arguments)]
    fn assemble(
        ctx: &GpuContext,
        model: &Model,
        params: &SimParams,
        initial: &[State],
        nworlds: usize,
        probe: bool,
        initial_moving: usize,
        built: Kernel,
    ) -> Result<Self, ResidentError> {
        let (nq, nv, nu) = (model.nq, model.nv, model.nu().max(1));
        let pairs = device_pairs(model).unwrap_or_default();
        let lcp_words = lcp_floats(model, nworlds);
        let extra = if pairs.is_empty() {
            0
        } else {
            ContactSizes::READBACK
        };
        let readback_bytes = ((nq + 2 * nv + 1 + extra) as u64).saturating_mul(nworlds as u64 * 4);
        let mut q0 = Vec::with_capacity(nworlds * nq);
        let mut v0 = Vec::with_capacity(nworlds * nv);
        for w in 0..nworlds {
            let s = &initial[if initial.len() == 1 { 0 } else { w }];
            crate::sim::check_state(model, s).map_err(|e| ResidentError::Unsupported {
                model: model.name.clone(),
                reason: format!("initial state of world {w}: {e}"),
            })?;
            q0.extend(s.q.iter());
            v0.extend(s.v.iter());
        }
        let (body_u32, body_f32, dof_f32) = model_records(model, params.dt);
        let actuator_words = actuator_records(model);
        let device = &ctx.device;
        let contacts = if pairs.is_empty() {
            None
        } else {
            let sizes =
                ContactSizes::starting_with(&pairs, limit_rows(model).max(4), initial_moving);
            Some(ContactStage::new(
                ctx, model, params, &pairs, sizes, nworlds,
            )?)
        };
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        // Made empty and written through the queue (not mapped at creation,
        // which panics inside wgpu when the device is gone).
        let init = |label: &str, bytes: &[u8], usage: wgpu::BufferUsages| {
            let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes.len() as u64,
                usage,
                mapped_at_creation: false,
            });
            ctx.queue.write_buffer(&buffer, 0, bytes);
            buffer
        };
        let storage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC;
        let mut staging = Vec::new();
        world_minor(&q0, nworlds, nq, |_| true, &mut staging);
        let q = init("resident q", bytemuck::cast_slice(&staging), storage);
        world_minor(&v0, nworlds, nv, |_| true, &mut staging);
        let v = init("resident v", bytemuck::cast_slice(&staging), storage);
        // wgpu zero-initializes a buffer created without contents.
        let zeroed = |label: &str, words: usize| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: (words * 4) as u64,
                usage: storage,
                mapped_at_creation: false,
            })
        };
        let tau = zeroed("resident tau", nworlds * nv);
        let ctrl = zeroed("resident ctrl", nworlds * nu);
        let flags = zeroed("resident flags", nworlds);
        let dofs = init("resident dofs", bytemuck::cast_slice(&dof_f32), storage);
        let qfrc = zeroed("resident constraint forces", nworlds * nv);
        let active = init(
            "resident active",
            bytemuck::cast_slice(&vec![1u32; nworlds]),
            storage,
        );
        let bu = init(
            "resident bodies (u32)",
            bytemuck::cast_slice(&body_u32),
            storage,
        );
        let bf = init(
            "resident bodies (f32)",
            bytemuck::cast_slice(&body_f32),
            storage,
        );
        let acts = init(
            "resident actuators",
            bytemuck::cast_slice(&actuator_words),
            storage,
        );
        let (g, medium) = (model.gravity, model.medium);
        let f = |x: f64| x as f32;
        let step_params = layout::StepParams {
            nworlds: nworlds as u32,
            dt: f(params.dt),
            controls: 0,
            nu: model.nu() as u32,
            gravity: [f(g.x), f(g.y), f(g.z), 0.0],
            limits: [
                f(params.limit_margin),
                f(params.baumgarte),
                f(params.compliance),
                f(params.solver_settings.tolerance),
            ],
            medium: [f(medium.density), f(medium.viscosity), 0.0, 0.0],
            wind: [f(medium.wind.x), f(medium.wind.y), f(medium.wind.z), 0.0],
            probe: [u32::from(probe), 0, 0, 0],
            contact: contact_uniform(params),
            solve: [
                params.solver_settings.max_iterations.min(u32::MAX as usize) as u32,
                // The canary's trip count, from the uniform: a constant one
                // is folded away by the compiler (see `loop_cut`).
                crate::gpu::batch::CANARY,
                0,
                0,
            ],
            recovery: [
                records::max_recovery(params),
                f(params.penetration_compliance),
                0.0,
                0.0,
            ],
        };
        let stage_floats = if probe {
            stage_width(model) * nworlds
        } else {
            1
        };
        let stages = zeroed("resident stage outputs", stage_floats);
        let lcp = zeroed("resident limit scratch", lcp_words);
        let world_params = zeroed("resident world parameters", 1);
        let uniform = init(
            "resident params",
            bytemuck::bytes_of(&step_params),
            wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        );
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("resident readback"),
            size: readback_bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let buffers = Bindings {
            uniform,
            body_u32: bu,
            body_f32: bf,
            q,
            v,
            tau,
            flags,
            ctrl,
            actuators: acts,
            stepping: active,
            qfrc,
            dof_f32: dofs,
            stages,
            lcp,
            world_params,
        };
        let bind_group = buffers.bind_group(ctx, &built.group0);
        let contacts = contacts.map(|stage| {
            let layout = built.group1.as_ref().expect("a contact kernel has group 1");
            let group = make_bind_group(ctx, "resident contacts", layout, &stage.buffers());
            (stage, group)
        });
        if let Some(e) = pollster::block_on(validation.pop()) {
            return Err(wgpu_error("building the resident step", e).into());
        }
        Ok(ResidentBatch {
            ctx: ctx.clone(),
            model: model.clone(),
            initial_moving,
            nworlds,
            params: *params,
            kernel: built,
            bind_group,
            contacts,
            per_world: false,
            actuated_joints: actuated_joints(&actuator_words),
            body_u32,
            step_params,
            b: buffers,
            all_active: true,
            clear_flags: false,
            active_words: Vec::new(),
            readback,
            start: None,
            staging,
            waited: Duration::ZERO,
            timer: None,
            task: None,
        })
    }

    /// Keeps, or stops keeping, each world's `q` and `v` as the last step
    /// of every [`Self::step_repeated`] call found them (a copy on the
    /// device in the same submission, read back with the state by
    /// [`Self::read_columns`]): the state an RL task's frame skip reads its
    /// body positions at, with one readback per call. Refused (nothing
    /// changed) when the larger readback buffer would not fit the device.
    pub fn keep_last_start(&mut self, on: bool) -> Result<(), ResidentError> {
        if on == self.start.is_some() {
            return Ok(());
        }
        if !on && self.task.is_some() {
            return Err(ResidentError::Unsupported {
                model: self.model.name.clone(),
                reason: "its task on the device reads the last steps' starts: they stay kept"
                    .into(),
            });
        }
        let (n, nq, nv) = (
            self.nworlds as u64,
            self.model.nq as u64,
            self.model.nv as u64,
        );
        let extra = (nq + nv) * n * 4;
        let size = if on {
            self.readback.size() + extra
        } else {
            self.readback.size() - extra
        };
        if size > self.ctx.limits.max_buffer_size {
            return Err(ResidentError::Capacity {
                nworlds: self.nworlds,
                what: "bytes in the readback buffer with the last steps' starts",
                needed: size,
                limit: self.ctx.limits.max_buffer_size,
            });
        }
        let buffer = |label, size, usage| {
            self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage,
                mapped_at_creation: false,
            })
        };
        // (Bound by a task on the device.)
        let copies = wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::STORAGE;
        self.start = on.then(|| {
            (
                buffer("resident start q", nq * n * 4, copies),
                buffer("resident start v", nv * n * 4, copies),
            )
        });
        self.readback = buffer(
            "resident readback",
            size,
            wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        );
        self.rebind_task();
        Ok(())
    }

    /// Encodes the copies of `q` and `v` into the start buffers (when kept).
    fn encode_start(&self, encoder: &mut wgpu::CommandEncoder) {
        if let Some((sq, sv)) = &self.start {
            encoder.copy_buffer_to_buffer(&self.b.q, 0, sq, 0, sq.size());
            encoder.copy_buffer_to_buffer(&self.b.v, 0, sv, 0, sv.size());
        }
    }

    pub fn nworlds(&self) -> usize {
        self.nworlds
    }

    pub fn params(&self) -> &SimParams {
        &self.params
    }

    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    /// Time spent waiting for the device while reading state back (from
    /// the readback's submission, which on a software adapter runs the
    /// queued steps, to its mapping), since the batch was made; the rest of
    /// the calls' time is the host's.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// Device bytes of the batch's buffers (state, inputs, model, readback).
    pub fn device_bytes(&self) -> u64 {
        [
            &self.b.q,
            &self.b.v,
            &self.b.tau,
            &self.b.ctrl,
            &self.b.flags,
            &self.b.qfrc,
            &self.b.stepping,
            &self.b.lcp,
            &self.b.body_f32,
            &self.b.dof_f32,
            &self.b.actuators,
            &self.b.world_params,
            &self.readback,
        ]
        .iter()
        .map(|b| b.size())
        .sum::<u64>()
            + self.contacts.as_ref().map_or(0, |(c, _)| c.device_bytes())
    }

    /// Gives world `w` its own model and parameters from the next step on
    /// (domain randomization: masses, inertias, joint placements, ranges,
    /// damping, armature, springs, actuators' gains and ranges, gravity,
    /// the fluid, `dt`, the limit rows' settings). The model must have the
    /// batch's structure: the same joints in the same tree, the same
    /// limited joints, the same actuators on the same joints; a model that
    /// differs there is refused, naming what differs, and nothing changes.
    /// The first call switches the batch to a kernel that reads every
    /// world's own records (built then; the other worlds keep theirs).
    pub fn set_world(
        &mut self,
        w: usize,
        model: &Model,
        params: &SimParams,
    ) -> Result<(), ResidentError> {
        ResidentError::check_world(w, self.nworlds)?;
        params.validate()?;
        let unfit = |reason: String| ResidentError::Unsupported {
            model: model.name.clone(),
            reason: format!("world {w}'s model: {reason}"),
        };
        if let Some(reason) = unsupported(model) {
            return Err(unfit(reason));
        }
        let base = &self.model;
        if (model.nq, model.nv, model.nbodies, model.nu())
            != (base.nq, base.nv, base.nbodies, base.nu())
        {
            return Err(unfit(format!(
                "(nq, nv, bodies, actuators) = ({}, {}, {}, {}), the batch's ({}, {}, {}, {})",
                model.nq,
                model.nv,
                model.nbodies,
                model.nu(),
                base.nq,
                base.nv,
                base.nbodies,
                base.nu()
            )));
        }
        // The rows after the contacts are sized by the batch's model (its
        // limits and its dofs with dry friction).
        if records::friction_dofs(model) > records::friction_dofs(base) {
            return Err(unfit(format!(
                "dry friction on {} dofs, more than the batch's {} (the kernel's rows are sized by the batch's model)",
                records::friction_dofs(model),
                records::friction_dofs(base)
            )));
        }
        let (u, f, d) = model_records(model, params.dt);
        if u != self.body_u32 {
            return Err(unfit(
                "its joints differ from the batch's (tree, joint types or limited joints)".into(),
            ));
        }
        if self.contacts.is_some() {
            // One solver pipeline for all worlds: only the tolerance is
            // each world's own (with the contacts' margin, friction scale
            // and bounce velocity, Baumgarte β and compliance).
            let (base, mut theirs) = (&self.params, params.solver_settings);
            theirs.tolerance = base.solver_settings.tolerance;
            if params.solver != base.solver
                || theirs != base.solver_settings
                || params.warm_start != base.warm_start
            {
                return Err(unfit(
                    "its solver, solver settings (but the tolerance) or warm start differ from \
                     the batch's (one solver pipeline solves every world's contacts)"
                        .into(),
                ));
            }
            let (ours, theirs) = (device_pairs(&self.model), device_pairs(model));
            let records = |m: &Model, p: &[contacts::DevicePair]| contacts::pair_records(m, p);
            let same = match (&ours, &theirs) {
                (Ok(a), Ok(b)) => a == b && records(&self.model, a) == records(model, b),
                _ => false,
            };
            if !same {
                return Err(unfit(
                    "its collision geometries or their materials differ from the batch's (one \
                     copy of the pairs is on the device)"
                        .into(),
                ));
            }
        }
        let acts = actuator_records(model);
        if actuated_joints(&acts) != self.actuated_joints {
            return Err(unfit(
                "its actuators drive other joints than the batch's".into(),
            ));
        }
        if !self.per_world {
            self.enter_per_world()?;
        }
        let queue = &self.ctx.queue;
        let at = |words: usize| (w * words * 4) as u64;
        queue.write_buffer(&self.b.body_f32, at(f.len()), bytemuck::cast_slice(&f));
        queue.write_buffer(&self.b.dof_f32, at(d.len()), bytemuck::cast_slice(&d));
        queue.write_buffer(
            &self.b.actuators,
            at(acts.len()),
            bytemuck::cast_slice(&acts),
        );
        let p = world_params(model, params);
        queue.write_buffer(
            &self.b.world_params,
            at(WORLD_PARAMS),
            bytemuck::bytes_of(&p),
        );
        self.ctx.take_error("setting a world's model")?;
        Ok(())
    }

    /// Whether worlds have their own models ([`Self::set_world`]).
    pub fn per_world(&self) -> bool {
        self.per_world
    }

    /// Switches to the per-world kernel, every world given the batch's
    /// model records and parameters. Nothing changes on failure.
    fn enter_per_world(&mut self) -> Result<(), ResidentError> {
        let n = self.nworlds;
        let (_, f, d) = model_records(&self.model, self.params.dt);
        let acts = actuator_records(&self.model);
        let p = world_params(&self.model, &self.params);
        let limit = self
            .ctx
            .limits
            .max_storage_buffer_binding_size
            .min(self.ctx.limits.max_buffer_size);
        for (what, words) in [
            ("bytes of per-world body records", f.len()),
            ("bytes of per-world dof records", d.len()),
            ("bytes of per-world actuator records", acts.len()),
            ("bytes of per-world parameters", WORLD_PARAMS),
        ] {
            let needed = (words as u64).saturating_mul(n as u64 * 4);
            if needed > limit {
                return Err(ResidentError::Capacity {
                    nworlds: n,
                    what,
                    needed,
                    limit,
                });
            }
        }
        let built = kernel(&self.ctx, &self.model, true, self.initial_moving)?;
        let device = &self.ctx.device;
        let each = |label: &str, bytes: &[u8]| {
            let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: (bytes.len() * n) as u64,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            self.ctx.queue.write_buffer(&buffer, 0, &bytes.repeat(n));
            buffer
        };
        let body_f32 = each("resident bodies (f32, per world)", bytemuck::cast_slice(&f));
        let dof_f32 = each("resident dofs (per world)", bytemuck::cast_slice(&d));
        let actuators = each(
            "resident actuators (per world)",
            bytemuck::cast_slice(&acts),
        );
        let world_params = each("resident world parameters", bytemuck::bytes_of(&p));
        let shared = [
            std::mem::replace(&mut self.b.body_f32, body_f32),
            std::mem::replace(&mut self.b.dof_f32, dof_f32),
            std::mem::replace(&mut self.b.actuators, actuators),
            std::mem::replace(&mut self.b.world_params, world_params),
        ];
        let bind_group = self.b.bind_group(&self.ctx, &built.group0);
        let contact_group = self.contacts.as_ref().map(|(stage, _)| {
            let layout = built.group1.as_ref().expect("a contact kernel has group 1");
            make_bind_group(&self.ctx, "resident contacts", layout, &stage.buffers())
        });
        if let Err(e) = self.ctx.take_error("making per-world model buffers") {
            // Back to the shared records, as before the call.
            let [f, d, a, p] = shared;
            (
                self.b.body_f32,
                self.b.dof_f32,
                self.b.actuators,
                self.b.world_params,
            ) = (f, d, a, p);
            return Err(e.into());
        }
        self.bind_group = bind_group;
        self.kernel = built;
        if let (Some((_, group)), Some(new)) = (self.contacts.as_mut(), contact_group) {
            *group = new;
        }
        self.per_world = true;
        self.rebind_task();
        Ok(())
    }
}
