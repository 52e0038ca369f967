//! An ellipsoid collider for parry (MJCF's `ellipsoid` geom), which parry
//! does not have: `x²/a² + y²/b² + z²/c² ≤ 1` with the radii `(a, b, c)`.
//!
//! It is a smooth convex shape, so it enters parry's narrow phase as a
//! support map (the point of the surface farthest along a direction:
//! `p = R² d / ‖R d‖` with `R = diag(a, b, c)`) whose support "feature" is
//! that single point: against a half-space, a triangle, a box, a capsule, a
//! cylinder, a hull or another ellipsoid, GJK and EPA find the closest
//! points of the true surface, one contact per pair. Against a ball parry
//! projects the ball's centre onto the shape ([`PointQuery`]), computed
//! here by the root of the closest-point equation; rays (rangefinders,
//! picking) are intersected exactly.

use parry3d_f64::bounding_volume::{Aabb, BoundingSphere};
use parry3d_f64::mass_properties::MassProperties;
use parry3d_f64::math::{Pose, Real, Vector};
use parry3d_f64::query::{PointProjection, PointQuery, Ray, RayCast, RayIntersection};
use parry3d_f64::shape::{
    FeatureId, PackedFeatureId, PolygonalFeature, PolygonalFeatureMap, Shape, ShapeType,
    SupportMap, TypedShape,
};

/// The solid ellipsoid with semi-axes `radii` along its local x, y, z.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ellipsoid {
    pub radii: Vector,
}

impl Ellipsoid {
    /// An ellipsoid of positive finite radii.
    pub fn new(radii: Vector) -> Self {
        Ellipsoid { radii }
    }

    /// The surface point whose outward normal is along `dir` (not zero).
    fn support(&self, dir: Vector) -> Vector {
        let r = self.radii;
        let scaled = dir * r;
        let n = scaled.length();
        if !(n > 0.0) {
            return Vector::new(0.0, 0.0, r.z);
        }
        scaled * r / n
    }

    /// The outward unit normal at surface point `p`.
    fn normal_at(&self, p: Vector) -> Vector {
        let r2 = self.radii * self.radii;
        (p / r2).try_normalize().unwrap_or(Vector::Z)
    }

    /// `Σ pᵢ²/rᵢ²`: below 1 strictly inside.
    fn level(&self, p: Vector) -> Real {
        (p / self.radii).length_squared()
    }

    /// The point of the surface closest to `p`: `xᵢ = rᵢ² pᵢ / (t + rᵢ²)`
    /// with `t` the root of `f(t) = Σ (rᵢ pᵢ / (t + rᵢ²))² − 1` in
    /// `(−r_k², ∞)`, `k` the axis of the smallest radius, where `f`
    /// decreases (outside: `t > 0`; inside: `t < 0`), found by bisection to
    /// rounding. When `p_k` is zero (to rounding) `f` stays finite at
    /// `−r_k²`; if it is not positive there, no root lies in the interval
    /// and the closest points are the symmetric pair at `t = −r_k²`:
    /// `xᵢ = rᵢ² pᵢ / (rᵢ² − r_k²)` for `i ≠ k` and `x_k` what puts `x` on
    /// the surface, on `p_k`'s side.
    fn closest_surface_point(&self, p: Vector) -> Vector {
        let r = self.radii;
        let r2 = r * r;
        let k = if r.x <= r.y && r.x <= r.z {
            0
        } else if r.y <= r.z {
            1
        } else {
            2
        };
        let tiny = 1e-14 * r.max_element();
        let q = Vector::from_array(p.to_array().map(|c| if c.abs() < tiny { 0.0 } else { c }));
        let f = |t: Real| {
            (0..3)
                .filter(|&i| q[i] != 0.0)
                .map(|i| (r[i] * q[i] / (r2[i] + t)).powi(2))
                .sum::<Real>()
                - 1.0
        };
        let mut lo = -r2[k];
        if q[k] == 0.0 && f(lo) <= 0.0 {
            let mut x = Vector::ZERO;
            for i in (0..3).filter(|&i| i != k && q[i] != 0.0) {
                x[i] = r2[i] * q[i] / (r2[i] - r2[k]);
            }
            let rest = (1.0 - (x / r).length_squared()).max(0.0);
            x[k] = r[k] * rest.sqrt() * if p[k] < 0.0 { -1.0 } else { 1.0 };
            return x;
        }
        // An upper end where f ≤ 0: every term is below 1 once t + rᵢ² ≥ rᵢ|qᵢ|·√3.
        let mut hi = (r * q).length() * 2.0;
        while !(f(hi) <= 0.0) && hi < 1e300 {
            hi = hi.max(1.0) * 4.0;
        }
        for _ in 0..300 {
            let mid = 0.5 * (lo + hi);
            if mid <= lo || mid >= hi {
                break;
            }
            if f(mid) > 0.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let t = 0.5 * (lo + hi);
        // (q is not zero here: the centre took the branch above.)
        let x = r2 * q / (r2 + Vector::splat(t));
        // Back onto the surface exactly (scaled along its own ray).
        x / self.level(x).sqrt()
    }
}

impl SupportMap for Ellipsoid {
    fn local_support_point(&self, dir: Vector) -> Vector {
        self.support(dir)
    }
}

impl PolygonalFeatureMap for Ellipsoid {
    /// The support point alone (a smooth surface has no face or edge), with
    /// one vertex id: a contact keeps its identity as it rolls.
    fn local_support_feature(&self, dir: Vector, out: &mut PolygonalFeature) {
        *out = PolygonalFeature::default();
        out.vertices[0] = self.support(dir);
        out.vids[0] = PackedFeatureId::vertex(0);
        out.fid = PackedFeatureId::face(0);
        out.num_vertices = 1;
    }
}

impl PointQuery for Ellipsoid {
    fn project_local_point(&self, pt: Vector, solid: bool) -> PointProjection {
        let inside = self.level(pt) <= 1.0;
        if inside && solid {
            return PointProjection::new(true, pt);
        }
        PointProjection::new(inside, self.closest_surface_point(pt))
    }

    fn project_local_point_and_get_feature(&self, pt: Vector) -> (PointProjection, FeatureId) {
        (self.project_local_point(pt, false), FeatureId::Face(0))
    }
}

impl RayCast for Ellipsoid {
    /// In the coordinates where the ellipsoid is the unit ball (`x/r`),
    /// the ray `o + t d` meets `|o/r + t d/r| = 1` at the roots of a
    /// quadratic; `t` is the same in both.
    fn cast_local_ray_and_get_normal(
        &self,
        ray: &Ray,
        max_time_of_impact: Real,
        solid: bool,
    ) -> Option<RayIntersection> {
        let (o, d) = (ray.origin / self.radii, ray.dir / self.radii);
        let a = d.length_squared();
        if !(a > 0.0) {
            return None;
        }
        let b = o.dot(d);
        let c = o.length_squared() - 1.0;
        let disc = b * b - a * c;
        if disc < 0.0 {
            return None;
        }
        let root = disc.sqrt();
        let inside = c <= 0.0;
        let t = if inside {
            if solid {
                return (0.0 <= max_time_of_impact)
                    .then(|| RayIntersection::new(0.0, Vector::ZERO, FeatureId::Face(0)));
            }
            (-b + root) / a
        } else {
            let t = (-b - root) / a;
            if t < 0.0 {
                return None;
            }
            t
        };
        if t > max_time_of_impact {
            return None;
        }
        let n = self.normal_at(ray.origin + ray.dir * t);
        Some(RayIntersection::new(
            t,
            if inside { -n } else { n },
            FeatureId::Face(0),
        ))
    }
}

impl Shape for Ellipsoid {
    fn compute_local_aabb(&self) -> Aabb {
        Aabb::new(-self.radii, self.radii)
    }

    fn compute_local_bounding_sphere(&self) -> BoundingSphere {
        BoundingSphere::new(Vector::ZERO, self.radii.max_element())
    }

    /// The tight world box: along world axis `i` the surface reaches
    /// `‖row i of R·diag(r)‖` from the centre, which is the norm over `j` of
    /// column `j` of `R` scaled by `r_j`, taken component by component.
    fn compute_aabb(&self, position: &Pose) -> Aabb {
        let rot = position.rotation;
        let (cx, cy, cz) = (
            rot * (Vector::X * self.radii.x),
            rot * (Vector::Y * self.radii.y),
            rot * (Vector::Z * self.radii.z),
        );
        let ext = (cx * cx + cy * cy + cz * cz).map(|x| x.sqrt());
        Aabb::new(position.translation - ext, position.translation + ext)
    }

    fn clone_dyn(&self) -> Box<dyn Shape> {
        Box::new(*self)
    }

    fn scale_dyn(&self, scale: Vector, _num_subdivisions: u32) -> Option<Box<dyn Shape>> {
        let radii = self.radii * scale.abs();
        (radii.min_element() > 0.0).then(|| Box::new(Ellipsoid::new(radii)) as Box<dyn Shape>)
    }

    /// `m = ρ 4π abc/3`, `I_xx = m (b² + c²)/5` and so on.
    fn mass_properties(&self, density: Real) -> MassProperties {
        let r = self.radii;
        let mass = density * 4.0 / 3.0 * std::f64::consts::PI * r.x * r.y * r.z;
        let r2 = r * r;
        let inertia = Vector::new(r2.y + r2.z, r2.x + r2.z, r2.x + r2.y) * (mass / 5.0);
        MassProperties::new(Vector::ZERO, mass, inertia)
    }

    fn shape_type(&self) -> ShapeType {
        ShapeType::Custom
    }

    fn as_typed_shape(&self) -> TypedShape<'_> {
        TypedShape::Custom(self)
    }

    fn ccd_thickness(&self) -> Real {
        self.radii.min_element()
    }

    fn ccd_angular_thickness(&self) -> Real {
        std::f64::consts::PI
    }

    fn is_convex(&self) -> bool {
        true
    }

    fn as_support_map(&self) -> Option<&dyn SupportMap> {
        Some(self as &dyn SupportMap)
    }

    fn as_polygonal_feature_map(&self) -> Option<(&dyn PolygonalFeatureMap, Real)> {
        Some((self as &dyn PolygonalFeatureMap, 0.0))
    }

    fn feature_normal_at_point(
        &self,
        _: parry3d_f64::shape::SubShapeId,
        _: FeatureId,
        point: Vector,
    ) -> Option<Vector> {
        Some(self.normal_at(point))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> Ellipsoid {
        Ellipsoid::new(Vector::new(0.3, 0.2, 0.1))
    }

    #[test]
    fn the_support_point_is_on_the_surface_with_its_normal_along_the_direction() {
        let e = shape();
        for dir in [
            Vector::new(1.0, 0.0, 0.0),
            Vector::new(0.3, -0.7, 0.2),
            Vector::new(-1.0, 2.0, 3.0),
        ] {
            let p = e.support(dir);
            assert!((e.level(p) - 1.0).abs() < 1e-14);
            let n = e.normal_at(p);
            assert!((n - dir.normalize()).length() < 1e-14, "{n:?}");
        }
    }

    #[test]
    fn the_closest_point_is_on_the_surface_and_the_offset_along_its_normal() {
        let e = shape();
        for p in [
            Vector::new(1.0, 0.5, -0.4),
            Vector::new(0.05, 0.01, 0.02),
            Vector::new(0.0, 0.0, 0.5),
            Vector::new(0.1, 0.05, 0.0),
            Vector::new(0.29, 0.0, 0.0),
            Vector::new(0.01, 0.0, 0.0),
            Vector::new(0.2, -0.1, 1e-16),
            Vector::ZERO,
            Vector::new(0.0, 0.0, -0.05),
        ] {
            let x = e.closest_surface_point(p);
            assert!((e.level(x) - 1.0).abs() < 1e-12, "{p:?}: {x:?}");
            // p − x is normal to the surface at x.
            let d = p - x;
            let n = e.normal_at(x);
            assert!((d - n * d.dot(n)).length() < 1e-9, "{p:?}: {x:?}");
            // And no sampled surface point is closer.
            let best = (0..2000)
                .map(|i| {
                    let (u, v) = (i as f64 * 0.61803 % 1.0, i as f64 / 2000.0);
                    let dir = Vector::new(
                        (2.0 * v - 1.0).acos().sin() * (std::f64::consts::TAU * u).cos(),
                        (2.0 * v - 1.0).acos().sin() * (std::f64::consts::TAU * u).sin(),
                        2.0 * v - 1.0,
                    );
                    (e.support(dir) - p).length()
                })
                .fold(f64::INFINITY, f64::min);
            assert!(d.length() <= best + 1e-12, "{p:?}: {} > {best}", d.length());
        }
    }

    #[test]
    fn rays_meet_the_surface_where_the_quadric_says() {
        let e = shape();
        let ray = Ray::new(Vector::new(-1.0, 0.0, 0.0), Vector::X);
        let hit = e.cast_local_ray_and_get_normal(&ray, 10.0, true).unwrap();
        assert!((hit.time_of_impact - 0.7).abs() < 1e-14);
        assert!((hit.normal - (-Vector::X)).length() < 1e-14);
        // From inside, hollow: the far side; solid: at once.
        let inner = Ray::new(Vector::ZERO, Vector::new(0.0, 0.0, 2.0));
        let hit = e
            .cast_local_ray_and_get_normal(&inner, 10.0, false)
            .unwrap();
        assert!((hit.time_of_impact - 0.05).abs() < 1e-14);
        assert_eq!(e.cast_ray(&Pose::IDENTITY, &inner, 10.0, true), Some(0.0));
        // A miss, and a hit beyond the limit.
        let miss = Ray::new(Vector::new(-1.0, 0.25, 0.0), Vector::X);
        assert!(e.cast_local_ray(&miss, 10.0, true).is_none());
        assert!(e.cast_local_ray(&ray, 0.5, true).is_none());
    }

    #[test]
    fn mass_and_bounds_are_the_ellipsoids() {
        let e = shape();
        let m = e.mass_properties(1000.0);
        let volume = 4.0 / 3.0 * std::f64::consts::PI * 0.3 * 0.2 * 0.1;
        assert!((m.mass() - 1000.0 * volume).abs() < 1e-9);
        let pose = Pose::rotation(Vector::new(0.0, 0.0, std::f64::consts::FRAC_PI_2));
        let aabb = e.compute_aabb(&pose);
        // Turned a quarter about z: x extent 0.2, y extent 0.3.
        assert!(
            (aabb.maxs - Vector::new(0.2, 0.3, 0.1)).length() < 1e-12,
            "{aabb:?}"
        );
    }
}
