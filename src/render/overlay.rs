//! Marks drawn over a world's image: each contact's point (a ball) and
//! force (an arrow, its length proportional to the force). They are drawn
//! in a second pass over the scene, depth-tested among themselves only, so
//! that a force inside a body or under the ground stays visible; the depth
//! image is the scene's.

use super::mesh::{self, Vertex};
use crate::gpu::GpuContext;
use crate::math::{Mat3, Vec3};
use crate::model::{Model, Shape};
use crate::sim::WorldContact;
use nalgebra::Matrix4;
use wgpu::util::DeviceExt;

/// The marks of one world: `(point, force)` pairs in the world frame
/// (newtons).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overlay {
    pub forces: Vec<(Vec3, Vec3)>,
}

impl Overlay {
    /// A step's contacts of `model` (their impulses over `dt`): each force
    /// the one on the body further down the tree (the robot, not the
    /// ground it stands on).
    pub fn from_contacts(
        model: &Model,
        contacts: impl IntoIterator<Item = WorldContact>,
        dt: f64,
    ) -> Overlay {
        let body = |g: usize| model.geometries[g].body;
        Overlay {
            forces: contacts
                .into_iter()
                .map(|c| {
                    let sign = if body(c.geom_a) >= body(c.geom_b) {
                        1.0
                    } else {
                        -1.0
                    };
                    (c.point, c.impulse * (sign / dt))
                })
                .collect(),
        }
    }

    /// The default scale of the arrows (metres per newton): the model's
    /// weight draws 0.5 m long.
    pub fn default_scale(model: &Model) -> f64 {
        let weight = model.total_mass() * model.gravity.norm().max(9.81);
        0.5 / weight.max(1e-9)
    }
}

/// Instances per mark: the ball, the arrow's shaft and its head.
pub(super) const PER_MARK: usize = 3;
const POINT_RGB: [f32; 3] = [0.9, 0.15, 0.1];
const ARROW_RGB: [f32; 3] = [1.0, 0.8, 0.1];

/// The unit shapes of the marks, made once: a ball of radius 1, a
/// cylinder and a cone of radius 1 from z = 0 to z = 1.
pub(super) struct MarkMeshes {
    pub shapes: [(wgpu::Buffer, u32); PER_MARK],
}

impl MarkMeshes {
    pub(super) fn new(ctx: &GpuContext) -> MarkMeshes {
        let lifted = |shape: Shape| -> Vec<Vertex> {
            let mut t = mesh::triangles(&shape).expect("a solid");
            for v in &mut t {
                v[2] += 0.5;
            }
            t
        };
        let ring = (0..32).map(|k| {
            let a = 2.0 * std::f64::consts::PI * k as f64 / 32.0;
            Vec3::new(a.cos(), a.sin(), 0.0)
        });
        let cone = Shape::ConvexMesh {
            points: ring.chain([Vec3::z()]).collect(),
        };
        let meshes = [
            mesh::triangles(&Shape::Ball { radius: 1.0 }).expect("a solid"),
            lifted(Shape::Cylinder {
                half_length: 0.5,
                radius: 1.0,
            }),
            mesh::triangles(&cone).expect("a solid"),
        ];
        MarkMeshes {
            shapes: meshes.map(|t| {
                let buffer = ctx
                    .device
                    .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some("render mark"),
                        contents: bytemuck::cast_slice(&t),
                        usage: wgpu::BufferUsages::VERTEX,
                    });
                (buffer, t.len() as u32)
            }),
        }
    }
}

/// The instances (model matrix, colour) of a mark at `point` with `force`:
/// a ball of `radius`, an arrow `scale` metres per newton long.
pub(super) fn mark_instances(
    point: &Vec3,
    force: &Vec3,
    scale: f64,
    radius: f64,
) -> [([f32; 16], [f32; 4]); PER_MARK] {
    let place = |rotation: Mat3, size: Vec3, at: Vec3| {
        let mut m = Matrix4::<f64>::identity();
        m.fixed_view_mut::<3, 3>(0, 0)
            .copy_from(&(rotation * Mat3::from_diagonal(&size)));
        m.fixed_view_mut::<3, 1>(0, 3).copy_from(&at);
        let mut out = [0.0f32; 16];
        for (o, v) in out.iter_mut().zip(m.iter()) {
            *o = *v as f32;
        }
        out
    };
    let colour = |rgb: [f32; 3]| [rgb[0], rgb[1], rgb[2], 0.0];
    let ball = (
        place(Mat3::identity(), Vec3::repeat(radius), *point),
        colour(POINT_RGB),
    );
    let length = force.norm() * scale;
    let hidden = ([0.0f32; 16], [0.0f32; 4]);
    if !(length > 1e-9) || !length.is_finite() {
        return [ball, hidden, hidden];
    }
    let dir = force / force.norm();
    let turn = nalgebra::UnitQuaternion::rotation_between(&Vec3::z(), &dir).unwrap_or_else(|| {
        nalgebra::UnitQuaternion::from_axis_angle(&Vec3::x_axis(), std::f64::consts::PI)
    });
    let r = *turn.to_rotation_matrix().matrix();
    let head = (3.0 * radius).min(0.5 * length);
    let shaft = length - head;
    [
        ball,
        (
            place(r, Vec3::new(0.4 * radius, 0.4 * radius, shaft), *point),
            colour(ARROW_RGB),
        ),
        (
            place(r, Vec3::new(radius, radius, head), point + dir * shaft),
            colour(ARROW_RGB),
        ),
    ]
}
