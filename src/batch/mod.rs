//! `BatchSim`: N worlds of one model stepped together.
//!
//! Each world is a [`Simulator`] with its own state, parameters and warm
//! starts. One [`BatchSim::step`] runs, for every world, the host stages of
//! [`Simulator::prepare`] (free dynamics, collision, the tree-structured
//! Delassus assembly), then the contact solves, then [`Simulator::finish`]
//! (velocity update, integration). The backends differ only in where and
//! how the solves and host stages run:
//!
//! - [`Backend::CpuSingle`]: every world on the calling thread, one after the
//!   other, with the f64 CPU solver: the reference for comparisons;
//! - [`Backend::CpuParallel`]: the same code on rayon's threads, one world per
//!   task;
//! - [`Backend::Gpu`]: the worlds live on the GPU where the model allows it
//!   ([`crate::gpu::resident`]: trees of free, ball, hinge, slide and
//!   fixed joints, with actuators, joint limits, a fluid, and contacts
//!   between the pairs the device collides, `gpu::resident::pairs`):
//!   state and whole step on the device, the host uploading the actions
//!   (checked once, where they enter) and reading `q`, `v` back once per
//!   step. Elsewhere it runs the host-prepared path below and
//!   says why ([`BatchSim::notice`]). Per-world models and parameters
//!   (domain randomization) stay on the device. It leaves the device for
//!   that path, saying so, when asked for what only the host path does:
//!   derivatives, or a world model of another joint structure.
//! - [`Backend::GpuSolve`]: host stages on rayon's threads, the problems of all
//!   worlds with contacts packed into one batch and solved by one batched
//!   WGSL kernel ([`crate::gpu::GpuSolver`], f32), the impulses read back and
//!   the worlds finished on rayon's threads. Worlds without contacts skip
//!   the solve. The device buffers start at room for
//!   [`BatchOptions::initial_contacts_per_world`] and grow (×1.5 past the
//!   need, a rebuilt solver, counted in the report) when a step's batch
//!   needs more. A problem the GPU flags (more than
//!   [`BatchOptions::max_contacts_per_world`] contacts, an invalid or
//!   non-PSD problem, a divergence) is solved by the CPU solver of its world
//!   instead, and counted in the report: never dropped. Each world's
//!   problem carries its warm start (last λ by contact identity, and its
//!   last ADMM ρ) as on the CPU. With [`BatchOptions::pipeline_chunks`] > 1
//!   the worlds are split into chunks and the GPU solves one while the host
//!   prepares the next and finishes the previous.
//!
//! Memory: [`BatchSim::new`] estimates the host memory the worlds need
//! ([`memory::HostEstimate`]) and refuses a batch over what is available
//! ([`BatchError::HostMemory`]) before allocating anything per world.
//!
//! Bad input: actions of the wrong length are refused before anything
//! moves. A world whose actions are not finite, or whose step fails (a
//! solver error, a non-finite state), is left untouched and flagged in the
//! [`BatchStepReport`]; the others step normally.

use crate::contact::{SolverKind, SolverStats};

use crate::counters::{BatchTimes, Stage};
use crate::error::SimError;
use crate::gpu::vjp::GpuContactVjp;
use crate::gpu::{
    BatchCapacity, BatchOutput, Decomposition, GpuContext, GpuError, GpuSolver, HostBatch,
    Submission,
};
use crate::model::Model;
use crate::sim::{
    Actuation, SimParams, Simulator, State, StepJacobians, StepVjp, WarmStart, WorldContact,
};
use nalgebra::DVector;
use rayon::prelude::*;
use std::sync::Arc;
use std::time::Instant;

pub mod memory;
pub mod solve;

mod gpu_step;
mod gradients;
mod options;
mod report;
mod task;
mod world;
pub use options::{
    Backend, BatchError, BatchOptions, GPU_MIN_TOLERANCE, ThreadsError, set_threads, threads,
};
pub use report::BatchStepReport;
use report::Tally;
use world::{Record, World, WorldStep, finish_on_cpu, finish_with_lambda, step_on_cpu};

use gpu_step::{GpuState, host_prepared_gpu};
pub use gradients::{BatchTape, BatchVjp};
use memory::HostEstimate;

/// A world's `q` and `v`, borrowed.
pub type StateView<'a> = (&'a [f64], &'a [f64]);

/// N worlds of one model, stepped together (see the module doc).
pub struct BatchSim {
    model: Arc<Model>,
    worlds: Vec<World>,
    backend: Backend,
    options: BatchOptions,
    gpu: Option<GpuState>,
    /// The worlds on the device ([`Backend::Gpu`] where the model allows).
    resident: Option<crate::gpu::resident::ResidentChunks>,
    /// Why [`Backend::Gpu`] runs the host-prepared path, if it does.
    notice: Option<String>,
    /// Whether each world keeps the state its last step of a call started
    /// from ([`BatchSim::keep_last_start`]).
    keep_start: bool,
    /// (nworlds, width) inputs of a resident step, and which worlds step.
    resident_inputs: Vec<f64>,
    resident_active: Vec<bool>,
    /// Worlds whose parameters may have changed (`params_mut`) since the
    /// device last had them.
    resident_dirty: Vec<bool>,
    /// Worlds given a new state since the last resident step: their states
    /// are uploaded together at the head of the next one.
    resident_pending: Vec<usize>,
    /// (nworlds, nv) action gains (actuator strength per world), or none.
    action_gain: Option<Vec<f64>>,
    /// Cumulated times since creation or [`Self::reset_times`].
    pub times: BatchTimes,
}

impl BatchSim {
    /// `nworlds` copies of `model` at `initial`, stepped by `options.backend`.
    /// The GPU backend needs an adapter and a GPU kernel for the solver:
    /// without them this is an error that says why. A batch whose estimated
    /// memory is over what the host has available is refused
    /// ([`BatchError::HostMemory`], see [`memory`]) before anything is
    /// allocated per world.
    pub fn new(
        model: Arc<Model>,
        initial: &State,
        nworlds: usize,
        options: &BatchOptions,
    ) -> Result<Self, BatchError> {
        if nworlds == 0 {
            return Err(BatchError::NoWorlds);
        }
        let tol = options.params.solver_settings.tolerance;
        if options.backend.uses_gpu() && tol < GPU_MIN_TOLERANCE {
            return Err(BatchError::GpuTolerance {
                tolerance: tol,
                min: GPU_MIN_TOLERANCE,
            });
        }
        // The memory the worlds need, checked before anything is allocated
        // per world (this also refuses a bad initial state).
        let estimate = HostEstimate::for_batch(&model, initial, options)?;
        let available = memory::available_memory();
        estimate.check(nworlds, available)?;
        let (mut gpu, mut resident, mut notice) = (None, None, None);
        let solver = options.params.solver;
        let admm = matches!(
            crate::gpu::kernel::check_kernel(solver),
            Ok((crate::contact::Kernel::Admm, _))
        );
        if options.backend.uses_gpu() && !model.spin_pairs().is_empty() && !admm {
            return Err(BatchError::GpuUnsupported(format!(
                "{}: {} pair(s) of its geoms have torsional or rolling friction (condim 4 or 6), whose wider friction cones the GPU solves with ncp-admm and ccp-admm only, not {}; use one of those, a CPU backend, or load with sliding_friction_only",
                model.name,
                model.spin_pairs().len(),
                solver.name()
            )));
        }
        if options.backend.uses_gpu() {
            let mut ctx = GpuContext::new()?;
            // An adapter on the host's memory holds the device buffers there too.
            if matches!(
                ctx.adapter.device_type,
                wgpu::DeviceType::Cpu | wgpu::DeviceType::IntegratedGpu
            ) {
                estimate
                    .with_shared_device_memory(options)
                    .check(nworlds, available)?;
            }
            // The host-prepared path's own knobs, asked for explicitly, keep
            // a model with contacts there (resident worlds solve in place,
            // one invocation per problem).
            let knobs = (options.gpu_decomposition != Decomposition::Invocation)
                .then_some("decomposition")
                .or((options.gpu_layout != crate::gpu::Layout::default()).then_some("layout"))
                .or((options.pipeline_chunks > 1).then_some("pipelining"));
            let contacts = !crate::gpu::resident::contacts::device_pairs(&model)
                .unwrap_or_default()
                .is_empty();
            if let (Backend::Gpu, Some(knob), true) = (options.backend, knobs, contacts) {
                notice = Some(format!(
                    "{}: the gpu backend runs the host-prepared path (gpu-solve), to which the {knob} asked for applies",
                    model.name
                ));
            } else if options.backend == Backend::Gpu {
                use crate::gpu::resident::{ResidentChunks, ResidentError};
                if options.gpu_chunk_worlds == Some(0) {
                    return Err(BatchError::Resident(
                        "gpu_chunk_worlds must be at least 1".into(),
                    ));
                }
                match ResidentChunks::new(
                    &ctx,
                    &model,
                    &options.params,
                    std::slice::from_ref(initial),
                    nworlds,
                    options.gpu_chunk_worlds,
                ) {
                    Ok(r) => resident = Some(r),
                    Err(ResidentError::Unsupported { reason, .. }) => {
                        notice = Some(format!(
                            "{}: not on the device ({reason}); the gpu backend runs the host-prepared path (gpu-solve)",
                            model.name
                        ))
                    }
                    Err(e @ ResidentError::Capacity { .. }) => {
                        notice = Some(format!(
                            "{}: not on the device (one world alone: {e}); the gpu backend runs the host-prepared path (gpu-solve)",
                            model.name
                        ))
                    }
                    Err(e @ ResidentError::Kernel { .. }) => {
                        // The failed build may have lost the device: the
                        // host-prepared path gets a fresh one.
                        notice = Some(format!(
                            "{e}; the gpu backend runs the host-prepared path (gpu-solve)"
                        ));
                        if ctx.is_lost() {
                            ctx = GpuContext::new()?;
                        }
                    }
                    Err(ResidentError::Gpu(e)) => return Err(e.into()),
                    Err(e) => return Err(BatchError::Resident(e.to_string())),
                }
            }
            if resident.is_none() {
                gpu = Some(host_prepared_gpu(&model, options, nworlds, &ctx)?);
            }
        }
        let mut worlds = Vec::with_capacity(nworlds);
        for w in 0..nworlds {
            let sim = Simulator::new(model.clone(), options.params)
                .map_err(|error| BatchError::Sim { world: w, error })?;
            worlds.push(World {
                sim,
                state: initial.clone(),
                tau: vec![0.0; model.nv],
                ctrl: vec![0.0; model.nu()],
                controls: false,
                step: WorldStep::Stepping { contacts: 0 },
                lambda: Vec::new(),
                stats: SolverStats::default(),
                fallback: None,
                jacobians: None,
                record: Record::Nothing,
                v0: DVector::zeros(model.nv),
                constraint_force: None,
                device_rows: 0,
                dropped_contacts: 0,
                start: None,
            });
        }
        Ok(BatchSim {
            model,
            worlds,
            backend: options.backend,
            options: options.clone(),
            gpu,
            resident,
            notice,
            keep_start: false,
            resident_inputs: Vec::new(),
            resident_active: Vec::new(),
            resident_dirty: vec![false; nworlds],
            resident_pending: Vec::new(),
            action_gain: None,
            times: BatchTimes::default(),
        })
    }

    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }
    pub fn nworlds(&self) -> usize {
        self.worlds.len()
    }
    pub fn backend(&self) -> Backend {
        self.backend
    }
    /// The host-prepared GPU path's buffers' capacity now (when it runs).
    pub fn gpu_capacity(&self) -> Option<BatchCapacity> {
        self.gpu.as_ref().map(|g| g.lanes[0].solver.capacity())
    }
    /// The GPU adapter's name (GPU backends).
    pub fn device_name(&self) -> Option<String> {
        if let Some(r) = &self.resident {
            return Some(r.context().adapter.name.clone());
        }
        self.gpu
            .as_ref()
            .map(|g| g.lanes[0].solver.context().adapter.name.clone())
    }
    /// Whether the worlds live on the device ([`Backend::Gpu`] on a model
    /// it can run, until asked for what only the host path does).
    pub fn is_resident(&self) -> bool {
        self.resident.is_some()
    }
    /// The sizes of the chunks the resident worlds are split into (one,
    /// unless the device's limits or `gpu_chunk_worlds` split them; see
    /// [`crate::gpu::resident::ResidentChunks`]), when resident.
    pub fn resident_chunk_sizes(&self) -> Option<Vec<usize>> {
        self.resident.as_ref().map(|r| r.chunk_sizes())
    }
    /// Device bytes of the resident worlds' buffers (when resident).
    pub fn resident_device_bytes(&self) -> Option<u64> {
        self.resident.as_ref().map(|r| r.device_bytes())
    }
    /// Times the resident step's stages from the next step on, or stops
    /// (see [`crate::gpu::resident::ResidentBatch::set_stage_timing`]:
    /// each stage submitted alone and waited for); false, and nothing
    /// done, where the worlds are not resident.
    pub fn set_resident_stage_timing(&mut self, on: bool) -> bool {
        self.resident
            .as_mut()
            .map(|r| r.set_stage_timing(on))
            .is_some()
    }
    /// What the resident stage timing measured (`None`: off, or not resident).
    pub fn resident_stage_times(&self) -> Option<crate::counters::ResidentStageTimes> {
        self.resident.as_ref().and_then(|r| r.stage_times())
    }
    /// Why [`Backend::Gpu`] runs the host-prepared path, if it does: one
    /// line naming the reason.
    pub fn notice(&self) -> Option<&str> {
        self.notice.as_deref()
    }

    /// Moves resident worlds to the host-prepared GPU path (their states
    /// are on the host after every step), saying `why` in the notice.
    fn leave_resident(&mut self, why: &str) -> Result<(), BatchError> {
        let Some(r) = self.resident.as_ref() else {
            return Ok(());
        };
        // Built before the device state goes: on failure the batch stays
        // resident. A lost device (a driver that could not build the
        // per-world kernel) is replaced by a fresh one.
        let fresh;
        let ctx = if r.context().is_lost() {
            fresh = GpuContext::new()?;
            &fresh
        } else {
            r.context()
        };
        let gpu = host_prepared_gpu(&self.model, &self.options, self.worlds.len(), ctx)?;
        self.resident = None;
        self.gpu = Some(gpu);
        for world in &mut self.worlds {
            world.dropped_contacts = 0;
        }
        self.notice = Some(format!(
            "{}: left the device ({why}); the gpu backend runs the host-prepared path (gpu-solve) from now on",
            self.model.name
        ));
        Ok(())
    }

    fn world(&self, w: usize) -> Result<&World, BatchError> {
        self.worlds.get(w).ok_or(BatchError::NoSuchWorld {
            world: w,
            nworlds: self.worlds.len(),
        })
    }
    fn world_mut(&mut self, w: usize) -> Result<&mut World, BatchError> {
        let nworlds = self.worlds.len();
        self.worlds
            .get_mut(w)
            .ok_or(BatchError::NoSuchWorld { world: w, nworlds })
    }

    /// Keeps, or stops keeping, each stepped world's `q` and `v` as the
    /// last step of every step call found them ([`Self::last_start`]): an
    /// RL task's frame skip reads its bodies there (MuJoCo's `data.xpos`
    /// after `mj_step`), with one call and, on the device, one readback
    /// per environment step.
    pub fn keep_last_start(&mut self, on: bool) -> Result<(), BatchError> {
        if let Some(r) = self.resident.as_mut() {
            r.keep_last_start(on)
                .map_err(|e| BatchError::Resident(e.to_string()))?;
        }
        self.keep_start = on;
        if !on {
            self.worlds.iter_mut().for_each(|w| w.start = None);
        }
        Ok(())
    }
    /// World `w`'s `q` and `v` as the last step of its last step call
    /// found them, while [`Self::keep_last_start`] is on (`None` before
    /// its first stepped call since).
    pub fn last_start(&self, w: usize) -> Result<Option<StateView<'_>>, BatchError> {
        Ok((self.world(w)?.start.as_ref()).map(|(q, v)| (q.as_slice(), v.as_slice())))
    }

    /// The state of world `w`.
    pub fn state(&self, w: usize) -> Result<&State, BatchError> {
        Ok(&self.world(w)?.state)
    }
    /// The states of all worlds.
    pub fn states(&self) -> impl Iterator<Item = &State> {
        self.worlds.iter().map(|w| &w.state)
    }
    /// Sets the state of world `w` (validated; its warm starts are dropped).
    pub fn set_state(&mut self, w: usize, state: State) -> Result<(), BatchError> {
        let world = self.world_mut(w)?;
        world
            .sim
            .energy(&state)
            .map_err(|error| BatchError::Sim { world: w, error })?;
        if self.resident.is_some() {
            // Uploaded with the others at the next step.
            self.resident_pending.push(w);
        }
        let world = self.world_mut(w)?;
        world.state = state;
        world.sim.clear_warm_start();
        Ok(())
    }
    /// World `w`'s warm starts: with its [`State`], everything its next
    /// step reads, so that [`Self::restore`] into any batch of the model
    /// continues bit for bit. Resident worlds ([`Backend::Gpu`]) keep theirs
    /// on the device, in its own format: refused there.
    pub fn warm_start(&mut self, w: usize) -> Result<WarmStart, BatchError> {
        self.refuse_resident_warm_starts()?;
        Ok(self.world_mut(w)?.sim.warm_start())
    }

    /// Sets world `w`'s state and warm starts (from [`Self::state`] and
    /// [`Self::warm_start`]): both are checked first, and on error nothing
    /// changes.
    pub fn restore(&mut self, w: usize, state: State, warm: WarmStart) -> Result<(), BatchError> {
        self.refuse_resident_warm_starts()?;
        let world = self.world_mut(w)?;
        let error = |error| BatchError::Sim { world: w, error };
        // (Both checked before either is set.)
        world.sim.energy(&state).map_err(error)?;
        world.sim.set_warm_start(warm).map_err(error)?;
        world.state = state;
        Ok(())
    }

    fn refuse_resident_warm_starts(&self) -> Result<(), BatchError> {
        if self.resident.is_some() {
            return Err(BatchError::Resident(
                "the warm starts of worlds living on the device cannot be read or set; \
                 set_state restores a world's state there (its next step then starts cold)"
                    .into(),
            ));
        }
        Ok(())
    }

    /// World `w`'s generalized constraint forces in its last step, `Jᵀλ/dt`
    /// (contacts and joint stops; MuJoCo's `qfrc_constraint`), nv; zero
    /// before its first step or without constraints.
    pub fn constraint_forces(&self, w: usize) -> Result<DVector<f64>, BatchError> {
        let world = self.world(w)?;
        if let Some(f) = &world.constraint_force {
            return Ok(f.clone());
        }
        let (sim, nv) = (&world.sim, self.model.nv);
        let m = sim.problem().m();
        let mut f = DVector::zeros(nv);
        if m > 0 {
            let (j, lambda) = (&sim.jacobian().jacobian, &sim.solution().lambda);
            for k in 0..nv {
                f[k] = (0..m).map(|r| j[(r, k)] * lambda[r]).sum::<f64>() / sim.params.dt;
            }
        }
        Ok(f)
    }
    /// The simulator of world `w` (its contacts, problem and timers; on the
    /// device, [`Backend::Gpu`], it does not step: read the batch).
    pub fn simulator(&self, w: usize) -> Result<&Simulator, BatchError> {
        Ok(&self.world(w)?.sim)
    }
    /// Every world's contacts of its last step, with their impulses: read
    /// back from the device for resident worlds, from the worlds'
    /// simulators otherwise. A world whose last step failed has none.
    pub fn contacts(&self) -> Result<Vec<Vec<WorldContact>>, BatchError> {
        let failed = |w: &World| matches!(w.step, WorldStep::Failed(_));
        let Some(r) = self.resident.as_ref() else {
            return Ok(self
                .worlds
                .iter()
                .map(|w| {
                    if failed(w) {
                        Vec::new()
                    } else {
                        w.sim.solved_contacts().collect()
                    }
                })
                .collect());
        };
        let device = r
            .read_contacts()
            .map_err(|e| BatchError::Resident(e.to_string()))?;
        Ok(device
            .into_iter()
            .zip(&self.worlds)
            .map(
                |(contacts, world)| {
                    if failed(world) { Vec::new() } else { contacts }
                },
            )
            .collect())
    }

    /// Every world's contact forces of its last step, `(geometry, world
    /// point, world force)`, two per contact, equal and opposite (as
    /// [`Simulator::contact_forces`]), from [`Self::contacts`].
    #[allow(clippy::type_complexity)]
    pub fn contact_forces(
        &self,
    ) -> Result<Vec<Vec<(usize, crate::math::Vec3, crate::math::Vec3)>>, BatchError> {
        Ok(self
            .contacts()?
            .into_iter()
            .zip(&self.worlds)
            .map(|(contacts, world)| {
                let dt = world.sim.params.dt;
                contacts
                    .iter()
                    .flat_map(|c| {
                        let f = c.impulse / dt;
                        [(c.geom_a, c.point, f), (c.geom_b, c.point, -f)]
                    })
                    .collect()
            })
            .collect())
    }
    /// Every world's sensor values ([`Simulator::sensors`]), (nworlds ×
    /// `Model::nsensordata`) world by world. Resident worlds
    /// ([`Backend::Gpu`]) keep their last step on the device: refused there.
    pub fn sensors(&mut self) -> Result<Vec<f64>, BatchError> {
        if self.resident.is_some() {
            return Err(BatchError::Resident(
                "the sensors of worlds living on the device are not evaluated (their last step \
                 stays there); use the `cpu` or `gpu-solve` backend"
                    .into(),
            ));
        }
        let mut out = Vec::with_capacity(self.worlds.len() * self.model.nsensordata());
        for (w, world) in self.worlds.iter_mut().enumerate() {
            let values = (world.sim.sensors(&world.state))
                .map_err(|error| BatchError::Sim { world: w, error })?;
            out.extend(values);
        }
        Ok(out)
    }
    /// Sets mocap body `i`'s pose in world `w` from its next step on
    /// ([`Simulator::set_mocap_pose`]; refused, nothing changed, for a bad
    /// index or pose).
    pub fn set_mocap_pose(
        &mut self,
        w: usize,
        i: usize,
        pose: crate::math::SE3,
    ) -> Result<(), BatchError> {
        (self.world_mut(w)?.sim)
            .set_mocap_pose(i, pose)
            .map_err(|error| BatchError::Sim { world: w, error })
    }
    /// World `w`'s mocap poses ([`crate::model::Model::mocap`]'s order).
    pub fn mocap_poses(&self, w: usize) -> Result<&[crate::math::SE3], BatchError> {
        Ok(self.world(w)?.sim.mocap_poses())
    }
    /// World `w`'s simulation parameters.
    pub fn params(&self, w: usize) -> Result<&SimParams, BatchError> {
        Ok(&self.world(w)?.sim.params)
    }
    /// The simulation parameters of world `w`, for domain randomization
    /// (friction scale, compliance, solver settings, `dt`). The solver kind
    /// must stay the batch's on the GPU backend (the kernel is compiled for
    /// it). Resident worlds ([`Backend::Gpu`]) get the change at their next
    /// step, on the device; an invalid change is refused then, naming the
    /// world, and nothing moves.
    pub fn params_mut(&mut self, w: usize) -> Result<&mut SimParams, BatchError> {
        self.world(w)?;
        if self.resident.is_some() {
            self.resident_dirty[w] = true;
        }
        Ok(&mut self.world_mut(w)?.sim.params)
    }
    /// Gives world `w` its own model: same structure (`nq`, `nv`, bodies,
    /// geometries, sensor sizes), other masses or geometry sizes (domain randomization).
    pub fn set_world_model(&mut self, w: usize, model: Arc<Model>) -> Result<(), BatchError> {
        let base = &self.model;
        if model.nq != base.nq
            || model.nv != base.nv
            || model.nbodies != base.nbodies
            || model.geometries.len() != base.geometries.len()
            || model.body_parent != base.body_parent
            || model.mocap.len() != base.mocap.len()
            || model
                .sensors
                .iter()
                .map(|s| s.kind.dim())
                .ne(base.sensors.iter().map(|s| s.kind.dim()))
        {
            return Err(BatchError::ModelStructure { world: w });
        }
        self.world(w)?;
        let params = self.world(w)?.sim.params;
        let mut sim =
            Simulator::new(model, params).map_err(|error| BatchError::Sim { world: w, error })?;
        // The world's mocap poses stay its own.
        for (i, &pose) in self.world(w)?.sim.mocap_poses().iter().enumerate() {
            (sim.set_mocap_pose(i, pose)).map_err(|error| BatchError::Sim { world: w, error })?;
        }
        // Resident worlds take their own model on the device when it has
        // the batch's structure there too; else the batch leaves it.
        if let Some(r) = self.resident.as_mut() {
            use crate::gpu::resident::ResidentError;
            match r.set_world(w, sim.model(), &params) {
                Ok(()) => {}
                Err(ResidentError::Gpu(e)) => return Err(e.into()),
                Err(e) => self.leave_resident(&e.to_string())?,
            }
        }
        self.world_mut(w)?.sim = sim;
        Ok(())
    }
    /// Per-world action gains, (nworlds, nv) flat: the torque on dof `k` of
    /// world `w` is `gain[w·nv + k] · action[w·nv + k]` (actuator strength
    /// randomization). Gains must be finite.
    pub fn set_action_gains(&mut self, gains: Vec<f64>) -> Result<(), BatchError> {
        let (n, nv) = (self.worlds.len(), self.model.nv);
        if gains.len() != n * nv {
            return Err(BatchError::DimensionMismatch {
                what: "action gains",
                got: gains.len(),
                expected: n * nv,
                nworlds: n,
                per_world: nv,
            });
        }
        crate::sim::check_rows("action gains", &gains, nv).map_err(BatchError::Input)?;
        self.action_gain = Some(gains);
        Ok(())
    }
    pub fn reset_times(&mut self) {
        self.times = BatchTimes::default();
    }

    /// Steps every world once under joint torques `actions`, (nworlds, nv)
    /// flat, row-major (world after world).
    pub fn step(&mut self, actions: &[f64]) -> Result<BatchStepReport, BatchError> {
        self.step_active(actions, None)
    }

    /// Steps every world once under the actuators' controls `ctrl`,
    /// (nworlds, nu) flat, row-major (see [`crate::sim::actuator_forces`]).
    /// The action gains do not apply to controls.
    pub fn step_controls(&mut self, ctrl: &[f64]) -> Result<BatchStepReport, BatchError> {
        self.step_controls_active(ctrl, None)
    }

    /// Like [`Self::step_controls`], stepping only the worlds whose `active`
    /// entry is true (see [`Self::step_active`]).
    pub fn step_controls_active(
        &mut self,
        ctrl: &[f64],
        active: Option<&[bool]>,
    ) -> Result<BatchStepReport, BatchError> {
        self.step_inputs(ctrl, true, active, Record::Nothing, 1)
    }

    /// `repeats` steps of the worlds whose `active` entry is true (`None`:
    /// all) under the same controls (nworlds, nu): a task's frame skip. On
    /// the device ([`Backend::Gpu`]) the state is read back once, after
    /// the last. A world that fails sits out the rest and keeps the state
    /// it failed from; the report counts contacts and solves of the last
    /// step and every failure.
    pub fn step_controls_repeated(
        &mut self,
        ctrl: &[f64],
        repeats: usize,
        active: Option<&[bool]>,
    ) -> Result<BatchStepReport, BatchError> {
        self.step_inputs(ctrl, true, active, Record::Nothing, repeats)
    }

    /// [`Self::step_controls_repeated`] under joint torques (nworlds, nv).
    pub fn step_repeated(
        &mut self,
        actions: &[f64],
        repeats: usize,
        active: Option<&[bool]>,
    ) -> Result<BatchStepReport, BatchError> {
        self.step_inputs(actions, false, active, Record::Nothing, repeats)
    }

    /// Like [`Self::step`], stepping only the worlds whose `active` entry is
    /// true (nworlds); the others are left as they are and not reported
    /// (their actions are not read). `None`: every world.
    pub fn step_active(
        &mut self,
        actions: &[f64],
        active: Option<&[bool]>,
    ) -> Result<BatchStepReport, BatchError> {
        self.step_inputs(actions, false, active, Record::Nothing, 1)
    }

    /// Torques (nworlds, nv) or controls (nworlds, nu) for the active
    /// worlds, `repeats` steps (at least 1; 1 when recording).
    fn step_inputs(
        &mut self,
        actions: &[f64],
        controls: bool,
        active: Option<&[bool]>,
        record: Record,
        repeats: usize,
    ) -> Result<BatchStepReport, BatchError> {
        if repeats == 0 {
            return Err(BatchError::Input(SimError::InvalidParameter {
                name: "repeats",
                reason: "must be at least 1 step".into(),
            }));
        }
        if record != Record::Nothing {
            crate::sim::check_differentiable(&self.model)
                .map_err(|error| BatchError::Sim { world: 0, error })?;
            self.leave_resident("derivatives are taken on the host-prepared path")?;
        }
        let n = self.worlds.len();
        // Values per world: nu controls or nv torques.
        let width = if controls {
            self.model.nu()
        } else {
            self.model.nv
        };
        if let Some(a) = active
            && a.len() != n
        {
            return Err(BatchError::DimensionMismatch {
                what: "active",
                got: a.len(),
                expected: n,
                nworlds: n,
                per_world: 1,
            });
        }
        if actions.len() != n * width {
            return Err(BatchError::DimensionMismatch {
                what: if controls { "controls" } else { "actions" },
                got: actions.len(),
                expected: n * width,
                nworlds: n,
                per_world: width,
            });
        }
        self.flush_resident_inputs()?;
        let start = Instant::now();
        let gains = self.action_gain.as_deref();
        // A resident step overwrites the constraint forces of the worlds
        // it steps: their buffers are kept, not reallocated every step.
        let resident = self.backend == Backend::Gpu && self.resident.is_some();
        // On rayon's threads (but for `cpu1`, which keeps to one core): at
        // 65 536 worlds a serial pass over them took milliseconds of a
        // resident step (H100 host, 2026-11-26).
        let serial = self.backend == Backend::CpuSingle;
        let prepare = |(w, world): (usize, &mut World)| {
            let a = &actions[w * width..(w + 1) * width];
            world.fallback = None;
            world.step = if active.is_some_and(|act| !act[w]) {
                WorldStep::Inactive
            } else {
                // Non-finite actions are refused, once, by the world's
                // simulator when it prepares the step (`tau` or `ctrl`).
                WorldStep::Stepping { contacts: 0 }
            };
            world.controls = controls;
            if world.step.is_stepping() && !resident {
                world.constraint_force = None;
            }
            // Kept (their buffers) when asked for, dropped otherwise.
            world.record = record;
            match (&mut world.jacobians, record != Record::Nothing) {
                (None, true) => world.jacobians = Some(StepJacobians::default()),
                (Some(_), false) => world.jacobians = None,
                _ => {}
            }
            if controls {
                world.ctrl.copy_from_slice(a);
            } else {
                for k in 0..width {
                    world.tau[k] = a[k] * gains.map_or(1.0, |g| g[w * width + k]);
                }
            }
        };
        if serial {
            self.worlds.iter_mut().enumerate().for_each(prepare);
        } else {
            self.worlds.par_iter_mut().enumerate().for_each(prepare);
        }
        let mut times = BatchTimes::default();
        match self.backend {
            Backend::Gpu if self.resident.is_some() => self.step_resident(&mut times, repeats)?,
            _ => {
                for r in 0..repeats {
                    if self.keep_start && r + 1 == repeats {
                        let keep = |world: &mut World| {
                            if world.step.is_stepping() {
                                world.keep_start();
                            }
                        };
                        if serial {
                            self.worlds.iter_mut().for_each(keep);
                        } else {
                            self.worlds.par_iter_mut().for_each(keep);
                        }
                    }
                    match self.backend {
                        Backend::CpuSingle => {
                            let t = Instant::now();
                            self.worlds.iter_mut().for_each(step_on_cpu);
                            times.cpu_step += t.elapsed();
                        }
                        Backend::CpuParallel => {
                            let t = Instant::now();
                            self.worlds.par_iter_mut().for_each(step_on_cpu);
                            times.cpu_step += t.elapsed();
                        }
                        Backend::Gpu | Backend::GpuSolve => self.step_on_gpu(&mut times)?,
                    }
                }
            }
        }
        times.total = start.elapsed();
        self.times.accumulate(&times);
        // Per thread, then merged, in world order (rayon's reduce keeps the
        // order of its items; `par_iter_mut`: a world's simulator is Send,
        // not Sync). A small tally, added to in place: moving the whole
        // report through a fold cost `cpu1` a tenth of a cartpole step.
        let tally = if serial {
            let mut t = Tally::default();
            for (w, world) in self.worlds.iter().enumerate() {
                t.add(w, world);
            }
            t
        } else {
            self.worlds
                .par_iter_mut()
                .enumerate()
                .fold(Tally::default, |mut t, (w, world)| {
                    t.add(w, world);
                    t
                })
                .reduce(Tally::default, Tally::merge)
        };
        let report = BatchStepReport {
            contacts: tally.contacts,
            max_contacts: tally.max_contacts,
            worlds_solved: tally.worlds_solved,
            iterations: tally.iterations,
            newton_steps: tally.newton_steps,
            finished: tally.finished,
            max_eps_abs: tally.max_eps_abs,
            unconverged: tally.unconverged,
            at_floor: tally.at_floor,
            fallbacks: tally.fallbacks,
            failed: tally.failed,
            overflowed_worlds: tally.overflowed_worlds,
            dropped_contacts: tally.dropped_contacts,
            grew: self.gpu.as_ref().and_then(|g| g.grew),
            times,
        };
        Ok(report)
    }
}

/// The solver kinds the GPU backend can run.
pub fn gpu_solver_available(kind: SolverKind) -> bool {
    crate::gpu::check_kernel(kind).is_ok()
}

#[cfg(test)]
mod tests {
    use super::gpu_step::grown_capacity;
    use super::*;

    #[test]
    fn gpu_buffers_grow_by_half_unless_that_would_not_fit_the_device() {
        let old = BatchCapacity::uniform(100, 8);
        let need = BatchCapacity {
            problems: 150,
            delassus_floats: 150 * 300,
            ..old
        };
        // Room to spare: half again what is needed, in the counts outgrown.
        let roomy = grown_capacity(&old, &need, |_| true);
        assert_eq!(roomy.problems, 225);
        assert_eq!(roomy.delassus_floats, 225 * 300);
        assert_eq!(roomy.contacts, old.contacts);
        // Half again over the device's limit: exactly what is needed.
        let limit = 200 * 300;
        let tight = grown_capacity(&old, &need, |c| c.delassus_floats <= limit);
        assert_eq!(tight.problems, 150);
        assert_eq!(tight.delassus_floats, 150 * 300);
        // With real limits: a binding limit between the need and half again.
        let limits = wgpu::Limits {
            max_storage_buffer_binding_size: 4 * 200 * 300,
            ..Default::default()
        };
        let fits = |c: &BatchCapacity| {
            crate::gpu::check_capacity(
                &limits,
                "test",
                crate::contact::SolverKind::NcpPgs,
                c,
                Decomposition::Invocation,
            )
            .is_ok()
        };
        assert!(!fits(&roomy) && fits(&need));
        assert_eq!(grown_capacity(&old, &need, fits), tight);
    }
}
