//! How a contact moves with its bodies: the first-order change of its
//! point, frame and signed distance when bodies `a` and `b` move by small
//! twists (the collision term of the step's derivatives, see
//! [`crate::sim::StepJacobians`]).
//!
//! Each contact records, at detection, the features that made it
//! ([`ContactGeometry`]), in the two forms whose derivatives are written:
//!
//! - **point on a face**: a point fixed on one body (a box's or a hull's
//!   vertex, a capsule's segment end, a sphere's centre), rounded by a
//!   radius, against a face rigid with the other body (a half-space, a box's
//!   or a hull's face). The normal turns with the face's body;
//! - **point to point**: two points, one fixed on each body (two spheres'
//!   centres, a sphere's centre and a box's vertex): the normal is the unit
//!   vector between them.
//!
//! With `s = +1` where the point is `a`'s (the normal points from `b` to
//! `a`), `−1` where it is `b`'s, the contact point midway between the
//! surfaces is `p = x − s n (r + φ/2)` (point on a face), or
//! `p = (x_a + x_b)/2 + n (r_b − r_a)/2` (point to point), and in both the
//! distance changes by the normal relative velocity at `p`:
//! `δφ = nᵀ(δ_a(p) − δ_b(p))` (the witness points differ from `p` along
//! `n`, which a rotation moves orthogonally to `n`). The frame is
//! [`crate::math::frame_from_normal`] of the normal, differentiated through
//! it. Other features (edge against edge, a cylinder's rim, capsule against
//! capsule) are [`ContactGeometry::Unknown`]: their derivatives are not
//! written, and a step with such a contact is not differentiated with
//! respect to `q`.

use super::Contact;
use crate::math::{Mat3, Vec3, Vec6, ang, frame_from_normal_variation, lin};

/// The features a contact was made of, in world coordinates at detection
/// (see the module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum ContactGeometry {
    /// A point `core` fixed on body `a` (`on_a`) or `b`, whose surface is
    /// `radius` away from it along the normal, against a face rigid with
    /// the other body.
    PointFace { on_a: bool, core: Vec3, radius: f64 },
    /// Two points fixed on `a` and `b`, their surfaces `radius_a` and
    /// `radius_b` away along the normal `(core_a − core_b)/‖·‖`.
    PointPoint {
        core_a: Vec3,
        core_b: Vec3,
        radius_a: f64,
        radius_b: f64,
    },
    /// Features whose derivatives are not written.
    #[default]
    Unknown,
}

/// First-order changes of a contact's point, frame (`world_from_contact`)
/// and signed distance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactVariation {
    pub point: Vec3,
    pub frame: Mat3,
    pub distance: f64,
}

/// Velocity of the body point at `p` under the twist `xi` (world frame, at
/// the world origin).
#[inline]
fn at(xi: &Vec6, p: &Vec3) -> Vec3 {
    lin(xi) + ang(xi).cross(p)
}

impl Contact {
    /// The change of the contact's point, frame and distance when body `a`
    /// moves by the twist `xi_a` and body `b` by `xi_b` (world frame, at
    /// the world origin; zero for the world), to first order; `None` for
    /// [`ContactGeometry::Unknown`].
    pub fn variation(&self, xi_a: &Vec6, xi_b: &Vec6) -> Option<ContactVariation> {
        let n = self.normal();
        let phi = self.distance;
        let dphi = n.dot(&(at(xi_a, &self.point) - at(xi_b, &self.point)));
        let (dn, dp) = match self.geometry {
            ContactGeometry::PointFace { on_a, core, radius } => {
                let (s, xi_point, xi_face) = if on_a {
                    (1.0, xi_a, xi_b)
                } else {
                    (-1.0, xi_b, xi_a)
                };
                let dn = ang(xi_face).cross(&n);
                let dp =
                    at(xi_point, &core) - dn * (s * (radius + 0.5 * phi)) - n * (0.5 * s * dphi);
                (dn, dp)
            }
            ContactGeometry::PointPoint {
                core_a,
                core_b,
                radius_a,
                radius_b,
            } => {
                let d = (core_a - core_b).norm();
                let rel = at(xi_a, &core_a) - at(xi_b, &core_b);
                let dn = (rel - n * n.dot(&rel)) / d;
                let dp = (at(xi_a, &core_a) + at(xi_b, &core_b)) * 0.5
                    + dn * (0.5 * (radius_b - radius_a));
                (dn, dp)
            }
            ContactGeometry::Unknown => return None,
        };
        Some(ContactVariation {
            point: dp,
            frame: frame_from_normal_variation(&n, &dn),
            distance: dphi,
        })
    }
}
