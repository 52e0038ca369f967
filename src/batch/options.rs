//! What a batch is made with: the backend that steps its worlds, its
//! options, and the errors that refuse a batch or a call.

use super::memory::{Available, Bytes};
use crate::error::SimError;
use crate::gpu::{Decomposition, GpuError};
use crate::sim::SimParams;
use std::fmt;
use std::str::FromStr;
use thiserror::Error;

/// Where a batch's worlds are stepped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The worlds on the GPU (f32) where the model allows it, else as
    /// [`Backend::GpuSolve`] (see the module doc).
    Gpu,
    /// One batched WGSL dispatch for all worlds' contact problems (f32),
    /// host stages on all cores.
    GpuSolve,
    /// The f64 CPU path on all cores (rayon), one world per task.
    CpuParallel,
    /// The f64 CPU path on one core: the reference.
    CpuSingle,
}

impl Backend {
    pub const ALL: [Backend; 4] = [
        Backend::Gpu,
        Backend::GpuSolve,
        Backend::CpuParallel,
        Backend::CpuSingle,
    ];
    /// The name used on the command line: `gpu`, `gpu-solve`, `cpu`, `cpu1`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Gpu => "gpu",
            Backend::GpuSolve => "gpu-solve",
            Backend::CpuParallel => "cpu",
            Backend::CpuSingle => "cpu1",
        }
    }
    /// Whether the backend uses a GPU adapter.
    pub fn uses_gpu(self) -> bool {
        matches!(self, Backend::Gpu | Backend::GpuSolve)
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Backend {
    type Err = BatchError;
    fn from_str(s: &str) -> Result<Self, BatchError> {
        Backend::ALL
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| BatchError::UnknownBackend(s.to_string()))
    }
}

/// A batch that cannot be built or stepped.
#[derive(Debug, Error)]
pub enum BatchError {
    #[error(
        "unknown backend `{0}`; backends: gpu, gpu-solve (host-prepared, GPU solve), cpu (all cores), cpu1 (one core)"
    )]
    UnknownBackend(String),
    #[error("the GPU backend is unavailable: {0}")]
    Gpu(#[from] GpuError),
    #[error("a batch needs at least one world")]
    NoWorlds,
    #[error("{what} has length {got}, expected {expected} ({nworlds} worlds × {per_world})")]
    DimensionMismatch {
        what: &'static str,
        got: usize,
        expected: usize,
        nworlds: usize,
        per_world: usize,
    },
    #[error("world {world} does not exist (the batch has {nworlds})")]
    NoSuchWorld { world: usize, nworlds: usize },
    #[error(
        "solver tolerance {tolerance:e} is below what the GPU's f32 kernels reach; use at least {min:e}"
    )]
    GpuTolerance { tolerance: f64, min: f64 },
    #[error(
        "world {world}: a world's model must have the batch model's structure (nq, nv, bodies, parents, geometries)"
    )]
    ModelStructure { world: usize },
    #[error("a tape of {got} worlds given to a batch of {nworlds}")]
    TapeSize { got: usize, nworlds: usize },
    #[error("{0}")]
    Input(SimError),
    #[error("the resident GPU worlds: {0}")]
    Resident(String),
    #[error("the GPU backend cannot step this model: {0}")]
    GpuUnsupported(String),
    #[error("the initial state: {0}")]
    InitialState(SimError),
    #[error("world {world}: {error}")]
    Sim { world: usize, error: SimError },
    #[error(
        "{nworlds} worlds do not fit in this host's memory: an estimated {} per world, {} in all, over the {} available ({}); ask for fewer worlds (the estimate, deliberately generous, counts each world's simulator, workspaces and contact problem, and on the GPU backend its share of the host-side batch)",
        Bytes(*.bytes_per_world as u128),
        Bytes(*.total),
        Bytes(.available.bytes as u128),
        .available.source
    )]
    HostMemory {
        nworlds: usize,
        bytes_per_world: u64,
        total: u128,
        available: Available,
    },
}

/// Options of a batch.
#[derive(Clone, Debug)]
pub struct BatchOptions {
    pub backend: Backend,
    /// Simulation parameters of every world (per-world changes:
    /// [`super::BatchSim::params_mut`]).
    pub params: SimParams,
    /// GPU: the most contacts one world's problem may have on the GPU;
    /// larger problems are solved on the CPU (and counted). Lowered to fit
    /// the joint-limit rows where the decomposition bounds a problem's rows
    /// (the workgroup kernels: 192 rows, 3 per contact, 1 per limit).
    pub max_contacts_per_world: usize,
    /// GPU: contacts per world the device buffers first have room for
    /// (they grow when a batch needs more).
    pub initial_contacts_per_world: usize,
    /// GPU: split each step into this many chunks of worlds, pipelined on
    /// two solvers: while one chunk is solved on the GPU, the host prepares
    /// the next and finishes the previous. 1: no overlap (one dispatch).
    pub pipeline_chunks: usize,
    /// GPU: how the problems map onto the device
    /// ([`crate::gpu::Decomposition`]; `Workgroup` and `Lane` for the PGS
    /// solvers only).
    pub gpu_decomposition: Decomposition,
    /// GPU: how G is laid out on the device ([`crate::gpu::Layout`]).
    pub gpu_layout: crate::gpu::Layout,
    /// GPU, worlds on the device: at most this many worlds per chunk
    /// (`None`: as many as the device's binding and dispatch limits allow;
    /// a batch over them is split, see [`crate::gpu::resident::ResidentChunks`]).
    pub gpu_chunk_worlds: Option<usize>,
}

/// The smallest solver tolerance the GPU backend accepts: its kernels work
/// in f32, whose rounding of `c = Gλ + g` stalls residuals near 1e-6 on
/// well-conditioned scenes (below it they run to their iteration cap).
pub const GPU_MIN_TOLERANCE: f64 = 1e-6;

impl Default for BatchOptions {
    /// CPU on all cores, [`SimParams`]' defaults with the solver tolerance
    /// at [`GPU_MIN_TOLERANCE`], so that every backend can run the same settings.
    fn default() -> Self {
        let mut params = SimParams::default();
        params.solver_settings.tolerance = GPU_MIN_TOLERANCE;
        BatchOptions {
            backend: Backend::CpuParallel,
            params,
            max_contacts_per_world: 64,
            initial_contacts_per_world: 8,
            pipeline_chunks: 1,
            gpu_decomposition: Decomposition::Invocation,
            gpu_layout: crate::gpu::Layout::Packed,
            gpu_chunk_worlds: None,
        }
    }
}

/// Sets the number of threads the CPU backends (and the GPU backends' host
/// stages) step worlds on, for the rest of the process: rayon's global
/// pool, which otherwise starts with one thread per core (or
/// `RAYON_NUM_THREADS`) at the first parallel step. A process whose cores
/// are rationed (an RL worker given `k` CPUs, one rank of several on a
/// machine) calls it first.
///
/// Errors: `threads` is 0, or the pool already runs with another count
/// (it starts once per process: at the first parallel step, or at an
/// earlier call); asking again for the count it has is no error.
pub fn set_threads(threads: usize) -> Result<(), ThreadsError> {
    if threads == 0 {
        return Err(ThreadsError::Zero);
    }
    match rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
    {
        Ok(()) => {
            let _ = THREADS_SET.set(threads);
            Ok(())
        }
        Err(_) if rayon::current_num_threads() == threads => Ok(()),
        Err(_) => Err(ThreadsError::Started {
            running: rayon::current_num_threads(),
            asked: threads,
        }),
    }
}

/// The number of threads worlds are stepped on: rayon's global pool's, as
/// [`set_threads`] set it, or else as the pool starts (or started) by
/// itself: `RAYON_NUM_THREADS` if set, one per core otherwise. Asking does
/// not start the pool (rayon's own query would, fixing its size).
pub fn threads() -> usize {
    if let Some(n) = THREADS_SET.get() {
        return *n;
    }
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1)
}

/// The count [`set_threads`] started the pool with.
static THREADS_SET: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

/// Why [`set_threads`] refused.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ThreadsError {
    #[error("the number of threads must be at least 1")]
    Zero,
    #[error(
        "the thread pool already runs {running} threads and cannot be resized to {asked}: it starts once per process (at the first parallel step, or the first call that sets it); set it before any batch steps, or set RAYON_NUM_THREADS before the process starts"
    )]
    Started { running: usize, asked: usize },
}
