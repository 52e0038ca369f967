//! A model as bytes and back ([`Model::to_bytes`], [`Model::from_bytes`]):
//! for pickling from Python and for sending a model to another process.
//!
//! The encoding is CBOR (RFC 8949, through `ciborium`), which keeps every
//! `f64` bit for bit (infinite limits and NaN included). A geometry's parry
//! collider is not stored: it is rebuilt from the geometry's shape, as the
//! builder built it. Bytes are checked as they are read: the format's
//! version, then the model's structure (array lengths, indices in range),
//! so that corrupted bytes are an error, never a model that panics later.

use super::{Geometry, JointType, Material, Model, NO_DOF, SE3, Shape, builder::make_collider};
use crate::error::ModelError;
use crate::model::Coordinate;

/// Version of the byte format; bytes of another version are refused.
const FORMAT: u32 = 2;

/// A geometry as stored: everything but the collider.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct GeometryRecord {
    name: String,
    body: usize,
    body_from_geom: SE3,
    shape: Shape,
    material: Material,
    frame: Option<usize>,
}

impl From<Geometry> for GeometryRecord {
    fn from(g: Geometry) -> Self {
        GeometryRecord {
            name: g.name,
            body: g.body,
            body_from_geom: g.body_from_geom,
            shape: g.shape,
            material: g.material,
            frame: g.frame,
        }
    }
}

impl TryFrom<GeometryRecord> for Geometry {
    type Error = ModelError;
    fn try_from(g: GeometryRecord) -> Result<Self, ModelError> {
        let (collider, geom_from_collider) = make_collider(&g.name, &g.shape)?;
        Ok(Geometry {
            body_from_collider: g.body_from_geom.mul(&geom_from_collider),
            collider,
            name: g.name,
            body: g.body,
            body_from_geom: g.body_from_geom,
            shape: g.shape,
            material: g.material,
            frame: g.frame,
        })
    }
}

#[derive(serde::Serialize)]
struct Written<'a> {
    format: u32,
    model: &'a Model,
}

#[derive(serde::Deserialize)]
struct Read {
    format: u32,
    model: Model,
}

fn invalid(reason: String) -> ModelError {
    ModelError::Invalid {
        what: "model bytes".into(),
        reason,
    }
}

impl Model {
    /// The model as bytes, which [`Self::from_bytes`] reads back into an
    /// equal model (every number bit for bit).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        ciborium::into_writer(
            &Written {
                format: FORMAT,
                model: self,
            },
            &mut out,
        )
        .expect("writing to a Vec cannot fail");
        out
    }

    /// The model [`Self::to_bytes`] wrote. Refuses bytes of another format
    /// version, bytes that do not decode, and a decoded model whose
    /// structure is inconsistent (naming what is).
    pub fn from_bytes(bytes: &[u8]) -> Result<Model, ModelError> {
        let read: Read = ciborium::from_reader(bytes).map_err(|e| {
            // A geometry whose collider cannot be rebuilt says so here.
            invalid(format!("not a moreau model ({e})"))
        })?;
        if read.format != FORMAT {
            return Err(invalid(format!(
                "format version {} (this moreau reads version {FORMAT})",
                read.format
            )));
        }
        read.model.check_structure().map_err(invalid)?;
        Ok(read.model)
    }

    /// Whether the model's arrays have their lengths and its indices are in
    /// range (what the builder guarantees; checked on a model read from
    /// bytes).
    pub fn check_structure(&self) -> Result<(), String> {
        let (nb, nv) = (self.nbodies, self.nv);
        let lengths = [
            ("body_name", self.body_name.len(), nb),
            ("body_parent", self.body_parent.len(), nb),
            ("body_inertia", self.body_inertia.len(), nb),
            ("body_last_dof", self.body_last_dof.len(), nb),
            ("joint_type", self.joint_type.len(), nb),
            ("joint_name", self.joint_name.len(), nb),
            ("joint_range", self.joint_range.len(), nb),
            ("joint_placement", self.joint_placement.len(), nb),
            ("joint_idx_q", self.joint_idx_q.len(), nb),
            ("joint_idx_v", self.joint_idx_v.len(), nb),
            ("dof_parent", self.dof_parent.len(), nv),
            ("dof_body", self.dof_body.len(), nv),
            ("dof_motion", self.dof_motion.len(), nv),
            ("dof_damping", self.dof_damping.len(), nv),
            ("dof_armature", self.dof_armature.len(), nv),
            ("dof_frictionloss", self.dof_frictionloss.len(), nv),
            ("dof_urdf_friction", self.dof_urdf_friction.len(), nv),
            ("dof_stiffness", self.dof_stiffness.len(), nv),
            ("dof_springref", self.dof_springref.len(), nv),
            ("dof_velocity_limit", self.dof_velocity_limit.len(), nv),
            ("dof_effort_limit", self.dof_effort_limit.len(), nv),
        ];
        for (what, got, expected) in lengths {
            if got != expected {
                return Err(format!("{what} has {got} entries, expected {expected}"));
            }
        }
        if nb == 0 {
            return Err("no world body".into());
        }
        let (mut nq_sum, mut nv_sum) = (0, 0);
        for b in 1..nb {
            let parent = self.body_parent[b];
            if parent >= b {
                return Err(format!("body {b} has parent {parent} (parents come first)"));
            }
            let j: &JointType = &self.joint_type[b];
            if self.joint_idx_q[b] + j.nq() > self.nq || self.joint_idx_v[b] + j.nv() > nv {
                return Err(format!("joint {b}'s coordinates are out of range"));
            }
            nq_sum += j.nq();
            nv_sum += j.nv();
        }
        if (nq_sum, nv_sum) != (self.nq, nv) {
            return Err(format!(
                "the joints have {nq_sum} coordinates and {nv_sum} dofs, the model says {} and {nv}",
                self.nq
            ));
        }
        for k in 0..nv {
            let p = self.dof_parent[k];
            if (p != NO_DOF && p >= k) || self.dof_body[k] >= nb {
                return Err(format!("dof {k}'s parent or body is out of range"));
            }
        }
        let body = |b: usize, what: &str| {
            if b < nb {
                Ok(())
            } else {
                Err(format!("{what} refers to body {b} of {nb}"))
            }
        };
        for b in &self.body_last_dof {
            if *b != NO_DOF && *b >= nv {
                return Err(format!("body_last_dof {b} is out of range ({nv} dofs)"));
            }
        }
        for g in &self.geometries {
            body(g.body, &format!("geometry `{}`", g.name))?;
            if g.frame.is_some_and(|f| f >= self.frames.len()) {
                return Err(format!("geometry `{}`'s frame is out of range", g.name));
            }
        }
        for f in &self.frames {
            body(f.body, &format!("frame `{}`", f.name))?;
        }
        for v in &self.visuals {
            body(v.body, "a visual")?;
            if !v.rgba.iter().all(|c| (0.0..=1.0).contains(c)) {
                return Err(format!("a visual's rgba {:?} is outside [0, 1]", v.rgba));
            }
        }
        let (nt, na) = (self.tendons.len(), self.na());
        for a in &self.actuators {
            body(a.joint, &format!("actuator `{}`", a.name))?;
            if a.dof >= nv.max(1)
                || a.tendon.is_some_and(|t| t >= nt)
                || a.act.is_some_and(|i| i >= na)
            {
                return Err(format!("actuator `{}` refers out of range", a.name));
            }
        }
        for t in &self.tendons {
            for &(j, _) in &t.joints {
                body(j, &format!("tendon `{}`", t.name))?;
            }
            if t.is_spatial() {
                super::builder::constraints::check_path(&t.path, nb)
                    .map_err(|e| format!("tendon `{}`: {e}", t.name))?;
            }
        }
        let coordinate = |c: &Coordinate, what: &str| match *c {
            Coordinate::Joint(b) => body(b, what),
            Coordinate::Tendon(t) if t < nt => Ok(()),
            Coordinate::Tendon(t) => Err(format!("{what} refers to tendon {t} of {nt}")),
        };
        for e in &self.equalities {
            let what = format!("equality `{}`", e.name);
            coordinate(&e.first, &what)?;
            if let Some(c) = &e.second {
                coordinate(c, &what)?;
            }
        }
        for e in &self.body_equalities {
            body(e.body1, &format!("equality `{}`", e.name))?;
            body(e.body2, &format!("equality `{}`", e.name))?;
            if let Some(&m) = e.mocap.iter().flatten().find(|&&m| m >= self.mocap.len()) {
                return Err(format!(
                    "equality `{}` refers to mocap body {m} of {}",
                    e.name,
                    self.mocap.len()
                ));
            }
        }
        let nf = self.frames.len();
        if let Some(m) = self
            .mocap
            .iter()
            .find(|m| m.frames.iter().any(|&f| f >= nf))
        {
            return Err(format!(
                "mocap body `{}` refers to a frame past the {nf}",
                m.name
            ));
        }
        for &(a, b) in &self.collision_exclusions {
            body(a, "a collision exclusion")?;
            body(b, "a collision exclusion")?;
        }
        let nf = self.frames.len();
        for &(a, b) in &self.frame_exclusions {
            if [a, b].iter().any(|&f| f != super::WORLD_FRAME && f >= nf) {
                return Err(format!(
                    "a collision exclusion refers to frames {a}, {b} of {nf}"
                ));
            }
        }
        let ng = self.geometries.len();
        for p in &self.contact_pairs {
            if p.geoms.0 >= ng || p.geoms.1 >= ng {
                return Err(format!(
                    "a contact pair refers to geometries {:?} of {ng}",
                    p.geoms
                ));
            }
        }
        for t in &self.ray_targets {
            t.check(self.nbodies, self.frames.len())?;
        }
        self.check_sensors()?;
        self.check_cameras()
    }
}
