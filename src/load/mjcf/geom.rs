//! Geoms: shapes, placements, materials and the mass properties they give
//! their bodies (meshes, ellipsoids).

use super::*;

/// A geom's `size` numbers, read for its type (`el` names it in errors).
struct GeomSize<'s> {
    values: Vec<f64>,
    gtype: &'s str,
    el: &'s str,
    /// Half the length of `fromto`, which replaces the size along z.
    fromto_half: Option<f64>,
}

/// A geom's shape (`None`: not collidable) and its unit-density mass
/// properties in the geom frame: volume, centre of volume, inertia.
type ShapeVolume = (Option<Shape>, f64, Vec3, Mat3);

impl<'a, 'i, 'e> Parser<'a, 'i, 'e> {
    /// A geom: its placement, shape, mass properties and collision material,
    /// each read by its own step below.
    pub(super) fn geom(
        &mut self,
        node: Node<'a, 'i>,
        body: usize,
        childclass: &str,
        frame: &SE3,
    ) -> Result<GeomRec, ModelFileError> {
        let el0 = element_name(&node, "");
        let class = self.class_of(&node, childclass, &el0)?;
        let classes = self.classes.clone();
        let get = |a: &str| lookup(&classes, &node, &class, &["geom"], a);
        let gtype = get("type").unwrap_or("sphere");
        let el = element_name(&node, &format!(" type=\"{gtype}\""));
        let values = self.geom_size(&get, &el)?;
        let (placement, fromto_half) = self.geom_placement(&get, gtype, &el)?;
        let mjcf_from_geom = frame.mul(&placement);
        let size = GeomSize {
            values,
            gtype,
            el: &el,
            fromto_half,
        };
        let shell = match get("shellinertia") {
            Some(t) => self.boolean(t, "shellinertia", &el)?,
            None => false,
        };
        // Drawn as MuJoCo's viewer draws by default: groups 0 to 2; its
        // mass counts where the group is in `inertiagrouprange`.
        let group = match get("group") {
            Some(g) => g
                .trim()
                .parse::<i64>()
                .map_err(|_| self.error(&el, format!("`group` must be an integer, got `{g}`")))?,
            None => 0,
        };
        let (lo, hi) = self.inertia_groups;
        let weighs = (lo..=hi).contains(&group);
        let material = self.geom_material(&get, &el)?;
        let paired = node
            .attribute("name")
            .is_some_and(|n| self.paired.contains(n));
        // A visual geom (both bits zero) collides only in an explicit pair.
        let visual_only = material.contype == 0 && material.conaffinity == 0 && !paired;
        let mut flat = None;
        let (shape, inertia) = match self.geom_shape(&get, &size, body, shell) {
            Ok((shape, volume, com, unit_inertia)) => {
                let inertia = self.geom_mass(&get, &el, volume, com, unit_inertia)?;
                (shape, inertia.transformed(&mjcf_from_geom))
            }
            // A flat mesh that only shows (a screen, a decal: MuJoCo takes
            // it while nothing needs its volume): drawn and seen by
            // rangefinders through its triangles; its body's inertia may
            // not come from it (`body` checks).
            Err(e) if gtype == "mesh" && visual_only => {
                let found = get("mesh").and_then(|m| self.flat_visual_mesh(m));
                let Some((points, properties)) = found else {
                    return Err(e);
                };
                let inertia = match properties {
                    Ok((volume, com, unit)) => self
                        .geom_mass(&get, &el, volume, com, unit)?
                        .transformed(&mjcf_from_geom),
                    Err(why) => {
                        flat = weighs.then(|| format!("{}; {why}", e.reason));
                        Inertia::zero()
                    }
                };
                (Some(Shape::ConvexMesh { points }), inertia)
            }
            Err(e) => return Err(e),
        };
        let name = match node.attribute("name") {
            Some(n) => {
                if !self.geom_names.insert(n.to_string()) {
                    return Err(self.error(&el, format!("duplicate geom name `{n}`")));
                }
                n.to_string()
            }
            None => String::new(),
        };
        // Its own rgba, else its material's, else grey.
        let rgba = match (get("rgba"), get("material")) {
            (Some(c), _) => self.rgba(c, &el)?,
            (None, Some(m)) => self
                .materials
                .get(m)
                .copied()
                .unwrap_or([0.5, 0.5, 0.5, 1.0]),
            (None, None) => [0.5, 0.5, 0.5, 1.0],
        };
        let look = match &shape {
            Some(s) if (0..=2).contains(&group) && rgba[3] > 0.0 => {
                let triangles = match get("mesh") {
                    Some(m) if gtype == "mesh" => self.visual_mesh(m),
                    _ => None,
                };
                Some((s.clone(), rgba, triangles))
            }
            _ => None,
        };
        let ray = shape.as_ref().filter(|_| rgba[3] > 0.0).map(|s| RaySource {
            shape: s.clone(),
            plane_half: [0, 1].map(|k| size.values.get(k).copied().unwrap_or(0.0)),
            mesh: get("mesh").filter(|_| gtype == "mesh").map(str::to_string),
        });
        let wrap = match (gtype, size.values.first()) {
            ("sphere", Some(&r)) => Some((false, r)),
            ("cylinder", Some(&r)) => Some((true, r)),
            _ => None,
        };
        Ok(GeomRec {
            look,
            name,
            mesh: gtype == "mesh",
            element: el,
            mjcf_from_geom,
            shape: if visual_only { None } else { shape },
            material,
            inertia: if weighs { inertia } else { Inertia::zero() },
            flat,
            plane: gtype == "plane",
            wrap,
            ray,
        })
    }

    /// `size`: at most 3 numbers.
    fn geom_size(
        &self,
        get: &dyn Fn(&str) -> Option<&'a str>,
        el: &str,
    ) -> Result<Vec<f64>, ModelFileError> {
        let size = match get("size") {
            Some(s) => self.list(s, "size", el)?,
            None => Vec::new(),
        };
        if size.len() > 3 {
            return Err(self.error(
                el,
                format!("`size` has at most 3 numbers, got {}", size.len()),
            ));
        }
        Ok(size)
    }

    /// Size number `k` (`what` names it), which must be given and positive.
    fn need(&self, size: &GeomSize, k: usize, what: &str) -> Result<f64, ModelFileError> {
        let n = size.values.len();
        match size.values.get(k) {
            None => Err(self.error(
                size.el,
                format!(
                    "a {} needs size[{k}] ({what}); `size` has {n} number(s)",
                    size.gtype
                ),
            )),
            Some(&v) if v <= 0.0 => Err(self.error(
                size.el,
                format!("size[{k}] ({what}) must be positive, got {v}"),
            )),
            Some(&v) => Ok(v),
        }
    }

    /// The half-size along z: from `fromto` when given, else size number `k`.
    fn half_z(&self, size: &GeomSize, k: usize, what: &str) -> Result<f64, ModelFileError> {
        match size.fromto_half {
            Some(h) => Ok(h),
            None => self.need(size, k, what),
        }
    }

    /// The geom frame in the MJCF body frame: `fromto` (capsule, cylinder,
    /// box, ellipsoid: z along the segment, from its end to its start as in
    /// MuJoCo, centred on it; with half its length) or `pos` and an orientation.
    pub(super) fn geom_placement(
        &self,
        get: &dyn Fn(&str) -> Option<&'a str>,
        gtype: &str,
        el: &str,
    ) -> Result<(SE3, Option<f64>), ModelFileError> {
        match get("fromto") {
            Some(s) if matches!(gtype, "capsule" | "cylinder" | "box" | "ellipsoid") => {
                let f = self.fixed::<6>(s, "fromto", el)?;
                let (a, b) = (Vec3::new(f[0], f[1], f[2]), Vec3::new(f[3], f[4], f[5]));
                let half = (b - a).norm() / 2.0;
                if !(half > 0.0 && half.is_finite()) {
                    return Err(self.error(el, "`fromto` end points coincide (zero length)".into()));
                }
                // z from `to` towards `from`, as MuJoCo turns it (the same
                // solid; a frame sensor reads the frame).
                Ok((SE3::new(rotation_z_to(&(a - b)), (a + b) / 2.0), Some(half)))
            }
            _ => Ok((self.frame(get, el)?, None)),
        }
    }

    /// The shape and its unit-density mass properties in the geom frame;
    /// with `shell` (`shellinertia="true"`), the mass is on the surface and
    /// the density is per unit area, as in MuJoCo.
    fn geom_shape(
        &mut self,
        get: &dyn Fn(&str) -> Option<&'a str>,
        size: &GeomSize,
        body: usize,
        shell: bool,
    ) -> Result<ShapeVolume, ModelFileError> {
        let el = size.el;
        let solid = self.solid_shape(get, size, body)?;
        if !shell {
            return Ok(solid);
        }
        let (shape, _, com, _) = solid;
        let (area, inertia) = match &shape {
            _ if size.gtype == "mesh" => {
                return Err(self.error(
                    el,
                    "for mesh geoms, MuJoCo takes a shell inertia from the mesh asset (`<mesh inertia=\"shell\">`), not from shellinertia".into(),
                ));
            }
            Some(Shape::Ball { radius: r }) => {
                let a = 4.0 * PI * r * r;
                (a, Mat3::identity() * (2.0 / 3.0 * a * r * r))
            }
            Some(Shape::Cuboid { half_extents: h }) => {
                // Each pair of faces normal to axis k: second moments
                // m h_k² along k and m h_j²/3 along the face's own axes.
                let mut second = Vec3::zeros();
                for k in 0..3 {
                    let (i, j) = ((k + 1) % 3, (k + 2) % 3);
                    let m = 8.0 * h[i] * h[j];
                    second[k] += m * h[k] * h[k];
                    second[i] += m * h[i] * h[i] / 3.0;
                    second[j] += m * h[j] * h[j] / 3.0;
                }
                let a = 8.0 * (h.x * h.y + h.y * h.z + h.z * h.x);
                (a, shell_from_second(second))
            }
            Some(Shape::Cylinder {
                half_length: h,
                radius: r,
            }) => {
                let (side, caps) = (4.0 * PI * r * h, 2.0 * PI * r * r);
                let radial = side * r * r / 2.0 + caps * r * r / 4.0;
                let axial = side * h * h / 3.0 + caps * h * h;
                (
                    side + caps,
                    shell_from_second(Vec3::new(radial, radial, axial)),
                )
            }
            Some(Shape::Capsule {
                half_length: h,
                radius: r,
            }) => {
                // The side, and two hemispherical shells at ±h (their centroid
                // r/2 beyond the ends, ⟨z²⟩ = r²/3 about their base).
                let (side, caps) = (4.0 * PI * r * h, 4.0 * PI * r * r);
                let radial = side * r * r / 2.0 + caps * r * r / 3.0;
                let axial = side * h * h / 3.0 + caps * (r * r / 3.0 + h * r + h * h);
                (
                    side + caps,
                    shell_from_second(Vec3::new(radial, radial, axial)),
                )
            }
            _ => {
                return Err(self.error(
                    el,
                    format!(
                        "shellinertia is supported on spheres, boxes, cylinders and capsules, not on {} geoms",
                        size.gtype
                    ),
                ));
            }
        };
        Ok((shape, area, com, inertia))
    }

    /// The shape and its unit-density mass properties as a solid.
    fn solid_shape(
        &mut self,
        get: &dyn Fn(&str) -> Option<&'a str>,
        size: &GeomSize,
        body: usize,
    ) -> Result<ShapeVolume, ModelFileError> {
        let el = size.el;
        Ok(match size.gtype {
            "sphere" => {
                let r = self.need(size, 0, "radius")?;
                let v = 4.0 / 3.0 * PI * r * r * r;
                let i = Inertia::sphere(1.0, r).rotational;
                (Some(Shape::Ball { radius: r }), v, Vec3::zeros(), i * v)
            }
            "capsule" => {
                let r = self.need(size, 0, "radius")?;
                let h = self.half_z(size, 1, "half-length")?;
                let v = PI * r * r * 2.0 * h + 4.0 / 3.0 * PI * r * r * r;
                let i = Inertia::capsule(v, r, 2.0 * h).rotational;
                let s = Shape::Capsule {
                    half_length: h,
                    radius: r,
                };
                (Some(s), v, Vec3::zeros(), i)
            }
            "cylinder" => {
                let r = self.need(size, 0, "radius")?;
                let h = self.half_z(size, 1, "half-length")?;
                let v = PI * r * r * 2.0 * h;
                let i = Inertia::cylinder(v, r, 2.0 * h).rotational;
                let s = Shape::Cylinder {
                    half_length: h,
                    radius: r,
                };
                (Some(s), v, Vec3::zeros(), i)
            }
            "box" => {
                let hx = self.need(size, 0, "half-size x")?;
                let hy = self.need(size, 1, "half-size y")?;
                let hz = self.half_z(size, 2, "half-size z")?;
                let he = Vec3::new(hx, hy, hz);
                let v = 8.0 * hx * hy * hz;
                let i = Inertia::cuboid(v, he * 2.0).rotational;
                (
                    Some(Shape::Cuboid { half_extents: he }),
                    v,
                    Vec3::zeros(),
                    i,
                )
            }
            "ellipsoid" => {
                let a = self.need(size, 0, "radius x")?;
                let b = self.need(size, 1, "radius y")?;
                let c = self.half_z(size, 2, "radius z")?;
                let v = 4.0 / 3.0 * PI * a * b * c;
                let i =
                    Mat3::from_diagonal(&Vec3::new(b * b + c * c, a * a + c * c, a * a + b * b))
                        * (v / 5.0);
                let radii = Vec3::new(a, b, c);
                (Some(Shape::Ellipsoid { radii }), v, Vec3::zeros(), i)
            }
            "plane" => (
                Some(Shape::HalfSpace { normal: Vec3::z() }),
                0.0,
                Vec3::zeros(),
                Mat3::zeros(),
            ),
            "mesh" => {
                let Some(mesh) = get("mesh") else {
                    return Err(self.error(el, "a mesh geom needs a `mesh` attribute".into()));
                };
                let (shape, v, c, i) = self.mesh(mesh, el)?;
                (Some(shape), v, c, i)
            }
            "hfield" => {
                let Some(h) = get("hfield") else {
                    return Err(self.error(el, "an hfield geom needs an `hfield` attribute".into()));
                };
                let Some(field) = self.hfields.get(h) else {
                    return Err(self.error(el, format!("no hfield asset named `{h}`")));
                };
                (
                    Some(Shape::HeightField(field.clone())),
                    0.0,
                    Vec3::zeros(),
                    Mat3::zeros(),
                )
            }
            "sdf" => {
                self.warnings.push(format!(
                    "{} {el}: {} geoms are not supported, not loaded",
                    self.bodies[body].element, size.gtype
                ));
                (None, 0.0, Vec3::zeros(), Mat3::zeros())
            }
            other => {
                return Err(self.error(
                    el,
                    format!(
                        "unknown geom type `{other}` (plane, sphere, capsule, cylinder, box, ellipsoid, mesh)"
                    ),
                ));
            }
        })
    }

    /// The geom's inertia in its frame: `mass`, else `density` (1000 by
    /// default) times the volume, spread as a solid of uniform density.
    fn geom_mass(
        &mut self,
        get: &dyn Fn(&str) -> Option<&'a str>,
        el: &str,
        volume: f64,
        com: Vec3,
        unit_inertia: Mat3,
    ) -> Result<Inertia, ModelFileError> {
        let density = match get("density") {
            Some(s) => self.fixed::<1>(s, "density", el)?[0],
            None => 1000.0,
        };
        let mass = match get("mass") {
            Some(s) => self.fixed::<1>(s, "mass", el)?[0],
            None => density * volume,
        };
        if mass < 0.0 || density < 0.0 {
            return Err(self.error(
                el,
                format!("mass and density must not be negative (mass {mass}, density {density})"),
            ));
        }
        Ok(if mass > 0.0 && volume > 0.0 {
            Inertia::new(mass, com, unit_inertia * (mass / volume))
        } else {
            Inertia::zero()
        })
    }

    /// A `<pair>`'s `friction` (MuJoCo's five numbers, default
    /// `1 1 0.005 0.0001 0.0001`) as sliding, torsional and rolling; the two
    /// tangents' (and the two rolling axes') coefficients must be equal.
    pub(super) fn pair_friction(
        &self,
        text: Option<&str>,
        el: &str,
    ) -> Result<[f64; 3], ModelFileError> {
        let mut f = [
            1.0,
            1.0,
            DEFAULT_TORSIONAL,
            DEFAULT_ROLLING,
            DEFAULT_ROLLING,
        ];
        if let Some(s) = text {
            let given = self.list(s, "friction", el)?;
            if given.is_empty() || given.len() > 5 || given.iter().any(|x| !(*x >= 0.0)) {
                let reason = format!("`friction` needs 1 to 5 non-negative numbers, got `{s}`");
                return Err(self.error(el, reason));
            }
            f[..given.len()].copy_from_slice(&given);
            if f[0] != f[1] || f[3] != f[4] {
                let reason = format!(
                    "`friction` `{s}` reads as {f:?} (MuJoCo fills the numbers not given from `1 1 0.005 0.0001 0.0001`): anisotropic friction (different coefficients along the two tangents or the two rolling axes) is not simulated"
                );
                return Err(self.error(el, reason));
            }
        }
        Ok([f[0], f[2], f[3]])
    }

    /// A `condim` attribute: 3 when absent; 1, 3, 4 or 6 else refused.
    pub(super) fn condim(&self, text: Option<&str>, element: &str) -> Result<u8, ModelFileError> {
        match text.map(str::trim) {
            None => Ok(3),
            Some(s) => match s.parse::<u8>() {
                Ok(c @ (1 | 3 | 4 | 6)) => Ok(c),
                _ => Err(self.error(element, format!("`condim` must be 1, 3, 4 or 6, got `{s}`"))),
            },
        }
    }

    /// Friction (`friction`'s sliding, torsional and rolling numbers), the
    /// collision bits `contype`, `conaffinity`, `condim` and `priority`.
    fn geom_material(
        &mut self,
        get: &dyn Fn(&str) -> Option<&'a str>,
        el: &str,
    ) -> Result<Material, ModelFileError> {
        // MuJoCo's defaults: sliding 1, torsional 0.005 m, rolling 1e-4 m.
        let mut friction = [1.0, DEFAULT_TORSIONAL, DEFAULT_ROLLING];
        if let Some(s) = get("friction") {
            let f = self.list(s, "friction", el)?;
            if f.is_empty() || f.len() > 3 || f.iter().any(|x| !(*x >= 0.0)) {
                return Err(self.error(
                    el,
                    format!("`friction` needs 1 to 3 non-negative numbers, got `{s}`"),
                ));
            }
            friction[..f.len()].copy_from_slice(&f);
        }
        let bits = |attr: &str| -> Result<u32, ModelFileError> {
            match get(attr) {
                None => Ok(1),
                Some(s) => s.trim().parse::<u32>().map_err(|_| {
                    self.error(
                        el,
                        format!("`{attr}` must be a non-negative integer, got `{s}`"),
                    )
                }),
            }
        };
        let (contype, conaffinity) = (bits("contype")?, bits("conaffinity")?);
        let condim = self.condim(get("condim"), el)?;
        let priority = match get("priority") {
            None => 0,
            Some(s) => s
                .trim()
                .parse::<i32>()
                .map_err(|_| self.error(el, format!("`priority` must be an integer, got `{s}`")))?,
        };
        Ok(Material {
            friction: friction[0],
            torsional: friction[1],
            rolling: friction[2],
            restitution: 0.0,
            contype,
            conaffinity,
            priority,
            condim,
        })
    }

    /// The convex hull of mesh asset `name` and its unit-density mass
    /// properties: (shape, volume, centre of volume, inertia about it).
    pub(super) fn mesh(
        &mut self,
        name: &str,
        el: &str,
    ) -> Result<(Shape, f64, Vec3, Mat3), ModelFileError> {
        let Some(asset) = self.meshes.get(name) else {
            return Err(self.error(
                el,
                format!("unknown mesh `{name}` (no <mesh> asset with that name)"),
            ));
        };
        if let Some(l) = &asset.loaded {
            return Ok(l.clone());
        }
        let ael = asset.element.clone();
        let shape = match (&asset.vertices, &asset.file) {
            (Some(v), _) => {
                let pts: Vec<Vec3> = v.iter().map(|p| p.component_mul(&asset.scale)).collect();
                convex_hull_vertices(&pts)
                    .map(|points| Shape::ConvexMesh { points })
                    .map_err(|e| self.error(&ael, e))?
            }
            (None, Some(f)) => {
                let path = resolve_mesh_path(f, &self.mesh_dir, &self.package_dirs)
                    .map_err(|e| self.error(&ael, e))?;
                let scale = asset.scale;
                self.mesh_cache
                    .convex_hull(&path, scale)
                    .map_err(|e| self.error(&ael, e))?
            }
            (None, None) => return Err(self.error(&ael, "no file and no vertices".into())),
        };
        let Shape::ConvexMesh { points } = &shape else {
            return Err(self.error(&ael, "not a convex mesh".into()));
        };
        // The triangles the mass properties come from: the file's, the
        // inline `face`s, or (inline vertices alone) the hull's.
        let (scale, mode) = (asset.scale, asset.inertia);
        let triangles = match (&asset.file, &asset.vertices, &asset.faces) {
            _ if mode == MeshInertia::Convex => None,
            (Some(f), _, _) => {
                let path = resolve_mesh_path(f, &self.mesh_dir, &self.package_dirs)
                    .map_err(|e| self.error(&ael, e))?;
                let mesh = self
                    .mesh_cache
                    .mesh(&path)
                    .map_err(|e| self.error(&ael, e))?;
                let v = mesh.vertices.iter().map(|p| p.component_mul(&scale));
                Some((v.collect(), mesh.triangles.clone()))
            }
            (None, Some(v), Some(t)) => Some((
                v.iter().map(|p| p.component_mul(&scale)).collect(),
                t.clone(),
            )),
            _ if mode == MeshInertia::Shell => Some(hull_triangles(points).unwrap_or_default()),
            _ => None,
        };
        let properties = match triangles {
            Some((v, t)) => mesh_mass_properties(&v, &t, mode),
            None => hull_mass_properties(points)
                .ok_or_else(|| "the mesh's convex hull has no volume".to_string()),
        };
        let (volume, c, inertia) = properties.map_err(|e| self.error(&ael, e))?;
        let out = (shape, volume, c, inertia);
        if let Some(a) = self.meshes.get_mut(name) {
            a.loaded = Some(out.clone());
        }
        Ok(out)
    }
}

impl<'a, 'i, 'e> Parser<'a, 'i, 'e> {
    /// The vertices of mesh asset `name`, scaled, if they span no volume
    /// and the asset has triangles to draw (`None` otherwise), with the
    /// triangles' unit-density mass properties by the asset's `inertia`
    /// mode, as MuJoCo computes them from the triangles (a shell's from
    /// their area; an error where they have none).
    #[allow(clippy::type_complexity)]
    fn flat_visual_mesh(
        &mut self,
        name: &str,
    ) -> Option<(Vec<Vec3>, Result<(f64, Vec3, Mat3), String>)> {
        let drawn = self.visual_mesh(name)?;
        let points: Vec<Vec3> = drawn
            .vertices
            .iter()
            .map(|v| Vec3::new(v[0] as f64, v[1] as f64, v[2] as f64))
            .collect();
        if !crate::model::mesh::is_flat(&points) {
            return None;
        }
        let triangles: Vec<[usize; 3]> = drawn
            .triangles
            .iter()
            .map(|t| t.map(|k| k as usize))
            .collect();
        let properties = match self.meshes.get(name).map(|a| a.inertia) {
            Some(MeshInertia::Convex) | None => {
                Err("inertia=\"convex\" needs the hull's volume".to_string())
            }
            Some(mode) => mesh_mass_properties(&points, &triangles, mode),
        };
        Some((points, properties))
    }

    /// The triangles mesh asset `name` is drawn as: its file's or its
    /// inline `face`s, scaled (`None`: inline vertices alone, drawn as their
    /// hull, or a file whose triangles cannot be used).
    pub(super) fn visual_mesh(
        &mut self,
        name: &str,
    ) -> Option<std::sync::Arc<crate::model::mesh::VisualMesh>> {
        use crate::model::mesh::VisualMesh;
        let asset = self.meshes.get(name)?;
        if let Some(v) = &asset.visual {
            return v.clone();
        }
        let mesh = match (&asset.file, &asset.vertices, &asset.faces) {
            (Some(f), _, _) => {
                let (f, scale) = (f.clone(), asset.scale);
                let path = resolve_mesh_path(&f, &self.mesh_dir, &self.package_dirs).ok()?;
                let m = self.mesh_cache.mesh(&path).ok()?;
                VisualMesh::new(&m.vertices, &m.triangles, scale)
            }
            (None, Some(v), Some(t)) => VisualMesh::new(v, t, asset.scale),
            _ => None,
        }
        .map(std::sync::Arc::new);
        if let Some(a) = self.meshes.get_mut(name) {
            a.visual = Some(mesh.clone());
        }
        mesh
    }
}

/// The convex hull of `points` as vertices and outward-wound triangles
/// (`None` when parry finds none).
fn hull_triangles(points: &[Vec3]) -> Option<(Vec<Vec3>, Vec<[usize; 3]>)> {
    let pts: Vec<parry3d_f64::math::Vector> = points
        .iter()
        .map(|p| parry3d_f64::math::Vector::new(p.x, p.y, p.z))
        .collect();
    let (v, t) = parry3d_f64::transformation::try_convex_hull(&pts).ok()?;
    Some((
        v.iter().map(|p| Vec3::new(p.x, p.y, p.z)).collect(),
        t.iter().map(|t| t.map(|k| k as usize)).collect(),
    ))
}

/// The inertia about the centre from the second moments `∫ x_k² dm` along the axes.
fn shell_from_second(second: Vec3) -> Mat3 {
    Mat3::from_diagonal(&Vec3::new(
        second.y + second.z,
        second.x + second.z,
        second.x + second.y,
    ))
}

/// Volume, centroid and unit-density inertia about the centroid of the
/// convex hull of `points`: a sum over the tetrahedra joining a point to the
/// hull's faces (second moments `V/20 (a aᵀ + b bᵀ + c cᵀ + s sᵀ)`, `s = a + b + c`,
/// for the tetrahedron `(0, a, b, c)`). (parry's `mass_properties` on the hull
/// gets the principal moments right but, in parry 0.31, not always the axes.)
pub(super) fn hull_mass_properties(points: &[Vec3]) -> Option<(f64, Vec3, Mat3)> {
    let (v, faces) = hull_triangles(points)?;
    // Relative to a point inside, for accuracy far from the origin.
    let o = v.iter().sum::<Vec3>() / v.len().max(1) as f64;
    let (mut volume, mut first, mut second) = (0.0, Vec3::zeros(), Mat3::zeros());
    for f in &faces {
        let [a, b, c] = f.map(|k| v.get(k).copied().unwrap_or(o) - o);
        let vol = a.dot(&b.cross(&c)) / 6.0;
        let s = a + b + c;
        volume += vol;
        first += s * (vol / 4.0);
        second += (a * a.transpose() + b * b.transpose() + c * c.transpose() + s * s.transpose())
            * (vol / 20.0);
    }
    if volume < 0.0 {
        // Faces wound inwards: every signed term flips.
        (volume, first, second) = (-volume, -first, -second);
    }
    if !(volume > 0.0 && volume.is_finite()) {
        return None;
    }
    let com = first / volume;
    let about_com = second - com * com.transpose() * volume;
    let inertia = Mat3::identity() * about_com.trace() - about_com;
    Some((volume, com + o, inertia))
}

impl<'a, 'i, 'e> Parser<'a, 'i, 'e> {
    /// An `<inertial>`: the inertia in the body frame, and with
    /// `diaginertia` its frame (MuJoCo's `body_ipos`, `body_iquat`: the
    /// principal axes as given, not reordered).
    pub(super) fn inertial(
        &mut self,
        node: Node,
        el: &str,
        frame: &SE3,
    ) -> Result<(Inertia, Option<SE3>), ModelFileError> {
        let f = frame.mul(&self.frame(&|a| node.attribute(a), el)?);
        let mass = match node.attribute("mass") {
            Some(s) => self.fixed::<1>(s, "mass", el)?[0],
            None => return Err(self.error(el, "missing attribute `mass`".into())),
        };
        if mass < 0.0 {
            return Err(self.error(el, format!("mass must not be negative, got {mass}")));
        }
        let local = match (node.attribute("diaginertia"), node.attribute("fullinertia")) {
            (Some(d), None) => {
                let d = self.fixed::<3>(d, "diaginertia", el)?;
                if d.iter().any(|x| *x < 0.0) {
                    return Err(
                        self.error(el, format!("diaginertia must not be negative, got {d:?}"))
                    );
                }
                Mat3::from_diagonal(&v3(d))
            }
            (None, Some(fi)) => {
                // MuJoCo: the full tensor is in the body's orientation.
                if ["quat", "axisangle", "euler", "xyaxes", "zaxis"]
                    .iter()
                    .any(|a| node.attribute(*a).is_some())
                {
                    return Err(self.error(
                        el,
                        "fullinertia cannot be combined with an orientation".into(),
                    ));
                }
                let v = self.fixed::<6>(fi, "fullinertia", el)?;
                Mat3::new(v[0], v[3], v[4], v[3], v[1], v[5], v[4], v[5], v[2])
            }
            (Some(_), Some(_)) => {
                return Err(self.error(el, "both diaginertia and fullinertia given".into()));
            }
            (None, None) => {
                return Err(self.error(el, "needs diaginertia or fullinertia".into()));
            }
        };
        let principal = node.attribute("diaginertia").map(|_| f);
        Ok((
            Inertia::new(
                mass,
                f.translation,
                f.rotation * local * f.rotation.transpose(),
            ),
            principal,
        ))
    }
}
