//! Spatial tendons (MuJoCo's `<spatial>`): a path's length and Jacobian
//! ([`spatial_length`]), and its wrapping around `<geom>`s ([`wrap`]): where
//! the shortest path between two points outside a sphere or an infinite
//! cylinder touches it.
//!
//! Both reduce to a circle in a plane: for a sphere, the great circle in
//! the plane of its centre and the two points; for a cylinder, its cross
//! section, the path then climbing the axis as a helix (the geodesic of
//! the unrolled surface), its height shared out in proportion to each
//! piece's planar length. In the plane, the path from `d₀` leaves along
//! the tangent from `d₀` to the circle, follows the arc, and reaches `d₁`
//! along the tangent from `d₁`:
//!
//! - tangent points from `d` (`|d| > r`): `t = (r²/|d|²) d ± (r √(|d|² − r²)/|d|²) d⊥`;
//! - without a side point, the path wraps only where the straight segment
//!   would cross the circle, the shorter chord's way round;
//! - a side point (MuJoCo's `sidesite`, outside) makes the path go round
//!   the centre as the polyline through it does ([`around_circle`]),
//!   which may wrap a path whose segment misses the circle;
//! - a way whose two tangent pieces cross is refused;
//! - a side point inside the circle asks instead for a path that touches
//!   the circle from within where the segment misses it ([`touch_inside`]).
//!
//! These are MuJoCo 4.0.0's choices (`mju_wrap`; the side point's rule as
//! MuJoCo Warp 4.0.0 writes it down), so that the same file gives the same
//! lengths (tests/mjcf_mujoco.rs). The tangent points are each obstacle's
//! points of the shortest path, so moving them along the surface changes the length only
//! to second order, and the length's Jacobian is that of the straight
//! pieces with the tangent points fixed on the obstacle's body
//! ([`spatial_length`]).

use super::{Data, point_velocity_column};
use crate::math::{SE3, Vec3};
use crate::model::{Model, NO_DOF, Wrap};
use nalgebra::Vector2;

type Vec2 = Vector2<f64>;

/// Below this, lengths and determinants count as zero (MuJoCo's `mjMINVAL`).
const TINY: f64 = 1e-15;

/// Where a path between two points goes around an obstacle: the two
/// points it touches first and last (world frame; equal where it touches
/// at one point), and the length of the path on the surface between them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Wrapped {
    pub touch: [Vec3; 2],
    pub arc: f64,
}

/// The path from `x0` to `x1` (world points) around a sphere or a
/// cylinder (axis `z` of `world_from_geom`) of `radius`, with the side
/// point `side` (world) if any; `None`: the straight segment (no wrap:
/// it misses the obstacle, a point is inside it, or the points coincide).
pub fn wrap(
    x0: &Vec3,
    x1: &Vec3,
    world_from_geom: &SE3,
    radius: f64,
    cylinder: bool,
    side: Option<&Vec3>,
) -> Option<Wrapped> {
    let local = |x: &Vec3| world_from_geom.rotation.transpose() * (x - world_from_geom.translation);
    let (p0, p1) = (local(x0), local(x1));
    if p0.norm() < TINY || p1.norm() < TINY {
        return None;
    }
    // The plane's axes (in the geom frame).
    let (e0, e1) = if cylinder {
        (Vec3::x(), Vec3::y())
    } else {
        let e0 = p0.normalize();
        let mut normal = p0.cross(&p1);
        if normal.norm() < TINY {
            // The points and the centre on a line: any plane through it.
            let k = e0.iamax();
            let mut other = Vec3::repeat(1.0);
            other[k] = 0.0;
            normal = e0.cross(&other);
        }
        let normal = normal.normalize();
        (e0, normal.cross(&e0).normalize())
    };
    let plane = |p: &Vec3| Vec2::new(p.dot(&e0), p.dot(&e1));
    let (d0, d1) = (plane(&p0), plane(&p1));
    // The side point: within the obstacle (its distance from the centre
    // in the geom frame, its axial offset included on a cylinder), or its
    // direction in the plane, on the circle.
    let side = side.map(|s| {
        let s = local(s);
        let planar = plane(&s);
        let direction = if planar.norm() < TINY {
            Vec2::x()
        } else {
            planar.normalize()
        };
        (s.norm() < radius, direction * radius)
    });
    let (t0, t1, mut arc) = match side {
        Some((true, _)) => {
            let t = touch_inside(&d0, &d1, radius)?;
            (t, t, 0.0)
        }
        _ => around_circle(&d0, &d1, side.map(|s| s.1).as_ref(), radius)?,
    };
    let lift = |t: &Vec2| e0 * t.x + e1 * t.y;
    let (mut w0, mut w1) = (lift(&t0), lift(&t1));
    if cylinder {
        // The helix: heights in proportion to the planar lengths.
        let l0 = (p0.xy() - t0).norm();
        let l1 = (p1.xy() - t1).norm();
        let total = l0 + arc + l1;
        w0.z = p0.z + (p1.z - p0.z) * l0 / total;
        w1.z = p0.z + (p1.z - p0.z) * (l0 + arc) / total;
        arc = arc.hypot(w1.z - w0.z);
    }
    Some(Wrapped {
        touch: [
            world_from_geom.act_point(&w0),
            world_from_geom.act_point(&w1),
        ],
        arc,
    })
}

/// A spatial tendon's length, as MuJoCo's `mj_tendon` walks its path:
/// the straight segments between consecutive sites, or, where a geom lies
/// between two sites, the two straight pieces to the points where the
/// path touches it and the arc between those ([`wrap`];
/// straight where the path misses it); each branch after a pulley
/// divided by the pulley's divisor. Its Jacobian, pushed onto `jac` scaled
/// by `scale`, is `Σ uᵢᵀ (J_{bᵢ} − J_{aᵢ})/divisor` over the straight
/// pieces `aᵢ → bᵢ` between points on different bodies (unit directions
/// `uᵢ`), with the touching points fixed on the obstacle's body: they are
/// the shortest path's, so their sliding changes the length only to
/// second order.
pub fn spatial_length(
    model: &Model,
    path: &[Wrap],
    data: &Data,
    scale: f64,
    jac: &mut Vec<(usize, f64)>,
) -> f64 {
    let world = |b: usize, p: &Vec3| data.world_from_body[b].act_point(p);
    // A straight piece from `a` on body `ba` to `b` on body `bb`.
    let mut piece = |(ba, a): (usize, Vec3), (bb, b): (usize, Vec3), weight: f64| -> f64 {
        let d = b - a;
        let l = d.norm();
        if ba == bb || l < 1e-12 {
            return l; // (no rate: one body, or no direction)
        }
        let u = d / l;
        for (body, p, sign) in [(bb, b, weight), (ba, a, -weight)] {
            let mut k = model.body_last_dof[body];
            while k != NO_DOF {
                let pv = point_velocity_column(&data.dof_jacobian[k], &p);
                jac.push((k, sign * u.dot(&pv)));
                k = model.dof_parent[k];
            }
        }
        l
    };
    let (mut divisor, mut length, mut k) = (1.0, 0.0, 0);
    while k + 1 < path.len() {
        let weight = scale / divisor;
        match (&path[k], &path[k + 1], path.get(k + 2)) {
            (Wrap::Pulley(d), _, _) => {
                divisor = *d;
                k += 1;
            }
            (Wrap::Site(b0, p0), Wrap::Site(b1, p1), _) => {
                length += piece((*b0, world(*b0, p0)), (*b1, world(*b1, p1)), weight) / divisor;
                k += 1;
            }
            (Wrap::Site(b0, p0), Wrap::Geom(g), Some(Wrap::Site(b1, p1))) => {
                let (x0, x1) = (world(*b0, p0), world(*b1, p1));
                let side = g.side.map(|(b, p)| world(b, &p));
                let at = data.world_from_body[g.body].mul(&g.body_from_geom);
                length += match wrap(&x0, &x1, &at, g.radius, g.cylinder, side.as_ref()) {
                    None => piece((*b0, x0), (*b1, x1), weight),
                    Some(w) => {
                        piece((*b0, x0), (g.body, w.touch[0]), weight)
                            + w.arc
                            + piece((g.body, w.touch[1]), (*b1, x1), weight)
                    }
                } / divisor;
                k += 2;
            }
            // A site before a pulley (its branch ends), or a path the
            // builder refuses.
            _ => k += 1,
        }
    }
    length
}

/// Whether the segments `a0 a1` and `b0 b1` cross (end points included).
fn segments_cross(a0: &Vec2, a1: &Vec2, b0: &Vec2, b1: &Vec2) -> bool {
    let (da, db) = (a1 - a0, b1 - b0);
    let det = db.y * da.x - db.x * da.y;
    if det.abs() < TINY {
        return false;
    }
    let r = a0 - b0;
    let s = (db.x * r.y - db.y * r.x) / det;
    let u = (da.x * r.y - da.y * r.x) / det;
    (0.0..=1.0).contains(&s) && (0.0..=1.0).contains(&u)
}

/// The signed angle swept from `p` to `q` about the origin, in (−π, π].
fn swept(p: &Vec2, q: &Vec2) -> f64 {
    (p.x * q.y - p.y * q.x).atan2(p.dot(q))
}

/// The planar wrap of `d0 → d1` around the circle of `radius` about the
/// origin: the tangent points and the arc's length between them. With a
/// side point (on the circle), the path is the shortest one that goes
/// round the centre as the polyline `d0 → side → d1` does: the same
/// winding angle `w` about the centre. It is the segment itself where
/// the segment misses the circle and winds within π of `w` (the same
/// class: windings of paths between two points differ by whole turns);
/// else it leaves `d0` along the tangent that turns its way
/// (counter-clockwise where `w > 0`), and its arc is `w` less the
/// tangent pieces' own windings. Without one, it wraps where the segment
/// crosses the circle, the shorter chord's way.
fn around_circle(
    d0: &Vec2,
    d1: &Vec2,
    side: Option<&Vec2>,
    radius: f64,
) -> Option<(Vec2, Vec2, f64)> {
    let r2 = radius * radius;
    let (n0, n1) = (d0.norm_squared(), d1.norm_squared());
    if n0 < r2 || n1 < r2 || radius < TINY {
        return None;
    }
    let chord = d1 - d0;
    let cc = chord.norm_squared();
    if cc < TINY {
        return None;
    }
    // The segment's point nearest the centre.
    let nearest = d0 + chord * (-chord.dot(d0) / cc).clamp(0.0, 1.0);
    let misses = nearest.norm_squared() > r2;
    let winding = side.map(|s| swept(d0, s) + swept(s, d1));
    match winding {
        Some(w) if misses && (w - swept(d0, d1)).abs() < std::f64::consts::PI => return None,
        None if misses => return None,
        _ => {}
    }
    let perp = |d: &Vec2| Vec2::new(d.y, -d.x);
    let (h0, h1) = ((n0 - r2).sqrt(), (n1 - r2).sqrt());
    // The two ways around: clockwise (`sign` 1) and counter-clockwise (−1).
    let way = |sign: f64| {
        let t0 = (d0 * r2 + perp(d0) * (sign * radius * h0)) / n0;
        let t1 = (d1 * r2 - perp(d1) * (sign * radius * h1)) / n1;
        (t0, t1, segments_cross(d0, &t0, d1, &t1))
    };
    let (cw, ccw) = (way(1.0), way(-1.0));
    let clockwise = match winding {
        Some(w) => w <= 0.0,
        None => {
            // The shorter chord, a way whose pieces cross ranking last;
            // ties go counter-clockwise.
            let score = |(t0, t1, crossed): &(Vec2, Vec2, bool)| {
                if *crossed {
                    -10000.0
                } else {
                    -(t0 - t1).norm_squared()
                }
            };
            score(&cw) > score(&ccw)
        }
    };
    let (t0, t1, crossed) = if clockwise { cw } else { ccw };
    if crossed {
        return None;
    }
    let angle = match winding {
        Some(w) => (w - swept(d0, &t0) - swept(&t1, d1)).abs(),
        None => {
            // The arc from t0 to t1 in the way's direction of travel (a
            // tiny angle is the wrap's onset, not a whole turn).
            let angle = t0.normalize().dot(&t1.normalize()).clamp(-1.0, 1.0).acos();
            let turn = t0.y * t1.x - t0.x * t1.y;
            if angle > 1e-9 && ((turn > 0.0 && !clockwise) || (turn < 0.0 && clockwise)) {
                2.0 * std::f64::consts::PI - angle
            } else {
                angle
            }
        }
    };
    Some((t0, t1, radius * angle))
}

/// The point of the circle of `radius` about the origin where a path from
/// `d0` to `d1` (both outside) touching it from within is shortest: the
/// path reflects there, its two pieces making equal angles with the
/// radius. `None` where the segment already crosses the circle (no
/// wrap). With `z` the sine of the angle at the touching point between
/// the radius and a piece, the pieces' angles at the centre are
/// `asin z − asin(r z/|dᵢ|)`, which must add up to the angle `G` between
/// `d0` and `d1`: `asin(A z) + asin(B z) − 2 asin z + G = 0` (`A = r/|d0|`,
/// `B = r/|d1|`), solved by Newton's method from `z` just below 1 (its
/// left side falls with `z` there), to rounding. Where that has no
/// solution, or the points are on one ray, the path touches at the
/// normalized mean of the two (as MuJoCo does).
fn touch_inside(d0: &Vec2, d1: &Vec2, radius: f64) -> Option<Vec2> {
    let (l0, l1) = (d0.norm(), d1.norm());
    if l0 <= radius || l1 <= radius || radius < TINY || l0 < TINY || l1 < TINY {
        return None;
    }
    let chord = d1 - d0;
    let cc = chord.norm_squared();
    if cc > TINY {
        let a = -chord.dot(d0) / cc;
        if a > 0.0 && a < 1.0 && (d0 + chord * a).norm() <= radius {
            return None;
        }
    }
    let mean = (d0 + d1).normalize() * radius;
    let (a, b) = (radius / l0, radius / l1);
    let cos_g = (l0 * l0 + l1 * l1 - cc) / (2.0 * l0 * l1);
    if cos_g < -1.0 + TINY {
        return None;
    }
    if cos_g > 1.0 - TINY {
        return Some(mean);
    }
    let g = cos_g.acos();
    let f = |z: f64| (a * z).asin() + (b * z).asin() - 2.0 * z.asin() + g;
    let df = |z: f64| {
        a / (1.0 - a * a * z * z).sqrt().max(TINY) + b / (1.0 - b * b * z * z).sqrt().max(TINY)
            - 2.0 / (1.0 - z * z).sqrt().max(TINY)
    };
    let mut z = 1.0 - 1e-7;
    let mut fz = f(z);
    if fz > 0.0 {
        return Some(mean);
    }
    // f is concave and falling on the way from z₀ to the root, so Newton's
    // steps move left and stay right of the root.
    let mut converged = false;
    for _ in 0..50 {
        let slope = df(z);
        if slope > -TINY {
            break;
        }
        let next = z - fz / slope;
        if next > z || next.is_nan() {
            break;
        }
        let done = z - next <= 1e-15 * z.abs().max(1.0);
        z = next;
        fz = f(z);
        if fz > 1e-12 {
            break;
        }
        if done || fz.abs() < 1e-15 {
            converged = true;
            break;
        }
    }
    if !converged {
        return Some(mean);
    }
    // Turn from the point whose angle to the other is counter-clockwise.
    let (from, angle) = if d0.x * d1.y - d0.y * d1.x > 0.0 {
        (d0 / l0, z.asin() - (a * z).asin())
    } else {
        (d1 / l1, z.asin() - (b * z).asin())
    };
    let (s, c) = angle.sin_cos();
    Some(Vec2::new(c * from.x - s * from.y, s * from.x + c * from.y) * radius)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    fn sphere_at(c: Vec3) -> SE3 {
        SE3::from_translation(c)
    }

    /// Two points at distance `d` on either side of a sphere of radius `r`,
    /// in line through its centre: the path is the two tangents (each
    /// `√(d² − r²)`) and half a great circle less twice the tangent's
    /// angle `acos(r/d)`.
    #[test]
    fn a_path_through_the_centre_wraps_half_way_round() {
        let (r, d) = (0.3, 1.0);
        let c = Vec3::new(0.2, -0.1, 0.5);
        let w = wrap(
            &(c + Vec3::new(-d, 0.0, 0.0)),
            &(c + Vec3::new(d, 0.0, 0.0)),
            &sphere_at(c),
            r,
            false,
            None,
        )
        .expect("the segment crosses the sphere");
        let arc = r * (PI - 2.0 * (r / d).acos());
        assert!((w.arc - arc).abs() < 1e-14, "{} vs {arc}", w.arc);
        for (t, x) in w.touch.iter().zip([-d, d]) {
            assert!(((t - c).norm() - r).abs() < 1e-14);
            let leg = (t - (c + Vec3::new(x, 0.0, 0.0))).norm();
            assert!((leg - (d * d - r * r).sqrt()).abs() < 1e-14);
        }
    }

    #[test]
    fn a_segment_that_misses_does_not_wrap_unless_a_side_point_asks() {
        let (x0, x1) = (Vec3::new(-1.0, 0.5, 0.0), Vec3::new(1.0, 0.5, 0.0));
        let at = SE3::identity();
        assert_eq!(wrap(&x0, &x1, &at, 0.3, true, None), None);
        // A side point below the centre: the path must pass below.
        let w = wrap(&x0, &x1, &at, 0.3, true, Some(&Vec3::new(0.0, -1.0, 0.0))).unwrap();
        assert!(w.touch.iter().all(|t| t.y < 0.0), "{:?}", w.touch);
        // On the segment's side: no wrap.
        assert_eq!(
            wrap(&x0, &x1, &at, 0.3, true, Some(&Vec3::new(0.0, 1.0, 0.0))),
            None
        );
        // A point inside: no wrap.
        assert_eq!(
            wrap(&Vec3::new(0.1, 0.0, 0.0), &x1, &at, 0.3, false, None),
            None
        );
    }

    /// A cylinder's path is a helix: unrolled, the straight line from one
    /// point to the other, so its length is `√(planar² + height²)`.
    #[test]
    fn around_a_cylinder_the_path_is_a_helix() {
        let (r, d, h) = (0.25, 0.8, 0.6);
        let (x0, x1) = (Vec3::new(-d, 0.0, 0.0), Vec3::new(d, 0.0, h));
        let w = wrap(
            &x0,
            &x1,
            &SE3::identity(),
            r,
            true,
            Some(&Vec3::new(0.0, 1.0, 0.0)),
        )
        .unwrap();
        let leg = (d * d - r * r).sqrt();
        let planar_arc = r * (PI - 2.0 * (r / d).acos());
        let planar = 2.0 * leg + planar_arc;
        let total = (w.touch[0] - x0).norm() + w.arc + (x1 - w.touch[1]).norm();
        assert!(
            (total - planar.hypot(h)).abs() < 1e-13,
            "{total} vs {}",
            planar.hypot(h)
        );
        assert!(
            w.touch
                .iter()
                .all(|t| t.y > 0.0 && (t.xy().norm() - r).abs() < 1e-14)
        );
    }

    /// A side point inside: the path touches the circle from within where
    /// its two pieces make equal angles with the radius (a reflection),
    /// which is where `|x0 − t| + |t − x1|` is stationary on the circle.
    #[test]
    fn a_side_point_inside_makes_the_path_touch_from_within() {
        let r = 0.4;
        let (x0, x1) = (Vec3::new(-1.0, 0.7, 0.0), Vec3::new(0.6, 0.9, 0.0));
        let w = wrap(
            &x0,
            &x1,
            &SE3::identity(),
            r,
            true,
            Some(&Vec3::new(0.0, 0.1, 0.0)),
        )
        .unwrap();
        assert_eq!(w.touch[0], w.touch[1]);
        assert_eq!(w.arc, 0.0);
        let t = w.touch[0];
        assert!((t.norm() - r).abs() < 1e-14 && t.y > 0.0);
        let length = |angle: f64| {
            let p = Vec3::new(angle.cos(), angle.sin(), 0.0) * r;
            (x0 - p).norm() + (p - x1).norm()
        };
        let at = t.y.atan2(t.x);
        let slope = (length(at + 1e-6) - length(at - 1e-6)) / 2e-6;
        assert!(slope.abs() < 1e-8, "d length / d angle {slope}");
    }
}
