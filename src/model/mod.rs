//! The immutable model of a kinematic tree: bodies, joints, geometries.
//!
//! Body 0 is the world. Body `i ≥ 1` hangs from `body_parent[i] < i` through
//! joint `i` (one joint per body), so parents always precede children and
//! every tree algorithm is one forward and/or one backward sweep.
//!
//! Each degree of freedom `k` (index into `v`) has a parent dof
//! `dof_parent[k]`: the previous dof of the same joint, or the last dof of the
//! nearest ancestor joint that has dofs, or [`NO_DOF`]. This is Featherstone's
//! `λ(i)` array for the sparse `LᵀDL` factorization of the mass matrix.

mod builder;
pub mod camera;
pub mod constraints;
pub mod ellipsoid;
pub mod mesh;
pub mod ray;
pub mod sensor;
mod serial;
pub mod terrain;
pub mod urdf;
pub(crate) mod xml;

pub(crate) use builder::constraints::check_path as check_tendon_path;
pub use builder::{DEFAULT_ROLLING, DEFAULT_TORSIONAL, Material, ModelBuilder, validate_inertia};
pub use camera::{CameraMode, ModelCamera};
pub use constraints::{BodyEquality, Coordinate, Equality, Tendon, Wrap, WrapGeom};
pub use sensor::{Attachment, Sensor, SensorKind, Subtree, Zone};
pub use terrain::{HeightField, Terrain};
pub use xml::ModelFileError;

use crate::math::{SE3, Vec3, Vec6, exp3, quat_from_slice, spatial};
use parry3d_f64::shape::SharedShape;
use std::fmt;

/// Index of the world body.
pub const WORLD: usize = 0;
/// Marker for "no degree of freedom" in `dof_parent` and `body_last_dof`.
pub const NO_DOF: usize = usize::MAX;

/// Joint types. Axes are unit vectors expressed in the joint frame.
///
/// Configuration and velocity layouts:
/// - `Free`: `q = [x, y, z, qx, qy, qz, qw]` (position of the body frame in the
///   parent, orientation quaternion), `v = [v; ω]` the body twist expressed in
///   the body frame (Pinocchio's convention); `q ⊕ v = q · exp(v)` on SE(3);
/// - `Spherical`: `q = [qx, qy, qz, qw]`, `v = ω` in the body frame;
/// - `Revolute(axis)`: angle; `Prismatic(axis)`: displacement; `Fixed`: nothing.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum JointType {
    Free,
    Spherical,
    Revolute(Vec3),
    Prismatic(Vec3),
    Fixed,
}

impl JointType {
    pub fn nq(&self) -> usize {
        match self {
            JointType::Free => 7,
            JointType::Spherical => 4,
            JointType::Revolute(_) | JointType::Prismatic(_) => 1,
            JointType::Fixed => 0,
        }
    }
    pub fn nv(&self) -> usize {
        match self {
            JointType::Free => 6,
            JointType::Spherical => 3,
            JointType::Revolute(_) | JointType::Prismatic(_) => 1,
            JointType::Fixed => 0,
        }
    }
    /// Offset of the joint's quaternion within its configuration, if it has one.
    pub fn quaternion_offset(&self) -> Option<usize> {
        match self {
            JointType::Free => Some(3),
            JointType::Spherical => Some(0),
            _ => None,
        }
    }
    pub fn name(&self) -> &'static str {
        match self {
            JointType::Free => "free",
            JointType::Spherical => "spherical",
            JointType::Revolute(_) => "revolute",
            JointType::Prismatic(_) => "prismatic",
            JointType::Fixed => "fixed",
        }
    }
    /// Column `k` of the motion subspace `S`, expressed in the body (child) frame.
    /// It is constant for every joint type here, so `Ṡ = 0` in the body frame.
    pub fn motion_column(&self, k: usize) -> Vec6 {
        let e = |i: usize| {
            let mut a = Vec3::zeros();
            a[i] = 1.0;
            a
        };
        match self {
            JointType::Free if k < 3 => spatial(&e(k), &Vec3::zeros()),
            JointType::Free => spatial(&Vec3::zeros(), &e(k - 3)),
            JointType::Spherical => spatial(&Vec3::zeros(), &e(k)),
            JointType::Revolute(a) => spatial(&Vec3::zeros(), a),
            JointType::Prismatic(a) => spatial(a, &Vec3::zeros()),
            JointType::Fixed => Vec6::zeros(),
        }
    }
    /// `joint_from_body` for the joint configuration `qj` (length `nq`).
    pub fn transform(&self, qj: &[f64]) -> SE3 {
        match self {
            JointType::Free => {
                SE3::from_quaternion(&quat_from_slice(&qj[3..7]), Vec3::new(qj[0], qj[1], qj[2]))
            }
            JointType::Spherical => SE3::from_quaternion(&quat_from_slice(qj), Vec3::zeros()),
            JointType::Revolute(a) => SE3::from_rotation(exp3(&(a * qj[0]))),
            JointType::Prismatic(a) => SE3::from_translation(a * qj[0]),
            JointType::Fixed => SE3::identity(),
        }
    }
}

/// What a model file says of a joint besides its type and placement: its
/// name, its position range and the properties of its dofs (Pinocchio's
/// Model carries the same as `names`, `lowerPositionLimit` /
/// `upperPositionLimit`, `velocityLimit`, `effortLimit`, `damping`,
/// `armature`, `friction`; MuJoCo's mjModel as `jnt_range`, `dof_damping`,
/// `dof_armature`, `dof_frictionloss`). Scalars apply to each dof of the
/// joint. The simulator uses the range (joint limits as constraints),
/// damping (implicit), armature, springs, dry friction (`frictionloss`,
/// box rows) and effort limits (on actuator forces); URDF's `friction` and
/// `velocity_limit` are recorded only.
#[derive(Clone, Debug, PartialEq)]
pub struct JointSpec {
    /// The file's joint name (empty: the body's name is used).
    pub name: String,
    /// Position range `(lower, upper)` of a 1-dof joint (rad or m); for a
    /// ball joint `(0, max angle)` (MJCF's cone limit); `None`: unlimited.
    pub range: Option<(f64, f64)>,
    /// Viscous damping per dof (N·m·s/rad or N·s/m), ≥ 0.
    pub damping: f64,
    /// Rotor inertia added to the dof's diagonal of the mass matrix, ≥ 0.
    pub armature: f64,
    /// Dry friction per dof (N·m or N), ≥ 0, simulated (MJCF's
    /// `frictionloss`): a box row `|λ| ≤ frictionloss·dt` on the dof.
    pub frictionloss: f64,
    /// URDF's `<dynamics friction>` (Pinocchio's `friction`), ≥ 0: recorded,
    /// not simulated.
    pub urdf_friction: f64,
    /// Joint spring of a 1-dof joint: the force `−stiffness·(q − springref)`
    /// (N·m/rad or N/m, ≥ 0; MJCF's `stiffness` and `springref`).
    pub stiffness: f64,
    pub springref: f64,
    /// Largest speed per dof (rad/s or m/s), > 0; infinite: none.
    pub velocity_limit: f64,
    /// Largest actuator effort per dof (N·m or N), > 0; infinite: none.
    pub effort_limit: f64,
}

impl Default for JointSpec {
    fn default() -> Self {
        JointSpec {
            name: String::new(),
            range: None,
            damping: 0.0,
            armature: 0.0,
            frictionloss: 0.0,
            urdf_friction: 0.0,
            stiffness: 0.0,
            springref: 0.0,
            velocity_limit: f64::INFINITY,
            effort_limit: f64::INFINITY,
        }
    }
}

/// A joint-space actuator, MuJoCo's model for a joint transmission: the
/// scalar force `gain·ctrl + bias[0] + bias[1]·l + bias[2]·l̇` with the
/// actuator length `l = gear·q` and velocity `l̇ = gear·q̇`, clamped to
/// `force_range`, acts on the dof as `gear · force` (the control first
/// clamped to `ctrl_range`); see [`crate::sim::actuator_forces`].
/// MJCF's `<motor>` is `gain = 1, bias = 0`; `<position kp kv>` is
/// `gain = kp, bias = [0, −kp, −kv]`; `<velocity kv>` is `gain = kv,
/// bias = [0, 0, −kv]`; `<general>` gives them as `gainprm`, `biasprm`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Actuator {
    /// The actuator's name, or its joint's when it has none.
    pub name: String,
    /// The body whose joint it drives (a 1-dof joint).
    pub joint: usize,
    /// Index into `v` (and `tau`) of that joint's dof (set by the builder).
    pub dof: usize,
    pub gear: f64,
    /// The force per unit control.
    pub gain: f64,
    /// The force's affine bias in the actuator length and velocity.
    pub bias: [f64; 3],
    /// `(lo, hi)` when the control is limited.
    pub ctrl_range: Option<(f64, f64)>,
    /// `(lo, hi)` when the scalar force is limited.
    pub force_range: Option<(f64, f64)>,
    /// `Some(t)`: a tendon transmission (MJCF's `tendon`): the actuator
    /// pulls on tendon `t` of [`Model::tendons`], its length `gear·L` and
    /// velocity `gear·L̇`, and the dofs get `gear·force·∂L/∂q` (each of a
    /// fixed tendon's joints `gear·coef·force`); `joint` and `dof` are then
    /// a fixed tendon's first joint's, the world's (0) for a spatial tendon.
    pub tendon: Option<usize>,
    /// Activation dynamics (MJCF's `dyntype`): with any but `None`, the
    /// force is `gain·act + bias` where `act` is the actuator's state,
    /// driven by the control (see [`ActuatorDynamics`]).
    pub dynamics: ActuatorDynamics,
    /// `(lo, hi)` when the activation is clamped after each step (MJCF's
    /// `actlimited`/`actrange`).
    pub act_range: Option<(f64, f64)>,
    /// The force uses the activation of the end of the step rather than
    /// its start (MJCF's `actearly`): no step of delay between a control
    /// and its force.
    pub act_early: bool,
    /// Index into the activation state `State::act` (set by the builder
    /// when `dynamics` is not `None`).
    pub act: Option<usize>,
}

/// An actuator's activation dynamics, as MuJoCo's `dyntype`: the
/// activation `act` moves with the (clamped) control and is integrated
/// over each step, then clamped to `act_range`.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum ActuatorDynamics {
    /// Stateless: the force follows the control.
    #[default]
    None,
    /// `ȧct = ctrl`, explicit Euler (MJCF `integrator`).
    Integrator,
    /// `ȧct = (ctrl − act)/τ`, explicit Euler (MJCF `filter`, `dynprm="τ"`).
    Filter(f64),
    /// The same first-order filter integrated exactly over the step,
    /// `act⁺ = act + (ctrl − act)(1 − e^(−dt/τ))` (MJCF `filterexact`).
    FilterExact(f64),
}

impl ActuatorDynamics {
    /// The activation at the end of a step of `dt` from `act` under the
    /// clamped control `ctrl` (before the `act_range` clamp).
    pub fn next(self, act: f64, ctrl: f64, dt: f64) -> f64 {
        match self {
            ActuatorDynamics::None => act,
            ActuatorDynamics::Integrator => act + dt * ctrl,
            ActuatorDynamics::Filter(tau) => act + dt * (ctrl - act) / tau,
            ActuatorDynamics::FilterExact(tau) => act + (ctrl - act) * -(-dt / tau).exp_m1(),
        }
    }

    /// MJCF's name of the dynamics.
    pub fn name(self) -> &'static str {
        match self {
            ActuatorDynamics::None => "none",
            ActuatorDynamics::Integrator => "integrator",
            ActuatorDynamics::Filter(_) => "filter",
            ActuatorDynamics::FilterExact(_) => "filterexact",
        }
    }
}

/// The medium the bodies move in, for MuJoCo's inertia-box fluid model
/// (MJCF's `<option density viscosity wind>`; see
/// [`crate::dynamics::fluid_forces`]). Zero density and viscosity: vacuum.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Medium {
    /// kg/m³, ≥ 0 (quadratic drag).
    pub density: f64,
    /// Pa·s, ≥ 0 (linear, Stokes drag).
    pub viscosity: f64,
    /// The medium's velocity (m/s, world frame).
    pub wind: Vec3,
}

impl Medium {
    /// Whether the medium exerts any force.
    pub fn is_active(&self) -> bool {
        self.density > 0.0 || self.viscosity > 0.0
    }
}

impl Actuator {
    /// A motor on the joint of body `joint`: force `gear · ctrl`, unlimited.
    pub fn motor(name: impl Into<String>, joint: usize, gear: f64) -> Self {
        Actuator {
            name: name.into(),
            joint,
            dof: 0,
            gear,
            gain: 1.0,
            bias: [0.0; 3],
            ctrl_range: None,
            force_range: None,
            tendon: None,
            dynamics: ActuatorDynamics::None,
            act_range: None,
            act_early: false,
            act: None,
        }
    }
}

/// Collision shapes. Capsules and cylinders are along the geometry's z axis;
/// an ellipsoid has its semi-axes `radii` along the geometry's x, y, z;
/// a half-space is `{x : n·x ≤ 0}` in the geometry frame (outward normal `n`);
/// a height field is a surface `z = h(x, y)` over a rectangle of the
/// geometry's xy plane (on the world only; see [`HeightField`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Shape {
    Ball { radius: f64 },
    Cuboid { half_extents: Vec3 },
    Capsule { half_length: f64, radius: f64 },
    Cylinder { half_length: f64, radius: f64 },
    Ellipsoid { radii: Vec3 },
    ConvexMesh { points: Vec<Vec3> },
    HalfSpace { normal: Vec3 },
    HeightField(HeightField),
}

impl Shape {
    pub fn name(&self) -> &'static str {
        match self {
            Shape::Ball { .. } => "ball",
            Shape::Cuboid { .. } => "cuboid",
            Shape::Capsule { .. } => "capsule",
            Shape::Cylinder { .. } => "cylinder",
            Shape::Ellipsoid { .. } => "ellipsoid",
            Shape::ConvexMesh { .. } => "convex-mesh",
            Shape::HalfSpace { .. } => "half-space",
            Shape::HeightField(_) => "height-field",
        }
    }
}

/// A collision geometry attached to a body (or to the world, body 0).
#[derive(Clone, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "serial::GeometryRecord", into = "serial::GeometryRecord")]
pub struct Geometry {
    pub name: String,
    pub body: usize,
    pub body_from_geom: SE3,
    pub shape: Shape,
    pub material: Material,
    /// The frame (index into [`Model::frames`]) of the file's body the
    /// geometry was declared in, when the file's bodies are frames (MJCF):
    /// which of the bodies merged into `body` it belongs to.
    pub frame: Option<usize>,
    /// The parry shape, and the transform from parry's shape frame to the
    /// geometry frame (parry's cylinders are along y, ours along z).
    pub(crate) collider: SharedShape,
    pub(crate) body_from_collider: SE3,
}

/// [`Model::frame_exclusions`]' name for the file's world body.
pub const WORLD_FRAME: usize = usize::MAX;

impl Geometry {
    /// The file's body it was declared in: its frame, or [`WORLD_FRAME`].
    pub fn file_body(&self) -> usize {
        self.frame.unwrap_or(WORLD_FRAME)
    }
}

impl fmt::Debug for Geometry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Geometry")
            .field("name", &self.name)
            .field("body", &self.body)
            .field("body_from_geom", &self.body_from_geom)
            .field("shape", &self.shape)
            .field("material", &self.material)
            .field("frame", &self.frame)
            .finish()
    }
}

/// An explicit pair of geometries (MuJoCo's `<contact><pair>`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ContactPair {
    /// Geometry indices, `a < b`.
    pub geoms: (usize, usize),
    /// The contact's friction coefficient (≥ 0).
    pub friction: f64,
    /// Its dimension (1: frictionless, 3, 4: with torsional friction, 6:
    /// with rolling friction too).
    pub condim: u8,
    /// Its torsional and rolling friction coefficients (m, ≥ 0; used by
    /// dimensions 4 and 6).
    #[serde(default = "default_spin")]
    pub spin: [f64; 2],
}

fn default_spin() -> [f64; 2] {
    [DEFAULT_TORSIONAL, DEFAULT_ROLLING]
}

/// How a pair of geometries combines their friction coefficients.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum FrictionMix {
    /// `μ = √(μ_a μ_b)` (moreau's scenes, URDF): a frictionless geometry
    /// makes every pair it touches frictionless, two equal coefficients
    /// give that coefficient.
    #[default]
    GeometricMean,
    /// MuJoCo's rule (MJCF files): the geometry of higher
    /// [`Material::priority`] gives its coefficient, the larger one at
    /// equal priority.
    Maximum,
}

/// An immutable multibody model. Build it with [`ModelBuilder`]; share it as `Arc<Model>`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Model {
    pub name: String,
    /// Configuration dimension.
    pub nq: usize,
    /// Velocity dimension (degrees of freedom).
    pub nv: usize,
    /// Number of bodies, the world included.
    pub nbodies: usize,
    pub gravity: Vec3,
    /// The fluid the bodies move in (vacuum by default).
    pub medium: Medium,
    /// How contacts combine their geometries' friction coefficients.
    pub friction_mix: FrictionMix,
    /// (nbodies) body names; `body_name[0] == "world"`.
    pub body_name: Vec<String>,
    /// (nbodies) parent body; `body_parent[0] == 0`.
    pub body_parent: Vec<usize>,
    /// (nbodies) inertia in the body frame; zero for the world.
    pub body_inertia: Vec<crate::math::Inertia>,
    /// (nbodies) last dof supporting the body (its own joint's last dof, or its
    /// nearest ancestor's), or `NO_DOF` for bodies welded to the world.
    pub body_last_dof: Vec<usize>,
    /// (nbodies) joint connecting `body_parent[i]` to body `i`.
    pub joint_type: Vec<JointType>,
    /// (nbodies) the joint's name: the file's, or its body's when it has none.
    pub joint_name: Vec<String>,
    /// (nbodies) position range of the joint, see [`JointSpec::range`].
    pub joint_range: Vec<Option<(f64, f64)>>,
    /// (nbodies) `parent_from_joint`: the joint frame in the parent body frame.
    pub joint_placement: Vec<SE3>,
    /// (nbodies) first index of the joint in `q` and in `v`.
    pub joint_idx_q: Vec<usize>,
    pub joint_idx_v: Vec<usize>,
    /// (nv) parent dof (Featherstone's λ), or `NO_DOF`.
    pub dof_parent: Vec<usize>,
    /// (nv) body whose joint owns the dof.
    pub dof_body: Vec<usize>,
    /// (nv) motion-subspace column of the dof in its body frame.
    pub dof_motion: Vec<Vec6>,
    /// (nv) viscous damping, armature, dry friction, velocity and effort
    /// limits (infinite: none) of each dof; see [`JointSpec`].
    pub dof_damping: Vec<f64>,
    pub dof_armature: Vec<f64>,
    pub dof_frictionloss: Vec<f64>,
    /// (nv) URDF's joint friction, recorded only ([`JointSpec::urdf_friction`]).
    pub dof_urdf_friction: Vec<f64>,
    /// (nv) joint springs of 1-dof joints: stiffness and rest position
    /// (see [`JointSpec::stiffness`]); 0 on other joints.
    pub dof_stiffness: Vec<f64>,
    pub dof_springref: Vec<f64>,
    pub dof_velocity_limit: Vec<f64>,
    pub dof_effort_limit: Vec<f64>,
    /// The actuators, in file order (`nu` of them).
    pub actuators: Vec<Actuator>,
    /// Fixed tendons ([`Tendon`]).
    pub tendons: Vec<Tendon>,
    /// Equality constraints ([`Equality`]), each a bilateral row.
    pub equalities: Vec<Equality>,
    /// `connect` and `weld` equalities ([`BodyEquality`]), 3 or 6
    /// bilateral rows each.
    pub body_equalities: Vec<BodyEquality>,
    pub geometries: Vec<Geometry>,
    /// Body pairs (sorted, `a < b`) whose geometries never collide.
    pub collision_exclusions: Vec<(usize, usize)>,
    /// Pairs of a file's bodies (sorted, `a < b`: [`Geometry::frame`]s,
    /// [`WORLD_FRAME`] for geometries of the file's world body) whose
    /// geometries never collide: MJCF's `<exclude>`, which names bodies as
    /// the file has them, before welded ones merge (an exclusion between a
    /// torso and a shoulder leaves the head welded to the torso colliding).
    #[serde(default)]
    pub frame_exclusions: Vec<(usize, usize)>,
    /// Explicit geometry pairs (MJCF's `<contact><pair>`), sorted by
    /// geometries: they collide whatever the filters say, with their own
    /// friction and dimension.
    pub contact_pairs: Vec<ContactPair>,
    /// Named frames fixed on bodies: a file's bodies (MJCF: every body but
    /// the world, in file order, those welded into their parents included),
    /// then its sites.
    pub frames: Vec<Frame>,
    /// The sensors ([`Sensor`]), in file order (MJCF's `<sensor>`).
    #[serde(default)]
    pub sensors: Vec<Sensor>,
    /// What the bodies look like ([`Visual`]): MJCF's visible geoms,
    /// colliding or not. Empty: the renderer draws the geometries.
    #[serde(default)]
    pub visuals: Vec<Visual>,
    /// The file's cameras ([`ModelCamera`]), MJCF's `<camera>`s in
    /// MuJoCo's order (by body, then file order).
    #[serde(default)]
    pub cameras: Vec<ModelCamera>,
    /// What rangefinders see ([`ray::RayTarget`]): MJCF's opaque geoms,
    /// colliding or not; empty without rangefinders.
    #[serde(default)]
    pub ray_targets: Vec<ray::RayTarget>,
    /// MuJoCo's mocap bodies ([`Mocap`]), in file order: poses each world
    /// sets ([`crate::sim::Simulator::set_mocap_pose`]), which `connect`s
    /// and `weld`s to them follow.
    #[serde(default)]
    pub mocap: Vec<Mocap>,
}

/// A mocap body (MJCF's `mocap="true"`): a body of the world whose pose is
/// an input, set per world and held there (no dynamics). Its pose acts
/// through the `connect`s and `weld`s that name it
/// ([`BodyEquality::mocap`]); it carries no colliding geometry, camera or
/// other body, and no sensor or spatial tendon reads its frames (the
/// loader refuses them): the model keeps its frames ([`Mocap::frames`])
/// at [`Mocap::pose`], a world's are where its pose puts them.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Mocap {
    pub name: String,
    /// Its pose in the world as the file puts it (the default of every
    /// world's).
    pub pose: SE3,
    /// Its frames ([`Model::frames`]: its body's and its sites'), which
    /// the model keeps at [`Mocap::pose`]: a world's are its mocap pose
    /// times `pose⁻¹` times theirs ([`Model::mocap_of_frame`]).
    #[serde(default)]
    pub frames: Vec<usize>,
}

/// A shape drawn on a body (the renderer's; it does not collide).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Visual {
    pub body: usize,
    pub body_from_geom: SE3,
    /// A half-space is drawn as a square of [`Visual::PLANE_HALF_SIZE`]
    /// about its origin; a convex mesh as its hull unless `mesh` is given.
    pub shape: Shape,
    /// Colour and opacity, each in [0, 1] (MJCF's `rgba`).
    pub rgba: [f64; 4],
    /// The triangles a mesh file draws as (in the geom's frame, scaled),
    /// concave parts included; `None`: `shape` is drawn.
    #[serde(default)]
    pub mesh: Option<std::sync::Arc<mesh::VisualMesh>>,
}

impl Visual {
    /// Half the side of the square a half-space is drawn as, in metres.
    pub const PLANE_HALF_SIZE: f64 = 50.0;
    /// The colour of a ground or terrain moreau adds.
    pub const GROUND_RGBA: [f64; 4] = [0.55, 0.65, 0.5, 1.0];
}

/// A named frame fixed on a body.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Frame {
    pub name: String,
    pub body: usize,
    pub body_from_frame: SE3,
    /// `Some` for the frame of a file's body: the mass and inertia the file
    /// gives that body alone, in this frame (a model body can carry several
    /// file bodies welded together, and a file body with several joints is
    /// a chain of model bodies whose last one carries it); `None` for a site.
    pub inertia: Option<crate::math::Inertia>,
}

impl Model {
    /// The friction coefficient and restitution of a contact between
    /// geometries of materials `a` and `b`: friction by
    /// [`Self::friction_mix`], restitution the larger. The contact's
    /// dimension is the higher-priority geometry's `condim`, the larger at
    /// equal priority (MuJoCo's rule); a contact of dimension 1 is
    /// frictionless.
    pub fn pair_contact(&self, a: &Material, b: &Material) -> (f64, f64) {
        let mu = self.pair_friction(a, b, self.pair_condim(a, b));
        (mu, a.restitution.max(b.restitution))
    }

    /// The friction coefficient of materials `a` and `b` for a contact of
    /// dimension `condim` (1: frictionless).
    fn pair_friction(&self, a: &Material, b: &Material, condim: u8) -> f64 {
        if condim == 1 {
            return 0.0;
        }
        self.mix(a, b, a.friction, b.friction)
    }

    /// Coefficients `fa` of material `a` and `fb` of `b` combined by
    /// [`Self::friction_mix`].
    fn mix(&self, a: &Material, b: &Material, fa: f64, fb: f64) -> f64 {
        match self.friction_mix {
            FrictionMix::GeometricMean => fa.sqrt() * fb.sqrt(),
            FrictionMix::Maximum => match a.priority.cmp(&b.priority) {
                std::cmp::Ordering::Greater => fa,
                std::cmp::Ordering::Less => fb,
                std::cmp::Ordering::Equal => fa.max(fb),
            },
        }
    }

    /// The torsional and rolling friction coefficients (m) of a contact
    /// between geometries `a` and `b`: an explicit pair's own, else their
    /// materials' combined as their sliding friction is; each zero where
    /// the contact's dimension ([`Self::geometry_contact`]) has no such
    /// rows (torsional from 4, rolling at 6).
    pub fn geometry_spin(&self, a: usize, b: usize) -> [f64; 2] {
        let (ma, mb) = (&self.geometries[a].material, &self.geometries[b].material);
        let (spin, condim) = match self.contact_pair(a, b) {
            Some(p) => (p.spin, p.condim),
            None => (
                [
                    self.mix(ma, mb, ma.torsional, mb.torsional),
                    self.mix(ma, mb, ma.rolling, mb.rolling),
                ],
                self.pair_condim(ma, mb),
            ),
        };
        [
            if condim >= 4 { spin[0] } else { 0.0 },
            if condim >= 6 { spin[1] } else { 0.0 },
        ]
    }

    /// The explicit pair of geometries `a` and `b`, if there is one.
    pub fn contact_pair(&self, a: usize, b: usize) -> Option<&ContactPair> {
        let key = (a.min(b), a.max(b));
        self.contact_pairs
            .binary_search_by(|p| p.geoms.cmp(&key))
            .ok()
            .map(|i| &self.contact_pairs[i])
    }

    /// The friction coefficient, restitution and dimension of a contact
    /// between geometries `a` and `b`: an explicit pair's own, else
    /// [`Self::pair_contact`] and [`Self::pair_condim`] of their materials.
    pub fn geometry_contact(&self, a: usize, b: usize) -> (f64, f64, u8) {
        let (ma, mb) = (&self.geometries[a].material, &self.geometries[b].material);
        let restitution = ma.restitution.max(mb.restitution);
        match self.contact_pair(a, b) {
            Some(p) => (
                if p.condim == 1 { 0.0 } else { p.friction },
                restitution,
                p.condim,
            ),
            None => {
                let condim = self.pair_condim(ma, mb);
                (self.pair_friction(ma, mb, condim), restitution, condim)
            }
        }
    }

    /// The dimension of a contact between geometries of materials `a` and
    /// `b` (MuJoCo's rule): the higher-priority one's `condim`, the larger
    /// at equal priority.
    pub fn pair_condim(&self, a: &Material, b: &Material) -> u8 {
        match a.priority.cmp(&b.priority) {
            std::cmp::Ordering::Greater => a.condim,
            std::cmp::Ordering::Less => b.condim,
            std::cmp::Ordering::Equal => a.condim.max(b.condim),
        }
    }
    /// Number of actuators (the length of a control vector).
    pub fn nu(&self) -> usize {
        self.actuators.len()
    }
    /// Number of activation states (actuators with activation dynamics):
    /// the length of `State::act`.
    pub fn na(&self) -> usize {
        self.actuators.iter().filter(|a| a.act.is_some()).count()
    }
    /// Body index of the joint named `name`.
    pub fn joint_id(&self, name: &str) -> Option<usize> {
        self.joint_name.iter().position(|n| n == name)
    }
    /// What makes a step hold rows other than contacts and joint limits
    /// (equalities, dry friction, tendon limits), or tendon forces, in words;
    /// `None` when nothing does. For the paths that do not simulate them
    /// (the resident GPU worlds, the derivatives, inverse dynamics).
    pub fn constraint_features(&self) -> Option<String> {
        self.features(true)
    }

    /// [`Self::constraint_features`] but the dofs' dry friction (for the
    /// resident GPU step, which solves it with the contacts).
    pub fn constraint_features_but_dof_friction(&self) -> Option<String> {
        self.features(false)
    }

    fn features(&self, dof_friction: bool) -> Option<String> {
        let mut what = Vec::new();
        let ne = self.equalities.len() + self.body_equalities.len();
        if ne > 0 {
            what.push(format!("{ne} equality constraint(s)"));
        }
        let friction = self.dof_frictionloss.iter().filter(|&&f| f > 0.0).count();
        if friction > 0 && dof_friction {
            what.push(format!("dry friction (frictionloss) on {friction} dof(s)"));
        }
        let acting = self
            .tendons
            .iter()
            .filter(|t| {
                t.stiffness > 0.0 || t.damping > 0.0 || t.frictionloss > 0.0 || t.range.is_some()
            })
            .count();
        if acting > 0 {
            what.push(format!(
                "{acting} tendon(s) with a spring, damping, friction or a range"
            ));
        }
        let cones = (1..self.nbodies)
            .filter(|&b| {
                matches!(self.joint_type[b], JointType::Spherical) && self.joint_range[b].is_some()
            })
            .count();
        if cones > 0 {
            what.push(format!("{cones} ball joint cone limit(s)"));
        }
        let pulling = self.actuators.iter().filter(|a| a.tendon.is_some()).count();
        if pulling > 0 {
            what.push(format!("{pulling} actuator(s) on tendons"));
        }
        let spinning = self.spin_pairs().len();
        if spinning > 0 {
            what.push(format!(
                "torsional or rolling friction (condim 4 or 6) between {spinning} pair(s) of geoms"
            ));
        }
        (!what.is_empty()).then(|| what.join(", "))
    }

    /// The pairs of geometries `(a, b)`, `a < b`, that may collide
    /// ([`Self::can_collide`]) with torsional or rolling friction
    /// ([`Self::geometry_spin`] not zero, sliding friction positive): their
    /// contacts add cone rows ([`crate::contact::wide`]). `O(ng²)`: for
    /// setup, not stepping.
    pub fn spin_pairs(&self) -> Vec<(usize, usize)> {
        let ng = self.geometries.len();
        let spinning = |g: &Geometry| {
            let m = &g.material;
            m.condim > 3 && (m.torsional > 0.0 || m.rolling > 0.0)
        };
        // A pair's condim is one of its geometries' (or its explicit pair's).
        if !self.geometries.iter().any(spinning) && !self.contact_pairs.iter().any(|p| p.condim > 3)
        {
            return Vec::new();
        }
        (0..ng)
            .flat_map(|a| (a + 1..ng).map(move |b| (a, b)))
            .filter(|&(a, b)| {
                self.geometry_spin(a, b) != [0.0; 2]
                    && self.geometry_contact(a, b).0 > 0.0
                    && self.can_collide(a, b)
            })
            .collect()
    }
    /// `(body, name, range)` of each joint with a position range, in model order.
    pub fn limited_joints(&self) -> impl Iterator<Item = (usize, &str, (f64, f64))> + '_ {
        (1..self.nbodies)
            .filter_map(|i| self.joint_range[i].map(|r| (i, self.joint_name[i].as_str(), r)))
    }
    /// Configuration `q` in MuJoCo's `qpos` convention (the same order and
    /// meaning, quaternions `(w, x, y, z)` where `q` has `(x, y, z, w)`),
    /// written to `qpos` (nq).
    pub fn mujoco_qpos(&self, q: &[f64], qpos: &mut [f64]) {
        qpos.copy_from_slice(q);
        for i in 1..self.nbodies {
            if let Some(o) = self.joint_type[i].quaternion_offset() {
                let k = self.joint_idx_q[i] + o;
                qpos[k] = q[k + 3];
                qpos[k + 1..k + 4].copy_from_slice(&q[k..k + 3]);
            }
        }
    }
    /// The configuration of MuJoCo's `qpos` (the inverse of [`Self::mujoco_qpos`]).
    pub fn q_from_mujoco(&self, qpos: &[f64], q: &mut [f64]) {
        q.copy_from_slice(qpos);
        for i in 1..self.nbodies {
            if let Some(o) = self.joint_type[i].quaternion_offset() {
                let k = self.joint_idx_q[i] + o;
                q[k..k + 3].copy_from_slice(&qpos[k + 1..k + 4]);
                q[k + 3] = qpos[k];
            }
        }
    }
    /// Velocity `v` at configuration `q` in MuJoCo's `qvel` convention,
    /// written to `qvel` (nv): the same except a free joint's linear
    /// velocity, in the world frame there and in the body frame here (both
    /// have the angular velocity in the body frame).
    pub fn mujoco_qvel(&self, q: &[f64], v: &[f64], qvel: &mut [f64]) {
        self.rotate_free_linear_velocities(q, v, qvel, false);
    }
    /// The velocity of MuJoCo's `qvel` at configuration `q` (the inverse of
    /// [`Self::mujoco_qvel`]).
    pub fn v_from_mujoco(&self, q: &[f64], qvel: &[f64], v: &mut [f64]) {
        self.rotate_free_linear_velocities(q, qvel, v, true);
    }
    fn rotate_free_linear_velocities(
        &self,
        q: &[f64],
        from: &[f64],
        to: &mut [f64],
        inverse: bool,
    ) {
        to.copy_from_slice(from);
        for i in 1..self.nbodies {
            if self.joint_type[i] != JointType::Free {
                continue;
            }
            let (iq, iv) = (self.joint_idx_q[i], self.joint_idx_v[i]);
            let r = quat_from_slice(&q[iq + 3..iq + 7]).to_rotation_matrix();
            let lin = Vec3::new(from[iv], from[iv + 1], from[iv + 2]);
            let out = if inverse {
                r.transpose() * lin
            } else {
                r * lin
            };
            to[iv..iv + 3].copy_from_slice(out.as_slice());
        }
    }
    /// The frames of the file's bodies (`(frame index, frame)`), in file order.
    /// The mocap body ([`Model::mocap`]) that frame `f` is on, if any.
    pub fn mocap_of_frame(&self, f: usize) -> Option<usize> {
        self.mocap.iter().position(|m| m.frames.contains(&f))
    }
    pub fn body_frames(&self) -> impl Iterator<Item = (usize, &Frame)> + '_ {
        self.frames
            .iter()
            .enumerate()
            .filter(|(_, f)| f.inertia.is_some())
    }
    /// Sets body `body`'s inertia (domain randomization), checked as a
    /// file's is, and keeps the file's bodies carried by it in step (their
    /// frames' inertias: MuJoCo's per-body quantities and the sensors read
    /// them): where several are welded together, the first (the one with
    /// the joint) takes the change, which must leave it a valid inertia.
    pub fn set_body_inertia(
        &mut self,
        body: usize,
        inertia: crate::math::Inertia,
    ) -> Result<(), crate::error::ModelError> {
        let invalid = |reason: String| crate::error::ModelError::Invalid {
            what: format!("body {body}"),
            reason,
        };
        if body == WORLD || body >= self.nbodies {
            return Err(invalid(format!(
                "not a body with inertia (1..{})",
                self.nbodies
            )));
        }
        validate_inertia(&self.body_name[body], &inertia)?;
        let carried: Vec<usize> = (self.body_frames())
            .filter(|(_, f)| f.body == body)
            .map(|(k, _)| k)
            .collect();
        // The change goes to the first file body it carries (the one with
        // the joint; the others are welded to it), so that the file's
        // bodies still sum to the model body.
        if let Some(&k) = carried.first() {
            let own = if carried.len() == 1 {
                inertia
            } else {
                let f = &self.frames[k];
                let root = f.inertia.unwrap_or_else(crate::math::Inertia::zero);
                let root = root.transformed(&f.body_from_frame);
                let matrix = root.matrix() + inertia.matrix() - self.body_inertia[body].matrix();
                let own = crate::math::Inertia::from_matrix(&matrix);
                validate_inertia(&f.name, &own).map_err(|e| {
                    invalid(format!(
                        "`{}` carries the file's bodies {} welded together, and `{}` takes the change: {e}",
                        self.body_name[body],
                        carried
                            .iter()
                            .map(|&j| self.frames[j].name.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                        f.name
                    ))
                })?;
                own
            };
            let f = &mut self.frames[k];
            f.inertia = Some(own.transformed(&f.body_from_frame.inverse()));
            self.follow_center_of_mass(k);
        }
        self.body_inertia[body] = inertia;
        Ok(())
    }
    /// Body index from its name.
    pub fn body_id(&self, name: &str) -> Option<usize> {
        self.body_name.iter().position(|n| n == name)
    }
    /// Total mass of the bodies (world excluded).
    pub fn total_mass(&self) -> f64 {
        self.body_inertia.iter().map(|i| i.mass).sum()
    }
    /// The neutral configuration: zero joint values, identity rotations.
    pub fn neutral_configuration(&self) -> nalgebra::DVector<f64> {
        let mut q = nalgebra::DVector::zeros(self.nq);
        for i in 1..self.nbodies {
            let iq = self.joint_idx_q[i];
            match self.joint_type[i] {
                JointType::Free => q[iq + 6] = 1.0,
                JointType::Spherical => q[iq + 3] = 1.0,
                _ => {}
            }
        }
        q
    }
    /// Dofs supporting `body`, from its last dof up to the root (descending indices).
    pub fn support_dofs(&self, body: usize) -> SupportIter<'_> {
        SupportIter {
            model: self,
            next: self.body_last_dof[body],
        }
    }
    /// Whether geometries `a` and `b` may collide: different bodies, not both on
    /// the world, not parent and child, not an excluded pair, and their
    /// `contype`/`conaffinity` bits match (MuJoCo's rule); or an explicit
    /// pair ([`Self::contact_pairs`]) of bodies that can move apart.
    pub fn can_collide(&self, a: usize, b: usize) -> bool {
        let (ga, gb) = (&self.geometries[a], &self.geometries[b]);
        let (ba, bb) = (ga.body, gb.body);
        if ba == bb {
            return false;
        }
        // An explicit pair collides unless nothing can move it apart.
        if self.contact_pair(a, b).is_some() {
            return self.body_last_dof[ba] != self.body_last_dof[bb];
        }
        // Parent and child touch at their joint; the world is exempt (MuJoCo's rule),
        // so a free body still collides with the ground.
        if (self.body_parent[ba] == bb && bb != WORLD)
            || (self.body_parent[bb] == ba && ba != WORLD)
        {
            return false;
        }
        let key = (ba.min(bb), ba.max(bb));
        if self.collision_exclusions.binary_search(&key).is_ok() {
            return false;
        }
        if !self.frame_exclusions.is_empty() {
            let (fa, fb) = (ga.file_body(), gb.file_body());
            if self
                .frame_exclusions
                .binary_search(&(fa.min(fb), fa.max(fb)))
                .is_ok()
            {
                return false;
            }
        }
        // Bodies moved by the same dofs (welded together, or both static) never move
        // relative to each other: their contacts could not be resolved.
        if self.body_last_dof[ba] == self.body_last_dof[bb] {
            return false;
        }
        let (ma, mb) = (&ga.material, &gb.material);
        (ma.contype & mb.conaffinity) != 0 || (mb.contype & ma.conaffinity) != 0
    }
}

/// Iterator over the dofs supporting a body (see [`Model::support_dofs`]).
pub struct SupportIter<'a> {
    model: &'a Model,
    next: usize,
}

impl Iterator for SupportIter<'_> {
    type Item = usize;
    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.next == NO_DOF {
            return None;
        }
        let k = self.next;
        self.next = self.model.dof_parent[k];
        Some(k)
    }
}
