//! Sensors: MuJoCo's `<sensor>` elements, resolved to the model's bodies.
//!
//! A sensor reads the state (position and velocity sensors) or the last
//! step (acceleration and force sensors: [`SensorKind::needs_step`]); the
//! simulator evaluates them (`Simulator::sensors`). Their values
//! sit one after the other in the model's sensor order, as in MuJoCo's
//! `sensordata` ([`Model::sensor_address`]).

use super::Model;
use crate::math::{Inertia, SE3, Vec3};

/// A sensor of the model.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sensor {
    /// The file's name, or `sensor{k}` (`k` its index) when it has none.
    pub name: String,
    pub kind: SensorKind,
    /// MuJoCo's `cutoff` (0: none): the values are clamped to
    /// `[−cutoff, cutoff]`, a touch sensor's to `[0, cutoff]`, quaternions
    /// and axes never.
    pub cutoff: f64,
}

/// A frame fixed on a model body: where a sensor sits or what it reads.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Attachment {
    pub body: usize,
    pub body_from_frame: SE3,
    /// `Some(k)`: the centre of mass of the file's body of frame `k`
    /// (MuJoCo's objtype `body`), which follows that body's inertia
    /// ([`Model::set_body_inertia`]); the frame's orientation is that
    /// body's principal axes where the file gives them.
    #[serde(default)]
    pub com_of: Option<usize>,
}

/// The zone of a touch sensor: the solid of its site, centred at the
/// site's origin in the site's frame (MuJoCo's site `type` and `size`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Zone {
    Sphere {
        radius: f64,
    },
    /// Along z, `half_length` from the centre to each cap's centre.
    Capsule {
        radius: f64,
        half_length: f64,
    },
    Ellipsoid {
        radii: Vec3,
    },
    Cylinder {
        radius: f64,
        half_length: f64,
    },
    Box {
        half_sizes: Vec3,
    },
}

/// The part of a model that hangs from a file's body: the model bodies
/// wholly inside it (their [`Model::body_inertia`]), the file's bodies
/// inside it that share a model body with bodies outside (welded across
/// its root) as their frames (indices into [`Model::frames`], whose
/// inertias [`Model::set_body_inertia`] keeps in step), and the geometries
/// it holds (their contact forces are the subtree's external forces).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Subtree {
    pub bodies: Vec<usize>,
    pub frames: Vec<usize>,
    pub geometries: Vec<usize>,
}

impl Subtree {
    /// Its bodies as `(model body, own inertia in that body's frame)`.
    pub fn parts<'a>(&'a self, model: &'a Model) -> impl Iterator<Item = (usize, Inertia)> + 'a {
        let whole = self.bodies.iter().map(|&b| (b, model.body_inertia[b]));
        let parts = self.frames.iter().map(|&k| {
            let f = &model.frames[k];
            let own = f.inertia.unwrap_or_else(Inertia::zero);
            (f.body, own.transformed(&f.body_from_frame))
        });
        whole.chain(parts)
    }

    /// Its centre of mass, given the bodies' world poses (the origin of
    /// the world for a massless subtree).
    pub fn com(&self, model: &Model, world_from_body: &[SE3]) -> Vec3 {
        let (mut mass, mut moment) = (0.0, Vec3::zeros());
        for (b, own) in self.parts(model) {
            mass += own.mass;
            moment += world_from_body[b].act_point(&own.com) * own.mass;
        }
        if mass > 0.0 {
            moment / mass
        } else {
            Vec3::zeros()
        }
    }

    /// Why it does not fit `model`, if it does not.
    pub(super) fn check(&self, model: &Model) -> Result<(), String> {
        if self.bodies.iter().any(|&b| b >= model.nbodies) {
            return Err("its subtree is out of range".into());
        }
        if (self.frames.iter()).any(|&k| model.frames.get(k).is_none_or(|f| f.inertia.is_none())) {
            return Err("its subtree's body frames are out of range".into());
        }
        if self.geometries.iter().any(|&g| g >= model.geometries.len()) {
            return Err("its subtree's geometries are out of range".into());
        }
        Ok(())
    }
}

/// What a sensor measures. Vectors are in the sensor's frame (its site's)
/// for the site sensors, in the world frame (or the reference frame when
/// one is given) for the frame and subtree sensors.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum SensorKind {
    /// The normal contact forces on the site's file body (geometries whose
    /// [`super::Geometry::frame`] is `body_frame`) whose contact point, or
    /// the ray from it along the normal towards the other body, meets the
    /// zone (MuJoCo's rule). Reads the last step.
    Touch {
        site: Attachment,
        zone: Zone,
        body_frame: usize,
    },
    /// Linear acceleration of the site's origin minus gravity (a resting
    /// accelerometer reads `−g`), in the site frame. Reads the last step.
    Accelerometer(Attachment),
    /// Linear velocity of the site's origin, in the site frame.
    Velocimeter(Attachment),
    /// Angular velocity, in the site frame.
    Gyro(Attachment),
    /// The force the rest of the model exerts on `subtree` through its
    /// root's joint, in the site frame (MuJoCo's `force`, from `cfrc_int`).
    /// Reads the last step.
    Force { site: Attachment, subtree: Subtree },
    /// The torque of that interaction about the site's origin, in the site
    /// frame. Reads the last step.
    Torque { site: Attachment, subtree: Subtree },
    /// Position of `object`'s origin (`reference`: in that frame).
    FramePos {
        object: Attachment,
        reference: Option<Attachment>,
    },
    /// Orientation of `object`, a quaternion `(w, x, y, z)` as MuJoCo's.
    FrameQuat {
        object: Attachment,
        reference: Option<Attachment>,
    },
    /// Axis `axis` (0: x, 1: y, 2: z) of `object`.
    FrameAxis {
        axis: usize,
        object: Attachment,
        reference: Option<Attachment>,
    },
    /// Linear velocity of `object`'s origin (`reference`: relative to that
    /// frame, in its axes).
    FrameLinVel {
        object: Attachment,
        reference: Option<Attachment>,
    },
    /// Angular velocity of `object` (`reference`: relative, in its axes).
    FrameAngVel {
        object: Attachment,
        reference: Option<Attachment>,
    },
    /// Centre of mass of the subtree.
    SubtreeCom(Subtree),
    /// Linear velocity of the subtree's centre of mass.
    SubtreeLinVel(Subtree),
    /// Angular momentum of the subtree about its centre of mass.
    SubtreeAngMom(Subtree),
    /// A hinge or slide joint's coordinate: `q[index]`.
    JointPos { index: usize },
    /// A hinge or slide joint's velocity: `v[index]`.
    JointVel { index: usize },
    /// The distance along the site's z axis to the first surface of the
    /// model's [`Model::ray_targets`] it meets, not counting those of the
    /// site's own file body (`exclude`, as [`super::Geometry::frame`];
    /// `None`: the world's), or −1 where it meets none (MuJoCo's
    /// `rangefinder`).
    Rangefinder {
        site: Attachment,
        exclude: Option<usize>,
    },
}

impl SensorKind {
    /// Number of values.
    pub fn dim(&self) -> usize {
        match self {
            SensorKind::Touch { .. }
            | SensorKind::Rangefinder { .. }
            | SensorKind::JointPos { .. }
            | SensorKind::JointVel { .. } => 1,
            SensorKind::FrameQuat { .. } => 4,
            _ => 3,
        }
    }

    /// Whether it reads the last step (its acceleration or its forces)
    /// rather than the state.
    pub fn needs_step(&self) -> bool {
        matches!(
            self,
            SensorKind::Touch { .. }
                | SensorKind::Accelerometer(_)
                | SensorKind::Force { .. }
                | SensorKind::Torque { .. }
        )
    }

    /// MuJoCo's name of the sensor type.
    pub fn mujoco_type(&self) -> &'static str {
        match self {
            SensorKind::Touch { .. } => "touch",
            SensorKind::Accelerometer(_) => "accelerometer",
            SensorKind::Velocimeter(_) => "velocimeter",
            SensorKind::Gyro(_) => "gyro",
            SensorKind::Force { .. } => "force",
            SensorKind::Torque { .. } => "torque",
            SensorKind::FramePos { .. } => "framepos",
            SensorKind::FrameQuat { .. } => "framequat",
            SensorKind::FrameAxis { axis: 0, .. } => "framexaxis",
            SensorKind::FrameAxis { axis: 1, .. } => "frameyaxis",
            SensorKind::FrameAxis { .. } => "framezaxis",
            SensorKind::FrameLinVel { .. } => "framelinvel",
            SensorKind::FrameAngVel { .. } => "frameangvel",
            SensorKind::SubtreeCom(_) => "subtreecom",
            SensorKind::SubtreeLinVel(_) => "subtreelinvel",
            SensorKind::SubtreeAngMom(_) => "subtreeangmom",
            SensorKind::JointPos { .. } => "jointpos",
            SensorKind::JointVel { .. } => "jointvel",
            SensorKind::Rangefinder { .. } => "rangefinder",
        }
    }

    /// Its attachments, to change.
    pub(super) fn attachments_mut(&mut self) -> Vec<&mut Attachment> {
        use SensorKind::*;
        match self {
            Touch { site, .. }
            | Accelerometer(site)
            | Velocimeter(site)
            | Gyro(site)
            | Rangefinder { site, .. } => vec![site],
            Force { site, .. } | Torque { site, .. } => vec![site],
            FramePos { object, reference }
            | FrameQuat { object, reference }
            | FrameAxis {
                object, reference, ..
            }
            | FrameLinVel { object, reference }
            | FrameAngVel { object, reference } => {
                std::iter::once(object).chain(reference.as_mut()).collect()
            }
            SubtreeCom(_) | SubtreeLinVel(_) | SubtreeAngMom(_) => Vec::new(),
            JointPos { .. } | JointVel { .. } => Vec::new(),
        }
    }

    /// The attachments and subtrees it refers to (for checks).
    fn references(&self) -> (Vec<&Attachment>, Option<&Subtree>) {
        use SensorKind::*;
        match self {
            Touch { site, .. }
            | Accelerometer(site)
            | Velocimeter(site)
            | Gyro(site)
            | Rangefinder { site, .. } => (vec![site], None),
            Force { site, subtree } | Torque { site, subtree } => (vec![site], Some(subtree)),
            FramePos { object, reference }
            | FrameQuat { object, reference }
            | FrameAxis {
                object, reference, ..
            }
            | FrameLinVel { object, reference }
            | FrameAngVel { object, reference } => {
                (std::iter::once(object).chain(reference).collect(), None)
            }
            SubtreeCom(s) | SubtreeLinVel(s) | SubtreeAngMom(s) => (Vec::new(), Some(s)),
            JointPos { .. } | JointVel { .. } => (Vec::new(), None),
        }
    }
}

impl Model {
    /// Moves the sensors' attachments at the centre of mass of frame `k`'s
    /// file body to where its inertia now puts it. Their orientation (an
    /// `<inertial>`'s principal axes) stays the file's, as MuJoCo's
    /// `body_iquat` does not follow `body_inertia`.
    pub(super) fn follow_center_of_mass(&mut self, k: usize) {
        let f = &self.frames[k];
        let Some(inertia) = f.inertia else { return };
        let placement = f.body_from_frame.mul(&SE3::from_translation(inertia.com));
        for s in &mut self.sensors {
            for a in s.kind.attachments_mut() {
                if a.com_of == Some(k) {
                    a.body_from_frame = SE3::new(a.body_from_frame.rotation, placement.translation);
                }
            }
        }
    }

    /// Number of sensor values (MuJoCo's `nsensordata`).
    pub fn nsensordata(&self) -> usize {
        self.sensors.iter().map(|s| s.kind.dim()).sum()
    }

    /// The first value of each sensor (MuJoCo's `sensor_adr`).
    pub fn sensor_address(&self) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.sensors.len());
        let mut k = 0;
        for s in &self.sensors {
            out.push(k);
            k += s.kind.dim();
        }
        out
    }

    /// Whether every sensor refers to bodies, geometries, coordinates and
    /// frames the model has, with valid numbers.
    pub(super) fn check_sensors(&self) -> Result<(), String> {
        let nb = self.nbodies;
        for s in &self.sensors {
            let bad = |why: &str| Err(format!("sensor `{}`: {why}", s.name));
            if !(s.cutoff >= 0.0) {
                return bad("cutoff is negative or NaN");
            }
            let (attachments, subtree) = s.kind.references();
            for a in attachments {
                if a.body >= nb || !a.body_from_frame.is_finite() {
                    return bad("its frame is out of range or not finite");
                }
                if a.com_of.is_some_and(|k| k >= self.frames.len()) {
                    return bad("its body frame is out of range");
                }
            }
            if let Some(t) = subtree {
                t.check(self)
                    .map_err(|why| format!("sensor `{}`: {why}", s.name))?;
            }
            match &s.kind {
                SensorKind::Touch {
                    zone, body_frame, ..
                } => {
                    if *body_frame >= self.frames.len() {
                        return bad("its body frame is out of range");
                    }
                    let sizes: &[f64] = match zone {
                        Zone::Sphere { radius } => &[*radius],
                        Zone::Capsule {
                            radius,
                            half_length,
                        }
                        | Zone::Cylinder {
                            radius,
                            half_length,
                        } => &[*radius, *half_length],
                        Zone::Ellipsoid { radii: v } | Zone::Box { half_sizes: v } => v.as_slice(),
                    };
                    if sizes.iter().any(|x| !(x.is_finite() && *x >= 0.0)) {
                        return bad("its zone's sizes are negative or not finite");
                    }
                }
                SensorKind::FrameAxis { axis, .. } if *axis > 2 => return bad("axis out of range"),
                SensorKind::JointPos { index } if *index >= self.nq => {
                    return bad("coordinate out of range");
                }
                SensorKind::JointVel { index } if *index >= self.nv => {
                    return bad("dof out of range");
                }
                SensorKind::Rangefinder {
                    exclude: Some(k), ..
                } if *k >= self.frames.len() => return bad("its body frame is out of range"),
                _ => {}
            }
        }
        Ok(())
    }
}
