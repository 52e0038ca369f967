//! Support points of convex meshes by walking their hulls' edges.
//!
//! parry's `ConvexPolyhedron` finds a support point by testing every
//! vertex; GJK and EPA ask for dozens per pair and step. robosuite's Panda
//! (link hulls of hundreds of vertices, links 5 and 7 within the margin
//! from `qpos0`) spent 46 % of its step there, and its step was 94 %
//! collision (`perf`, 2026-12-07). For a linear function over a convex
//! polytope a vertex that no neighbour improves is a maximum, so the
//! support point is found by climbing the hull's edge graph from the best
//! of six axis-extreme vertices: a few dozen dot products instead of one
//! per vertex. The graph is built once per shape and shared by every world
//! of the model (a cache keyed by the shape, holding it weakly).
//!
//! A vertex tied with the best is kept only if it improves strictly, so
//! where a face faces the direction exactly the walk may return another of
//! its vertices than the scan would: the same support value, a different
//! point (GJK's answer is the same distance and normal).

use crate::model::Geometry;
use parry3d_f64::math::{Pose, Vector as PVec};
use parry3d_f64::query::ContactManifold;
use parry3d_f64::query::details::contact_manifold_pfm_pfm;
use parry3d_f64::shape::{
    ConvexPolyhedron, PolygonalFeature, PolygonalFeatureMap, Shape, ShapeType, SharedShape,
    SupportMap,
};
use std::sync::{Arc, Mutex, Weak};

/// Hulls with fewer vertices are scanned (the walk saves nothing there).
const MIN_VERTICES: usize = 24;

/// A hull's vertex adjacency (compressed rows) and its axis-extreme vertices.
pub(crate) struct HullGraph {
    offsets: Vec<u32>,
    neighbors: Vec<u32>,
    starts: [u32; 6],
}

impl HullGraph {
    fn new(poly: &ConvexPolyhedron) -> Self {
        let points = poly.points();
        let n = points.len();
        let mut degree = vec![0u32; n + 1];
        for e in poly.edges() {
            for &v in &e.vertices {
                degree[v as usize + 1] += 1;
            }
        }
        for k in 0..n {
            degree[k + 1] += degree[k];
        }
        let offsets = degree;
        let mut fill = offsets.clone();
        let mut neighbors = vec![0u32; *offsets.last().unwrap_or(&0) as usize];
        for e in poly.edges() {
            let [u, v] = e.vertices;
            neighbors[fill[u as usize] as usize] = v;
            fill[u as usize] += 1;
            neighbors[fill[v as usize] as usize] = u;
            fill[v as usize] += 1;
        }
        let mut starts = [0u32; 6];
        for (k, s) in starts.iter_mut().enumerate() {
            let (axis, sign) = (k / 2, if k % 2 == 0 { 1.0 } else { -1.0 });
            let key = |p: &PVec| sign * p[axis];
            *s = (0..n)
                .max_by(|&i, &j| key(&points[i]).total_cmp(&key(&points[j])))
                .unwrap_or(0) as u32;
        }
        HullGraph {
            offsets,
            neighbors,
            starts,
        }
    }

    /// The vertex of `points` furthest along `dir`.
    fn support(&self, points: &[PVec], dir: PVec) -> PVec {
        let mut best = self.starts[0];
        let mut best_dot = points[best as usize].dot(dir);
        for &s in &self.starts[1..] {
            let d = points[s as usize].dot(dir);
            if d > best_dot {
                (best, best_dot) = (s, d);
            }
        }
        loop {
            let (from, to) = (
                self.offsets[best as usize] as usize,
                self.offsets[best as usize + 1] as usize,
            );
            let mut moved = false;
            for &k in &self.neighbors[from..to] {
                let d = points[k as usize].dot(dir);
                if d > best_dot {
                    (best, best_dot, moved) = (k, d, true);
                }
            }
            if !moved {
                return points[best as usize];
            }
        }
    }

    /// The graph of `shape` when it is a convex mesh worth walking, built
    /// once for all the worlds that share the shape.
    pub(crate) fn of(shape: &SharedShape) -> Option<Arc<HullGraph>> {
        let poly = shape.as_convex_polyhedron()?;
        if poly.points().len() < MIN_VERTICES {
            return None;
        }
        static CACHE: Mutex<Vec<(usize, Weak<HullGraph>)>> = Mutex::new(Vec::new());
        // (The key is the shape's address: a detector holds its model, so
        // the shape outlives every graph in use for it.)
        let key = Arc::as_ptr(&shape.0) as *const () as usize;
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        cache.retain(|(_, w)| w.strong_count() > 0);
        if let Some(g) =
            (cache.iter()).find_map(|(k, w)| (*k == key).then(|| w.upgrade()).flatten())
        {
            return Some(g);
        }
        let g = Arc::new(HullGraph::new(poly));
        cache.push((key, Arc::downgrade(&g)));
        Some(g)
    }
}

/// A convex mesh whose support points walk its graph; its support
/// features are the mesh's own.
pub(crate) struct WalkedHull<'a> {
    pub(crate) poly: &'a ConvexPolyhedron,
    pub(crate) graph: &'a HullGraph,
}

impl SupportMap for WalkedHull<'_> {
    fn local_support_point(&self, dir: PVec) -> PVec {
        self.graph.support(self.poly.points(), dir)
    }
}

impl PolygonalFeatureMap for WalkedHull<'_> {
    fn local_support_feature(&self, dir: PVec, out: &mut PolygonalFeature) {
        self.poly.local_support_feature(dir, out)
    }
}

/// A side of a pair for parry's manifold of two polygonal shapes: the
/// walked mesh, or the shape's own features (none for a ball, whose pairs
/// parry treats apart, or a shape without them).
fn side<'a>(
    walked: &'a Option<WalkedHull<'a>>,
    shape: &'a dyn Shape,
) -> Option<(&'a dyn PolygonalFeatureMap, f64)> {
    match walked {
        Some(w) => Some((w, 0.0)),
        None if shape.shape_type() == ShapeType::Ball => None,
        None => shape.as_polygonal_feature_map(),
    }
}

impl super::CollisionDetector {
    /// The manifold of a pair with a walked convex mesh on a side and a
    /// polygonal shape on the other (a mesh, a box, a capsule, a cylinder:
    /// what parry's dispatcher gives its polygonal manifold), with the
    /// meshes' support points walked; false, nothing done, for other pairs.
    pub(super) fn walked_hulls(
        &mut self,
        pos12: &Pose,
        (a, b): (usize, usize),
        (ga, gb): (&Geometry, &Geometry),
    ) -> bool {
        fn walk<'a>(g: &'a Geometry, graph: Option<&'a Arc<HullGraph>>) -> Option<WalkedHull<'a>> {
            let (poly, graph) = (g.collider.as_convex_polyhedron()?, graph?);
            Some(WalkedHull { poly, graph })
        }
        let (wa, wb) = (
            walk(ga, self.hulls[a].as_ref()),
            walk(gb, self.hulls[b].as_ref()),
        );
        if wa.is_none() && wb.is_none() {
            return false;
        }
        let (Some((pa, ra)), Some((pb, rb))) = (
            side(&wa, ga.collider.as_ref()),
            side(&wb, gb.collider.as_ref()),
        ) else {
            return false;
        };
        if self.manifolds.is_empty() {
            self.manifolds.push(ContactManifold::new());
        }
        contact_manifold_pfm_pfm(
            pos12,
            pa,
            ra,
            None,
            pb,
            rb,
            None,
            self.margin,
            &mut self.manifolds[0],
        );
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_finds_the_scans_support_value() {
        // A sphere's worth of points: their hull has hundreds of vertices.
        let mut pts = Vec::new();
        let mut seed = 1u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        for _ in 0..600 {
            let p = PVec::new(next(), next(), 0.5 * next());
            pts.push(p / p.length() * (1.0 + 0.01 * next()));
        }
        let shape = SharedShape::convex_hull(&pts).unwrap();
        let g = HullGraph::of(&shape).unwrap();
        let poly = shape.as_convex_polyhedron().unwrap();
        assert!(poly.points().len() > 100, "{}", poly.points().len());
        // The same graph for the same shape.
        assert!(Arc::ptr_eq(&g, &HullGraph::of(&shape).unwrap()));
        let walked = WalkedHull { poly, graph: &g };
        for _ in 0..2000 {
            let dir = PVec::new(next(), next(), next());
            let a = walked.local_support_point(dir).dot(dir);
            let b = poly.local_support_point(dir).dot(dir);
            assert_eq!(a, b);
        }
        // parry's manifold of two such hulls, and of a hull and a box, a
        // capsule: the same contacts (points and distances) with the walk.
        use parry3d_f64::math::Rotation;
        let others = [
            shape.clone(),
            SharedShape::cuboid(0.4, 0.3, 0.2),
            SharedShape::capsule_z(0.3, 0.2),
        ];
        let (mut compared, mut touching) = (0, 0);
        for other in &others {
            let og = HullGraph::of(other);
            for _ in 0..300 {
                let axis = PVec::new(next(), next(), next());
                let gap = 0.3 * next();
                let pos12 = Pose::from_parts(
                    axis.normalize() * (1.8 + gap),
                    Rotation::from_scaled_axis(axis * 3.0),
                );
                let mut plain = ContactManifold::<(), ()>::new();
                let mut fast = ContactManifold::<(), ()>::new();
                let (pfm2, r2) = other.as_polygonal_feature_map().unwrap();
                contact_manifold_pfm_pfm(&pos12, poly, 0.0, None, pfm2, r2, None, 0.2, &mut plain);
                let walked2 = og.as_deref().map(|graph| WalkedHull {
                    poly: other.as_convex_polyhedron().unwrap(),
                    graph,
                });
                let (w2, wr2) = side(&walked2, other.as_ref()).unwrap();
                contact_manifold_pfm_pfm(&pos12, &walked, 0.0, None, w2, wr2, None, 0.2, &mut fast);
                assert_eq!(plain.points.len(), fast.points.len());
                for (p, f) in plain.points.iter().zip(&fast.points) {
                    assert!((p.dist - f.dist).abs() < 1e-12, "{} {}", p.dist, f.dist);
                    assert!((p.local_p1 - f.local_p1).length() < 1e-9);
                }
                compared += 1;
                touching += usize::from(!plain.points.is_empty());
            }
        }
        assert!(touching > compared / 4, "{touching} of {compared}");
    }
}
