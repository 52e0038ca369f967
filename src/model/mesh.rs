//! Collision meshes of loaded models: resolving mesh file names, reading
//! STL and OBJ files, and replacing each mesh by its convex hull.
//!
//! **One convex hull per mesh file.** A robot's link meshes are not convex;
//! the narrow phase works on convex shapes, and a link's hull is what MuJoCo
//! also collides by default (its `<mesh>` geoms are hulled). A hull fills the
//! concavities of a link (a gripper's jaws, a hollow shell), which makes
//! links touch a little early there but never lets them pass through each
//! other; feet, shins, arm segments and bases, the parts that touch the
//! ground or each other in practice, are close to convex. A convex
//! decomposition is not computed.
//!
//! Formats: binary and ASCII STL (`.stl`), Wavefront OBJ (`.obj`, all its
//! objects together; materials are not read). Others (`.dae`, `.ply`, …) are
//! an error naming the file.
//!
//! Hulls are computed once per file and shared: [`MeshCache`] keeps them by
//! canonical path; a scaled instance scales the hull's vertices (the hull of
//! linearly mapped points is the mapped hull, mirrors included), and the model
//! builder shares the collider between instances with identical vertices.

use super::Shape;
use crate::math::Vec3;
use parry3d_f64::math::Vector as PVec;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Finds the file a mesh reference in a model file names.
///
/// - `package://NAME/rest` (or `package:///NAME/rest`): `DIR/NAME/rest` for each `DIR` of `package_dirs`
///   and then of the `ROS_PACKAGE_PATH` environment variable (`:`-separated),
///   or `DIR/rest` when `DIR` itself is named `NAME`; failing that, the
///   nearest ancestor of the model's directory named `NAME` (or holding a
///   directory `NAME`), which finds the meshes of a package installed as a
///   whole (example-robot-data, ROS share directories).
/// - `file:///abs/path` and absolute paths: as they are.
/// - Anything else is relative to `model_dir`, the model file's directory.
///
/// The error lists the places searched.
pub fn resolve_mesh_path(
    uri: &str,
    model_dir: &Path,
    package_dirs: &[PathBuf],
) -> Result<PathBuf, String> {
    if let Some(rest) = uri.strip_prefix("package://") {
        // `package:///NAME/...` (an empty authority, as talos_full_v2.urdf
        // writes it) names the same file as `package://NAME/...`, as
        // Pinocchio and ROS read it.
        let rest = rest.strip_prefix('/').unwrap_or(rest);
        let (package, rel) = rest.split_once('/').unwrap_or((rest, ""));
        if package.is_empty() || rel.is_empty() {
            return Err(format!(
                "`{uri}`: a package URI is `package://NAME/path/to/file`"
            ));
        }
        let mut dirs: Vec<PathBuf> = package_dirs.to_vec();
        if let Some(env) = std::env::var_os("ROS_PACKAGE_PATH") {
            dirs.extend(std::env::split_paths(&env));
        }
        let mut tried = Vec::new();
        for dir in &dirs {
            let mut candidates = vec![dir.join(package).join(rel)];
            if dir.file_name().is_some_and(|n| n == package) {
                candidates.push(dir.join(rel));
            }
            for c in candidates {
                if c.is_file() {
                    return Ok(c);
                }
                tried.push(c);
            }
        }
        let model_dir = std::fs::canonicalize(model_dir).unwrap_or_else(|_| model_dir.into());
        for ancestor in model_dir.ancestors() {
            let c = if ancestor.file_name().is_some_and(|n| n == package) {
                ancestor.join(rel)
            } else {
                ancestor.join(package).join(rel)
            };
            if c.is_file() {
                return Ok(c);
            }
        }
        tried.push(model_dir.join("…").join(package).join(rel));
        let tried: Vec<String> = tried.iter().map(|p| p.display().to_string()).collect();
        return Err(format!(
            "mesh `{uri}` not found; searched {} (add the directory holding package `{package}` to the package path)",
            tried.join(", ")
        ));
    }
    let path = match uri.strip_prefix("file://") {
        Some(abs) => PathBuf::from(abs),
        None if Path::new(uri).is_absolute() => PathBuf::from(uri),
        None => model_dir.join(uri),
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "mesh `{uri}` not found (looked at {})",
            path.display()
        ))
    }
}

/// The triangles a visual draws as ([`super::Visual::mesh`]): vertices
/// (single precision, as drawn) and the triangles' vertex indices.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct VisualMesh {
    pub vertices: Vec<[f32; 3]>,
    pub triangles: Vec<[u32; 3]>,
}

impl VisualMesh {
    /// `vertices` scaled by `scale` (per axis) and `triangles`; `None`
    /// when a triangle refers to a vertex that does not exist or nothing
    /// is left to draw.
    pub fn new(vertices: &[Vec3], triangles: &[[usize; 3]], scale: Vec3) -> Option<VisualMesh> {
        let n = vertices.len();
        if triangles.is_empty()
            || triangles.iter().flatten().any(|&k| k >= n)
            || n > u32::MAX as usize
        {
            return None;
        }
        Some(VisualMesh {
            vertices: vertices
                .iter()
                .map(|p| {
                    let p = p.component_mul(&scale);
                    [p.x as f32, p.y as f32, p.z as f32]
                })
                .collect(),
            triangles: triangles.iter().map(|t| t.map(|k| k as u32)).collect(),
        })
    }
}

/// A triangle mesh as read from a file: vertices and the triangles'
/// vertex indices, in the file's winding.
#[derive(Clone, Debug, Default)]
pub struct TriangleMesh {
    pub vertices: Vec<Vec3>,
    pub triangles: Vec<[usize; 3]>,
}

/// The triangles of a binary STL file: its size is that of the triangle
/// count its header gives (84 bytes, then 50 per triangle). Taken as
/// binary whatever its first bytes: an 80-byte header may begin with
/// `solid` (robosuite's Jaco meshes do), which `stl_io` reads as ASCII and
/// refuses. `None` where the size does not fit (an ASCII file).
fn binary_stl(bytes: &[u8]) -> Option<Vec<stl_io::Triangle>> {
    let count = u32::from_le_bytes(bytes.get(80..84)?.try_into().ok()?) as usize;
    if count.checked_mul(50).and_then(|n| n.checked_add(84)) != Some(bytes.len()) {
        return None;
    }
    let f = |at: usize| f32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    let v = |at: usize| stl_io::Vector::new([f(at), f(at + 4), f(at + 8)]);
    Some(
        (0..count)
            .map(|k| {
                let at = 84 + 50 * k;
                stl_io::Triangle {
                    normal: v(at),
                    vertices: [v(at + 12), v(at + 24), v(at + 36)],
                }
            })
            .collect(),
    )
}

/// A binary STL's triangles, for `stl_io`'s merging of equal vertices.
struct BinaryTriangles(std::vec::IntoIter<stl_io::Triangle>);

impl Iterator for BinaryTriangles {
    type Item = std::io::Result<stl_io::Triangle>;
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(Ok)
    }
}

impl stl_io::TriangleIterator for BinaryTriangles {}

/// The vertices and triangles of a mesh file (STL, binary or ASCII, or
/// OBJ; OBJ polygons are fanned into triangles), in the file's units.
pub fn read_mesh(path: &Path) -> Result<TriangleMesh, String> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    let open = || {
        std::fs::File::open(path)
            .map(std::io::BufReader::new)
            .map_err(|e| format!("{}: {e}", path.display()))
    };
    let mesh = match ext.as_str() {
        "stl" => {
            let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let invalid =
                |e: std::io::Error| format!("{}: not a valid STL file: {e}", path.display());
            let mesh = match binary_stl(&bytes) {
                Some(triangles) => stl_io::TriangleIterator::as_indexed_triangles(
                    &mut BinaryTriangles(triangles.into_iter()),
                )
                .map_err(invalid)?,
                None => stl_io::read_stl(&mut std::io::Cursor::new(bytes)).map_err(invalid)?,
            };
            TriangleMesh {
                vertices: mesh
                    .vertices
                    .iter()
                    .map(|v| Vec3::new(v[0] as f64, v[1] as f64, v[2] as f64))
                    .collect(),
                triangles: mesh.faces.iter().map(|f| f.vertices).collect(),
            }
        }
        "obj" => {
            let (models, _) = tobj::load_obj_buf(
                &mut open()?,
                &tobj::LoadOptions {
                    triangulate: true,
                    ..Default::default()
                },
                // Materials play no part in collision.
                |_| Err(tobj::LoadError::OpenFileFailed),
            )
            .map_err(|e| format!("{}: not a valid OBJ file: {e}", path.display()))?;
            let mut mesh = TriangleMesh::default();
            for m in &models {
                let base = mesh.vertices.len();
                mesh.vertices.extend(
                    m.mesh
                        .positions
                        .chunks_exact(3)
                        .map(|p| Vec3::new(p[0] as f64, p[1] as f64, p[2] as f64)),
                );
                mesh.triangles
                    .extend(m.mesh.indices.chunks_exact(3).map(|t| {
                        [
                            base + t[0] as usize,
                            base + t[1] as usize,
                            base + t[2] as usize,
                        ]
                    }));
            }
            mesh
        }
        other => {
            return Err(format!(
                "{}: mesh format `.{other}` is not supported (STL and OBJ are)",
                path.display()
            ));
        }
    };
    if let Some(bad) = mesh
        .vertices
        .iter()
        .position(|v| !v.iter().all(|x| x.is_finite()))
    {
        return Err(format!("{}: vertex {bad} is not finite", path.display()));
    }
    let n = mesh.vertices.len();
    if let Some(bad) = mesh
        .triangles
        .iter()
        .position(|t| t.iter().any(|&k| k >= n))
    {
        return Err(format!(
            "{}: triangle {bad} names a vertex beyond the {n} vertices",
            path.display()
        ));
    }
    Ok(mesh)
}

/// The vertices of a mesh file (STL or OBJ), in the file's units.
pub fn read_mesh_vertices(path: &Path) -> Result<Vec<Vec3>, String> {
    read_mesh(path).map(|m| m.vertices)
}

/// Whether `points` span no volume: no convex hull, or one whose volume
/// is below 1e-9 of its bounding box's largest side cubed (a flat or
/// degenerate mesh: a screen, a decal).
pub fn is_flat(points: &[Vec3]) -> bool {
    matches!(hull_and_volume(points), Ok((_, None)))
}

/// The convex hull of `points` and its volume (`None`: flat or degenerate).
fn hull_and_volume(points: &[Vec3]) -> Result<(Vec<Vec3>, Option<f64>), String> {
    let pts: Vec<PVec> = points.iter().map(|p| PVec::new(p.x, p.y, p.z)).collect();
    if pts.is_empty() {
        return Err("the mesh has no vertices".into());
    }
    let Ok((hull, triangles)) = parry3d_f64::transformation::try_convex_hull(&pts) else {
        return Ok((Vec::new(), None));
    };
    let hull: Vec<Vec3> = hull.iter().map(|p| Vec3::new(p.x, p.y, p.z)).collect();
    // Volume by the divergence theorem, against the bounding box's.
    let volume: f64 = triangles
        .iter()
        .map(|t| {
            let [a, b, c] = t.map(|i| hull[i as usize]);
            a.dot(&b.cross(&c)) / 6.0
        })
        .sum();
    let (mut lo, mut hi) = (Vec3::repeat(f64::INFINITY), Vec3::repeat(f64::NEG_INFINITY));
    for p in &hull {
        lo = lo.inf(p);
        hi = hi.sup(p);
    }
    let extent = (hi - lo).max();
    let solid = hull.len() >= 4 && volume.abs() > 1e-9 * extent.powi(3);
    Ok((hull, solid.then_some(volume)))
}

/// The vertices of the convex hull of `points`; an error for a flat or
/// degenerate hull (see [`is_flat`]).
pub fn convex_hull_vertices(points: &[Vec3]) -> Result<Vec<Vec3>, String> {
    match hull_and_volume(points)? {
        (hull, Some(_)) => Ok(hull),
        (hull, None) => Err(format!(
            "the mesh is flat or degenerate (convex hull of {} of its {} vertices spans no volume)",
            hull.len(),
            points.len()
        )),
    }
}

/// Mesh files, read once per file, and their convex hulls, computed once per file.
#[derive(Default)]
pub struct MeshCache {
    hulls: HashMap<PathBuf, Arc<Vec<Vec3>>>,
    meshes: HashMap<PathBuf, Arc<TriangleMesh>>,
}

impl MeshCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// The convex hull of the mesh at `path`, scaled per axis by `scale`
    /// (negative entries mirror), as a [`Shape::ConvexMesh`].
    pub fn convex_hull(&mut self, path: &Path, scale: Vec3) -> Result<Shape, String> {
        if !scale.iter().all(|s| s.is_finite() && *s != 0.0) {
            return Err(format!(
                "mesh scale {:?} must be finite and non-zero",
                scale.as_slice()
            ));
        }
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.into());
        let hull = match self.hulls.get(&key) {
            Some(h) => h.clone(),
            None => {
                let hull = convex_hull_vertices(&self.mesh(path)?.vertices)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let hull = Arc::new(hull);
                self.hulls.insert(key, hull.clone());
                hull
            }
        };
        Ok(Shape::ConvexMesh {
            points: hull.iter().map(|p| p.component_mul(&scale)).collect(),
        })
    }

    /// The mesh file at `path`, unscaled.
    pub fn mesh(&mut self, path: &Path) -> Result<Arc<TriangleMesh>, String> {
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.into());
        if let Some(m) = self.meshes.get(&key) {
            return Ok(m.clone());
        }
        let m = Arc::new(read_mesh(path)?);
        self.meshes.insert(key, m.clone());
        Ok(m)
    }

    /// Number of distinct mesh files hulled so far.
    pub fn hull_count(&self) -> usize {
        self.hulls.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tetrahedron as a binary STL whose header begins with `solid`,
    /// and as ASCII: both read, with the same four vertices.
    #[test]
    fn a_binary_stl_whose_header_says_solid_is_read_as_binary() {
        let p = [
            [0.0f32, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.0, 0.0, 1.0],
        ];
        let faces = [[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]];
        let mut bin = vec![b' '; 80];
        bin[..12].copy_from_slice(b"solid jaco \n");
        bin.extend(4u32.to_le_bytes());
        for f in faces {
            bin.extend([0.0f32; 3].iter().flat_map(|x| x.to_le_bytes()));
            for i in f {
                bin.extend(p[i].iter().flat_map(|x| x.to_le_bytes()));
            }
            bin.extend([0u8, 0]);
        }
        let mut ascii = String::from("solid t\n");
        for f in faces {
            ascii.push_str("facet normal 0 0 0\nouter loop\n");
            for i in f {
                ascii.push_str(&format!("vertex {} {} {}\n", p[i][0], p[i][1], p[i][2]));
            }
            ascii.push_str("endloop\nendfacet\n");
        }
        ascii.push_str("endsolid t\n");
        let dir = std::env::temp_dir().join(format!("moreau-stl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (b, a) = (dir.join("bin.stl"), dir.join("ascii.stl"));
        std::fs::write(&b, &bin).unwrap();
        std::fs::write(&a, ascii).unwrap();
        // stl_io alone takes the binary file for ASCII and refuses it.
        assert!(stl_io::read_stl(&mut std::io::Cursor::new(&bin)).is_err());
        let (mb, ma) = (read_mesh(&b).unwrap(), read_mesh(&a).unwrap());
        assert_eq!((mb.vertices.len(), mb.triangles.len()), (4, 4));
        assert_eq!(mb.vertices, ma.vertices);
        assert_eq!(mb.triangles, ma.triangles);
        // A binary file cut short is not taken as binary, and is refused.
        std::fs::write(&b, &bin[..bin.len() - 10]).unwrap();
        assert!(read_mesh(&b).unwrap_err().contains("not a valid STL"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
