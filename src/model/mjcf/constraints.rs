//! `<tendon><fixed>` and `<equality><joint>`, `<equality><tendon>` onto the
//! model's [`Tendon`]s and [`Equality`]s. Spatial tendons and the `connect`
//! and `weld` equalities are warned about where they act; `solref` and
//! `solimp` are not read (the rows are rigid, stabilized like contacts).

use super::*;
use crate::model::{Coordinate, Equality, Tendon};

/// The joints of the file by name: `(body index, kind, element)`.
pub(super) type JointPlan = HashMap<String, (usize, JointKind, String)>;

impl<'a, 'i, 'e> Parser<'a, 'i, 'e> {
    /// Adds the fixed tendons, then the joint and tendon equalities, of the
    /// sections in `top` to `builder`; returns the tendons' indices by name.
    pub(super) fn tendons_and_equalities(
        &mut self,
        top: &[Node<'a, 'i>],
        joint_plan: &JointPlan,
        joint_idx_q: &dyn Fn(usize) -> usize,
        q0: &[f64],
        builder: &mut ModelBuilder,
    ) -> Result<HashMap<String, usize>, ModelFileError> {
        let mut tendons = HashMap::new();
        let mut lengths0 = Vec::new();
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
                if t.tag_name().name() != "fixed" {
                    // A spatial tendon with no effect (no range, spring,
                    // friction, actuator or equality) needs no warning.
                    if t.tag_name().name() != "spatial" || spatial_acts(top, &t) {
                        warnings.push(format!(
                            "{el}: only fixed tendons are supported (not <{}>), ignored",
                            t.tag_name().name()
                        ));
                    }
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
                for j in t.children().filter(|n| n.is_element()) {
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
                let length0: f64 = joints.iter().map(|&(b, c)| c * q0[joint_idx_q(b)]).sum();
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
                if !matches!(tag, "joint" | "tendon") {
                    warnings.push(format!(
                        "{el}: <{tag}> equality constraints are not supported (joint and tendon are), ignored"
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

/// Whether a spatial tendon acts on the dynamics: a range, a spring,
/// damping, friction or armature, or an actuator or equality naming it.
fn spatial_acts(top: &[Node<'_, '_>], t: &Node<'_, '_>) -> bool {
    let nonzero = |attr: &str| {
        t.attribute(attr)
            .is_some_and(|v| v.split_whitespace().any(|x| x.parse::<f64>() != Ok(0.0)))
    };
    let limited = match t.attribute("limited") {
        Some("true") => true,
        Some("false") => false,
        _ => t.attribute("range").is_some(),
    };
    let named = t.attribute("name").is_some_and(|name| {
        top.iter().any(|s| {
            s.descendants().any(|d| {
                ["tendon", "tendon1", "tendon2"]
                    .iter()
                    .any(|a| d.attribute(*a) == Some(name))
            })
        })
    });
    limited
        || named
        || ["stiffness", "damping", "frictionloss", "armature"]
            .iter()
            .any(|a| nonzero(a))
}
