//! The headless throughput benchmark behind `moreau bench`: scenes stepped
//! as batches of worlds on every backend, at several batch sizes.
//!
//! For each scene, batch size and backend, [`run`] builds a [`BatchSim`],
//! steps it `warmup` times (GPU pipelines compiled, buffers grown), then
//! `steps` timed times, and reports:
//!
//! - **throughput**: world steps per second, `nworlds × steps / wall`, the
//!   wall clock of the timed steps, actions included;
//! - **stages**: the wall time of one batch step split into the stages of
//!   [`moreau::counters::Stage`] (actions, free dynamics, collision,
//!   Delassus, pack, upload, solve, download, velocity update, integrate,
//!   other). The batch's own timers ([`BatchTimes`]) give the wall time of
//!   each section; a section that runs on rayon's threads (the GPU backend's
//!   host sections, every CPU step) is split among its stages in proportion
//!   to the per-world stage times ([`moreau::counters::StageTimes`]) summed
//!   over the worlds, which on several threads sum thread times: the split
//!   is a share, the section's total is a wall time. On the GPU backend the
//!   finishing section also holds the CPU solves of the problems the GPU
//!   flagged (counted in `fallbacks`), split between velocity update and
//!   integration;
//! - **contacts and solver**: contacts per world, iterations per solve, the
//!   largest final `ε_abs`, solves that hit the iteration cap, GPU
//!   fallbacks, failed worlds;
//! - **memory**: host bytes per world (resident memory after building and
//!   warming up the batch, minus before, over the worlds; the GPU backend's
//!   includes its context and, on a software adapter, the device buffers),
//!   the resident memory's growth over the timed steps (0 when stepping does
//!   not allocate), and the device bytes per world of the GPU buffers.
//!
//! The worlds start from the scene's initial state settled for
//! [`SceneBenchConfig::settle_steps`] on one world (so that a dropped robot
//! stands on its feet and has contacts while timed), with small
//! deterministic per-world perturbations of the controlled joints'
//! velocities so that the robots are not copies of one another (the same on
//! every backend). Actions are the
//! scene's controller (a PD for the robots), computed every step from each
//! world's state on the threads the backend steps with (rayon's for `gpu`
//! and `cpu`, the calling thread for `cpu1`), or random
//! ([`BenchActions::Random`], the states RL visits): each world's own draws,
//! the same on every backend ([`ActionDriver`]).
//!
//! A (backend, size) whose time, extrapolated from the same backend's
//! smaller sizes, would exceed [`SceneBenchConfig::budget`] is skipped, and
//! so are the larger sizes after it; the report says so. A size whose
//! worlds would not fit in the host's memory ends the benchmark with the
//! batch's error ([`BatchError::HostMemory`]: worlds, bytes per world,
//! total, available) before anything is allocated for it. Without a GPU
//! adapter the GPU backend is dropped with a note, unless it was the only
//! backend asked for ([`BenchError::GpuUnavailable`]).

use moreau::batch::{Backend, BatchError, BatchOptions, BatchSim, GPU_MIN_TOLERANCE};
use moreau::contact::SolverKind;
use moreau::counters::{BatchTimes, Stage, StageSeconds, StageTimes};
use moreau::gpu::Decomposition;
use moreau::scenes::{self, Scene};
use moreau::sim::{SimParams, Simulator, State};
use serde::Serialize;
use std::path::Path;
use std::time::{Duration, Instant};
use thiserror::Error;

mod render;
pub use render::{plot, render};

/// What to measure.
#[derive(Clone, Debug)]
pub struct SceneBenchConfig {
    /// Built-in scene names or robot files (`.urdf`, `.xml`, `.mjcf`).
    pub scenes: Vec<String>,
    /// Batch sizes (worlds), run in increasing order.
    pub envs: Vec<usize>,
    pub backends: Vec<Backend>,
    /// Timed steps per run.
    pub steps: usize,
    /// Untimed steps per run before the timed ones.
    pub warmup: usize,
    /// Steps of one world, before the batch is built, from the scene's
    /// initial state to the state every world starts from.
    pub settle_steps: usize,
    /// Most seconds one (scene, backend, size) run may take, as estimated
    /// from the same backend's smaller sizes; larger runs are skipped.
    pub budget: Duration,
    pub solver: SolverKind,
    pub tolerance: f64,
    pub max_iterations: usize,
    /// GPU: chunks per step ([`BatchOptions::pipeline_chunks`]).
    pub pipeline_chunks: usize,
    /// GPU: [`BatchOptions::gpu_decomposition`].
    pub decomposition: Decomposition,
    /// GPU: [`BatchOptions::gpu_layout`].
    pub layout: moreau::gpu::Layout,
    /// GPU, resident: [`BatchOptions::gpu_chunk_worlds`].
    pub chunk_worlds: Option<usize>,
    /// What drives the worlds.
    pub actions: BenchActions,
}

/// What drives the benchmark's worlds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchActions {
    /// The scene's PD controller every step (zero torques without one).
    Controller,
    /// Random actions, redrawn every `period` steps (at least 1) from each
    /// world's own generator (`world_seed(seed, w)`: the same draws on every
    /// backend, whatever the threads): a model with actuators gets controls
    /// uniform in their control ranges (Gymnasium's action space); a
    /// PD-driven scene without actuators, the PD's targets moved by
    /// [`RANDOM_TARGET_SCALE`]` · u`, `u` uniform in `[−1, 1]` per joint
    /// (the built-in quadruped task's action space); a scene with neither
    /// runs passive.
    Random { seed: u64, period: usize },
}

/// The reach of random PD targets about the scene's reference (rad or m):
/// the built-in quadruped task's `action_scale`.
pub const RANDOM_TARGET_SCALE: f64 = 0.5;

/// How one scene's worlds get their inputs each step (see [`BenchActions`]).
#[derive(Clone, Debug)]
pub struct ActionDriver {
    kind: DriverKind,
    period: usize,
    /// Per world, its generator and its current draws (`width` each).
    rngs: Vec<moreau::math::Rng>,
    draws: Vec<f64>,
    width: usize,
    /// Per world, the step's torques (nv; controls are the draws).
    inputs: Vec<f64>,
    steps: usize,
}

#[derive(Clone, Debug)]
enum DriverKind {
    /// The scene's controller (or zero torques).
    Controller,
    /// Controls uniform in these ranges.
    Controls(Vec<(f64, f64)>),
    /// The scene's PD toward targets moved by the draws.
    Targets,
}

/// Every actuator's control range, or, naming the first without one,
/// why there is nothing to draw within (`what` leads the message).
pub fn control_ranges(model: &moreau::Model, what: &str) -> Result<Vec<(f64, f64)>, String> {
    model
        .actuators
        .iter()
        .map(|a| {
            a.ctrl_range.ok_or_else(|| {
                format!(
                    "{what}: actuator `{}` has no control range (ctrllimited), nothing to draw within",
                    a.name
                )
            })
        })
        .collect()
}

impl ActionDriver {
    /// The driver of `n` worlds of `scene`; refuses random actions on a
    /// model with an actuator that has no control range (nothing to draw
    /// within), naming it.
    pub fn new(scene: &Scene, actions: BenchActions, n: usize) -> Result<Self, String> {
        let (kind, seed, period) = match actions {
            BenchActions::Controller => (DriverKind::Controller, 0, 1),
            BenchActions::Random { seed, period } => {
                let model = &scene.model;
                let kind = if model.nu() > 0 {
                    DriverKind::Controls(control_ranges(model, "random actions")?)
                } else if scene.controller.is_some() {
                    DriverKind::Targets
                } else {
                    DriverKind::Controller
                };
                (kind, seed, period.max(1))
            }
        };
        let (width, input_width) = match &kind {
            DriverKind::Controller => (0, scene.model.nv),
            DriverKind::Controls(r) => (r.len(), 0),
            DriverKind::Targets => (
                scene.controller.as_ref().map_or(0, |c| c.dofs.len()),
                scene.model.nv,
            ),
        };
        Ok(ActionDriver {
            kind,
            period,
            rngs: (0..n)
                .map(|w| moreau::math::Rng::new(moreau::envs::world_seed(seed, w)))
                .collect(),
            draws: vec![0.0; n * width],
            width,
            inputs: vec![0.0; n * input_width],
            steps: 0,
        })
    }

    /// What drives the worlds, in words (the report's scene entry).
    pub fn describe(&self, scene: &Scene) -> String {
        match &self.kind {
            DriverKind::Controller if scene.controller.is_some() => {
                "the scene's PD controller, every step".into()
            }
            DriverKind::Controller => "none: zero torques (nothing to drive)".into(),
            DriverKind::Controls(r) => format!(
                "random controls of its {} actuators, uniform in their control ranges, redrawn every {} step(s), per world",
                r.len(),
                self.period
            ),
            DriverKind::Targets => format!(
                "random PD targets, the reference ± {RANDOM_TARGET_SCALE} (uniform) on its {} controlled joints, redrawn every {} step(s), per world",
                self.width, self.period
            ),
        }
    }

    /// Whether the inputs are actuator controls (else joint torques).
    pub fn controls(&self) -> bool {
        matches!(self.kind, DriverKind::Controls(_))
    }

    /// The next step's inputs of every world ((nworlds, nv) torques or
    /// (nworlds, nu) controls, see [`Self::controls`]) from their
    /// `states`; on rayon's threads when `parallel` (the same values).
    pub fn next(&mut self, scene: &Scene, states: &[&State], parallel: bool) -> &[f64] {
        use rayon::prelude::*;
        let redraw = self.width > 0 && self.steps.is_multiple_of(self.period);
        self.steps += 1;
        let (width, kind) = (self.width, &self.kind);
        let draw = |(d, rng): (&mut [f64], &mut moreau::math::Rng)| match kind {
            DriverKind::Controls(ranges) => {
                for (x, &(lo, hi)) in d.iter_mut().zip(ranges) {
                    *x = rng.range(lo, hi);
                }
            }
            _ => {
                for x in d.iter_mut() {
                    *x = RANDOM_TARGET_SCALE * rng.range(-1.0, 1.0);
                }
            }
        };
        if redraw {
            if parallel {
                self.draws
                    .par_chunks_mut(width)
                    .zip(self.rngs.par_iter_mut())
                    .for_each(draw);
            } else {
                self.draws
                    .chunks_mut(width)
                    .zip(self.rngs.iter_mut())
                    .for_each(draw);
            }
        }
        let nv = scene.model.nv;
        match kind {
            // (The draws are the controls.)
            DriverKind::Controls(_) => return &self.draws,
            DriverKind::Controller | DriverKind::Targets => {
                let draws = &self.draws;
                let one = |(w, tau): (usize, &mut [f64])| match (&scene.controller, kind) {
                    (Some(c), DriverKind::Targets) => {
                        c.torques_toward(states[w], &draws[w * width..(w + 1) * width], tau)
                    }
                    _ => scene.control(states[w], tau),
                };
                // (A model without dofs has no inputs: chunks of 0 are refused.)
                if nv > 0 && parallel {
                    self.inputs.par_chunks_mut(nv).enumerate().for_each(one);
                } else if nv > 0 {
                    self.inputs.chunks_mut(nv).enumerate().for_each(one);
                }
            }
        }
        &self.inputs
    }
}

impl Default for SceneBenchConfig {
    /// Quadruped, pyramid and cart-pole (contact-free: resident on the `gpu`
    /// backend) at 1, 16, 256 and 1024 worlds on every backend,
    /// 50 timed steps after 5 warm-up steps, a minute per run at most, NCP
    /// ADMM to `ε_abs` 1e-6 (the batch default) within 1000 iterations.
    fn default() -> Self {
        let o = BatchOptions::default();
        SceneBenchConfig {
            scenes: vec!["quadruped".into(), "pyramid".into(), "cartpole".into()],
            envs: vec![1, 16, 256, 1024],
            backends: Backend::ALL.to_vec(),
            steps: 50,
            warmup: 5,
            settle_steps: 500,
            budget: Duration::from_secs(60),
            solver: o.params.solver,
            tolerance: o.params.solver_settings.tolerance,
            max_iterations: o.params.solver_settings.max_iterations,
            pipeline_chunks: o.pipeline_chunks,
            decomposition: o.gpu_decomposition,
            layout: o.gpu_layout,
            chunk_worlds: o.gpu_chunk_worlds,
            actions: BenchActions::Controller,
        }
    }
}

/// Why a benchmark could not run.
#[derive(Debug, Error)]
pub enum BenchError {
    #[error("scene `{scene}`: {reason}")]
    Scene { scene: String, reason: String },
    #[error("invalid benchmark setting: {0}")]
    Config(String),
    #[error(
        "the GPU backend is unavailable: {0}; ask for `--backend cpu,cpu1` to run the CPU backends"
    )]
    GpuUnavailable(String),
    #[error("{scene}, backend {backend}, {nworlds} worlds: {error}")]
    Batch {
        scene: String,
        backend: Backend,
        nworlds: usize,
        error: BatchError,
    },
}

/// Memory of one run.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Memory {
    /// Resident memory after building and warming up the batch, minus
    /// before building it, over the worlds (Linux; `None` elsewhere). Pages
    /// are 4 KiB and the allocator reuses memory it already holds, so small
    /// batches read coarsely (0, or even a page less); large ones are exact
    /// to a few bytes per world.
    pub host_bytes_per_world: Option<f64>,
    /// Resident memory after the warm-up (KiB).
    pub host_rss_kib: Option<i64>,
    /// Growth of the resident memory over the timed steps (KiB; 0 when
    /// stepping does not allocate).
    pub host_rss_growth_kib: Option<i64>,
    /// GPU backend: device bytes of the solver's buffers, and per world.
    pub device_bytes: Option<u64>,
    pub device_bytes_per_world: Option<f64>,
    /// GPU backend, resident: how many chunks the worlds were split into
    /// (one unless the device's limits or `--gpu-chunk-worlds` split them),
    /// and the largest chunk's worlds.
    pub resident_chunks: Option<usize>,
    pub resident_chunk_worlds: Option<usize>,
}

/// Seconds per batch step in each of the resident step's stages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ResidentStageSeconds {
    /// The step kernel: actuators, dynamics, the joint-limit rows,
    /// collision and the contact problem's assembly.
    pub step_s: f64,
    /// The contact solve's dispatches (and, on an adapter with a loop
    /// limit, its later rounds by the host's clock).
    pub solve_s: f64,
    /// The velocity update and the integration.
    pub finish_s: f64,
}

impl ResidentStageSeconds {
    fn per_step(s: &moreau::counters::ResidentStages, steps: u64) -> Self {
        let k = 1.0 / steps.max(1) as f64;
        ResidentStageSeconds {
            step_s: s.step.as_secs_f64() * k,
            solve_s: s.solve.as_secs_f64() * k,
            finish_s: s.finish.as_secs_f64() * k,
        }
    }
}

/// The resident step's time per stage, measured after the throughput's
/// steps on a few more, each stage submitted alone and waited for
/// (`BatchSim::set_resident_stage_timing`): where a step's device time
/// goes, not how fast pipelined steps run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ResidentStageRow {
    /// The steps timed so.
    pub steps: u64,
    /// By the device's timestamp queries (`None`: the adapter has none).
    pub device: Option<ResidentStageSeconds>,
    /// By the host's clock from each stage's submission to its completion.
    pub host: ResidentStageSeconds,
}

/// The batch steps whose stages a resident row times after its timed
/// steps: at most this many, and no more once [`STAGE_TIMING_BUDGET`] is
/// spent (a software adapter's large batches take a second a step).
const STAGE_TIMING_STEPS: usize = 20;
const STAGE_TIMING_BUDGET: Duration = Duration::from_secs(2);

/// One (scene, backend, batch size) point.
#[derive(Clone, Debug, Default, Serialize)]
pub struct BenchRun {
    pub scene: String,
    pub backend: String,
    pub nworlds: usize,
    /// The GPU adapter, or the CPU threads.
    pub device: String,
    /// Precision of the solve and of the host stages.
    pub precision: String,
    /// Why the run was skipped (over the budget, ...); then no figures.
    pub skipped: Option<String>,
    /// Seconds the run was expected to take (from the smaller sizes).
    pub estimated_s: Option<f64>,
    /// Timed steps (batch steps) and their wall time.
    pub steps: usize,
    pub wall_s: f64,
    /// Building the batch and the warm-up steps.
    pub setup_s: f64,
    /// World steps per second: `nworlds × steps / wall_s`.
    pub steps_per_s: f64,
    /// Batch steps per second: `steps / wall_s`.
    pub batch_steps_per_s: f64,
    /// Seconds of one batch step by stage, and their shares.
    pub stage_seconds: StageSeconds,
    pub stage_shares: StageSeconds,
    /// The per-world stage timers of one batch step summed over the worlds
    /// (thread seconds: over `stage_seconds`' sections they show how well
    /// the threads were used).
    pub world_stage_seconds: StageSeconds,
    /// Contacts per world and step (mean), and the most in one world.
    pub contacts_per_world: f64,
    pub max_contacts: usize,
    /// Solves (world steps with contacts), their mean iteration count, the
    /// largest final `ε_abs`, and those that stopped at the iteration cap.
    pub solves: usize,
    pub iterations_per_solve: f64,
    /// `ncp-admm`'s finishers: semismooth Newton steps per solve (each a
    /// dense LU), and the share of solves an active-set polish or Newton's
    /// steps ended (`BatchStepReport::newton_steps`, `finished`).
    pub newton_steps_per_solve: f64,
    pub finished_share: f64,
    pub max_eps_abs: f64,
    pub unconverged: usize,
    /// f32 solves that ended short of the tolerance within f32's floor
    /// (`BatchStepReport::at_floor`), not counted in `unconverged`.
    pub at_floor: usize,
    /// GPU problems solved on the CPU instead, and the first reason.
    pub fallbacks: usize,
    pub first_fallback: Option<String>,
    /// World steps that failed (the world did not move), and the first reason.
    pub failed: usize,
    /// Resident world steps that found more contacts than the world has
    /// room for, and the contacts dropped (the deepest kept): counted,
    /// never silent.
    pub overflowed_worlds: usize,
    pub dropped_contacts: usize,
    pub first_failure: Option<String>,
    /// Times the GPU buffers grew (during warm-up and timed steps).
    pub gpu_buffer_growths: usize,
    /// GPU backend, per batch step: the device time of the solves' compute
    /// passes and of their readback copies (timestamp queries; `None`
    /// where the adapter has none), inside the `solve` stage's wall time.
    pub device_solve_s: Option<f64>,
    pub device_readback_s: Option<f64>,
    /// GPU backend, per batch step: dispatches, queue submissions and
    /// readback maps of the contact solves.
    pub dispatches_per_step: f64,
    /// Resident rows: the device's time per stage of a step (see
    /// [`ResidentStageRow`]).
    pub resident_stages: Option<ResidentStageRow>,
    pub submits_per_step: f64,
    pub maps_per_step: f64,
    /// Whether the worlds lived on the device (the `gpu` backend on a model
    /// the resident path runs); why not, for a `gpu` row that did not.
    pub resident: bool,
    pub notice: Option<String>,
    /// The host's CPU time per world step, summed over its threads and
    /// stages, packing included: resident, the host's own time in the
    /// steps (inputs, submit, read back; not its wait for the device); the
    /// host-prepared GPU path, the per-world stages' thread time plus the
    /// batch's pack, upload and download sections; the CPU backends, the
    /// per-world stages' thread time (the whole step). The benchmark's
    /// controller (the actions) is not counted.
    pub host_cpu_seconds_per_world_step: f64,
    pub memory: Memory,
}

/// A scene as benchmarked.
#[derive(Clone, Debug, Serialize)]
pub struct SceneInfo {
    pub name: String,
    /// `built-in` or the robot file's path.
    pub source: String,
    pub nq: usize,
    pub nv: usize,
    pub dt: f64,
    /// The scene's controller (`PD` or `none`).
    pub controller: String,
    /// What drove its worlds ([`ActionDriver::describe`]).
    pub actions: String,
    /// Contacts of the settled state every world starts from.
    pub settled_contacts: usize,
    /// Loader warnings (robot files).
    pub warnings: Vec<String>,
}

/// The GPU adapter, or why there is none.
#[derive(Clone, Debug, Default, Serialize)]
pub struct GpuInfo {
    pub requested: bool,
    pub available: bool,
    pub device: Option<String>,
    pub device_type: Option<String>,
    pub driver: Option<String>,
    /// A software adapter (lavapipe): its figures are not GPU figures.
    pub software: bool,
    pub unavailable_reason: Option<String>,
}

/// Settings shared by every run.
#[derive(Clone, Debug, Serialize)]
pub struct BenchSettings {
    pub solver: String,
    pub tolerance: f64,
    pub max_iterations: usize,
    pub warm_start: bool,
    pub steps: usize,
    pub warmup_steps: usize,
    pub settle_steps: usize,
    pub budget_s: f64,
    /// GPU: chunks of worlds per step, pipelined (1: one dispatch).
    pub pipeline_chunks: usize,
    /// GPU: one invocation or one workgroup per problem, or one lane per contact.
    pub decomposition: Decomposition,
    /// GPU: G packed problem after problem, or interleaved by size class.
    pub layout: moreau::gpu::Layout,
    /// GPU, resident: the most worlds per chunk asked for (none: as the
    /// device's limits allow).
    pub chunk_worlds: Option<usize>,
    pub envs: Vec<usize>,
    pub backends: Vec<String>,
    pub actions: String,
    pub random_actions: bool,
    pub initial_state: String,
    pub gpu_precision: String,
    pub cpu_precision: String,
}

/// The host.
#[derive(Clone, Debug, Serialize)]
pub struct HostInfo {
    pub os: String,
    pub arch: String,
    pub cpu: Option<String>,
    /// Threads of the parallel backends (rayon).
    pub threads: usize,
}

/// Throughput of one backend over another at one batch size.
#[derive(Clone, Debug, Serialize)]
pub struct Ratio {
    pub scene: String,
    pub nworlds: usize,
    pub backend: String,
    pub over: String,
    /// Batch size at which `over` was measured (its throughput barely
    /// depends on it when `over` is `cpu1`).
    pub over_nworlds: usize,
    pub ratio: f64,
}

/// Everything [`run`] measured.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    pub moreau_version: String,
    /// Seconds since the Unix epoch when the benchmark started.
    pub unix_time: u64,
    pub host: HostInfo,
    pub gpu: GpuInfo,
    pub settings: BenchSettings,
    pub scenes: Vec<SceneInfo>,
    pub runs: Vec<BenchRun>,
    /// GPU over one CPU core (`cpu1`), and all cores (`cpu`) over one.
    pub ratios: Vec<Ratio>,
    /// What the reader should know (GPU unavailable, skipped runs, software adapter).
    pub notes: Vec<String>,
    pub wall_s: f64,
}

/// What [`run`] tells its caller as it goes.
pub enum BenchEvent<'a> {
    /// The work ahead, in world steps (settling excluded).
    Start { world_steps: u64 },
    /// A notice worth printing now.
    Note(&'a str),
    /// A run begins.
    Begin {
        scene: &'a str,
        backend: Backend,
        nworlds: usize,
    },
    /// World steps done since the last event of this kind.
    Progress(u64),
    /// A run ended (measured or skipped).
    Done(&'a BenchRun),
}

/// Resident set size in KiB (Linux), after returning freed heap memory to
/// the system where the allocator allows it, so that consecutive runs do
/// not hide their allocations in the previous runs' freed memory.
fn rss_kib_trimmed() -> Option<i64> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: glibc's malloc_trim only releases free heap pages.
        unsafe {
            malloc_trim(0);
        }
    }
    crate::bench::solve::rss_kib()
}

fn cpu_model() -> Option<String> {
    let s = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    s.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|m| m.trim().to_string())
}

/// Loads a built-in scene by name or a robot file (a PD holds its loaded
/// posture, see [`scenes::from_loaded`]), with the loader's warnings.
pub fn load_scene(spec: &str) -> Result<(Scene, String, Vec<String>), BenchError> {
    let err = |reason: String| BenchError::Scene {
        scene: spec.to_string(),
        reason,
    };
    if scenes::SCENE_NAMES.contains(&spec) {
        let s = scenes::scene(spec).map_err(|e| err(e.to_string()))?;
        return Ok((s, "built-in".into(), Vec::new()));
    }
    let path = Path::new(spec);
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    if !(matches!(ext.as_deref(), Some("urdf" | "xml" | "mjcf")) || path.is_file()) {
        return Err(err(format!(
            "neither a built-in scene ({}) nor a robot file (.urdf, .xml, .mjcf)",
            scenes::SCENE_NAMES.join(", ")
        )));
    }
    let loaded = moreau::load::load_model_file(path, &moreau::load::LoadOptions::default())
        .map_err(|e| err(e.to_string()))?;
    let s = scenes::from_loaded(&loaded, false).map_err(|e| err(e.to_string()))?;
    Ok((s, spec.to_string(), loaded.warnings))
}

/// A deterministic per-world perturbation of the velocities of the joints
/// the scene's controller drives: each gets `± 0.02` rad/s (or m/s) times a
/// hash of (world, dof) in [-1, 1]. Other dofs (free bodies, the boxes of a
/// pyramid) are left alone: kicking resting stacks turns them into a harder
/// contact problem than the scene is.
fn perturbed(scene: &Scene, state: &State, world: usize) -> State {
    let mut s = state.clone();
    let Some(c) = &scene.controller else {
        return s;
    };
    for &(k, _) in &c.dofs {
        let mut h = (world as u64 + 1).wrapping_mul(0x9E3779B97F4A7C15) ^ (k as u64 + 1);
        h = h.wrapping_mul(0xBF58476D1CE4E5B9);
        h ^= h >> 31;
        let u = (h >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
        s.v[k] += 0.02 * u;
    }
    s
}

fn sum_world_times(batch: &BatchSim) -> StageTimes {
    let mut t = StageTimes::default();
    for w in 0..batch.nworlds() {
        if let Ok(s) = batch.simulator(w) {
            t.accumulate(&s.times);
        }
    }
    t
}

/// `b − a`, in seconds.
fn diff(a: &StageTimes, b: &StageTimes) -> StageSeconds {
    let mut d = StageSeconds::default();
    for (stage, t) in b.iter() {
        d.set(stage, t.saturating_sub(a.get(stage)).as_secs_f64());
    }
    d
}

/// Splits `wall` seconds in proportion to `weights` (evenly if they are all 0).
fn split(wall: f64, weights: &[f64]) -> Vec<f64> {
    let s: f64 = weights.iter().sum();
    if s > 0.0 {
        weights.iter().map(|w| wall * w / s).collect()
    } else {
        vec![wall / weights.len() as f64; weights.len()]
    }
}

/// The per-step stage times of a run from its batch times and the
/// per-world stage times (see the module doc).
fn stages(
    backend: Backend,
    resident: bool,
    steps: usize,
    wall: f64,
    actions: f64,
    bt: &BatchTimes,
    world: &StageSeconds,
) -> StageSeconds {
    use Stage::*;
    let k = 1.0 / steps.max(1) as f64;
    let mut s = StageSeconds::default();
    s.set(Actions, actions * k);
    // A parallel section's wall time, split among its stages in proportion
    // to the worlds' thread time in each.
    let mut spread = |wall: f64, parts: &[Stage]| {
        let w: Vec<f64> = parts.iter().map(|&p| world.get(p)).collect();
        for (&p, t) in parts.iter().zip(split(wall * k, &w)) {
            s.set(p, t);
        }
    };
    match backend {
        Backend::Gpu if resident => {
            // The host's own time (inputs, submit, read back), and its wait
            // for the device.
            s.set(Pack, bt.resident_host.as_secs_f64() * k);
            s.set(Solve, bt.resident_wait.as_secs_f64() * k);
        }
        Backend::Gpu | Backend::GpuSolve => {
            spread(
                bt.prepare.as_secs_f64(),
                &[FreeDynamics, Collision, Delassus],
            );
            spread(bt.finish.as_secs_f64(), &[VelocityUpdate, Integrate]);
            s.accumulate(&bt.gpu.seconds().scaled(k));
        }
        Backend::CpuParallel | Backend::CpuSingle => spread(
            bt.cpu_step.as_secs_f64(),
            &[
                FreeDynamics,
                Collision,
                Delassus,
                Solve,
                VelocityUpdate,
                Integrate,
            ],
        ),
    }
    s.set(Other, (wall * k - s.total()).max(0.0));
    s
}

/// One measured run, for the estimates: its worlds, its setup seconds, its
/// timed seconds, and the part of those that does not grow with the worlds
/// (the GPU's solve: a batch of 1 024 quadrupeds solves in about the time
/// of one on an H100, docs/gpu.md; 0 on the CPU backends).
#[derive(Clone, Copy, Debug)]
struct Measured {
    nworlds: usize,
    setup_s: f64,
    timed_s: f64,
    fixed_s: f64,
}

/// Seconds a run of `n` worlds should take, from the same backend's
/// measured runs: a line through the last two runs' totals (a fixed cost
/// plus a cost per world, slope at least 0), or, from one run, its setup
/// (dominated by fixed costs: the GPU context, pipelines) and its fixed
/// part plus the rest of its timed steps scaled by the worlds. Scaling the
/// GPU's solve too skipped every ADMM run past one world on an H100 (one
/// world's 1 ms solve taken for 1 024 worlds' 56 s).
fn estimate(points: &[Measured], n: usize) -> Option<f64> {
    match points {
        [] => None,
        [m] => Some(
            m.setup_s
                + m.fixed_s
                + (m.timed_s - m.fixed_s).max(0.0) * n as f64 / m.nworlds.max(1) as f64,
        ),
        [.., a, b] => {
            let (t1, t2) = (a.setup_s + a.timed_s, b.setup_s + b.timed_s);
            let slope = ((t2 - t1) / (b.nworlds as f64 - a.nworlds as f64)).max(0.0);
            Some(t2 + slope * (n as f64 - b.nworlds as f64))
        }
    }
}

/// Runs the benchmark (see the module doc), calling `event` as it goes.
pub fn run(
    cfg: &SceneBenchConfig,
    mut event: impl FnMut(BenchEvent),
) -> Result<BenchReport, BenchError> {
    let start = Instant::now();
    if cfg.steps == 0 {
        return Err(BenchError::Config("--steps must be at least 1".into()));
    }
    if cfg.envs.is_empty() || cfg.envs.contains(&0) {
        return Err(BenchError::Config(
            "--envs must list batch sizes of at least 1 world".into(),
        ));
    }
    if cfg.backends.is_empty() {
        return Err(BenchError::Config("no backend to run".into()));
    }
    if cfg.scenes.is_empty() {
        return Err(BenchError::Config("no scene to run".into()));
    }
    let mut envs = cfg.envs.clone();
    envs.sort_unstable();
    envs.dedup();
    let mut backends: Vec<Backend> = Vec::new();
    for b in &cfg.backends {
        if !backends.contains(b) {
            backends.push(*b);
        }
    }
    let mut notes = Vec::new();
    let mut params = BatchOptions::default().params;
    params.solver = cfg.solver;
    params.solver_settings.tolerance = cfg.tolerance;
    params.solver_settings.max_iterations = cfg.max_iterations;
    params
        .validate()
        .map_err(|e| BenchError::Config(e.to_string()))?;

    let mut scenes_out = Vec::new();
    let mut loaded = Vec::new();
    for spec in &cfg.scenes {
        let (scene, source, warnings) = load_scene(spec)?;
        // Settle one world from the scene's initial state.
        let mut p = params;
        p.dt = scene.dt;
        let mut sim = Simulator::new(scene.model.clone(), p).map_err(|e| BenchError::Scene {
            scene: spec.clone(),
            reason: e.to_string(),
        })?;
        let mut state = scene.state.clone();
        let mut tau = vec![0.0; scene.model.nv];
        let mut nc = 0;
        for k in 0..cfg.settle_steps {
            scene.control(&state, &mut tau);
            nc = sim
                .step(&mut state, &tau)
                .map_err(|e| BenchError::Scene {
                    scene: spec.clone(),
                    reason: format!("settling, step {k}: {e}"),
                })?
                .nc;
        }
        scenes_out.push(SceneInfo {
            name: scene.name.clone(),
            source,
            nq: scene.model.nq,
            nv: scene.model.nv,
            dt: scene.dt,
            controller: if scene.controller.is_some() {
                "PD"
            } else {
                "none"
            }
            .into(),
            actions: ActionDriver::new(&scene, cfg.actions, 0)
                .map_err(|reason| BenchError::Scene {
                    scene: spec.clone(),
                    reason,
                })?
                .describe(&scene),
            settled_contacts: nc,
            warnings,
        });
        loaded.push((scene, state));
    }

    // The GPU: probe the adapter once, drop the backend if there is none.
    let mut gpu = GpuInfo {
        requested: backends.iter().any(|b| b.uses_gpu()),
        ..Default::default()
    };
    if gpu.requested {
        let probe = moreau::gpu::check_kernel(cfg.solver)
            .and_then(|_| moreau::gpu::GpuContext::new())
            .map_err(|e| e.to_string())
            .and_then(|ctx| {
                if cfg.tolerance < GPU_MIN_TOLERANCE {
                    Err(format!(
                        "tolerance {:e} is below the {:e} the GPU's f32 kernels reach",
                        cfg.tolerance, GPU_MIN_TOLERANCE
                    ))
                } else {
                    Ok(ctx)
                }
            });
        match probe {
            Ok(ctx) => {
                let a = &ctx.adapter;
                gpu.available = true;
                gpu.device = Some(a.name.clone());
                gpu.device_type = Some(format!("{:?}", a.device_type));
                gpu.driver = Some(format!("{:?} {} {}", a.backend, a.driver, a.driver_info));
                gpu.software = a.is_software();
                if gpu.software {
                    let n = format!(
                        "the GPU backend runs on a software adapter ({}): its figures check the path, they are not GPU figures",
                        a.name
                    );
                    event(BenchEvent::Note(&n));
                    notes.push(n);
                }
            }
            Err(reason) => {
                if backends.iter().all(|b| b.uses_gpu()) {
                    return Err(BenchError::GpuUnavailable(reason));
                }
                let n = format!("GPU backend unavailable: {reason}; running the CPU backends only");
                event(BenchEvent::Note(&n));
                notes.push(n);
                gpu.unavailable_reason = Some(reason);
                backends.retain(|b| !b.uses_gpu());
            }
        }
    }

    // Saturating: an absurd batch size is refused by the batch (its memory
    // estimate, before anything is allocated), not overflowed here.
    let per_run = |n: usize| (n as u64).saturating_mul((cfg.warmup + cfg.steps) as u64);
    let total: u64 = envs
        .iter()
        .fold(0u64, |t, &n| t.saturating_add(per_run(n)))
        .saturating_mul((backends.len() * loaded.len()) as u64);
    event(BenchEvent::Start { world_steps: total });

    let threads = rayon::current_num_threads();
    let mut runs: Vec<BenchRun> = Vec::new();
    // The batches' notices (why `gpu` ran the host-prepared path), once each.
    let mut notices: Vec<String> = Vec::new();
    for (scene, settled) in &loaded {
        let mut measured: Vec<Vec<Measured>> = vec![Vec::new(); backends.len()];
        let mut skipping: Vec<Option<String>> = vec![None; backends.len()];
        for &n in &envs {
            for (bi, &backend) in backends.iter().enumerate() {
                event(BenchEvent::Begin {
                    scene: &scene.name,
                    backend,
                    nworlds: n,
                });
                let mut row = BenchRun {
                    scene: scene.name.clone(),
                    backend: backend.name().into(),
                    nworlds: n,
                    device: match backend {
                        Backend::Gpu | Backend::GpuSolve => gpu.device.clone().unwrap_or_default(),
                        Backend::CpuParallel => format!("CPU, {threads} threads"),
                        Backend::CpuSingle => "CPU, 1 thread".into(),
                    },
                    precision: match backend {
                        Backend::Gpu | Backend::GpuSolve => "f32 solve, f64 host stages".into(),
                        _ => "f64".into(),
                    },
                    steps: cfg.steps,
                    ..Default::default()
                };
                row.estimated_s = estimate(&measured[bi], n);
                if let Some(why) = &skipping[bi] {
                    row.skipped = Some(why.clone());
                } else if let Some(est) = row.estimated_s.filter(|&e| e > cfg.budget.as_secs_f64())
                {
                    let why = format!(
                        "estimated {est:.0} s > budget {:.0} s (from the smaller sizes)",
                        cfg.budget.as_secs_f64()
                    );
                    skipping[bi] = Some(format!("a smaller size was over the budget ({why})"));
                    row.skipped = Some(why);
                }
                if row.skipped.is_some() {
                    event(BenchEvent::Progress(per_run(n)));
                } else {
                    let t = Instant::now();
                    measure(
                        cfg,
                        &params,
                        scene,
                        settled,
                        backend,
                        n,
                        &mut row,
                        &mut event,
                        &mut notices,
                    )?;
                    let total = t.elapsed().as_secs_f64();
                    let fixed_s = match backend {
                        Backend::Gpu | Backend::GpuSolve => {
                            row.stage_seconds.get(Stage::Solve) * cfg.steps as f64
                        }
                        _ => 0.0,
                    };
                    measured[bi].push(Measured {
                        nworlds: n,
                        setup_s: total - row.wall_s,
                        timed_s: row.wall_s,
                        fixed_s: fixed_s.min(row.wall_s),
                    });
                }
                event(BenchEvent::Done(&row));
                runs.push(row);
            }
        }
    }

    notes.extend(notices);
    let skipped = runs.iter().filter(|r| r.skipped.is_some()).count();
    if skipped > 0 {
        notes.push(format!(
            "{skipped} run(s) skipped: estimated over the budget of {:.0} s per run (raise it with --budget)",
            cfg.budget.as_secs_f64()
        ));
    }
    let ratios = ratios(&runs);
    Ok(BenchReport {
        moreau_version: env!("CARGO_PKG_VERSION").into(),
        unix_time: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        host: HostInfo {
            os: std::env::consts::OS.into(),
            arch: std::env::consts::ARCH.into(),
            cpu: cpu_model(),
            threads,
        },
        gpu,
        settings: BenchSettings {
            solver: cfg.solver.name().into(),
            tolerance: cfg.tolerance,
            max_iterations: cfg.max_iterations,
            warm_start: params.warm_start,
            steps: cfg.steps,
            warmup_steps: cfg.warmup,
            settle_steps: cfg.settle_steps,
            budget_s: cfg.budget.as_secs_f64(),
            pipeline_chunks: cfg.pipeline_chunks,
            decomposition: cfg.decomposition,
            layout: cfg.layout,
            chunk_worlds: cfg.chunk_worlds,
            envs,
            backends: cfg.backends.iter().map(|b| b.name().to_string()).collect(),
            actions: match cfg.actions {
                BenchActions::Controller => "scene PD controller (zero torques for scenes without one), every step, per world, on the backend's threads (one for cpu1)".into(),
                BenchActions::Random { seed, period } => format!(
                    "random (seed {seed}, redrawn every {} step(s)): a robot file's actuators uniform in their control ranges, a PD scene's targets within ±{RANDOM_TARGET_SCALE} of its reference; each world's own draws, the same on every backend; see each scene's `actions`",
                    period.max(1)
                ),
            },
            random_actions: matches!(cfg.actions, BenchActions::Random { .. }),
            initial_state: format!(
                "the scene's initial state settled for {} steps on one world; per world, the velocities of the controlled joints perturbed by up to ±0.02 (deterministic; scenes without a controller: identical worlds)",
                cfg.settle_steps
            ),
            gpu_precision: "f32 contact solve (WGSL), f64 host stages".into(),
            cpu_precision: "f64".into(),
        },
        scenes: scenes_out,
        runs,
        ratios,
        notes,
        wall_s: start.elapsed().as_secs_f64(),
    })
}

/// Builds, warms up and times one batch, filling `row`.
#[allow(clippy::too_many_arguments)]
fn measure(
    cfg: &SceneBenchConfig,
    params: &SimParams,
    scene: &Scene,
    settled: &State,
    backend: Backend,
    n: usize,
    row: &mut BenchRun,
    event: &mut impl FnMut(BenchEvent),
    notices: &mut Vec<String>,
) -> Result<(), BenchError> {
    let fail = |error: BatchError| BenchError::Batch {
        scene: scene.name.clone(),
        backend,
        nworlds: n,
        error,
    };
    let setup = Instant::now();
    let rss0 = rss_kib_trimmed();
    let mut p = *params;
    p.dt = scene.dt;
    let options = BatchOptions {
        backend,
        params: p,
        pipeline_chunks: cfg.pipeline_chunks.max(1),
        gpu_decomposition: cfg.decomposition,
        gpu_layout: cfg.layout,
        gpu_chunk_worlds: cfg.chunk_worlds,
        ..Default::default()
    };
    let mut batch = BatchSim::new(scene.model.clone(), settled, n, &options).map_err(fail)?;
    // Said once per notice (it repeats for every size of a scene).
    if let Some(notice) = batch.notice()
        && !notices.iter().any(|n| n == notice)
    {
        event(BenchEvent::Note(notice));
        notices.push(notice.to_string());
    }
    for w in 0..n {
        batch
            .set_state(w, perturbed(scene, settled, w))
            .map_err(fail)?;
    }
    let mut driver =
        ActionDriver::new(scene, cfg.actions, n).map_err(|reason| BenchError::Scene {
            scene: scene.name.clone(),
            reason,
        })?;
    let mut action_time = Duration::ZERO;
    let mut step = |batch: &mut BatchSim, row: &mut BenchRun, timed: bool| {
        let t = Instant::now();
        // On the threads the backend steps with (the host's share of a GPU
        // step would otherwise be one core's PD loop).
        let controls = driver.controls();
        let states: Vec<&State> = batch.states().collect();
        let inputs = driver.next(scene, &states, backend != Backend::CpuSingle);
        if timed {
            action_time += t.elapsed();
        }
        let r = if controls {
            batch.step_controls(inputs)
        } else {
            batch.step(inputs)
        }
        .map_err(fail)?;
        row.gpu_buffer_growths += usize::from(r.grew.is_some());
        if timed {
            row.contacts_per_world += r.contacts as f64;
            row.max_contacts = row.max_contacts.max(r.max_contacts);
            row.solves += r.worlds_solved;
            row.iterations_per_solve += r.iterations as f64;
            row.newton_steps_per_solve += r.newton_steps as f64;
            row.finished_share += r.finished as f64;
            row.max_eps_abs = row.max_eps_abs.max(r.max_eps_abs);
            row.unconverged += r.unconverged;
            row.at_floor += r.at_floor;
        }
        row.fallbacks += r.fallbacks.len();
        if row.first_fallback.is_none() {
            row.first_fallback = r
                .fallbacks
                .first()
                .map(|(w, why)| format!("world {w}: {why}"));
        }
        row.failed += r.failed.len();
        row.overflowed_worlds += r.overflowed_worlds;
        row.dropped_contacts += r.dropped_contacts;
        if row.first_failure.is_none() {
            row.first_failure = r.failed.first().map(|(w, why)| format!("world {w}: {why}"));
        }
        event(BenchEvent::Progress(n as u64));
        Ok::<(), BenchError>(())
    };
    for _ in 0..cfg.warmup {
        step(&mut batch, row, false)?;
    }
    let rss1 = rss_kib_trimmed();
    row.setup_s = setup.elapsed().as_secs_f64();
    batch.reset_times();
    let world0 = sum_world_times(&batch);
    let t = Instant::now();
    for _ in 0..cfg.steps {
        step(&mut batch, row, true)?;
    }
    let wall = t.elapsed().as_secs_f64();
    let rss2 = crate::bench::solve::rss_kib();
    let world = diff(&world0, &sum_world_times(&batch));
    // The resident step's stages, on a few more steps (each stage
    // submitted alone and waited for: after the throughput's steps, which
    // it would slow).
    if batch.set_resident_stage_timing(true) {
        let timing = Instant::now();
        for k in 0..cfg.steps.clamp(1, STAGE_TIMING_STEPS) {
            if k > 0 && timing.elapsed() > STAGE_TIMING_BUDGET {
                break;
            }
            let controls = driver.controls();
            let states: Vec<&State> = batch.states().collect();
            let inputs = driver.next(scene, &states, true);
            if controls {
                batch.step_controls(inputs)
            } else {
                batch.step(inputs)
            }
            .map_err(fail)?;
        }
        row.resident_stages = batch.resident_stage_times().map(|t| ResidentStageRow {
            steps: t.steps,
            device: t
                .device_measured
                .then(|| ResidentStageSeconds::per_step(&t.device, t.steps)),
            host: ResidentStageSeconds::per_step(&t.host, t.steps),
        });
        batch.set_resident_stage_timing(false);
    }

    row.wall_s = wall;
    row.steps_per_s = (n * cfg.steps) as f64 / wall;
    row.batch_steps_per_s = cfg.steps as f64 / wall;
    // After the warm-up: a batch may have left the device (said in its notice).
    row.resident = batch.is_resident();
    row.notice = batch.notice().map(str::to_string);
    if row.resident {
        row.precision = "f32 whole step on the device (resident)".into();
    }
    row.stage_seconds = stages(
        backend,
        row.resident,
        cfg.steps,
        wall,
        action_time.as_secs_f64(),
        &batch.times,
        &world,
    );
    row.stage_shares = row.stage_seconds.shares();
    let per_world_step = 1.0 / (n * cfg.steps) as f64;
    let bt = &batch.times;
    row.host_cpu_seconds_per_world_step = per_world_step
        * if row.resident {
            bt.resident_host.as_secs_f64()
        } else if backend.uses_gpu() {
            let g = bt.gpu.seconds();
            world.total() + g.get(Stage::Pack) + g.get(Stage::Upload) + g.get(Stage::Download)
        } else {
            world.total()
        };
    if backend.uses_gpu() && !row.resident {
        let d = &batch.times.device;
        let k = 1.0 / cfg.steps as f64;
        row.device_solve_s = d.measured.then_some(d.solve.as_secs_f64() * k);
        row.device_readback_s = d.measured.then_some(d.readback.as_secs_f64() * k);
        row.dispatches_per_step = d.dispatches as f64 * k;
        row.submits_per_step = d.submits as f64 * k;
        row.maps_per_step = d.maps as f64 * k;
    }
    row.world_stage_seconds = world.scaled(1.0 / cfg.steps as f64);
    row.contacts_per_world /= (n * cfg.steps) as f64;
    row.iterations_per_solve /= row.solves.max(1) as f64;
    row.newton_steps_per_solve /= row.solves.max(1) as f64;
    row.finished_share /= row.solves.max(1) as f64;
    if let Some(name) = batch.device_name() {
        row.device = name;
    }
    let device = batch.resident_device_bytes().or_else(|| {
        batch
            .gpu_capacity()
            .zip(cfg.solver.kernel())
            .map(|(c, k)| c.device_bytes(k))
    });
    row.memory = Memory {
        host_bytes_per_world: match (rss0, rss1) {
            (Some(a), Some(b)) => Some((b - a) as f64 * 1024.0 / n as f64),
            _ => None,
        },
        host_rss_kib: rss1,
        host_rss_growth_kib: match (rss1, rss2) {
            (Some(a), Some(b)) => Some(b - a),
            _ => None,
        },
        device_bytes: device,
        device_bytes_per_world: device.map(|d| d as f64 / n as f64),
        resident_chunks: batch.resident_chunk_sizes().map(|c| c.len()),
        resident_chunk_worlds: (batch.resident_chunk_sizes()).and_then(|c| c.into_iter().max()),
    };
    Ok(())
}

/// GPU over one core and over all cores, and all cores over one core, at
/// each batch size where both ran; `cpu1` at a smaller size stands in when it was skipped (its
/// throughput barely depends on the batch size), and the ratio says so.
fn ratios(runs: &[BenchRun]) -> Vec<Ratio> {
    let done = |r: &&BenchRun| r.skipped.is_none() && r.steps_per_s > 0.0;
    let mut out = Vec::new();
    for r in runs.iter().filter(done) {
        if r.backend == "cpu1" {
            continue;
        }
        let reference = runs
            .iter()
            .filter(done)
            .filter(|c| c.backend == "cpu1" && c.scene == r.scene && c.nworlds <= r.nworlds)
            .max_by_key(|c| c.nworlds);
        if let Some(c) = reference {
            out.push(Ratio {
                scene: r.scene.clone(),
                nworlds: r.nworlds,
                backend: r.backend.clone(),
                over: "cpu1".into(),
                over_nworlds: c.nworlds,
                ratio: r.steps_per_s / c.steps_per_s,
            });
        }
        // The GPU backends over all cores, at the same batch size.
        if r.backend.starts_with("gpu")
            && let Some(c) = runs
                .iter()
                .filter(done)
                .find(|c| c.backend == "cpu" && c.scene == r.scene && c.nworlds == r.nworlds)
        {
            out.push(Ratio {
                scene: r.scene.clone(),
                nworlds: r.nworlds,
                backend: r.backend.clone(),
                over: "cpu".into(),
                over_nworlds: c.nworlds,
                ratio: r.steps_per_s / c.steps_per_s,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{Measured, estimate};

    fn m(nworlds: usize, setup_s: f64, timed_s: f64, fixed_s: f64) -> Measured {
        Measured {
            nworlds,
            setup_s,
            timed_s,
            fixed_s,
        }
    }

    #[test]
    fn one_run_scales_only_what_grows_with_the_worlds() {
        // The H100's ADMM quadruped at one world: 55 steps of 1 ms, all of
        // it the solve. Scaled whole, 1 024 worlds were estimated at 56 s.
        let gpu = [m(1, 0.2, 0.055, 0.050)];
        let e = estimate(&gpu, 1024).unwrap();
        assert!((e - (0.2 + 0.050 + 0.005 * 1024.0)).abs() < 1e-12, "{e}");
        // The CPU backends have no fixed part: linear in the worlds.
        let cpu = [m(1, 0.0, 0.001, 0.0)];
        assert!((estimate(&cpu, 1000).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(estimate(&[], 10), None);
    }

    #[test]
    fn two_runs_give_a_line_that_never_falls() {
        let pts = [m(16, 0.1, 0.9, 0.5), m(256, 0.2, 2.8, 0.5)];
        // Totals 1.0 and 3.0: slope 2/240 per world.
        let e = estimate(&pts, 1024).unwrap();
        assert!((e - (3.0 + 2.0 / 240.0 * 768.0)).abs() < 1e-9, "{e}");
        let falling = [m(16, 0.1, 5.0, 0.0), m(256, 0.1, 1.0, 0.0)];
        assert!((estimate(&falling, 4096).unwrap() - 1.1).abs() < 1e-12);
    }
}
