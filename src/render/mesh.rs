//! Triangles of the shapes the renderer draws, in the shape's frame:
//! `[x, y, z, nx, ny, nz]` per vertex, three vertices per triangle.

use crate::math::Vec3;
use crate::model::{HeightField, Shape, Visual};

/// A vertex: position and unit normal.
pub(super) type Vertex = [f32; 6];

/// Slices around an axis and stacks from pole to pole of round shapes.
const SLICES: usize = 32;
const STACKS: usize = 16;

fn vertex(p: Vec3, n: Vec3) -> Vertex {
    let n = n.try_normalize(1e-300).unwrap_or(Vec3::z());
    [
        p.x as f32, p.y as f32, p.z as f32, n.x as f32, n.y as f32, n.z as f32,
    ]
}

/// The triangles of `shape`; `None` for a shape with nothing to draw (a
/// degenerate hull).
pub(super) fn triangles(shape: &Shape) -> Option<Vec<Vertex>> {
    let out = match shape {
        Shape::Ball { radius } => round(*radius, 0.0),
        Shape::Capsule {
            half_length,
            radius,
        } => round(*radius, *half_length),
        Shape::Cylinder {
            half_length,
            radius,
        } => cylinder(*radius, *half_length),
        Shape::Cuboid { half_extents } => cuboid(half_extents),
        Shape::Ellipsoid { radii } => ellipsoid(radii),
        Shape::ConvexMesh { points } => hull(points)?,
        Shape::HalfSpace { normal } => plane(normal, Visual::PLANE_HALF_SIZE),
        Shape::HeightField(field) => height_field(field),
    };
    (!out.is_empty()).then_some(out)
}

/// The triangles of a mesh file ([`crate::model::mesh::VisualMesh`]),
/// flat-shaded (drawn from both sides by the renderer: files do not always
/// wind their triangles one way); `None` when every triangle is degenerate.
pub(super) fn file_mesh(m: &crate::model::mesh::VisualMesh) -> Option<Vec<Vertex>> {
    let mut out = Vec::with_capacity(3 * m.triangles.len());
    for t in &m.triangles {
        let [a, b, c] = t.map(|k| {
            let p = m.vertices[k as usize];
            Vec3::new(p[0] as f64, p[1] as f64, p[2] as f64)
        });
        let n = (b - a).cross(&(c - a));
        if !(n.norm() > 0.0) {
            continue;
        }
        out.extend([vertex(a, n), vertex(b, n), vertex(c, n)]);
    }
    (!out.is_empty()).then_some(out)
}

/// A sphere of `radius` cut at its equator, the halves `half` above and
/// below it along z and joined by a cylinder (a capsule; `half = 0`: a ball).
fn round(radius: f64, half: f64) -> Vec<Vertex> {
    let point = |stack: usize, slice: usize| {
        // Polar angle from +z; the upper half shifted up, the lower down.
        let theta = std::f64::consts::PI * stack as f64 / STACKS as f64;
        let phi = 2.0 * std::f64::consts::PI * slice as f64 / SLICES as f64;
        let n = Vec3::new(
            theta.sin() * phi.cos(),
            theta.sin() * phi.sin(),
            theta.cos(),
        );
        let shift = if stack <= STACKS / 2 { half } else { -half };
        (n * radius + Vec3::new(0.0, 0.0, shift), n)
    };
    let mut out = Vec::new();
    for i in 0..STACKS {
        for j in 0..SLICES {
            let (a, b, c, d) = (
                point(i, j),
                point(i + 1, j),
                point(i + 1, j + 1),
                point(i, j + 1),
            );
            quad(&mut out, a, b, c, d);
        }
    }
    if half > 0.0 {
        // The cylinder between the two halves (the equator's two copies).
        let e = STACKS / 2;
        for j in 0..SLICES {
            let (a, d) = (point(e, j), point(e, j + 1));
            let shift = Vec3::new(0.0, 0.0, -2.0 * half);
            quad(&mut out, a, (a.0 + shift, a.1), (d.0 + shift, d.1), d);
        }
    }
    out
}

/// A unit ball's triangles stretched by `radii` along x, y, z, each normal
/// the surface's (the gradient `x/r²`).
fn ellipsoid(radii: &Vec3) -> Vec<Vertex> {
    let mut out = round(1.0, 0.0);
    for v in &mut out {
        let p = Vec3::new(v[0] as f64, v[1] as f64, v[2] as f64).component_mul(radii);
        let n = p.component_div(&radii.component_mul(radii)).normalize();
        *v = vertex(p, n);
    }
    out
}

/// Two triangles of the quad `a b c d` (counter-clockwise seen from outside).
fn quad(out: &mut Vec<Vertex>, a: (Vec3, Vec3), b: (Vec3, Vec3), c: (Vec3, Vec3), d: (Vec3, Vec3)) {
    for (p, n) in [a, b, c, a, c, d] {
        out.push(vertex(p, n));
    }
}

fn cylinder(radius: f64, half: f64) -> Vec<Vertex> {
    let rim = |j: usize| {
        let phi = 2.0 * std::f64::consts::PI * j as f64 / SLICES as f64;
        Vec3::new(phi.cos(), phi.sin(), 0.0)
    };
    let mut out = Vec::new();
    let (up, down) = (Vec3::new(0.0, 0.0, half), Vec3::new(0.0, 0.0, -half));
    for j in 0..SLICES {
        let (n0, n1) = (rim(j), rim(j + 1));
        let (p0, p1) = (n0 * radius, n1 * radius);
        quad(
            &mut out,
            (p0 + up, n0),
            (p0 + down, n0),
            (p1 + down, n1),
            (p1 + up, n1),
        );
        for (p, n) in [(up, Vec3::z()), (p0 + up, Vec3::z()), (p1 + up, Vec3::z())] {
            out.push(vertex(p, n));
        }
        for (p, n) in [
            (down, -Vec3::z()),
            (p1 + down, -Vec3::z()),
            (p0 + down, -Vec3::z()),
        ] {
            out.push(vertex(p, n));
        }
    }
    out
}

fn cuboid(h: &Vec3) -> Vec<Vertex> {
    let mut out = Vec::new();
    for axis in 0..3 {
        for sign in [1.0, -1.0] {
            let mut n = Vec3::zeros();
            n[axis] = sign;
            // Two in-face directions with u × v = n.
            let mut u = Vec3::zeros();
            u[(axis + 1) % 3] = 1.0;
            let v = n.cross(&u);
            let (c, u, v) = (n.component_mul(h), u.component_mul(h), v.component_mul(h));
            quad(
                &mut out,
                (c - u - v, n),
                (c + u - v, n),
                (c + u + v, n),
                (c - u + v, n),
            );
        }
    }
    out
}

/// The convex hull of `points`, flat-shaded.
fn hull(points: &[Vec3]) -> Option<Vec<Vertex>> {
    use parry3d_f64::math::Vector;
    let pts: Vec<Vector> = points.iter().map(|p| Vector::new(p.x, p.y, p.z)).collect();
    let (vertices, faces) = parry3d_f64::transformation::try_convex_hull(&pts).ok()?;
    let v = |k: u32| {
        let p = vertices[k as usize];
        Vec3::new(p.x, p.y, p.z)
    };
    let centre = vertices
        .iter()
        .fold(Vec3::zeros(), |s, p| s + Vec3::new(p.x, p.y, p.z))
        / vertices.len().max(1) as f64;
    let mut out = Vec::new();
    for [a, b, c] in faces {
        let (a, mut b, mut c) = (v(a), v(b), v(c));
        // Outwards, whatever order the hull gives.
        if (b - a).cross(&(c - a)).dot(&(a - centre)) < 0.0 {
            std::mem::swap(&mut b, &mut c);
        }
        let n = (b - a).cross(&(c - a));
        for p in [a, b, c] {
            out.push(vertex(p, n));
        }
    }
    Some(out)
}

/// A square of half-side `half` through the origin, facing `normal`.
fn plane(normal: &Vec3, half: f64) -> Vec<Vertex> {
    let n = normal.try_normalize(1e-300).unwrap_or(Vec3::z());
    let helper = if n.x.abs() < 0.9 {
        Vec3::x()
    } else {
        Vec3::y()
    };
    let u = n.cross(&helper).normalize() * half;
    let v = n.cross(&u);
    let mut out = Vec::new();
    quad(&mut out, (-u - v, n), (u - v, n), (u + v, n), (-u + v, n));
    out
}

/// The field's surface as the collision detection sees it: each cell's two
/// triangles, split along the diagonal from `(i + 1, j)` to `(i, j + 1)`.
fn height_field(field: &HeightField) -> Vec<Vertex> {
    let (cx, cy) = field.cells();
    let [sx, sy] = field.cell_size();
    let p = |i: usize, j: usize| {
        Vec3::new(
            -field.size[0] / 2.0 + i as f64 * sx,
            -field.size[1] / 2.0 + j as f64 * sy,
            field.heights[(i, j)],
        )
    };
    let mut out = Vec::new();
    for i in 0..cx {
        for j in 0..cy {
            for [a, b, c] in [
                [p(i, j), p(i + 1, j), p(i, j + 1)],
                [p(i + 1, j), p(i + 1, j + 1), p(i, j + 1)],
            ] {
                let n = (b - a).cross(&(c - a));
                for q in [a, b, c] {
                    out.push(vertex(q, n));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every triangle faces the way its vertices' normals say (so that
    /// back faces can be culled), and every vertex lies on the shape.
    #[test]
    fn triangles_face_outwards_and_lie_on_their_shapes() {
        let shapes = [
            (
                Shape::Ball { radius: 0.5 },
                Box::new(|p: Vec3| p.norm() - 0.5) as Box<dyn Fn(Vec3) -> f64>,
            ),
            (
                Shape::Capsule {
                    half_length: 0.3,
                    radius: 0.2,
                },
                Box::new(|p: Vec3| {
                    let z = p.z.clamp(-0.3, 0.3);
                    (p - Vec3::new(0.0, 0.0, z)).norm() - 0.2
                }),
            ),
            (
                Shape::Cuboid {
                    half_extents: Vec3::new(0.1, 0.2, 0.3),
                },
                Box::new(|p: Vec3| (p.x.abs() - 0.1).max(p.y.abs() - 0.2).max(p.z.abs() - 0.3)),
            ),
            (
                Shape::Cylinder {
                    half_length: 0.25,
                    radius: 0.15,
                },
                Box::new(|p: Vec3| (p.xy().norm() - 0.15).max(p.z.abs() - 0.25)),
            ),
        ];
        for (shape, distance) in &shapes {
            let t = triangles(shape).unwrap();
            assert_eq!(t.len() % 3, 0);
            for tri in t.chunks(3) {
                let p = |k: usize| Vec3::new(tri[k][0] as f64, tri[k][1] as f64, tri[k][2] as f64);
                let n = Vec3::new(tri[0][3] as f64, tri[0][4] as f64, tri[0][5] as f64);
                for k in 0..3 {
                    assert!(distance(p(k)).abs() < 1e-6, "{shape:?}: {:?}", p(k));
                }
                let face = (p(1) - p(0)).cross(&(p(2) - p(0)));
                // (Degenerate slivers at the poles have no orientation.)
                if face.norm() > 1e-9 {
                    assert!(face.dot(&n) > 0.0, "{shape:?}: a triangle faces inwards");
                }
            }
        }
    }
}
