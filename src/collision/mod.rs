//! Collision detection: a sweep-and-prune broad phase on world AABBs, then
//! parry's narrow phase on the candidate pairs, producing contact points with
//! a frame (z along the normal), a signed distance, combined friction and
//! restitution, and a stable identity for warm starting.
//!
//! Convention: in a contact between geometries `a` and `b`, the normal points
//! from `b` to `a`, the contact velocity is `v_a − v_b` at the contact point,
//! and the impulse `λ` acts on `a` (and `−λ` on `b`). When one geometry is on
//! the world it is always `b`.

mod boxes;
mod hull;
mod smooth;
mod variation;

pub use variation::{ContactGeometry, ContactVariation};

use crate::dynamics::Data;
use crate::error::SimError;
use crate::math::{Mat3, SE3, Vec3, frame_from_normal};
use crate::model::{Model, Shape as ModelShape, WORLD};
use parry3d_f64::bounding_volume::Aabb;
use parry3d_f64::math::{Pose, Rotation, Vector as PVec};
use parry3d_f64::query::{ContactManifold, DefaultQueryDispatcher, PersistentQueryDispatcher};
use parry3d_f64::shape::{PackedFeatureId, PolygonalFeature, Shape, ShapeType};

/// Stable identity of a contact point across steps: geometry pair and the
/// features (vertex, edge, face ids from parry) in contact on each side.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct ContactKey {
    pub geom_a: u32,
    pub geom_b: u32,
    pub feature_a: u32,
    pub feature_b: u32,
}

/// One contact point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Contact {
    pub geom_a: usize,
    pub geom_b: usize,
    pub body_a: usize,
    pub body_b: usize,
    /// World position, midway between the two surfaces.
    pub point: Vec3,
    /// `world_from_contact`: columns `t1, t2, n`, with `n` from `b` to `a`.
    pub frame: Mat3,
    /// Signed distance `φ` between the surfaces along `n` (< 0: penetration).
    pub distance: f64,
    /// Combined friction coefficient.
    pub mu: f64,
    /// Torsional and rolling friction coefficients (m; zero where the
    /// pair's `condim` has no such rows: [`crate::model::Model::geometry_spin`]).
    /// With `mu > 0`, the contact's impulse lies in MuJoCo's elliptic cone
    /// `‖(λ_t1/μ, λ_t2/μ, λ_spin/μ_t, λ_roll1/μ_r, λ_roll2/μ_r)‖ ≤ λ_N`, its
    /// spin (about `n`) and rolling (about `t1`, `t2`) rows those of the
    /// bodies' relative angular velocity.
    pub spin: [f64; 2],
    /// Combined restitution coefficient.
    pub restitution: f64,
    pub key: ContactKey,
    /// The features that made the contact, for its derivatives with
    /// respect to the bodies' poses ([`Contact::variation`]).
    pub geometry: ContactGeometry,
}

impl Contact {
    pub fn normal(&self) -> Vec3 {
        self.frame.column(2).into_owned()
    }
}

fn to_pose(m: &SE3) -> Pose {
    let q = m.quaternion();
    Pose::from_parts(
        PVec::new(m.translation.x, m.translation.y, m.translation.z),
        Rotation::from_xyzw(q.i, q.j, q.k, q.w),
    )
}

#[inline]
fn to_vec3(v: PVec) -> Vec3 {
    Vec3::new(v.x, v.y, v.z)
}

/// World axis-aligned bounding box `(min, max)` of geometry `g`, after
/// [`crate::dynamics::forward_kinematics`] (infinite for a half-space).
pub fn geometry_aabb(model: &Model, data: &Data, g: usize) -> (Vec3, Vec3) {
    let geom = &model.geometries[g];
    let pose = data.world_from_body[geom.body].mul(&geom.body_from_collider);
    let aabb = geom.collider.compute_aabb(&to_pose(&pose));
    (to_vec3(aabb.mins), to_vec3(aabb.maxs))
}

/// Geometries `i` and `j` as a pair: the world-attached one, if any, is
/// always `b`; else the lower index is `a`.
fn oriented(model: &Model, i: usize, j: usize) -> (usize, usize) {
    if model.geometries[i].body == WORLD || (model.geometries[j].body != WORLD && j < i) {
        (j, i)
    } else {
        (i, j)
    }
}

/// Reusable collision workspace.
pub struct CollisionDetector {
    /// Contacts are generated for surfaces closer than this (m); contacts with
    /// `φ > 0` are speculative and handled by the `φ/dt` term of `g`.
    pub margin: f64,
    geom_pose: Vec<SE3>,
    aabbs: Vec<Aabb>,
    /// Whether `aabbs[g]` is this call's (the pair list computes them on demand).
    boxed: Vec<bool>,
    order: Vec<usize>,
    /// Candidate pairs from the broad phase in the last call.
    pub pairs: Vec<(usize, usize)>,
    manifolds: Vec<ContactManifold<(), ()>>,
    /// The model's filter, applied once: every pair of geometries that may
    /// collide ([`Model::can_collide`]), oriented as `pairs` are, when
    /// there are at most [`PAIR_LIST_RATIO`] per active geometry (empty
    /// otherwise: the sweep filters as it goes, and a world's memory stays
    /// linear in its geometries).
    allowed: Vec<(usize, usize)>,
    /// Whether the broad phase tests `allowed` (else it sweeps).
    pair_list: bool,
    /// The geometries in some allowed pair, ascending.
    active: Vec<usize>,
    /// Each geometry's box in its collider frame (centre, half extents;
    /// `None` for an unbounded shape): its bounding sphere, and a world
    /// box in O(1) (a mesh's hull need not be walked each step).
    local_boxes: Vec<Option<(Vec3, Vec3)>>,
    /// Whether a geometry's world box is its local box turned (a convex
    /// mesh, whose exact box walks its hull) rather than parry's exact one
    /// (a primitive's, as cheap and tighter).
    turned_box: Vec<bool>,
    /// Each convex mesh's edge graph ([`hull`]), shared with the other
    /// worlds of the model.
    hulls: Vec<Option<std::sync::Arc<hull::HullGraph>>>,
}

/// At most this many allowed pairs per active geometry, the broad phase
/// tests the allowed pairs' bounding spheres, then their boxes; above, it
/// sweeps the active geometries' boxes (sweep-and-prune). An arm whose
/// links may only meet a few others has a short list: no box of a mesh
/// link is computed until its sphere comes near another.
pub const PAIR_LIST_RATIO: usize = 4;

/// A penetration deeper than this (m) is not a contact at rest, recovered
/// to rounding, nor most impacts' step: a start that overlaps (warned at
/// load) or a wedge, where `SimParams::penetration_compliance` acts.
pub const DEEP_PENETRATION: f64 = 1e-3;

/// Two points of one manifold closer than this (m), at distances closer
/// than this, are one contact: the second is dropped.
pub const DUPLICATE_POINT: f64 = 1e-9;

impl CollisionDetector {
    pub fn new(model: &Model, margin: f64) -> Self {
        let n = model.geometries.len();
        let mut allowed = Vec::new();
        let mut used = vec![false; n];
        for i in 0..n {
            for j in i + 1..n {
                if model.can_collide(i, j) {
                    allowed.push(oriented(model, i, j));
                    used[i] = true;
                    used[j] = true;
                }
            }
        }
        allowed.sort_unstable();
        let active: Vec<usize> = (0..n).filter(|&g| used[g]).collect();
        let pair_list = allowed.len() <= PAIR_LIST_RATIO * active.len();
        if !pair_list {
            allowed = Vec::new();
        }
        let local_boxes = model
            .geometries
            .iter()
            .map(|g| {
                let b = g.collider.compute_local_aabb();
                let (lo, hi) = (to_vec3(b.mins), to_vec3(b.maxs));
                let half = 0.5 * (hi - lo);
                half.iter()
                    .all(|x| x.is_finite())
                    .then(|| (0.5 * (lo + hi), half))
            })
            .collect();
        let turned_box = model
            .geometries
            .iter()
            .map(|g| {
                matches!(
                    g.collider.shape_type(),
                    ShapeType::ConvexPolyhedron
                        | ShapeType::RoundConvexPolyhedron
                        | ShapeType::Compound
                        | ShapeType::TriMesh
                )
            })
            .collect();
        CollisionDetector {
            margin,
            geom_pose: vec![SE3::identity(); n],
            aabbs: vec![Aabb::new_invalid(); n],
            boxed: vec![false; n],
            order: Vec::with_capacity(n),
            pairs: Vec::new(),
            manifolds: Vec::new(),
            allowed,
            pair_list,
            active,
            local_boxes,
            turned_box,
            hulls: (model.geometries.iter())
                .map(|g| hull::HullGraph::of(&g.collider))
                .collect(),
        }
    }

    /// The world pose of every geometry that may collide.
    fn set_poses(&mut self, model: &Model, data: &Data) {
        for &g in &self.active {
            let geom = &model.geometries[g];
            self.geom_pose[g] = data.world_from_body[geom.body].mul(&geom.body_from_collider);
        }
    }

    /// Broad phase: the pairs the model allows (filtered once, at
    /// [`Self::new`]) whose margin-inflated world boxes overlap, found by
    /// testing the allowed pairs' bounding spheres then boxes when the
    /// list is short ([`PAIR_LIST_RATIO`]), else by sweep-and-prune along
    /// x over the geometries that may collide. Fills `self.pairs` (sorted,
    /// deterministic).
    pub fn broad_phase(&mut self, model: &Model, data: &Data) {
        self.pairs.clear();
        self.set_poses(model, data);
        // A convex mesh's world box holds its local box turned (|R| h
        // about R c + t); other shapes' are parry's; inflated by the margin.
        let (local_boxes, turned_box) = (&self.local_boxes, &self.turned_box);
        let inflated = |pose: &SE3, g: usize, geom: &crate::model::Geometry, margin: f64| {
            let mut aabb = match local_boxes[g] {
                Some((c, h)) if turned_box[g] => {
                    let centre = pose.act_point(&c);
                    let half = pose.rotation.abs() * h;
                    Aabb::new(
                        PVec::new(centre.x - half.x, centre.y - half.y, centre.z - half.z),
                        PVec::new(centre.x + half.x, centre.y + half.y, centre.z + half.z),
                    )
                }
                _ => geom.collider.compute_aabb(&to_pose(pose)),
            };
            aabb.mins -= PVec::splat(margin);
            aabb.maxs += PVec::splat(margin);
            aabb
        };
        let overlap = |a: &Aabb, b: &Aabb| {
            a.mins.x <= b.maxs.x
                && b.mins.x <= a.maxs.x
                && a.mins.y <= b.maxs.y
                && b.mins.y <= a.maxs.y
                && a.mins.z <= b.maxs.z
                && b.mins.z <= a.maxs.z
        };
        if self.pair_list {
            // Boxes computed on demand, once per geometry and call.
            self.boxed.fill(false);
            for &(a, b) in &self.allowed {
                if let (Some((ca, ha)), Some((cb, hb))) = (local_boxes[a], local_boxes[b]) {
                    let (pa, pb) = (&self.geom_pose[a], &self.geom_pose[b]);
                    let reach = ha.norm() + hb.norm() + 2.0 * self.margin;
                    if (pa.act_point(&ca) - pb.act_point(&cb)).norm() > reach {
                        continue;
                    }
                }
                for g in [a, b] {
                    if !self.boxed[g] {
                        self.aabbs[g] =
                            inflated(&self.geom_pose[g], g, &model.geometries[g], self.margin);
                        self.boxed[g] = true;
                    }
                }
                if overlap(&self.aabbs[a], &self.aabbs[b]) {
                    self.pairs.push((a, b));
                }
            }
            return;
        }
        for &g in &self.active {
            self.aabbs[g] = inflated(&self.geom_pose[g], g, &model.geometries[g], self.margin);
        }
        self.order.clear();
        self.order.extend_from_slice(&self.active);
        let aabbs = &self.aabbs;
        self.order
            .sort_unstable_by(|&a, &b| aabbs[a].mins.x.total_cmp(&aabbs[b].mins.x));
        for (oi, &i) in self.order.iter().enumerate() {
            let bi = &aabbs[i];
            for &j in &self.order[oi + 1..] {
                let bj = &aabbs[j];
                if bj.mins.x > bi.maxs.x {
                    break;
                }
                if overlap(bi, bj) && model.can_collide(i, j) {
                    self.pairs.push(oriented(model, i, j));
                }
            }
        }
        self.pairs.sort_unstable();
    }

    /// Broad and narrow phases; appends the contacts to `contacts` (cleared first).
    pub fn detect(
        &mut self,
        model: &Model,
        data: &Data,
        contacts: &mut Vec<Contact>,
    ) -> Result<(), SimError> {
        self.broad_phase(model, data);
        self.narrow_phase(model, contacts)
    }

    /// [`Self::detect`] without the broad phase: the narrow phase on every
    /// pair the model allows. Slow; the reference the broad phase is
    /// tested against (it may drop a pair only where this finds no contact).
    pub fn detect_every_allowed_pair(
        &mut self,
        model: &Model,
        data: &Data,
        contacts: &mut Vec<Contact>,
    ) -> Result<(), SimError> {
        self.set_poses(model, data);
        self.pairs.clear();
        for (k, &i) in self.active.iter().enumerate() {
            for &j in &self.active[k + 1..] {
                if model.can_collide(i, j) {
                    self.pairs.push(oriented(model, i, j));
                }
            }
        }
        self.pairs.sort_unstable();
        self.narrow_phase(model, contacts)
    }

    /// The narrow phase on `self.pairs`, whose geometries' poses are set.
    fn narrow_phase(&mut self, model: &Model, contacts: &mut Vec<Contact>) -> Result<(), SimError> {
        contacts.clear();
        let dispatcher = DefaultQueryDispatcher;
        for pi in 0..self.pairs.len() {
            let (a, b) = self.pairs[pi];
            let (ga, gb) = (&model.geometries[a], &model.geometries[b]);
            let (pose_a, pose_b) = (self.geom_pose[a], self.geom_pose[b]);
            let (mu, restitution, condim) = model.geometry_contact(a, b);
            let spin = model.geometry_spin(a, b);
            if let (Some(half), Some((pfm, border))) = (
                gb.collider.as_halfspace(),
                ga.collider.as_polygonal_feature_map(),
            ) {
                // Half-space against a polygonal shape, here rather than in
                // parry, whose version reallocates its point buffer each call.
                let n = pose_b.rotation * to_vec3(half.normal);
                let offset = n.dot(&pose_b.translation);
                let dir = pose_a.rotation.tr_mul(&-n);
                let mut feature = PolygonalFeature::default();
                pfm.local_support_feature(PVec::new(dir.x, dir.y, dir.z), &mut feature);
                let frame = frame_from_normal(&n);
                for k in 0..feature.num_vertices {
                    let p = pose_a.act_point(&to_vec3(feature.vertices[k]));
                    let distance = n.dot(&p) - offset - border;
                    if distance > self.margin {
                        continue;
                    }
                    let surface_a = p - n * border;
                    // The support feature's vertices are fixed on `a` for
                    // shapes with flat faces and a constant border; a
                    // cylinder's or cone's rim is not.
                    let geometry = if fixed_vertices(ga.collider.as_ref()) {
                        ContactGeometry::PointFace {
                            on_a: true,
                            core: p,
                            radius: border,
                        }
                    } else {
                        ContactGeometry::Unknown
                    };
                    contacts.push(Contact {
                        geom_a: a,
                        geom_b: b,
                        body_a: ga.body,
                        body_b: gb.body,
                        point: surface_a - n * (0.5 * distance),
                        frame,
                        distance,
                        mu,
                        spin,
                        restitution,
                        key: ContactKey {
                            geom_a: a as u32,
                            geom_b: b as u32,
                            feature_a: feature.vids[k].0,
                            feature_b: 0,
                        },
                        geometry,
                    });
                }
                continue;
            }
            let pos12 = to_pose(&pose_a.inv_mul(&pose_b));
            // Keep one manifold (and its points' allocation) across pairs.
            self.manifolds.truncate(1);
            if let Some(m) = self.manifolds.first_mut() {
                m.clear();
            }
            if let (Some(c1), Some(c2)) = (ga.collider.as_cuboid(), gb.collider.as_cuboid()) {
                // Two boxes: our clipping of parry's faces ([`boxes`]).
                if self.manifolds.is_empty() {
                    self.manifolds.push(ContactManifold::new());
                }
                boxes::cuboid_cuboid(&pos12, c1, c2, self.margin, &mut self.manifolds[0]);
            } else if !self.walked_hulls(&pos12, (a, b), (ga, gb)) {
                let mut workspace = None;
                dispatcher
                    .contact_manifolds(
                        &pos12,
                        ga.collider.as_ref(),
                        gb.collider.as_ref(),
                        self.margin,
                        &mut self.manifolds,
                        &mut workspace,
                    )
                    .map_err(|_| SimError::UnsupportedPair {
                        geom_a: ga.name.clone(),
                        geom_b: gb.name.clone(),
                    })?;
            }
            if let Some(contact) =
                self.polished(model, (a, b), (&pose_a, &pose_b), (mu, restitution))
            {
                if contact.distance <= self.margin {
                    contacts.push(contact);
                }
                continue;
            }
            for m in &self.manifolds {
                if m.points.is_empty() {
                    continue;
                }
                let n = -(pose_a.rotation * to_vec3(m.local_n1));
                let nn = n.norm();
                if !(nn > 0.5) {
                    continue;
                }
                let n = n / nn;
                let frame = frame_from_normal(&n);
                // A height field's manifolds are its triangles' (`b` is
                // the world's): the cell's friction (unless the pair is
                // frictionless), and the triangle in the contact's identity.
                let (mu, triangle) = match &gb.shape {
                    ModelShape::HeightField(field) => {
                        let (i, j) = field.cell_of_triangle(m.subshape2);
                        let mu = match field.friction_at_cell(i, j) {
                            Some(f) if condim > 1 => f,
                            _ => mu,
                        };
                        (mu, m.subshape2 + 1)
                    }
                    _ => (mu, 0),
                };
                let first = contacts.len();
                for pt in &m.points {
                    if pt.dist > self.margin {
                        continue;
                    }
                    let pa = pose_a.act_point(&to_vec3(pt.local_p1));
                    let pb = pose_b.act_point(&to_vec3(pt.local_p2));
                    // The same point twice in one manifold (parry's clipping
                    // of two hulls' faces repeats a vertex: robosuite's UR5e,
                    // upper arm on its base) would be a second contact with
                    // the first's rows: G singular, nothing gained.
                    let point = (pa + pb) * 0.5;
                    if contacts[first..].iter().any(|c| {
                        (c.point - point).norm() <= DUPLICATE_POINT
                            && (c.distance - pt.dist).abs() <= DUPLICATE_POINT
                    }) {
                        continue;
                    }
                    let geometry = classify(
                        (ga.collider.as_ref(), &pose_a, pa, pt.fid1),
                        (gb.collider.as_ref(), &pose_b, pb, pt.fid2),
                        &n,
                    );
                    contacts.push(Contact {
                        geom_a: a,
                        geom_b: b,
                        body_a: ga.body,
                        body_b: gb.body,
                        point,
                        frame,
                        distance: pt.dist,
                        mu,
                        spin,
                        restitution,
                        key: ContactKey {
                            geom_a: a as u32,
                            geom_b: b as u32,
                            feature_a: pt.fid1.0,
                            feature_b: feature_on_triangle(triangle, pt.fid2.0),
                        },
                        geometry,
                    });
                }
            }
        }
        Ok(())
    }
}

impl CollisionDetector {
    /// The one contact of a convex pair with an ellipsoid, from parry's
    /// manifold polished to the true closest points ([`smooth::polish`]);
    /// `None` for other pairs, for no contact, or where the polish fails
    /// (parry's manifold then stands).
    fn polished(
        &self,
        model: &Model,
        (a, b): (usize, usize),
        (pose_a, pose_b): (&SE3, &SE3),
        (mu, restitution): (f64, f64),
    ) -> Option<Contact> {
        let (ga, gb) = (&model.geometries[a], &model.geometries[b]);
        let ellipsoid = |s: &ModelShape| matches!(s, ModelShape::Ellipsoid { .. });
        if !(ellipsoid(&ga.shape) || ellipsoid(&gb.shape)) || self.manifolds.len() != 1 {
            return None;
        }
        let m = &self.manifolds[0];
        if m.points.is_empty() {
            return None;
        }
        let (sa, sb) = (ga.collider.as_support_map()?, gb.collider.as_support_map()?);
        let u0 = (pose_a.rotation * to_vec3(m.local_n1)).try_normalize(0.5)?;
        let side_a = smooth::Side {
            shape: sa,
            pose: pose_a,
        };
        let side_b = smooth::Side {
            shape: sb,
            pose: pose_b,
        };
        let found = smooth::polish(&side_a, &side_b, u0)?;
        let n = -found.u;
        Some(Contact {
            geom_a: a,
            geom_b: b,
            body_a: ga.body,
            body_b: gb.body,
            point: (found.on_a + found.on_b) * 0.5,
            frame: frame_from_normal(&n),
            distance: found.distance,
            mu,
            spin: model.geometry_spin(a, b),
            restitution,
            key: ContactKey {
                geom_a: a as u32,
                geom_b: b as u32,
                // Two smooth surfaces touch at one point: the pair is the
                // contact's identity, the same from step to step.
                feature_a: 0,
                feature_b: 0,
            },
            geometry: ContactGeometry::Unknown,
        })
    }
}

/// A contact's feature on `b`: parry's feature id, or for a height field's
/// triangle `t − 1` (`t > 0`) the triangle and its feature (a vertex, edge
/// or face of 3, with its kind in parry's two top bits) packed together.
fn feature_on_triangle(t: u32, fid: u32) -> u32 {
    if t == 0 {
        fid
    } else {
        (t - 1).wrapping_mul(16) ^ ((fid >> 30) << 2) ^ (fid & 3)
    }
}

/// Whether the shape's support features have vertices fixed on the shape
/// (polyhedra, segments, and their rounded versions): not a cylinder's or
/// a cone's rim, not a ball (whose centre is handled apart).
fn fixed_vertices(shape: &dyn Shape) -> bool {
    matches!(
        shape.shape_type(),
        ShapeType::Cuboid
            | ShapeType::Capsule
            | ShapeType::ConvexPolyhedron
            | ShapeType::Segment
            | ShapeType::Triangle
            | ShapeType::RoundCuboid
            | ShapeType::RoundConvexPolyhedron
            | ShapeType::RoundTriangle
    )
}

/// The border (rounding) of a shape's polygonal features.
fn border(shape: &dyn Shape) -> Option<f64> {
    shape.as_polygonal_feature_map().map(|(_, b)| b)
}

/// [`ContactGeometry`] of a parry contact point between `a` and `b`, each
/// given as (shape, pose, witness point on its surface, feature), with the
/// normal `n` from `b` to `a`.
fn classify(
    (shape_a, pose_a, pa, fa): (&dyn Shape, &SE3, Vec3, PackedFeatureId),
    (shape_b, pose_b, pb, fb): (&dyn Shape, &SE3, Vec3, PackedFeatureId),
    n: &Vec3,
) -> ContactGeometry {
    let (ball_a, ball_b) = (shape_a.as_ball(), shape_b.as_ball());
    let face_or_flat = |shape: &dyn Shape| {
        shape.shape_type() == ShapeType::HalfSpace
            || (fixed_vertices(shape) && border(shape) == Some(0.0))
    };
    match (ball_a, ball_b) {
        (Some(ba), Some(bb)) => ContactGeometry::PointPoint {
            core_a: pose_a.translation,
            core_b: pose_b.translation,
            radius_a: ba.radius,
            radius_b: bb.radius,
        },
        // A ball against a flat-faced shape: its centre against the face,
        // or against the vertex, the shape's point closest to it.
        (Some(ba), None) if face_or_flat(shape_b) => {
            if fb.is_face() {
                ContactGeometry::PointFace {
                    on_a: true,
                    core: pose_a.translation,
                    radius: ba.radius,
                }
            } else if fb.is_vertex() {
                ContactGeometry::PointPoint {
                    core_a: pose_a.translation,
                    core_b: pb,
                    radius_a: ba.radius,
                    radius_b: 0.0,
                }
            } else {
                ContactGeometry::Unknown
            }
        }
        (None, Some(bb)) if face_or_flat(shape_a) => {
            if fa.is_face() {
                ContactGeometry::PointFace {
                    on_a: false,
                    core: pose_b.translation,
                    radius: bb.radius,
                }
            } else if fa.is_vertex() {
                ContactGeometry::PointPoint {
                    core_a: pa,
                    core_b: pose_b.translation,
                    radius_a: 0.0,
                    radius_b: bb.radius,
                }
            } else {
                ContactGeometry::Unknown
            }
        }
        (None, None) if fixed_vertices(shape_a) && fixed_vertices(shape_b) => {
            // Polygonal features clipped against each other: a vertex of
            // one on a face of the other.
            let (Some(border_a), Some(border_b)) = (border(shape_a), border(shape_b)) else {
                return ContactGeometry::Unknown;
            };
            if fa.is_vertex() && fb.is_face() {
                ContactGeometry::PointFace {
                    on_a: true,
                    core: pa + n * border_a,
                    radius: border_a,
                }
            } else if fa.is_face() && fb.is_vertex() {
                ContactGeometry::PointFace {
                    on_a: false,
                    core: pb - n * border_b,
                    radius: border_b,
                }
            } else {
                ContactGeometry::Unknown
            }
        }
        _ => ContactGeometry::Unknown,
    }
}

/// Excludes the collisions of the body pairs whose geometries intersect at
/// configuration `q` (a model file's neutral pose: links whose hulls
/// overlap by construction would otherwise push the robot apart at rest);
/// returns those pairs, sorted. Run by the loader after a model is read.
pub fn exclude_initial_overlaps(
    model: &mut Model,
    q: &[f64],
) -> Result<Vec<(usize, usize)>, crate::SimError> {
    let mut data = Data::new(model);
    crate::dynamics::forward_kinematics(model, &mut data, q);
    let mut detector = CollisionDetector::new(model, 0.0);
    let mut contacts = Vec::new();
    detector.detect(model, &data, &mut contacts)?;
    let mut pairs: Vec<(usize, usize)> = contacts
        .iter()
        .filter(|c| c.distance < 0.0)
        .map(|c| (c.body_a.min(c.body_b), c.body_a.max(c.body_b)))
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    model.collision_exclusions.extend_from_slice(&pairs);
    model.collision_exclusions.sort_unstable();
    model.collision_exclusions.dedup();
    Ok(pairs)
}
