//! Worlds that live on the GPU (issue 33, first slice): the state of every
//! world stays in device buffers across steps and one dispatch steps them
//! all, the host only uploading the joint torques of the step.
//!
//! This slice runs the smooth dynamics of contact-free trees of hinge,
//! slide and fixed joints (`shaders/resident.wgsl`, one invocation per
//! world): forward kinematics, the articulated-body algorithm in the world
//! frame with armature, implicit damping, springs and gravity, the free
//! velocity and `q⁺ = q + v⁺ dt`, in f32. Its twin is the f64 CPU step
//! (`Simulator::step` of the same model, which for such a model is
//! exactly that), compared in `tests/resident.rs`. A model it cannot run
//! yet is refused, naming what: free and ball joints, joint limits,
//! collision geometries, actuators, a fluid medium.
//!
//! Layout: world-minor (element `t` of world `w` at `t·N + w`) for `q`, `v`
//! and `tau`, so that neighbouring invocations read neighbouring words.

use super::{GpuContext, GpuError, read_mapped, wgpu_error};
use crate::model::{JointType, Model};
use crate::sim::State;
use thiserror::Error;

/// Floats per body record of the model buffer (see the shader).
pub const BODY_F32: usize = 29;
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
    #[error(transparent)]
    Gpu(#[from] GpuError),
}

/// Why `model` cannot live on the GPU in this slice, if it cannot.
pub fn unsupported(model: &Model) -> Option<String> {
    if model.nv == 0 {
        return Some("it has no degrees of freedom".into());
    }
    if model.nbodies > MAX_BODIES {
        return Some(format!(
            "{} bodies, over the {MAX_BODIES} the kernel is compiled for",
            model.nbodies
        ));
    }
    for i in 1..model.nbodies {
        match model.joint_type[i] {
            JointType::Free | JointType::Spherical => {
                return Some(format!(
                    "joint `{}` is {} (hinge, slide and fixed joints only, so far)",
                    model.joint_name[i],
                    model.joint_type[i].name()
                ));
            }
            _ => {}
        }
        if model.joint_range[i].is_some() {
            return Some(format!(
                "joint `{}` has a range (joint limits are not solved on the device yet)",
                model.joint_name[i]
            ));
        }
    }
    let ng = model.geometries.len();
    for a in 0..ng {
        for b in a + 1..ng {
            if model.can_collide(a, b) {
                return Some(format!(
                    "geometries `{}` and `{}` can collide (contacts are not on the device yet)",
                    model.geometries[a].name, model.geometries[b].name
                ));
            }
        }
    }
    if !model.actuators.is_empty() {
        return Some("it has actuators (controls are not on the device yet; give torques)".into());
    }
    if model.medium.density != 0.0 || model.medium.viscosity != 0.0 {
        return Some("it moves in a fluid medium (fluid forces are not on the device yet)".into());
    }
    None
}

/// The kernel's WGSL for `model`: a header of its sizes, then
/// `shaders/resident.wgsl`.
pub fn source(model: &Model) -> String {
    format!(
        "const NB: u32 = {}u;\nconst NV: u32 = {}u;\nconst NQ: u32 = {}u;\nconst BODY_F32: u32 = {BODY_F32}u;\nconst WORKGROUP: u32 = {WORKGROUP}u;\n{}",
        model.nbodies,
        model.nv,
        model.nq,
        include_str!("../../shaders/resident.wgsl")
    )
}

/// Many worlds of one model, their state on the GPU.
pub struct ResidentBatch {
    ctx: GpuContext,
    model: Model,
    nworlds: usize,
    dt: f64,
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    q: wgpu::Buffer,
    v: wgpu::Buffer,
    tau: wgpu::Buffer,
    flags: wgpu::Buffer,
    /// Host staging for torques, world-minor f32 (kept: a step allocates nothing).
    staging: Vec<f32>,
}

/// `x` (rows of `width` per world) world-minor, in f32.
fn world_minor(x: &[f64], nworlds: usize, width: usize, out: &mut Vec<f32>) {
    out.clear();
    out.resize(nworlds * width, 0.0);
    for w in 0..nworlds {
        for t in 0..width {
            out[t * nworlds + w] = x[w * width + t] as f32;
        }
    }
}

impl ResidentBatch {
    /// `nworlds` worlds of `model` starting from `initial` (one state for
    /// all, or one per world), stepped with time step `dt`.
    pub fn new(
        ctx: &GpuContext,
        model: &Model,
        dt: f64,
        initial: &[State],
        nworlds: usize,
    ) -> Result<Self, ResidentError> {
        if let Some(reason) = unsupported(model) {
            return Err(ResidentError::Unsupported {
                model: model.name.clone(),
                reason,
            });
        }
        if initial.len() != 1 && initial.len() != nworlds {
            return Err(ResidentError::DimensionMismatch {
                what: "initial states",
                got: initial.len(),
                expected: nworlds,
            });
        }
        let (nq, nv) = (model.nq, model.nv);
        let widest = (nq.max(nv) * nworlds * 4) as u64;
        let limit = ctx
            .limits
            .max_storage_buffer_binding_size
            .min(ctx.limits.max_buffer_size);
        let groups = nworlds.div_ceil(WORKGROUP as usize) as u64;
        let max_groups = ctx.limits.max_compute_workgroups_per_dimension as u64;
        if groups > max_groups {
            return Err(ResidentError::Capacity {
                nworlds,
                what: "workgroups in one dispatch",
                needed: groups,
                limit: max_groups,
            });
        }
        if widest > limit {
            return Err(ResidentError::Capacity {
                nworlds,
                what: "bytes in one buffer",
                needed: widest,
                limit,
            });
        }
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
        let (body_u32, body_f32) = model_records(model, dt);
        let device = &ctx.device;
        let source = source(model);
        let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("resident step"),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("resident step"),
            layout: None,
            module: &module,
            entry_point: Some("step"),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            cache: None,
        });
        let storage = |label: &str, bytes: &[u8], extra: wgpu::BufferUsages| {
            use wgpu::util::DeviceExt;
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytes,
                usage: wgpu::BufferUsages::STORAGE | extra,
            })
        };
        let copy = wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC;
        let mut staging = Vec::new();
        world_minor(&q0, nworlds, nq, &mut staging);
        let q = storage("resident q", bytemuck::cast_slice(&staging), copy);
        world_minor(&v0, nworlds, nv, &mut staging);
        let v = storage("resident v", bytemuck::cast_slice(&staging), copy);
        staging.iter_mut().for_each(|x| *x = 0.0);
        let tau = storage("resident tau", bytemuck::cast_slice(&staging), copy);
        let flags = storage(
            "resident flags",
            bytemuck::cast_slice(&vec![0u32; nworlds]),
            copy,
        );
        let bu = storage(
            "resident bodies (u32)",
            bytemuck::cast_slice(&body_u32),
            copy,
        );
        let bf = storage(
            "resident bodies (f32)",
            bytemuck::cast_slice(&body_f32),
            copy,
        );
        let g = model.gravity;
        let params: [u32; 8] = [
            nworlds as u32,
            (dt as f32).to_bits(),
            0,
            0,
            (g.x as f32).to_bits(),
            (g.y as f32).to_bits(),
            (g.z as f32).to_bits(),
            0,
        ];
        let uniform = {
            use wgpu::util::DeviceExt;
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("resident params"),
                contents: bytemuck::cast_slice(&params),
                usage: wgpu::BufferUsages::UNIFORM,
            })
        };
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("resident step"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[
                (0, &uniform),
                (1, &bu),
                (2, &bf),
                (3, &q),
                (4, &v),
                (5, &tau),
                (6, &flags),
            ]
            .map(|(binding, b)| wgpu::BindGroupEntry {
                binding,
                resource: b.as_entire_binding(),
            }),
        });
        if let Some(e) = pollster::block_on(validation.pop()) {
            return Err(wgpu_error("building the resident step", e).into());
        }
        Ok(ResidentBatch {
            ctx: ctx.clone(),
            model: model.clone(),
            nworlds,
            dt,
            pipeline,
            bind_group,
            q,
            v,
            tau,
            flags,
            staging,
        })
    }

    pub fn nworlds(&self) -> usize {
        self.nworlds
    }

    pub fn dt(&self) -> f64 {
        self.dt
    }

    /// One step of every world under joint torques `tau` (nworlds × nv,
    /// world after world). Refused, and nothing moves, if a torque is not
    /// finite. Returns when the step is submitted; reading the state
    /// waits for it.
    pub fn step(&mut self, tau: &[f64]) -> Result<(), ResidentError> {
        let (n, nv) = (self.nworlds, self.model.nv);
        if tau.len() != n * nv {
            return Err(ResidentError::DimensionMismatch {
                what: "tau",
                got: tau.len(),
                expected: n * nv,
            });
        }
        if let Err(crate::error::SimError::NonFiniteRow {
            row, index, value, ..
        }) = crate::sim::check_rows("tau", tau, nv)
        {
            return Err(ResidentError::NonFinite {
                what: "tau",
                world: row,
                index,
                value,
            });
        }
        world_minor(tau, n, nv, &mut self.staging);
        let (device, queue) = (&self.ctx.device, &self.ctx.queue);
        queue.write_buffer(&self.tau, 0, bytemuck::cast_slice(&self.staging));
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("resident step"),
        });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("resident step"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&self.pipeline);
            pass.set_bind_group(0, &self.bind_group, &[]);
            pass.dispatch_workgroups((n as u32).div_ceil(WORKGROUP), 1, 1);
        }
        queue.submit(Some(encoder.finish()));
        self.ctx.take_error("a resident step")?;
        Ok(())
    }

    /// Every world's state, read back (waits for the submitted steps), and
    /// the worlds flagged because their state became non-finite (their
    /// state is the last finite one).
    pub fn states(&self) -> Result<(Vec<State>, Vec<usize>), ResidentError> {
        let (n, nq, nv) = (self.nworlds, self.model.nq, self.model.nv);
        let q: Vec<f32> = self.read(&self.q, n * nq)?;
        let v: Vec<f32> = self.read(&self.v, n * nv)?;
        let flags: Vec<u32> = self.read(&self.flags, n)?;
        let states = (0..n)
            .map(|w| {
                State::new(
                    nalgebra::DVector::from_iterator(nq, (0..nq).map(|t| q[t * n + w] as f64)),
                    nalgebra::DVector::from_iterator(nv, (0..nv).map(|t| v[t * n + w] as f64)),
                )
            })
            .collect();
        let flagged = (0..n).filter(|&w| flags[w] != 0).collect();
        Ok((states, flagged))
    }

    /// The first `len` words of `buffer`, as `T` (waits for the steps
    /// submitted before).
    fn read<T: bytemuck::Pod>(
        &self,
        buffer: &wgpu::Buffer,
        len: usize,
    ) -> Result<Vec<T>, ResidentError> {
        let (device, queue) = (&self.ctx.device, &self.ctx.queue);
        let bytes = (len * std::mem::size_of::<T>()) as u64;
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("resident readback"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("resident readback"),
        });
        encoder.copy_buffer_to_buffer(buffer, 0, &readback, 0, bytes);
        let index = queue.submit(Some(encoder.finish()));
        let out = read_mapped(device, &readback, index, "reading resident state")?;
        self.ctx.take_error("reading resident state")?;
        Ok(bytemuck::pod_collect_to_vec(&out))
    }
}

/// The model buffers: per body `[parent, joint type, q index, v index]`
/// and [`BODY_F32`] floats (see `shaders/resident.wgsl`).
fn model_records(model: &Model, dt: f64) -> (Vec<u32>, Vec<f32>) {
    let nb = model.nbodies;
    let mut bu = vec![0u32; 4 * nb];
    let mut bf = vec![0f32; BODY_F32 * nb];
    for i in 1..nb {
        let (jtype, axis) = match model.joint_type[i] {
            JointType::Revolute(a) => (1, a),
            JointType::Prismatic(a) => (2, a),
            _ => (0, crate::math::Vec3::zeros()),
        };
        bu[4 * i] = model.body_parent[i] as u32;
        bu[4 * i + 1] = jtype;
        bu[4 * i + 2] = model.joint_idx_q[i] as u32;
        bu[4 * i + 3] = model.joint_idx_v[i] as u32;
        let r = &mut bf[BODY_F32 * i..BODY_F32 * (i + 1)];
        let p = &model.joint_placement[i];
        // Column-major rotation.
        for col in 0..3 {
            for row in 0..3 {
                r[3 * col + row] = p.rotation[(row, col)] as f32;
            }
        }
        for k in 0..3 {
            r[9 + k] = p.translation[k] as f32;
            r[12 + k] = axis[k] as f32;
        }
        let inertia = &model.body_inertia[i];
        r[15] = inertia.mass as f32;
        let ri = &inertia.rotational;
        for k in 0..3 {
            r[16 + k] = inertia.com[k] as f32;
            r[19 + k] = ri[(k, k)] as f32;
        }
        r[22] = ri[(0, 1)] as f32;
        r[23] = ri[(0, 2)] as f32;
        r[24] = ri[(1, 2)] as f32;
        if jtype != 0 {
            let k = model.joint_idx_v[i];
            r[25] = (model.dof_armature[k] + dt * model.dof_damping[k]) as f32;
            r[26] = model.dof_damping[k] as f32;
            r[27] = model.dof_stiffness[k] as f32;
            r[28] = model.dof_springref[k] as f32;
        }
    }
    (bu, bf)
}
