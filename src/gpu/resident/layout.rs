//! The records the resident step kernel reads as flat arrays, each a
//! `#[repr(C)]` struct whose fields' word offsets are the kernel's
//! constants (`bf(i, BF_MASS)`), generated from here with the joint codes
//! (see [`crate::gpu::contract`]). `records.rs` fills them.

use crate::gpu::contract::WgslConst;
use crate::gpu::contract::offsets;
use crate::math::Vec3;
use crate::model::JointType;
use bytemuck::{Pod, Zeroable};

/// A body's words (`body_u32`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct BodyWords {
    /// The parent body.
    pub parent: u32,
    /// Its joint's [`JointCode`].
    pub joint: u32,
    /// The joint's first coordinate in `q`, and first dof in `v`.
    pub iq: u32,
    pub iv: u32,
    /// 1: a hinge or slide with a range (it gets limit rows).
    pub limited: u32,
    /// The joint's dofs.
    pub nv: u32,
    /// Where its `D⁻¹` block starts among the world's.
    pub dinv: u32,
}
crate::wgsl_record!(BodyWords as "BodyWords" {
    parent: "BU_PARENT",
    joint: "BU_JOINT",
    iq: "BU_IQ",
    iv: "BU_IV",
    limited: "BU_LIMITED",
    nv: "BU_NV",
    dinv: "BU_DINV",
});

/// A body's floats (`body_f32`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct BodyFloats {
    /// The joint's placement in the parent: rotation (column-major) and
    /// translation.
    pub rotation: [f32; 9],
    pub translation: [f32; 3],
    /// The joint's axis (hinge, slide).
    pub axis: [f32; 3],
    pub mass: f32,
    /// The centre of mass in the body's frame.
    pub com: [f32; 3],
    /// The rotational inertia about the centre of mass: xx, yy, zz, then
    /// xy, xz, yz.
    pub inertia_diagonal: [f32; 3],
    pub inertia_off_diagonal: [f32; 3],
    /// The joint's range, lower and upper (±`f32::MAX` where open).
    pub range: [f32; 2],
    /// The fluid's inertia box: its principal axes (column-major, body
    /// frame) and sides (zero: no drag).
    pub fluid_axes: [f32; 9],
    pub fluid_sides: [f32; 3],
}
crate::wgsl_record!(BodyFloats as "BodyFloats" {
    rotation: "BF_ROTATION",
    translation: "BF_TRANSLATION",
    axis: "BF_AXIS",
    mass: "BF_MASS",
    com: "BF_COM",
    inertia_diagonal: "BF_INERTIA_DIAGONAL",
    inertia_off_diagonal: "BF_INERTIA_OFF_DIAGONAL",
    range: "BF_RANGE",
    fluid_axes: "BF_FLUID_AXES",
    fluid_sides: "BF_FLUID_SIDES",
});

/// A dof's floats (`dof_f32`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct DofFloats {
    /// Armature plus `dt` times the damping (implicit damping).
    pub armature: f32,
    pub damping: f32,
    pub stiffness: f32,
    pub springref: f32,
    /// The effort limit (`f32::MAX` where open).
    pub effort: f32,
    /// The `q` index of its joint, an integer in f32 (`nq < 2²⁴`).
    pub iq: f32,
}
crate::wgsl_record!(DofFloats as "DofFloats" {
    armature: "DF_ARMATURE",
    damping: "DF_DAMPING",
    stiffness: "DF_STIFFNESS",
    springref: "DF_SPRINGREF",
    effort: "DF_EFFORT",
    iq: "DF_IQ",
});

/// An actuator's words (`actuators`: the floats as their bits).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct ActuatorWords {
    pub dof: u32,
    /// The `q` index of its joint.
    pub iq: u32,
    pub gear: f32,
    pub gain: f32,
    /// The bias: constant, times the length, times the velocity.
    pub bias: [f32; 3],
    /// The control range and the force range (±`f32::MAX` where open).
    pub ctrl_range: [f32; 2],
    pub force_range: [f32; 2],
}
crate::wgsl_record!(ActuatorWords as "ActuatorWords" {
    dof: "ACT_DOF",
    iq: "ACT_IQ",
    gear: "ACT_GEAR",
    gain: "ACT_GAIN",
    bias: "ACT_BIAS",
    ctrl_range: "ACT_CTRL_RANGE",
    force_range: "ACT_FORCE_RANGE",
});

/// One world's parameters in the per-world mode (`world_params`; else the
/// uniform's, which `wp` takes in their place).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct WorldParams {
    pub dt: f32,
    pub gravity: [f32; 3],
    /// The joint-limit rows' margin, Baumgarte β, compliance α and the
    /// limit solve's tolerance (the contact solve's too).
    pub limit_margin: f32,
    pub baumgarte: f32,
    pub compliance: f32,
    pub tolerance: f32,
    /// The fluid's density, viscosity and wind.
    pub density: f32,
    pub viscosity: f32,
    pub wind: [f32; 3],
    /// The contacts' margin, friction scale and bounce velocity.
    pub contact_margin: f32,
    pub friction_scale: f32,
    pub bounce_velocity: f32,
}
crate::wgsl_record!(WorldParams as "WorldParams" {
    dt: "WP_DT",
    gravity: "WP_GRAVITY",
    limit_margin: "WP_LIMIT_MARGIN",
    baumgarte: "WP_BAUMGARTE",
    compliance: "WP_COMPLIANCE",
    tolerance: "WP_TOLERANCE",
    density: "WP_DENSITY",
    viscosity: "WP_VISCOSITY",
    wind: "WP_WIND",
    contact_margin: "WP_CONTACT_MARGIN",
    friction_scale: "WP_FRICTION_SCALE",
    bounce_velocity: "WP_BOUNCE_VELOCITY",
});

/// One contact of a step in the contact scratch (`CW_CONTACT`, each float
/// world-minor): what the step kernel's collision writes, its assembly and
/// `finish` read, and the host reads back (contact points and forces).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct ContactRecord {
    /// Its warm-start slot (u32 bits).
    pub slot: u32,
    /// The world normal, from `b` to `a`, and the world point.
    pub normal: [f32; 3],
    pub point: [f32; 3],
    /// Its pair and the bodies of `a` and `b` (u32 bits).
    pub pair: u32,
    pub body_a: u32,
    pub body_b: u32,
    /// `g` (the signed distance φ in its first lane until the
    /// stabilization) and μ.
    pub g: [f32; 3],
    pub mu: f32,
    /// Its identity within the pair: the features touching (u32 bits, as
    /// the host's `ContactKey`).
    pub key: u32,
    /// The signed distance φ.
    pub phi: f32,
}
crate::wgsl_record!(ContactRecord as "ContactRecord" {
    slot: "CR_SLOT",
    normal: "CR_NORMAL",
    point: "CR_POINT",
    pair: "CR_PAIR",
    body_a: "CR_BODY_A",
    body_b: "CR_BODY_B",
    g: "CR_G",
    mu: "CR_MU",
    key: "CR_KEY",
    phi: "CR_PHI",
});

/// A record field's first word.
#[macro_export]
macro_rules! word_of {
    ($ty:ty, $field:ident) => {
        std::mem::offset_of!($ty, $field) / 4
    };
}

/// A body's joint as the kernel's `BU_JOINT` codes it.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JointCode {
    Fixed = 0,
    Hinge = 1,
    Slide = 2,
    Free = 3,
    Ball = 4,
}

impl JointCode {
    pub const ALL: [JointCode; 5] = [
        JointCode::Fixed,
        JointCode::Hinge,
        JointCode::Slide,
        JointCode::Free,
        JointCode::Ball,
    ];

    /// The code of a joint, and its axis (zero for the jointless, free and
    /// ball joints).
    pub fn of(joint: &JointType) -> (JointCode, Vec3) {
        match *joint {
            JointType::Revolute(a) => (JointCode::Hinge, a),
            JointType::Prismatic(a) => (JointCode::Slide, a),
            JointType::Free => (JointCode::Free, Vec3::zeros()),
            JointType::Spherical => (JointCode::Ball, Vec3::zeros()),
            JointType::Fixed => (JointCode::Fixed, Vec3::zeros()),
        }
    }

    /// Its name in the kernel.
    pub fn wgsl_name(self) -> &'static str {
        match self {
            JointCode::Fixed => "JOINT_FIXED",
            JointCode::Hinge => "JOINT_HINGE",
            JointCode::Slide => "JOINT_SLIDE",
            JointCode::Free => "JOINT_FREE",
            JointCode::Ball => "JOINT_BALL",
        }
    }
}

/// The records' offset constants and the joint codes.
pub fn constants() -> Vec<WgslConst> {
    let mut c = offsets::<BodyWords>();
    c.extend(offsets::<BodyFloats>());
    c.extend(offsets::<DofFloats>());
    c.extend(offsets::<ActuatorWords>());
    c.extend(offsets::<WorldParams>());
    c.extend(offsets::<ContactRecord>());
    c.extend(
        JointCode::ALL
            .iter()
            .map(|&j| WgslConst::u32(j.wgsl_name(), j as u32)),
    );
    c
}

/// Each record's fields and size, for the tests' tiling check.
pub fn records() -> Vec<(&'static str, Vec<crate::gpu::contract::RecordField>, usize)> {
    use crate::gpu::contract::record_of;
    vec![
        record_of::<BodyWords>(),
        record_of::<BodyFloats>(),
        record_of::<DofFloats>(),
        record_of::<ActuatorWords>(),
        record_of::<WorldParams>(),
        record_of::<ContactRecord>(),
    ]
}
