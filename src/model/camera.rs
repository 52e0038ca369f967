//! A model's own cameras: MJCF's `<camera>` elements, resolved to the
//! model's bodies. A camera's frame looks along its −z axis with +y up
//! in the image (MuJoCo's convention); [`ModelCamera::pose`] places it
//! from the bodies' world poses as MuJoCo's `mj_camlight` does for each
//! `mode`. The renderer draws through them (`render::View::Model`).

use super::{Model, Subtree};
use crate::math::{Mat3, SE3, Vec3};

/// A camera of the model file.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ModelCamera {
    /// The file's name, or `camera{k}` (`k` its index) when it has none.
    pub name: String,
    /// The model body that carries it, and its frame there.
    pub body: usize,
    pub body_from_camera: SE3,
    pub mode: CameraMode,
    /// Vertical field of view (degrees).
    pub fovy_degrees: f64,
}

/// How a camera moves with the model (MJCF's `mode`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum CameraMode {
    /// Fixed in its body's frame.
    Fixed,
    /// At a constant world offset from its file body's origin (`anchor`,
    /// in the carrying body's frame), with a constant world orientation:
    /// both as at `qpos0`.
    Track {
        anchor: Vec3,
        offset: Vec3,
        rotation: Mat3,
    },
    /// At a constant world offset from the centre of mass of its file
    /// body's subtree, with a constant world orientation, as at `qpos0`.
    TrackCom {
        subtree: Subtree,
        offset: Vec3,
        rotation: Mat3,
    },
    /// Placed as `Fixed`, turned to look at a point of a body (its file
    /// body's origin, `point` in the model body's frame) with world z up.
    TargetBody { body: usize, point: Vec3 },
    /// Placed as `Fixed`, turned to look at a subtree's centre of mass.
    TargetBodyCom { subtree: Subtree },
}

impl ModelCamera {
    /// The camera's world pose (its frame: −z the view, +y up) given the
    /// bodies' world poses.
    pub fn pose(&self, model: &Model, world_from_body: &[SE3]) -> SE3 {
        let fixed = world_from_body[self.body].mul(&self.body_from_camera);
        match &self.mode {
            CameraMode::Fixed => fixed,
            CameraMode::Track {
                anchor,
                offset,
                rotation,
            } => SE3::new(
                *rotation,
                world_from_body[self.body].act_point(anchor) + offset,
            ),
            CameraMode::TrackCom {
                subtree,
                offset,
                rotation,
            } => SE3::new(*rotation, subtree.com(model, world_from_body) + offset),
            CameraMode::TargetBody { body, point } => {
                looking_at(fixed, world_from_body[*body].act_point(point))
            }
            CameraMode::TargetBodyCom { subtree } => {
                looking_at(fixed, subtree.com(model, world_from_body))
            }
        }
    }
}

/// `from` turned to look at `target` with world z up (MuJoCo's rule; kept
/// as it is when the target is on the camera or straight above or below).
fn looking_at(from: SE3, target: Vec3) -> SE3 {
    let z = from.translation - target;
    let x = Vec3::z().cross(&z);
    if z.norm() < 1e-12 || x.norm() < 1e-12 * z.norm() {
        return from;
    }
    let (z, x) = (z.normalize(), x.normalize());
    let y = z.cross(&x);
    SE3::new(Mat3::from_columns(&[x, y, z]), from.translation)
}

impl Model {
    /// The camera named `name` (its index in [`Model::cameras`]).
    pub fn camera_index(&self, name: &str) -> Option<usize> {
        self.cameras.iter().position(|c| c.name == name)
    }

    /// Whether every camera refers to bodies the model has, with valid
    /// numbers.
    pub(super) fn check_cameras(&self) -> Result<(), String> {
        let nb = self.nbodies;
        for c in &self.cameras {
            let bad = |why: &str| Err(format!("camera `{}`: {why}", c.name));
            if c.body >= nb || !c.body_from_camera.is_finite() {
                return bad("its frame is out of range or not finite");
            }
            if !(c.fovy_degrees > 0.0 && c.fovy_degrees < 180.0) {
                return bad("fovy is not in (0°, 180°)");
            }
            let subtree = match &c.mode {
                CameraMode::Fixed => None,
                CameraMode::Track {
                    anchor,
                    offset,
                    rotation,
                } => {
                    let finite = anchor
                        .iter()
                        .chain(offset)
                        .chain(rotation)
                        .all(|x| x.is_finite());
                    if !finite {
                        return bad("its offset is not finite");
                    }
                    None
                }
                CameraMode::TrackCom {
                    subtree,
                    offset,
                    rotation,
                } => {
                    if !offset.iter().chain(rotation).all(|x| x.is_finite()) {
                        return bad("its offset is not finite");
                    }
                    Some(subtree)
                }
                CameraMode::TargetBody { body, point } => {
                    if *body >= nb || !point.iter().all(|x| x.is_finite()) {
                        return bad("its target is out of range or not finite");
                    }
                    None
                }
                CameraMode::TargetBodyCom { subtree } => Some(subtree),
            };
            if let Some(t) = subtree {
                t.check(self)
                    .map_err(|why| format!("camera `{}`: {why}", c.name))?;
            }
        }
        Ok(())
    }
}
