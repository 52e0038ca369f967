//! `<tendon><fixed>` and `<equality><joint>`, `<equality><tendon>`,
//! `<connect>`, `<weld>` onto the model's [`Tendon`]s, [`Equality`]s and
//! [`crate::model::BodyEquality`]s. Spatial tendons are simulated whole:
//! through sites, around sphere and cylinder geoms (with `sidesite`), over
//! pulleys; `solref` and `solimp` are not read (the rows are rigid,
//! stabilized like contacts).

use super::*;
use crate::model::{Coordinate, Equality, Tendon, Wrap, WrapGeom};

/// The joints of the file by name: `(body index, kind, element)`.
pub(super) type JointPlan = HashMap<String, (usize, JointKind, String)>;

impl<'a, 'i, 'e> Parser<'a, 'i, 'e> {
    /// Adds the fixed tendons, then the joint and tendon equalities, of the
    /// sections in `top` to `builder`; returns the tendons' indices by name.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn tendons_and_equalities(
        &mut self,
        top: &[Node<'a, 'i>],
        joint_plan: &JointPlan,
        joint_idx_q: &dyn Fn(usize) -> usize,
        q0: &[f64],
        builder: &mut ModelBuilder,
        bodies: &mut Vec<PendingBodyEquality>,
        carrier: &[usize],
        from: &[SE3],
    ) -> Result<HashMap<String, usize>, ModelFileError> {
        let mut tendons = HashMap::new();
        let mut lengths0 = Vec::new();
        // The model so far and its kinematics at qpos0 (for spatial
        // tendons' lengths).
        let mut reference: Option<(crate::model::Model, crate::dynamics::Data)> = None;
        let mut warnings = Vec::new();
        let joint = |p: &Self, name: &str, el: &str| -> Result<usize, ModelFileError> {
            match joint_plan.get(name) {
                Some((body, JointKind::Hinge | JointKind::Slide, _)) => Ok(*body),
                Some((_, kind, _)) => Err(p.error(
                    el,
                    format!("joint `{name}` is a {kind:?} joint: only hinge and slide joints have a scalar position"),
                )),
                None => Err(p.error(el, format!("unknown joint `{name}`"))),
            }
        };
        for section in top.iter().filter(|n| n.has_tag_name("tendon")) {
            for t in section.children().filter(|n| n.is_element()) {
                let el = element_name(&t, "");
                let spatial = t.tag_name().name() == "spatial";
                if !spatial && t.tag_name().name() != "fixed" {
                    warnings.push(format!(
                        "{el}: unknown tendon type <{}>, ignored",
                        t.tag_name().name()
                    ));
                    continue;
                }
                let class = self.class_of(&t, "main", &el)?;
                let get = |attr: &str| self.get(&t, &class, &["tendon"], attr);
                let scalar = |attr: &str| -> Result<f64, ModelFileError> {
                    match get(attr) {
                        Some(s) => self.fixed::<1>(s, attr, &el).map(|[x]| x),
                        None => Ok(0.0),
                    }
                };
                let mut joints = Vec::new();
                let path = if spatial {
                    self.spatial_path(&t, &el, carrier, from)?
                } else {
                    Vec::new()
                };
                for j in t.children().filter(|n| n.is_element() && !spatial) {
                    let jel = element_name(&j, "");
                    if !j.has_tag_name("joint") {
                        return Err(
                            self.error(&jel, "a fixed tendon holds <joint> elements only".into())
                        );
                    }
                    let Some(name) = j.attribute("joint") else {
                        return Err(self.error(&jel, "needs a `joint`".into()));
                    };
                    // (MuJoCo requires it too.)
                    let Some(coef) = j.attribute("coef") else {
                        return Err(self.error(&jel, "needs a `coef`".into()));
                    };
                    let coef = self.fixed::<1>(coef, "coef", &jel)?[0];
                    joints.push((joint(self, name, &jel)?, coef));
                }
                let length0: f64 = if spatial {
                    // The path's length at qpos0, on the model built so far.
                    if reference.is_none() {
                        let model = builder
                            .clone()
                            .build()
                            .map_err(|e| self.error(&el, e.to_string()))?;
                        let mut data = crate::dynamics::Data::new(&model);
                        crate::dynamics::forward_kinematics(&model, &mut data, q0);
                        reference = Some((model, data));
                    }
                    let (model, data) = reference.as_ref().expect("built above");
                    crate::model::check_tendon_path(&path, model.nbodies)
                        .map_err(|e| self.error(&el, e))?;
                    crate::dynamics::spatial_length(model, &path, data, 1.0, &mut Vec::new())
                } else {
                    joints.iter().map(|&(b, c)| c * q0[joint_idx_q(b)]).sum()
                };
                let range = get("range")
                    .map(|s| self.fixed::<2>(s, "range", &el))
                    .transpose()?;
                let limited = match self.tristate(get("limited"), "limited", &el)? {
                    Some(l) => l,
                    None => self.autolimits && range.is_some(),
                };
                let range = match (limited && self.flags.limits(), range) {
                    (true, Some([lo, hi])) => Some((lo, hi)),
                    (true, None) => {
                        return Err(self.error(&el, "limited without a `range`".into()));
                    }
                    _ => None,
                };
                // `springlength` "-1 -1" (the default): the length at qpos0;
                // one number: no dead band.
                let spring_length = match get("springlength") {
                    Some(s) => match self.list(s, "springlength", &el)?.as_slice() {
                        [x] if *x == -1.0 => (length0, length0),
                        [x] => (*x, *x),
                        [a, b] if *a == -1.0 && *b == -1.0 => (length0, length0),
                        [a, b] => (*a, *b),
                        _ => {
                            return Err(
                                self.error(&el, "`springlength` needs 1 or 2 numbers".into())
                            );
                        }
                    },
                    None => (length0, length0),
                };
                if scalar("armature")? != 0.0 {
                    return Err(self.error(
                        &el,
                        "tendon `armature` is not supported (its inertia would couple the tendon's joints)"
                            .into(),
                    ));
                }
                let name = t.attribute("name").unwrap_or("").to_string();
                let tendon = Tendon {
                    name: if name.is_empty() {
                        format!("tendon{}", lengths0.len())
                    } else {
                        name.clone()
                    },
                    joints,
                    path,
                    range,
                    stiffness: if self.flags.spring {
                        scalar("stiffness")?
                    } else {
                        0.0
                    },
                    damping: if self.flags.damper {
                        scalar("damping")?
                    } else {
                        0.0
                    },
                    spring_length,
                    frictionloss: if self.flags.frictionlosses() {
                        scalar("frictionloss")?
                    } else {
                        0.0
                    },
                    length0,
                };
                let index = builder
                    .add_tendon(tendon)
                    .map_err(|e| self.error(&el, e.to_string()))?;
                if !name.is_empty() {
                    tendons.insert(name, index);
                }
                lengths0.push(length0);
            }
        }
        if !self.flags.equalities() {
            self.warnings.extend(warnings);
            return Ok(tendons);
        }
        for section in top.iter().filter(|n| n.has_tag_name("equality")) {
            for e in section.children().filter(|n| n.is_element()) {
                let el = element_name(&e, "");
                let tag = e.tag_name().name();
                if !matches!(tag, "joint" | "tendon" | "connect" | "weld") {
                    warnings.push(format!(
                        "{el}: <{tag}> equality constraints are not supported (joint, tendon, connect and weld are), ignored"
                    ));
                    continue;
                }
                let class = self.class_of(&e, "main", &el)?;
                let get = |attr: &str| self.get(&e, &class, &["equality"], attr);
                if let Some(active) = get("active")
                    && !self.boolean(active, "active", &el)?
                {
                    warnings.push(format!(
                        "{el}: inactive (active=\"false\"), not added: moreau cannot switch an equality on at run time"
                    ));
                    continue;
                }
                if matches!(tag, "connect" | "weld") {
                    let pending = self.body_equality(&e, &el, &get)?;
                    bodies.extend(pending);
                    continue;
                }
                let coordinate = |key: &str| -> Result<Option<(Coordinate, f64)>, ModelFileError> {
                    let Some(name) = e.attribute(key) else {
                        return Ok(None);
                    };
                    Ok(Some(if tag == "joint" {
                        let b = joint(self, name, &el)?;
                        (Coordinate::Joint(b), q0[joint_idx_q(b)])
                    } else {
                        let Some(&t) = tendons.get(name) else {
                            return Err(self.error(
                                &el,
                                format!(
                                    "unknown tendon `{name}` (only fixed tendons are supported)"
                                ),
                            ));
                        };
                        (Coordinate::Tendon(t), lengths0[t])
                    }))
                };
                let (k1, k2) = if tag == "joint" {
                    ("joint1", "joint2")
                } else {
                    ("tendon1", "tendon2")
                };
                let Some((first, y0)) = coordinate(k1)? else {
                    return Err(self.error(&el, format!("needs `{k1}`")));
                };
                let second = coordinate(k2)?;
                let mut polycoef = [0.0, 1.0, 0.0, 0.0, 0.0];
                if let Some(s) = get("polycoef") {
                    let v = self.list(s, "polycoef", &el)?;
                    if v.len() > 5 {
                        return Err(self.error(&el, "`polycoef` takes at most 5 numbers".into()));
                    }
                    polycoef = [0.0; 5];
                    polycoef[..v.len()].copy_from_slice(&v);
                }
                let name = e.attribute("name").unwrap_or("").to_string();
                builder
                    .add_equality(Equality {
                        name: if name.is_empty() { el.clone() } else { name },
                        first,
                        second: second.map(|s| s.0),
                        polycoef,
                        reference: [y0, second.map_or(0.0, |s| s.1)],
                    })
                    .map_err(|err| self.error(&el, err.to_string()))?;
            }
        }
        self.warnings.extend(warnings);
        Ok(tendons)
    }
}

/// A `connect` or `weld` read from the file, placed once the model is
/// built (its points and orientation at `qpos0`, see
/// `Parser::place_body_equalities`).
pub(super) struct PendingBodyEquality {
    pub element: String,
    pub name: String,
    /// MJCF body indices (0: the world).
    pub body1: usize,
    pub body2: usize,
    pub anchor: Anchor,
}

/// How a body equality's points (and orientation) are given.
pub(super) enum Anchor {
    /// `connect anchor`: a point of body 1 (its MJCF frame); body 2's point
    /// is where it is at `qpos0`.
    Connect(Vec3),
    /// `site1`, `site2`: the sites' origins coincide (a weld: their frames).
    Sites { site1: SE3, site2: SE3, weld: bool },
    /// `weld anchor relpose`: `anchor` a point of body 2 (MJCF frame);
    /// body 2's pose in body 1's MJCF frame (`None`: as at `qpos0`).
    Weld { anchor: Vec3, relpose: Option<SE3> },
}

impl<'a, 'i, 'e> Parser<'a, 'i, 'e> {
    /// A `<connect>` or `<weld>`: its bodies (or sites) and anchor.
    fn body_equality(
        &self,
        e: &Node<'a, 'i>,
        el: &str,
        get: &dyn Fn(&str) -> Option<&'a str>,
    ) -> Result<Option<PendingBodyEquality>, ModelFileError> {
        let weld = e.tag_name().name() == "weld";
        let body = |name: &str| -> Result<usize, ModelFileError> {
            if name == "world" {
                return Ok(0);
            }
            self.bodies
                .iter()
                .position(|b| b.name == name)
                .ok_or_else(|| self.error(el, format!("no body named `{name}`")))
        };
        let site = |name: &str| -> Result<(usize, SE3), ModelFileError> {
            self.site(name)
                .ok_or_else(|| self.error(el, format!("no site named `{name}`")))
        };
        let name = e.attribute("name").unwrap_or("").to_string();
        let name = if name.is_empty() {
            el.to_string()
        } else {
            name
        };
        // MuJoCo: a torque scale of 0 leaves the orientation free.
        let torquescale = match get("torquescale") {
            Some(s) => self.fixed::<1>(s, "torquescale", el)?[0],
            None => 1.0,
        };
        let weld = weld && torquescale != 0.0;
        let (body1, body2, anchor) = match (e.attribute("site1"), e.attribute("site2")) {
            (Some(s1), Some(s2)) => {
                let ((b1, site1), (b2, site2)) = (site(s1)?, site(s2)?);
                (b1, b2, Anchor::Sites { site1, site2, weld })
            }
            (Some(_), None) | (None, Some(_)) => {
                return Err(self.error(el, "needs both `site1` and `site2`".into()));
            }
            (None, None) => {
                let Some(b1) = e.attribute("body1") else {
                    return Err(self.error(el, "needs `body1` (or `site1` and `site2`)".into()));
                };
                let b1 = body(b1)?;
                let b2 = body(e.attribute("body2").unwrap_or("world"))?;
                let anchor = match get("anchor") {
                    Some(s) => v3(self.fixed::<3>(s, "anchor", el)?),
                    None => Vec3::zeros(),
                };
                let a = if weld {
                    // `relpose`: position, then quaternion (w x y z); a zero
                    // quaternion (the default) means "as at qpos0".
                    let relpose = match get("relpose") {
                        Some(s) => {
                            let r = self.fixed::<7>(s, "relpose", el)?;
                            let q = Quaternion::new(r[3], r[4], r[5], r[6]);
                            (q.norm() > 0.0).then(|| {
                                SE3::from_quaternion(
                                    &UnitQuaternion::from_quaternion(q),
                                    Vec3::new(r[0], r[1], r[2]),
                                )
                            })
                        }
                        None => None,
                    };
                    Anchor::Weld { anchor, relpose }
                } else {
                    Anchor::Connect(anchor)
                };
                (b1, b2, a)
            }
        };
        if body1 == body2 {
            return Err(self.error(el, "ties a body to itself".into()));
        }
        Ok(Some(PendingBodyEquality {
            element: el.to_string(),
            name,
            body1,
            body2,
            anchor,
        }))
    }
}

/// Where each MJCF body is on the built model: its carrier (a model
/// body), its MJCF frame in its carrier's, and the mocap body it is.
pub(super) struct Placement<'a> {
    pub carrier: &'a [usize],
    pub from: &'a [SE3],
    pub mocap: &'a [Option<usize>],
}

/// Places the file's `connect`s and `weld`s on the built `model` (bodies
/// welded into others act through their carriers: `carrier`, and `from`
/// the MJCF body frame in its carrier's), their points and orientation
/// taken at `q0` where the file leaves them to the reference pose.
pub(super) fn place_body_equalities(
    model: &mut Model,
    q0: &[f64],
    pending: &[PendingBodyEquality],
    placed: &Placement,
) -> Result<Vec<String>, (String, String)> {
    let (carrier, from) = (placed.carrier, placed.from);
    let mut notes = Vec::new();
    if pending.is_empty() {
        return Ok(notes);
    }
    let mut data = crate::dynamics::Data::new(model);
    crate::dynamics::forward_kinematics(model, &mut data, q0);
    for p in pending {
        let (c1, c2) = (carrier[p.body1], carrier[p.body2]);
        let (x1, x2) = (data.world_from_body[c1], data.world_from_body[c2]);
        let (f1, f2) = (&from[p.body1], &from[p.body2]);
        // (point1, point2, carrier 2's pose in carrier 1's frame for a weld)
        let (point1, point2, relative) = match &p.anchor {
            Anchor::Connect(a) => {
                let point1 = f1.act_point(a);
                let world = x1.act_point(&point1);
                (point1, x2.act_inv_point(&world), None)
            }
            Anchor::Sites { site1, site2, weld } => {
                let (s1, s2) = (f1.mul(site1), f2.mul(site2));
                (
                    s1.translation,
                    s2.translation,
                    weld.then(|| s1.mul(&s2.inverse())),
                )
            }
            Anchor::Weld { anchor, relpose } => {
                let point2 = f2.act_point(anchor);
                let rel = match relpose {
                    Some(r) => f1.mul(r).mul(&f2.inverse()),
                    None => x1.inv_mul(&x2),
                };
                (rel.act_point(&point2), point2, Some(rel))
            }
        };
        let equality = crate::model::BodyEquality {
            name: p.name.clone(),
            body1: c1,
            body2: c2,
            point1,
            point2,
            rotation: relative.map(|r| r.rotation),
            mocap: [placed.mocap[p.body1], placed.mocap[p.body2]],
        };
        if c1 == c2 && equality.mocap != [None; 2] {
            return Err((
                p.element.clone(),
                "ties a mocap body to the world or to another mocap body: nothing it holds can move"
                    .into(),
            ));
        }
        if c1 == c2 {
            // Both bodies move as one: it holds by itself where it holds
            // at all.
            let rotated = equality
                .rotation
                .is_some_and(|r| (r - crate::math::Mat3::identity()).amax() > 1e-9);
            if (equality.point1 - equality.point2).norm() > 1e-9 || rotated {
                return Err((
                    p.element.clone(),
                    "its two bodies are welded into one (no joint between them) in another pose than it asks".into(),
                ));
            }
            notes.push(format!(
                "{}: its two bodies are welded into one, so it holds by itself: not added",
                p.element
            ));
            continue;
        }
        equality
            .check(model.nbodies)
            .map_err(|reason| (p.element.clone(), reason))?;
        model.body_equalities.push(equality);
    }
    Ok(notes)
}

impl<'a, 'i, 'e> Parser<'a, 'i, 'e> {
    /// A `<spatial>` tendon's path: its `<site>`, `<geom>` (a sphere or a
    /// cylinder, with its `sidesite`) and `<pulley>` children in order, on
    /// the model's bodies (`carrier`, with `from` each MJCF body's frame in
    /// its carrier's). MuJoCo's rules on the order are the builder's
    /// (`check_path`, applied by the caller).
    fn spatial_path(
        &self,
        t: &Node<'a, 'i>,
        el: &str,
        carrier: &[usize],
        from: &[SE3],
    ) -> Result<Vec<Wrap>, ModelFileError> {
        let site = |name: &str, what: &str, jel: &str| -> Result<(usize, Vec3), ModelFileError> {
            let Some((b, local)) = self.site(name) else {
                return Err(self.error(jel, format!("no {what} named `{name}`")));
            };
            if self.is_mocap(b) {
                return Err(self.error(
                    jel,
                    format!(
                        "{what} `{name}` is on a mocap body, whose frames stay at the file's pose: not supported"
                    ),
                ));
            }
            Ok((carrier[b], from[b].mul(&local).translation))
        };
        let mut path = Vec::new();
        for j in t.children().filter(|n| n.is_element()) {
            // The tendon and the element, named by what it points at.
            let key = ["site", "geom", "divisor"]
                .iter()
                .find_map(|k| j.attribute(*k).map(|v| format!(" {k}=\"{v}\"")))
                .unwrap_or_default();
            let jel = format!("{el} {}", element_name(&j, &key));
            let need = |attr: &str| {
                j.attribute(attr)
                    .ok_or_else(|| self.error(&jel, format!("needs a `{attr}`")))
            };
            path.push(match j.tag_name().name() {
                "site" => {
                    let (b, p) = site(need("site")?, "site", &jel)?;
                    Wrap::Site(b, p)
                }
                "geom" => {
                    let name = need("geom")?;
                    let Some((b, rec)) = self.bodies.iter().enumerate().find_map(|(b, r)| {
                        r.geoms.iter().find(|g| g.name == name).map(|g| (b, g))
                    }) else {
                        return Err(self.error(&jel, format!("no geom named `{name}`")));
                    };
                    let Some((cylinder, radius)) = rec.wrap else {
                        return Err(self.error(
                            &jel,
                            format!("geom `{name}` ({}): a tendon wraps around spheres and cylinders only", rec.element),
                        ));
                    };
                    let side = match j.attribute("sidesite") {
                        Some(s) => Some(site(s, "side site", &jel)?),
                        None => None,
                    };
                    Wrap::Geom(WrapGeom {
                        name: name.to_string(),
                        body: carrier[b],
                        body_from_geom: from[b].mul(&rec.mjcf_from_geom),
                        radius,
                        cylinder,
                        side,
                    })
                }
                "pulley" => {
                    let [d] = self.fixed::<1>(need("divisor")?, "divisor", &jel)?;
                    Wrap::Pulley(d)
                }
                other => {
                    return Err(self.error(
                        &jel,
                        format!("<{other}> in a spatial tendon (its path holds <site>, <geom> and <pulley>)"),
                    ));
                }
            });
        }
        Ok(path)
    }
}
