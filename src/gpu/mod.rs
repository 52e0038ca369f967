//! The wgpu side of moreau: a [`GpuContext`] (adapter and device), the
//! packed [`batch`] layout of many contact problems, and the batched WGSL
//! solvers ([`GpuSolver`], kernels in `shaders/pgs.wgsl` and
//! `shaders/admm.wgsl`), each the f32 twin of a CPU solver of
//! [`crate::contact::solvers`], and the batched vector–Jacobian product of
//! the contact stage ([`vjp`], `shaders/vjp.wgsl`) for reverse-mode
//! gradients.
//!
//! Adapter choice: every adapter of the primary backends (Vulkan, Metal,
//! DX12; `WGPU_BACKEND=gl` or another list replaces them) is enumerated; the
//! environment variable `MOREAU_ADAPTER` (a case-insensitive substring of
//! the adapter's name, e.g. `llvmpipe` or `4090`) picks one, otherwise a
//! discrete GPU is preferred to an integrated one, then a virtual one, then
//! a CPU (software) one such as Mesa's lavapipe; ties go to Vulkan, then to
//! enumeration order. The device is requested with the adapter's own limits
//! (so that large batches can bind large buffers) after the few limits the
//! kernels need are checked ([`REQUIRED_STORAGE_BUFFERS`], the workgroup
//! size). Device loss and uncaptured errors (out of memory, validation) are
//! recorded by callbacks and returned as [`GpuError`] by the next call that
//! touches the device, never panics.
//!
//! Using it:
//!
//! ```no_run
//! use moreau::contact::{SolverKind, SolverSettings};
//! use moreau::gpu::{BatchCapacity, BatchOutput, GpuContext, GpuSolver};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let problems: Vec<moreau::contact::ContactProblem> = Vec::new();
//! let ctx = GpuContext::new()?;
//! // Buffers for 4096 problems of up to 12 contacts, reused by every solve.
//! let mut solver = GpuSolver::new(&ctx, SolverKind::NcpAdmm, BatchCapacity::uniform(4096, 12))?;
//! let settings = SolverSettings { tolerance: 1e-6, max_iterations: 500, ..Default::default() };
//! let mut out = BatchOutput::default();
//! solver.solve(&problems, &settings, &mut out)?; // or submit(..) … wait(..)
//! for i in 0..out.len() {
//!     let p = out.problem(i); // λ, c (f32), iterations, residuals, flags
//!     if p.flags() != 0 { /* NaN, not PSD, over capacity, diverged: see flag_names */ }
//! }
//! # Ok(()) }
//! ```
//!
//! The kernels run one invocation per problem, or (the PGS kernels, by
//! [`GpuSolver::with_decomposition`]) one workgroup per problem or one lane
//! per contact with several problems per workgroup ([`Decomposition`]).
//! Where the driver stops an invocation's loops (Mesa's lavapipe, the CI's
//! device, past 65 535 iterations; probed when the context is created,
//! [`GpuContext::loop_limit`]) they split a solve across dispatches (PGS:
//! a chunk of sweeps; ADMM: steps of a state machine within a loop
//! budget), and a canary loop flags a problem whose dispatch hit the limit
//! anyway ([`FLAG_LOOP_LIMIT`]); elsewhere a solve is one dispatch. A
//! round of dispatches and its readback are one submission and one map;
//! timestamp queries time it on the device where the adapter has them
//! ([`crate::counters::DeviceTimes`]). The design choices (layout, decomposition,
//! who factorizes `G + R + ρI`) and the measured f32 limits are recorded in
//! `shaders/README.md`; the lab's `bench::solve` measures throughput
//! against one CPU core, in f64 and (PGS, [`cpu_f32`]) in f32 (`moreau
//! bench solve`).

pub mod batched;
pub mod contract;
pub mod resident;
pub mod vjp;

// The batched solves' modules at their paths of before (`gpu::batch`, …).
pub use batched::{admm, batch, cpu_f32, kernel, pgs, registry, shader};

pub use batch::{
    BatchCapacity, FLAG_CONE_ROWS, FLAG_DIVERGED, FLAG_INVALID, FLAG_LOOP_LIMIT, FLAG_NOT_PSD,
    FLAG_OVER_CAPACITY, GpuContact, GpuParams, GpuProblem, GpuResult, HostBatch, InterleavedBatch,
    Layout, POLISH_MAX_UNKNOWNS, ROW_BILATERAL, ROW_CONE, ROW_UNILATERAL, flag_names, row_bound,
};
pub use batched::{BatchOutput, GpuSolver, ProblemOutput, Submission, check_capacity};
pub use kernel::{Decomposition, check_kernel, gpu_solvers};

use std::sync::{Arc, Mutex};
use thiserror::Error;

/// Storage buffers one kernel binds (problems, G, contacts, λ, c, results, work, active count).
pub const REQUIRED_STORAGE_BUFFERS: u32 = 8;

/// What can go wrong on the GPU path. Bad problems are not errors: they are
/// flagged per problem in [`BatchOutput`] while the rest of the batch is solved.
#[derive(Debug, Clone, Error, PartialEq)]
pub enum GpuError {
    #[error(
        "no GPU adapter found (install a Vulkan driver, e.g. Debian's mesa-vulkan-drivers for the software lavapipe)"
    )]
    NoAdapter,
    #[error("MOREAU_ADAPTER={wanted:?} matches no adapter; found: {available}")]
    NoMatchingAdapter { wanted: String, available: String },
    #[error("adapter `{adapter}`: {what} is {got}, the kernels need at least {needed}")]
    InsufficientLimit {
        adapter: String,
        what: &'static str,
        got: u64,
        needed: u64,
    },
    #[error("adapter `{adapter}`: requesting a device failed: {reason}")]
    RequestDevice { adapter: String, reason: String },
    #[error("GPU out of memory while {during}: {reason}")]
    OutOfMemory { during: String, reason: String },
    #[error("GPU device lost ({reason})")]
    DeviceLost { reason: String },
    #[error("GPU error while {during}: {reason}")]
    Gpu { during: String, reason: String },
    #[error(
        "batch over capacity: {what} is {got}, capacity {capacity} (over by {})",
        got - capacity
    )]
    CapacityExceeded {
        what: &'static str,
        got: u64,
        capacity: u64,
    },
    #[error(
        "capacity {what} = {bytes} bytes exceeds the adapter's {limit_name} of {limit} bytes (adapter `{adapter}`)"
    )]
    CapacityTooLarge {
        what: &'static str,
        bytes: u64,
        limit_name: &'static str,
        limit: u64,
        adapter: String,
    },
    #[error("solver `{solver}` has no GPU kernel (GPU solvers: {available})")]
    UnsupportedSolver {
        solver: &'static str,
        available: String,
    },
    #[error("solver `{solver}` has no f32 CPU twin (those with one: {available})")]
    NoF32Twin {
        solver: &'static str,
        available: String,
    },
    #[error(
        "`{solver}` has no kernel for the {decomposition} decomposition (the PGS kernels do: {pgs_solvers}); use the invocation decomposition",
        pgs_solvers = crate::contact::SolverKind::names_where(|s| matches!(s.gpu, Some((crate::contact::Kernel::Pgs, _))))
    )]
    NoWorkgroupKernel {
        solver: &'static str,
        decomposition: &'static str,
    },
    #[error(
        "the {decomposition} decomposition holds at most {max_rows} rows per problem in workgroup memory ({} contacts; 3 rows per contact, 1 per unilateral row); the capacity asks for {got} (over by {})",
        max_rows / 3,
        got - max_rows
    )]
    WorkgroupCapacity {
        decomposition: &'static str,
        max_rows: usize,
        got: usize,
    },
    #[error(
        "capacity of {problems} problems exceeds the {max} one dispatch of adapter `{adapter}` can address ({decomposition} decomposition)"
    )]
    DispatchCapacity {
        problems: u64,
        max: u64,
        adapter: String,
        decomposition: &'static str,
    },
    #[error("a batch is already in flight: wait for it before submitting another")]
    BatchInFlight,
    /// Invalid solver settings, or a CPU solve that failed (benchmarks).
    #[error("{0}")]
    Problem(#[from] crate::error::ProblemError),
    #[error("mapping the readback buffer failed: {0}")]
    Map(String),
}

/// Description of one adapter, for `moreau info` and error messages.
#[derive(Clone, Debug)]
pub struct AdapterSummary {
    pub name: String,
    pub device_type: wgpu::DeviceType,
    pub backend: wgpu::Backend,
    pub driver: String,
    pub driver_info: String,
    /// The adapter's subgroup (warp, wavefront, SIMD width) sizes, smallest and largest.
    pub subgroup_sizes: (u32, u32),
}

impl AdapterSummary {
    /// A CPU (software) adapter such as Mesa's lavapipe: its timings check
    /// the GPU path, they are not GPU figures.
    pub fn is_software(&self) -> bool {
        self.device_type == wgpu::DeviceType::Cpu
    }
}

impl std::fmt::Display for AdapterSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({:?}, {:?}, driver {} {})",
            self.name, self.device_type, self.backend, self.driver, self.driver_info
        )
    }
}

fn summary(info: &wgpu::AdapterInfo) -> AdapterSummary {
    AdapterSummary {
        name: info.name.clone(),
        device_type: info.device_type,
        backend: info.backend,
        driver: info.driver.clone(),
        driver_info: info.driver_info.clone(),
        subgroup_sizes: (info.subgroup_min_size, info.subgroup_max_size),
    }
}

/// Preference rank of a device type (lower is better).
fn type_rank(t: wgpu::DeviceType) -> u32 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Cpu => 3,
        wgpu::DeviceType::Other => 4,
    }
}

fn backend_rank(b: wgpu::Backend) -> u32 {
    match b {
        wgpu::Backend::Vulkan | wgpu::Backend::Metal | wgpu::Backend::Dx12 => 0,
        _ => 1,
    }
}

/// Errors recorded asynchronously by the device's callbacks.
#[derive(Default)]
struct ErrorSink {
    lost: Option<String>,
    uncaptured: Option<wgpu::Error>,
}

/// An adapter, its device and queue. Cheap to clone (wgpu handles are shared).
#[derive(Clone)]
pub struct GpuContext {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub adapter: AdapterSummary,
    /// The limits the device was created with (the adapter's).
    pub limits: wgpu::Limits,
    /// Every adapter found, in enumeration order.
    pub adapters: Vec<AdapterSummary>,
    /// The device times compute passes with timestamp queries
    /// (`wgpu::Features::TIMESTAMP_QUERY`, requested where the adapter has it).
    pub timestamps: bool,
    /// ... and copies too (`TIMESTAMP_QUERY_INSIDE_ENCODERS`).
    pub timestamps_in_encoders: bool,
    /// Nanoseconds per timestamp tick.
    pub timestamp_period_ns: f64,
    /// The loop iterations after which the driver stops an invocation's
    /// loops, where it does (Mesa's lavapipe: 65 535), found by
    /// [`probe_loop_limit`] when the context is created; the kernels then
    /// split solves into chunks under it. `None`: no limit found, each
    /// solve runs in one dispatch.
    pub loop_limit: Option<u32>,
    sink: Arc<Mutex<ErrorSink>>,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuContext")
            .field("adapter", &self.adapter)
            .finish()
    }
}

/// Every adapter of the primary backends (Vulkan, Metal, DX12), or of the
/// backends named by `WGPU_BACKEND` (e.g. `gl`).
pub fn enumerate_adapters() -> (wgpu::Instance, Vec<wgpu::Adapter>) {
    let backends = wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY);
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    let instance = wgpu::Instance::new(desc);
    let adapters = pollster::block_on(instance.enumerate_adapters(backends));
    (instance, adapters)
}

/// Index of the adapter to use among `infos`: if `wanted` is `#k`, the
/// `k`-th (from 0) in the order of preference (by device type, then backend,
/// then as listed: a node's GPUs, one per process, as `#{local rank}`);
/// else the first whose name contains `wanted` (case-insensitive) if given;
/// else the best by device type, then backend.
pub fn choose_adapter(infos: &[AdapterSummary], wanted: Option<&str>) -> Result<usize, GpuError> {
    if infos.is_empty() {
        return Err(GpuError::NoAdapter);
    }
    let available = || {
        infos
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join("; ")
    };
    let mut ranked: Vec<usize> = (0..infos.len()).collect();
    ranked.sort_by_key(|&i| {
        (
            type_rank(infos[i].device_type),
            backend_rank(infos[i].backend),
            i,
        )
    });
    if let Some(k) = wanted.and_then(|w| w.strip_prefix('#')) {
        return k
            .trim()
            .parse::<usize>()
            .ok()
            .and_then(|k| ranked.get(k).copied())
            .ok_or_else(|| GpuError::NoMatchingAdapter {
                wanted: format!("#{k}"),
                available: format!(
                    "{} adapter(s), `#0` to `#{}` in order of preference: {}",
                    infos.len(),
                    infos.len() - 1,
                    ranked
                        .iter()
                        .map(|&i| infos[i].to_string())
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            });
    }
    if let Some(w) = wanted.filter(|w| !w.is_empty()) {
        let lw = w.to_lowercase();
        return infos
            .iter()
            .position(|a| a.name.to_lowercase().contains(&lw))
            .ok_or_else(|| GpuError::NoMatchingAdapter {
                wanted: w.to_string(),
                available: available(),
            });
    }
    Ok(ranked[0])
}

impl GpuContext {
    /// The adapter named by `MOREAU_ADAPTER`, or the best one found.
    ///
    /// One device per process and adapter: the first call makes it, later
    /// calls share it (a lost device is replaced). Making and dropping a
    /// device per batch, NVIDIA's Vulkan driver stopped listing its adapter
    /// after about 28 in one process (H100, driver 580.159.04, 2026-11-26:
    /// `moreau bench` over 4 scenes × 4 sizes × 2 GPU backends).
    pub fn new() -> Result<Self, GpuError> {
        let wanted = std::env::var("MOREAU_ADAPTER").ok();
        Self::shared(wanted.as_deref())
    }

    /// The process's context for `wanted` (see [`GpuContext::new`]), made on
    /// first use.
    pub fn shared(wanted: Option<&str>) -> Result<Self, GpuError> {
        static SHARED: Mutex<Vec<(Option<String>, GpuContext)>> = Mutex::new(Vec::new());
        let mut shared = SHARED.lock().unwrap_or_else(|p| p.into_inner());
        shared.retain(|(_, ctx)| !ctx.is_lost());
        if let Some((_, ctx)) = shared.iter().find(|(w, _)| w.as_deref() == wanted) {
            return Ok(ctx.clone());
        }
        let ctx = Self::with_adapter(wanted)?;
        shared.push((wanted.map(str::to_string), ctx.clone()));
        Ok(ctx)
    }

    /// A context of its own, never shared (for a caller that may destroy
    /// its device, as a test of device loss does).
    pub fn unshared() -> Result<Self, GpuError> {
        let wanted = std::env::var("MOREAU_ADAPTER").ok();
        Self::with_adapter(wanted.as_deref())
    }

    /// Whether the device was lost (a lost device never comes back).
    pub fn is_lost(&self) -> bool {
        match self.sink.lock() {
            Ok(s) => s.lost.is_some(),
            Err(p) => p.into_inner().lost.is_some(),
        }
    }

    /// A context of its own (not shared) on the first adapter whose name
    /// contains `wanted` (case-insensitive), or on the best one.
    pub fn with_adapter(wanted: Option<&str>) -> Result<Self, GpuError> {
        let (_instance, adapters) = enumerate_adapters();
        let infos: Vec<AdapterSummary> = adapters.iter().map(|a| summary(&a.get_info())).collect();
        let index = choose_adapter(&infos, wanted)?;
        let adapter = &adapters[index];
        let chosen = infos[index].clone();
        let limits = adapter.limits();
        let need = |what, got: u64, needed: u64| {
            if got < needed {
                Err(GpuError::InsufficientLimit {
                    adapter: chosen.name.clone(),
                    what,
                    got,
                    needed,
                })
            } else {
                Ok(())
            }
        };
        need(
            "max_storage_buffers_per_shader_stage",
            limits.max_storage_buffers_per_shader_stage as u64,
            REQUIRED_STORAGE_BUFFERS as u64,
        )?;
        need(
            "max_compute_invocations_per_workgroup",
            limits.max_compute_invocations_per_workgroup as u64,
            registry::max_workgroup_size() as u64,
        )?;
        need(
            "max_compute_workgroup_size_x",
            limits.max_compute_workgroup_size_x as u64,
            registry::max_workgroup_size() as u64,
        )?;
        // Timestamp queries where the adapter has them (GPU timings are
        // reported beside wall times; nothing depends on them).
        let features = adapter.features()
            & (wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS);
        let desc = wgpu::DeviceDescriptor {
            label: Some("moreau"),
            required_features: features,
            required_limits: limits.clone(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&desc)).map_err(|e| {
            GpuError::RequestDevice {
                adapter: chosen.name.clone(),
                reason: e.to_string(),
            }
        })?;
        let sink = Arc::new(Mutex::new(ErrorSink::default()));
        {
            let sink = sink.clone();
            device.set_device_lost_callback(move |reason, message| {
                if let Ok(mut s) = sink.lock() {
                    s.lost = Some(format!("{reason:?}: {message}"));
                }
            });
        }
        {
            let sink = sink.clone();
            device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
                if let Ok(mut s) = sink.lock() {
                    s.uncaptured.get_or_insert(e);
                }
            }));
        }
        let timestamps = features.contains(wgpu::Features::TIMESTAMP_QUERY);
        let timestamp_period_ns = queue.get_timestamp_period() as f64;
        let loop_limit = probe_loop_limit(&device, &queue)?;
        Ok(GpuContext {
            device,
            queue,
            adapter: chosen,
            limits,
            adapters: infos,
            timestamps,
            timestamps_in_encoders: timestamps
                && features.contains(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS),
            timestamp_period_ns,
            loop_limit,
            sink,
        })
    }

    /// Returns (and clears) an error recorded by the device callbacks since
    /// the last check: device loss first, then any uncaptured error.
    pub fn take_error(&self, during: &str) -> Result<(), GpuError> {
        let mut s = match self.sink.lock() {
            Ok(s) => s,
            Err(p) => p.into_inner(),
        };
        if let Some(reason) = &s.lost {
            // Device loss is permanent: keep it recorded.
            return Err(GpuError::DeviceLost {
                reason: reason.clone(),
            });
        }
        match s.uncaptured.take() {
            None => Ok(()),
            Some(e) => Err(wgpu_error(during, e)),
        }
    }

    /// For tests: the context, or `None` (with a notice on stderr) when no
    /// adapter exists. With `MOREAU_REQUIRE_GPU=1` a missing adapter panics
    /// instead, so that CI cannot skip the GPU tests silently.
    pub fn for_tests() -> Option<Self> {
        match Self::new() {
            Ok(ctx) => Some(ctx),
            Err(e) => {
                if std::env::var("MOREAU_REQUIRE_GPU").is_ok_and(|v| v == "1") {
                    panic!("MOREAU_REQUIRE_GPU=1 but no usable GPU adapter: {e}");
                }
                eprintln!("notice: skipping a GPU test: {e}");
                None
            }
        }
    }
}

/// Loop iterations [`probe_loop_limit`] asks one invocation for.
pub const LOOP_PROBE_ITERATIONS: u32 = 200_000;

/// Runs one invocation of a loop of [`LOOP_PROBE_ITERATIONS`] iterations
/// (its trip count read from a buffer, so that no compiler folds it) and
/// returns how many ran, if fewer: the driver's loop limit (Mesa's
/// llvmpipe / lavapipe stops every loop of an invocation after 65 535
/// iterations in all). `None`: the loop ran to its end.
pub fn probe_loop_limit(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
) -> Result<Option<u32>, GpuError> {
    const SOURCE: &str = "
@group(0) @binding(0) var<storage, read_write> io: array<u32, 2>;
@compute @workgroup_size(1)
fn main() {
    let n = io[0];
    var k = 0u;
    loop {
        if (k >= n) {
            break;
        }
        k += 1u;
    }
    io[1] = k;
}
";
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("loop limit probe"),
        source: wgpu::ShaderSource::Wgsl(SOURCE.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("loop limit probe"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: wgpu::PipelineCompilationOptions::default(),
        cache: None,
    });
    let io = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("loop limit probe"),
        size: 8,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("loop limit probe readback"),
        size: 8,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("loop limit probe"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: io.as_entire_binding(),
        }],
    });
    queue.write_buffer(&io, 0, bytemuck::cast_slice(&[LOOP_PROBE_ITERATIONS, 0u32]));
    let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
        label: Some("loop limit probe"),
    });
    {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("loop limit probe"),
            timestamp_writes: None,
        });
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups(1, 1, 1);
    }
    encoder.copy_buffer_to_buffer(&io, 0, &readback, 0, 8);
    let index = queue.submit(Some(encoder.finish()));
    if let Some(e) = pollster::block_on(validation.pop()) {
        return Err(wgpu_error("probing the driver's loop limit", e));
    }
    let bytes = read_mapped(device, &readback, index, "probing the driver's loop limit")?;
    let ran = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
    Ok((ran < LOOP_PROBE_ITERATIONS).then_some(ran))
}

/// The contents of `readback` (a `MAP_READ` buffer) once the submission
/// `index` that fills it has run: maps it, waits, copies, unmaps.
pub(crate) fn read_mapped(
    device: &wgpu::Device,
    readback: &wgpu::Buffer,
    index: wgpu::SubmissionIndex,
    during: &str,
) -> Result<Vec<u8>, GpuError> {
    with_mapped(device, readback, index, during, |bytes| bytes.to_vec())
}

/// Waits for submission `index`, maps `readback` and gives its bytes to
/// `read` (no copy), then unmaps it.
pub(crate) fn with_mapped<T>(
    device: &wgpu::Device,
    readback: &wgpu::Buffer,
    index: wgpu::SubmissionIndex,
    during: &str,
    read: impl FnOnce(&[u8]) -> T,
) -> Result<T, GpuError> {
    let (tx, rx) = std::sync::mpsc::channel();
    readback.map_async(wgpu::MapMode::Read, .., move |r| {
        let _ = tx.send(r);
    });
    device
        .poll(wgpu::PollType::Wait {
            submission_index: Some(index),
            timeout: None,
        })
        .map_err(|e| GpuError::Gpu {
            during: during.to_string(),
            reason: e.to_string(),
        })?;
    map_outcome(&rx)?;
    let out = {
        let view = readback
            .get_mapped_range(..)
            .map_err(|e| GpuError::Map(e.to_string()))?;
        read(&view)
    };
    readback.unmap();
    Ok(out)
}

/// The outcome of a `map_async` whose callback sends into `rx` (after the
/// device was polled).
pub(crate) fn map_outcome(
    rx: &std::sync::mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>,
) -> Result<(), GpuError> {
    match rx.recv() {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(GpuError::Map(e.to_string())),
        Err(_) => Err(GpuError::Map("the map callback was dropped".into())),
    }
}

/// Maps a wgpu error to ours.
pub(crate) fn wgpu_error(during: &str, e: wgpu::Error) -> GpuError {
    match e {
        wgpu::Error::OutOfMemory { source } => GpuError::OutOfMemory {
            during: during.to_string(),
            reason: source.to_string(),
        },
        other => GpuError::Gpu {
            during: during.to_string(),
            reason: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str, t: wgpu::DeviceType, b: wgpu::Backend) -> AdapterSummary {
        AdapterSummary {
            name: name.into(),
            device_type: t,
            backend: b,
            driver: String::new(),
            driver_info: String::new(),
            subgroup_sizes: (32, 32),
        }
    }

    #[test]
    fn adapter_choice_prefers_discrete_and_honours_the_name() {
        use wgpu::{Backend as B, DeviceType as T};
        let infos = [
            info("llvmpipe (LLVM 19)", T::Cpu, B::Vulkan),
            info("Intel UHD 770", T::IntegratedGpu, B::Vulkan),
            info("NVIDIA RTX 4090", T::DiscreteGpu, B::Gl),
            info("NVIDIA RTX 4090", T::DiscreteGpu, B::Vulkan),
        ];
        assert_eq!(choose_adapter(&infos, None).unwrap(), 3);
        assert_eq!(choose_adapter(&infos, Some("LLVMPIPE")).unwrap(), 0);
        assert_eq!(choose_adapter(&infos[..2], None).unwrap(), 1);
        let e = choose_adapter(&infos, Some("radeon")).unwrap_err();
        assert!(e.to_string().contains("radeon") && e.to_string().contains("llvmpipe"));
        assert_eq!(choose_adapter(&[], None).unwrap_err(), GpuError::NoAdapter);
        // By rank in the order of preference: one GPU per process.
        let node = [
            info("llvmpipe (LLVM 19)", T::Cpu, B::Vulkan),
            info("NVIDIA H100", T::DiscreteGpu, B::Vulkan),
            info("NVIDIA H100", T::DiscreteGpu, B::Vulkan),
        ];
        assert_eq!(choose_adapter(&node, Some("#0")).unwrap(), 1);
        assert_eq!(choose_adapter(&node, Some("#1")).unwrap(), 2);
        assert_eq!(choose_adapter(&node, Some("#2")).unwrap(), 0);
        for bad in ["#3", "#x", "#"] {
            let e = choose_adapter(&node, Some(bad)).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("`#0` to `#2`"), "{e}");
        }
    }
}
