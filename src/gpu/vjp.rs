//! The vector–Jacobian product of the contact stage for a batch of worlds
//! on the GPU (`shaders/vjp.wgsl`, one invocation per world, f32), and its
//! f64 CPU twin ([`contact_vjp_f64`]).
//!
//! Reverse-mode differentiation of a step ([`crate::sim::Simulator::step_with_vjp`])
//! turns the adjoint `λ̄` of a world's impulses into that of its free
//! velocity `ḡ = Λᵀ λ̄ = −D_cᵀ A⁻ᵀ λ̄`, `A = D_λ + D_c (G + R)` at the
//! solution's modes (see [`crate::contact::sensitivity`]): the only step of
//! the backward pass that solves a system (`m × m`, `m = 3 nc + nl`), and
//! the one batched here. The host uploads each world's `G + R`, `λ`, `c`,
//! `μ`, modes and `λ̄`; the kernel forms `Aᵀ` from the modes' blocks,
//! factorizes `Aᵀ + εI` by Gaussian elimination with partial pivoting and
//! refines the solve against `Aᵀ` ([`VJP_ROUNDS`] rounds, `ε` =
//! [`VJP_REGULARIZATION`] of its largest entry). The twin runs the same
//! algorithm in f64; `tests/gpu_vjp.rs` checks the twin against
//! `ContactSensitivity::apply_transpose` and the GPU against the twin.
//!
//! Buffers are allocated per call (a batch's size is checked against the
//! adapter's limits first): this path is for learning loops' backward
//! passes, whose cost is the solve, not the allocation.

use super::contract::WgslConst;
use super::{GpuContext, GpuError};
use crate::contact::ContactMode;
pub use crate::contact::sensitivity::VjpWorld;
use bytemuck::{Pod, Zeroable};
use std::sync::mpsc;

/// Relative regularization of `Aᵀ` before its factorization (f32: `A` is
/// singular where `G` is, e.g. a resting box; the refinement against `Aᵀ`
/// removes its bias along the range).
pub const VJP_REGULARIZATION: f64 = 1e-6;
/// Refinement rounds of the solve.
pub const VJP_ROUNDS: u32 = 3;
/// Invocations per workgroup.
pub const VJP_WORKGROUP: u32 = 64;
/// A world whose factorization met an exactly zero pivot.
pub const VJP_FLAG_SINGULAR: u32 = 1;

// The world's checks and `G + R` for the kernel's packing (the type is the
// contact layer's: `contact::sensitivity::VjpWorld`).
impl VjpWorld<'_> {
    /// Refuses a world whose arrays do not have the problem's sizes.
    fn check(&self, index: usize) -> Result<(), GpuError> {
        let (m, nc) = (self.problem.m(), self.problem.nc());
        let bad = |what: &'static str, got: usize, expected: usize| {
            Err(GpuError::Gpu {
                during: format!("packing world {index} for the contact VJP"),
                reason: format!("{what} has length {got}, expected {expected}"),
            })
        };
        if self.problem.delassus.shape() != (m, m) {
            return bad("delassus (rows)", self.problem.delassus.nrows(), m);
        }
        for (what, len) in [
            ("lambda", self.lambda.len()),
            ("c", self.c.len()),
            ("lambda_bar", self.lambda_bar.len()),
        ] {
            if len != m {
                return bad(what, len, m);
            }
        }
        if self.modes.len() != nc + (m - 3 * nc) {
            return bad("modes", self.modes.len(), nc + m - 3 * nc);
        }
        Ok(())
    }

    /// `G + R` entry.
    fn g(&self, i: usize, j: usize) -> f64 {
        self.problem.delassus[(i, j)]
            + if i == j {
                self.problem.compliance[i]
            } else {
                0.0
            }
    }
}

crate::wgsl_struct! {
    /// The header of one world (`struct VjpWorld` in the kernel, generated
    /// from it).
    #[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
    pub struct GpuVjpWorld as "VjpWorld" {
        pub m: u32 => "u32",
        pub nc: u32 => "u32",
        /// Offsets into `inputs` (`G + R` column-major `m²`, then λ, c, μ, λ̄,
        /// `m` each), into `work` (Aᵀ `m²`, its LU `m²`, x `m`, residual `m`),
        /// and per row.
        pub input: u32 => "u32",
        pub work: u32 => "u32",
        pub row: u32 => "u32",
        pub flags: u32 => "u32",
        pub _pad0: u32 => "u32",
        pub _pad1: u32 => "u32",
    }
}

/// The kernel's constants.
pub fn constants() -> Vec<WgslConst> {
    let mut c = vec![
        WgslConst::u32("VJP_WORKGROUP", VJP_WORKGROUP),
        WgslConst::f32("VJP_REGULARIZATION", VJP_REGULARIZATION),
        WgslConst::u32("VJP_ROUNDS", VJP_ROUNDS),
        WgslConst::u32("VJP_FLAG_SINGULAR", VJP_FLAG_SINGULAR),
    ];
    c.extend(super::contract::mode_constants(false));
    c
}

/// The assembled WGSL source: the constants, the world's header (generated
/// from [`GpuVjpWorld`]), then `shaders/vjp.wgsl`.
pub fn source() -> String {
    let mut s = super::contract::header(&constants());
    s.push_str(&super::contract::declaration::<GpuVjpWorld>());
    s.push_str(include_str!("../../shaders/vjp.wgsl"));
    s
}

/// `D_λ`, `D_c` of contact `i` (row-major 3 × 3), as the kernel's
/// `contact_blocks`.
fn contact_blocks(w: &VjpWorld, i: usize) -> ([f64; 9], [f64; 9]) {
    let (mut dl, mut dc) = ([0.0; 9], [0.0; 9]);
    match w.modes[i] {
        ContactMode::Breaking => {
            dl[0] = 1.0;
            dl[4] = 1.0;
            dl[8] = 1.0;
        }
        ContactMode::Sticking => {
            dc[0] = 1.0;
            dc[4] = 1.0;
            dc[8] = 1.0;
        }
        ContactMode::Sliding => {
            let (c0, c1) = (w.c[3 * i], w.c[3 * i + 1]);
            let (ln, mu) = (w.lambda[3 * i + 2], w.problem.mu[i]);
            let ct = (c0 * c0 + c1 * c1).sqrt();
            let (u0, u1) = (c0 / ct, c1 / ct);
            let s = mu * ln / ct;
            dc[8] = 1.0;
            dl[0] = 1.0;
            dl[4] = 1.0;
            dl[2] = mu * u0;
            dl[5] = mu * u1;
            dc[0] = s * (1.0 - u0 * u0);
            dc[1] = -s * u0 * u1;
            dc[3] = -s * u0 * u1;
            dc[4] = s * (1.0 - u1 * u1);
        }
    }
    (dl, dc)
}

/// The f64 twin of the kernel for one world: `ḡ = −D_cᵀ A⁻ᵀ λ̄`, the same
/// steps in the same order (`Aᵀ`, LU of `Aᵀ + εI` with partial pivoting,
/// refined solve, `−D_cᵀ`).
pub fn contact_vjp_f64(w: &VjpWorld) -> Vec<f64> {
    let (m, nc) = (w.problem.m(), w.problem.nc());
    if m == 0 {
        return Vec::new();
    }
    // Aᵀ column-major: at[j + m r] = A[r, j].
    let mut at = vec![0.0; m * m];
    for i in 0..nc {
        let (dl, dc) = contact_blocks(w, i);
        for r in 0..3 {
            for j in 0..m {
                let mut v = 0.0;
                for t in 0..3 {
                    v += dc[3 * r + t] * w.g(3 * i + t, j);
                }
                at[j + m * (3 * i + r)] = v;
            }
            for t in 0..3 {
                at[3 * i + t + m * (3 * i + r)] += dl[3 * r + t];
            }
        }
    }
    for k in 3 * nc..m {
        if w.modes[nc + k - 3 * nc] == ContactMode::Breaking {
            at[k + m * k] = 1.0;
        } else {
            for j in 0..m {
                at[j + m * k] = w.g(k, j);
            }
        }
    }
    let amax = at.iter().fold(0.0f64, |a, x| a.max(x.abs()));
    let mut lu = at.clone();
    for k in 0..m {
        lu[k + m * k] += VJP_REGULARIZATION * amax;
    }
    let mut pivots = vec![0usize; m];
    for k in 0..m {
        let mut p = k;
        let mut best = lu[k + m * k].abs();
        for i in k + 1..m {
            if lu[i + m * k].abs() > best {
                best = lu[i + m * k].abs();
                p = i;
            }
        }
        pivots[k] = p;
        if p != k {
            for j in 0..m {
                lu.swap(k + m * j, p + m * j);
            }
        }
        if lu[k + m * k] == 0.0 {
            lu[k + m * k] = 1.0;
        }
        for i in k + 1..m {
            lu[i + m * k] /= lu[k + m * k];
        }
        for j in k + 1..m {
            let f = lu[k + m * j];
            for i in k + 1..m {
                lu[i + m * j] -= lu[i + m * k] * f;
            }
        }
    }
    let solve = |v: &mut [f64]| {
        for k in 0..m {
            v.swap(k, pivots[k]);
        }
        for i in 1..m {
            let s: f64 = (0..i).map(|k| lu[i + m * k] * v[k]).sum();
            v[i] -= s;
        }
        for i in (0..m).rev() {
            let s: f64 = (i + 1..m).map(|k| lu[i + m * k] * v[k]).sum();
            v[i] = (v[i] - s) / lu[i + m * i];
        }
    };
    let mut x = vec![0.0; m];
    let mut residual = vec![0.0; m];
    for _ in 0..=VJP_ROUNDS {
        for r in 0..m {
            residual[r] = w.lambda_bar[r] - (0..m).map(|k| at[r + m * k] * x[k]).sum::<f64>();
        }
        solve(&mut residual);
        for r in 0..m {
            x[r] += residual[r];
        }
    }
    let mut g_bar = vec![0.0; m];
    for i in 0..nc {
        let (_, dc) = contact_blocks(w, i);
        for t in 0..3 {
            g_bar[3 * i + t] = -(0..3).map(|r| dc[3 * r + t] * x[3 * i + r]).sum::<f64>();
        }
    }
    for k in 3 * nc..m {
        if w.modes[nc + k - 3 * nc] != ContactMode::Breaking {
            g_bar[k] = -x[k];
        }
    }
    g_bar
}

/// The kernel, compiled for one device.
pub struct GpuContactVjp {
    ctx: GpuContext,
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
}

/// What one call returns: `ḡ` per world (f32, `m` each) and its flags.
#[derive(Clone, Debug, Default)]
pub struct VjpOutput {
    pub g_bar: Vec<Vec<f32>>,
    pub flags: Vec<u32>,
}

impl GpuContactVjp {
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        let device = &ctx.device;
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("contact vjp"),
            source: wgpu::ShaderSource::Wgsl(source().into()),
        });
        let entries: Vec<wgpu::BindGroupLayoutEntry> = (0..7)
            .map(|b| wgpu::BindGroupLayoutEntry {
                binding: b,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage { read_only: b <= 2 },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("contact vjp"),
            entries: &entries,
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("contact vjp"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("contact vjp"),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some("contact_vjp"),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            cache: None,
        });
        if let Some(e) = pollster::block_on(validation.pop()) {
            return Err(GpuError::Gpu {
                during: "compiling the contact VJP kernel".into(),
                reason: e.to_string(),
            });
        }
        ctx.take_error("compiling the contact VJP kernel")?;
        Ok(GpuContactVjp {
            ctx: ctx.clone(),
            pipeline,
            layout,
        })
    }

    /// `ḡ` for every world of `worlds`, in one dispatch. Refuses a world
    /// whose arrays disagree with its problem, and a batch whose buffers
    /// would exceed the adapter's limits, before allocating.
    pub fn run(&self, worlds: &[VjpWorld]) -> Result<VjpOutput, GpuError> {
        let mut headers = Vec::with_capacity(worlds.len());
        let (mut input_len, mut work_len, mut rows) = (0usize, 0usize, 0usize);
        for (k, w) in worlds.iter().enumerate() {
            w.check(k)?;
            let m = w.problem.m();
            headers.push(GpuVjpWorld {
                m: m as u32,
                nc: w.problem.nc() as u32,
                input: input_len as u32,
                work: work_len as u32,
                row: rows as u32,
                ..Default::default()
            });
            input_len += m * m + 4 * m;
            work_len += 2 * m * m + 2 * m;
            rows += m;
        }
        let limit = self.ctx.limits.max_storage_buffer_binding_size;
        for (what, bytes) in [
            ("worlds", std::mem::size_of::<GpuVjpWorld>() * worlds.len()),
            ("inputs", 4 * input_len),
            ("work", 4 * work_len),
            ("rows", 4 * rows),
        ] {
            if bytes as u64 > limit || u32::try_from(bytes / 4).is_err() {
                return Err(GpuError::CapacityTooLarge {
                    what,
                    bytes: bytes as u64,
                    limit_name: "max_storage_buffer_binding_size",
                    limit,
                    adapter: self.ctx.adapter.name.clone(),
                });
            }
        }
        let groups = worlds.len().div_ceil(VJP_WORKGROUP as usize) as u32;
        let (gx, gy) = if groups <= 65535 {
            (groups.max(1), 1)
        } else {
            (65535, groups.div_ceil(65535))
        };
        let mut inputs = Vec::with_capacity(input_len);
        let mut modes = Vec::with_capacity(rows);
        for w in worlds {
            let (m, nc) = (w.problem.m(), w.problem.nc());
            for j in 0..m {
                for i in 0..m {
                    inputs.push(w.g(i, j) as f32);
                }
            }
            inputs.extend(w.lambda.iter().map(|&x| x as f32));
            inputs.extend(w.c.iter().map(|&x| x as f32));
            inputs.extend((0..m).map(|r| {
                if r < 3 * nc {
                    w.problem.mu[r / 3] as f32
                } else {
                    0.0
                }
            }));
            inputs.extend(w.lambda_bar.iter().map(|&x| x as f32));
            for r in 0..m {
                let block = if r < 3 * nc { r / 3 } else { nc + r - 3 * nc };
                modes.push(super::contract::mode_code(w.modes[block]));
            }
        }
        let device = &self.ctx.device;
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let storage = wgpu::BufferUsages::STORAGE;
        let init = |label: &str, bytes: &[u8]| {
            let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: (bytes.len() as u64).max(16).div_ceil(16) * 16,
                usage: storage | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            if !bytes.is_empty() {
                self.ctx.queue.write_buffer(&buffer, 0, bytes);
            }
            buffer
        };
        let zeros = |n: usize| vec![0u8; 4 * n];
        let buffers = [
            init("vjp worlds", bytemuck::cast_slice(&headers)),
            init("vjp inputs", bytemuck::cast_slice(&inputs)),
            init("vjp modes", bytemuck::cast_slice(&modes)),
            init("vjp g_bar", &zeros(rows)),
            init("vjp work", &zeros(work_len)),
            init("vjp pivots", &zeros(rows)),
            init("vjp flags", &zeros(worlds.len())),
        ];
        let out_bytes = 4 * (rows + worlds.len()) as u64;
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("vjp readback"),
            size: out_bytes.max(16).div_ceil(16) * 16,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        if let Some(e) = pollster::block_on(oom.pop()) {
            return Err(GpuError::OutOfMemory {
                during: "allocating the contact VJP buffers".into(),
                reason: e.to_string(),
            });
        }
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("contact vjp"),
            layout: &self.layout,
            entries: &std::array::from_fn::<_, 7, _>(|b| wgpu::BindGroupEntry {
                binding: b as u32,
                resource: buffers[b].as_entire_binding(),
            }),
        });
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("contact vjp"),
        });
        if !worlds.is_empty() {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("contact vjp"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(gx, gy, 1);
        }
        let g_bytes = 4 * rows as u64;
        if g_bytes > 0 {
            encoder.copy_buffer_to_buffer(&buffers[3], 0, &readback, 0, g_bytes);
        }
        if !worlds.is_empty() {
            encoder.copy_buffer_to_buffer(
                &buffers[6],
                0,
                &readback,
                g_bytes,
                4 * worlds.len() as u64,
            );
        }
        let index = self.ctx.queue.submit(Some(encoder.finish()));
        let mut out = VjpOutput::default();
        if out_bytes == 0 {
            return Ok(out);
        }
        let (tx, rx) = mpsc::channel();
        readback.map_async(wgpu::MapMode::Read, 0..out_bytes, move |r| {
            let _ = tx.send(r);
        });
        let polled = device.poll(wgpu::PollType::Wait {
            submission_index: Some(index),
            timeout: None,
        });
        self.ctx.take_error("running the contact VJP")?;
        polled.map_err(|e| GpuError::Gpu {
            during: "running the contact VJP".into(),
            reason: e.to_string(),
        })?;
        super::map_outcome(&rx)?;
        {
            let view = readback
                .get_mapped_range(0..out_bytes)
                .map_err(|e| GpuError::Map(e.to_string()))?;
            let g: &[f32] = bytemuck::cast_slice(&view[..g_bytes as usize]);
            for h in &headers {
                let (r, m) = (h.row as usize, h.m as usize);
                out.g_bar.push(g[r..r + m].to_vec());
            }
            out.flags.extend_from_slice(bytemuck::cast_slice(
                &view[g_bytes as usize..out_bytes as usize],
            ));
        }
        readback.unmap();
        Ok(out)
    }
}
