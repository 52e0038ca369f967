//! The tendons, equalities and explicit contact pairs of a [`ModelBuilder`].

use super::ModelBuilder;
use crate::error::ModelError;
use crate::model::{WORLD, Wrap};

impl ModelBuilder {
    /// The tendons added so far.
    pub fn tendons(&self) -> &[crate::model::Tendon] {
        &self.tendons
    }

    /// Adds a fixed tendon over 1-dof joints; returns its index.
    pub fn add_tendon(&mut self, tendon: crate::model::Tendon) -> Result<usize, ModelError> {
        let what = format!("tendon `{}`", tendon.name);
        let invalid = |reason: String| ModelError::Invalid {
            what: what.clone(),
            reason,
        };
        match (tendon.joints.is_empty(), tendon.path.is_empty()) {
            (false, true) => {}
            (true, true) => return Err(invalid("has no joint and no site".into())),
            (true, false) => check_path(&tendon.path, self.bodies.len()).map_err(invalid)?,
            (false, false) => return Err(invalid("has both joints and sites".into())),
        }
        for &(j, coef) in &tendon.joints {
            match self.bodies.get(j) {
                Some(b) if j != WORLD && b.joint.nv() == 1 => {}
                Some(b) => {
                    return Err(invalid(format!(
                        "joint of `{}` is {}: a fixed tendon takes 1-dof joints only",
                        b.name,
                        b.joint.name()
                    )));
                }
                None => return Err(invalid(format!("no body {j}"))),
            }
            if !coef.is_finite() {
                return Err(invalid(format!("coefficient {coef} is not finite")));
            }
        }
        let t = &tendon;
        for (name, x) in [
            ("stiffness", t.stiffness),
            ("damping", t.damping),
            ("frictionloss", t.frictionloss),
        ] {
            if !(x.is_finite() && x >= 0.0) {
                return Err(invalid(format!("{name} must be finite and ≥ 0, got {x}")));
            }
        }
        let (lo, hi) = t.spring_length;
        if !(lo.is_finite() && hi.is_finite() && lo <= hi && t.length0.is_finite()) {
            return Err(invalid(format!(
                "spring length ({lo}, {hi}) and length0 {} must be finite with lo ≤ hi",
                t.length0
            )));
        }
        if let Some((lo, hi)) = t.range
            && !(lo.is_finite() && hi.is_finite() && lo < hi)
        {
            return Err(invalid(format!(
                "range needs finite lower < upper, got ({lo}, {hi})"
            )));
        }
        self.tendons.push(tendon);
        Ok(self.tendons.len() - 1)
    }

    /// Adds an equality constraint between coordinates already in the
    /// builder (1-dof joints, tendons); returns its index.
    pub fn add_equality(&mut self, equality: crate::model::Equality) -> Result<usize, ModelError> {
        let what = format!("equality `{}`", equality.name);
        for c in std::iter::once(equality.first).chain(equality.second) {
            let ok = match c {
                crate::model::Coordinate::Joint(j) => {
                    j != WORLD && self.bodies.get(j).is_some_and(|b| b.joint.nv() == 1)
                }
                crate::model::Coordinate::Tendon(t) => t < self.tendons.len(),
            };
            if !ok {
                return Err(ModelError::Invalid {
                    what,
                    reason: format!("{c:?} is not a 1-dof joint or a tendon of the model"),
                });
            }
        }
        if equality.second == Some(equality.first) {
            return Err(ModelError::Invalid {
                what,
                reason: "couples a coordinate with itself".into(),
            });
        }
        if let Some(x) = equality
            .polycoef
            .iter()
            .chain(&equality.reference)
            .find(|x| !x.is_finite())
        {
            return Err(ModelError::Invalid {
                what,
                reason: format!("polynomial coefficients and references must be finite, got {x}"),
            });
        }
        self.equalities.push(equality);
        Ok(self.equalities.len() - 1)
    }

    /// Makes geometries `a` and `b` an explicit pair (MJCF's
    /// `<contact><pair>`): they collide whatever their bits and the
    /// exclusions say, with friction `friction` (sliding, then the
    /// torsional and rolling coefficients in metres) and dimension `condim`
    /// (1: frictionless; 3; 4: torsional friction; 6: rolling too). A
    /// second call for the same pair replaces the first.
    pub fn add_contact_pair(
        &mut self,
        a: usize,
        b: usize,
        friction: [f64; 3],
        condim: u8,
    ) -> Result<(), ModelError> {
        let n = self.geometries.len();
        let name = |g: usize| {
            self.geometries
                .get(g)
                .map_or(format!("{g}"), |x| x.name.clone())
        };
        let what = format!("contact pair ({}, {})", name(a), name(b));
        let invalid = |reason: String| ModelError::Invalid {
            what: what.clone(),
            reason,
        };
        if a >= n || b >= n {
            return Err(invalid(format!("the model has {n} geometries")));
        }
        if a == b {
            return Err(invalid("pairs a geometry with itself".into()));
        }
        if let Some(f) = friction.iter().find(|f| !(f.is_finite() && **f >= 0.0)) {
            return Err(invalid(format!("friction must be finite and ≥ 0, got {f}")));
        }
        if ![1, 3, 4, 6].contains(&condim) {
            return Err(invalid(format!(
                "condim must be 1, 3, 4 or 6, got {condim}"
            )));
        }
        let geoms = (a.min(b), a.max(b));
        self.contact_pairs.retain(|p| p.geoms != geoms);
        self.contact_pairs.push(crate::model::ContactPair {
            geoms,
            friction: friction[0],
            condim,
            spin: [friction[1], friction[2]],
        });
        Ok(())
    }

    /// Adds a `connect` or `weld` ([`crate::model::BodyEquality`]); returns its index.
    pub fn add_body_equality(
        &mut self,
        equality: crate::model::BodyEquality,
    ) -> Result<usize, ModelError> {
        equality
            .check(self.bodies.len())
            .map_err(|reason| ModelError::Invalid {
                what: format!("{} `{}`", equality.kind(), equality.name),
                reason,
            })?;
        self.body_equalities.push(equality);
        Ok(self.body_equalities.len() - 1)
    }
}

/// Why a spatial tendon's path is not one MuJoCo accepts, if it is not:
/// two elements or more, each geom between two sites, a positive finite
/// sphere or cylinder radius, no pulley last or twice in a row, each site
/// next to a site or a geom (a branch has a segment), a positive divisor,
/// bodies that exist and finite points.
pub(crate) fn check_path(path: &[Wrap], nbodies: usize) -> Result<(), String> {
    if path.len() < 2 {
        return Err("a spatial tendon needs two sites or more".into());
    }
    let point = |(b, p): (usize, &crate::math::Vec3), what: &str| {
        if b >= nbodies {
            Err(format!("{what} on body {b}, which does not exist"))
        } else if !p.iter().all(|x| x.is_finite()) {
            Err(format!("{what} point {p:?} is not finite"))
        } else {
            Ok(())
        }
    };
    let site = |k: usize| matches!(path.get(k), Some(Wrap::Site(..)));
    let not_pulley = |k: usize| matches!(path.get(k), Some(Wrap::Site(..) | Wrap::Geom(_)));
    for (k, w) in path.iter().enumerate() {
        match w {
            Wrap::Site(b, p) => {
                point((*b, p), "site")?;
                if !(k > 0 && not_pulley(k - 1) || not_pulley(k + 1)) {
                    return Err(format!(
                        "path element {k}, a site, needs a neighbour that is not a pulley (a branch needs a segment)"
                    ));
                }
            }
            Wrap::Geom(g) => {
                if !(k > 0 && site(k - 1) && site(k + 1)) {
                    return Err(format!(
                        "path element {k}, geom `{}`, must lie between two sites",
                        g.name
                    ));
                }
                point((g.body, &g.body_from_geom.translation), "wrapping geom")?;
                if let Some((b, p)) = &g.side {
                    point((*b, p), "side site")?;
                }
                if !(g.radius.is_finite() && g.radius > 0.0) {
                    return Err(format!(
                        "geom `{}`: the radius must be positive and finite, got {}",
                        g.name, g.radius
                    ));
                }
            }
            Wrap::Pulley(d) => {
                if !(d.is_finite() && *d > 0.0) {
                    return Err(format!(
                        "path element {k}: a pulley's divisor must be positive, got {d}"
                    ));
                }
                match path.get(k + 1) {
                    None => return Err("the path ends with a pulley".into()),
                    Some(Wrap::Pulley(_)) => {
                        return Err(format!(
                            "path elements {k} and {}: two pulleys in a row",
                            k + 1
                        ));
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(())
}
