//! Loading MJCF (MuJoCo XML) models into a [`Model`].
//!
//! The subset that Gymnasium's MuJoCo tasks (and most hand-written robot
//! files) use, with MuJoCo's semantics; everything else is either harmless
//! and skipped (rendering) or reported in [`MjcfModel::warnings`]
//! naming the element, never dropped silently.
//!
//! # Mapping, element by element
//!
//! - `<compiler>`: `angle` (`degree`, MuJoCo's default, or `radian`; applies
//!   to `euler`, `axisangle`, hinge and ball `range`, hinge `ref`),
//!   `eulerseq` (default `xyz`; lowercase letters are intrinsic, rotating
//!   axes, uppercase extrinsic), `inertiafromgeom` (`auto`: the `<inertial>`
//!   element when present, else the geoms; `true`: always the geoms;
//!   `false`: only `<inertial>`), `inertiagrouprange` (the geom groups
//!   whose masses count; 0 to 5 by default), `settotalmass` (every body's mass and
//!   inertia scaled so that they sum to it), `meshdir` / `assetdir`,
//!   `coordinate="local"` (`global` is refused), `autolimits`. Other
//!   attributes that change the physics (`boundmass`, `balanceinertia`,
//!   `fusestatic`, ...) are warned about.
//! - `<include file>`: assembled before reading, as MuJoCo does (see
//!   `include.rs`): nested, relative paths from the main file's directory
//!   then the including file's, each file at most once (cycles refused).
//! - `<option>`: `timestep` ([`MjcfModel::timestep`], MuJoCo's 2 ms when
//!   unset), `gravity`, and `density`, `viscosity`, `wind`
//!   ([`crate::model::Medium`], MuJoCo's inertia-box fluid model).
//!   `<flag>`: `contact`, `constraint`, `limit`, `gravity`, `spring`,
//!   `damper` (both off: no fluid either), `equality` and `frictionloss`
//!   are applied; `actuation`, `clampctrl`, `eulerdamp` and `filterparent`
//!   disabled are refused. The integrator (but `Euler`, moreau's own), the
//!   solver settings (but `cone="elliptic"`: moreau's cones are the exact
//!   Coulomb cones) and the solver's flags are not used by moreau: one
//!   warning names them.
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
//!     MuJoCo; `<freejoint>` reads no default class: no damping, spring or
//!     armature). Our body frame *is* the joint frame, so a hinge at `pos = p`
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
//!     [`Model::joint_range`] (rigid stops), `damping`, `armature`,
//!     `frictionloss`, `stiffness` and `springref` to [`Model::dof_damping`],
//!     [`Model::dof_armature`], [`Model::dof_frictionloss`],
//!     [`Model::dof_stiffness`], [`Model::dof_springref`]. Damping and
//!     armature are simulated on every joint, springs on hinges and slides,
//!     dry friction (`frictionloss`, box rows) on hinges, slides and balls;
//!     what is not (`springdamper`, springs on ball and free joints,
//!     `frictionloss` on free joints) gets one warning per attribute naming
//!     the joints that set it.
//! - `<geom>`: `sphere` → [`Shape::Ball`], `capsule` → [`Shape::Capsule`],
//!   `cylinder` → [`Shape::Cylinder`] (size: radius, half-length; or
//!   `fromto` with the radius), `box` → [`Shape::Cuboid`] (half-sizes),
//!   `plane` → [`Shape::HalfSpace`] with outward normal +z (static bodies
//!   only, as in MuJoCo), `mesh` → [`Shape::ConvexMesh`] of the mesh file's
//!   convex hull, `ellipsoid` → [`Shape::Ellipsoid`] (its radii); `fromto`
//!   works for capsule, cylinder, box and ellipsoid. `hfield` →
//!   [`Shape::HeightField`] of its `<hfield>` asset (world geoms only);
//!   `sdf` is not loaded (warning). `friction`'s first value is the
//!   sliding `μ`; `contype` / `conaffinity` as in MuJoCo; a geom with both zero is a
//!   visual geom: it has mass but no collider. `density` (1000) or `mass`
//!   give its mass; MuJoCo's formulas for the inertia (capsule = cylinder +
//!   two hemispheres; `shellinertia` puts it on the surface of spheres,
//!   boxes, cylinders and capsules; a mesh's comes from its asset's
//!   `inertia`, `legacy` by default, see `mesh_inertia.rs`). A contact
//!   takes MuJoCo's friction and `condim`: the higher-`priority` geom's,
//!   the larger of the two at equal priority
//!   ([`crate::model::FrictionMix::Maximum`], [`Model::pair_contact`]);
//!   `condim` 1 is frictionless, 4 and 6 are taken as 3 (sliding friction
//!   only; a warning names the geoms). `solref`, `solimp`, `margin`, `gap`
//!   are not used (contacts are rigid).
//! - `<inertial>`: `pos`, orientation, `mass`, `diaginertia` or
//!   `fullinertia` (`ixx iyy izz ixy ixz iyz`).
//! - `<asset><mesh name file scale vertex face inertia>` (STL, OBJ;
//!   `vertex` inline points, `face` their triangles); `<hfield name nrow
//!   ncol size elevation file>` (`elevation` or MuJoCo's `.bin` files; PNG
//!   refused), see `Parser::hfield`; textures, materials and skins are not physics.
//! - `<contact><exclude body1 body2>` → [`ModelBuilder::exclude_frames`]:
//!   the geometries declared in exactly those two file bodies, as MuJoCo
//!   excludes them (not the other bodies welded to them, which share their
//!   model body). `<pair geom1 geom2 friction condim>`
//!   → [`ModelBuilder::add_contact_pair`]: the pair collides whatever its
//!   bits and exclusions say, with its own friction and dimension. MuJoCo's
//!   parent filter (a body never collides with its parent, both taken with
//!   the bodies welded to them) is reproduced through exclusions.
//! - `<actuator>`: `motor`, `position` (`timeconst` > 0: `filterexact`),
//!   `velocity`, `intvelocity`, `cylinder` and `general` (fixed gain,
//!   `none` or `affine` bias, `dyntype` `none`, `integrator`, `filter`,
//!   `filterexact`) on a hinge or slide joint or a fixed tendon →
//!   [`Actuator`] with `gear`, the control and force ranges, the activation
//!   dynamics ([`crate::model::ActuatorDynamics`]), `actlimited`/`actrange`
//!   and `actearly`. Other actuator types, gains and biases, site/body
//!   transmissions, spatial tendons and motors on ball or free joints are
//!   warned about and not mapped.
//! - Every `<body>` is a frame of the model body that carries it, with its
//!   own inertia, and its geoms know it ([`crate::model::Frame`],
//!   [`crate::model::Geometry::frame`]): frame `b - 1` is MuJoCo's body
//!   `b`. Named `site`s become frames of their body (`Model::frames`).
//! - `<sensor>` → [`crate::model::Sensor`] (`sensors.rs`): `touch`,
//!   `accelerometer`, `velocimeter`, `gyro`, `force`, `torque`, the frame
//!   sensors (`framepos`, `framequat`, `frame[xyz]axis`, `framelinvel`,
//!   `frameangvel`; objtype `site`, `xbody`, `body` (its orientation where
//!   an `<inertial>` with `diaginertia` gives it, or the world's), non-mesh
//!   `geom`; with or
//!   without a reference frame), the subtree sensors, `jointpos`,
//!   `jointvel` and `rangefinder` (against [`crate::model::ray`]'s
//!   targets), with `cutoff`. Other types are warned about and left out.
//! - `<camera>` → [`crate::model::ModelCamera`] (`cameras.rs`): every
//!   `mode`, `fovy`; intrinsics warned about.
//! - Skipped without a warning (no effect on the dynamics):
//!   `light`, `visual`, `statistic`, `size`, `custom`, `keyframe`,
//!   textures and materials. `<tendon><fixed|spatial>` and
//!   `<equality><joint|tendon|connect|weld>`: see `constraints.rs`. Warned about:
//!   other equalities, `composite`, `flexcomp`, `replicate`, `attach`, `plugin`,
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

use crate::math::{Inertia, Mat3, SE3, Vec3};
pub use crate::model::ModelFileError;
use crate::model::mesh::{MeshCache, convex_hull_vertices, resolve_mesh_path};
use crate::model::validate_inertia;
use crate::model::xml::{error_for, number_list, read_file};
use crate::model::{
    Actuator, ActuatorDynamics, FrictionMix, JointSpec, JointType, Material, Model, ModelBuilder,
    Shape, WORLD,
};
use crate::model::{DEFAULT_ROLLING, DEFAULT_TORSIONAL};
use nalgebra::{DVector, Quaternion, Rotation3, Unit, UnitQuaternion};
use roxmltree::Node;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::f64::consts::PI;
use std::path::{Path, PathBuf};

mod build;
mod cameras;
mod constraints;
mod geom;
mod hfield;
mod include;
mod mesh_inertia;
mod mocap;
mod overlaps;
mod read;
mod sensors;
use mesh_inertia::{MeshInertia, mesh_mass_properties};
use std::rc::Rc;

/// MuJoCo's time step when a file sets none (`<option timestep>`), in seconds.
pub const MUJOCO_TIMESTEP: f64 = 0.002;

/// How to load an MJCF file.
#[derive(Clone, Debug, Default)]
pub struct MjcfOptions {
    /// Directories searched for `package://` mesh references (see
    /// [`resolve_mesh_path`]).
    pub package_dirs: Vec<PathBuf>,
    /// Take the contacts MuJoCo gives `condim` 4 or 6 (torsional, and
    /// rolling, friction) as `condim` 3, sliding friction only, with a
    /// warning naming the pairs. Without it such a file is refused: moreau
    /// does not simulate torsional or rolling friction.
    pub sliding_friction_only: bool,
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
    /// `<option timestep>`: MuJoCo's `opt.timestep`, [`MUJOCO_TIMESTEP`]
    /// when the file does not set it.
    pub timestep: f64,
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
        let mut q = DVector::zeros(m.nq);
        m.q_from_mujoco(qpos, q.as_mut_slice());
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
    let text = include::expand_includes(text, file, model_dir)?;
    let doc = roxmltree::Document::parse(&text).map_err(|e| err("XML", e.to_string()))?;
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
        materials: HashMap::new(),
        hfields: HashMap::new(),
        mesh_cache: MeshCache::new(),
        warnings: Vec::new(),
        unmodelled: BTreeMap::new(),
        bodies: Vec::new(),
        joint_names: HashSet::new(),
        geom_names: HashSet::new(),
        sliding_friction_only: options.sliding_friction_only,
        paired: HashSet::new(),
        settotalmass: None,
        inertia_groups: (0, 5),
        flags: Flags::default(),
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
    let mut medium = crate::model::Medium::default();
    for o in named("option") {
        p.option(*o, &mut timestep, &mut gravity, &mut medium)?;
    }
    for a in named("asset") {
        p.assets(*a)?;
    }
    for pair in named("contact").flat_map(|c| c.children().filter(|n| n.has_tag_name("pair"))) {
        for attr in ["geom1", "geom2"] {
            if let Some(g) = pair.attribute(attr) {
                p.paired.insert(g.to_string());
            }
        }
    }
    p.bodies.push(BodyRec {
        name: "world".into(),
        element: "<worldbody>".into(),
        parent: 0,
        local: SE3::identity(),
        joints: Vec::new(),
        inertia: Inertia::zero(),
        has_inertial: false,
        principal: None,
        geoms: Vec::new(),
        sites: Vec::new(),
        cameras: Vec::new(),
        mocap: false,
    });
    for w in named("worldbody") {
        p.body_children(*w, 0, "main", &SE3::identity())?;
    }
    for n in &top {
        match n.tag_name().name() {
            "compiler" | "default" | "option" | "asset" | "worldbody" | "actuator" | "contact" => {}
            "size" | "visual" | "statistic" | "custom" | "keyframe" => {}
            // Read with the model (what is not supported is warned about there).
            "sensor" => {}
            // Read with the model (fixed tendons, joint and tendon
            // equalities; what is not supported is warned about there).
            "tendon" | "equality" => {}
            other => p.warnings.push(format!(
                "<{other}>{}: not supported, ignored",
                name_suffix(n)
            )),
        }
    }
    p.build(root, timestep.unwrap_or(MUJOCO_TIMESTEP), gravity, medium)
}

/// MuJoCo's `<option><flag>` switches that moreau applies (all enabled by default).
#[derive(Clone, Copy, Debug)]
struct Flags {
    /// `constraint`: off means no contacts, no joint limits, no equality
    /// constraints and no friction loss.
    constraint: bool,
    contact: bool,
    limit: bool,
    equality: bool,
    frictionloss: bool,
    gravity: bool,
    /// Joint springs.
    spring: bool,
    /// Joint dampers. With `spring` off too, MuJoCo computes no passive
    /// force at all: the fluid's forces go as well.
    damper: bool,
}

impl Default for Flags {
    fn default() -> Self {
        Self {
            constraint: true,
            contact: true,
            limit: true,
            equality: true,
            frictionloss: true,
            gravity: true,
            spring: true,
            damper: true,
        }
    }
}

impl Flags {
    fn contacts(&self) -> bool {
        self.constraint && self.contact
    }
    fn limits(&self) -> bool {
        self.constraint && self.limit
    }
    fn equalities(&self) -> bool {
        self.constraint && self.equality
    }
    fn frictionlosses(&self) -> bool {
        self.constraint && self.frictionloss
    }
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
    /// `springdamper="timeconst dampratio"` (both positive) on a hinge or
    /// slide: its stiffness and damping, set from the dof's inertia at
    /// `qpos0` once the model is built (see `Parser::springdampers`).
    springdamper: Option<(f64, f64)>,
}

struct GeomRec {
    name: String,
    /// A mesh geom (MuJoCo moves its frame to the mesh's inertial frame).
    mesh: bool,
    element: String,
    mjcf_from_geom: SE3,
    /// `None`: no collider (visual geom, or not loadable).
    shape: Option<Shape>,
    material: Material,
    /// Mass properties in the MJCF body frame (zero for planes and massless geoms).
    inertia: Inertia,
    /// Why a visual mesh geom has no volume (a flat mesh): its body's
    /// inertia cannot come from its geoms.
    flat: Option<String>,
    /// Whether the geom is a plane (static bodies only).
    plane: bool,
    /// A sphere's or a cylinder's `(cylinder, radius)`: what a spatial
    /// tendon may wrap around, colliding or not.
    wrap: Option<(bool, f64)>,
    /// Its shape and colour when it is drawn (MuJoCo's visible groups 0 to
    /// 2, not transparent), and a mesh's triangles.
    look: Option<Look>,
    /// What a rangefinder sees of it (any group, colliding or not; `None`
    /// when transparent or without a shape).
    ray: Option<RaySource>,
}

/// A geom as a rangefinder sees it, before its mesh's triangles are read.
struct RaySource {
    shape: Shape,
    /// A plane's `size` (half sizes, 0: unbounded).
    plane_half: [f64; 2],
    /// A mesh geom's asset.
    mesh: Option<String>,
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
    /// Its `<inertial>`'s frame where that gives `diaginertia` and sets the
    /// inertia: the principal axes frame sensors of objtype `body` read.
    principal: Option<SE3>,
    geoms: Vec<GeomRec>,
    /// Named sites.
    sites: Vec<SiteRec>,
    cameras: Vec<cameras::CameraRec>,
    /// MJCF's `mocap="true"`: a world's body whose pose each world sets.
    mocap: bool,
}

/// A named site of an MJCF body.
struct SiteRec {
    name: String,
    /// Placement in the MJCF body frame.
    local: SE3,
    /// Its solid (MuJoCo's site `type` and `size`): a touch sensor's zone.
    zone: crate::model::Zone,
}

/// How a geom is drawn: its shape, colour and a mesh's triangles.
type Look = (
    Shape,
    [f64; 4],
    Option<std::sync::Arc<crate::model::mesh::VisualMesh>>,
);

struct MeshAsset {
    element: String,
    file: Option<String>,
    vertices: Option<Vec<Vec3>>,
    /// `face`: triangles over `vertex` (without it, the hull's).
    faces: Option<Vec<[usize; 3]>>,
    scale: Vec3,
    /// `inertia`: how the geoms using it get their mass properties.
    inertia: MeshInertia,
    /// Hull and unit-density mass properties, once loaded.
    loaded: Option<(Shape, f64, Vec3, Mat3)>,
    /// The triangles it is drawn as, once asked for (`Some(None)`: its
    /// hull is drawn).
    visual: Option<Option<std::sync::Arc<crate::model::mesh::VisualMesh>>>,
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
    /// `<hfield>` assets by name.
    hfields: HashMap<String, crate::model::HeightField>,
    /// `<material>` assets' `rgba` by name.
    materials: HashMap<String, [f64; 4]>,
    mesh_cache: MeshCache,
    warnings: Vec<String>,
    /// Joint attributes moreau does not model → the joints setting them.
    unmodelled: BTreeMap<&'static str, Vec<String>>,
    bodies: Vec<BodyRec>,
    joint_names: HashSet<String>,
    geom_names: HashSet<String>,
    /// [`MjcfOptions::sliding_friction_only`].
    sliding_friction_only: bool,
    /// Geoms named by a `<contact><pair>` (they keep a collider even
    /// without collision bits).
    paired: HashSet<String>,
    settotalmass: Option<f64>,
    /// `<compiler inertiagrouprange>`: the geom groups whose masses count
    /// (MuJoCo's default: 0 to 5).
    inertia_groups: (i64, i64),
    flags: Flags,
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
