//! Tendons and equality constraints: scalar functions of the configuration
//! that the simulator constrains with one-dimensional rows (MuJoCo's
//! `<tendon><fixed>` and `<equality><joint>`, `<equality><tendon>`).
//!
//! A **fixed tendon** has the length `L(q) = Σ_j coef_j q_j` over 1-dof
//! joints, so its Jacobian `∂L/∂q` is the constant row of its coefficients.
//! It may carry a spring-damper (`−k (L − L_s) − d L̇` with a dead band
//! `L_s ∈ [lo, hi]`, explicit), dry friction (a box row `|λ| ≤ f·dt`), a
//! length range (unilateral rows as joint limits) and actuators.
//!
//! A **spatial tendon** is a path through sites fixed on bodies (MuJoCo's
//! `<spatial>`): straight segments between consecutive sites, or, where a
//! sphere or a cylinder lies between two sites ([`Wrap::Geom`]), the
//! shortest path around it when the straight segment would cross it (the
//! tangent lines and the geodesic arc between them, a helix on a
//! cylinder); a [`Wrap::Pulley`] starts a branch whose length counts
//! `1/divisor`. See [`crate::dynamics::spatial_length`] for the length and
//! Jacobian, [`crate::dynamics::wrap`] for the geometry.
//!
//! An **equality** ties a first coordinate `y` (a joint's position or a
//! tendon's length) to a polynomial of a second one `x`, as MuJoCo does:
//! `y − y₀ = a₀ + a₁ (x − x₀) + a₂ (x − x₀)² + a₃ (x − x₀)³ + a₄ (x − x₀)⁴`
//! with `y₀`, `x₀` their values at the reference configuration (`qpos0`);
//! without a second coordinate, `y = y₀ + a₀`. Its residual
//! `e(q) = y − y₀ − P(x − x₀)` becomes a bilateral row with Jacobian
//! `∂y/∂q − P'(x − x₀) ∂x/∂q`, stabilized as contacts are (`g += β e/dt`).
//!
//! A **body equality** ([`BodyEquality`], MuJoCo's `connect` and `weld`)
//! holds a point fixed on one body on a point fixed on another: three
//! bilateral rows `p₁(q) − p₂(q) = 0` in world axes, Jacobian the two
//! points' velocity Jacobians' difference (a ball joint closing a loop).
//! A weld also holds the bodies' relative orientation `R₁ᵀR₂ = R`: three
//! more rows `ω₁ − ω₂`, residual the rotation vector of `R₁ R R₂ᵀ`. Both
//! are stabilized as contacts are.

use crate::math::{Mat3, SE3, Vec3};

/// A scalar coordinate of the configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Coordinate {
    /// The position of a 1-dof joint (its body's index).
    Joint(usize),
    /// The length of a tendon (its index in [`crate::model::Model::tendons`]).
    Tendon(usize),
}

/// One element of a spatial tendon's path, in MuJoCo's order (its "wrap
/// objects": site, sphere or cylinder geom, pulley).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Wrap {
    /// A point fixed on a body: `(body, point in the body frame)`.
    Site(usize, Vec3),
    /// A sphere or an infinite cylinder (axis the geom frame's z) that the
    /// path between the sites before and after it goes around.
    Geom(WrapGeom),
    /// The start of a new branch: the segments after it (to the next
    /// pulley) count `1/divisor` in the length and the Jacobian.
    Pulley(f64),
}

/// A wrapping obstacle of a spatial tendon (MuJoCo's `<spatial><geom>`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WrapGeom {
    /// The geom's name (for messages).
    pub name: String,
    /// The body it is fixed on, and its frame there.
    pub body: usize,
    pub body_from_geom: SE3,
    pub radius: f64,
    /// A cylinder (about the frame's z axis); else a sphere.
    pub cylinder: bool,
    /// MuJoCo's `sidesite`: a point `(body, point in the body frame)`
    /// that picks the side the path goes around (outside the obstacle),
    /// or, inside it, makes the path touch the obstacle's surface from
    /// within where the straight segment would miss it.
    pub side: Option<(usize, Vec3)>,
}

/// A fixed tendon, `L = Σ coef_j q_j` over 1-dof joints, or a spatial
/// one, the length of its path (see the module docs), whose value and
/// Jacobian need the kinematics ([`crate::sim::rows::coordinate`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Tendon {
    pub name: String,
    /// A fixed tendon's `(joint, coef)`: the joint's body index and its
    /// coefficient (empty for a spatial tendon).
    pub joints: Vec<(usize, f64)>,
    /// A spatial tendon's path (empty for a fixed tendon): two sites or
    /// more, each geom between two sites, no pulley last or twice in a
    /// row, every site next to a site or a geom (MuJoCo's rules, checked by
    /// the builder).
    pub path: Vec<Wrap>,
    /// Length range `(lo, hi)`, enforced as unilateral rows; `None`: free.
    pub range: Option<(f64, f64)>,
    /// Spring stiffness (N/m or N·m/rad per unit length), ≥ 0.
    pub stiffness: f64,
    /// Viscous damping, ≥ 0 (explicit).
    pub damping: f64,
    /// The spring's dead band `[lo, hi]`: no force while `lo ≤ L ≤ hi`.
    pub spring_length: (f64, f64),
    /// Dry friction (force), ≥ 0: a box row `|λ| ≤ frictionloss·dt`.
    pub frictionloss: f64,
    /// The length at the reference configuration (MuJoCo's `tendon_length0`).
    pub length0: f64,
}

impl Tendon {
    /// Whether it is spatial (a path through sites).
    pub fn is_spatial(&self) -> bool {
        !self.path.is_empty()
    }

    /// The bodies its path's points are fixed on (sites, obstacles and
    /// side sites), in path order, with repetitions.
    pub fn path_bodies(&self) -> impl Iterator<Item = usize> + '_ {
        self.path
            .iter()
            .flat_map(|w| match w {
                Wrap::Site(b, _) => [Some(*b), None],
                Wrap::Geom(g) => [Some(g.body), g.side.map(|s| s.0)],
                Wrap::Pulley(_) => [None, None],
            })
            .flatten()
    }

    /// A fixed tendon's `L(q)`, given each joint's `q` index
    /// (`joint_idx_q`); 0 for a spatial tendon (see `sim::rows::coordinate`).
    pub fn length(&self, joint_idx_q: &[usize], q: &[f64]) -> f64 {
        self.joints
            .iter()
            .map(|&(j, c)| c * q[joint_idx_q[j]])
            .sum()
    }

    /// A fixed tendon's `L̇ = Σ coef_j v_j`, given each joint's `v` index
    /// (`joint_idx_v`); 0 for a spatial tendon.
    pub fn velocity(&self, joint_idx_v: &[usize], v: &[f64]) -> f64 {
        self.joints
            .iter()
            .map(|&(j, c)| c * v[joint_idx_v[j]])
            .sum()
    }
}

/// An equality constraint `y − y₀ = P(x − x₀)` (see the module docs).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Equality {
    pub name: String,
    /// `y`.
    pub first: Coordinate,
    /// `x`; `None`: `y = y₀ + a₀`.
    pub second: Option<Coordinate>,
    /// `a₀ … a₄`.
    pub polycoef: [f64; 5],
    /// `y₀`, `x₀`: the coordinates at the reference configuration.
    pub reference: [f64; 2],
}

impl Equality {
    /// `(P(u), P'(u))` at `u = x − x₀`.
    pub fn polynomial(&self, u: f64) -> (f64, f64) {
        let a = &self.polycoef;
        let p = a[0] + u * (a[1] + u * (a[2] + u * (a[3] + u * a[4])));
        let dp = a[1] + u * (2.0 * a[2] + u * (3.0 * a[3] + u * 4.0 * a[4]));
        (p, dp)
    }
}

/// MuJoCo's `connect` (a point of `body1` held on a point of `body2`: a
/// ball joint, 3 rows) and `weld` (also their relative orientation: 6
/// rows); see the module docs.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BodyEquality {
    pub name: String,
    /// Body indices (`body2` may be the world, 0).
    pub body1: usize,
    pub body2: usize,
    /// The point in `body1`'s frame and the point in `body2`'s frame that
    /// are held together.
    pub point1: Vec3,
    pub point2: Vec3,
    /// A weld: the relative orientation `R₁ᵀR₂` held (a rotation);
    /// `None`: a connect.
    pub rotation: Option<Mat3>,
    /// For each side, the mocap body it names ([`crate::model::Model::mocap`]):
    /// that side's body is then the world, its point and orientation given
    /// at the mocap's file pose and carried by each world's mocap pose.
    #[serde(default)]
    pub mocap: [Option<usize>; 2],
}

impl BodyEquality {
    /// Its number of rows: 3 (connect) or 6 (weld).
    pub fn rows(&self) -> usize {
        if self.rotation.is_some() { 6 } else { 3 }
    }
    /// MuJoCo's name of the kind.
    pub fn kind(&self) -> &'static str {
        if self.rotation.is_some() {
            "weld"
        } else {
            "connect"
        }
    }
    /// Why it cannot be part of a model of `nbodies` bodies, if it cannot.
    pub fn check(&self, nbodies: usize) -> Result<(), String> {
        if self.body1 >= nbodies || self.body2 >= nbodies {
            return Err(format!(
                "bodies {} and {} (the model has {nbodies})",
                self.body1, self.body2
            ));
        }
        if self.body1 == self.body2 && self.mocap[0] == self.mocap[1] {
            return Err("ties a body to itself".into());
        }
        for (side, (m, body)) in self.mocap.iter().zip([self.body1, self.body2]).enumerate() {
            if m.is_some() && body != crate::model::WORLD {
                return Err(format!(
                    "side {} names a mocap body but is carried by body {body}, not the world",
                    side + 1
                ));
            }
        }
        if !(self
            .point1
            .iter()
            .chain(self.point2.iter())
            .all(|x| x.is_finite()))
        {
            return Err("its points must be finite".into());
        }
        if let Some(r) = &self.rotation
            && !(r.iter().all(|x| x.is_finite())
                && (r.transpose() * r - Mat3::identity()).amax() < 1e-9
                && r.determinant() > 0.0)
        {
            return Err("its relative orientation must be a rotation matrix".into());
        }
        Ok(())
    }
}
