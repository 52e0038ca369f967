//! [`GpuSolver`]: the buffers of one batch capacity, one kernel's pipeline,
//! upload, dispatch and readback (wgpu's repeated-compute pattern: copy to
//! a staging buffer, map, poll, unmap), in one call ([`GpuSolver::solve_batch`])
//! or split ([`GpuSolver::submit`] then [`GpuSolver::wait`]) so that the host
//! can work while the device solves.

use super::batch::HostBatch;
use super::batch::{
    BatchCapacity, GpuContact, GpuProblem, GpuResult, InterleavedBatch, Layout,
    READBACK_TAIL_BYTES, ROUND_TIMESTAMPS, RUNNING_COUNTER_BYTES, STATE_DONE, cut_flags,
};
use super::kernel::{AdapterClass, BatchKernel, BatchShape, Decomposition, check_kernel};
use super::output::{BatchOutput, Headers};
use super::registry;
use super::shader;
use crate::contact::{ContactProblem, KernelModel, SolverKind, SolverSettings};
use crate::counters::{DeviceTimes, Stage, StageTimes};
use crate::gpu::{GpuContext, GpuError, wgpu_error};
use std::sync::mpsc;
use std::time::Instant;

mod resident;

/// Dispatches of the first round on a CPU adapter, and the most of any
/// round, before the host checks whether problems remain (a GPU adapter,
/// whose chunks cover whole solves, starts with one).
const FIRST_ROUND: u32 = 4;
const MAX_ROUND: u32 = 64;

/// The timestamps one round wrote (indices into the query set, in order).
#[derive(Clone, Copy, Debug, Default)]
struct RoundStamps {
    /// Compute passes timed (2 timestamps each, from index 0).
    passes: u32,
    /// Whether the readback copies were timed (the 2 timestamps after the passes').
    copies: bool,
}

impl RoundStamps {
    fn count(&self) -> u32 {
        2 * self.passes + 2 * self.copies as u32
    }
}

/// A submitted batch, to be passed to [`GpuSolver::wait`].
#[must_use = "a submission must be waited for"]
pub struct Submission {
    index: wgpu::SubmissionIndex,
    problems: usize,
    /// Blocks of 3 rows uploaded (λ and c have 3 floats per block).
    blocks: usize,
    mapped: mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>,
    stamps: RoundStamps,
    started: Instant,
    /// Dispatches so far, dispatches of the next round, and the most any
    /// batch can need.
    dispatches: u64,
    round: u32,
    max_dispatches: u64,
    grid: (u32, u32),
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
    /// λ, c and the results, then the running counter and the round's
    /// timestamps ([`READBACK_TAIL_BYTES`]): one map per round.
    readback: wgpu::Buffer,
    /// Timestamp queries and their resolve buffer (adapters that have them).
    timer: Option<(wgpu::QuerySet, wgpu::Buffer)>,
}

/// A batched GPU contact solver for one [`SolverKind`] and one [`BatchCapacity`].
pub struct GpuSolver {
    ctx: GpuContext,
    kind: SolverKind,
    kernel: &'static dyn BatchKernel,
    model: KernelModel,
    decomposition: Decomposition,
    capacity: BatchCapacity,
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    buffers: Buffers,
    /// Headers of the batch in flight (copied into the output by `wait`).
    headers: Headers,
    pending: bool,
    /// Host-side times of the last solve: `Upload` (packing into wgpu's
    /// staging and encoding), `Solve` (from the submission to the readback
    /// being mapped: transfer, solve, copy back), `Download` (copying out
    /// of the mapped readback).
    timings: StageTimes,
    /// Device times and round trips of the last solve.
    device_times: DeviceTimes,
    host_batch: HostBatch,
    chunk_override: Option<u32>,
    /// Initial results of a batch with per-problem initial ρ (reused).
    start_results: Vec<GpuResult>,
    layout: Layout,
    /// The batch in flight, interleaved (when the layout says so; reused).
    interleaved: InterleavedBatch,
    /// The headers uploaded when they are reordered (by size class, or by
    /// lanes per problem for the lane kernel) and the batch index of each
    /// (`upload_order` empty: the batch's own headers, in its order).
    upload_headers: Vec<GpuProblem>,
    upload_order: Vec<u32>,
    /// The kernel's bound on dispatches of a resident solve ([`Self::prepare_resident`]).
    resident_max_dispatches: u64,
}

/// The workgroup grid of a dispatch of `groups` workgroups: one dimension
/// while it suffices (`per_dim`, the device's limit), else a grid whose
/// rows cover them.
fn grid_of(groups: u64, per_dim: u32) -> (u32, u32) {
    let per_dim = per_dim.max(1) as u64;
    let x = groups.min(per_dim);
    (x as u32, groups.div_ceil(x.max(1)) as u32)
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

/// Whether a solver of `kind` with `capacity` and `decomposition` fits an
/// adapter's `limits` (named `adapter` in the errors), checked before
/// anything is allocated: every buffer under the binding and buffer size
/// limits (the readback under the buffer size), the problems within one
/// dispatch's grid, the workgroup memory of the entry point. Returns the
/// entry point.
pub fn check_capacity(
    limits: &wgpu::Limits,
    adapter: &str,
    kind: SolverKind,
    capacity: &BatchCapacity,
    decomposition: Decomposition,
) -> Result<&'static str, GpuError> {
    let entry_point = decomposition.check(kind, capacity)?;
    let (kernel_kind, _) = check_kernel(kind)?;
    let kernel = registry::of(kernel_kind);
    let p = capacity.problems as u64;
    let sizes = capacity.buffer_bytes(kernel.work_floats(capacity));
    let too_large = |what, bytes: u64, limit_name, limit: u64| {
        (padded(bytes) > limit).then(|| GpuError::CapacityTooLarge {
            what,
            bytes: padded(bytes),
            limit_name,
            limit,
            adapter: adapter.to_string(),
        })
    };
    for (what, bytes) in sizes {
        for (limit_name, limit) in [
            (
                "max_storage_buffer_binding_size",
                limits.max_storage_buffer_binding_size,
            ),
            ("max_buffer_size", limits.max_buffer_size),
        ] {
            if let Some(e) = too_large(what, bytes, limit_name, limit) {
                return Err(e);
            }
        }
    }
    if let Some(e) = too_large(
        "readback",
        capacity.readback_bytes(),
        "max_buffer_size",
        limits.max_buffer_size,
    ) {
        return Err(e);
    }
    let per_dim = limits.max_compute_workgroups_per_dimension as u64;
    let max_problems = match decomposition {
        Decomposition::Invocation => per_dim * kernel.workgroup_size() as u64,
        // One problem per workgroup at the least, on a 2-D grid.
        Decomposition::Workgroup | Decomposition::Lane => per_dim * per_dim,
    };
    if p > max_problems {
        return Err(GpuError::DispatchCapacity {
            problems: p,
            max: max_problems,
            adapter: adapter.to_string(),
            decomposition: decomposition.name(),
        });
    }
    let needed = kernel.workgroup_memory(decomposition, capacity.max_rows_per_problem());
    let got = limits.max_compute_workgroup_storage_size as u64;
    if got < needed {
        return Err(GpuError::InsufficientLimit {
            adapter: adapter.to_string(),
            what: "max_compute_workgroup_storage_size",
            got,
            needed,
        });
    }
    Ok(entry_point)
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
        let entry_point = check_capacity(
            &ctx.limits,
            &ctx.adapter.name,
            kind,
            &capacity,
            decomposition,
        )?;
        let (kernel_kind, model) = check_kernel(kind)?;
        let kernel = registry::of(kernel_kind);
        let sizes = capacity.buffer_bytes(kernel.work_floats(&capacity));
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
        let buffers = Buffers {
            params: buffer(
                "params",
                sizes[0].1,
                wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            ),
            problems: buffer("problems", sizes[1].1, storage),
            // (Copied from by the resident batches' `read_problems`.)
            delassus: buffer(
                "delassus",
                sizes[2].1,
                storage | wgpu::BufferUsages::COPY_SRC,
            ),
            contacts: buffer(
                "contacts",
                sizes[3].1,
                storage | wgpu::BufferUsages::COPY_SRC,
            ),
            lambda: buffer("lambda", sizes[4].1, storage | wgpu::BufferUsages::COPY_SRC),
            c: buffer("c", sizes[5].1, storage | wgpu::BufferUsages::COPY_SRC),
            results: buffer(
                "results",
                sizes[6].1,
                storage | wgpu::BufferUsages::COPY_SRC,
            ),
            work: buffer("work", sizes[7].1, storage),
            active: buffer(
                "active",
                RUNNING_COUNTER_BYTES,
                storage | wgpu::BufferUsages::COPY_SRC,
            ),
            readback: buffer(
                "readback",
                capacity.readback_bytes(),
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            ),
            timer: ctx.timestamps.then(|| {
                (
                    device.create_query_set(&wgpu::QuerySetDescriptor {
                        label: Some("contact solve timestamps"),
                        ty: wgpu::QueryType::Timestamp,
                        count: ROUND_TIMESTAMPS,
                    }),
                    buffer(
                        "timestamps resolve",
                        8 * ROUND_TIMESTAMPS as u64,
                        wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                    ),
                )
            }),
        };
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(kind.name()),
            source: wgpu::ShaderSource::Wgsl(shader::kernel_source(kernel).into()),
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
        let overrides = kernel.overrides(decomposition, capacity.max_rows_per_problem());
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(kind.name()),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some(entry_point),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants: &overrides,
                ..Default::default()
            },
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
            kernel,
            model,
            decomposition,
            capacity,
            pipeline,
            bind_group,
            buffers,
            headers: Headers::default(),
            pending: false,
            timings: StageTimes::default(),
            device_times: DeviceTimes::default(),
            host_batch: HostBatch::for_capacity(&capacity),
            chunk_override: None,
            start_results: Vec::new(),
            layout: Layout::Packed,
            interleaved: InterleavedBatch::default(),
            upload_headers: Vec::new(),
            upload_order: Vec::new(),
            resident_max_dispatches: 0,
        })
    }

    pub fn kind(&self) -> SolverKind {
        self.kind
    }

    pub fn decomposition(&self) -> Decomposition {
        self.decomposition
    }

    /// How G is laid out on the device (packed problem after problem by
    /// default); the batch the caller packs is the same either way.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Lays G out as `layout` says in the solves that follow (the device
    /// buffers are the same size).
    pub fn set_layout(&mut self, layout: Layout) {
        self.layout = layout;
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
    /// flagged [`super::flags::FLAG_LOOP_LIMIT`].
    pub fn set_chunk(&mut self, chunk: Option<u32>) {
        self.chunk_override = chunk.map(|c| c.max(1));
    }

    /// Host-side timings of the last completed solve.
    pub fn last_timings(&self) -> StageTimes {
        self.timings
    }

    /// Device times (timestamp queries) and round trips of the last completed solve.
    pub fn last_device_times(&self) -> DeviceTimes {
        self.device_times
    }

    /// An empty [`HostBatch`] for this solver's per-problem capacity.
    pub fn new_batch(&self) -> HostBatch {
        HostBatch::for_capacity(&self.capacity)
    }

    /// Whether the batch's dispatches must stay under a driver's loop limit
    /// (found when the context was created, [`GpuContext::loop_limit`]).
    fn adapter_class(&self) -> AdapterClass {
        if self.ctx.loop_limit.is_some() {
            AdapterClass::Cpu
        } else {
            AdapterClass::Gpu
        }
    }

    /// Work per problem and dispatch for `batch` (`GpuParams::chunk`): the
    /// override, or the kernel's choice.
    fn chunk(&self, batch: BatchShape, settings: &SolverSettings) -> u32 {
        self.chunk_override.unwrap_or_else(|| {
            self.kernel.chunk(
                self.adapter_class(),
                self.decomposition,
                self.model,
                settings,
                batch,
            )
        })
    }

    /// Encodes one round: `dispatches` dispatches of the kernel (the last
    /// one after the `active` counter is cleared), then the copies of λ, c,
    /// the results (`vec_bytes`, `res_bytes`), the counter and the round's
    /// timestamps into the readback.
    fn encode_round(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        grid: (u32, u32),
        dispatches: u32,
        (vec_bytes, res_bytes): (u64, u64),
    ) -> RoundStamps {
        let b = &self.buffers;
        let mut stamps = RoundStamps::default();
        let passes: &[(bool, u32)] = if dispatches > 1 {
            &[(false, dispatches - 1), (true, 1)]
        } else {
            &[(true, 1)]
        };
        for &(clear, count) in passes {
            if clear {
                encoder.clear_buffer(&b.active, 0, None);
            }
            let timestamp_writes =
                b.timer
                    .as_ref()
                    .map(|(set, _)| wgpu::ComputePassTimestampWrites {
                        query_set: set,
                        beginning_of_pass_write_index: Some(2 * stamps.passes),
                        end_of_pass_write_index: Some(2 * stamps.passes + 1),
                    });
            stamps.passes += timestamp_writes.is_some() as u32;
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some(self.kind.name()),
                timestamp_writes,
            });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &self.bind_group, &[]);
            for _ in 0..count {
                pass.dispatch_workgroups(grid.0, grid.1, 1);
            }
        }
        let timed_copies = self.ctx.timestamps_in_encoders && b.timer.is_some();
        if let (true, Some((set, _))) = (timed_copies, &b.timer) {
            encoder.write_timestamp(set, 2 * stamps.passes);
        }
        if vec_bytes > 0 {
            encoder.copy_buffer_to_buffer(&b.lambda, 0, &b.readback, 0, vec_bytes);
            encoder.copy_buffer_to_buffer(&b.c, 0, &b.readback, vec_bytes, vec_bytes);
        }
        if res_bytes > 0 {
            encoder.copy_buffer_to_buffer(&b.results, 0, &b.readback, 2 * vec_bytes, res_bytes);
        }
        let tail = 2 * vec_bytes + res_bytes;
        encoder.copy_buffer_to_buffer(&b.active, 0, &b.readback, tail, RUNNING_COUNTER_BYTES);
        if let (true, Some((set, _))) = (timed_copies, &b.timer) {
            encoder.write_timestamp(set, 2 * stamps.passes + 1);
            stamps.copies = true;
        }
        if let Some((set, resolve)) = &b.timer {
            let count = stamps.count();
            if count > 0 {
                encoder.resolve_query_set(set, 0..count, resolve, 0);
                encoder.copy_buffer_to_buffer(resolve, 0, &b.readback, tail + 8, 8 * count as u64);
            }
        }
        stamps
    }

    /// Submits `encoder` and maps the readback's first `bytes`.
    fn submit_round(
        &mut self,
        encoder: wgpu::CommandEncoder,
        bytes: u64,
    ) -> (
        wgpu::SubmissionIndex,
        mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>,
    ) {
        let index = self.ctx.queue.submit(Some(encoder.finish()));
        let (tx, rx) = mpsc::channel();
        self.buffers
            .readback
            .map_async(wgpu::MapMode::Read, 0..bytes, move |r| {
                let _ = tx.send(r);
            });
        self.device_times.submits += 1;
        self.device_times.maps += 1;
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
        crate::gpu::map_outcome(mapped)
    }

    /// Bytes of λ (and of c) and of the results of `problems` problems
    /// of `blocks` blocks, as the readback holds them.
    fn readback_layout(problems: usize, blocks: usize) -> (u64, u64) {
        (
            (3 * blocks * std::mem::size_of::<f32>()) as u64,
            (problems * std::mem::size_of::<GpuResult>()) as u64,
        )
    }

    /// Uploads `batch` and submits the first round of its solve (with the
    /// copies of its results: a batch whose solves end in that round needs
    /// no other submission and one map); the host may work until
    /// [`Self::wait`], which runs the remaining rounds. Refuses a batch
    /// over capacity (naming the excess) before anything is uploaded.
    pub fn submit(
        &mut self,
        batch: &HostBatch,
        settings: &SolverSettings,
    ) -> Result<Submission, GpuError> {
        if self.pending {
            return Err(GpuError::BatchInFlight);
        }
        settings.validate()?;
        batch.check_capacity(&self.capacity)?;
        self.ctx.take_error("before submitting")?;
        let started = Instant::now();
        let n = batch.len();
        let shape = BatchShape {
            max_contacts: batch
                .problems
                .iter()
                .map(|p| p.nc as usize)
                .max()
                .unwrap_or(0),
            max_rows: batch.problems.iter().map(|p| p.m()).max().unwrap_or(0),
            max_local_updates: batch
                .problems
                .iter()
                .map(|p| (p.nc + p.nl) as usize)
                .max()
                .unwrap_or(0),
            max_iterations: batch
                .problems
                .iter()
                .map(|p| p.max_iterations as u64)
                .max()
                .unwrap_or(0),
        };
        let chunk = self.chunk(shape, settings);
        let q = &self.ctx.queue;
        let b = &self.buffers;
        let write = |buf: &wgpu::Buffer, bytes: &[u8]| {
            if !bytes.is_empty() {
                q.write_buffer(buf, 0, bytes);
            }
        };
        self.interleaved.order.clear();
        if self.layout == Layout::Interleaved {
            batch.interleave_into(&mut self.interleaved);
        }
        let grid_limit = self.ctx.limits.max_compute_workgroups_per_dimension;
        let (mut problems, delassus, contacts, lambda) = if self.layout == Layout::Interleaved {
            let i = &self.interleaved;
            (&i.problems, &i.delassus, &i.contacts, &i.lambda)
        } else {
            (
                &batch.problems,
                &batch.delassus,
                &batch.contacts,
                &batch.lambda,
            )
        };
        self.upload_order.clone_from(&self.interleaved.order);
        let mut params = super::batch::GpuParams {
            num_problems: n as u32,
            chunk,
            ..self.kernel.params(self.model, settings)
        };
        let groups = if self.decomposition == Decomposition::Lane {
            // Sorted by lanes per problem, in segments of equal lanes.
            let seg = super::pgs::lane_segments(
                problems,
                &self.interleaved.order,
                &mut self.upload_headers,
                &mut self.upload_order,
            );
            problems = &self.upload_headers;
            (params.segments, params.segment) = (seg.count, seg.segment);
            seg.workgroups
        } else {
            let per = self.kernel.problems_per_workgroup(self.decomposition);
            (n as u64).div_ceil(per.max(1) as u64)
        };
        let grid = grid_of(groups, grid_limit);
        write(&b.params, bytemuck::bytes_of(&params));
        write(&b.problems, bytemuck::cast_slice(problems));
        write(&b.delassus, bytemuck::cast_slice(delassus));
        write(
            &b.contacts,
            bytemuck::cast_slice::<GpuContact, u8>(contacts),
        );
        write(&b.lambda, bytemuck::cast_slice(lambda));
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
            for (k, r) in start.iter_mut().enumerate() {
                // The uploaded header k is the batch's problem order[k].
                let i = self.upload_order.get(k).map_or(k, |&i| i as usize);
                r.rho = batch.initial_rho.get(i).copied().unwrap_or(0.0);
            }
            q.write_buffer(&b.results, 0, bytemuck::cast_slice(start));
        } else {
            encoder.clear_buffer(&b.results, 0, None);
        }
        let max_dispatches = self.kernel.max_dispatches(shape, chunk);
        let first = match self.adapter_class() {
            AdapterClass::Gpu => 1,
            AdapterClass::Cpu => FIRST_ROUND,
        };
        let round = first.min(max_dispatches as u32).max(1);
        let blocks = batch.blocks();
        let bytes = Self::readback_layout(n, blocks);
        let stamps = if n > 0 {
            self.encode_round(&mut encoder, grid, round, bytes)
        } else {
            RoundStamps::default()
        };
        self.headers
            .assign(&batch.problems, &batch.declared_nc, &batch.declared_nl);
        self.pending = true;
        self.timings = StageTimes::default();
        self.timings.set(Stage::Upload, started.elapsed());
        // The solve's wall time starts at the submission (a CPU adapter
        // may run the work inside `submit`).
        let solve_started = Instant::now();
        self.device_times = DeviceTimes::default();
        let (index, mapped) =
            self.submit_round(encoder, 2 * bytes.0 + bytes.1 + READBACK_TAIL_BYTES);
        Ok(Submission {
            index,
            problems: n,
            blocks,
            mapped,
            stamps,
            started: solve_started,
            dispatches: if n > 0 { round as u64 } else { 0 },
            round,
            max_dispatches,
            grid,
        })
    }

    /// Adds a round's timestamps (read from the readback's tail) to the device times.
    fn add_stamps(&mut self, tail: &[u8], stamps: RoundStamps) {
        if self.buffers.timer.is_none() {
            return;
        }
        let tick = |i: u32| {
            let o = 8 + 8 * i as usize;
            let mut w = [0u8; 8];
            w.copy_from_slice(&tail[o..o + 8]);
            u64::from_le_bytes(w)
        };
        let period = self.ctx.timestamp_period_ns;
        let span = |a: u32| {
            let ns = tick(a + 1).saturating_sub(tick(a)) as f64 * period;
            std::time::Duration::from_nanos(ns as u64)
        };
        for p in 0..stamps.passes {
            self.device_times.solve += span(2 * p);
        }
        if stamps.copies {
            self.device_times.readback += span(2 * stamps.passes);
        }
        self.device_times.measured = stamps.passes > 0;
    }

    /// Runs the remaining rounds of `submission` and reads its results into
    /// `out` (reusing its allocations).
    pub fn wait(&mut self, submission: Submission, out: &mut BatchOutput) -> Result<(), GpuError> {
        self.pending = false;
        let n = submission.problems;
        let (vec_bytes, res_bytes) = Self::readback_layout(n, submission.blocks);
        let data = 2 * vec_bytes + res_bytes;
        let total = data + READBACK_TAIL_BYTES;
        let mut index = submission.index;
        let mut mapped = submission.mapped;
        let mut stamps = submission.stamps;
        let mut dispatches = submission.dispatches;
        let mut round = submission.round;
        out.lambda.clear();
        out.c.clear();
        out.results.clear();
        loop {
            self.wait_for(index, &mapped, "solving")?;
            let active = {
                let view = self
                    .buffers
                    .readback
                    .get_mapped_range(0..total)
                    .map_err(|e| GpuError::Map(e.to_string()));
                let view = match view {
                    Ok(v) => v,
                    Err(e) => {
                        self.buffers.readback.unmap();
                        return Err(e);
                    }
                };
                let bytes: &[u8] = &view;
                let tail = &bytes[data as usize..];
                let active = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
                self.add_stamps(tail, stamps);
                if active == 0 || n == 0 {
                    self.timings.set(Stage::Solve, submission.started.elapsed());
                    let started = Instant::now();
                    let v = vec_bytes as usize;
                    let (lambda, c): (&[f32], &[f32]) = (
                        bytemuck::cast_slice(&bytes[..v]),
                        bytemuck::cast_slice(&bytes[v..2 * v]),
                    );
                    let results: &[GpuResult] = bytemuck::cast_slice(&bytes[2 * v..data as usize]);
                    let i = &self.interleaved;
                    if i.order.is_empty() {
                        out.lambda.extend_from_slice(lambda);
                        out.c.extend_from_slice(c);
                    } else {
                        // Back from the interleaving to the batch's layout.
                        out.lambda.resize(lambda.len(), 0.0);
                        out.c.resize(c.len(), 0.0);
                        i.gather_vectors(&self.headers.problems, lambda, &mut out.lambda);
                        i.gather_vectors(&self.headers.problems, c, &mut out.c);
                    }
                    if self.upload_order.is_empty() {
                        out.results.extend_from_slice(results);
                    } else {
                        // Back from the upload order to the batch's.
                        out.results.resize(n, GpuResult::default());
                        for (r, &k) in results.iter().zip(&self.upload_order) {
                            out.results[k as usize] = *r;
                        }
                    }
                    // None running, yet not finished: the kernel never
                    // recorded this problem's end (a cut dispatch).
                    for r in out.results.iter_mut().filter(|r| r.state != STATE_DONE) {
                        r.flags = cut_flags(r.flags);
                    }
                    self.timings.set(Stage::Download, started.elapsed());
                }
                active
            };
            self.buffers.readback.unmap();
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
            stamps = self.encode_round(&mut encoder, submission.grid, this, (vec_bytes, res_bytes));
            dispatches += this as u64;
            (index, mapped) = self.submit_round(encoder, total);
        }
        self.device_times.dispatches = dispatches;
        out.headers.clone_from(&self.headers);
        self.ctx.take_error("reading back")?;
        Ok(())
    }

    /// Bytes of the solver's buffers on the device.
    pub(crate) fn device_bytes(&self) -> u64 {
        check_kernel(self.kind).map_or(0, |(k, _)| self.capacity.device_bytes(k))
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
