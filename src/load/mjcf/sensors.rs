//! `<sensor>`: MuJoCo's sensors onto the model's [`Sensor`]s, their sites,
//! bodies and joints resolved to the model's bodies. A sensor type moreau
//! does not evaluate is warned about by name and left out (the values of
//! the others then sit at other addresses than MuJoCo's `sensordata`: read
//! them by name).

use super::*;
use crate::model::ray::{RayShape, RayTarget};
use crate::model::{Attachment, Sensor, SensorKind, Subtree};
use constraints::JointPlan;

/// Sensor types moreau does not evaluate (MuJoCo's names).
const UNSUPPORTED: &[&str] = &[
    "magnetometer",
    "camprojection",
    "actuatorpos",
    "actuatorvel",
    "actuatorfrc",
    "jointactuatorfrc",
    "tendonactuatorfrc",
    "tendonpos",
    "tendonvel",
    "ballquat",
    "ballangvel",
    "jointlimitpos",
    "jointlimitvel",
    "jointlimitfrc",
    "tendonlimitpos",
    "tendonlimitvel",
    "tendonlimitfrc",
    "framelinacc",
    "frameangacc",
    "insidesite",
    "distance",
    "normal",
    "fromto",
    "contact",
    "e_potential",
    "e_kinetic",
    "clock",
    "user",
    "plugin",
];

/// Why a sensor is left out (a warning), or the file is refused.
enum Skip {
    Warn(String),
    Refuse(ModelFileError),
}

impl From<ModelFileError> for Skip {
    fn from(e: ModelFileError) -> Self {
        Skip::Refuse(e)
    }
}

/// What the sensors refer to, from the build.
pub(super) struct SensorContext<'c> {
    pub model: &'c Model,
    pub carrier: &'c [usize],
    pub from: &'c [SE3],
    pub joints: &'c JointPlan,
}

impl<'a, 'i, 'e> Parser<'a, 'i, 'e> {
    /// The sensors of the `<sensor>` sections of `top`, in file order.
    pub(super) fn sensors(
        &mut self,
        top: &[Node<'a, 'i>],
        cx: &SensorContext,
    ) -> Result<Vec<Sensor>, ModelFileError> {
        let mut out = Vec::new();
        let mut used = HashSet::new();
        let elements = top
            .iter()
            .filter(|n| n.has_tag_name("sensor"))
            .flat_map(|n| n.children().filter(|c| c.is_element()));
        for (id, e) in elements.enumerate() {
            let el = element_name(&e, "");
            match self.sensor(&e, &el, cx) {
                Ok(kind) => {
                    let name = match e.attribute("name") {
                        Some(n) => n.to_string(),
                        None => format!("sensor{id}"),
                    };
                    if !used.insert(name.clone()) {
                        return Err(self.error(&el, format!("duplicate sensor name `{name}`")));
                    }
                    let cutoff = match e.attribute("cutoff") {
                        Some(s) => match self.fixed::<1>(s, "cutoff", &el)? {
                            [c] if c >= 0.0 => c,
                            [c] => {
                                return Err(self
                                    .error(&el, format!("cutoff must be non-negative, got {c}")));
                            }
                        },
                        None => 0.0,
                    };
                    for attr in ["nsample", "interp", "delay", "interval"] {
                        if e.attribute(attr).is_some() {
                            self.warnings.push(format!(
                                "{el}: `{attr}` (sensor history) is not supported, ignored: the sensor reads the present"
                            ));
                        }
                    }
                    out.push(Sensor { name, kind, cutoff });
                }
                Err(Skip::Warn(why)) => self.warnings.push(format!("{el}: {why}, ignored")),
                Err(Skip::Refuse(e)) => return Err(e),
            }
        }
        Ok(out)
    }

    fn sensor(&self, e: &Node, el: &str, cx: &SensorContext) -> Result<SensorKind, Skip> {
        let tag = e.tag_name().name();
        let need = |attr: &str| -> Result<&str, Skip> {
            e.attribute(attr)
                .ok_or_else(|| Skip::Refuse(self.error(el, format!("needs `{attr}`"))))
        };
        let site = |attr: &str| -> Result<(usize, Attachment), Skip> {
            let name = need(attr)?;
            let (b, rec) = self
                .site_full(name)
                .ok_or_else(|| self.error(el, format!("no site named `{name}`")))?;
            Ok((b, attach(cx, b, &rec.local)))
        };
        let body = |attr: &str| -> Result<usize, Skip> {
            let name = need(attr)?;
            self.body_named(name)
                .ok_or_else(|| Skip::Refuse(self.error(el, format!("no body named `{name}`"))))
        };
        if let Some(mocap) = self.sensor_on_mocap(e) {
            return Err(Skip::Refuse(self.error(
                el,
                format!(
                    "reads a frame of mocap body {mocap}, which stays at the file's pose: not supported"
                ),
            )));
        }
        let kind = match tag {
            "touch" => {
                let name = need("site")?;
                let (b, rec) = self
                    .site_full(name)
                    .ok_or_else(|| self.error(el, format!("no site named `{name}`")))?;
                if b == 0 {
                    return Err(Skip::Warn("a touch sensor on a site of the world".into()));
                }
                SensorKind::Touch {
                    site: attach(cx, b, &rec.local),
                    zone: rec.zone,
                    body_frame: b - 1,
                }
            }
            "accelerometer" => SensorKind::Accelerometer(site("site")?.1),
            "velocimeter" => SensorKind::Velocimeter(site("site")?.1),
            "gyro" => SensorKind::Gyro(site("site")?.1),
            "rangefinder" => {
                let (b, site) = site("site")?;
                SensorKind::Rangefinder {
                    site,
                    exclude: b.checked_sub(1),
                }
            }
            "force" | "torque" => {
                let (b, at) = site("site")?;
                if b == 0 {
                    return Err(Skip::Warn(format!("a {tag} sensor on a site of the world")));
                }
                if !cx.model.body_equalities.is_empty() {
                    // MuJoCo counts connect and weld forces as external.
                    return Err(Skip::Warn(format!(
                        "{tag} sensors in a model with connect or weld equalities are not supported"
                    )));
                }
                let subtree = self.subtree(b, cx);
                if tag == "force" {
                    SensorKind::Force { site: at, subtree }
                } else {
                    SensorKind::Torque { site: at, subtree }
                }
            }
            "subtreecom" => SensorKind::SubtreeCom(self.subtree(body("body")?, cx)),
            "subtreelinvel" => SensorKind::SubtreeLinVel(self.subtree(body("body")?, cx)),
            "subtreeangmom" => SensorKind::SubtreeAngMom(self.subtree(body("body")?, cx)),
            "jointpos" | "jointvel" => {
                let name = need("joint")?;
                let Some((b, kind, _)) = cx.joints.get(name) else {
                    return Err(Skip::Refuse(
                        self.error(el, format!("no joint named `{name}`")),
                    ));
                };
                if !matches!(kind, JointKind::Hinge | JointKind::Slide) {
                    return Err(Skip::Refuse(
                        self.error(el, format!("joint `{name}` is not a hinge or a slide")),
                    ));
                }
                if tag == "jointpos" {
                    SensorKind::JointPos {
                        index: cx.model.joint_idx_q[*b],
                    }
                } else {
                    SensorKind::JointVel {
                        index: cx.model.joint_idx_v[*b],
                    }
                }
            }
            "framepos" | "framequat" | "framexaxis" | "frameyaxis" | "framezaxis"
            | "framelinvel" | "frameangvel" => {
                // Orientation matters for all but the position and the
                // velocities of an object without a reference frame.
                let oriented = !matches!(tag, "framepos" | "framelinvel" | "frameangvel");
                let object = self.frame_object(e, el, "objtype", "objname", oriented, cx)?;
                let reference = match e.attribute("reftype") {
                    Some(_) => Some(self.frame_object(e, el, "reftype", "refname", true, cx)?),
                    None if e.attribute("refname").is_some() => {
                        return Err(Skip::Refuse(
                            self.error(el, "`refname` needs a `reftype`".into()),
                        ));
                    }
                    None => None,
                };
                match tag {
                    "framepos" => SensorKind::FramePos { object, reference },
                    "framequat" => SensorKind::FrameQuat { object, reference },
                    "framelinvel" => SensorKind::FrameLinVel { object, reference },
                    "frameangvel" => SensorKind::FrameAngVel { object, reference },
                    axis => SensorKind::FrameAxis {
                        axis: match axis {
                            "framexaxis" => 0,
                            "frameyaxis" => 1,
                            _ => 2,
                        },
                        object,
                        reference,
                    },
                }
            }
            other if UNSUPPORTED.contains(&other) => {
                return Err(Skip::Warn(format!(
                    "sensor type `{other}` is not supported"
                )));
            }
            other => {
                return Err(Skip::Refuse(
                    self.error(el, format!("unknown sensor type `{other}`")),
                ));
            }
        };
        Ok(kind)
    }

    /// MJCF body `name`'s index (0: the world).
    fn body_named(&self, name: &str) -> Option<usize> {
        if name == "world" {
            return Some(0);
        }
        self.bodies.iter().position(|b| b.name == name)
    }

    /// The frame a frame sensor reads (`type_attr`, `name_attr`: objtype
    /// and objname, or reftype and refname). `oriented`: its orientation
    /// is read, which a body's inertial frame (objtype `body`) gives where
    /// an `<inertial>` with `diaginertia` sets its principal axes (and the
    /// world's is the world frame).
    fn frame_object(
        &self,
        e: &Node,
        el: &str,
        type_attr: &str,
        name_attr: &str,
        oriented: bool,
        cx: &SensorContext,
    ) -> Result<Attachment, Skip> {
        let need = |attr: &str| -> Result<&str, Skip> {
            e.attribute(attr)
                .ok_or_else(|| Skip::Refuse(self.error(el, format!("needs `{attr}`"))))
        };
        let (kind, name) = (need(type_attr)?, need(name_attr)?);
        let no = |what: &str| Skip::Refuse(self.error(el, format!("no {what} named `{name}`")));
        match kind {
            "site" => {
                let (b, rec) = self.site_full(name).ok_or_else(|| no("site"))?;
                Ok(attach(cx, b, &rec.local))
            }
            "xbody" => {
                let b = self.body_named(name).ok_or_else(|| no("body"))?;
                Ok(attach(cx, b, &SE3::identity()))
            }
            "body" => {
                let b = self.body_named(name).ok_or_else(|| no("body"))?;
                if b == 0 {
                    // The world's inertial frame is the world frame (MuJoCo's
                    // `xipos`, `ximat` of body 0): mjlab's up-vector sensors.
                    return Ok(attach(cx, 0, &SE3::identity()));
                }
                let frame = match self.bodies[b].principal {
                    Some(principal) => principal,
                    None if oriented => {
                        return Err(Skip::Warn(format!(
                            "{type_attr}=\"body\" on body `{name}`, whose principal axes come from its geoms or a `fullinertia` (moreau keeps them only from an `<inertial>` with `diaginertia`), where the orientation is read; `xbody` is the body frame"
                        )));
                    }
                    None => SE3::from_translation(self.bodies[b].inertia.com),
                };
                Ok(Attachment {
                    com_of: b.checked_sub(1),
                    ..attach(cx, b, &frame)
                })
            }
            "geom" => {
                let found =
                    self.bodies.iter().enumerate().find_map(|(b, rec)| {
                        rec.geoms.iter().find(|g| g.name == name).map(|g| (b, g))
                    });
                let (b, g) = found.ok_or_else(|| no("geom"))?;
                if g.mesh {
                    return Err(Skip::Warn(format!(
                        "{type_attr}=\"geom\" on a mesh geom (MuJoCo's mesh frame is the mesh's inertial frame)"
                    )));
                }
                Ok(attach(cx, b, &g.mjcf_from_geom))
            }
            other => Err(Skip::Warn(format!(
                "{type_attr}=\"{other}\" is not supported"
            ))),
        }
    }

    /// What rangefinders see: every geom with a shape that is not
    /// transparent, meshes by their triangles where the file gives them.
    pub(super) fn ray_targets(&mut self, carrier: &[usize], from: &[SE3]) -> Vec<RayTarget> {
        let mut sources = Vec::new();
        for (b, body) in self.bodies.iter().enumerate() {
            for g in &body.geoms {
                if let Some(r) = &g.ray {
                    let placement = from[b].mul(&g.mjcf_from_geom);
                    sources.push((b, placement, r.shape.clone(), r.plane_half, r.mesh.clone()));
                }
            }
        }
        let mut out = Vec::with_capacity(sources.len());
        for (b, placement, shape, plane_half, mesh) in sources {
            let shape = match (&shape, mesh) {
                (Shape::HalfSpace { .. }, _) => RayShape::Plane {
                    half_size: plane_half,
                },
                (_, Some(m)) => match self.visual_mesh(&m) {
                    Some(triangles) => RayShape::Mesh(triangles),
                    None => RayShape::Solid(shape),
                },
                _ => RayShape::Solid(shape),
            };
            out.push(RayTarget::new(
                carrier[b],
                b.checked_sub(1),
                placement,
                shape,
            ));
        }
        out
    }

    /// The subtree of MJCF body `root` (the whole model for the world).
    pub(super) fn subtree(&self, root: usize, cx: &SensorContext) -> Subtree {
        let n = self.bodies.len();
        let mut inside = vec![false; n];
        inside[root] = true;
        // Parents come before their children in file order.
        for b in 1..n {
            if !inside[b] {
                inside[b] = inside[self.bodies[b].parent];
            }
        }
        // A model body is wholly inside when every file body it carries is.
        let nb = cx.model.nbodies;
        let (mut any_in, mut any_out) = (vec![false; nb], vec![false; nb]);
        for b in 1..n {
            if inside[b] {
                any_in[cx.carrier[b]] = true;
            } else {
                any_out[cx.carrier[b]] = true;
            }
        }
        let bodies = (1..nb).filter(|&j| any_in[j] && !any_out[j]).collect();
        // (Frame b − 1 is MJCF body b's.)
        let frames = (1..n)
            .filter(|&b| inside[b] && any_out[cx.carrier[b]])
            .map(|b| b - 1)
            .collect();
        let geometries = cx
            .model
            .geometries
            .iter()
            .enumerate()
            .filter(|(_, g)| match g.frame {
                Some(f) => inside[f + 1],
                None => root == 0,
            })
            .map(|(k, _)| k)
            .collect();
        Subtree {
            bodies,
            frames,
            geometries,
        }
    }
}

/// A frame at `local` in MJCF body `b`, on the model body that carries it.
fn attach(cx: &SensorContext, b: usize, local: &SE3) -> Attachment {
    Attachment {
        body: cx.carrier[b],
        body_from_frame: cx.from[b].mul(local),
        com_of: None,
    }
}
