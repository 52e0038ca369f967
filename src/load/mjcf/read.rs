//! Reading the XML: compiler settings, default classes, options, assets,
//! the body tree with its frames, joints and inertials.

use super::*;
use crate::model::Zone;

impl<'a, 'i, 'e> Parser<'a, 'i, 'e> {
    pub(super) fn error(&self, element: &str, reason: String) -> ModelFileError {
        (self.err)(element, reason)
    }

    pub(super) fn list(
        &self,
        text: &str,
        what: &str,
        element: &str,
    ) -> Result<Vec<f64>, ModelFileError> {
        number_list(text, what, element, &self.err)
    }

    pub(super) fn fixed<const N: usize>(
        &self,
        text: &str,
        what: &str,
        element: &str,
    ) -> Result<[f64; N], ModelFileError> {
        let v = self.list(text, what, element)?;
        v.try_into().map_err(|v: Vec<f64>| {
            self.error(
                element,
                format!("`{what}` needs {N} numbers, got {} (`{text}`)", v.len()),
            )
        })
    }

    pub(super) fn boolean(
        &self,
        text: &str,
        what: &str,
        element: &str,
    ) -> Result<bool, ModelFileError> {
        match text {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(self.error(
                element,
                format!("`{what}` must be `true` or `false`, got `{text}`"),
            )),
        }
    }

    /// An `rgba` attribute: four numbers, each clamped to [0, 1].
    pub(super) fn rgba(&self, text: &str, el: &str) -> Result<[f64; 4], ModelFileError> {
        let [r, g, b, a] = self.fixed::<4>(text, "rgba", el)?;
        Ok([r, g, b, a].map(|c| c.clamp(0.0, 1.0)))
    }

    /// The site named `name`: its MJCF body and its placement there.
    pub(super) fn site(&self, name: &str) -> Option<(usize, SE3)> {
        self.site_full(name).map(|(b, s)| (b, s.local))
    }

    /// The site named `name`: its MJCF body and its record.
    pub(super) fn site_full(&self, name: &str) -> Option<(usize, &SiteRec)> {
        self.bodies
            .iter()
            .enumerate()
            .find_map(|(b, rec)| rec.sites.iter().find(|s| s.name == name).map(|s| (b, s)))
    }

    /// A named site: its placement in the MJCF body frame (`frame`: the
    /// enclosing `<frame>`s) and its solid (a touch sensor's zone), its
    /// attributes from its default class as a geom's are.
    fn site_record(
        &self,
        node: Node<'a, 'i>,
        name: &str,
        childclass: &str,
        frame: &SE3,
    ) -> Result<SiteRec, ModelFileError> {
        let el = element_name(&node, "");
        let class = self.class_of(&node, childclass, &el)?;
        let get = |a: &str| self.get(&node, &class, &["site"], a);
        let stype = get("type").unwrap_or("sphere");
        let (placement, fromto_half) = self.geom_placement(&get, stype, &el)?;
        // MuJoCo's default site size is 0.005 in every entry.
        let mut size = [0.005; 3];
        if let Some(text) = get("size") {
            for (k, x) in self
                .list(text, "size", &el)?
                .into_iter()
                .take(3)
                .enumerate()
            {
                if !(x.is_finite() && x >= 0.0) {
                    return Err(self.error(&el, format!("size[{k}] must be non-negative, got {x}")));
                }
                size[k] = x;
            }
        }
        let half = fromto_half.unwrap_or(size[1]);
        let zone = match stype {
            "sphere" => Zone::Sphere { radius: size[0] },
            "capsule" => Zone::Capsule {
                radius: size[0],
                half_length: half,
            },
            "cylinder" => Zone::Cylinder {
                radius: size[0],
                half_length: half,
            },
            "ellipsoid" | "box" => {
                let mut v = Vec3::from(size);
                if let Some(h) = fromto_half {
                    v.z = h;
                }
                if stype == "box" {
                    Zone::Box { half_sizes: v }
                } else {
                    Zone::Ellipsoid { radii: v }
                }
            }
            other => {
                return Err(self.error(
                    &el,
                    format!("site type `{other}` (sphere, capsule, ellipsoid, cylinder or box)"),
                ));
            }
        };
        Ok(SiteRec {
            name: name.to_string(),
            local: frame.mul(&placement),
            zone,
        })
    }

    /// `true` / `false` / `auto` (→ `None`).
    pub(super) fn tristate(
        &self,
        text: Option<&str>,
        what: &str,
        element: &str,
    ) -> Result<Option<bool>, ModelFileError> {
        match text {
            None | Some("auto") => Ok(None),
            Some(t) => self.boolean(t, what, element).map(Some),
        }
    }

    /// The class an element uses: its own `class`, else the inherited one.
    pub(super) fn class_of(
        &self,
        node: &Node,
        inherited: &str,
        element: &str,
    ) -> Result<String, ModelFileError> {
        match node.attribute("class") {
            Some(c) if self.classes.contains_key(c) => Ok(c.into()),
            Some(c) => Err(self.error(element, format!("unknown default class `{c}`"))),
            None => Ok(inherited.into()),
        }
    }

    /// An attribute of `node`, or else of the defaults of `class` (and its
    /// ancestors) for the element kinds `group`.
    pub(super) fn get(
        &self,
        node: &Node<'a, 'i>,
        class: &str,
        group: &[&str],
        attr: &str,
    ) -> Option<&'a str> {
        lookup(&self.classes, node, class, group, attr)
    }

    /// Nested bodies, frames and default classes are read recursively: refuse
    /// a depth that could exhaust a thread's stack.
    pub(super) fn check_depth(&self, node: &Node) -> Result<(), ModelFileError> {
        if node.ancestors().count() > MAX_DEPTH {
            return Err(self.error(
                &element_name(node, ""),
                format!("elements nested deeper than {MAX_DEPTH} levels are not supported"),
            ));
        }
        Ok(())
    }

    pub(super) fn compiler(&mut self, c: Node) -> Result<(), ModelFileError> {
        let el = "<compiler>";
        for a in c.attributes() {
            let v = a.value();
            match a.name() {
                "angle" => {
                    self.angle = match v {
                        "degree" => PI / 180.0,
                        "radian" => 1.0,
                        _ => {
                            return Err(self.error(
                                el,
                                format!("angle must be `degree` or `radian`, got `{v}`"),
                            ));
                        }
                    }
                }
                "eulerseq" => {
                    let b = v.as_bytes();
                    if b.len() != 3 || !b.iter().all(|c| b"xyzXYZ".contains(c)) {
                        return Err(self.error(
                            el,
                            format!("eulerseq must be 3 letters among xyzXYZ, got `{v}`"),
                        ));
                    }
                    self.eulerseq = [b[0], b[1], b[2]];
                }
                "inertiafromgeom" => {
                    self.inertia_from_geom = match v {
                        "auto" => InertiaFromGeom::Auto,
                        "true" => InertiaFromGeom::True,
                        "false" => InertiaFromGeom::False,
                        _ => {
                            return Err(self.error(
                                el,
                                format!("inertiafromgeom must be auto, true or false, got `{v}`"),
                            ));
                        }
                    }
                }
                "coordinate" => {
                    if v != "local" {
                        return Err(self.error(
                            el,
                            format!(
                                "coordinate=\"{v}\" is not supported (only `local`, as in MuJoCo ≥ 2.3.3)"
                            ),
                        ));
                    }
                }
                "autolimits" => self.autolimits = self.boolean(v, "autolimits", el)?,
                // Handled in `build` (it needs every body's mass).
                "settotalmass" => {
                    let m = self.fixed::<1>(v, "settotalmass", el)?[0];
                    // MuJoCo: a non-positive value disables it.
                    self.settotalmass = (m > 0.0).then_some(m);
                }
                "inertiagrouprange" => {
                    let [lo, hi] = self.fixed::<2>(v, "inertiagrouprange", el)?;
                    if lo.fract() != 0.0 || hi.fract() != 0.0 || lo > hi {
                        return Err(self.error(
                            el,
                            format!("inertiagrouprange needs two whole numbers, the first not above the second, got `{v}`"),
                        ));
                    }
                    self.inertia_groups = (lo as i64, hi as i64);
                }
                "meshdir" => self.mesh_dir = self.model_dir.join(v),
                "assetdir" => {
                    if c.attribute("meshdir").is_none() {
                        self.mesh_dir = self.model_dir.join(v);
                    }
                }
                "texturedir" | "discardvisual" | "strippath" | "usethread" | "fitaabb"
                | "convexhull" | "saveinertial" | "alignfree" => {}
                other => self.warnings.push(format!(
                    "<compiler>: attribute `{other}=\"{v}\"` not supported, ignored"
                )),
            }
        }
        for ch in c.children().filter(|n| n.is_element()) {
            self.warnings.push(format!(
                "<compiler><{}>: not supported, ignored",
                ch.tag_name().name()
            ));
        }
        Ok(())
    }

    pub(super) fn defaults(
        &mut self,
        d: Node<'a, 'i>,
        parent: Option<&str>,
    ) -> Result<(), ModelFileError> {
        self.check_depth(&d)?;
        let name = match (d.attribute("class"), parent) {
            (Some(c), _) => c.to_string(),
            (None, None) => "main".into(),
            (None, Some(_)) => {
                return Err(self.error(
                    "<default>",
                    "a nested <default> needs a `class` name".into(),
                ));
            }
        };
        let el = format!("<default class=\"{name}\">");
        if name != "main" || parent.is_some() {
            if self.classes.contains_key(&name) {
                return Err(self.error(&el, format!("duplicate default class `{name}`")));
            }
            Rc::make_mut(&mut self.classes).insert(
                name.clone(),
                DefaultClass {
                    parent: Some(parent.unwrap_or("main").into()),
                    elems: Vec::new(),
                },
            );
        }
        for ch in d.children().filter(|n| n.is_element()) {
            if ch.has_tag_name("default") {
                self.defaults(ch, Some(&name))?;
            } else if let Some(cls) = Rc::make_mut(&mut self.classes).get_mut(&name) {
                cls.elems.push(ch);
            }
        }
        Ok(())
    }

    pub(super) fn option(
        &mut self,
        o: Node,
        timestep: &mut Option<f64>,
        gravity: &mut Vec3,
        medium: &mut crate::model::Medium,
    ) -> Result<(), ModelFileError> {
        let el = "<option>";
        let mut ignored = Vec::new();
        for a in o.attributes() {
            match a.name() {
                "timestep" => {
                    let t = self.fixed::<1>(a.value(), "timestep", el)?[0];
                    if t <= 0.0 {
                        return Err(self.error(el, format!("timestep must be positive, got {t}")));
                    }
                    *timestep = Some(t);
                }
                "gravity" => *gravity = v3(self.fixed::<3>(a.value(), "gravity", el)?),
                "density" => medium.density = self.fixed::<1>(a.value(), "density", el)?[0],
                "viscosity" => medium.viscosity = self.fixed::<1>(a.value(), "viscosity", el)?[0],
                "wind" => medium.wind = v3(self.fixed::<3>(a.value(), "wind", el)?),
                // Used by magnetometers only.
                "magnetic" => {}
                // MuJoCo's default, semi-implicit like moreau's.
                "integrator" if a.value() == "Euler" => {}
                // moreau's friction cones are the exact Coulomb cones, which
                // MuJoCo's elliptic ones are (its default, pyramidal, is not).
                "cone" if a.value() == "elliptic" => {}
                other => ignored.push(format!("{other}=\"{}\"", a.value())),
            }
        }
        for f in o.children().filter(|n| n.is_element()) {
            if f.has_tag_name("flag") {
                self.flag(f, &mut ignored)?;
                continue;
            }
            for a in f.attributes() {
                ignored.push(format!(
                    "<{}> {}=\"{}\"",
                    f.tag_name().name(),
                    a.name(),
                    a.value()
                ));
            }
        }
        if !ignored.is_empty() {
            self.warnings.push(format!(
                "<option>: not used by moreau (it has its own integrator and contact solver): {}",
                ignored.join(", ")
            ));
        }
        Ok(())
    }

    /// `<option><flag>`: the switches that change what is simulated are
    /// applied ([`Flags`]); those moreau cannot honour are refused; those
    /// about MuJoCo's own solver and bookkeeping join `ignored`.
    fn flag(&mut self, f: Node, ignored: &mut Vec<String>) -> Result<(), ModelFileError> {
        let el = "<option><flag>";
        for a in f.attributes() {
            let (name, v) = (a.name(), a.value());
            let on = match v {
                "enable" => true,
                "disable" => false,
                _ => {
                    return Err(self.error(
                        el,
                        format!("`{name}` must be `enable` or `disable`, got `{v}`"),
                    ));
                }
            };
            let flags = &mut self.flags;
            match name {
                "constraint" => flags.constraint = on,
                "contact" => flags.contact = on,
                "limit" => flags.limit = on,
                "equality" => flags.equality = on,
                "frictionloss" => flags.frictionloss = on,
                "gravity" => flags.gravity = on,
                "spring" => flags.spring = on,
                "damper" => flags.damper = on,
                // Disabling these changes the dynamics in a way moreau does
                // not reproduce (a parent and its child never collide in a
                // moreau model): refused rather than simulated differently.
                "actuation" | "clampctrl" | "eulerdamp" | "filterparent" if !on => {
                    return Err(self.error(
                        el,
                        format!("`{name}=\"disable\"` is not supported by moreau"),
                    ));
                }
                "actuation" | "clampctrl" | "eulerdamp" | "filterparent" => {}
                // MuJoCo's energy bookkeeping (moreau's `energy` is always there).
                "energy" => {}
                // MuJoCo's solver, collision and bookkeeping switches.
                _ => ignored.push(format!("<flag> {name}=\"{v}\"")),
            }
        }
        Ok(())
    }

    pub(super) fn assets(&mut self, a: Node<'a, 'i>) -> Result<(), ModelFileError> {
        for h in a.children().filter(|n| n.has_tag_name("hfield")) {
            self.hfield(h)?;
        }
        for m in a.children().filter(|n| n.has_tag_name("material")) {
            let el = element_name(&m, "");
            let class = self.class_of(&m, "main", &el)?;
            if let (Some(name), Some(rgba)) = (
                m.attribute("name"),
                self.get(&m, &class, &["material"], "rgba"),
            ) {
                let rgba = self.rgba(rgba, &el)?;
                self.materials.insert(name.to_string(), rgba);
            }
        }
        for m in a.children().filter(|n| n.has_tag_name("mesh")) {
            let el = match m.attribute("file") {
                Some(f) if m.attribute("name").is_none() => {
                    element_name(&m, &format!(" file=\"{f}\""))
                }
                _ => element_name(&m, ""),
            };
            let class = self.class_of(&m, "main", &el)?;
            let file = m.attribute("file").map(str::to_string);
            let vertices = match m.attribute("vertex") {
                Some(v) => {
                    let v = self.list(v, "vertex", &el)?;
                    if v.len() % 3 != 0 {
                        return Err(self.error(
                            &el,
                            format!("`vertex` needs a multiple of 3 numbers, got {}", v.len()),
                        ));
                    }
                    Some(
                        v.chunks_exact(3)
                            .map(|c| Vec3::new(c[0], c[1], c[2]))
                            .collect(),
                    )
                }
                None => None,
            };
            let name = match (m.attribute("name"), &file) {
                (Some(n), _) => n.to_string(),
                (None, Some(f)) => Path::new(f)
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                (None, None) => {
                    return Err(self.error(&el, "a mesh needs a `name` or a `file`".into()));
                }
            };
            if file.is_none() && vertices.is_none() {
                return Err(self.error(&el, "a mesh needs a `file` or `vertex` data".into()));
            }
            let faces = match m.attribute("face") {
                Some(f) => {
                    let f = self.list(f, "face", &el)?;
                    let n = vertices.as_ref().map_or(0, Vec::len);
                    if f.len() % 3 != 0
                        || f.iter()
                            .any(|&k| !(k >= 0.0 && k < n as f64 && k.fract() == 0.0))
                    {
                        return Err(self.error(
                            &el,
                            format!(
                                "`face` needs triples of indices into the {n} inline vertices (`vertex`), got {} numbers",
                                f.len()
                            ),
                        ));
                    }
                    Some(
                        f.chunks_exact(3)
                            .map(|t| [t[0] as usize, t[1] as usize, t[2] as usize])
                            .collect(),
                    )
                }
                None => None,
            };
            let inertia = match self.get(&m, &class, &["mesh"], "inertia") {
                None => MeshInertia::Legacy,
                Some(t) => MeshInertia::parse(t).ok_or_else(|| {
                    self.error(
                        &el,
                        format!("`inertia` must be legacy, exact, convex or shell, got `{t}`"),
                    )
                })?,
            };
            let scale = match self.get(&m, &class, &["mesh"], "scale") {
                Some(s) => v3(self.fixed::<3>(s, "scale", &el)?),
                None => Vec3::repeat(1.0),
            };
            for attr in ["refpos", "refquat"] {
                if m.attribute(attr).is_some() {
                    self.warnings
                        .push(format!("{el}: `{attr}` not supported, ignored"));
                }
            }
            if self.meshes.contains_key(&name) {
                return Err(self.error(&el, format!("duplicate mesh name `{name}`")));
            }
            self.meshes.insert(
                name,
                MeshAsset {
                    element: el,
                    file,
                    vertices,
                    faces,
                    scale,
                    inertia,
                    loaded: None,
                    visual: None,
                },
            );
        }
        Ok(())
    }

    /// The orientation given by one of `quat`, `axisangle`, `euler`,
    /// `xyaxes`, `zaxis` (identity when none).
    pub(super) fn orientation(
        &self,
        get: &dyn Fn(&str) -> Option<&'a str>,
        el: &str,
    ) -> Result<Mat3, ModelFileError> {
        let given: Vec<&str> = ["quat", "axisangle", "euler", "xyaxes", "zaxis"]
            .into_iter()
            .filter(|a| get(a).is_some())
            .collect();
        if given.len() > 1 {
            return Err(self.error(
                el,
                format!("several orientations given ({}); use one", given.join(", ")),
            ));
        }
        let Some(&which) = given.first() else {
            return Ok(Mat3::identity());
        };
        let text = get(which).unwrap_or_default();
        let degenerate = || self.error(el, format!("`{which}` is degenerate (`{text}`)"));
        match which {
            "quat" => {
                let q = self.fixed::<4>(text, "quat", el)?;
                let q = Quaternion::new(q[0], q[1], q[2], q[3]);
                let n = q.norm();
                if !(n > 1e-12 && n.is_finite()) {
                    return Err(degenerate());
                }
                Ok(*UnitQuaternion::from_quaternion(q / n)
                    .to_rotation_matrix()
                    .matrix())
            }
            "axisangle" => {
                let a = self.fixed::<4>(text, "axisangle", el)?;
                let axis = Vec3::new(a[0], a[1], a[2]);
                let n = axis.norm();
                if !(n > 1e-12 && n.is_finite()) {
                    return Err(degenerate());
                }
                Ok(
                    *Rotation3::from_axis_angle(&Unit::new_unchecked(axis / n), a[3] * self.angle)
                        .matrix(),
                )
            }
            "euler" => {
                let e = self.fixed::<3>(text, "euler", el)?;
                let mut r = Mat3::identity();
                for (k, &c) in self.eulerseq.iter().enumerate() {
                    let axis = match c.to_ascii_lowercase() {
                        b'x' => Vec3::x_axis(),
                        b'y' => Vec3::y_axis(),
                        _ => Vec3::z_axis(),
                    };
                    let rk = *Rotation3::from_axis_angle(&axis, e[k] * self.angle).matrix();
                    r = if c.is_ascii_lowercase() {
                        r * rk
                    } else {
                        rk * r
                    };
                }
                Ok(r)
            }
            "xyaxes" => {
                let v = self.fixed::<6>(text, "xyaxes", el)?;
                let x = Vec3::new(v[0], v[1], v[2]);
                let y = Vec3::new(v[3], v[4], v[5]);
                let xn = x.norm();
                if !(xn > 1e-12 && xn.is_finite()) {
                    return Err(degenerate());
                }
                let x = x / xn;
                let y = y - x * x.dot(&y);
                let yn = y.norm();
                if !(yn > 1e-12 && yn.is_finite()) {
                    return Err(degenerate());
                }
                let y = y / yn;
                Ok(Mat3::from_columns(&[x, y, x.cross(&y)]))
            }
            _ => {
                let z = v3(self.fixed::<3>(text, "zaxis", el)?);
                if z.norm() <= 1e-12 {
                    return Err(degenerate());
                }
                Ok(rotation_z_to(&z))
            }
        }
    }

    /// `pos` and orientation of an element as a frame.
    pub(super) fn frame(
        &self,
        get: &dyn Fn(&str) -> Option<&'a str>,
        el: &str,
    ) -> Result<SE3, ModelFileError> {
        let pos = match get("pos") {
            Some(s) => v3(self.fixed::<3>(s, "pos", el)?),
            None => Vec3::zeros(),
        };
        Ok(SE3::new(self.orientation(get, el)?, pos))
    }

    /// The children of a body (or of the world, `body == 0`), through
    /// `<frame>`s: `frame` is the accumulated frame in the body frame.
    pub(super) fn body_children(
        &mut self,
        node: Node<'a, 'i>,
        body: usize,
        childclass: &str,
        frame: &SE3,
    ) -> Result<(), ModelFileError> {
        self.check_depth(&node)?;
        for ch in node.children().filter(|n| n.is_element()) {
            let tag = ch.tag_name().name();
            match tag {
                "body" => self.body(ch, body, childclass, frame)?,
                "frame" => {
                    let el = element_name(&ch, "");
                    let f = self.frame(&|a| ch.attribute(a), &el)?;
                    let cc = match ch.attribute("childclass") {
                        Some(c) if self.classes.contains_key(c) => c.to_string(),
                        Some(c) => {
                            return Err(self.error(&el, format!("unknown default class `{c}`")));
                        }
                        None => childclass.to_string(),
                    };
                    self.body_children(ch, body, &cc, &frame.mul(&f))?;
                }
                "geom" => {
                    let g = self.geom(ch, body, childclass, frame)?;
                    self.bodies[body].geoms.push(g);
                }
                "joint" | "freejoint" => {
                    let el = element_name(&ch, "");
                    if body == 0 {
                        return Err(self.error(
                            &el,
                            "the world body cannot have joints (put them in a <body>)".into(),
                        ));
                    }
                    let j = self.joint(ch, childclass, frame)?;
                    self.bodies[body].joints.push(j);
                }
                "inertial" => {
                    let el = format!("{} <inertial>", self.bodies[body].element);
                    if body == 0 {
                        return Err(self.error(&el, "the world body has no inertia".into()));
                    }
                    if self.bodies[body].has_inertial {
                        return Err(self.error(&el, "more than one <inertial>".into()));
                    }
                    let (inertia, principal) = self.inertial(ch, &el, frame)?;
                    if self.inertia_from_geom != InertiaFromGeom::True {
                        self.bodies[body].inertia = inertia;
                        self.bodies[body].principal = principal;
                    }
                    self.bodies[body].has_inertial = true;
                }
                "site" => {
                    // Named sites become frames of their body (see build.rs).
                    if let Some(name) = ch.attribute("name") {
                        let site = self.site_record(ch, name, childclass, frame)?;
                        self.bodies[body].sites.push(site);
                    }
                }
                "camera" => {
                    let cam = self.camera_record(ch, childclass, frame)?;
                    self.bodies[body].cameras.push(cam);
                }
                "light" => {}
                other => self.warnings.push(format!(
                    "{} <{other}>{}: not supported, ignored",
                    self.bodies[body].element,
                    name_suffix(&ch)
                )),
            }
        }
        Ok(())
    }

    pub(super) fn body(
        &mut self,
        node: Node<'a, 'i>,
        parent: usize,
        childclass: &str,
        frame: &SE3,
    ) -> Result<(), ModelFileError> {
        let el = element_name(&node, "");
        let cc = match node.attribute("childclass") {
            Some(c) if self.classes.contains_key(c) => c.to_string(),
            Some(c) => return Err(self.error(&el, format!("unknown default class `{c}`"))),
            None => childclass.to_string(),
        };
        let local = frame.mul(&self.frame(&|a| node.attribute(a), &el)?);
        let name = node.attribute("name").unwrap_or_default().to_string();
        if !name.is_empty() && self.bodies.iter().any(|b| b.name == name) {
            return Err(self.error(&el, format!("duplicate body name `{name}`")));
        }
        if let Some(v) = node.attribute("gravcomp")
            && v != "false"
            && v != "0"
        {
            self.warnings
                .push(format!("{el}: `gravcomp=\"{v}\"` not supported, ignored"));
        }
        let mocap = self.mocap_attribute(&node, &el, parent)?;
        let id = self.bodies.len();
        self.bodies.push(BodyRec {
            name,
            element: el.clone(),
            parent,
            local,
            joints: Vec::new(),
            inertia: Inertia::zero(),
            has_inertial: false,
            principal: None,
            geoms: Vec::new(),
            sites: Vec::new(),
            cameras: Vec::new(),
            mocap,
        });
        self.body_children(node, id, &cc, &SE3::identity())?;
        if mocap {
            self.check_mocap(id)?;
        }
        // The body's own inertia from its geoms.
        let b = &self.bodies[id];
        let from_geoms = match self.inertia_from_geom {
            InertiaFromGeom::True => true,
            InertiaFromGeom::Auto => !b.has_inertial,
            InertiaFromGeom::False => false,
        };
        if from_geoms {
            if let Some(g) = b.geoms.iter().find(|g| g.flat.is_some()) {
                let reason = g.flat.clone().unwrap_or_default();
                return Err(self.error(
                    &g.element,
                    format!(
                        "{reason}; {el} takes its inertia from its geoms, and this one has no volume (give the body an <inertial>, as MuJoCo needs too)"
                    ),
                ));
            }
            let total = b
                .geoms
                .iter()
                .fold(Inertia::zero(), |acc, g| acc.add(&g.inertia));
            self.bodies[id].inertia = total;
            self.bodies[id].principal = None;
        }
        Ok(())
    }

    pub(super) fn joint(
        &mut self,
        node: Node<'a, 'i>,
        childclass: &str,
        frame: &SE3,
    ) -> Result<JointRec, ModelFileError> {
        let el0 = element_name(&node, "");
        let class = self.class_of(&node, childclass, &el0)?;
        let classes = self.classes.clone();
        // MuJoCo: `<freejoint>` is `<joint type="free">` with no stiffness,
        // damping, friction loss or armature, whatever the defaults say; it
        // reads no default class (its only attributes are name, group, align).
        let free_element = node.has_tag_name("freejoint");
        let get = |a: &str| {
            if free_element {
                node.attribute(a)
            } else {
                lookup(&classes, &node, &class, &["joint"], a)
            }
        };
        let kind = if free_element {
            JointKind::Free
        } else {
            match get("type").unwrap_or("hinge") {
                "hinge" => JointKind::Hinge,
                "slide" => JointKind::Slide,
                "ball" => JointKind::Ball,
                "free" => JointKind::Free,
                other => {
                    return Err(self.error(
                        &el0,
                        format!("unknown joint type `{other}` (hinge, slide, ball or free)"),
                    ));
                }
            }
        };
        let el = el0;
        let name = node.attribute("name").unwrap_or_default().to_string();
        if !name.is_empty() && !self.joint_names.insert(name.clone()) {
            return Err(self.error(&el, format!("duplicate joint name `{name}`")));
        }
        let pos = match get("pos") {
            Some(s) if kind != JointKind::Free => v3(self.fixed::<3>(s, "pos", &el)?),
            _ => Vec3::zeros(),
        };
        let axis = match get("axis") {
            Some(s) if matches!(kind, JointKind::Hinge | JointKind::Slide) => {
                v3(self.fixed::<3>(s, "axis", &el)?)
            }
            _ => Vec3::z(),
        };
        let n = axis.norm();
        if !(n > 1e-12 && n.is_finite()) {
            return Err(self.error(&el, format!("axis {:?} is zero", axis.as_slice())));
        }
        let axis = frame.rotation * (axis / n);
        let pos = frame.act_point(&pos);
        // Angles: hinge ref and range, ball range.
        let unit = match kind {
            JointKind::Hinge | JointKind::Ball => self.angle,
            _ => 1.0,
        };
        let reference = match get("ref") {
            Some(s) if matches!(kind, JointKind::Hinge | JointKind::Slide) => {
                self.fixed::<1>(s, "ref", &el)?[0] * unit
            }
            _ => 0.0,
        };
        let range = match get("range") {
            Some(s) => {
                let r = self.fixed::<2>(s, "range", &el)?;
                Some((r[0] * unit, r[1] * unit))
            }
            None => None,
        };
        let limited = match self.tristate(get("limited"), "limited", &el)? {
            Some(l) => l,
            None if self.autolimits => range.is_some(),
            None => false,
        };
        let limit = if limited && kind != JointKind::Free {
            let (lo, hi) = range.unwrap_or((0.0, 0.0));
            match kind {
                JointKind::Ball if lo != 0.0 || hi <= 0.0 => {
                    return Err(self.error(
                        &el,
                        format!(
                            "a limited ball joint needs range=\"0 max\" with max > 0, got {lo} {hi}"
                        ),
                    ));
                }
                JointKind::Ball => Some((0.0, hi)),
                _ if lo >= hi => {
                    return Err(self.error(
                        &el,
                        format!("a limited joint needs range lower < upper, got {lo} {hi}"),
                    ));
                }
                _ => Some((lo, hi)),
            }
        } else {
            None
        };
        let flags = self.flags;
        let mut springdamper = None;
        let mut spec = JointSpec {
            name: name.clone(),
            range: limit.filter(|_| flags.limits()),
            ..Default::default()
        };
        for attr in [
            "damping",
            "armature",
            "stiffness",
            "frictionloss",
            "springref",
            "springdamper",
        ] {
            // What a disabled `<flag>` switches off reads as absent.
            let off = match attr {
                "damping" => !flags.damper,
                "stiffness" | "springref" => !flags.spring,
                "frictionloss" => !flags.frictionlosses(),
                _ => false,
            };
            if let Some(s) = get(attr).filter(|_| !off) {
                let v = self.list(s, attr, &el)?;
                let first = v.first().copied().unwrap_or(0.0);
                match attr {
                    "damping" => spec.damping = first,
                    "armature" => spec.armature = first,
                    // (Per dof, as MuJoCo's; a free joint's linear dofs
                    // are in the body frame here, in the world's there.)
                    "frictionloss" if kind != JointKind::Free => spec.frictionloss = first,
                    "stiffness" => spec.stiffness = first,
                    "springref" => spec.springref = first,
                    "springdamper" => {
                        let [t, z] = self.fixed::<2>(s, attr, &el)?;
                        if t > 0.0 && z > 0.0 {
                            springdamper = Some((t, z));
                        }
                    }
                    _ => {}
                }
                // Damping, armature, springs on hinges and slides, dry
                // friction but on free joints are simulated.
                let simulated = matches!(attr, "damping" | "armature")
                    || (matches!(attr, "stiffness" | "springref" | "springdamper")
                        && matches!(kind, JointKind::Hinge | JointKind::Slide))
                    || (attr == "frictionloss" && kind != JointKind::Free);
                if !simulated && v.iter().any(|x| *x != 0.0) {
                    let who = if name.is_empty() {
                        el.clone()
                    } else {
                        name.clone()
                    };
                    self.unmodelled.entry(attr).or_default().push(who);
                }
            }
        }
        Ok(JointRec {
            name,
            element: el,
            kind,
            pos,
            axis,
            reference,
            spec,
            springdamper: springdamper
                .filter(|_| matches!(kind, JointKind::Hinge | JointKind::Slide)),
        })
    }
}
