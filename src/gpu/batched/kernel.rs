//! The interface every batched kernel implements: [`BatchKernel`]. A kernel
//! (`src/gpu/<kernel>.rs` with `shaders/<kernel>.wgsl`) owns its policy —
//! its constants, its parameters, its scratch, its entry points, how much
//! work one dispatch may do and how many dispatches a batch can need — so
//! that [`super::GpuSolver`] drives any kernel without knowing which.
//! Which solver runs on which kernel is said once, in the solver catalog
//! ([`crate::contact::SolverKind::spec`]).

use super::batch::{BatchCapacity, GpuParams};
use crate::contact::{Kernel, KernelModel, SolverKind, SolverSettings};
use crate::gpu::GpuError;
use crate::gpu::contract::WgslConst;

/// Whether a solver's dispatches must stay under a driver's loop limit
/// ([`crate::gpu::GpuContext::loop_limit`], probed when the context is created).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdapterClass {
    /// No loop limit was found: a solve runs in one dispatch.
    Gpu,
    /// The driver stops an invocation's loops (Mesa's lavapipe, past 65 535
    /// iterations; see [`CPU_ADAPTER_LOOP_BUDGET`]): solves are chunked.
    Cpu,
}

/// Loop iterations one invocation may spend per dispatch on a CPU adapter.
/// Mesa's llvmpipe / lavapipe (22.x) counts every loop iteration of an
/// invocation against a limit of 65 535 and silently leaves every loop once
/// it is reached; the kernels therefore split a solve into chunks that stay
/// well below it (the margin covers lanes that diverge into different branches).
pub const CPU_ADAPTER_LOOP_BUDGET: u64 = 45_000;

/// The shape of a batch, as a kernel sizes its dispatches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchShape {
    /// Contacts of the batch's largest problem.
    pub max_contacts: usize,
    /// Rows `m = 3·nc + nl` of the batch's largest problem.
    pub max_rows: usize,
    /// The most local updates of one sweep (`nc + nl`) over the batch.
    pub max_local_updates: usize,
    /// The largest iteration cap of its problems.
    pub max_iterations: u64,
}

/// A batched contact kernel.
pub trait BatchKernel: Sync {
    /// Its stem: `shaders/<name>.wgsl`, `src/gpu/<name>.rs`.
    fn name(&self) -> &'static str;
    /// Its files under `shaders/` (name, text), split by phase, in the
    /// order they are compiled.
    fn wgsl_files(&self) -> &'static [(&'static str, &'static str)];
    /// Its WGSL: its files, one after the other.
    fn wgsl(&self) -> String {
        self.wgsl_files()
            .iter()
            .map(|(_, text)| *text)
            .collect::<Vec<_>>()
            .join("\n")
    }
    /// Its own generated WGSL constants (workgroup sizes, tuning constants
    /// shared with its CPU twin), after the shared ones
    /// ([`super::shader::shared_constants`]).
    fn constants(&self) -> Vec<WgslConst>;
    /// Invocations per workgroup of its invocation-per-problem entry point.
    fn workgroup_size(&self) -> u32;
    /// The entry point for `decomposition`, if it has one.
    fn entry_point(&self, decomposition: Decomposition) -> Option<&'static str>;
    /// The most rows (`3·nc + nl`) per problem `decomposition`'s entry
    /// point holds (`None`: as many as the buffers hold).
    fn max_rows(&self, decomposition: Decomposition) -> Option<usize>;
    /// Invocations per workgroup of `decomposition`'s entry point.
    fn invocations_per_workgroup(&self, decomposition: Decomposition) -> u32;
    /// Workgroup memory `decomposition`'s entry point declares, in bytes,
    /// for problems of at most `max_rows` rows.
    fn workgroup_memory(&self, decomposition: Decomposition, max_rows: usize) -> u64;
    /// Values of the WGSL `override` constants of `decomposition`'s
    /// pipeline for problems of at most `max_rows` rows (none: their defaults).
    fn overrides(
        &self,
        _decomposition: Decomposition,
        _max_rows: usize,
    ) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
    /// The batch-wide parameters (`num_problems` and `chunk` are set by the solver).
    fn params(&self, model: KernelModel, settings: &SolverSettings) -> GpuParams;
    /// f32 of scratch (`work`, binding 7) it needs for `capacity`.
    fn work_floats(&self, capacity: &BatchCapacity) -> usize;
    /// How much one dispatch may do per problem (`GpuParams::chunk`).
    fn chunk(
        &self,
        adapter: AdapterClass,
        decomposition: Decomposition,
        model: KernelModel,
        settings: &SolverSettings,
        batch: BatchShape,
    ) -> u32;
    /// The most dispatches a batch can need with that chunk (a guard against a runaway loop).
    fn max_dispatches(&self, batch: BatchShape, chunk: u32) -> u64;
    /// Dispatches that finish every problem of the batch on an adapter
    /// without a loop limit, encoded back to back with no readback between
    /// them (a resident step's solve on a GPU): those after the last
    /// problem finishes return at once.
    fn dispatches_to_finish(&self, batch: BatchShape, chunk: u32) -> u64 {
        self.max_dispatches(batch, chunk)
    }
    /// Problems per workgroup of `decomposition`'s entry point: the
    /// workgroup's invocations with one per problem, else one (the lane
    /// kernel's vary with its segments: `pgs::lane_segments`).
    fn problems_per_workgroup(&self, decomposition: Decomposition) -> u32 {
        match decomposition {
            Decomposition::Invocation => self.workgroup_size(),
            _ => 1,
        }
    }
}

/// The rows a workgroup entry point's memory is sized for, for problems of
/// at most `rows` rows: 24 (8 contacts; 2.4 kB of ADMM's cache), or the
/// next of 32, 48, 64, 96, … (2^k and 3·2^(k−1)), at most 1.5 × `rows`.
/// The sizes are pipeline-overridable constants, and each distinct value is
/// a compile of the whole kernel (on lavapipe 5 to 15 s for the ADMM
/// kernel, measured 2026-11-28): batches of nearby sizes share one
/// pipeline, and the shader cache keeps it.
pub const fn row_bucket(rows: usize) -> usize {
    if rows == 0 {
        return 0;
    }
    if rows <= 24 {
        return 24;
    }
    let mut b = 32;
    loop {
        if rows <= b {
            return b;
        }
        if rows <= b + b / 2 {
            return b + b / 2;
        }
        b *= 2;
    }
}

/// The solvers with a GPU kernel, comma-separated.
pub fn gpu_solvers() -> String {
    SolverKind::names_where(|s| s.gpu.is_some())
}

/// The kernel that runs `kind` and the model it is given; refuses a solver
/// without a GPU kernel.
pub fn check_kernel(kind: SolverKind) -> Result<(Kernel, KernelModel), GpuError> {
    kind.spec().gpu.ok_or_else(|| GpuError::UnsupportedSolver {
        solver: kind.name(),
        available: gpu_solvers(),
    })
}

/// How a batch's problems map onto the device's invocations
/// (`shaders/README.md`, "Decomposition").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decomposition {
    /// One invocation solves one whole problem (every kernel).
    #[default]
    Invocation,
    /// One workgroup of [`super::pgs::LANES`] invocations solves one problem, its
    /// λ, c (and G, up to [`super::pgs::WG_G_CACHE_ROWS`] rows) in workgroup
    /// memory: the PGS kernels, up to [`super::pgs::WG_MAX_CONTACTS`] contacts per problem.
    Workgroup,
    /// One lane per contact: a workgroup of [`super::pgs::LC_LANES`]
    /// invocations holds several problems side by side, each lane owning
    /// its contact's rows of λ and c (in workgroup memory) and making its
    /// local updates, Δλ shared through workgroup memory: the PGS kernels,
    /// up to [`super::pgs::LC_ROWS`] rows per problem.
    Lane,
}

impl Decomposition {
    pub const ALL: [Decomposition; 3] = [
        Decomposition::Invocation,
        Decomposition::Workgroup,
        Decomposition::Lane,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Decomposition::Invocation => "invocation",
            Decomposition::Workgroup => "workgroup",
            Decomposition::Lane => "lane",
        }
    }
}

impl std::str::FromStr for Decomposition {
    type Err = String;
    /// `invocation`, `workgroup` or `lane`.
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown decomposition `{s}` ({})",
                    Self::ALL.map(|d| d.name()).join(", ")
                )
            })
    }
}
