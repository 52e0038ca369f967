//! The mass properties of a mesh geom as MuJoCo's compiler computes them,
//! chosen by the mesh asset's `inertia` attribute:
//!
//! - `legacy` (MuJoCo's default): the mesh's own triangles, each the base
//!   of a tetrahedron whose apex is the area-weighted centre of the
//!   triangles, with the **absolute** value of each tetrahedron's volume.
//!   For a closed, consistently wound, star-shaped mesh this is the solid's
//!   volume; where the mesh folds back on itself (concave links) volumes
//!   that should cancel add up, so the mass is larger than the solid's. The
//!   centre of mass comes from that first decomposition; the second moments
//!   from a second one, with the apex at that centre of mass (again with
//!   absolute volumes), and the mass from the second decomposition's volume
//!   — the exact recipe, so that masses match MuJoCo's to rounding.
//! - `exact`: the same sums with signed volumes: the solid's exact mass
//!   properties, for a closed, consistently wound mesh. A mesh with two
//!   triangles sharing a directed edge (inconsistent winding), or with a
//!   negative volume (wound inwards), is refused, as MuJoCo refuses it.
//! - `convex`: the mesh's convex hull (what moreau collides with).
//! - `shell`: the mass on the surface (density per unit area): triangle
//!   second moments `A/12 (Σ vvᵀ + s sᵀ)`, `s` the sum of the corners.
//!
//! A triangle whose cross product is below 1e-15 counts as area 0, and a
//! mesh whose volume (area for `shell`) is below 1e-15 is refused, as in
//! MuJoCo.

use crate::math::{Mat3, Vec3};

/// `<mesh inertia="...">`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum MeshInertia {
    Legacy,
    Exact,
    Convex,
    Shell,
}

impl MeshInertia {
    pub(super) fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "legacy" => Self::Legacy,
            "exact" => Self::Exact,
            "convex" => Self::Convex,
            "shell" => Self::Shell,
            _ => return None,
        })
    }
}

/// MuJoCo's `mjMINVAL`.
const TINY: f64 = 1e-15;

/// Area, unit normal (zero for a degenerate triangle) and centroid.
fn triangle(a: &Vec3, b: &Vec3, c: &Vec3) -> (f64, Vec3, Vec3) {
    let center = (a + b + c) / 3.0;
    let cross = (b - a).cross(&(c - a));
    let len = cross.norm();
    if len < TINY {
        return (0.0, Vec3::zeros(), center);
    }
    (len / 2.0, cross / len, center)
}

/// Volume (area for `shell`), centre of mass and inertia about it per unit
/// density of the triangles `tris` over `v`, by `mode` (not `Convex`: the
/// caller hulls the mesh). The error says why a mesh has no valid inertia.
pub(super) fn mesh_mass_properties(
    v: &[Vec3],
    tris: &[[usize; 3]],
    mode: MeshInertia,
) -> Result<(f64, Vec3, Mat3), String> {
    let corners = |t: &[usize; 3]| (v[t[0]], v[t[1]], v[t[2]]);
    if mode == MeshInertia::Exact {
        let mut edges: Vec<(usize, usize)> = Vec::with_capacity(3 * tris.len());
        for t in tris {
            let (a, b, c) = corners(t);
            if triangle(&a, &b, &c).0 > TINY.sqrt() {
                edges.extend([(t[0], t[1]), (t[1], t[2]), (t[2], t[0])]);
            }
        }
        edges.sort_unstable();
        if let Some(w) = edges.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!(
                "inertia=\"exact\" needs consistently wound triangles, but two triangles run along the edge from vertex {} to vertex {}",
                w[0].0, w[0].1
            ));
        }
    }
    // The area-weighted centre of the triangles.
    let (mut area, mut facecen) = (0.0, Vec3::zeros());
    for t in tris {
        let (a, b, c) = corners(t);
        let (ar, _, cen) = triangle(&a, &b, &c);
        area += ar;
        facecen += cen * ar;
    }
    if area < TINY {
        return Err(format!("the mesh's surface area is too small ({area:e})"));
    }
    facecen /= area;
    let signed = |x: f64| {
        if mode == MeshInertia::Legacy {
            x.abs()
        } else {
            x
        }
    };
    let com = if mode == MeshInertia::Shell {
        facecen
    } else {
        let (mut volume, mut first) = (0.0, Vec3::zeros());
        for t in tris {
            let (a, b, c) = corners(t);
            let (ar, n, cen) = triangle(&a, &b, &c);
            let vol = signed((cen - facecen).dot(&n) * ar / 3.0);
            volume += vol;
            first += (cen * 0.75 + facecen * 0.25) * vol;
        }
        if volume < TINY {
            return Err(if volume < 0.0 {
                format!(
                    "the mesh's volume is negative ({volume:e}): its triangles are wound inwards"
                )
            } else {
                format!(
                    "the mesh's volume is too small ({volume:e}); inertia=\"shell\" puts the mass on its surface"
                )
            });
        }
        first / volume
    };
    // Second moments about the centre of mass.
    let (mut total, mut second) = (0.0, Mat3::zeros());
    let divisor = if mode == MeshInertia::Shell {
        12.0
    } else {
        20.0
    };
    for t in tris {
        let (a, b, c) = corners(t);
        let (d, e, f) = (a - com, b - com, c - com);
        let (ar, n, cen) = triangle(&d, &e, &f);
        let w = if mode == MeshInertia::Shell {
            ar
        } else {
            signed(cen.dot(&n) * ar / 3.0)
        };
        total += w;
        let s = d + e + f;
        second += (d * d.transpose() + e * e.transpose() + f * f.transpose() + s * s.transpose())
            * (w / divisor);
    }
    if !(total >= TINY && total.is_finite()) {
        return Err(format!("the mesh's volume is too small ({total:e})"));
    }
    let inertia = Mat3::identity() * second.trace() - second;
    Ok((total, com, inertia))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The unit cube [0, 1]³ as 12 outward-wound triangles.
    fn cube() -> (Vec<Vec3>, Vec<[usize; 3]>) {
        let v: Vec<Vec3> = (0..8)
            .map(|k| Vec3::new((k & 1) as f64, ((k >> 1) & 1) as f64, ((k >> 2) & 1) as f64))
            .collect();
        let quads = [
            [0, 2, 3, 1], // z = 0, normal −z
            [4, 5, 7, 6], // z = 1
            [0, 1, 5, 4], // y = 0
            [2, 6, 7, 3], // y = 1
            [0, 4, 6, 2], // x = 0
            [1, 3, 7, 5], // x = 1
        ];
        let t = quads
            .iter()
            .flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]])
            .collect();
        (v, t)
    }

    #[test]
    fn a_cube_has_the_solid_cubes_mass_properties_in_every_volume_mode() {
        let (v, t) = cube();
        for mode in [MeshInertia::Legacy, MeshInertia::Exact] {
            let (vol, com, i) = mesh_mass_properties(&v, &t, mode).unwrap();
            assert!((vol - 1.0).abs() < 1e-12, "{mode:?}: {vol}");
            assert!((com - Vec3::repeat(0.5)).norm() < 1e-12);
            assert!((i - Mat3::identity() / 6.0).norm() < 1e-12, "{mode:?}: {i}");
        }
        // Shell: six unit faces; about the centre, a face normal to x has
        // I_xx = 1/6 and I_yy = 1/12 + 1/4.
        let (area, com, i) = mesh_mass_properties(&v, &t, MeshInertia::Shell).unwrap();
        assert!((area - 6.0).abs() < 1e-12);
        assert!((com - Vec3::repeat(0.5)).norm() < 1e-12);
        let expected = 2.0 * (1.0 / 6.0) + 4.0 * (1.0 / 12.0 + 0.25);
        assert!((i - Mat3::identity() * expected).norm() < 1e-12, "{i}");
    }

    #[test]
    fn exact_refuses_inconsistent_or_inward_winding_and_legacy_does_not_care() {
        let (v, mut t) = cube();
        t[0].swap(1, 2);
        let e = mesh_mass_properties(&v, &t, MeshInertia::Exact).unwrap_err();
        assert!(e.contains("consistently wound"), "{e}");
        assert!(mesh_mass_properties(&v, &t, MeshInertia::Legacy).is_ok());
        // Every triangle wound inwards: consistent, but a negative volume.
        let (v, mut t) = cube();
        for tri in &mut t {
            tri.swap(1, 2);
        }
        let e = mesh_mass_properties(&v, &t, MeshInertia::Exact).unwrap_err();
        assert!(e.contains("negative"), "{e}");
        let (vol, _, _) = mesh_mass_properties(&v, &t, MeshInertia::Legacy).unwrap();
        assert!((vol - 1.0).abs() < 1e-12);
    }
}
