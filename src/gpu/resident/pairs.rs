//! What the device collides: one [`PairKind`] per pair of shapes it has a
//! narrow phase for, and the table that says, for each, what it is called
//! in the kernel (`PAIR_*`, generated from here), which shapes make it, how
//! many contacts and warm-start slots it takes, and which of the kernel's
//! `HAS_*` switches compiles its code. `shaders/resident_collide.wgsl`'s
//! `collide` dispatches on the kind; `tests/wgsl.rs` checks that every
//! kind is dispatched there by name and that no kind's number appears.

use crate::gpu::contract::WgslConst;
use crate::gpu::contract::offsets;
use crate::model::Shape;
use bytemuck::{Pod, Zeroable};

/// The most contacts the device keeps of one box–box manifold: the
/// corners of two quadrilaterals' overlap (a step that finds more, in
/// degenerate f32 cases, drops them and counts them).
pub const BOX_BOX_CONTACTS: usize = 8;

crate::wgsl_struct! {
    /// A pair's words (`pair_u32`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
    pub struct PairWords as "PairWords" {
        /// The bodies of `a` and `b`.
        pub body_a: u32 => "PU_BODY_A",
        /// Its [`PairKind`].
        pub kind: u32 => "PU_KIND",
        /// Its first warm-start slot.
        pub slot: u32 => "PU_SLOT",
        pub body_b: u32 => "PU_BODY_B",
        /// Where `a`'s convex hull starts in `pair_f32`, after the pair
        /// records (0: not a hull).
        pub hull: u32 => "PU_HULL",
    }
}

crate::wgsl_struct! {
    /// One geometry of a pair: its collider's pose in its body's frame and
    /// its shape.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
    pub struct PairGeometry as "PairGeometry" {
        /// Rotation (column-major) and translation.
        pub rotation: [f32; 9] => "PG_ROTATION",
        pub translation: [f32; 3] => "PG_TRANSLATION",
        /// A ball's or capsule's radius (0 for a box).
        pub radius: f32 => "PG_RADIUS",
        /// A box's half extents, an ellipsoid's radii, a capsule's `(0, 0,
        /// half_length)`, a cylinder's `(radius, half_length, 0)`.
        pub half: [f32; 3] => "PG_HALF",
    }
}

crate::wgsl_struct! {
    /// A pair's floats (`pair_f32`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
    pub struct PairFloats as "PairFloats" {
        pub a: PairGeometry => "PF_A",
        /// A half-space `b`'s world normal and offset.
        pub normal: [f32; 3] => "PF_NORMAL",
        pub offset: f32 => "PF_OFFSET",
        /// The pair's combined friction and restitution.
        pub friction: f32 => "PF_FRICTION",
        pub restitution: f32 => "PF_RESTITUTION",
        pub pad: [f32; 2] => "PF_PAD",
        pub b: PairGeometry => "PF_B",
    }
}

/// A kind of collidable pair on the device (its number is the pair
/// record's word `PU_KIND` and the kernel's `PAIR_*` constant).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PairKind {
    /// A ball against a half-space fixed on the world: its lowest point.
    BallPlane = 1,
    /// A capsule against a half-space: its segment's ends within the margin.
    CapsulePlane = 2,
    /// A box against a half-space: its support feature's vertices.
    BoxPlane = 3,
    /// Two balls or capsules (their cores are segments, a ball's of length
    /// 0): one contact at the closest points of the cores (parry's
    /// ball-ball, convex-ball and capsule-capsule manifolds).
    RoundRound = 4,
    /// A box and a ball (either order): one contact at the point of the box
    /// closest to the ball's centre (parry's convex-ball manifold).
    BoxBall = 5,
    /// Two boxes: the separating axis among both boxes' face normals and
    /// their edges' cross products, then each box's face most aligned with
    /// it clipped against the other's, at most [`BOX_BOX_CONTACTS`] points.
    BoxBox = 6,
    /// A cylinder against a half-space: the vertices of parry's polygonal
    /// approximation toward it (a segment of its side, or a square
    /// inscribed in a cap) within the margin.
    CylinderPlane = 7,
    /// A convex hull (a mesh) against a half-space: the vertices of its
    /// face most aligned with the half-space's inner normal (parry's
    /// `ConvexPolyhedron::local_support_feature`: the first four).
    HullPlane = 8,
    /// An ellipsoid against a half-space: its one support point toward it
    /// (the host's half-space path on `model::ellipsoid`).
    EllipsoidPlane = 9,
}

/// The kernel's switches that compile a group of kinds' code (a model
/// without such pairs gets `false`: the code folds away, and lavapipe
/// compiles its kernel faster).
pub const GATES: [&str; 4] = ["HAS_MOVING", "HAS_BOX_BOX", "HAS_CYLINDERS", "HAS_HULLS"];

impl PairKind {
    /// Every kind, in the order of their numbers (1, 2, …).
    pub const ALL: [PairKind; 9] = [
        PairKind::BallPlane,
        PairKind::CapsulePlane,
        PairKind::BoxPlane,
        PairKind::RoundRound,
        PairKind::BoxBall,
        PairKind::BoxBox,
        PairKind::CylinderPlane,
        PairKind::HullPlane,
        PairKind::EllipsoidPlane,
    ];

    /// Its name in the kernel.
    pub fn wgsl_name(self) -> &'static str {
        match self {
            PairKind::BallPlane => "PAIR_BALL_PLANE",
            PairKind::CapsulePlane => "PAIR_CAPSULE_PLANE",
            PairKind::BoxPlane => "PAIR_BOX_PLANE",
            PairKind::RoundRound => "PAIR_ROUND_ROUND",
            PairKind::BoxBall => "PAIR_BOX_BALL",
            PairKind::BoxBox => "PAIR_BOX_BOX",
            PairKind::CylinderPlane => "PAIR_CYLINDER_PLANE",
            PairKind::HullPlane => "PAIR_HULL_PLANE",
            PairKind::EllipsoidPlane => "PAIR_ELLIPSOID_PLANE",
        }
    }

    /// The kind of pair `(a, b)` (in the host's order: `b` on the world
    /// where one is), if the device collides it.
    pub fn of(a: &Shape, b: &Shape, b_on_world: bool) -> Option<PairKind> {
        use Shape::*;
        let round = |s: &Shape| matches!(s, Ball { .. } | Capsule { .. });
        match (a, b) {
            (Ball { .. }, HalfSpace { .. }) if b_on_world => Some(PairKind::BallPlane),
            (Capsule { .. }, HalfSpace { .. }) if b_on_world => Some(PairKind::CapsulePlane),
            (Cuboid { .. }, HalfSpace { .. }) if b_on_world => Some(PairKind::BoxPlane),
            (Cylinder { .. }, HalfSpace { .. }) if b_on_world => Some(PairKind::CylinderPlane),
            (ConvexMesh { .. }, HalfSpace { .. }) if b_on_world => Some(PairKind::HullPlane),
            (Ellipsoid { .. }, HalfSpace { .. }) if b_on_world => Some(PairKind::EllipsoidPlane),
            (x, y) if round(x) && round(y) => Some(PairKind::RoundRound),
            (Cuboid { .. }, Ball { .. }) | (Ball { .. }, Cuboid { .. }) => Some(PairKind::BoxBall),
            (Cuboid { .. }, Cuboid { .. }) => Some(PairKind::BoxBox),
            _ => None,
        }
    }

    /// The most contacts one pair of this kind makes in a step.
    pub fn max_contacts(self) -> usize {
        match self {
            PairKind::CapsulePlane => 2,
            PairKind::BoxPlane | PairKind::CylinderPlane | PairKind::HullPlane => 4,
            PairKind::BoxBox => BOX_BOX_CONTACTS,
            PairKind::BallPlane
            | PairKind::RoundRound
            | PairKind::BoxBall
            | PairKind::EllipsoidPlane => 1,
        }
    }

    /// Warm-start slots of one pair: one per vertex it can touch with (a
    /// hull's `hull_vertices`), or for two boxes one per contact (found
    /// again by its features).
    pub fn slots(self, hull_vertices: usize) -> usize {
        match self {
            PairKind::CapsulePlane => 2,
            // A cylinder: its caps' four vertices each.
            PairKind::BoxPlane | PairKind::CylinderPlane => 8,
            PairKind::HullPlane => hull_vertices,
            PairKind::BoxBox => BOX_BOX_CONTACTS,
            PairKind::BallPlane
            | PairKind::RoundRound
            | PairKind::BoxBall
            | PairKind::EllipsoidPlane => 1,
        }
    }

    /// Whether both shapes may move (else `b` is a half-space on the world).
    pub fn moving(self) -> bool {
        matches!(
            self,
            PairKind::RoundRound | PairKind::BoxBall | PairKind::BoxBox
        )
    }

    /// The switch of [`GATES`] that compiles this kind's code, if any.
    pub fn gate(self) -> Option<&'static str> {
        match self {
            PairKind::RoundRound | PairKind::BoxBall => Some(GATES[0]),
            PairKind::BoxBox => Some(GATES[1]),
            PairKind::CylinderPlane => Some(GATES[2]),
            PairKind::HullPlane => Some(GATES[3]),
            PairKind::BallPlane | PairKind::CapsulePlane | PairKind::BoxPlane => None,
            PairKind::EllipsoidPlane => None,
        }
    }
}

/// The kinds' constants (`PAIR_*`), as the kernel compares a pair's kind,
/// and the pair records' offsets.
pub fn constants() -> Vec<WgslConst> {
    let mut c: Vec<WgslConst> = PairKind::ALL
        .iter()
        .map(|&k| WgslConst::u32(k.wgsl_name(), k as u32))
        .collect();
    c.extend(offsets::<PairWords>());
    c.extend(offsets::<PairGeometry>());
    c.extend(offsets::<PairFloats>());
    c
}

/// Each record's fields and size, for the tests' tiling check.
pub fn records() -> Vec<(&'static str, Vec<crate::gpu::contract::RecordField>, usize)> {
    use crate::gpu::contract::record_of;
    vec![
        record_of::<PairWords>(),
        record_of::<PairGeometry>(),
        record_of::<PairFloats>(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kinds_are_numbered_in_order_and_named_once() {
        for (i, k) in PairKind::ALL.iter().enumerate() {
            assert_eq!(*k as u32, i as u32 + 1, "{k:?}");
        }
        let mut names: Vec<&str> = PairKind::ALL.iter().map(|k| k.wgsl_name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), PairKind::ALL.len());
    }
}
