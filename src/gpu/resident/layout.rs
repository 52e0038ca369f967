//! The records the resident step kernel reads as flat arrays, each a
//! `#[repr(C)]` struct whose fields' word offsets are the kernel's
//! constants (`bf(i, BF_MASS)`), generated from here with the joint codes
//! (see [`crate::gpu::contract`]). `records.rs` fills them.

use crate::gpu::contract::WgslConst;
use crate::gpu::contract::offsets;
use crate::math::Vec3;
use crate::model::JointType;
use bytemuck::{Pod, Zeroable};

crate::wgsl_struct! {
    /// A body's words (`body_u32`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
    pub struct BodyWords as "BodyWords" {
        /// The parent body.
        pub parent: u32 => "BU_PARENT",
        /// Its joint's [`JointCode`].
        pub joint: u32 => "BU_JOINT",
        /// The joint's first coordinate in `q`, and first dof in `v`.
        pub iq: u32 => "BU_IQ",
        pub iv: u32 => "BU_IV",
        /// 1: a hinge or slide with a range (it gets limit rows).
        pub limited: u32 => "BU_LIMITED",
        /// The joint's dofs.
        pub nv: u32 => "BU_NV",
        /// Where its `D⁻¹` block starts among the world's.
        pub dinv: u32 => "BU_DINV",
    }
}

crate::wgsl_struct! {
    /// A body's floats (`body_f32`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
    pub struct BodyFloats as "BodyFloats" {
        /// The joint's placement in the parent: rotation (column-major) and
        /// translation.
        pub rotation: [f32; 9] => "BF_ROTATION",
        pub translation: [f32; 3] => "BF_TRANSLATION",
        /// The joint's axis (hinge, slide).
        pub axis: [f32; 3] => "BF_AXIS",
        pub mass: f32 => "BF_MASS",
        /// The centre of mass in the body's frame.
        pub com: [f32; 3] => "BF_COM",
        /// The rotational inertia about the centre of mass: xx, yy, zz, then
        /// xy, xz, yz.
        pub inertia_diagonal: [f32; 3] => "BF_INERTIA_DIAGONAL",
        pub inertia_off_diagonal: [f32; 3] => "BF_INERTIA_OFF_DIAGONAL",
        /// The joint's range, lower and upper (±`f32::MAX` where open).
        pub range: [f32; 2] => "BF_RANGE",
        /// The fluid's inertia box: its principal axes (column-major, body
        /// frame) and sides (zero: no drag).
        pub fluid_axes: [f32; 9] => "BF_FLUID_AXES",
        pub fluid_sides: [f32; 3] => "BF_FLUID_SIDES",
    }
}

crate::wgsl_struct! {
    /// A dof's floats (`dof_f32`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
    pub struct DofFloats as "DofFloats" {
        /// Armature plus `dt` times the damping (implicit damping).
        pub armature: f32 => "DF_ARMATURE",
        pub damping: f32 => "DF_DAMPING",
        pub stiffness: f32 => "DF_STIFFNESS",
        pub springref: f32 => "DF_SPRINGREF",
        /// The effort limit (`f32::MAX` where open).
        pub effort: f32 => "DF_EFFORT",
        /// The `q` index of its joint, an integer in f32 (`nq < 2²⁴`).
        pub iq: f32 => "DF_IQ",
        /// Its dry friction (MJCF's `frictionloss`, N or N·m): a box row
        /// `|λ| ≤ f·dt` in the contact problem where positive.
        pub frictionloss: f32 => "DF_FRICTIONLOSS",
    }
}

crate::wgsl_struct! {
    /// An actuator's words (`actuators`: the floats as their bits).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
    pub struct ActuatorWords as "ActuatorWords" {
        pub dof: u32 => "ACT_DOF",
        /// The `q` index of its joint.
        pub iq: u32 => "ACT_IQ",
        pub gear: f32 => "ACT_GEAR",
        pub gain: f32 => "ACT_GAIN",
        /// The bias: constant, times the length, times the velocity.
        pub bias: [f32; 3] => "ACT_BIAS",
        /// The control range and the force range (±`f32::MAX` where open).
        pub ctrl_range: [f32; 2] => "ACT_CTRL_RANGE",
        pub force_range: [f32; 2] => "ACT_FORCE_RANGE",
    }
}

crate::wgsl_struct! {
    /// The resident step's uniform (WGSL `StepParams`, bound as `params`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
    pub struct StepParams as "StepParams" {
        pub nworlds: u32 => "u32",
        pub dt: f32 => "f32",
        /// 0: `tau` are the joint torques; 1: `ctrl` drives the actuators.
        pub controls: u32 => "u32",
        pub nu: u32 => "u32",
        /// (x, y, z, 0).
        pub gravity: [f32; 4] => "vec4<f32>",
        /// Limit margin, Baumgarte β, compliance α, the limit solve's tolerance.
        pub limits: [f32; 4] => "vec4<f32>",
        /// Fluid density, viscosity, then 0, 0.
        pub medium: [f32; 4] => "vec4<f32>",
        /// The wind (x, y, z), 0.
        pub wind: [f32; 4] => "vec4<f32>",
        /// x: 1 writes each stage's output to `stages`.
        pub probe: [u32; 4] => "vec4<u32>",
        /// Contacts: margin, friction scale, bounce velocity, warm start (1/0).
        pub contact: [f32; 4] => "vec4<f32>",
        /// Contacts: the solver's iteration cap, the canary's trip count
        /// (CANARY), then 0.
        pub solve: [u32; 4] => "vec4<u32>",
        /// x: the most speed a position error's recovery may ask for
        /// (`SimParams::max_recovery_speed`; `f32::MAX`: unbounded), y: a
        /// penetrating contact's compliance
        /// (`SimParams::penetration_compliance`), then 0.
        pub recovery: [f32; 4] => "vec4<f32>",
    }
}

crate::wgsl_struct! {
    /// One world's parameters in the per-world mode (`world_params`; else the
    /// uniform's, which `wp` takes in their place).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
    pub struct WorldParams as "WorldParams" {
        pub dt: f32 => "WP_DT",
        pub gravity: [f32; 3] => "WP_GRAVITY",
        /// The joint-limit rows' margin, Baumgarte β, compliance α and the
        /// limit solve's tolerance (the contact solve's too).
        pub limit_margin: f32 => "WP_LIMIT_MARGIN",
        pub baumgarte: f32 => "WP_BAUMGARTE",
        pub compliance: f32 => "WP_COMPLIANCE",
        pub tolerance: f32 => "WP_TOLERANCE",
        /// The fluid's density, viscosity and wind.
        pub density: f32 => "WP_DENSITY",
        pub viscosity: f32 => "WP_VISCOSITY",
        pub wind: [f32; 3] => "WP_WIND",
        /// The contacts' margin, friction scale and bounce velocity.
        pub contact_margin: f32 => "WP_CONTACT_MARGIN",
        pub friction_scale: f32 => "WP_FRICTION_SCALE",
        pub bounce_velocity: f32 => "WP_BOUNCE_VELOCITY",
        /// The most speed a position error's recovery may ask for
        /// (`f32::MAX`: unbounded).
        pub max_recovery: f32 => "WP_MAX_RECOVERY",
        /// A penetrating contact's compliance
        /// (`SimParams::penetration_compliance`).
        pub penetration_compliance: f32 => "WP_PENETRATION_COMPLIANCE",
    }
}

crate::wgsl_struct! {
    /// One contact of a step in the contact scratch (`CW_CONTACT`, each float
    /// world-minor): what the step kernel's collision writes, its assembly and
    /// `finish` read, and the host reads back (contact points and forces).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
    pub struct ContactRecord as "ContactRecord" {
        /// Its warm-start slot (u32 bits).
        pub slot: u32 => "CR_SLOT",
        /// The world normal, from `b` to `a`, and the world point.
        pub normal: [f32; 3] => "CR_NORMAL",
        pub point: [f32; 3] => "CR_POINT",
        /// Its pair and the bodies of `a` and `b` (u32 bits).
        pub pair: u32 => "CR_PAIR",
        pub body_a: u32 => "CR_BODY_A",
        pub body_b: u32 => "CR_BODY_B",
        /// `g` (the signed distance φ in its first lane until the
        /// stabilization) and μ.
        pub g: [f32; 3] => "CR_G",
        pub mu: f32 => "CR_MU",
        /// Its identity within the pair: the features touching (u32 bits, as
        /// the host's `ContactKey`).
        pub key: u32 => "CR_KEY",
        /// The signed distance φ.
        pub phi: f32 => "CR_PHI",
    }
}

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
