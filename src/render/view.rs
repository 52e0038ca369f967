//! Where a render call's camera is, for each world: the model's own
//! cameras ([`crate::model::ModelCamera`]) or the free camera orbiting a
//! target that follows the world (its centre of mass, a body, a frame) or
//! stays put.

use super::{Camera, RenderError, Renderer};
use crate::dynamics::{center_of_mass, forward_kinematics};
use crate::math::Vec3;

/// What the free camera looks at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Target {
    /// The world's centre of mass.
    CenterOfMass,
    /// A model body's origin (followed: a tracking camera).
    Body(usize),
    /// A frame's origin ([`crate::model::Model::frames`]: a file's body or
    /// site; followed).
    Frame(usize),
    /// A fixed point of the world.
    Point(Vec3),
}

/// The camera of a render call, placed in each world at its configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum View {
    /// The model's camera of this index ([`crate::model::Model::cameras`]).
    Model(usize),
    /// Looking at `target` from `azimuth` (degrees about z from +x) and
    /// `elevation` (degrees above the horizontal) at `distance` (m; `None`:
    /// far enough for the shapes of the moving bodies about the target to
    /// fill 85 % of the image's height).
    Orbit {
        target: Target,
        azimuth: f64,
        elevation: f64,
        distance: Option<f64>,
    },
}

impl Default for View {
    /// [`Renderer::default_camera`]'s.
    fn default() -> View {
        View::Orbit {
            target: Target::CenterOfMass,
            azimuth: Renderer::AZIMUTH,
            elevation: Renderer::ELEVATION,
            distance: None,
        }
    }
}

impl Target {
    /// The body named `name`, else the frame (a file's body or site).
    pub fn named(model: &crate::model::Model, name: &str) -> Option<Target> {
        match model.body_name.iter().position(|b| b == name) {
            Some(b) => Some(Target::Body(b)),
            None => Some(Target::Frame(
                model.frames.iter().position(|f| f.name == name)?,
            )),
        }
    }
}

impl View {
    /// The model's camera named `name`, else the free camera following the
    /// body or frame named `name` ([`Target::named`]) from the default angles.
    pub fn named(model: &crate::model::Model, name: &str) -> Option<View> {
        if let Some(k) = model.camera_index(name) {
            return Some(View::Model(k));
        }
        Some(View::Orbit {
            target: Target::named(model, name)?,
            azimuth: Renderer::AZIMUTH,
            elevation: Renderer::ELEVATION,
            distance: None,
        })
    }
}

impl Renderer {
    /// A camera that sees the model at `q`: looking at its centre of mass
    /// from the front-left and above, far enough to hold what moves.
    pub fn default_camera(&mut self, q: &[f64]) -> Result<Camera, RenderError> {
        self.camera(q, &View::default())
    }

    /// The camera `view` gives at configuration `q`.
    pub fn camera(&mut self, q: &[f64], view: &View) -> Result<Camera, RenderError> {
        self.check_q(0, q)?;
        let model = self.model.clone();
        let bad = |reason: String| RenderError::Camera { world: 0, reason };
        forward_kinematics(&model, &mut self.data, q);
        let poses = &self.data.world_from_body;
        let (target, azimuth, elevation, distance) = match *view {
            View::Model(k) => {
                let c = (model.cameras.get(k)).ok_or_else(|| {
                    bad(format!(
                        "camera {k} of a model with {}",
                        model.cameras.len()
                    ))
                })?;
                let x = c.pose(&model, poses);
                let z = x.rotation.column(2).into_owned();
                return Ok(Camera {
                    eye: x.translation,
                    target: x.translation - z,
                    up: x.rotation.column(1).into_owned(),
                    fovy_degrees: c.fovy_degrees,
                });
            }
            View::Orbit {
                target,
                azimuth,
                elevation,
                distance,
            } => (target, azimuth, elevation, distance),
        };
        let centre = center_of_mass(&model, &self.data);
        let target = match target {
            Target::CenterOfMass => centre,
            Target::Body(b) if b < model.nbodies => poses[b].translation,
            Target::Frame(k) if k < model.frames.len() => {
                let f = &model.frames[k];
                poses[f.body].act_point(&f.body_from_frame.translation)
            }
            Target::Point(p) => p,
            Target::Body(k) | Target::Frame(k) => {
                return Err(bad(format!(
                    "target {k} is not a body or frame of the model"
                )));
            }
        };
        let distance = match distance {
            Some(d) if d.is_finite() && d > 0.0 => d,
            Some(d) => return Err(bad(format!("distance {d} is not positive"))),
            None => {
                // Far enough for a ball about the target holding every
                // drawn shape of a moving body (0.5 m at least) to fill 85 %
                // of the height.
                let reach = (self.drawn.iter())
                    .filter(|d| d.body != crate::model::WORLD)
                    .filter_map(|d| {
                        let at = poses[d.body].act_point(&d.body_from_geom.translation);
                        Some((at - target).norm() + d.reach?)
                    })
                    .fold(0.5, f64::max);
                let half = (Camera::FOVY / 2.0).to_radians();
                reach / (0.85 * half.sin())
            }
        };
        Ok(Camera::orbit(target, distance, azimuth, elevation))
    }
}
