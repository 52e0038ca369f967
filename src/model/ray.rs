//! What MuJoCo's rangefinders see: every geom of the file that is not
//! transparent (`rgba` alpha 0), colliding or not, in any group, meshes by
//! their triangles (not their hulls), planes from the front and within
//! their `size` (0: unbounded), solids also from inside (the far surface),
//! as MuJoCo's `mj_ray` does (checked against MuJoCo 4.0.0 in
//! tests/sensors.rs).

use super::Shape;
use super::mesh::VisualMesh;
use crate::math::{SE3, Vec3};
use parry3d_f64::math::Vector as PVec;
use parry3d_f64::query::Ray;
use parry3d_f64::shape::{SharedShape, TriMesh};
use std::sync::{Arc, OnceLock};

/// The surface a ray meets.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub enum RayShape {
    /// The plane `z = 0` of the geom frame, met from `z > 0` only, within
    /// `|x| ≤ half_size[0]`, `|y| ≤ half_size[1]` where those are positive.
    Plane { half_size: [f64; 2] },
    /// A primitive, hull or height field (met from outside and inside).
    Solid(Shape),
    /// A mesh's triangles (in the geom frame, scaled).
    Mesh(Arc<VisualMesh>),
}

/// A geom as rangefinders see it.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct RayTarget {
    pub body: usize,
    /// The file body it was declared in, as [`super::Geometry::frame`]
    /// (`None`: the world): a rangefinder does not see its own body's.
    pub frame: Option<usize>,
    pub body_from_geom: SE3,
    pub shape: RayShape,
    /// The parry shape and its placement in the geom frame, built on first use.
    #[serde(skip)]
    built: OnceLock<Option<(SharedShape, SE3)>>,
}

impl std::fmt::Debug for RayTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RayTarget")
            .field("body", &self.body)
            .field("frame", &self.frame)
            .field("body_from_geom", &self.body_from_geom)
            .field("shape", &self.shape)
            .finish()
    }
}

impl RayTarget {
    pub fn new(body: usize, frame: Option<usize>, body_from_geom: SE3, shape: RayShape) -> Self {
        RayTarget {
            body,
            frame,
            body_from_geom,
            shape,
            built: OnceLock::new(),
        }
    }

    /// Why it cannot be used, if it cannot.
    pub(super) fn check(&self, nbodies: usize, nframes: usize) -> Result<(), String> {
        if self.body >= nbodies
            || self.frame.is_some_and(|k| k >= nframes)
            || !self.body_from_geom.is_finite()
        {
            return Err(
                "a rangefinder target's body or frame is out of range or its pose not finite"
                    .into(),
            );
        }
        match &self.shape {
            RayShape::Plane { half_size } if half_size.iter().any(|h| !(*h >= 0.0)) => {
                Err("a rangefinder plane's size is negative or NaN".into())
            }
            _ => Ok(()),
        }
    }

    fn built(&self) -> Option<&(SharedShape, SE3)> {
        self.built
            .get_or_init(|| match &self.shape {
                RayShape::Plane { .. } => None,
                RayShape::Solid(shape) => super::builder::make_collider("ray", shape).ok(),
                RayShape::Mesh(mesh) => {
                    let vertices = (mesh.vertices.iter())
                        .map(|v| PVec::new(v[0] as f64, v[1] as f64, v[2] as f64))
                        .collect();
                    TriMesh::new(vertices, mesh.triangles.clone())
                        .ok()
                        .map(|t| (SharedShape::new(t), SE3::identity()))
                }
            })
            .as_ref()
    }

    /// The distance along the unit direction `dir` from world point
    /// `origin` to where the ray first meets this target, with its body at
    /// `world_from_body`.
    pub fn cast(&self, world_from_body: &SE3, origin: &Vec3, dir: &Vec3) -> Option<f64> {
        let world_from_geom = world_from_body.mul(&self.body_from_geom);
        if let RayShape::Plane { half_size } = &self.shape {
            let o = world_from_geom.act_inv_point(origin);
            let d = world_from_geom.rotation.transpose() * dir;
            if !(o.z > 0.0 && d.z < 0.0) {
                return None;
            }
            let t = -o.z / d.z;
            let p = o + d * t;
            let inside = |k: usize| half_size[k] <= 0.0 || p[k].abs() <= half_size[k];
            return (inside(0) && inside(1)).then_some(t);
        }
        let (shape, geom_from_collider) = self.built()?;
        let frame = world_from_geom.mul(geom_from_collider);
        let o = frame.act_inv_point(origin);
        let d = frame.rotation.transpose() * dir;
        let ray = Ray::new(PVec::new(o.x, o.y, o.z), PVec::new(d.x, d.y, d.z));
        shape
            .as_ref()
            .cast_local_ray(&ray, f64::MAX, false)
            .filter(|t| t.is_finite())
    }
}
