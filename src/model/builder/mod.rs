//! `ModelBuilder`: validates bodies, joints and geometries as they are added.

use super::{
    Actuator, ActuatorDynamics, Frame, FrictionMix, Geometry, JointSpec, JointType, Medium, Model,
    NO_DOF, Shape, WORLD,
};
use crate::error::ModelError;
use crate::math::{Inertia, Mat3, SE3, Vec3};
use parry3d_f64::math::Vector as PVec;
use parry3d_f64::shape::{HeightFieldFlags, SharedShape};
use parry3d_f64::utils::Array2;

pub(crate) mod constraints;
mod material;

pub use material::{DEFAULT_ROLLING, DEFAULT_TORSIONAL, Material};

#[derive(Clone)]
struct BodyDef {
    name: String,
    parent: usize,
    joint: JointType,
    placement: SE3,
    inertia: Inertia,
    spec: JointSpec,
}

/// Builds a [`Model`], checking each piece as it is added. Body 0 (`WORLD`) exists from the start.
#[derive(Clone)]
pub struct ModelBuilder {
    name: String,
    gravity: Vec3,
    medium: Medium,
    friction_mix: FrictionMix,
    bodies: Vec<BodyDef>,
    geometries: Vec<Geometry>,
    exclusions: Vec<(usize, usize)>,
    frame_exclusions: Vec<(usize, usize)>,
    actuators: Vec<Actuator>,
    tendons: Vec<super::Tendon>,
    equalities: Vec<super::Equality>,
    body_equalities: Vec<super::BodyEquality>,
    contact_pairs: Vec<super::ContactPair>,
    frames: Vec<Frame>,
    /// Convex-mesh colliders by their exact vertices: instances of one mesh
    /// share one hull (computed once).
    hulls: std::collections::HashMap<Vec<[u64; 3]>, SharedShape>,
}

fn finite3(v: &Vec3) -> bool {
    v.iter().all(|x| x.is_finite())
}

fn check_se3(what: impl Fn() -> String, m: &SE3) -> Result<(), ModelError> {
    if !m.is_finite() {
        return Err(ModelError::NonFinite { what: what() });
    }
    let orth = (m.rotation.transpose() * m.rotation - Mat3::identity()).norm();
    if orth > 1e-6 || m.rotation.determinant() < 0.0 {
        return Err(ModelError::Invalid {
            what: what(),
            reason: format!("rotation is not a proper orthonormal matrix (‖RᵀR − I‖ = {orth:e})"),
        });
    }
    Ok(())
}

/// Checks mass > 0, inertia symmetric positive definite and the triangle inequality.
pub fn validate_inertia(body: &str, inertia: &Inertia) -> Result<(), ModelError> {
    if !(inertia.mass.is_finite() && inertia.mass > 0.0) {
        return Err(ModelError::NonPositiveMass {
            body: body.into(),
            mass: inertia.mass,
        });
    }
    if !finite3(&inertia.com) || !inertia.rotational.iter().all(|x| x.is_finite()) {
        return Err(ModelError::NonFinite {
            what: format!("body `{body}`: inertia"),
        });
    }
    let i = &inertia.rotational;
    let scale = i.abs().max().max(f64::MIN_POSITIVE);
    if (i - i.transpose()).abs().max() > 1e-9 * scale {
        return Err(ModelError::Invalid {
            what: format!("body `{body}`: rotational inertia"),
            reason: "not symmetric".into(),
        });
    }
    let mut ev = i.symmetric_eigenvalues();
    ev.as_mut_slice().sort_by(|a, b| a.total_cmp(b));
    let e = [ev[0], ev[1], ev[2]];
    if e[0] <= 0.0 {
        return Err(ModelError::InertiaNotPositiveDefinite {
            body: body.into(),
            eigenvalues: e,
        });
    }
    if e[2] > (e[0] + e[1]) * (1.0 + 1e-9) {
        return Err(ModelError::InertiaTriangleInequality {
            body: body.into(),
            moments: e,
        });
    }
    Ok(())
}

/// Refuses `name` for a new `kind` (body, geometry) if one of `existing` has it.
fn check_unique<'n>(
    kind: &'static str,
    name: &str,
    mut existing: impl Iterator<Item = &'n str>,
) -> Result<(), ModelError> {
    if existing.any(|n| n == name) {
        return Err(ModelError::DuplicateName {
            kind,
            name: name.into(),
        });
    }
    Ok(())
}

fn pvec(v: &Vec3) -> PVec {
    PVec::new(v.x, v.y, v.z)
}

/// Builds the parry collider for a shape; returns it with the transform from
/// parry's shape frame to our geometry frame.
pub(crate) fn make_collider(name: &str, shape: &Shape) -> Result<(SharedShape, SE3), ModelError> {
    let bad = |reason: String| {
        Err(ModelError::InvalidGeometry {
            geom: name.into(),
            reason,
        })
    };
    let pos = |x: f64| x.is_finite() && x > 0.0;
    match shape {
        Shape::Ball { radius } => {
            if !pos(*radius) {
                return bad(format!("ball radius must be positive, got {radius}"));
            }
            Ok((SharedShape::ball(*radius), SE3::identity()))
        }
        Shape::Cuboid { half_extents: h } => {
            if !h.iter().all(|&x| pos(x)) {
                return bad(format!(
                    "cuboid half extents must be positive, got {:?}",
                    h.as_slice()
                ));
            }
            Ok((SharedShape::cuboid(h.x, h.y, h.z), SE3::identity()))
        }
        Shape::Capsule {
            half_length,
            radius,
        } => {
            if !(pos(*radius) && half_length.is_finite() && *half_length >= 0.0) {
                return bad(format!(
                    "capsule needs radius > 0 and half_length ≥ 0, got {radius}, {half_length}"
                ));
            }
            Ok((
                SharedShape::capsule_z(*half_length, *radius),
                SE3::identity(),
            ))
        }
        Shape::Cylinder {
            half_length,
            radius,
        } => {
            if !pos(*radius) || !pos(*half_length) {
                return bad(format!(
                    "cylinder needs positive radius and half_length, got {radius}, {half_length}"
                ));
            }
            // parry's cylinder is along y; rotate it onto z.
            let y_to_z = SE3::from_axis_angle(&Vec3::x(), std::f64::consts::FRAC_PI_2);
            Ok((SharedShape::cylinder(*half_length, *radius), y_to_z))
        }
        Shape::Ellipsoid { radii: r } => {
            if !r.iter().all(|&x| pos(x)) {
                return bad(format!(
                    "ellipsoid radii must be positive, got {:?}",
                    r.as_slice()
                ));
            }
            let e = super::ellipsoid::Ellipsoid::new(pvec(r));
            Ok((SharedShape::new(e), SE3::identity()))
        }
        Shape::ConvexMesh { points } => {
            if points.len() < 4 || !points.iter().all(finite3) {
                return bad(format!(
                    "convex mesh needs at least 4 finite points, got {}",
                    points.len()
                ));
            }
            let pts: Vec<PVec> = points.iter().map(pvec).collect();
            let extent = points.iter().map(|p| p.norm()).fold(0.0, f64::max);
            match SharedShape::convex_hull(&pts) {
                // A flat hull has (numerically) zero volume.
                Some(s) if s.mass_properties(1.0).mass() > 1e-12 * extent.powi(3) => {
                    Ok((s, SE3::identity()))
                }
                _ => bad(
                    "convex hull of the points is degenerate (flat or coincident points)".into(),
                ),
            }
        }
        Shape::HalfSpace { normal } => {
            let n = normal.norm();
            if !finite3(normal) || n < 1e-12 {
                return bad("half-space normal is zero or not finite".into());
            }
            Ok((SharedShape::halfspace(pvec(&(normal / n))), SE3::identity()))
        }
        Shape::HeightField(field) => {
            if let Err(reason) = field.check() {
                return bad(reason);
            }
            // parry's grid is y-up, rows along its z and columns along its
            // x: the cyclic rotation (x, y, z) ↦ (y, z, x) puts its rows
            // along our x, its columns along our y and its heights on z.
            let (nx, ny) = field.heights.shape();
            let heights = Array2::new(nx, ny, field.heights.as_slice().to_vec());
            let scale = PVec::new(field.size[1], 1.0, field.size[0]);
            let ours_from_parry = SE3::from_rotation(Mat3::new(
                0.0, 0.0, 1.0, //
                1.0, 0.0, 0.0, //
                0.0, 1.0, 0.0,
            ));
            let collider = SharedShape::heightfield_with_flags(
                heights,
                scale,
                HeightFieldFlags::FIX_INTERNAL_EDGES,
            );
            Ok((collider, ours_from_parry))
        }
    }
}

impl ModelBuilder {
    pub fn new(name: &str) -> Self {
        ModelBuilder {
            name: name.into(),
            gravity: Vec3::new(0.0, 0.0, -9.81),
            medium: Medium::default(),
            friction_mix: FrictionMix::default(),
            bodies: vec![BodyDef {
                name: "world".into(),
                parent: WORLD,
                joint: JointType::Fixed,
                placement: SE3::identity(),
                inertia: Inertia::zero(),
                spec: JointSpec::default(),
            }],
            geometries: Vec::new(),
            exclusions: Vec::new(),
            frame_exclusions: Vec::new(),
            actuators: Vec::new(),
            tendons: Vec::new(),
            equalities: Vec::new(),
            body_equalities: Vec::new(),
            contact_pairs: Vec::new(),
            frames: Vec::new(),
            hulls: Default::default(),
        }
    }

    /// Sets how pairs of geometries combine their friction coefficients.
    pub fn set_friction_mix(&mut self, mix: FrictionMix) -> &mut Self {
        self.friction_mix = mix;
        self
    }

    /// Sets the fluid medium (density and viscosity finite and ≥ 0, wind finite).
    pub fn set_medium(&mut self, medium: Medium) -> Result<&mut Self, ModelError> {
        for (what, x) in [("density", medium.density), ("viscosity", medium.viscosity)] {
            if !(x.is_finite() && x >= 0.0) {
                return Err(ModelError::Invalid {
                    what: format!("medium {what}"),
                    reason: format!("must be finite and ≥ 0, got {x}"),
                });
            }
        }
        if !finite3(&medium.wind) {
            return Err(ModelError::Invalid {
                what: "wind".into(),
                reason: format!("must be finite, got {:?}", medium.wind),
            });
        }
        self.medium = medium;
        Ok(self)
    }

    pub fn set_gravity(&mut self, gravity: Vec3) -> Result<&mut Self, ModelError> {
        if !finite3(&gravity) {
            return Err(ModelError::NonFinite {
                what: "gravity".into(),
            });
        }
        self.gravity = gravity;
        Ok(self)
    }

    pub fn nbodies(&self) -> usize {
        self.bodies.len()
    }

    /// Adds body `name` attached to `parent` by `joint`, whose frame sits at
    /// `parent_from_joint` in the parent body. Axes are normalized here.
    pub fn add_body(
        &mut self,
        name: &str,
        parent: usize,
        joint: JointType,
        parent_from_joint: SE3,
        inertia: Inertia,
    ) -> Result<usize, ModelError> {
        validate_inertia(name, &inertia)?;
        self.push_body(name, parent, joint, parent_from_joint, inertia)
    }

    /// Adds a body without mass of its own: a joint frame in a chain of
    /// joints that a model file puts in one body (MJCF's several `<joint>`s
    /// per `<body>`), whose mass is carried by the last body of the chain.
    /// The caller must give it a child body with mass: a dof that moves no
    /// mass makes the mass matrix singular.
    pub fn add_massless_body(
        &mut self,
        name: &str,
        parent: usize,
        joint: JointType,
        parent_from_joint: SE3,
    ) -> Result<usize, ModelError> {
        self.push_body(name, parent, joint, parent_from_joint, Inertia::zero())
    }

    fn push_body(
        &mut self,
        name: &str,
        parent: usize,
        joint: JointType,
        parent_from_joint: SE3,
        inertia: Inertia,
    ) -> Result<usize, ModelError> {
        if parent >= self.bodies.len() {
            return Err(ModelError::UnknownParent {
                body: name.into(),
                parent,
                nbodies: self.bodies.len(),
            });
        }
        check_unique("body", name, self.bodies.iter().map(|b| b.name.as_str()))?;
        let joint = match joint {
            JointType::Revolute(a) | JointType::Prismatic(a) => {
                let n = a.norm();
                if !finite3(&a) || n < 1e-12 {
                    return Err(ModelError::ZeroAxis {
                        body: name.into(),
                        axis: [a.x, a.y, a.z],
                    });
                }
                if matches!(joint, JointType::Revolute(_)) {
                    JointType::Revolute(a / n)
                } else {
                    JointType::Prismatic(a / n)
                }
            }
            j => j,
        };
        check_se3(
            || format!("body `{name}`: joint placement"),
            &parent_from_joint,
        )?;
        self.bodies.push(BodyDef {
            name: name.into(),
            parent,
            joint,
            placement: parent_from_joint,
            inertia,
            spec: JointSpec::default(),
        });
        Ok(self.bodies.len() - 1)
    }

    /// A ground on the world: the half-space `z ≤ 0`, named `name`.
    pub fn add_ground(&mut self, name: &str, material: Material) -> Result<usize, ModelError> {
        self.add_geometry(
            name,
            WORLD,
            SE3::identity(),
            Shape::HalfSpace { normal: Vec3::z() },
            material,
        )
    }

    /// Attaches a collision geometry to `body` (or to the world, `WORLD`).
    pub fn add_geometry(
        &mut self,
        name: &str,
        body: usize,
        body_from_geom: SE3,
        shape: Shape,
        material: Material,
    ) -> Result<usize, ModelError> {
        if body >= self.bodies.len() {
            return Err(ModelError::UnknownBody {
                geom: name.into(),
                body,
                nbodies: self.bodies.len(),
            });
        }
        check_unique(
            "geometry",
            name,
            self.geometries.iter().map(|g| g.name.as_str()),
        )?;
        check_se3(|| format!("geometry `{name}`: placement"), &body_from_geom)?;
        if body != WORLD && matches!(shape, Shape::HeightField(_)) {
            return Err(ModelError::InvalidGeometry {
                geom: name.into(),
                reason: "a height field is terrain: attach it to the world (body 0)".into(),
            });
        }
        let m = &material;
        for (what, f) in [
            ("friction", m.friction),
            ("torsional friction", m.torsional),
            ("rolling friction", m.rolling),
        ] {
            if !(f.is_finite() && f >= 0.0) {
                return Err(ModelError::InvalidGeometry {
                    geom: name.into(),
                    reason: format!("{what} must be finite and ≥ 0, got {f}"),
                });
            }
        }
        if !(m.restitution.is_finite() && (0.0..=1.0).contains(&m.restitution)) {
            return Err(ModelError::InvalidGeometry {
                geom: name.into(),
                reason: format!("restitution must be in [0, 1], got {}", m.restitution),
            });
        }
        if ![1, 3, 4, 6].contains(&m.condim) {
            return Err(ModelError::InvalidGeometry {
                geom: name.into(),
                reason: format!("condim must be 1, 3, 4 or 6, got {}", m.condim),
            });
        }
        let hull_key = match &shape {
            Shape::ConvexMesh { points } => Some(
                points
                    .iter()
                    .map(|p| [p.x.to_bits(), p.y.to_bits(), p.z.to_bits()])
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        };
        let (collider, geom_from_collider) = match hull_key.as_ref().and_then(|k| self.hulls.get(k))
        {
            Some(c) => (c.clone(), SE3::identity()),
            None => make_collider(name, &shape)?,
        };
        if let Some(k) = hull_key {
            self.hulls.entry(k).or_insert_with(|| collider.clone());
        }
        self.geometries.push(Geometry {
            name: name.into(),
            body,
            body_from_geom,
            shape,
            material,
            frame: None,
            collider,
            body_from_collider: body_from_geom.mul(&geom_from_collider),
        });
        Ok(self.geometries.len() - 1)
    }

    /// Sets what the model file says of the joint of `body` (see [`JointSpec`]),
    /// checked: a range with `lower ≤ upper` on a 1-dof joint (a ball
    /// joint: `(0, angle)` with `0 < angle ≤ π`), no range on other joints;
    /// finite non-negative damping, armature and friction; positive limits.
    pub fn set_joint_spec(&mut self, body: usize, spec: JointSpec) -> Result<(), ModelError> {
        let Some(b) = self.bodies.get(body).filter(|_| body != WORLD) else {
            return Err(ModelError::Invalid {
                what: format!("joint of body {body}"),
                reason: format!(
                    "no such body (the model has {} bodies so far; the world has no joint)",
                    self.bodies.len()
                ),
            });
        };
        let name = if spec.name.is_empty() {
            &b.name
        } else {
            &spec.name
        };
        let bad = |reason: String| {
            Err(ModelError::Invalid {
                what: format!("joint `{name}`"),
                reason,
            })
        };
        if let Some((lo, hi)) = spec.range {
            let ok = match b.joint {
                JointType::Revolute(_) | JointType::Prismatic(_) => {
                    lo.is_finite() && hi.is_finite() && lo <= hi
                }
                JointType::Spherical => lo == 0.0 && hi > 0.0 && hi <= std::f64::consts::PI,
                _ => false,
            };
            if !ok {
                return bad(format!(
                    "range ({lo}, {hi}) is not valid for a {} joint",
                    b.joint.name()
                ));
            }
        }
        for (what, x) in [
            ("damping", spec.damping),
            ("armature", spec.armature),
            ("frictionloss", spec.frictionloss),
            ("friction", spec.urdf_friction),
            ("stiffness", spec.stiffness),
        ] {
            if !(x.is_finite() && x >= 0.0) {
                return bad(format!("{what} must be finite and ≥ 0, got {x}"));
            }
        }
        if !spec.springref.is_finite() {
            return bad(format!("springref must be finite, got {}", spec.springref));
        }
        if spec.stiffness > 0.0 && b.joint.nv() != 1 {
            return bad(format!(
                "springs are supported on 1-dof joints only, not on a {} joint",
                b.joint.name()
            ));
        }
        for (what, x) in [
            ("velocity limit", spec.velocity_limit),
            ("effort limit", spec.effort_limit),
        ] {
            if !(x > 0.0) {
                return bad(format!("{what} must be positive (infinite: none), got {x}"));
            }
        }
        self.bodies[body].spec = spec;
        Ok(())
    }

    /// Adds an actuator on the joint of `actuator.joint`, a 1-dof joint
    /// (its `dof` is set by [`Self::build`]), or on a tendon (a fixed
    /// tendon's first joint, the world for a spatial tendon); returns its index.
    pub fn add_actuator(&mut self, actuator: Actuator) -> Result<usize, ModelError> {
        let what = format!("actuator `{}`", actuator.name);
        if let Some(t) = actuator.tendon {
            let Some(tendon) = self.tendons.get(t) else {
                return Err(ModelError::Invalid {
                    what,
                    reason: format!("no tendon {t} (the model has {})", self.tendons.len()),
                });
            };
            if tendon.is_spatial() {
                if actuator.joint != WORLD {
                    return Err(ModelError::Invalid {
                        what,
                        reason: format!(
                            "`joint` must be the world's (0) on spatial tendon `{}`",
                            tendon.name
                        ),
                    });
                }
            } else if tendon.joints.first().map(|j| j.0) != Some(actuator.joint) {
                return Err(ModelError::Invalid {
                    what,
                    reason: format!("`joint` must be tendon `{}`'s first joint", tendon.name),
                });
            }
        }
        let spatial = actuator
            .tendon
            .is_some_and(|t| self.tendons[t].is_spatial());
        let Some(b) = self.bodies.get(actuator.joint) else {
            return Err(ModelError::Invalid {
                what,
                reason: format!("no body {} to drive", actuator.joint),
            });
        };
        if b.joint.nv() != 1 && !spatial {
            return Err(ModelError::Invalid {
                what,
                reason: format!(
                    "drives the {} joint of `{}`; only 1-dof joints are supported",
                    b.joint.name(),
                    b.name
                ),
            });
        }
        if !(actuator.gear.is_finite() && actuator.gear != 0.0) {
            return Err(ModelError::Invalid {
                what,
                reason: format!("gear must be finite and non-zero, got {}", actuator.gear),
            });
        }
        if let Some(x) = std::iter::once(actuator.gain)
            .chain(actuator.bias)
            .find(|x| !x.is_finite())
        {
            return Err(ModelError::Invalid {
                what,
                reason: format!("gain and bias must be finite, got {x}"),
            });
        }
        for (name, r) in [
            ("ctrl range", actuator.ctrl_range),
            ("force range", actuator.force_range),
        ] {
            if let Some((lo, hi)) = r
                && !(lo < hi)
            {
                return Err(ModelError::Invalid {
                    what,
                    reason: format!("{name} needs lower < upper, got ({lo}, {hi})"),
                });
            }
        }
        let tau = match actuator.dynamics {
            ActuatorDynamics::Filter(tau) | ActuatorDynamics::FilterExact(tau) => tau,
            _ => 1.0,
        };
        if !(tau.is_finite() && tau > 0.0) {
            return Err(ModelError::Invalid {
                what,
                reason: format!(
                    "the {} time constant must be finite and positive, got {tau}",
                    actuator.dynamics.name()
                ),
            });
        }
        if let Some((lo, hi)) = actuator.act_range
            && !(lo < hi)
        {
            return Err(ModelError::Invalid {
                what,
                reason: format!("act range needs lower < upper, got ({lo}, {hi})"),
            });
        }
        let mut actuator = actuator;
        actuator.act = (actuator.dynamics != ActuatorDynamics::None).then(|| {
            self.actuators
                .iter()
                .filter(|a| a.dynamics != ActuatorDynamics::None)
                .count()
        });
        self.actuators.push(actuator);
        Ok(self.actuators.len() - 1)
    }

    /// A named frame fixed on `body` at `body_from_frame` (a file's body
    /// welded into its parent, a site). Returns its index.
    pub fn add_frame(
        &mut self,
        name: &str,
        body: usize,
        body_from_frame: SE3,
    ) -> Result<usize, ModelError> {
        if body >= self.bodies.len() {
            return Err(ModelError::UnknownBody {
                geom: format!("<frame {name}>"),
                body,
                nbodies: self.bodies.len(),
            });
        }
        if !body_from_frame.is_finite() {
            return Err(ModelError::NonFinite {
                what: format!("placement of frame {name}"),
            });
        }
        self.frames.push(Frame {
            name: name.into(),
            body,
            body_from_frame,
            inertia: None,
        });
        Ok(self.frames.len() - 1)
    }

    /// Adds the frame of a file's body carried by model body `body` (see
    /// [`Frame::inertia`]): `inertia` is that file body's own, in the frame.
    pub fn add_body_frame(
        &mut self,
        name: &str,
        body: usize,
        body_from_frame: SE3,
        inertia: Inertia,
    ) -> Result<usize, ModelError> {
        let finite = inertia.mass.is_finite()
            && inertia
                .com
                .iter()
                .chain(inertia.rotational.iter())
                .all(|x| x.is_finite());
        if !finite {
            return Err(ModelError::NonFinite {
                what: format!("inertia of frame {name}"),
            });
        }
        let f = self.add_frame(name, body, body_from_frame)?;
        self.frames[f].inertia = Some(inertia);
        Ok(f)
    }

    /// Records that geometry `geom` was declared in the file's body whose
    /// frame is `frame` (see [`Geometry::frame`]).
    pub fn set_geometry_frame(&mut self, geom: usize, frame: usize) -> Result<(), ModelError> {
        let nframes = self.frames.len();
        let ngeoms = self.geometries.len();
        let Some(g) = self.geometries.get_mut(geom) else {
            return Err(ModelError::InvalidGeometry {
                geom: format!("#{geom}"),
                reason: format!("no such geometry (there are {ngeoms})"),
            });
        };
        if frame >= nframes || self.frames[frame].body != g.body {
            return Err(ModelError::InvalidGeometry {
                geom: g.name.clone(),
                reason: format!("frame {frame} is not a frame of its body {}", g.body),
            });
        }
        g.frame = Some(frame);
        Ok(())
    }

    /// Geometries of bodies `a` and `b` never collide with each other.
    pub fn exclude_collision(&mut self, a: usize, b: usize) -> Result<(), ModelError> {
        for x in [a, b] {
            if x >= self.bodies.len() {
                return Err(ModelError::UnknownBody {
                    geom: format!("<collision exclusion {a}/{b}>"),
                    body: x,
                    nbodies: self.bodies.len(),
                });
            }
        }
        self.exclusions.push((a.min(b), a.max(b)));
        Ok(())
    }

    /// The geometries declared in file bodies (frames) `a` and `b`
    /// ([`crate::model::WORLD_FRAME`]: the file's world body) never
    /// collide ([`Model::frame_exclusions`]).
    pub fn exclude_frames(&mut self, a: usize, b: usize) -> Result<(), ModelError> {
        for x in [a, b] {
            if x != crate::model::WORLD_FRAME && x >= self.frames.len() {
                return Err(ModelError::UnknownBody {
                    geom: format!("<collision exclusion of frames {a}/{b}>"),
                    body: x,
                    nbodies: self.frames.len(),
                });
            }
        }
        self.frame_exclusions.push((a.min(b), a.max(b)));
        Ok(())
    }

    pub fn build(self) -> Result<Model, ModelError> {
        let nb = self.bodies.len();
        let mut m = Model {
            name: self.name,
            nq: 0,
            nv: 0,
            nbodies: nb,
            gravity: self.gravity,
            medium: self.medium,
            friction_mix: self.friction_mix,
            body_name: Vec::with_capacity(nb),
            body_parent: Vec::with_capacity(nb),
            body_inertia: Vec::with_capacity(nb),
            body_last_dof: Vec::with_capacity(nb),
            joint_type: Vec::with_capacity(nb),
            joint_placement: Vec::with_capacity(nb),
            joint_idx_q: Vec::with_capacity(nb),
            joint_idx_v: Vec::with_capacity(nb),
            dof_parent: Vec::new(),
            dof_body: Vec::new(),
            dof_motion: Vec::new(),
            joint_name: Vec::with_capacity(nb),
            joint_range: Vec::with_capacity(nb),
            dof_damping: Vec::new(),
            dof_armature: Vec::new(),
            dof_frictionloss: Vec::new(),
            dof_urdf_friction: Vec::new(),
            dof_stiffness: Vec::new(),
            dof_springref: Vec::new(),
            dof_velocity_limit: Vec::new(),
            dof_effort_limit: Vec::new(),
            actuators: self.actuators,
            tendons: self.tendons,
            equalities: self.equalities,
            body_equalities: self.body_equalities,
            contact_pairs: {
                let mut pairs = self.contact_pairs;
                pairs.sort_by_key(|p| p.geoms);
                pairs
            },
            geometries: self.geometries,
            collision_exclusions: self.exclusions,
            frame_exclusions: self.frame_exclusions,
            frames: self.frames,
            sensors: Vec::new(),
            visuals: Vec::new(),
            cameras: Vec::new(),
            ray_targets: Vec::new(),
            mocap: Vec::new(),
        };
        for (i, b) in self.bodies.into_iter().enumerate() {
            let inherited = if i == WORLD {
                NO_DOF
            } else {
                m.body_last_dof[b.parent]
            };
            m.joint_idx_q.push(m.nq);
            m.joint_idx_v.push(m.nv);
            let nv = b.joint.nv();
            for k in 0..nv {
                m.dof_parent
                    .push(if k == 0 { inherited } else { m.nv + k - 1 });
                m.dof_body.push(i);
                m.dof_motion.push(b.joint.motion_column(k));
                m.dof_damping.push(b.spec.damping);
                m.dof_armature.push(b.spec.armature);
                m.dof_frictionloss.push(b.spec.frictionloss);
                m.dof_urdf_friction.push(b.spec.urdf_friction);
                m.dof_stiffness.push(b.spec.stiffness);
                m.dof_springref.push(b.spec.springref);
                m.dof_velocity_limit.push(b.spec.velocity_limit);
                m.dof_effort_limit.push(b.spec.effort_limit);
            }
            m.body_last_dof
                .push(if nv > 0 { m.nv + nv - 1 } else { inherited });
            m.nq += b.joint.nq();
            m.nv += nv;
            // The world has no joint; others default to their body's name.
            m.joint_name.push(if i == WORLD {
                String::new()
            } else if b.spec.name.is_empty() {
                b.name.clone()
            } else {
                b.spec.name
            });
            m.joint_range.push(b.spec.range);
            m.body_name.push(b.name);
            m.body_parent.push(b.parent);
            m.body_inertia.push(b.inertia);
            m.joint_type.push(b.joint);
            m.joint_placement.push(b.placement);
        }
        m.collision_exclusions.sort_unstable();
        m.collision_exclusions.dedup();
        m.frame_exclusions.sort_unstable();
        m.frame_exclusions.dedup();
        for a in &mut m.actuators {
            a.dof = m.joint_idx_v[a.joint];
        }
        Ok(m)
    }
}

impl Model {
    /// Adds a ground: the half-space `z ≤ height` on the world, named
    /// `ground`, for a model loaded from a file that has none (URDF robots).
    /// Refused if a geometry is already named `ground`.
    pub fn add_ground(&mut self, height: f64, material: Material) -> Result<(), ModelError> {
        if !height.is_finite() {
            return Err(ModelError::NonFinite {
                what: "ground height".into(),
            });
        }
        if self.geometries.iter().any(|g| g.name == "ground") {
            return Err(ModelError::DuplicateName {
                kind: "geometry",
                name: "ground".into(),
            });
        }
        let shape = Shape::HalfSpace { normal: Vec3::z() };
        let (collider, geom_from_collider) = make_collider("ground", &shape)?;
        let body_from_geom = SE3::from_translation(Vec3::new(0.0, 0.0, height));
        self.geometries.push(Geometry {
            name: "ground".into(),
            body: WORLD,
            body_from_geom,
            shape,
            material,
            frame: None,
            collider,
            body_from_collider: body_from_geom.mul(&geom_from_collider),
        });
        // Drawn too, where the model says what it looks like.
        if !self.visuals.is_empty() {
            self.visuals.push(super::Visual {
                body: WORLD,
                body_from_geom,
                shape: Shape::HalfSpace { normal: Vec3::z() },
                rgba: super::Visual::GROUND_RGBA,
                mesh: None,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instances_of_one_hull_share_one_collider() {
        let mut b = ModelBuilder::new("hulls");
        let body = b
            .add_body(
                "b",
                WORLD,
                JointType::Free,
                SE3::identity(),
                Inertia::new(1.0, Vec3::zeros(), Mat3::identity()),
            )
            .unwrap();
        let cube: Vec<Vec3> = (0..8)
            .map(|i| Vec3::new((i & 1) as f64, ((i >> 1) & 1) as f64, ((i >> 2) & 1) as f64))
            .collect();
        let mirrored: Vec<Vec3> = cube.iter().map(|p| Vec3::new(p.x, -p.y, p.z)).collect();
        for (name, points) in [("a", &cube), ("b", &cube), ("c", &mirrored)] {
            b.add_geometry(
                name,
                body,
                SE3::identity(),
                Shape::ConvexMesh {
                    points: points.clone(),
                },
                Material::default(),
            )
            .unwrap();
        }
        let m = b.build().unwrap();
        let arc = |g: usize| &m.geometries[g].collider.0;
        assert!(
            std::sync::Arc::ptr_eq(arc(0), arc(1)),
            "same vertices: one hull"
        );
        assert!(
            !std::sync::Arc::ptr_eq(arc(0), arc(2)),
            "mirrored: another hull"
        );
    }
}
