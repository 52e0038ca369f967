//! The kernel's pipeline and buffers, and the mapped readback.

use super::ResidentError;
use super::records::source_for;
use crate::gpu::GpuContext;
use crate::model::Model;

/// The kernel's pipelines: `step`, and with contacts `finish`, sharing
/// one explicit layout (group 0: the state and model; group 1: the
/// contact stage).
#[derive(Clone)]
pub(super) struct Kernel {
    pub(super) step: wgpu::ComputePipeline,
    pub(super) finish: Option<wgpu::ComputePipeline>,
    pub(super) group0: wgpu::BindGroupLayout,
    pub(super) group1: Option<wgpu::BindGroupLayout>,
}

/// Whether each binding of group 0 is read-only in the shader (binding
/// 0 is the uniform).
const GROUP0_READ_ONLY: [bool; 15] = [
    true, true, true, false, false, true, false, true, true, true, false, true, false, false, true,
];
/// The same for group 1 (the contact stage).
const GROUP1_READ_ONLY: [bool; 8] = [true, true, false, false, false, false, false, false];

pub(super) fn layout(
    ctx: &GpuContext,
    label: &str,
    read_only: &[bool],
    uniform0: bool,
) -> wgpu::BindGroupLayout {
    let entries: Vec<_> = read_only
        .iter()
        .enumerate()
        .map(|(b, &ro)| wgpu::BindGroupLayoutEntry {
            binding: b as u32,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: if uniform0 && b == 0 {
                    wgpu::BufferBindingType::Uniform
                } else {
                    wgpu::BufferBindingType::Storage { read_only: ro }
                },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        })
        .collect();
    ctx.device
        .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(label),
            entries: &entries,
        })
}

/// The kernel for `model` (see [`source_for`]), checked: a driver that
/// cannot build it gives [`ResidentError::Kernel`].
pub(super) fn kernel(
    ctx: &GpuContext,
    model: &Model,
    per_world: bool,
    initial_moving: usize,
) -> Result<Kernel, ResidentError> {
    let device = &ctx.device;
    let contacts = !super::contacts::device_pairs(model)
        .unwrap_or_default()
        .is_empty();
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("resident step"),
        source: wgpu::ShaderSource::Wgsl(source_for(model, per_world, initial_moving).into()),
    });
    let group0 = layout(ctx, "resident state", &GROUP0_READ_ONLY, true);
    let group1 = contacts.then(|| layout(ctx, "resident contacts", &GROUP1_READ_ONLY, false));
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("resident step"),
        bind_group_layouts: &[Some(&group0), group1.as_ref()],
        immediate_size: 0,
    });
    let pipeline = |entry: &str| {
        device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(entry),
            layout: Some(&pipeline_layout),
            module: &module,
            entry_point: Some(entry),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            cache: None,
        })
    };
    let step = pipeline("step");
    let finish = contacts.then(|| pipeline("finish"));
    let built = [validation, internal, oom]
        .into_iter()
        .map(|scope| pollster::block_on(scope.pop()))
        .collect::<Vec<_>>()
        .into_iter()
        .flatten()
        .next();
    let lost = ctx.take_error("building the resident kernel").err();
    match built.map(|e| e.to_string()).or(lost.map(|e| e.to_string())) {
        Some(reason) => Err(ResidentError::Kernel {
            model: model.name.clone(),
            adapter: ctx.adapter.name.clone(),
            reason,
        }),
        None => Ok(Kernel {
            step,
            finish,
            group0,
            group1,
        }),
    }
}

/// The bind group of `buffers` (in binding order) for `layout`.
pub(super) fn bind_group(
    ctx: &GpuContext,
    label: &str,
    layout: &wgpu::BindGroupLayout,
    buffers: &[&wgpu::Buffer],
) -> wgpu::BindGroup {
    let entries: Vec<_> = buffers
        .iter()
        .enumerate()
        .map(|(binding, b)| wgpu::BindGroupEntry {
            binding: binding as u32,
            resource: b.as_entire_binding(),
        })
        .collect();
    ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(label),
        layout,
        entries: &entries,
    })
}

/// The mapped readback of a resident batch, world-minor, widened to f64 on
/// reading.
pub struct Columns<'a> {
    pub(super) n: usize,
    pub(super) q: &'a [f32],
    pub(super) v: &'a [f32],
    pub(super) qfrc: &'a [f32],
    pub(super) flags: &'a [f32],
    /// With contacts: per world nc, nl, iterations, ε_abs, contacts
    /// dropped, f32's floor, Newton steps, finished by a finisher
    /// (world-minor; the counts as u32 bits); else empty.
    pub(super) solves: &'a [f32],
    /// While kept ([`super::ResidentBatch::keep_last_start`]): `q` and `v`
    /// as the last step found them.
    pub(super) start: Option<(&'a [f32], &'a [f32])>,
}

impl Columns<'_> {
    pub fn nworlds(&self) -> usize {
        self.n
    }
    /// Element `t` of world `w`'s `q` and `v` as the last step of the call
    /// found them, when kept.
    pub fn start_q(&self, w: usize, t: usize) -> Option<f64> {
        self.start.map(|(q, _)| q[t * self.n + w] as f64)
    }
    pub fn start_v(&self, w: usize, t: usize) -> Option<f64> {
        self.start.map(|(_, v)| v[t * self.n + w] as f64)
    }

    /// `q[t]` of world `w`.
    pub fn q(&self, w: usize, t: usize) -> f64 {
        self.q[t * self.n + w] as f64
    }

    /// `v[t]` of world `w`.
    pub fn v(&self, w: usize, t: usize) -> f64 {
        self.v[t * self.n + w] as f64
    }

    /// The last step's generalized constraint force `t` of world `w`.
    pub fn qfrc(&self, w: usize, t: usize) -> f64 {
        self.qfrc[t * self.n + w] as f64
    }

    /// Whether world `w`'s last step was refused (its state unchanged):
    /// see [`Self::flag`].
    pub fn flagged(&self, w: usize) -> bool {
        self.flags[w].to_bits() != 0
    }

    /// Why world `w`'s last step was refused: 0 it was not,
    /// [`super::WORLD_FLAG_NON_FINITE`] (its state would have become
    /// non-finite), [`super::WORLD_FLAG_CONTACT_SOLVE`],
    /// [`super::WORLD_FLAG_UNFINISHED`], [`super::WORLD_FLAG_LOOP_LIMIT`].
    pub fn flag(&self, w: usize) -> u32 {
        self.flags[w].to_bits()
    }

    /// The contacts world `w`'s steps found beyond its room and dropped
    /// (the deepest kept) since the state was last read back: 0 for a
    /// model without contacts.
    pub fn dropped_contacts(&self, w: usize) -> usize {
        if self.solves.is_empty() {
            return 0;
        }
        let at = super::contacts::ContactSizes::DROPPED;
        self.solves[at * self.n + w].to_bits() as usize
    }

    /// World `w`'s last contact problem and its solve (`None` for a model
    /// without contacts).
    pub fn solve(&self, w: usize) -> Option<DeviceSolve> {
        if self.solves.is_empty() {
            return None;
        }
        use super::contacts::ContactSizes as S;
        let at = |k: usize| self.solves[k * self.n + w];
        Some(DeviceSolve {
            nc: at(0).to_bits() as usize,
            nl: at(1).to_bits() as usize,
            iterations: at(2).to_bits() as usize,
            eps_abs: at(3) as f64,
            eps_floor: at(S::FLOOR) as f64,
            newton_steps: at(S::NEWTON).to_bits() as usize,
            finished: at(S::FINISHED).to_bits() != 0,
        })
    }
}

/// A resident world's last contact problem and its solve, as read back.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeviceSolve {
    /// Contacts and limit rows.
    pub nc: usize,
    pub nl: usize,
    /// ADMM iterations.
    pub iterations: usize,
    pub eps_abs: f64,
    /// f32's floor under `ε_abs` ([`crate::gpu::batch::GpuResult::eps_floor`]).
    pub eps_floor: f64,
    /// Semismooth Newton steps taken ([`crate::gpu::batch::GpuResult::newton_steps`]).
    pub newton_steps: usize,
    /// Whether the active-set polish or Newton's steps ended the solve
    /// ([`crate::gpu::batch::GpuResult::polishes`]).
    pub finished: bool,
}

/// The kernel's buffers, by binding.
pub(super) struct Bindings {
    pub(super) uniform: wgpu::Buffer,
    pub(super) body_u32: wgpu::Buffer,
    /// The model records: one copy, or each world's (per-world mode).
    pub(super) body_f32: wgpu::Buffer,
    pub(super) q: wgpu::Buffer,
    pub(super) v: wgpu::Buffer,
    pub(super) tau: wgpu::Buffer,
    pub(super) flags: wgpu::Buffer,
    pub(super) ctrl: wgpu::Buffer,
    pub(super) actuators: wgpu::Buffer,
    pub(super) stepping: wgpu::Buffer,
    pub(super) qfrc: wgpu::Buffer,
    pub(super) dof_f32: wgpu::Buffer,
    /// Each stage's output of the last step (`with_stage_probe`), or a
    /// placeholder word.
    pub(super) stages: wgpu::Buffer,
    /// The limit LCP's scratch (see `lcp_floats`).
    pub(super) lcp: wgpu::Buffer,
    /// Each world's parameters (per-world mode), or a placeholder word.
    pub(super) world_params: wgpu::Buffer,
}

impl Bindings {
    pub(super) fn bind_group(
        &self,
        ctx: &GpuContext,
        layout: &wgpu::BindGroupLayout,
    ) -> wgpu::BindGroup {
        let entries = [
            &self.uniform,
            &self.body_u32,
            &self.body_f32,
            &self.q,
            &self.v,
            &self.tau,
            &self.flags,
            &self.ctrl,
            &self.actuators,
            &self.stepping,
            &self.qfrc,
            &self.dof_f32,
            &self.stages,
            &self.lcp,
            &self.world_params,
        ];
        bind_group(ctx, "resident step", layout, &entries)
    }
}
