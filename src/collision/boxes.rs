//! Box–box contact manifolds: parry's separating-axis tests, then the two
//! boxes' faces most aligned with the axis clipped against each other
//! with a tolerance.
//!
//! parry's own cuboid–cuboid manifold clips the same two faces: the
//! vertices of each inside the other (by the signs of cross products) and
//! the crossings of their edges. Where two faces share an edge line, as in
//! a pyramid of equal boxes whose sides are coplanar, the corners of the
//! overlap lie on the other face's boundary: the sign tests then go either
//! way with the last bits of the poses, and the same pile at rest made 34,
//! 35, 36 or 37 contacts from one step to the next (a corner lost, or
//! found twice). Here the boundary counts as inside up to a tolerance, and
//! a point found twice (a corner that is also an edges' crossing) is kept
//! once. The device's box–box collision (`shaders/resident_collide.wgsl`)
//! makes the same points the same way in f32.

use parry3d_f64::math::{Pose, Vector as PVec};
use parry3d_f64::query::{ContactManifold, TrackedContact, sat};
use parry3d_f64::shape::Cuboid;

/// The tolerance of the inside tests and of two points being one, relative
/// to the larger box's largest half extent (1e-10 m on 10 cm boxes: far
/// above the rounding of the poses, far below anything physical).
const TOLERANCE: f64 = 1e-9;

/// The manifold `m` of the cuboids `c1` (frame 1) and `c2` (frame 2,
/// `pos12` maps it into frame 1), as parry's (its axis, faces, feature
/// ids and point order) with the tolerant clipping above; empty where the
/// boxes are farther apart than `margin`, and points farther apart than
/// it left out.
pub(super) fn cuboid_cuboid(
    pos12: &Pose,
    c1: &Cuboid,
    c2: &Cuboid,
    margin: f64,
    m: &mut ContactManifold<(), ()>,
) {
    m.points.clear();
    // The separating axis of largest separation among 1's face normals,
    // 2's, and the cross products of their edges (frame 1, from 1 to 2).
    let pos21 = pos12.inverse();
    let s1 = sat::cuboid_cuboid_find_local_separating_normal_oneway(c1, c2, pos12);
    if s1.0 > margin {
        return;
    }
    let s2 = sat::cuboid_cuboid_find_local_separating_normal_oneway(c2, c1, &pos21);
    if s2.0 > margin {
        return;
    }
    let s3 = sat::cuboid_cuboid_find_local_separating_edge_twoway(c1, c2, pos12);
    if s3.0 > margin {
        return;
    }
    let axis = if s2.0 > s1.0 && s2.0 > s3.0 {
        pos12.rotation * -s2.1
    } else if s3.0 > s1.0 {
        s3.1
    } else {
        s1.1
    };
    m.local_n1 = axis;
    m.local_n2 = pos21.rotation * -axis;
    let (f1, f2) = (c1.support_face(axis), c2.support_face(m.local_n2));
    let v1 = f1.vertices;
    let v2 = f2.vertices.map(|v| pos12.transform_point(v));
    let scale = c1
        .half_extents
        .max_element()
        .max(c2.half_extents.max_element());
    let tol = TOLERANCE * scale;
    let (e1, e2) = axis.any_orthonormal_pair();
    let q1 = v1.map(|v| [v.dot(e1), v.dot(e2)]);
    let q2 = v2.map(|v| [v.dot(e1), v.dot(e2)]);
    // Midpoints of the points kept (frame 1), to find a point again: at
    // most 4 + 4 vertices and 16 crossings.
    let mut mids = [PVec::ZERO; 24];
    let mut kept = 0;
    let mut push = |p1: PVec, p2: PVec, fid1, fid2, d: f64| {
        if d > margin {
            return;
        }
        let mid = (p1 + p2) * 0.5;
        if mids[..kept]
            .iter()
            .any(|o| (*o - mid).length_squared() <= tol * tol)
        {
            return;
        }
        mids[kept] = mid;
        kept += 1;
        m.points.push(TrackedContact::new(
            p1,
            pos21.transform_point(p2),
            fid1,
            fid2,
            d,
        ));
    };
    // Face 1's vertices inside face 2, onto face 2's plane along the axis.
    let n2 = (v2[2] - v2[1]).cross(v2[0] - v2[1]);
    let den2 = n2.dot(axis);
    if den2 != 0.0 {
        for i in 0..4 {
            if inside(&q2, q1[i], tol) {
                let d = (v2[0] - v1[i]).dot(n2) / den2;
                push(v1[i], v1[i] + axis * d, f1.vids[i], f2.fid, d);
            }
        }
    }
    // Face 2's vertices inside face 1.
    let n1 = (v1[2] - v1[1]).cross(v1[0] - v1[1]);
    let den1 = -n1.dot(axis);
    if den1 != 0.0 {
        for i in 0..4 {
            if inside(&q1, q2[i], tol) {
                let d = (v1[0] - v2[i]).dot(n1) / den1;
                push(v2[i] - axis * d, v2[i], f1.fid, f2.vids[i], d);
            }
        }
    }
    // The crossings of their edges (edge k: vertex k to k + 1), strictly
    // inside both (a crossing at an end is a vertex found above).
    for j in 0..4 {
        let j1 = (j + 1) % 4;
        for i in 0..4 {
            let i1 = (i + 1) % 4;
            if let Some((s, t)) = crossing(q1[i], q1[i1], q2[j], q2[j1])
                && s > 0.0
                && s < 1.0
                && t > 0.0
                && t < 1.0
            {
                let p1 = v1[i] + (v1[i1] - v1[i]) * s;
                let p2 = v2[j] + (v2[j1] - v2[j]) * t;
                push(p1, p2, f1.eids[i], f2.eids[j], (p2 - p1).dot(axis));
            }
        }
    }
}

fn perp_dot(a: [f64; 2], b: [f64; 2]) -> f64 {
    a[0] * b[1] - a[1] * b[0]
}

fn sub(a: [f64; 2], b: [f64; 2]) -> [f64; 2] {
    [a[0] - b[0], a[1] - b[1]]
}

/// Whether `p` is inside the convex quadrilateral `q` or outside it by at
/// most `tol`, whichever way `q` turns.
fn inside(q: &[[f64; 2]; 4], p: [f64; 2], tol: f64) -> bool {
    let area =
        perp_dot(sub(q[1], q[0]), sub(q[2], q[0])) + perp_dot(sub(q[2], q[0]), sub(q[3], q[0]));
    let orient = if area < 0.0 { -1.0 } else { 1.0 };
    (0..4).all(|j| {
        let e = sub(q[(j + 1) % 4], q[j]);
        orient * perp_dot(e, sub(p, q[j])) >= -tol * (e[0] * e[0] + e[1] * e[1]).sqrt()
    })
}

/// The parameters `(s, t)` where the lines through `[a0, a1]` and
/// `[b0, b1]` cross; `None` where they are parallel (or a segment is a
/// point).
fn crossing(a0: [f64; 2], a1: [f64; 2], b0: [f64; 2], b1: [f64; 2]) -> Option<(f64, f64)> {
    let (d1, d2, r) = (sub(a1, a0), sub(b1, b0), sub(a0, b0));
    let dot = |u: [f64; 2], v: [f64; 2]| u[0] * v[0] + u[1] * v[1];
    let (a, e, b) = (dot(d1, d1), dot(d2, d2), dot(d1, d2));
    let denom = a * e - b * b;
    if !(a > 0.0 && e > 0.0 && denom > 1e-12 * a * e) {
        return None;
    }
    let (c, f) = (dot(d1, r), dot(d2, r));
    let s = (b * f - c * e) / denom;
    Some((s, (b * s + f) / e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use parry3d_f64::math::Rotation;
    use parry3d_f64::query::{DefaultQueryDispatcher, PersistentQueryDispatcher};

    /// Two boxes of the pyramid at rest (`docs/experiments/piles/pyramid.xml`,
    /// its lower left box and the one it carries, offset along x so that
    /// their y sides are coplanar), at two states of a 20 000-step run
    /// where parry's manifold had three and two points: the overlap's four
    /// corners.
    #[test]
    fn coplanar_sides_keep_the_four_corners() {
        let cube = Cuboid::new(PVec::splat(0.1));
        let pose = |p: [f64; 3], q: [f64; 3]| {
            Pose::from_parts(
                PVec::from(p),
                Rotation::from_xyzw(q[0], q[1], q[2], 1.0).normalize(),
            )
        };
        let states = [
            (
                pose(
                    [
                        -0.21000000000000016,
                        -2.5470070233660886e-18,
                        0.10000000000311027,
                    ],
                    [
                        1.9926280677567326e-17,
                        -3.506868830279348e-17,
                        3.570243872676277e-18,
                    ],
                ),
                pose(
                    [-0.105, -1.2373887470313273e-18, 0.30000000000557936],
                    [
                        -1.2996195916313125e-17,
                        -2.982868870601038e-17,
                        7.315315345662858e-18,
                    ],
                ),
            ),
            (
                pose(
                    [
                        -0.21000000000000016,
                        -2.5928826543673352e-18,
                        0.10000000000311027,
                    ],
                    [
                        2.152412362926779e-17,
                        -3.682357116276468e-17,
                        5.23822115240944e-18,
                    ],
                ),
                pose(
                    [-0.105, -1.8870052421801307e-18, 0.30000000000557936],
                    [
                        -5.683929889256307e-18,
                        -3.4998808409441765e-17,
                        1.2381758216370008e-17,
                    ],
                ),
            ),
        ];
        for (k, (lower, upper)) in states.iter().enumerate() {
            let pos12 = lower.inverse() * *upper;
            let mut manifolds = vec![ContactManifold::<(), ()>::new()];
            let mut workspace = None;
            DefaultQueryDispatcher
                .contact_manifolds(&pos12, &cube, &cube, 5e-3, &mut manifolds, &mut workspace)
                .unwrap();
            println!(
                "state {k}: parry's manifold has {} points",
                manifolds[0].points.len()
            );
            let mut m = ContactManifold::<(), ()>::new();
            cuboid_cuboid(&pos12, &cube, &cube, 5e-3, &mut m);
            assert_eq!(m.points.len(), 4, "state {k}: {:?}", m.points);
            let mut corners: Vec<(i64, i64)> = m
                .points
                .iter()
                .map(|p| {
                    (
                        (p.local_p1.x * 1e6).round() as i64,
                        (p.local_p1.y * 1e6).round() as i64,
                    )
                })
                .collect();
            corners.sort();
            assert_eq!(
                corners,
                [
                    (5000, -100000),
                    (5000, 100000),
                    (100000, -100000),
                    (100000, 100000)
                ]
            );
            for p in &m.points {
                assert!(
                    (p.local_p1.z - 0.1).abs() < 1e-12 && p.dist.abs() < 1e-11,
                    "{p:?}"
                );
            }
        }
    }

    /// Where the faces are not degenerate the manifolds are parry's: a box
    /// turned by 30° on another (eight points: vertices inside and edges'
    /// crossings), then boxes at 200 poses drawn near contact (faces and
    /// edges against each other, apart and overlapping).
    #[test]
    fn general_poses_give_parrys_manifolds() {
        let mut poses = vec![(
            Cuboid::new(PVec::new(0.2, 0.15, 0.1)),
            Cuboid::new(PVec::splat(0.1)),
            Pose::from_parts(
                PVec::new(0.03, -0.02, 0.199),
                Rotation::from_scaled_axis(PVec::new(0.0, 0.0, std::f64::consts::FRAC_PI_6)),
            ),
        )];
        let mut seed = 12345u64;
        let mut draw = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        for _ in 0..200 {
            let h1 = PVec::new(
                0.1 + 0.05 * draw(),
                0.1 + 0.05 * draw(),
                0.1 + 0.05 * draw(),
            );
            let h2 = PVec::new(
                0.1 + 0.05 * draw(),
                0.1 + 0.05 * draw(),
                0.1 + 0.05 * draw(),
            );
            let rotation = Rotation::from_scaled_axis(PVec::new(draw(), draw(), draw()) * 2.0);
            let direction = PVec::new(draw(), draw(), draw()).normalize();
            let pos12 = Pose::from_parts(direction * (0.25 + 0.1 * draw()), rotation);
            poses.push((Cuboid::new(h1), Cuboid::new(h2), pos12));
        }
        let mut touching = 0;
        for (k, (c1, c2, pos12)) in poses.iter().enumerate() {
            let mut manifolds = vec![ContactManifold::<(), ()>::new()];
            let mut workspace = None;
            DefaultQueryDispatcher
                .contact_manifolds(pos12, c1, c2, 5e-3, &mut manifolds, &mut workspace)
                .unwrap();
            // parry leaves the points past the margin to its callers.
            let theirs = &manifolds[0];
            let near: Vec<_> = theirs.points.iter().filter(|p| p.dist <= 5e-3).collect();
            let mut ours = ContactManifold::<(), ()>::new();
            cuboid_cuboid(pos12, c1, c2, 5e-3, &mut ours);
            assert_eq!(ours.points.len(), near.len(), "pose {k}");
            if near.is_empty() {
                continue;
            }
            touching += 1;
            assert_eq!(
                (ours.local_n1, ours.local_n2),
                (theirs.local_n1, theirs.local_n2)
            );
            for (a, b) in ours.points.iter().zip(near) {
                assert!(
                    (a.local_p1 - b.local_p1).length() < 1e-14,
                    "pose {k}: {a:?} {b:?}"
                );
                assert!(
                    (a.local_p2 - b.local_p2).length() < 1e-14,
                    "pose {k}: {a:?} {b:?}"
                );
                assert_eq!((a.fid1, a.fid2), (b.fid1, b.fid2), "pose {k}");
                assert!((a.dist - b.dist).abs() < 1e-14, "pose {k}");
            }
        }
        assert!(touching > 50, "{touching} of the poses touch");
    }
}
