//! A headless renderer (wgpu, offscreen): the model's visuals
//! ([`crate::model::Visual`]; its collision geometries when it has none) at
//! a configuration, seen by a pinhole [`Camera`], as an RGB image and a
//! depth image. Many worlds render in one submission, each into its own
//! layer of the targets ([`Renderer::render_many`]).
//!
//! A model without visuals is drawn from its geometries and its
//! skeleton (grey balls at the joints, thin capsules along the tree).
//!
//! Drawn: spheres, capsules, cylinders and boxes tessellated (32 slices,
//! 16 stacks), mesh files as their triangles (flat-shaded, not culled:
//! seen from either side),
//! other convex meshes as their hulls, height fields as their cells' triangles,
//! half-spaces as checkered squares of side `2 ×` [`Visual::PLANE_HALF_SIZE`].
//! Opaque: a transparent colour is drawn opaque. One light from above and
//! behind the camera, Lambert shading over an ambient third; no shadows.

mod mesh;
mod overlay;
pub mod records;
mod view;

pub use overlay::Overlay;
pub use view::{Target, View};

use crate::dynamics::{Data, forward_kinematics};
use crate::gpu::{GpuContext, GpuError, read_mapped};
use crate::math::{SE3, Vec3};
use crate::model::{Model, Shape, Visual};
use nalgebra::{Isometry3, Matrix4, Point3};
use std::sync::Arc;
use wgpu::util::DeviceExt;

/// The renderer's errors.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error("image size {width} × {height}: each side must be 1 to {max} pixels")]
    Size { width: u32, height: u32, max: u32 },
    #[error("configuration {world}: {reason}")]
    State { world: usize, reason: String },
    #[error("camera {world}: {reason}")]
    Camera { world: usize, reason: String },
    #[error("overlay {world}: {reason}")]
    Overlay { world: usize, reason: String },
    #[error("{got} images in one call; at most {max} (the adapter's {limit})")]
    TooMany {
        got: usize,
        max: u64,
        limit: &'static str,
    },
}

/// A pinhole camera: at `eye`, looking at `target`, `up` upwards in the
/// image, `fovy_degrees` the vertical field of view.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    pub eye: Vec3,
    pub target: Vec3,
    pub up: Vec3,
    pub fovy_degrees: f64,
}

impl Camera {
    /// The vertical field of view of [`Camera::look_at`] (degrees).
    pub const FOVY: f64 = 45.0;
    /// Near and far clipping distances (m).
    pub const NEAR: f64 = 0.01;
    pub const FAR: f64 = 1000.0;

    /// At `eye` looking at `target`, z up, 45° vertical field of view.
    pub fn look_at(eye: Vec3, target: Vec3) -> Camera {
        Camera {
            eye,
            target,
            up: Vec3::z(),
            fovy_degrees: Camera::FOVY,
        }
    }

    /// Looking at `target` from `distance`, from the direction of
    /// `azimuth` (degrees about z from +x) and `elevation` (degrees above
    /// the horizontal), as MuJoCo's free camera.
    pub fn orbit(target: Vec3, distance: f64, azimuth: f64, elevation: f64) -> Camera {
        let (az, el) = (azimuth.to_radians(), elevation.to_radians());
        let dir = Vec3::new(el.cos() * az.cos(), el.cos() * az.sin(), el.sin());
        Camera::look_at(target + dir * distance, target)
    }

    /// Why the camera cannot be used, if it cannot.
    fn check(&self) -> Result<(), String> {
        let finite = self
            .eye
            .iter()
            .chain(&self.target)
            .chain(&self.up)
            .all(|x| x.is_finite());
        let forward = self.target - self.eye;
        if !finite || !self.fovy_degrees.is_finite() {
            return Err("a value is not finite".into());
        }
        if !(self.fovy_degrees > 0.0 && self.fovy_degrees < 180.0) {
            return Err(format!("fovy {}° is not in (0°, 180°)", self.fovy_degrees));
        }
        if forward.norm() < 1e-12 || forward.cross(&self.up).norm() < 1e-9 * forward.norm() {
            return Err("the eye is on the target, or up is along the view".into());
        }
        Ok(())
    }

    /// World → camera (x right, y up, looking along −z).
    fn view(&self) -> Matrix4<f64> {
        let p = |v: &Vec3| Point3::new(v.x, v.y, v.z);
        Isometry3::look_at_rh(&p(&self.eye), &p(&self.target), &self.up).to_homogeneous()
    }

    /// Camera → clip, depth in [0, 1] (wgpu's), for an image of `aspect`
    /// (width over height).
    fn projection(&self, aspect: f64) -> Matrix4<f64> {
        let f = 1.0 / (self.fovy_degrees.to_radians() / 2.0).tan();
        let (n, far) = (Self::NEAR, Self::FAR);
        Matrix4::new(
            f / aspect,
            0.0,
            0.0,
            0.0,
            0.0,
            f,
            0.0,
            0.0,
            0.0,
            0.0,
            far / (n - far),
            n * far / (n - far),
            0.0,
            0.0,
            -1.0,
            0.0,
        )
    }

    /// The pixel `(column, row)` (from the top left, fractional) where
    /// the world point `p` appears in an image of `width` × `height`, and
    /// its depth along the view axis (the renderer's model, for checks).
    pub fn project(&self, p: &Vec3, width: u32, height: u32) -> (f64, f64, f64) {
        let aspect = width as f64 / height as f64;
        let v = self.view() * p.push(1.0);
        let c = self.projection(aspect) * v;
        let (x, y) = (c.x / c.w, c.y / c.w);
        (
            (x + 1.0) / 2.0 * width as f64,
            (1.0 - y) / 2.0 * height as f64,
            -v.z,
        )
    }
}

/// An image: `rgb` row by row from the top (3 bytes per pixel), `depth`
/// the distance along the camera's axis of what each pixel sees (m; 0
/// where nothing is drawn).
#[derive(Clone, Debug, PartialEq)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<u8>,
    pub depth: Vec<f32>,
}

/// A shape the renderer draws.
struct Drawn {
    body: usize,
    body_from_geom: SE3,
    /// The radius of a ball about the origin holding the shape (`None`:
    /// unbounded, a ground).
    reach: Option<f64>,
    /// Drawn from both sides (a mesh file's triangles), without culling.
    two_sided: bool,
    color: [f32; 4],
    vertices: wgpu::Buffer,
    count: u32,
}

/// Targets for `layers` images.
struct Targets {
    layers: u32,
    color: wgpu::Texture,
    depth_out: wgpu::Texture,
    depth: wgpu::Texture,
    readback: wgpu::Buffer,
}

/// Bytes per row of a copy, padded as wgpu needs.
fn padded_row(width: u32, bytes_per_pixel: u32) -> u32 {
    let row = width * bytes_per_pixel;
    row.div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT
}

/// The renderer of one model at one image size.
pub struct Renderer {
    ctx: GpuContext,
    model: Arc<Model>,
    width: u32,
    height: u32,
    pipeline: wgpu::RenderPipeline,
    /// The same without culling, for two-sided shapes.
    two_sided_pipeline: wgpu::RenderPipeline,
    /// The marks' pass: colour only, over the scene.
    overlay_pipeline: wgpu::RenderPipeline,
    marks: overlay::MarkMeshes,
    layout: wgpu::BindGroupLayout,
    drawn: Vec<Drawn>,
    targets: Option<Targets>,
    data: Data,
}

const COLOR_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;
const DEPTH_OUT_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::R32Float;
const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;
/// Floats per instance ([`records::RenderInstance`]): the 4 × 4 model
/// matrix and the colour.
const INSTANCE_FLOATS: usize = std::mem::size_of::<records::RenderInstance>() / 4;
/// Floats per camera ([`records::RenderCamera`]): view-projection, view,
/// light direction.
const CAMERA_FLOATS: usize = std::mem::size_of::<records::RenderCamera>() / 4;

impl Renderer {
    /// A renderer of `model` making `width` × `height` images, on the
    /// process's GPU context.
    pub fn new(model: Arc<Model>, width: u32, height: u32) -> Result<Renderer, RenderError> {
        let ctx = GpuContext::new()?;
        let max = ctx.limits.max_texture_dimension_2d;
        if width == 0 || height == 0 || width > max || height > max {
            return Err(RenderError::Size { width, height, max });
        }
        let device = &ctx.device;
        let shader = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("render"),
            source: wgpu::ShaderSource::Wgsl(records::source().into()),
        });
        let entry = |binding, ty| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
            ty: wgpu::BindingType::Buffer {
                ty,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let storage = wgpu::BufferBindingType::Storage { read_only: true };
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("render"),
            entries: &[
                entry(0, storage),
                entry(1, storage),
                entry(2, wgpu::BufferBindingType::Uniform),
            ],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("render"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let stride = std::mem::size_of::<mesh::Vertex>() as u64;
        let targets_scene = [Some(COLOR_FORMAT.into()), Some(DEPTH_OUT_FORMAT.into())];
        let targets_marks = [Some(COLOR_FORMAT.into())];
        let make = |entry: &str, targets: &[Option<wgpu::ColorTargetState>], cull| {
            device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some("render"),
                layout: Some(&pipeline_layout),
                vertex: wgpu::VertexState {
                    module: &shader,
                    entry_point: Some("vs_main"),
                    compilation_options: Default::default(),
                    buffers: &[Some(wgpu::VertexBufferLayout {
                        array_stride: stride,
                        step_mode: wgpu::VertexStepMode::Vertex,
                        attributes: &wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3],
                    })],
                },
                primitive: wgpu::PrimitiveState {
                    cull_mode: cull,
                    ..Default::default()
                },
                depth_stencil: Some(wgpu::DepthStencilState {
                    format: DEPTH_FORMAT,
                    depth_write_enabled: Some(true),
                    depth_compare: Some(wgpu::CompareFunction::Less),
                    stencil: Default::default(),
                    bias: Default::default(),
                }),
                multisample: Default::default(),
                fragment: Some(wgpu::FragmentState {
                    module: &shader,
                    entry_point: Some(entry),
                    compilation_options: Default::default(),
                    targets,
                }),
                multiview_mask: None,
                cache: None,
            })
        };
        let back = Some(wgpu::Face::Back);
        let pipeline = make("fs_main", &targets_scene, back);
        let two_sided_pipeline = make("fs_main", &targets_scene, None);
        let overlay_pipeline = make("fs_overlay", &targets_marks, back);
        let marks = overlay::MarkMeshes::new(&ctx);
        let drawn = drawn_shapes(&ctx, &model);
        ctx.take_error("creating the renderer")?;
        Ok(Renderer {
            data: Data::new(&model),
            ctx,
            model,
            width,
            height,
            pipeline,
            two_sided_pipeline,
            overlay_pipeline,
            marks,
            layout,
            drawn,
            targets: None,
        })
    }

    /// The most images one call draws when each world has up to `marks`
    /// overlay marks, and the adapter's limit that sets it (calls past it
    /// are refused: draw in chunks of this size).
    pub fn max_images(&self, marks: usize) -> usize {
        self.capacity(marks).0
    }

    fn capacity(&self, marks: usize) -> (usize, &'static str) {
        let limits = &self.ctx.limits;
        let per_world = self.drawn.len().max(1) + overlay::PER_MARK * marks;
        let per_image = [
            (
                1,
                limits.max_texture_array_layers as u64,
                "max_texture_array_layers",
            ),
            (
                2 * padded_row(self.width, 4) as u64 * self.height as u64,
                limits.max_buffer_size,
                "max_buffer_size",
            ),
            (
                (per_world * INSTANCE_FLOATS * 4) as u64,
                limits.max_storage_buffer_binding_size,
                "max_storage_buffer_binding_size",
            ),
        ];
        (per_image.into_iter())
            .map(|(bytes, limit, name)| ((limit / bytes).min(usize::MAX as u64) as usize, name))
            .min_by_key(|(max, _)| *max)
            .expect("three limits")
    }

    /// The image size.
    pub fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    /// The default camera's azimuth and elevation (degrees).
    pub const AZIMUTH: f64 = -120.0;
    pub const ELEVATION: f64 = 20.0;

    fn check_q(&self, world: usize, q: &[f64]) -> Result<(), RenderError> {
        let state = crate::sim::State::new(
            nalgebra::DVector::from_column_slice(q),
            nalgebra::DVector::zeros(self.model.nv),
        );
        crate::sim::check_state(&self.model, &state).map_err(|e| RenderError::State {
            world,
            reason: e.to_string(),
        })
    }

    /// The model at configuration `q` seen by `camera`.
    pub fn render(&mut self, q: &[f64], camera: &Camera) -> Result<Image, RenderError> {
        let mut images = self.render_many(&[q], &[*camera])?;
        Ok(images.remove(0))
    }

    /// One image per configuration, `qs[k]` seen by `cameras[k]`, in one
    /// submission (each world in its own layer of the targets). The same
    /// configuration and camera give the same image bit for bit.
    pub fn render_many(
        &mut self,
        qs: &[&[f64]],
        cameras: &[Camera],
    ) -> Result<Vec<Image>, RenderError> {
        self.render_overlaid(qs, cameras, &[], 0.0)
    }

    /// As [`Renderer::render_many`], with each world's `overlays[k]` drawn
    /// over its image (none when `overlays` is empty): contact points as
    /// red balls, forces as yellow arrows `scale` metres per newton long
    /// ([`Overlay::default_scale`]). The depth images are the scene's.
    pub fn render_overlaid(
        &mut self,
        qs: &[&[f64]],
        cameras: &[Camera],
        overlays: &[Overlay],
        scale: f64,
    ) -> Result<Vec<Image>, RenderError> {
        let n = qs.len();
        if cameras.len() != n {
            return Err(RenderError::Camera {
                world: n.min(cameras.len()),
                reason: format!("{} cameras for {n} configurations", cameras.len()),
            });
        }
        if !overlays.is_empty() && overlays.len() != n {
            return Err(RenderError::Overlay {
                world: n.min(overlays.len()),
                reason: format!("{} overlays for {n} configurations", overlays.len()),
            });
        }
        if !(scale.is_finite() && scale >= 0.0) {
            return Err(RenderError::Overlay {
                world: 0,
                reason: format!("arrow scale {scale} is not a non-negative number"),
            });
        }
        for (w, o) in overlays.iter().enumerate() {
            if let Some((p, f)) = o
                .forces
                .iter()
                .find(|(p, f)| !(p.iter().chain(f.iter()).all(|x| x.is_finite())))
            {
                return Err(RenderError::Overlay {
                    world: w,
                    reason: format!("a mark is not finite (point {p:?}, force {f:?})"),
                });
            }
        }
        // Instances per world: its shapes, then its marks (three each).
        let base = self.drawn.len().max(1);
        let max_marks = overlays.iter().map(|o| o.forces.len()).max().unwrap_or(0);
        let per_world = base + overlay::PER_MARK * max_marks;
        if n == 0 {
            return Ok(Vec::new());
        }
        // Checked before anything is allocated: the targets' layers, the
        // readback and the instances of `n` images.
        let (max, limit) = self.capacity(max_marks);
        if n > max {
            return Err(RenderError::TooMany {
                got: n,
                max: max as u64,
                limit,
            });
        }
        for (w, (q, c)) in qs.iter().zip(cameras).enumerate() {
            self.check_q(w, q)?;
            c.check()
                .map_err(|reason| RenderError::Camera { world: w, reason })?;
        }
        // Each shape's placement in each world, each world's camera.
        let mut instances = Vec::with_capacity(n * per_world * INSTANCE_FLOATS);
        let mut camera_data = Vec::with_capacity(n * CAMERA_FLOATS);
        let aspect = self.width as f64 / self.height as f64;
        for (w, (q, camera)) in qs.iter().zip(cameras).enumerate() {
            forward_kinematics(&self.model, &mut self.data, q);
            for d in &self.drawn {
                let x = self.data.world_from_body[d.body].mul(&d.body_from_geom);
                let mut m = Matrix4::<f64>::identity();
                m.fixed_view_mut::<3, 3>(0, 0).copy_from(&x.rotation);
                m.fixed_view_mut::<3, 1>(0, 3).copy_from(&x.translation);
                instances.extend(m.iter().map(|&v| v as f32));
                instances.extend_from_slice(&d.color);
            }
            if self.drawn.is_empty() {
                instances.extend(std::iter::repeat_n(0.0f32, INSTANCE_FLOATS));
            }
            // The marks: balls of a constant size on the image.
            let forces = overlays.get(w).map_or(&[][..], |o| &o.forces[..]);
            let radius = 0.006 * (camera.eye - camera.target).norm();
            for (p, f) in forces {
                for (m, c) in overlay::mark_instances(p, f, scale, radius) {
                    instances.extend_from_slice(&m);
                    instances.extend_from_slice(&c);
                }
            }
            let unused = overlay::PER_MARK * (max_marks - forces.len());
            instances.extend(std::iter::repeat_n(0.0f32, unused * INSTANCE_FLOATS));
            let view = camera.view();
            let view_proj = camera.projection(aspect) * view;
            camera_data.extend(view_proj.iter().map(|&v| v as f32));
            camera_data.extend(view.iter().map(|&v| v as f32));
            let back = (camera.eye - camera.target).normalize();
            let light = (back + camera.up.normalize() * 1.5).normalize();
            camera_data.extend([light.x as f32, light.y as f32, light.z as f32, 0.0]);
        }
        self.ensure_targets(n as u32);
        let device = &self.ctx.device;
        let buffer = |label, contents: &[u8], usage| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage,
            })
        };
        let instance_buffer = buffer(
            "render instances",
            bytemuck::cast_slice(&instances),
            wgpu::BufferUsages::STORAGE,
        );
        let camera_buffer = buffer(
            "render cameras",
            bytemuck::cast_slice(&camera_data),
            wgpu::BufferUsages::STORAGE,
        );
        let params = records::RenderParams {
            per_world: per_world as u32,
            ..Default::default()
        };
        let params_buffer = buffer(
            "render params",
            bytemuck::bytes_of(&params),
            wgpu::BufferUsages::UNIFORM,
        );
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("render"),
            layout: &self.layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: instance_buffer.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: camera_buffer.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: params_buffer.as_entire_binding(),
                },
            ],
        });
        let t = self.targets.as_ref().expect("targets made above");
        let layer_view = |tex: &wgpu::Texture, layer: u32| {
            tex.create_view(&wgpu::TextureViewDescriptor {
                dimension: Some(wgpu::TextureViewDimension::D2),
                base_array_layer: layer,
                array_layer_count: Some(1),
                ..Default::default()
            })
        };
        let mut encoder = device.create_command_encoder(&Default::default());
        for w in 0..n as u32 {
            let (color, depth_out, depth) = (
                layer_view(&t.color, w),
                layer_view(&t.depth_out, w),
                layer_view(&t.depth, w),
            );
            let attachment = |view, load| {
                Some(wgpu::RenderPassColorAttachment {
                    view,
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations {
                        load,
                        store: wgpu::StoreOp::Store,
                    },
                })
            };
            // The depth test's buffer, cleared for each pass.
            let depth_test = Some(wgpu::RenderPassDepthStencilAttachment {
                view: &depth,
                depth_ops: Some(wgpu::Operations {
                    load: wgpu::LoadOp::Clear(1.0),
                    store: wgpu::StoreOp::Discard,
                }),
                stencil_ops: None,
            });
            // A pale sky; no depth where nothing is drawn.
            let sky = wgpu::Color {
                r: 0.85,
                g: 0.9,
                b: 0.95,
                a: 1.0,
            };
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("render"),
                color_attachments: &[
                    attachment(&color, wgpu::LoadOp::Clear(sky)),
                    attachment(&depth_out, wgpu::LoadOp::Clear(wgpu::Color::TRANSPARENT)),
                ],
                depth_stencil_attachment: depth_test.clone(),
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            pass.set_bind_group(0, &bind_group, &[]);
            let mut two_sided = None;
            for (s, d) in self.drawn.iter().enumerate() {
                if two_sided != Some(d.two_sided) {
                    two_sided = Some(d.two_sided);
                    pass.set_pipeline(if d.two_sided {
                        &self.two_sided_pipeline
                    } else {
                        &self.pipeline
                    });
                }
                let k = w * per_world as u32 + s as u32;
                pass.set_vertex_buffer(0, d.vertices.slice(..));
                pass.draw(0..d.count, k..k + 1);
            }
            drop(pass);
            let marks = overlays.get(w as usize).map_or(0, |o| o.forces.len());
            if marks == 0 {
                continue;
            }
            // The marks over the scene, depth-tested among themselves.
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("render marks"),
                color_attachments: &[attachment(&color, wgpu::LoadOp::Load)],
                depth_stencil_attachment: depth_test,
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            pass.set_pipeline(&self.overlay_pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            for m in 0..marks {
                for (part, (vertices, count)) in self.marks.shapes.iter().enumerate() {
                    let k = (w as usize * per_world + base + overlay::PER_MARK * m + part) as u32;
                    pass.set_vertex_buffer(0, vertices.slice(..));
                    pass.draw(0..*count, k..k + 1);
                }
            }
        }
        // Both targets into the readback buffer: the colours, then the depths.
        let (w, h) = (self.width, self.height);
        let color_row = padded_row(w, 4);
        let depth_row = padded_row(w, 4);
        let color_bytes = color_row as u64 * h as u64 * n as u64;
        let extent = wgpu::Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: n as u32,
        };
        let copy = |encoder: &mut wgpu::CommandEncoder, tex: &wgpu::Texture, offset, row| {
            encoder.copy_texture_to_buffer(
                tex.as_image_copy(),
                wgpu::TexelCopyBufferInfo {
                    buffer: &t.readback,
                    layout: wgpu::TexelCopyBufferLayout {
                        offset,
                        bytes_per_row: Some(row),
                        rows_per_image: Some(h),
                    },
                },
                extent,
            );
        };
        copy(&mut encoder, &t.color, 0, color_row);
        copy(&mut encoder, &t.depth_out, color_bytes, depth_row);
        let index = self.ctx.queue.submit([encoder.finish()]);
        let bytes = read_mapped(device, &t.readback, index, "rendering")?;
        self.ctx.take_error("rendering")?;
        let mut images = Vec::with_capacity(n);
        for k in 0..n {
            let mut rgb = Vec::with_capacity((w * h * 3) as usize);
            let mut depth = Vec::with_capacity((w * h) as usize);
            for row in 0..h as usize {
                let c = (k * h as usize + row) * color_row as usize;
                for px in bytes[c..c + 4 * w as usize].chunks_exact(4) {
                    rgb.extend_from_slice(&px[..3]);
                }
                let d = color_bytes as usize + (k * h as usize + row) * depth_row as usize;
                depth.extend(
                    bytes[d..d + 4 * w as usize]
                        .chunks_exact(4)
                        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                );
            }
            images.push(Image {
                width: w,
                height: h,
                rgb,
                depth,
            });
        }
        Ok(images)
    }

    /// Targets with room for `layers` images.
    fn ensure_targets(&mut self, layers: u32) {
        if self.targets.as_ref().is_some_and(|t| t.layers >= layers) {
            return;
        }
        let device = &self.ctx.device;
        let size = wgpu::Extent3d {
            width: self.width,
            height: self.height,
            depth_or_array_layers: layers,
        };
        let texture = |label, format, usage| {
            device.create_texture(&wgpu::TextureDescriptor {
                label: Some(label),
                size,
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format,
                usage,
                view_formats: &[],
            })
        };
        let target = wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC;
        let h = self.height as u64 * layers as u64;
        let bytes = (padded_row(self.width, 4) as u64 + padded_row(self.width, 4) as u64) * h;
        self.targets = Some(Targets {
            layers,
            color: texture("render colour", COLOR_FORMAT, target),
            depth_out: texture("render depth out", DEPTH_OUT_FORMAT, target),
            depth: texture(
                "render depth",
                DEPTH_FORMAT,
                wgpu::TextureUsages::RENDER_ATTACHMENT,
            ),
            readback: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("render readback"),
                size: bytes,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
        });
    }
}

/// The shapes to draw: the model's visuals, or its geometries (grey
/// bodies, a green ground) when it has none.
/// A model without visuals shows its kinematic tree too: a ball at each
/// body's origin (its joint) and a thin capsule from there to its
/// children's joints (those that keep their place on it: revolute,
/// spherical, fixed), to its geometries and to its centre of mass.
fn skeleton(model: &Model) -> Vec<Visual> {
    use crate::model::JointType;
    let mut bones: Vec<(usize, Vec3)> = Vec::new();
    for b in 1..model.nbodies {
        let p = model.body_parent[b];
        let kept = matches!(
            model.joint_type[b],
            JointType::Revolute(_) | JointType::Spherical | JointType::Fixed
        );
        if p != crate::model::WORLD && kept {
            bones.push((p, model.joint_placement[b].translation));
        }
    }
    for g in &model.geometries {
        if g.body != crate::model::WORLD {
            bones.push((g.body, g.body_from_geom.translation));
        }
    }
    for b in 1..model.nbodies {
        bones.push((b, model.body_inertia[b].com));
    }
    bones.retain(|(_, to)| to.norm() > 1e-6);
    let mean = bones.iter().map(|(_, to)| to.norm()).sum::<f64>() / bones.len().max(1) as f64;
    let radius = (0.06 * mean).clamp(0.004, 0.03);
    // A ball at each body's origin (its joint).
    let joints = (1..model.nbodies).map(|body| Visual {
        body,
        body_from_geom: SE3::identity(),
        shape: Shape::Ball {
            radius: 1.8 * radius,
        },
        rgba: [0.35, 0.35, 0.4, 1.0],
        mesh: None,
    });
    bones
        .into_iter()
        .map(|(body, to)| {
            let length = to.norm();
            let axis = nalgebra::Unit::new_normalize(to);
            let turn = nalgebra::UnitQuaternion::rotation_between_axis(&Vec3::z_axis(), &axis)
                .unwrap_or_else(|| {
                    nalgebra::UnitQuaternion::from_axis_angle(&Vec3::x_axis(), std::f64::consts::PI)
                });
            Visual {
                body,
                body_from_geom: SE3::new(*turn.to_rotation_matrix().matrix(), to / 2.0),
                shape: Shape::Capsule {
                    half_length: length / 2.0,
                    radius,
                },
                rgba: [0.5, 0.5, 0.55, 1.0],
                mesh: None,
            }
        })
        .chain(joints)
        .collect()
}

/// The radius of a ball about a visual's origin holding what it draws
/// (`None`: unbounded, a ground): a mesh file's triangles, else its shape.
fn reach(v: &Visual) -> Option<f64> {
    if let Some(m) = &v.mesh {
        let far = m
            .vertices
            .iter()
            .map(|p| p.iter().map(|x| (*x as f64).powi(2)).sum::<f64>());
        return Some(far.fold(0.0, f64::max).sqrt());
    }
    match &v.shape {
        Shape::Ball { radius } => Some(*radius),
        Shape::Cuboid { half_extents } => Some(half_extents.norm()),
        Shape::Ellipsoid { radii } => Some(radii.max()),
        Shape::Capsule {
            half_length,
            radius,
        } => Some(half_length + radius),
        Shape::Cylinder {
            half_length,
            radius,
        } => Some(half_length.hypot(*radius)),
        Shape::ConvexMesh { points } => Some(points.iter().map(|p| p.norm()).fold(0.0, f64::max)),
        Shape::HalfSpace { .. } | Shape::HeightField(_) => None,
    }
}

fn drawn_shapes(ctx: &GpuContext, model: &Model) -> Vec<Drawn> {
    let from_geometries: Vec<Visual>;
    let visuals: &[Visual] = if model.visuals.is_empty() {
        from_geometries = model
            .geometries
            .iter()
            .map(|g| Visual {
                body: g.body,
                body_from_geom: g.body_from_geom,
                shape: g.shape.clone(),
                rgba: if g.body == crate::model::WORLD {
                    Visual::GROUND_RGBA
                } else {
                    [0.7, 0.55, 0.4, 1.0]
                },
                mesh: None,
            })
            .chain(skeleton(model))
            .collect();
        &from_geometries
    } else {
        &model.visuals
    };
    visuals
        .iter()
        .filter_map(|v| {
            let triangles = match &v.mesh {
                Some(m) => mesh::file_mesh(m)?,
                None => mesh::triangles(&v.shape)?,
            };
            let checker = matches!(v.shape, Shape::HalfSpace { .. } | Shape::HeightField(_));
            let [r, g, b, _] = v.rgba;
            Some(Drawn {
                body: v.body,
                body_from_geom: v.body_from_geom,
                reach: reach(v),
                two_sided: v.mesh.is_some(),
                color: [
                    r as f32,
                    g as f32,
                    b as f32,
                    if checker { 1.0 } else { 0.0 },
                ],
                vertices: ctx
                    .device
                    .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some("render shape"),
                        contents: bytemuck::cast_slice(&triangles),
                        usage: wgpu::BufferUsages::VERTEX,
                    }),
                count: triangles.len() as u32,
            })
        })
        .collect()
}
