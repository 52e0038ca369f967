//! Loading MJCF (MuJoCo XML) models into a [`Model`].
//!
//! The subset that Gymnasium's MuJoCo tasks (and most hand-written robot
//! files) use, with MuJoCo's semantics; everything else is either harmless
//! and skipped (rendering, sensors) or reported in [`MjcfModel::warnings`]
//! naming the element, never dropped silently.
//!
//! # Mapping, element by element
//!
//! - `<compiler>`: `angle` (`degree`, MuJoCo's default, or `radian`; applies
//!   to `euler`, `axisangle`, hinge and ball `range`, hinge `ref`),
//!   `eulerseq` (default `xyz`; lowercase letters are intrinsic, rotating
//!   axes, uppercase extrinsic), `inertiafromgeom` (`auto`: the `<inertial>`
//!   element when present, else the geoms; `true`: always the geoms;
//!   `false`: only `<inertial>`), `settotalmass` (every body's mass and
//!   inertia scaled so that they sum to it), `meshdir` / `assetdir`,
//!   `coordinate="local"` (`global` is refused), `autolimits`. Other
//!   attributes that change the physics (`boundmass`, `balanceinertia`,
//!   `fusestatic`, ...) are warned about.
//! - `<option>`: `timestep` ([`MjcfModel::timestep`]) and `gravity`. The
//!   integrator, the solver settings, the medium (`density`, `viscosity`,
//!   `wind`) and `<flag>`s are not used by moreau: one warning names them.
//! - `<default>`: classes, nested inheritance, `class=` on elements and
//!   `childclass=` on bodies (and frames); the unnamed top class is `main`.
//!   Read for `joint`, `geom`, `mesh` and the actuators.
//! - `<worldbody>` / `<body>` / `<frame>`: body frames from `pos` and one of
//!   `quat` (w x y z), `axisangle`, `euler`, `xyaxes`, `zaxis`.
//!   - A body with **no joint** is welded to its parent: its inertia and
//!     geoms are merged into the nearest ancestor body that moves (or the
//!     world), as MuJoCo's dynamics do. It still counts in
//!     [`MjcfModel::bodies`] (MuJoCo's `nbody`) and is listed in
//!     [`MjcfModel::mjcf_bodies`] with its placement in the body carrying it.
//!   - `joint type="hinge"` → [`JointType::Revolute`], `slide` →
//!     [`JointType::Prismatic`], `ball` → [`JointType::Spherical`], `free`
//!     and `<freejoint>` → [`JointType::Free`] (top-level bodies only, as in
//!     MuJoCo). Our body frame *is* the joint frame, so a hinge at `pos = p`
//!     puts the joint frame at `parent_from_body · T(p)` and the body's
//!     geoms and inertia are re-expressed by `T(p)⁻¹`. A joint's `ref` is
//!     folded into the joint placement, so that `q` means what MuJoCo's
//!     `qpos` means (hopper's `rootz` has `ref="1.25"`).
//!   - Several joints in one body become a chain of massless bodies (each at
//!     its own `pos`, MuJoCo's composition `T(pₖ) R(qₖ) T(pₖ)⁻¹`), the last
//!     one carrying the mass and the geoms; [`Model::nbodies`] counts them.
//!   - `q` has MuJoCo's `qpos` order and meaning except for quaternions,
//!     stored `(x, y, z, w)` here: [`MjcfModel::q_from_mujoco`] converts, and
//!     [`MjcfModel::q0`] is MuJoCo's `qpos0`. A free joint's velocity is the
//!     body twist in the body frame (MuJoCo: world linear velocity, body
//!     angular velocity).
//!   - `range` with `limited` (`auto`: limited iff a range is given) goes to
//!     [`Model::joint_range`], `damping`, `armature`, `frictionloss` to
//!     [`Model::dof_damping`], [`Model::dof_armature`],
//!     [`Model::dof_frictionloss`]; the simulator does not use them yet (a
//!     warning says so). `stiffness`, `springref`, `springdamper` are not
//!     modelled: one warning per attribute names the joints that set them.
//! - `<geom>`: `sphere` → [`Shape::Ball`], `capsule` → [`Shape::Capsule`],
//!   `cylinder` → [`Shape::Cylinder`] (size: radius, half-length; or
//!   `fromto` with the radius), `box` → [`Shape::Cuboid`] (half-sizes),
//!   `plane` → [`Shape::HalfSpace`] with outward normal +z (static bodies
//!   only, as in MuJoCo), `mesh` → [`Shape::ConvexMesh`] of the mesh file's
//!   convex hull, `ellipsoid` → a convex hull of points on its surface (its
//!   mass properties are the exact ellipsoid's; a warning says so); `fromto`
//!   works for capsule, cylinder, box and ellipsoid. `hfield` and `sdf` are
//!   not loaded (warning). `friction`'s first value is the sliding `μ`;
//!   `contype` / `conaffinity` as in MuJoCo; a geom with both zero is a
//!   visual geom: it has mass but no collider. `density` (1000) or `mass`
//!   give its mass; MuJoCo's formulas for the inertia (capsule = cylinder +
//!   two hemispheres; meshes from their convex hull, i.e. MuJoCo's
//!   `inertia="convex"`). `condim`, `solref`, `solimp`, `margin`, `gap`,
//!   `priority` are not used (a warning names geoms whose `condim` is not 3).
//!   Pairs combine friction by [`super::combine_friction`] (geometric mean),
//!   where MuJoCo takes the maximum; a warning says so when frictions differ.
//! - `<inertial>`: `pos`, orientation, `mass`, `diaginertia` or
//!   `fullinertia` (`ixx iyy izz ixy ixz iyz`).
//! - `<asset><mesh name file scale vertex>` (STL, OBJ; `vertex` inline
//!   points); textures, materials, skins, height fields are not physics.
//! - `<contact><exclude body1 body2>` → [`ModelBuilder::exclude_collision`]
//!   between the bodies carrying them: since welded bodies share one model
//!   body, an exclusion also covers the bodies welded to the two named ones
//!   (MuJoCo excludes exactly the two). `<pair>` is warned about. MuJoCo's
//!   parent filter (a body never collides with its parent, both taken with
//!   the bodies welded to them) is reproduced through exclusions.
//! - `<actuator>`: `motor` (and `general` with the default fixed gain, no
//!   bias, no activation dynamics) on a hinge or slide joint →
//!   [`Actuator`] with `gear` (times `gainprm[0]` for `general`) and the
//!   control range; torque on dof `dof` is `gear · ctrl`. Other actuator
//!   types, tendon/site/body transmissions and motors on ball or free joints
//!   are warned about.
//! - Skipped without a warning (no effect on the dynamics): `site`,
//!   `camera`, `light`, `visual`, `statistic`, `size`, `custom`, `keyframe`,
//!   `sensor`, textures and materials. Warned about: `tendon`, `equality`,
//!   `include`, `composite`, `flexcomp`, `replicate`, `attach`, `plugin`,
//!   `deformable`, `extension` and anything unknown.
//!
//! Errors (a [`ModelFileError`] naming the file, the element, e.g.
//! `<joint name="knee">` or `<geom name="shin" type="capsule">`, and the
//! reason; never a panic): malformed XML, an unknown joint or geom type, a
//! body that moves without positive mass and inertia, a negative mass,
//! density or inertia, a geom size of the wrong count or sign, a missing or
//! unreadable mesh, an unknown default class, a joint in `<worldbody>`, a
//! free joint below the top level, an actuator or exclusion naming a missing
//! joint or body, several orientations on one element, bodies, frames or
//! default classes nested deeper than 256 levels (the reader recurses).

use super::builder::validate_inertia;
use super::mesh::{MeshCache, convex_hull_vertices, resolve_mesh_path};
pub use super::xml::ModelFileError;
use super::xml::{error_for, number_list, read_file};
use super::{Actuator, JointSpec, JointType, Material, Model, ModelBuilder, Shape, WORLD};
use crate::math::{Inertia, Mat3, SE3, Vec3};
use nalgebra::{DVector, Quaternion, Rotation3, Unit, UnitQuaternion};
use roxmltree::Node;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::f64::consts::PI;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// How to load an MJCF file.
#[derive(Clone, Debug, Default)]
pub struct MjcfOptions {
    /// Directories searched for `package://` mesh references (see
    /// [`resolve_mesh_path`]).
    pub package_dirs: Vec<PathBuf>,
}

/// Where an MJCF body went: the model body that carries its geoms and
/// inertia, and the MJCF body frame in that body's frame.
#[derive(Clone, Debug)]
pub struct MjcfBody {
    /// The MJCF name (empty for unnamed bodies); index 0 is `world`.
    pub name: String,
    /// Index into the model's bodies ([`WORLD`] for bodies welded to it).
    pub body: usize,
    /// The MJCF body frame in the frame of `body`.
    pub body_from_mjcf: SE3,
}

/// A loaded MJCF model.
#[derive(Clone, Debug)]
pub struct MjcfModel {
    pub model: Model,
    /// `<option timestep>`, when the file sets it (MuJoCo's default is 0.002 s).
    pub timestep: Option<f64>,
    /// Number of MJCF bodies including the world: MuJoCo's `nbody`. The
    /// model has more bodies when a body has several joints and fewer when
    /// bodies are welded together.
    pub bodies: usize,
    /// (bodies) each MJCF body, in file order.
    pub mjcf_bodies: Vec<MjcfBody>,
    /// (nq) the configuration in which every body sits where the file puts
    /// it: MuJoCo's `qpos0` (quaternions `(x, y, z, w)`).
    pub q0: DVector<f64>,
    /// What was read but not loaded, each naming its element.
    pub warnings: Vec<String>,
}

impl MjcfModel {
    /// Converts a MuJoCo `qpos` of this model (quaternions `(w, x, y, z)`)
    /// to our `q` (quaternions `(x, y, z, w)`); the joint order is the same.
    pub fn q_from_mujoco(&self, qpos: &[f64]) -> Result<DVector<f64>, String> {
        let m = &self.model;
        if qpos.len() != m.nq {
            return Err(format!("qpos has length {}, expected {}", qpos.len(), m.nq));
        }
        let mut q = DVector::from_column_slice(qpos);
        for i in 1..m.nbodies {
            if let Some(o) = m.joint_type[i].quaternion_offset() {
                let k = m.joint_idx_q[i] + o;
                let w = qpos[k];
                q[k] = qpos[k + 1];
                q[k + 1] = qpos[k + 2];
                q[k + 2] = qpos[k + 3];
                q[k + 3] = w;
            }
        }
        Ok(q)
    }
}

/// Loads the MJCF file at `path` (meshes are found relative to its directory).
pub fn load_mjcf(
    path: impl AsRef<Path>,
    options: &MjcfOptions,
) -> Result<MjcfModel, ModelFileError> {
    let path = path.as_ref();
    let text = read_file(path)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    parse_mjcf(&text, &path.display().to_string(), dir, options)
}

/// Parses MJCF text; `file` names it in errors, relative mesh paths start at `model_dir`.
pub fn parse_mjcf(
    text: &str,
    file: &str,
    model_dir: &Path,
    options: &MjcfOptions,
) -> Result<MjcfModel, ModelFileError> {
    let err = error_for(file);
    let doc = roxmltree::Document::parse(text).map_err(|e| err("XML", e.to_string()))?;
    let root = doc.root_element();
    if root.tag_name().name() != "mujoco" {
        return Err(err(
            &format!("<{}>", root.tag_name().name()),
            "the root element must be <mujoco>".into(),
        ));
    }
    let mut p = Parser {
        err: &err,
        classes: Rc::new(HashMap::new()),
        angle: PI / 180.0,
        eulerseq: *b"xyz",
        inertia_from_geom: InertiaFromGeom::Auto,
        autolimits: true,
        model_dir: model_dir.to_path_buf(),
        mesh_dir: model_dir.to_path_buf(),
        package_dirs: options.package_dirs.clone(),
        meshes: HashMap::new(),
        mesh_cache: MeshCache::new(),
        warnings: Vec::new(),
        unmodelled: BTreeMap::new(),
        bodies: Vec::new(),
        joint_names: HashSet::new(),
        geom_names: HashSet::new(),
        ellipsoids: Vec::new(),
        odd_condim: Vec::new(),
        settotalmass: None,
    };
    Rc::make_mut(&mut p.classes).insert(
        "main".into(),
        DefaultClass {
            parent: None,
            elems: Vec::new(),
        },
    );
    let top: Vec<Node> = root.children().filter(|n| n.is_element()).collect();
    let named = |tag: &'static str| top.iter().filter(move |n| n.has_tag_name(tag));

    // Settings first: MJCF allows the sections in any order.
    for c in named("compiler") {
        p.compiler(*c)?;
    }
    for d in named("default") {
        p.defaults(*d, None)?;
    }
    let mut timestep = None;
    let mut gravity = Vec3::new(0.0, 0.0, -9.81);
    for o in named("option") {
        p.option(*o, &mut timestep, &mut gravity)?;
    }
    for a in named("asset") {
        p.assets(*a)?;
    }
    p.bodies.push(BodyRec {
        name: "world".into(),
        element: "<worldbody>".into(),
        parent: 0,
        local: SE3::identity(),
        joints: Vec::new(),
        inertia: Inertia::zero(),
        has_inertial: false,
        geoms: Vec::new(),
    });
    for w in named("worldbody") {
        p.body_children(*w, 0, "main", &SE3::identity())?;
    }
    for n in &top {
        match n.tag_name().name() {
            "compiler" | "default" | "option" | "asset" | "worldbody" | "actuator" | "contact" => {}
            "size" | "visual" | "statistic" | "custom" | "keyframe" | "sensor" => {}
            other => p.warnings.push(format!(
                "<{other}>{}: not supported, ignored",
                name_suffix(n)
            )),
        }
    }
    p.build(root, timestep, gravity)
}

#[derive(Clone, Copy, PartialEq)]
enum InertiaFromGeom {
    Auto,
    True,
    False,
}

#[derive(Clone)]
struct DefaultClass<'a, 'i> {
    parent: Option<String>,
    elems: Vec<Node<'a, 'i>>,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum JointKind {
    Hinge,
    Slide,
    Ball,
    Free,
}

struct JointRec {
    name: String,
    element: String,
    kind: JointKind,
    /// Anchor and axis in the MJCF body frame.
    pos: Vec3,
    axis: Vec3,
    /// `ref` (radians or metres).
    reference: f64,
    /// Name, range, damping, armature, frictionloss, as the model records them.
    spec: JointSpec,
}

struct GeomRec {
    name: String,
    element: String,
    mjcf_from_geom: SE3,
    /// `None`: no collider (visual geom, or not loadable).
    shape: Option<Shape>,
    material: Material,
    /// Mass properties in the MJCF body frame (zero for planes and massless geoms).
    inertia: Inertia,
    /// Whether the geom is a plane (static bodies only).
    plane: bool,
}

struct BodyRec {
    name: String,
    element: String,
    parent: usize,
    /// The body frame in its parent's MJCF frame.
    local: SE3,
    joints: Vec<JointRec>,
    /// Own inertia in the MJCF body frame.
    inertia: Inertia,
    has_inertial: bool,
    geoms: Vec<GeomRec>,
}

struct MeshAsset {
    element: String,
    file: Option<String>,
    vertices: Option<Vec<Vec3>>,
    scale: Vec3,
    /// Hull and unit-density mass properties, once loaded.
    loaded: Option<(Shape, f64, Vec3, Mat3)>,
}

type Classes<'a, 'i> = HashMap<String, DefaultClass<'a, 'i>>;

/// An attribute of `node`, or else of the defaults of `class` (and its
/// ancestors) for the element kinds `group`.
fn lookup<'a>(
    classes: &Classes<'a, '_>,
    node: &Node<'a, '_>,
    class: &str,
    group: &[&str],
    attr: &str,
) -> Option<&'a str> {
    if let Some(v) = node.attribute(attr) {
        return Some(v);
    }
    let mut c = Some(class);
    // Class names are unique and parents are defined first: no cycles,
    // but bound the walk anyway.
    for _ in 0..classes.len() + 1 {
        let cls = classes.get(c?)?;
        for e in cls.elems.iter().rev() {
            if group.contains(&e.tag_name().name())
                && let Some(v) = e.attribute(attr)
            {
                return Some(v);
            }
        }
        c = cls.parent.as_deref();
    }
    None
}

type ErrFn<'e> = &'e dyn Fn(&str, String) -> ModelFileError;

struct Parser<'a, 'i, 'e> {
    err: ErrFn<'e>,
    classes: Rc<Classes<'a, 'i>>,
    /// Radians per angle unit of the file.
    angle: f64,
    eulerseq: [u8; 3],
    inertia_from_geom: InertiaFromGeom,
    autolimits: bool,
    model_dir: PathBuf,
    mesh_dir: PathBuf,
    package_dirs: Vec<PathBuf>,
    meshes: HashMap<String, MeshAsset>,
    mesh_cache: MeshCache,
    warnings: Vec<String>,
    /// Joint attributes moreau does not model → the joints setting them.
    unmodelled: BTreeMap<&'static str, Vec<String>>,
    bodies: Vec<BodyRec>,
    joint_names: HashSet<String>,
    geom_names: HashSet<String>,
    ellipsoids: Vec<String>,
    odd_condim: Vec<String>,
    settotalmass: Option<f64>,
}

/// Deepest nesting of XML elements read (bodies, frames, default classes).
const MAX_DEPTH: usize = 256;

const ACTUATOR_TAGS: &[&str] = &[
    "general",
    "motor",
    "position",
    "velocity",
    "intvelocity",
    "damper",
    "cylinder",
    "muscle",
    "adhesion",
];

fn name_suffix(n: &Node) -> String {
    n.attribute("name")
        .map(|s| format!(" name=\"{s}\""))
        .unwrap_or_default()
}

/// `<tag name="x">` (or `<tag>`), plus extra `key="value"` text.
fn element_name(n: &Node, extra: &str) -> String {
    format!("<{}{}{}>", n.tag_name().name(), name_suffix(n), extra)
}

fn v3(a: [f64; 3]) -> Vec3 {
    Vec3::new(a[0], a[1], a[2])
}

/// The rotation that takes +z onto `v` along the shortest arc (MuJoCo's `mju_quatZ2Vec`).
fn rotation_z_to(v: &Vec3) -> Mat3 {
    let n = v.norm();
    if !(n.is_finite() && n > 1e-15) {
        return Mat3::identity();
    }
    let d = v / n;
    let axis = Vec3::z().cross(&d);
    let s = axis.norm();
    if s < 1e-15 {
        return if d.z < 0.0 {
            Mat3::from_diagonal(&Vec3::new(1.0, -1.0, -1.0))
        } else {
            Mat3::identity()
        };
    }
    let angle = s.atan2(d.z);
    *Rotation3::from_axis_angle(&Unit::new_unchecked(axis / s), angle).matrix()
}

impl<'a, 'i, 'e> Parser<'a, 'i, 'e> {
    fn error(&self, element: &str, reason: String) -> ModelFileError {
        (self.err)(element, reason)
    }

    fn list(&self, text: &str, what: &str, element: &str) -> Result<Vec<f64>, ModelFileError> {
        number_list(text, what, element, &self.err)
    }

    fn fixed<const N: usize>(
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

    fn boolean(&self, text: &str, what: &str, element: &str) -> Result<bool, ModelFileError> {
        match text {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(self.error(
                element,
                format!("`{what}` must be `true` or `false`, got `{text}`"),
            )),
        }
    }

    /// `true` / `false` / `auto` (→ `None`).
    fn tristate(
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
    fn class_of(
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
    fn get(&self, node: &Node<'a, 'i>, class: &str, group: &[&str], attr: &str) -> Option<&'a str> {
        lookup(&self.classes, node, class, group, attr)
    }

    /// Nested bodies, frames and default classes are read recursively: refuse
    /// a depth that could exhaust a thread's stack.
    fn check_depth(&self, node: &Node) -> Result<(), ModelFileError> {
        if node.ancestors().count() > MAX_DEPTH {
            return Err(self.error(
                &element_name(node, ""),
                format!("elements nested deeper than {MAX_DEPTH} levels are not supported"),
            ));
        }
        Ok(())
    }

    fn compiler(&mut self, c: Node) -> Result<(), ModelFileError> {
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

    fn defaults(&mut self, d: Node<'a, 'i>, parent: Option<&str>) -> Result<(), ModelFileError> {
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

    fn option(
        &mut self,
        o: Node,
        timestep: &mut Option<f64>,
        gravity: &mut Vec3,
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
                // Used by magnetometers only.
                "magnetic" => {}
                // MuJoCo's default, semi-implicit like moreau's.
                "integrator" if a.value() == "Euler" => {}
                other => ignored.push(format!("{other}=\"{}\"", a.value())),
            }
        }
        for f in o.children().filter(|n| n.is_element()) {
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

    fn assets(&mut self, a: Node<'a, 'i>) -> Result<(), ModelFileError> {
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
                    scale,
                    loaded: None,
                },
            );
        }
        Ok(())
    }

    /// The orientation given by one of `quat`, `axisangle`, `euler`,
    /// `xyaxes`, `zaxis` (identity when none).
    fn orientation(
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
    fn frame(
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
    fn body_children(
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
                    let inertia = self.inertial(ch, &el, frame)?;
                    if self.inertia_from_geom != InertiaFromGeom::True {
                        self.bodies[body].inertia = inertia;
                    }
                    self.bodies[body].has_inertial = true;
                }
                "site" | "camera" | "light" => {}
                other => self.warnings.push(format!(
                    "{} <{other}>{}: not supported, ignored",
                    self.bodies[body].element,
                    name_suffix(&ch)
                )),
            }
        }
        Ok(())
    }

    fn body(
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
        for attr in ["mocap", "gravcomp"] {
            if let Some(v) = node.attribute(attr)
                && v != "false"
                && v != "0"
            {
                self.warnings
                    .push(format!("{el}: `{attr}=\"{v}\"` not supported, ignored"));
            }
        }
        let id = self.bodies.len();
        self.bodies.push(BodyRec {
            name,
            element: el.clone(),
            parent,
            local,
            joints: Vec::new(),
            inertia: Inertia::zero(),
            has_inertial: false,
            geoms: Vec::new(),
        });
        self.body_children(node, id, &cc, &SE3::identity())?;
        // The body's own inertia from its geoms.
        let b = &self.bodies[id];
        let from_geoms = match self.inertia_from_geom {
            InertiaFromGeom::True => true,
            InertiaFromGeom::Auto => !b.has_inertial,
            InertiaFromGeom::False => false,
        };
        if from_geoms {
            let total = b
                .geoms
                .iter()
                .fold(Inertia::zero(), |acc, g| acc.add(&g.inertia));
            self.bodies[id].inertia = total;
        }
        Ok(())
    }

    fn joint(
        &mut self,
        node: Node<'a, 'i>,
        childclass: &str,
        frame: &SE3,
    ) -> Result<JointRec, ModelFileError> {
        let el0 = element_name(&node, "");
        let class = self.class_of(&node, childclass, &el0)?;
        let classes = self.classes.clone();
        let get = |a: &str| lookup(&classes, &node, &class, &["joint"], a);
        let kind = if node.has_tag_name("freejoint") {
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
        let mut spec = JointSpec {
            name: name.clone(),
            range: limit,
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
            if let Some(s) = get(attr) {
                let v = self.list(s, attr, &el)?;
                let first = v.first().copied().unwrap_or(0.0);
                match attr {
                    "damping" => spec.damping = first,
                    "armature" => spec.armature = first,
                    "frictionloss" => spec.frictionloss = first,
                    _ => {}
                }
                if v.iter().any(|x| *x != 0.0) {
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
        })
    }

    fn inertial(&mut self, node: Node, el: &str, frame: &SE3) -> Result<Inertia, ModelFileError> {
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
        Ok(Inertia::new(
            mass,
            f.translation,
            f.rotation * local * f.rotation.transpose(),
        ))
    }

    fn geom(
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
        let size = match get("size") {
            Some(s) => self.list(s, "size", &el)?,
            None => Vec::new(),
        };
        if size.len() > 3 {
            return Err(self.error(
                &el,
                format!("`size` has at most 3 numbers, got {}", size.len()),
            ));
        }
        let sz = |k: usize| size.get(k).copied().unwrap_or(0.0);
        let need = |k: usize, what: &str| -> Result<f64, ModelFileError> {
            let v = sz(k);
            if k >= size.len() {
                Err(self.error(
                    &el,
                    format!(
                        "a {gtype} needs size[{k}] ({what}); `size` has {} number(s)",
                        size.len()
                    ),
                ))
            } else if v <= 0.0 {
                Err(self.error(&el, format!("size[{k}] ({what}) must be positive, got {v}")))
            } else {
                Ok(v)
            }
        };
        // Placement: fromto (capsule, cylinder, box, ellipsoid) or pos + orientation.
        let fromto = match get("fromto") {
            Some(s) if matches!(gtype, "capsule" | "cylinder" | "box" | "ellipsoid") => {
                let f = self.fixed::<6>(s, "fromto", &el)?;
                let (a, b) = (Vec3::new(f[0], f[1], f[2]), Vec3::new(f[3], f[4], f[5]));
                let half = (b - a).norm() / 2.0;
                if !(half > 0.0 && half.is_finite()) {
                    return Err(
                        self.error(&el, "`fromto` end points coincide (zero length)".into())
                    );
                }
                Some((SE3::new(rotation_z_to(&(b - a)), (a + b) / 2.0), half))
            }
            _ => None,
        };
        let placement = match fromto {
            Some((f, _)) => f,
            None => self.frame(&get, &el)?,
        };
        let mjcf_from_geom = frame.mul(&placement);
        let half_z = |k: usize, what: &str| match fromto {
            Some((_, h)) => Ok(h),
            None => need(k, what),
        };
        // Shape and unit-density mass properties (volume, com, inertia / density)
        // in the geom frame.
        let ball = |r: f64| {
            (
                4.0 / 3.0 * PI * r * r * r,
                Inertia::sphere(1.0, r).rotational,
            )
        };
        let (shape, volume, com, unit_inertia): (Option<Shape>, f64, Vec3, Mat3) = match gtype {
            "sphere" => {
                let r = need(0, "radius")?;
                let (v, i) = ball(r);
                (Some(Shape::Ball { radius: r }), v, Vec3::zeros(), i * v)
            }
            "capsule" => {
                let r = need(0, "radius")?;
                let h = half_z(1, "half-length")?;
                let v = PI * r * r * 2.0 * h + 4.0 / 3.0 * PI * r * r * r;
                let i = Inertia::capsule(v, r, 2.0 * h).rotational;
                let s = Shape::Capsule {
                    half_length: h,
                    radius: r,
                };
                (Some(s), v, Vec3::zeros(), i)
            }
            "cylinder" => {
                let r = need(0, "radius")?;
                let h = half_z(1, "half-length")?;
                let v = PI * r * r * 2.0 * h;
                let i = Inertia::cylinder(v, r, 2.0 * h).rotational;
                let s = Shape::Cylinder {
                    half_length: h,
                    radius: r,
                };
                (Some(s), v, Vec3::zeros(), i)
            }
            "box" => {
                let hx = need(0, "half-size x")?;
                let hy = need(1, "half-size y")?;
                let hz = half_z(2, "half-size z")?;
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
                let a = need(0, "radius x")?;
                let b = need(1, "radius y")?;
                let c = half_z(2, "radius z")?;
                let v = 4.0 / 3.0 * PI * a * b * c;
                let i =
                    Mat3::from_diagonal(&Vec3::new(b * b + c * c, a * a + c * c, a * a + b * b))
                        * (v / 5.0);
                self.ellipsoids.push(el.clone());
                (Some(ellipsoid_hull(a, b, c)), v, Vec3::zeros(), i)
            }
            "plane" => (
                Some(Shape::HalfSpace { normal: Vec3::z() }),
                0.0,
                Vec3::zeros(),
                Mat3::zeros(),
            ),
            "mesh" => {
                let Some(mesh) = get("mesh") else {
                    return Err(self.error(&el, "a mesh geom needs a `mesh` attribute".into()));
                };
                let (shape, v, c, i) = self.mesh(mesh, &el)?;
                (Some(shape), v, c, i)
            }
            "hfield" | "sdf" => {
                self.warnings.push(format!(
                    "{} {el}: {gtype} geoms are not supported, not loaded",
                    self.bodies[body].element
                ));
                (None, 0.0, Vec3::zeros(), Mat3::zeros())
            }
            other => {
                return Err(self.error(
                    &el,
                    format!(
                        "unknown geom type `{other}` (plane, sphere, capsule, cylinder, box, ellipsoid, mesh)"
                    ),
                ));
            }
        };
        let plane = gtype == "plane";
        // Mass: `mass`, else density · volume.
        let density = match get("density") {
            Some(s) => self.fixed::<1>(s, "density", &el)?[0],
            None => 1000.0,
        };
        let mass = match get("mass") {
            Some(s) => self.fixed::<1>(s, "mass", &el)?[0],
            None => density * volume,
        };
        if mass < 0.0 || density < 0.0 {
            return Err(self.error(
                &el,
                format!("mass and density must not be negative (mass {mass}, density {density})"),
            ));
        }
        if let Some(s) = get("shellinertia")
            && s == "true"
        {
            self.warnings.push(format!(
                "{el}: shellinertia not supported, solid inertia used"
            ));
        }
        let inertia = if mass > 0.0 && volume > 0.0 {
            Inertia::new(mass, com, unit_inertia * (mass / volume)).transformed(&mjcf_from_geom)
        } else {
            Inertia::zero()
        };
        // Collision.
        let friction = match get("friction") {
            Some(s) => {
                let f = self.list(s, "friction", &el)?;
                match f.first() {
                    Some(&mu) if f.len() <= 3 && mu >= 0.0 => mu,
                    _ => {
                        return Err(self.error(
                            &el,
                            format!("`friction` needs 1 to 3 non-negative numbers, got `{s}`"),
                        ));
                    }
                }
            }
            None => 1.0,
        };
        let bits = |attr: &str| -> Result<u32, ModelFileError> {
            match get(attr) {
                None => Ok(1),
                Some(s) => s.trim().parse::<u32>().map_err(|_| {
                    self.error(
                        &el,
                        format!("`{attr}` must be a non-negative integer, got `{s}`"),
                    )
                }),
            }
        };
        let (contype, conaffinity) = (bits("contype")?, bits("conaffinity")?);
        let condim = get("condim").unwrap_or("3").trim();
        if condim != "3" && (contype | conaffinity) != 0 {
            self.odd_condim.push(format!("{el} (condim {condim})"));
        }
        let name = match node.attribute("name") {
            Some(n) => {
                if !self.geom_names.insert(n.to_string()) {
                    return Err(self.error(&el, format!("duplicate geom name `{n}`")));
                }
                n.to_string()
            }
            None => String::new(),
        };
        Ok(GeomRec {
            name,
            element: el,
            mjcf_from_geom,
            shape: if contype == 0 && conaffinity == 0 {
                None
            } else {
                shape
            },
            material: Material {
                friction,
                restitution: 0.0,
                contype,
                conaffinity,
            },
            inertia,
            plane,
        })
    }

    /// The convex hull of mesh asset `name` and its unit-density mass
    /// properties: (shape, volume, centre of volume, inertia about it).
    fn mesh(&mut self, name: &str, el: &str) -> Result<(Shape, f64, Vec3, Mat3), ModelFileError> {
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
        let Some((volume, c, inertia)) = hull_mass_properties(points) else {
            return Err(self.error(&ael, "the mesh's convex hull has no volume".into()));
        };
        let out = (shape, volume, c, inertia);
        if let Some(a) = self.meshes.get_mut(name) {
            a.loaded = Some(out.clone());
        }
        Ok(out)
    }
}

/// Volume, centroid and unit-density inertia about the centroid of the
/// convex hull of `points`: a sum over the tetrahedra joining a point to the
/// hull's faces (second moments `V/20 (a aᵀ + b bᵀ + c cᵀ + s sᵀ)`, `s = a + b + c`,
/// for the tetrahedron `(0, a, b, c)`). (parry's `mass_properties` on the hull
/// gets the principal moments right but, in parry 0.31, not always the axes.)
fn hull_mass_properties(points: &[Vec3]) -> Option<(f64, Vec3, Mat3)> {
    let pts: Vec<parry3d_f64::math::Vector> = points
        .iter()
        .map(|p| parry3d_f64::math::Vector::new(p.x, p.y, p.z))
        .collect();
    let (vertices, faces) = parry3d_f64::transformation::try_convex_hull(&pts).ok()?;
    let v: Vec<Vec3> = vertices.iter().map(|p| Vec3::new(p.x, p.y, p.z)).collect();
    // Relative to a point inside, for accuracy far from the origin.
    let o = v.iter().sum::<Vec3>() / v.len().max(1) as f64;
    let (mut volume, mut first, mut second) = (0.0, Vec3::zeros(), Mat3::zeros());
    for f in &faces {
        let [a, b, c] = f.map(|k| v.get(k as usize).copied().unwrap_or(o) - o);
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

/// A convex polytope inscribed in the ellipsoid with radii `a, b, c`:
/// points on a latitude-longitude grid of its surface.
fn ellipsoid_hull(a: f64, b: f64, c: f64) -> Shape {
    let (nlat, nlon) = (8usize, 16usize);
    let mut points = vec![Vec3::new(0.0, 0.0, c), Vec3::new(0.0, 0.0, -c)];
    for i in 1..nlat {
        let theta = PI * i as f64 / nlat as f64;
        for j in 0..nlon {
            let phi = 2.0 * PI * j as f64 / nlon as f64;
            points.push(Vec3::new(
                a * theta.sin() * phi.cos(),
                b * theta.sin() * phi.sin(),
                c * theta.cos(),
            ));
        }
    }
    Shape::ConvexMesh { points }
}

/// `name`, or `name#2`, `name#3`, ... if taken; records it.
fn unique(name: String, used: &mut HashSet<String>) -> String {
    let mut out = name.clone();
    let mut k = 2;
    while used.contains(&out) {
        out = format!("{name}#{k}");
        k += 1;
    }
    used.insert(out.clone());
    out
}

/// A body of the model to build: one per joint of an MJCF body (the last
/// one carries the mass) and one per free body.
struct Plan {
    name: String,
    element: String,
    parent: usize,
    joint: JointType,
    placement: SE3,
    inertia: Inertia,
    massless: bool,
    spec: JointSpec,
}

impl<'a, 'i, 'e> Parser<'a, 'i, 'e> {
    fn build(
        mut self,
        root: Node<'a, 'i>,
        timestep: Option<f64>,
        gravity: Vec3,
    ) -> Result<MjcfModel, ModelFileError> {
        let n = self.bodies.len();
        if let Some(total) = self.settotalmass {
            let current: f64 = self.bodies.iter().map(|b| b.inertia.mass).sum();
            if !(total > 0.0 && current > 0.0 && current.is_finite()) {
                return Err(self.error(
                    "<compiler>",
                    format!(
                        "settotalmass=\"{total}\" needs a positive total and a model with mass (it has {current})"
                    ),
                ));
            }
            let s = total / current;
            for b in &mut self.bodies {
                b.inertia.mass *= s;
                b.inertia.rotational *= s;
            }
        }

        // Pass 1: the model's bodies. `carrier[b]`: the plan carrying MJCF
        // body `b`; `from[b]`: MJCF frame of `b` in that plan's frame;
        // `weld[b]`: the MJCF body with joints that `b` is welded to (0: world).
        let mut plans: Vec<Plan> = vec![Plan {
            name: "world".into(),
            element: "<worldbody>".into(),
            parent: WORLD,
            joint: JointType::Fixed,
            placement: SE3::identity(),
            inertia: Inertia::zero(),
            massless: true,
            spec: JointSpec::default(),
        }];
        let mut carrier = vec![WORLD; n];
        let mut from = vec![SE3::identity(); n];
        let mut weld = vec![0usize; n];
        let mut q0: Vec<f64> = Vec::new();
        let mut joint_plan: HashMap<String, (usize, JointKind, String)> = HashMap::new();
        let mut limited = 0usize;
        let mut used: HashSet<String> = HashSet::from(["world".to_string()]);
        for b in 1..n {
            let body = &self.bodies[b];
            let p = body.parent;
            let tail = from[p].mul(&body.local);
            if body.joints.is_empty() {
                carrier[b] = carrier[p];
                from[b] = tail;
                weld[b] = weld[p];
                continue;
            }
            weld[b] = b;
            // MuJoCo's rule: a body moved by a joint has mass and inertia of its own.
            validate_inertia(&body.name, &body.inertia).map_err(|e| {
                self.error(
                    &body.element,
                    format!(
                        "a body moved by a joint needs positive mass and a positive definite inertia (from <inertial> or its geoms): {e}"
                    ),
                )
            })?;
            let bname = unique(
                if body.name.is_empty() {
                    format!("body{b}")
                } else {
                    body.name.clone()
                },
                &mut used,
            );
            let nj = body.joints.len();
            if let Some(free) = body.joints.iter().find(|j| j.kind == JointKind::Free) {
                if nj > 1 {
                    return Err(self.error(
                        &free.element,
                        format!(
                            "a free joint must be the only joint of its body {}",
                            body.element
                        ),
                    ));
                }
                if p != 0 {
                    return Err(self.error(
                        &free.element,
                        format!(
                            "a free joint can only be used on a top-level body (a child of <worldbody>), not in {}",
                            body.element
                        ),
                    ));
                }
                plans.push(Plan {
                    name: bname,
                    element: body.element.clone(),
                    parent: carrier[p],
                    joint: JointType::Free,
                    placement: from[p],
                    inertia: Inertia::zero(),
                    massless: false,
                    spec: free.spec.clone(),
                });
                let quat = body.local.quaternion();
                q0.extend([
                    body.local.translation.x,
                    body.local.translation.y,
                    body.local.translation.z,
                    quat.i,
                    quat.j,
                    quat.k,
                    quat.w,
                ]);
                joint_plan.insert(
                    free.name.clone(),
                    (plans.len() - 1, JointKind::Free, free.element.clone()),
                );
                carrier[b] = plans.len() - 1;
                from[b] = SE3::identity();
                continue;
            }
            let mut parent_plan = carrier[p];
            let mut tail = tail;
            for (k, j) in body.joints.iter().enumerate() {
                let last = k + 1 == nj;
                // `ref` is folded into the placement: q = ref is the pose of the file.
                let (jt, ref_shift) = match j.kind {
                    JointKind::Hinge => (
                        JointType::Revolute(j.axis),
                        SE3::from_axis_angle(&j.axis, -j.reference),
                    ),
                    JointKind::Slide => (
                        JointType::Prismatic(j.axis),
                        SE3::from_translation(-j.axis * j.reference),
                    ),
                    _ => (JointType::Spherical, SE3::identity()),
                };
                match j.kind {
                    JointKind::Ball => q0.extend([0.0, 0.0, 0.0, 1.0]),
                    _ => q0.push(j.reference),
                }
                let name = if last {
                    bname.clone()
                } else {
                    let jn = if j.name.is_empty() {
                        format!("joint{k}")
                    } else {
                        j.name.clone()
                    };
                    unique(format!("{bname}.{jn}"), &mut used)
                };
                plans.push(Plan {
                    name,
                    element: body.element.clone(),
                    parent: parent_plan,
                    joint: jt,
                    placement: tail.mul(&SE3::from_translation(j.pos)).mul(&ref_shift),
                    inertia: Inertia::zero(),
                    massless: !last,
                    spec: j.spec.clone(),
                });
                parent_plan = plans.len() - 1;
                tail = SE3::from_translation(-j.pos);
                if !j.name.is_empty() {
                    joint_plan.insert(j.name.clone(), (parent_plan, j.kind, j.element.clone()));
                }
                if j.spec.range.is_some() {
                    limited += 1;
                }
            }
            carrier[b] = parent_plan;
            from[b] = tail;
        }
        // Inertias, merged into the carrying bodies (static ones into the world: dropped).
        for b in 1..n {
            if carrier[b] != WORLD {
                let c = carrier[b];
                plans[c].inertia = plans[c]
                    .inertia
                    .add(&self.bodies[b].inertia.transformed(&from[b]));
            }
        }

        // Pass 2: the builder (plan index = body index).
        let mut builder = ModelBuilder::new(root.attribute("model").unwrap_or("mjcf"));
        builder
            .set_gravity(gravity)
            .map_err(|e| self.error("<option>", e.to_string()))?;
        for plan in plans.iter().skip(1) {
            let r = if plan.massless {
                builder.add_massless_body(&plan.name, plan.parent, plan.joint, plan.placement)
            } else {
                builder.add_body(
                    &plan.name,
                    plan.parent,
                    plan.joint,
                    plan.placement,
                    plan.inertia,
                )
            };
            let body = r.map_err(|e| self.error(&plan.element, e.to_string()))?;
            builder
                .set_joint_spec(body, plan.spec.clone())
                .map_err(|e| self.error(&plan.element, e.to_string()))?;
        }
        let mut frictions: Vec<f64> = Vec::new();
        for b in 0..n {
            let body = &self.bodies[b];
            for (k, g) in body.geoms.iter().enumerate() {
                if g.plane && weld[b] != 0 {
                    return Err(self.error(
                        &g.element,
                        format!(
                            "a plane is only allowed in static bodies (the world or bodies welded to it), not in {}",
                            body.element
                        ),
                    ));
                }
                let Some(shape) = &g.shape else { continue };
                let gname = if g.name.is_empty() {
                    let bn = if b == 0 {
                        "world"
                    } else {
                        &plans[carrier[b]].name
                    };
                    format!("{bn}/geom{k}")
                } else {
                    g.name.clone()
                };
                let gname = unique(gname, &mut used);
                builder
                    .add_geometry(
                        &gname,
                        carrier[b],
                        from[b].mul(&g.mjcf_from_geom),
                        shape.clone(),
                        g.material,
                    )
                    .map_err(|e| self.error(&g.element, e.to_string()))?;
                if !frictions.contains(&g.material.friction) {
                    frictions.push(g.material.friction);
                }
            }
        }
        // MuJoCo's parent filter, at the level of welded groups.
        for b in 1..n {
            if weld[b] == b {
                let wp = weld[self.bodies[b].parent];
                if wp != 0 && carrier[wp] != carrier[b] {
                    builder
                        .exclude_collision(carrier[b], carrier[wp])
                        .map_err(|e| self.error(&self.bodies[b].element, e.to_string()))?;
                }
            }
        }
        let body_index = |name: &str| -> Option<usize> {
            if name == "world" {
                return Some(0);
            }
            self.bodies.iter().position(|b| b.name == name)
        };
        let top: Vec<Node> = root.children().filter(|n| n.is_element()).collect();
        for c in top.iter().filter(|n| n.has_tag_name("contact")) {
            for e in c.children().filter(|n| n.is_element()) {
                let el = element_name(&e, "");
                match e.tag_name().name() {
                    "exclude" => {
                        let mut ids = [0usize; 2];
                        for (k, attr) in ["body1", "body2"].iter().enumerate() {
                            let Some(name) = e.attribute(*attr) else {
                                return Err(self.error(&el, format!("missing attribute `{attr}`")));
                            };
                            ids[k] = body_index(name).ok_or_else(|| {
                                self.error(&el, format!("{attr}: no body named `{name}`"))
                            })?;
                        }
                        let (a, b) = (carrier[ids[0]], carrier[ids[1]]);
                        if a != b {
                            builder
                                .exclude_collision(a, b)
                                .map_err(|e| self.error(&el, e.to_string()))?;
                        }
                    }
                    other => self.warnings.push(format!(
                        "<contact><{other}>{}: not supported, ignored",
                        name_suffix(&e)
                    )),
                }
            }
        }
        // Actuators.
        for a in top.iter().filter(|n| n.has_tag_name("actuator")) {
            for e in a.children().filter(|n| n.is_element()) {
                let tag = e.tag_name().name();
                let el = element_name(&e, "");
                if !ACTUATOR_TAGS.contains(&tag) {
                    self.warnings.push(format!(
                        "<actuator><{tag}>{}: unknown actuator type, ignored",
                        name_suffix(&e)
                    ));
                    continue;
                }
                let class = self.class_of(&e, "main", &el)?;
                let get = |attr: &str| self.get(&e, &class, ACTUATOR_TAGS, attr);
                let mut gain = 1.0;
                if tag == "general" {
                    let simple = get("gaintype").is_none_or(|s| s == "fixed")
                        && get("biastype").is_none_or(|s| s == "none")
                        && get("dyntype").is_none_or(|s| s == "none");
                    if !simple {
                        self.warnings.push(format!(
                            "{el}: a general actuator with gain, bias or activation dynamics is not supported, not mapped"
                        ));
                        continue;
                    }
                    if let Some(g) = get("gainprm") {
                        gain = self
                            .list(g, "gainprm", &el)?
                            .first()
                            .copied()
                            .unwrap_or(1.0);
                    }
                } else if tag != "motor" {
                    self.warnings.push(format!(
                        "{el}: <{tag}> actuators are not supported (only motor and plain general), not mapped"
                    ));
                    continue;
                }
                let Some(jname) = e.attribute("joint") else {
                    let trn = ["tendon", "site", "body", "jointinparent", "cranksite"]
                        .into_iter()
                        .find(|t| e.attribute(*t).is_some())
                        .unwrap_or("no");
                    self.warnings.push(format!(
                        "{el}: {trn} transmission not supported (only joints), not mapped"
                    ));
                    continue;
                };
                let Some((plan, kind, _)) = joint_plan.get(jname) else {
                    return Err(self.error(&el, format!("unknown joint `{jname}`")));
                };
                if !matches!(kind, JointKind::Hinge | JointKind::Slide) {
                    self.warnings.push(format!(
                        "{el}: motors on {kind:?} joints are not supported (only hinge and slide), not mapped"
                    ));
                    continue;
                }
                let gear = match get("gear") {
                    Some(s) => {
                        let g = self.list(s, "gear", &el)?;
                        if g.is_empty() || g.len() > 6 {
                            return Err(self.error(
                                &el,
                                format!("`gear` needs 1 to 6 numbers, got {}", g.len()),
                            ));
                        }
                        g[0]
                    }
                    None => 1.0,
                };
                let range = match get("ctrlrange") {
                    Some(s) => Some(self.fixed::<2>(s, "ctrlrange", &el)?),
                    None => None,
                };
                let limited = match self.tristate(get("ctrllimited"), "ctrllimited", &el)? {
                    Some(l) => l,
                    None => self.autolimits && range.is_some(),
                };
                let ctrl_range = if limited {
                    let r = range.unwrap_or([0.0, 0.0]);
                    if r[0] >= r[1] {
                        return Err(self.error(
                            &el,
                            format!("ctrlrange lower must be below upper, got {} {}", r[0], r[1]),
                        ));
                    }
                    Some((r[0], r[1]))
                } else {
                    None
                };
                let force_limited = match self.tristate(get("forcelimited"), "forcelimited", &el)? {
                    Some(l) => l,
                    None => self.autolimits && get("forcerange").is_some(),
                };
                let force_range = match (force_limited, get("forcerange")) {
                    (false, _) => None,
                    (true, Some(s)) => {
                        let r = self.fixed::<2>(s, "forcerange", &el)?;
                        Some((r[0], r[1]))
                    }
                    (true, None) => None,
                };
                if force_limited {
                    self.warnings.push(format!(
                        "{el}: forcerange recorded in the model, not applied yet (clamp gear·ctrl yourself)"
                    ));
                }
                builder
                    .add_actuator(Actuator {
                        name: e.attribute("name").unwrap_or(jname).to_string(),
                        joint: *plan,
                        dof: 0,
                        gear: gear * gain,
                        ctrl_range,
                        force_range,
                    })
                    .map_err(|err| self.error(&el, err.to_string()))?;
            }
        }
        let model = builder
            .build()
            .map_err(|e| self.error("<mujoco>", e.to_string()))?;

        // Warnings gathered along the way.
        for (attr, joints) in &self.unmodelled {
            let what = if matches!(*attr, "damping" | "armature" | "frictionloss") {
                "is recorded in the model (Model::dof_*) but not simulated yet"
            } else {
                "is not modelled by moreau, ignored"
            };
            self.warnings.push(format!(
                "joint `{attr}` {what} on {} joint(s): {}",
                joints.len(),
                joints.join(", ")
            ));
        }
        if limited > 0 {
            self.warnings.push(format!(
                "{limited} joint range(s) recorded in the model (Model::joint_range); the simulator does not enforce joint_limits yet"
            ));
        }
        if !self.ellipsoids.is_empty() {
            self.warnings.push(format!(
                "ellipsoid geoms collide as an inscribed convex polytope (exact mass properties): {}",
                self.ellipsoids.join(", ")
            ));
        }
        if !self.odd_condim.is_empty() {
            self.warnings.push(format!(
                "condim other than 3 not supported (contacts have Coulomb friction): {}",
                self.odd_condim.join(", ")
            ));
        }
        if frictions.len() > 1 {
            self.warnings.push(format!(
                "geoms have different frictions ({frictions:?}): pairs take their geometric mean, MuJoCo the maximum"
            ));
        }
        let mjcf_bodies = (0..n)
            .map(|b| MjcfBody {
                name: self.bodies[b].name.clone(),
                body: carrier[b],
                body_from_mjcf: from[b],
            })
            .collect();
        Ok(MjcfModel {
            q0: DVector::from_vec(q0),
            model,
            timestep,
            bodies: n,
            mjcf_bodies,
            warnings: self.warnings,
        })
    }
}
