//! [`GpuSolver`]: the buffers of one batch capacity, one kernel's pipeline,
//! upload, dispatch and readback (wgpu's repeated-compute pattern: copy to
//! a staging buffer, map, poll, unmap), in one call ([`GpuSolver::solve_batch`])
//! or split ([`GpuSolver::submit`] then [`GpuSolver::wait`]) so that the host
//! can work while the device solves.

use super::batch::{BatchCapacity, BatchOutput, GpuContact, GpuParams, GpuProblem, GpuResult, tri};
use super::{GpuContext, GpuError, HostBatch, admm, pgs, wgpu_error};
use crate::contact::{ContactProblem, SolverKind, SolverSettings};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Invocations per workgroup of every kernel.
pub(crate) const WORKGROUP_SIZE: u32 = pgs::WORKGROUP_SIZE;
const _: () = assert!(pgs::WORKGROUP_SIZE == admm::WORKGROUP_SIZE);

/// The solvers with a GPU kernel.
pub const GPU_SOLVERS: &str = "lcp-pgs, ccp-pgs, raisim, raisim-ds, ncp-pgs, ccp-admm, ncp-admm";

/// Refuses a solver without a GPU kernel.
pub fn check_kernel(kind: SolverKind) -> Result<(), GpuError> {
    match kind {
        SolverKind::LcpPgs
        | SolverKind::CcpPgs
        | SolverKind::NcpPgs
        | SolverKind::Raisim
        | SolverKind::RaisimDs
        | SolverKind::CcpAdmm
        | SolverKind::NcpAdmm => Ok(()),
        other => Err(GpuError::UnsupportedSolver {
            solver: other.name(),
            available: GPU_SOLVERS,
        }),
    }
}

/// How a batch's problems map onto the device's invocations
/// (`shaders/README.md`, "Decomposition").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decomposition {
    /// One invocation solves one whole problem (every kernel).
    #[default]
    Invocation,
    /// One workgroup of [`pgs::LANES`] invocations solves one problem, its
    /// λ, c (and G, up to [`pgs::WG_G_CACHE_ROWS`] rows) in workgroup
    /// memory: the PGS kernels, up to [`pgs::WG_MAX_CONTACTS`] contacts per problem.
    Workgroup,
}

impl Decomposition {
    pub const ALL: [Decomposition; 2] = [Decomposition::Invocation, Decomposition::Workgroup];

    pub fn name(self) -> &'static str {
        match self {
            Decomposition::Invocation => "invocation",
            Decomposition::Workgroup => "workgroup",
        }
    }

    /// Refuses a decomposition `kind` or `capacity` does not fit.
    pub fn check(self, kind: SolverKind, capacity: &BatchCapacity) -> Result<(), GpuError> {
        if self == Decomposition::Invocation {
            return Ok(());
        }
        if matches!(kind, SolverKind::CcpAdmm | SolverKind::NcpAdmm) {
            return Err(GpuError::InvalidSetting(format!(
                "`{}` has no workgroup-per-problem kernel (the PGS kernels do: lcp-pgs, ccp-pgs, ncp-pgs, raisim, raisim-ds); use the invocation decomposition",
                kind.name()
            )));
        }
        if capacity.max_contacts_per_problem > pgs::WG_MAX_CONTACTS {
            return Err(GpuError::InvalidSetting(format!(
                "the workgroup decomposition holds at most {} contacts per problem in workgroup memory; the capacity asks for {} (over by {})",
                pgs::WG_MAX_CONTACTS,
                capacity.max_contacts_per_problem,
                capacity.max_contacts_per_problem - pgs::WG_MAX_CONTACTS
            )));
        }
        Ok(())
    }
}

impl std::str::FromStr for Decomposition {
    type Err = String;
    /// `invocation` or `workgroup`.
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| format!("unknown decomposition `{s}` (invocation, workgroup)"))
    }
}

/// Host-side timings of the last solve.
#[derive(Clone, Copy, Debug, Default)]
pub struct GpuTimings {
    /// Packing into wgpu's staging (`write_buffer`) and encoding.
    pub upload: Duration,
    /// From submit to the readback being mapped (transfer, solve, copy back).
    pub solve: Duration,
    /// Copying the mapped readback into the output.
    pub download: Duration,
}

/// Loop iterations one invocation may spend per dispatch on a CPU adapter.
/// Mesa's llvmpipe / lavapipe (22.x) counts every loop iteration of an
/// invocation against a limit of 65 535 and silently leaves every loop once
/// it is reached; the kernels therefore split a solve into chunks that stay
/// well below it (the margin covers lanes that diverge into different branches).
pub const CPU_ADAPTER_LOOP_BUDGET: u64 = 45_000;
/// ADMM's loop budget per problem and dispatch on a CPU adapter: lanes of
/// one SIMD batch that are in different phases run one after the other, so
/// the budget per lane is a fraction of the limit.
pub const CPU_ADAPTER_ADMM_BUDGET: u32 = 8_000;
/// ADMM's loop budget per problem and dispatch on a GPU.
pub const GPU_ADMM_BUDGET: u32 = 1 << 24;
/// Iterations per dispatch on a real GPU (bounded so that a long solve
/// never trips a driver's watchdog).
pub const GPU_CHUNK_ITERATIONS: u32 = 256;
/// Dispatches per round before the host checks whether problems remain.
const FIRST_ROUND: u32 = 4;
const MAX_ROUND: u32 = 64;

/// A submitted batch, to be passed to [`GpuSolver::wait`].
#[must_use = "a submission must be waited for"]
pub struct Submission {
    index: wgpu::SubmissionIndex,
    problems: usize,
    contacts: usize,
    mapped: mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>,
    started: Instant,
    /// Dispatches so far, dispatches of the next round, and the most any
    /// batch can need.
    dispatches: u64,
    round: u32,
    max_dispatches: u64,
}

struct Buffers {
    params: wgpu::Buffer,
    problems: wgpu::Buffer,
    delassus: wgpu::Buffer,
    contacts: wgpu::Buffer,
    lambda: wgpu::Buffer,
    c: wgpu::Buffer,
    results: wgpu::Buffer,
    work: wgpu::Buffer,
    active: wgpu::Buffer,
    readback: wgpu::Buffer,
    active_readback: wgpu::Buffer,
}

/// A batched GPU contact solver for one [`SolverKind`] and one [`BatchCapacity`].
pub struct GpuSolver {
    ctx: GpuContext,
    kind: SolverKind,
    decomposition: Decomposition,
    capacity: BatchCapacity,
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    buffers: Buffers,
    /// Headers of the batch in flight (copied into the output by `wait`).
    headers: Vec<GpuProblem>,
    declared_nc: Vec<u32>,
    pending: bool,
    timings: GpuTimings,
    host_batch: HostBatch,
    chunk_override: Option<u32>,
    /// Initial results of a batch with per-problem initial ρ (reused).
    start_results: Vec<GpuResult>,
}

fn storage_entry(binding: u32, read_only: bool) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

/// Bytes rounded up to a non-zero multiple of 16 (bindings must not be empty).
fn padded(bytes: u64) -> u64 {
    bytes.max(16).div_ceil(16) * 16
}

impl GpuSolver {
    /// Compiles `kind`'s kernel (one invocation per problem) and allocates
    /// buffers for `capacity`. Fails if `kind` has no GPU kernel, if a
    /// buffer would exceed the adapter's limits, or if the device runs out
    /// of memory.
    pub fn new(
        ctx: &GpuContext,
        kind: SolverKind,
        capacity: BatchCapacity,
    ) -> Result<Self, GpuError> {
        Self::with_decomposition(ctx, kind, capacity, Decomposition::Invocation)
    }

    /// [`Self::new`] with the given [`Decomposition`]; also fails if the
    /// decomposition does not fit `kind` or `capacity` ([`Decomposition::check`]).
    pub fn with_decomposition(
        ctx: &GpuContext,
        kind: SolverKind,
        capacity: BatchCapacity,
        decomposition: Decomposition,
    ) -> Result<Self, GpuError> {
        check_kernel(kind)?;
        decomposition.check(kind, &capacity)?;
        let source = match kind {
            SolverKind::CcpAdmm | SolverKind::NcpAdmm => admm::SOURCE,
            _ => pgs::SOURCE,
        };
        let is_admm = matches!(kind, SolverKind::CcpAdmm | SolverKind::NcpAdmm);
        let c = capacity.contacts as u64;
        let p = capacity.problems as u64;
        let sizes = [
            ("params", 32u64),
            ("problems", 32 * p),
            ("delassus", 4 * capacity.delassus_floats as u64),
            ("contacts", 32 * c),
            ("lambda", 12 * c),
            ("c", 12 * c),
            ("results", 80 * p),
            (
                "work",
                if is_admm {
                    4 * capacity.admm_work_floats() as u64
                } else {
                    16
                },
            ),
        ];
        let limits = &ctx.limits;
        for (what, bytes) in sizes {
            for (limit_name, limit) in [
                (
                    "max_storage_buffer_binding_size",
                    limits.max_storage_buffer_binding_size,
                ),
                ("max_buffer_size", limits.max_buffer_size),
            ] {
                if padded(bytes) > limit {
                    return Err(GpuError::CapacityTooLarge {
                        what,
                        bytes: padded(bytes),
                        limit_name,
                        limit,
                        adapter: ctx.adapter.name.clone(),
                    });
                }
            }
        }
        let per_dim = limits.max_compute_workgroups_per_dimension as u64;
        let max_problems = match decomposition {
            Decomposition::Invocation => per_dim * WORKGROUP_SIZE as u64,
            Decomposition::Workgroup => per_dim * per_dim,
        };
        if p > max_problems {
            return Err(GpuError::InvalidSetting(format!(
                "capacity of {p} problems exceeds the {max_problems} one dispatch of adapter `{}` can address ({} decomposition)",
                ctx.adapter.name,
                decomposition.name()
            )));
        }
        if decomposition == Decomposition::Workgroup {
            let got = limits.max_compute_workgroup_storage_size as u64;
            if got < pgs::WG_WORKGROUP_BYTES {
                return Err(GpuError::InsufficientLimit {
                    adapter: ctx.adapter.name.clone(),
                    what: "max_compute_workgroup_storage_size",
                    got,
                    needed: pgs::WG_WORKGROUP_BYTES,
                });
            }
        }
        let device = &ctx.device;
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let buffer = |label: &str, bytes: u64, usage: wgpu::BufferUsages| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: padded(bytes),
                usage,
                mapped_at_creation: false,
            })
        };
        let readback_bytes = 2 * 12 * c + 80 * p;
        let buffers = Buffers {
            params: buffer(
                "params",
                sizes[0].1,
                wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            ),
            problems: buffer("problems", sizes[1].1, storage),
            delassus: buffer("delassus", sizes[2].1, storage),
            contacts: buffer("contacts", sizes[3].1, storage),
            lambda: buffer("lambda", sizes[4].1, storage | wgpu::BufferUsages::COPY_SRC),
            c: buffer("c", sizes[5].1, storage | wgpu::BufferUsages::COPY_SRC),
            results: buffer(
                "results",
                sizes[6].1,
                storage | wgpu::BufferUsages::COPY_SRC,
            ),
            work: buffer("work", sizes[7].1, storage),
            active: buffer("active", 4, storage | wgpu::BufferUsages::COPY_SRC),
            active_readback: buffer(
                "active readback",
                4,
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            ),
            readback: buffer(
                "readback",
                readback_bytes,
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            ),
        };
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(kind.name()),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        });
        let mut entries = vec![wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        }];
        for b in 1..=8 {
            entries.push(storage_entry(b, b <= 3));
        }
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("contact batch"),
            entries: &entries,
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("contact batch"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(kind.name()),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some(match decomposition {
                Decomposition::Invocation => "main",
                Decomposition::Workgroup => "main_workgroup",
            }),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            cache: None,
        });
        let b = &buffers;
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("contact batch"),
            layout: &layout,
            entries: &[
                (0, &b.params),
                (1, &b.problems),
                (2, &b.delassus),
                (3, &b.contacts),
                (4, &b.lambda),
                (5, &b.c),
                (6, &b.results),
                (7, &b.work),
                (8, &b.active),
            ]
            .map(|(binding, buf)| wgpu::BindGroupEntry {
                binding,
                resource: buf.as_entire_binding(),
            }),
        });
        if let Some(e) = pollster::block_on(validation.pop()) {
            return Err(wgpu_error("creating the solver", e));
        }
        if let Some(e) = pollster::block_on(oom.pop()) {
            return Err(wgpu_error("allocating the batch buffers", e));
        }
        ctx.take_error("creating the solver")?;
        Ok(GpuSolver {
            ctx: ctx.clone(),
            kind,
            decomposition,
            capacity,
            pipeline,
            bind_group,
            buffers,
            headers: Vec::new(),
            declared_nc: Vec::new(),
            pending: false,
            timings: GpuTimings::default(),
            host_batch: HostBatch::new(capacity.max_contacts_per_problem),
            chunk_override: None,
            start_results: Vec::new(),
        })
    }

    pub fn kind(&self) -> SolverKind {
        self.kind
    }

    pub fn decomposition(&self) -> Decomposition {
        self.decomposition
    }

    pub fn capacity(&self) -> BatchCapacity {
        self.capacity
    }

    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    /// Overrides the work per problem and dispatch (`GpuParams::chunk`: PGS
    /// iterations, ADMM loop budget); `None` restores the automatic choice.
    /// Past the limit of a CPU adapter's loop limiter, problems come back
    /// flagged [`super::FLAG_LOOP_LIMIT`].
    pub fn set_chunk(&mut self, chunk: Option<u32>) {
        self.chunk_override = chunk.map(|c| c.max(1));
    }

    /// Host-side timings of the last completed solve.
    pub fn last_timings(&self) -> GpuTimings {
        self.timings
    }

    /// An empty [`HostBatch`] for this solver's per-problem capacity.
    pub fn new_batch(&self) -> HostBatch {
        HostBatch::new(self.capacity.max_contacts_per_problem)
    }

    /// Work per problem and dispatch for `batch` (`GpuParams::chunk`).
    /// PGS: iterations; on a CPU adapter, as many as the loop budget allows
    /// for the batch's largest problem (at least 1); on a GPU,
    /// [`GPU_CHUNK_ITERATIONS`]. ADMM: a loop budget, [`CPU_ADAPTER_ADMM_BUDGET`]
    /// or [`GPU_ADMM_BUDGET`].
    fn chunk(&self, batch: &HostBatch, settings: &SolverSettings) -> u32 {
        if let Some(c) = self.chunk_override {
            return c;
        }
        let cpu = self.ctx.adapter.device_type == wgpu::DeviceType::Cpu;
        if matches!(self.kind, SolverKind::CcpAdmm | SolverKind::NcpAdmm) {
            return if cpu {
                CPU_ADAPTER_ADMM_BUDGET
            } else {
                GPU_ADMM_BUDGET
            };
        }
        if !cpu {
            return GPU_CHUNK_ITERATIONS;
        }
        let nc = batch
            .problems
            .iter()
            .map(|p| p.nc as u64)
            .max()
            .unwrap_or(0);
        let m = 3 * nc;
        // Rows of c one invocation computes, and loop iterations of one
        // (G + R)λ product over them, unrolled by 4.
        let rows = match self.decomposition {
            Decomposition::Invocation => m,
            Decomposition::Workgroup => m.div_ceil(pgs::LANES as u64),
        };
        let mv = rows * (m / 4 + 8) + 8;
        let facets = if self.kind == SolverKind::LcpPgs && settings.pyramid_facets != 4 {
            settings.pyramid_facets as u64
        } else {
            0
        };
        // RaiSim's 1-D search: up to ~60 march and 100 regula falsi steps.
        let search = if matches!(self.kind, SolverKind::Raisim | SolverKind::RaisimDs) {
            170
        } else {
            0
        };
        let (fixed, per_iteration) = match self.decomposition {
            Decomposition::Invocation => (3 * mv + 4 * nc, mv + nc * (8 + 4 * facets + search)),
            // Lane 0 makes every local update; each lane updates its rows
            // of c after each contact (3 columns) and reduces the residuals.
            Decomposition::Workgroup => (
                3 * mv + tri(m as usize) as u64 / pgs::LANES as u64 + 2 * nc + 64,
                mv + nc * (8 + 4 * facets + search + 4 * rows + 2) + 2 * pgs::LANES as u64,
            ),
        };
        (CPU_ADAPTER_LOOP_BUDGET.saturating_sub(fixed) / per_iteration.max(1)).clamp(1, 1 << 16)
            as u32
    }

    fn kernel_params(&self, settings: &SolverSettings, n: u32, chunk: u32) -> GpuParams {
        let mut p = match self.kind {
            SolverKind::CcpAdmm | SolverKind::NcpAdmm => admm::params(self.kind, settings, n),
            _ => pgs::params(self.kind, settings, n),
        };
        p.chunk = chunk;
        p
    }

    /// Encodes `dispatches` dispatches of the kernel, the last one after the
    /// `active` counter is cleared, and the copy of that counter for readback.
    fn encode_round(&self, encoder: &mut wgpu::CommandEncoder, n: usize, dispatches: u32) {
        let (x, y) = match self.decomposition {
            Decomposition::Invocation => ((n as u32).div_ceil(WORKGROUP_SIZE), 1),
            Decomposition::Workgroup => {
                // One workgroup per problem, on a grid when n exceeds one dimension.
                let per_dim = self.ctx.limits.max_compute_workgroups_per_dimension.max(1);
                let x = (n as u32).min(per_dim);
                (x, (n as u32).div_ceil(x.max(1)))
            }
        };
        let b = &self.buffers;
        for last in [false, true] {
            if last {
                encoder.clear_buffer(&b.active, 0, None);
            }
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some(self.kind.name()),
                timestamp_writes: None,
            });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &self.bind_group, &[]);
            let count = if last { 1 } else { dispatches - 1 };
            for _ in 0..count {
                pass.dispatch_workgroups(x, y, 1);
            }
        }
        encoder.copy_buffer_to_buffer(&b.active, 0, &b.active_readback, 0, 4);
    }

    /// Submits `encoder` and maps the `active` counter's readback.
    fn submit_round(
        &self,
        encoder: wgpu::CommandEncoder,
    ) -> (
        wgpu::SubmissionIndex,
        mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>,
    ) {
        let index = self.ctx.queue.submit(Some(encoder.finish()));
        let (tx, rx) = mpsc::channel();
        self.buffers
            .active_readback
            .map_async(wgpu::MapMode::Read, 0..4, move |r| {
                let _ = tx.send(r);
            });
        (index, rx)
    }

    fn wait_for(
        &self,
        index: wgpu::SubmissionIndex,
        mapped: &mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>,
        during: &str,
    ) -> Result<(), GpuError> {
        let polled = self.ctx.device.poll(wgpu::PollType::Wait {
            submission_index: Some(index),
            timeout: None,
        });
        if polled.is_err() {
            // A lost device reports itself through its callback, which runs
            // during maintenance: poll once more so that the loss is named.
            let _ = self.ctx.device.poll(wgpu::PollType::Poll);
        }
        self.ctx.take_error(during)?;
        polled.map_err(|e| GpuError::Gpu {
            during: during.into(),
            reason: e.to_string(),
        })?;
        match mapped.recv() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(GpuError::Map(e.to_string())),
            Err(_) => Err(GpuError::Map("the map callback was dropped".into())),
        }
    }

    /// Uploads `batch` and submits the first round of its solve; the host
    /// may work until [`Self::wait`], which runs the remaining rounds.
    /// Refuses a batch over capacity (naming the excess) before anything is uploaded.
    pub fn submit(
        &mut self,
        batch: &HostBatch,
        settings: &SolverSettings,
    ) -> Result<Submission, GpuError> {
        if self.pending {
            return Err(GpuError::InvalidSetting(
                "a batch is already in flight: wait for it before submitting another".into(),
            ));
        }
        settings
            .validate()
            .map_err(|e| GpuError::InvalidSetting(e.to_string()))?;
        batch.check_capacity(&self.capacity)?;
        self.ctx.take_error("before submitting")?;
        let started = Instant::now();
        let n = batch.len();
        let chunk = self.chunk(batch, settings);
        let q = &self.ctx.queue;
        let b = &self.buffers;
        let write = |buf: &wgpu::Buffer, bytes: &[u8]| {
            if !bytes.is_empty() {
                q.write_buffer(buf, 0, bytes);
            }
        };
        write(
            &b.params,
            bytemuck::bytes_of(&self.kernel_params(settings, n as u32, chunk)),
        );
        write(&b.problems, bytemuck::cast_slice(&batch.problems));
        write(&b.delassus, bytemuck::cast_slice(&batch.delassus));
        write(
            &b.contacts,
            bytemuck::cast_slice::<GpuContact, u8>(&batch.contacts),
        );
        write(&b.lambda, bytemuck::cast_slice(&batch.lambda));
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("contact solve"),
            });
        // Every problem starts fresh (GpuResult::state = 0), from its
        // initial ρ when it has one (read by the ADMM kernel at state 0).
        if batch.initial_rho.iter().any(|&r| r > 0.0) {
            let start = &mut self.start_results;
            start.clear();
            start.resize(n, GpuResult::default());
            for (r, &rho) in start.iter_mut().zip(&batch.initial_rho) {
                r.rho = rho;
            }
            q.write_buffer(&b.results, 0, bytemuck::cast_slice(start));
        } else {
            encoder.clear_buffer(&b.results, 0, None);
        }
        let max_iterations = batch
            .problems
            .iter()
            .map(|p| p.max_iterations as u64)
            .max()
            .unwrap_or(0);
        // The most dispatches a batch can need (a guard against a runaway
        // loop): PGS advances every running problem by `chunk` iterations per
        // dispatch; ADMM by at least one step (see admm.wgsl).
        let max_dispatches = match self.kind {
            SolverKind::CcpAdmm | SolverKind::NcpAdmm => {
                let m = 3 * batch
                    .problems
                    .iter()
                    .map(|p| p.nc as u64)
                    .max()
                    .unwrap_or(0);
                64 + 2 * (24 + m + max_iterations * (3 + m / 5))
            }
            _ => 2 + max_iterations.div_ceil(chunk as u64),
        };
        let round = FIRST_ROUND.min(max_dispatches as u32).max(1);
        if n > 0 {
            self.encode_round(&mut encoder, n, round);
        }
        let (index, mapped) = self.submit_round(encoder);
        self.headers.clear();
        self.headers.extend_from_slice(&batch.problems);
        self.declared_nc.clear();
        self.declared_nc.extend_from_slice(&batch.declared_nc);
        self.pending = true;
        self.timings.upload = started.elapsed();
        Ok(Submission {
            index,
            problems: n,
            contacts: batch.contacts(),
            mapped,
            started: Instant::now(),
            dispatches: if n > 0 { round as u64 } else { 0 },
            round,
            max_dispatches,
        })
    }

    /// Runs the remaining rounds of `submission` and reads its results into
    /// `out` (reusing its allocations).
    pub fn wait(&mut self, submission: Submission, out: &mut BatchOutput) -> Result<(), GpuError> {
        self.pending = false;
        let n = submission.problems;
        let mut index = submission.index;
        let mut mapped = submission.mapped;
        let mut dispatches = submission.dispatches;
        let mut round = submission.round;
        loop {
            let waited = self.wait_for(index, &mapped, "solving");
            let active = match waited {
                Ok(()) => {
                    let a = {
                        let view = self
                            .buffers
                            .active_readback
                            .get_mapped_range(0..4)
                            .map_err(|e| GpuError::Map(e.to_string()));
                        view.map(|v| u32::from_le_bytes([v[0], v[1], v[2], v[3]]))
                    };
                    self.buffers.active_readback.unmap();
                    a?
                }
                Err(e) => return Err(e),
            };
            if active == 0 || n == 0 {
                break;
            }
            if dispatches >= submission.max_dispatches {
                return Err(GpuError::Gpu {
                    during: "solving".into(),
                    reason: format!(
                        "{active} problems still running after {dispatches} dispatches (the most a batch can need)"
                    ),
                });
            }
            round = (2 * round).min(MAX_ROUND);
            let this = (round as u64).min(submission.max_dispatches - dispatches) as u32;
            let mut encoder =
                self.ctx
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                        label: Some("contact solve round"),
                    });
            self.encode_round(&mut encoder, n, this);
            dispatches += this as u64;
            (index, mapped) = self.submit_round(encoder);
        }
        // Copy the results back.
        let m = 3 * submission.contacts;
        let vec_bytes = 4 * m as u64;
        let res_bytes = 80 * n as u64;
        let total = 2 * vec_bytes + res_bytes;
        let b = &self.buffers;
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("contact readback"),
            });
        if vec_bytes > 0 {
            encoder.copy_buffer_to_buffer(&b.lambda, 0, &b.readback, 0, vec_bytes);
            encoder.copy_buffer_to_buffer(&b.c, 0, &b.readback, vec_bytes, vec_bytes);
        }
        if res_bytes > 0 {
            encoder.copy_buffer_to_buffer(&b.results, 0, &b.readback, 2 * vec_bytes, res_bytes);
        }
        let index = self.ctx.queue.submit(Some(encoder.finish()));
        out.lambda.clear();
        out.c.clear();
        out.results.clear();
        if total > 0 {
            let (tx, rx) = mpsc::channel();
            b.readback
                .map_async(wgpu::MapMode::Read, 0..total, move |r| {
                    let _ = tx.send(r);
                });
            self.wait_for(index, &rx, "reading back")?;
            self.timings.solve = submission.started.elapsed();
            let started = Instant::now();
            {
                let view = b
                    .readback
                    .get_mapped_range(0..total)
                    .map_err(|e| GpuError::Map(e.to_string()))?;
                let bytes: &[u8] = &view;
                let v = vec_bytes as usize;
                out.lambda
                    .extend_from_slice(bytemuck::cast_slice(&bytes[..v]));
                out.c
                    .extend_from_slice(bytemuck::cast_slice(&bytes[v..2 * v]));
                out.results
                    .extend_from_slice(bytemuck::cast_slice::<u8, GpuResult>(&bytes[2 * v..]));
            }
            b.readback.unmap();
            self.timings.download = started.elapsed();
        }
        out.headers.clear();
        out.headers.extend_from_slice(&self.headers);
        out.declared_nc.clear();
        out.declared_nc.extend_from_slice(&self.declared_nc);
        self.ctx.take_error("reading back")?;
        Ok(())
    }

    /// Uploads, solves and reads back `batch` (submit + wait).
    pub fn solve_batch(
        &mut self,
        batch: &HostBatch,
        settings: &SolverSettings,
        out: &mut BatchOutput,
    ) -> Result<(), GpuError> {
        let s = self.submit(batch, settings)?;
        self.wait(s, out)
    }

    /// Packs `problems` (each with `settings`' iteration cap and tolerance)
    /// into the solver's own reusable batch and solves them.
    pub fn solve(
        &mut self,
        problems: &[ContactProblem],
        settings: &SolverSettings,
        out: &mut BatchOutput,
    ) -> Result<(), GpuError> {
        let mut batch = std::mem::take(&mut self.host_batch);
        batch.clear();
        for p in problems {
            batch.push(p, settings.max_iterations, settings.tolerance);
        }
        let r = self.solve_batch(&batch, settings, out);
        self.host_batch = batch;
        r
    }
}
