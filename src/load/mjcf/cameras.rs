//! `<camera>`: read with its body, resolved once the model is built
//! ([`crate::model::ModelCamera`]). `mode` `fixed`, `track`, `trackcom`,
//! `targetbody` and `targetbodycom`, with `target`, `fovy` and the class
//! defaults; the offsets of the tracking modes are taken at `qpos0`, as
//! MuJoCo's compiler takes them. Intrinsics (`focal`, `sensorsize`, …)
//! and `orthographic` are warned about: the camera keeps its `fovy`.

use super::sensors::SensorContext;
use super::*;
use crate::dynamics::{Data, forward_kinematics};
use crate::model::{CameraMode, ModelCamera};

/// A `<camera>` of an MJCF body, as read.
pub(super) struct CameraRec {
    name: Option<String>,
    pub(super) element: String,
    /// Placement in the MJCF body frame.
    local: SE3,
    mode: String,
    target: Option<String>,
    fovy: f64,
}

/// The camera attributes moreau does not read (the camera keeps its
/// perspective `fovy`).
const INTRINSICS: [&str; 7] = [
    "focal",
    "focalpixel",
    "principal",
    "principalpixel",
    "sensorsize",
    "resolution",
    "orthographic",
];

impl<'a, 'i, 'e> Parser<'a, 'i, 'e> {
    /// A `<camera>` in an MJCF body (`frame`: the enclosing `<frame>`s).
    pub(super) fn camera_record(
        &mut self,
        node: Node<'a, 'i>,
        childclass: &str,
        frame: &SE3,
    ) -> Result<CameraRec, ModelFileError> {
        let el = element_name(&node, "");
        let class = self.class_of(&node, childclass, &el)?;
        let get = |a: &str| self.get(&node, &class, &["camera"], a);
        let local = frame.mul(&self.frame(&get, &el)?);
        let fovy = match get("fovy") {
            Some(text) => {
                let [f] = self.fixed::<1>(text, "fovy", &el)?;
                if !(f > 0.0 && f < 180.0) {
                    return Err(self.error(&el, format!("fovy {f} is not in (0, 180) degrees")));
                }
                f
            }
            None => 45.0,
        };
        let mode = get("mode").unwrap_or("fixed").to_string();
        if !["fixed", "track", "trackcom", "targetbody", "targetbodycom"].contains(&mode.as_str()) {
            return Err(self.error(
                &el,
                format!(
                    "camera mode `{mode}` (fixed, track, trackcom, targetbody or targetbodycom)"
                ),
            ));
        }
        let target = get("target").map(str::to_string);
        if mode.starts_with("target") && target.is_none() {
            return Err(self.error(&el, format!("mode `{mode}` needs a `target` body")));
        }
        let unread: Vec<&str> = INTRINSICS
            .into_iter()
            .filter(|a| get(a).is_some_and(|v| *a != "orthographic" || v == "true"))
            .collect();
        if !unread.is_empty() {
            self.warnings.push(format!(
                "{el}: {} not read; drawn as a perspective camera of fovy {fovy}°",
                unread.join(", ")
            ));
        }
        Ok(CameraRec {
            name: node.attribute("name").map(str::to_string),
            element: el,
            local,
            mode,
            target,
            fovy,
        })
    }

    /// The cameras of the MJCF bodies, in MuJoCo's order (bodies in file
    /// order, then each body's cameras), with the offsets of the tracking
    /// modes at `q0` (MuJoCo's `qpos0`).
    pub(super) fn cameras(
        &self,
        cx: &SensorContext,
        q0: &[f64],
    ) -> Result<Vec<ModelCamera>, ModelFileError> {
        let model = cx.model;
        let mut data = Data::new(model);
        forward_kinematics(model, &mut data, q0);
        let poses = &data.world_from_body;
        let mut out = Vec::new();
        for (b, body) in self.bodies.iter().enumerate() {
            for rec in &body.cameras {
                let carrier = cx.carrier[b];
                let body_from_camera = cx.from[b].mul(&rec.local);
                let at0 = poses[carrier].mul(&body_from_camera);
                let target = |p: &Self| -> Result<usize, ModelFileError> {
                    let name = rec.target.as_deref().unwrap_or_default();
                    (p.bodies.iter().position(|t| t.name == name)).ok_or_else(|| {
                        p.error(&rec.element, format!("unknown target body `{name}`"))
                    })
                };
                let mode = match rec.mode.as_str() {
                    "track" => {
                        let anchor = cx.from[b].translation;
                        CameraMode::Track {
                            anchor,
                            offset: at0.translation - poses[carrier].act_point(&anchor),
                            rotation: at0.rotation,
                        }
                    }
                    "trackcom" => {
                        let subtree = self.subtree(b, cx);
                        CameraMode::TrackCom {
                            offset: at0.translation - subtree.com(model, poses),
                            rotation: at0.rotation,
                            subtree,
                        }
                    }
                    "targetbody" => {
                        let t = target(self)?;
                        CameraMode::TargetBody {
                            body: cx.carrier[t],
                            point: cx.from[t].translation,
                        }
                    }
                    "targetbodycom" => CameraMode::TargetBodyCom {
                        subtree: self.subtree(target(self)?, cx),
                    },
                    _ => CameraMode::Fixed,
                };
                let k = out.len();
                let name = rec.name.clone().unwrap_or_else(|| format!("camera{k}"));
                if out.iter().any(|c: &ModelCamera| c.name == name) {
                    return Err(self.error(&rec.element, format!("a second camera named `{name}`")));
                }
                out.push(ModelCamera {
                    name,
                    body: carrier,
                    body_from_camera,
                    mode,
                    fovy_degrees: rec.fovy,
                });
            }
        }
        Ok(out)
    }
}
