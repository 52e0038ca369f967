//! The closest points of a pair with a smooth surface (an ellipsoid),
//! polished after parry's GJK, which on two curved surfaces stops within
//! micrometres and milliradians of them.
//!
//! The signed distance of two convex shapes is the maximum over unit
//! directions `u` (from `a` to `b`) of `φ(u) = u·(s_b(−u) − s_a(u))`, with
//! `s` their support points; at the maximum `w = s_b(−u) − s_a(u)` is along
//! `u` (apart: `w = φ u`; overlapping, `φ < 0`, the depth's direction). From
//! GJK's direction, Newton's method on the two tangential components of `w`
//! (the Jacobian by forward differences of the support maps) converges in a
//! few steps wherever both support maps are smooth near the answer. Where
//! one is not (a cylinder's side, a box's edge: the support jumps), the
//! polish does not converge and GJK's answer stands.
//!
//! Why an accepted polish is never worse than GJK: `φ(u)`, evaluated with
//! the true support points, is at most the signed distance for every `u`,
//! and a polish is kept only where `φ` is at least `φ(u₀)` (GJK's own
//! estimate) and `w` is along `u` (the witness points face each other
//! across `φ`), so its distance lies between GJK's and the exact one and
//! its points are closest points.

use crate::math::{SE3, Vec3};
use parry3d_f64::math::Vector as PVec;
use parry3d_f64::shape::SupportMap;

/// One side of a pair: its support map and world pose.
pub(super) struct Side<'a> {
    pub shape: &'a dyn SupportMap,
    pub pose: &'a SE3,
}

impl Side<'_> {
    /// The world support point towards world direction `u`.
    fn support(&self, u: &Vec3) -> Vec3 {
        let d = self.pose.rotation.transpose() * u;
        let s = self.shape.local_support_point(PVec::new(d.x, d.y, d.z));
        self.pose.act_point(&Vec3::new(s.x, s.y, s.z))
    }
}

/// The polished closest points: the unit direction `u` from `a` to `b`,
/// the signed distance `φ` and the witness points on `a` and `b`.
pub(super) struct Closest {
    pub u: Vec3,
    pub distance: f64,
    pub on_a: Vec3,
    pub on_b: Vec3,
}

/// Newton's method from `u0` (GJK's direction, unit); `None` where it does
/// not converge to a maximum of `φ` within a few degrees of `u0`.
pub(super) fn polish(a: &Side, b: &Side, u0: Vec3) -> Option<Closest> {
    let eval = |u: &Vec3| {
        let (pa, pb) = (a.support(u), b.support(&-u));
        (pa, pb, pb - pa)
    };
    let (pa0, pb0, w0) = eval(&u0);
    let scale = 1.0 + (pa0 - a.pose.translation).norm() + (pb0 - b.pose.translation).norm();
    let phi0 = w0.dot(&u0);
    let mut u = u0;
    let h = 1e-7;
    for _ in 0..12 {
        let (t1, t2) = tangents(&u);
        let residual = |v: &Vec3| {
            let (_, _, w) = eval(v);
            let g = w - v * w.dot(v);
            [g.dot(&t1), g.dot(&t2)]
        };
        let f = residual(&u);
        if f[0].hypot(f[1]) < 1e-13 * scale {
            let (pa, pb, w) = eval(&u);
            let distance = w.dot(&u);
            let turned = u.dot(&u0) < (3f64.to_radians()).cos();
            return (!turned && distance >= phi0 - 1e-12 * scale).then_some(Closest {
                u,
                distance,
                on_a: pa,
                on_b: pb,
            });
        }
        let f1 = residual(&(u + t1 * h).normalize());
        let f2 = residual(&(u + t2 * h).normalize());
        let j = [
            [(f1[0] - f[0]) / h, (f2[0] - f[0]) / h],
            [(f1[1] - f[1]) / h, (f2[1] - f[1]) / h],
        ];
        let det = j[0][0] * j[1][1] - j[0][1] * j[1][0];
        if !(det.abs() > 1e-300) {
            return None;
        }
        let da = -(j[1][1] * f[0] - j[0][1] * f[1]) / det;
        let db = -(-j[1][0] * f[0] + j[0][0] * f[1]) / det;
        if !(da.hypot(db) < 0.1) {
            return None;
        }
        u = (u + t1 * da + t2 * db).normalize();
    }
    None
}

/// Two unit vectors completing `u` to an orthonormal basis.
fn tangents(u: &Vec3) -> (Vec3, Vec3) {
    let other = if u.x.abs() < 0.6 {
        Vec3::x()
    } else {
        Vec3::y()
    };
    let t1 = u.cross(&other).normalize();
    (t1, u.cross(&t1))
}
