//! The kernel's source and the model records it reads: what a model
//! becomes on the device (sizes in the generated header, per-body, per-dof
//! and per-actuator words, per-world parameters).

use super::contacts::{ContactSizes, device_pairs};
use super::{ACT_WORDS, BODY_F32, BODY_U32, DOF_F32, LIMIT_PIVOTS_PER_ROW, WORKGROUP};
use crate::model::{JointType, Model, NO_DOF};
use crate::sim::SimParams;

/// The kernel's WGSL for `model`: a header of its sizes, then
/// `shaders/resident.wgsl`.
pub fn source(model: &Model) -> String {
    source_for(model, false, 0)
}

/// The kernel's source for `model`, with each world's own model records
/// and parameters (`per_world`) or one copy for all, and room for
/// `initial_moving` contacts between moving shapes at least (see
/// [`ContactSizes::starting_with`]).
pub fn source_for(model: &Model, per_world: bool, initial_moving: usize) -> String {
    // At least 4: lavapipe compiled the kernel with 1- or 2-row arrays
    // into code 7× slower (13 ms against 1.9 ms a step of 1 024 double
    // pendulums, 2 cores), whatever the rows in use.
    let rows = limit_rows(model).max(4);
    // The contact stage when the model has pairs that can collide (a
    // model with pairs the device cannot collide is refused before).
    let pairs = device_pairs(model).unwrap_or_default();
    let contacts = if pairs.is_empty() {
        "const CONTACTS: bool = false;\nfn prepare_contacts(w: u32, n: u32, dt: f32, nl: u32) {}\n"
            .to_string()
    } else {
        format!(
            "const CONTACTS: bool = true;\n{}{}",
            ContactSizes::starting_with(&pairs, rows, initial_moving)
                .header(model.nv, model.nbodies),
            include_str!("../../../shaders/resident_contacts.wgsl")
        )
    };
    format!(
        "const NB: u32 = {}u;\nconst NV: u32 = {}u;\nconst NQ: u32 = {}u;\nconst NU: u32 = {}u;\n\
         const LROWS: u32 = {rows}u;\nconst LROWS_SQ: u32 = {}u;\nconst DINV: u32 = {}u;\n\
         const BODY_U32: u32 = {BODY_U32}u;\nconst BODY_F32: u32 = {BODY_F32}u;\nconst DOF_F32: u32 = {DOF_F32}u;\nconst ACT_WORDS: u32 = {ACT_WORDS}u;\n\
         const LIMIT_PIVOTS: u32 = {}u;\nconst WORKGROUP: u32 = {WORKGROUP}u;\n\
         const PER_WORLD: bool = {per_world};\nconst WORLD_PARAMS: u32 = {WORLD_PARAMS}u;\n{}{contacts}",
        model.nbodies,
        model.nv,
        model.nq,
        model.nu().max(1),
        rows * rows,
        dinv_floats(model).max(1),
        LIMIT_PIVOTS_PER_ROW * rows as u32 + 8,
        include_str!("../../../shaders/resident.wgsl")
    )
}

/// Storage buffers the kernel binds.
pub(super) const STORAGE_BUFFERS: u32 = 14;

/// Floats of one world's parameters in the per-world mode (see the
/// kernel's `world_params`).
pub(super) const WORLD_PARAMS: usize = 16;

/// One world's parameters for the per-world mode: dt, gravity, the limit
/// rows' margin, Baumgarte β, compliance and tolerance, the fluid, the
/// contacts' margin, friction scale and bounce velocity.
pub(super) fn world_params(model: &Model, params: &SimParams) -> [f32; WORLD_PARAMS] {
    let (g, m) = (model.gravity, &model.medium);
    [
        params.dt,
        g.x,
        g.y,
        g.z,
        params.limit_margin,
        params.baumgarte,
        params.compliance,
        params.solver_settings.tolerance,
        m.density,
        m.viscosity,
        m.wind.x,
        m.wind.y,
        m.wind.z,
        params.contact_margin,
        params.friction_scale,
        params.bounce_velocity,
    ]
    .map(|x| x as f32)
}

/// Floats of the limit LCP's scratch: `G + R` and its factor per world
/// (one word when the model has no limit rows).
pub(super) fn lcp_floats(model: &Model, nworlds: usize) -> usize {
    match limit_rows(model) {
        0 => 1,
        rows => 2 * rows.max(4).pow(2) * nworlds,
    }
}

/// Floats of the joints' `D⁻¹` blocks: `Σ nv_j²`.
pub(super) fn dinv_floats(model: &Model) -> usize {
    (1..model.nbodies)
        .map(|i| model.joint_type[i].nv().pow(2))
        .sum()
}

/// Whether the joint of body `i` gets limit rows (as `Simulator` does: a
/// hinge or slide with a range).
pub(super) fn limited(model: &Model, i: usize) -> bool {
    model.joint_range[i].is_some()
        && matches!(
            model.joint_type[i],
            JointType::Revolute(_) | JointType::Prismatic(_)
        )
}

/// The most joint-limit rows one world's step can have: one per side of
/// each limited joint.
pub fn limit_rows(model: &Model) -> usize {
    2 * (1..model.nbodies).filter(|&i| limited(model, i)).count()
}

/// `f32::MAX` for an open bound, else the bound in f32.
pub(super) fn bound(x: f64) -> f32 {
    if x.is_finite() {
        x as f32
    } else {
        f32::MAX.copysign(x as f32)
    }
}

/// The model buffers: per body [`BODY_U32`] words and [`BODY_F32`]
/// floats, per dof [`DOF_F32`] floats (see `shaders/resident.wgsl`).
pub(super) fn model_records(model: &Model, dt: f64) -> (Vec<u32>, Vec<f32>, Vec<f32>) {
    let nb = model.nbodies;
    let mut bu = vec![0u32; BODY_U32 * nb];
    let mut bf = vec![0f32; BODY_F32 * nb];
    let mut df = vec![0f32; DOF_F32 * model.nv.max(1)];
    let mut dinv_offset = 0;
    for i in 1..nb {
        let (jtype, axis) = match model.joint_type[i] {
            JointType::Revolute(a) => (1, a),
            JointType::Prismatic(a) => (2, a),
            JointType::Free => (3, crate::math::Vec3::zeros()),
            JointType::Spherical => (4, crate::math::Vec3::zeros()),
            JointType::Fixed => (0, crate::math::Vec3::zeros()),
        };
        let nj = model.joint_type[i].nv();
        let u = &mut bu[BODY_U32 * i..BODY_U32 * (i + 1)];
        u[0] = model.body_parent[i] as u32;
        u[1] = jtype;
        u[2] = model.joint_idx_q[i] as u32;
        u[3] = model.joint_idx_v[i] as u32;
        u[4] = u32::from(limited(model, i));
        u[5] = nj as u32;
        u[6] = dinv_offset as u32;
        dinv_offset += nj * nj;
        let r = &mut bf[BODY_F32 * i..BODY_F32 * (i + 1)];
        let p = &model.joint_placement[i];
        // Column-major rotation.
        for col in 0..3 {
            for row in 0..3 {
                r[3 * col + row] = p.rotation[(row, col)] as f32;
            }
        }
        for k in 0..3 {
            r[9 + k] = p.translation[k] as f32;
            r[12 + k] = axis[k] as f32;
        }
        let inertia = &model.body_inertia[i];
        r[15] = inertia.mass as f32;
        let ri = &inertia.rotational;
        for k in 0..3 {
            r[16 + k] = inertia.com[k] as f32;
            r[19 + k] = ri[(k, k)] as f32;
        }
        r[22] = ri[(0, 1)] as f32;
        r[23] = ri[(0, 2)] as f32;
        r[24] = ri[(1, 2)] as f32;
        if let Some((lower, upper)) = model.joint_range[i] {
            r[25] = bound(lower);
            r[26] = bound(upper);
        }
        // The fluid's inertia box (dynamics::fluid_forces): none for a
        // massless body or one without a dof.
        if model.medium.is_active() && inertia.mass > 0.0 && model.body_last_dof[i] != NO_DOF {
            let (sides, axes) = crate::dynamics::inertia_box(inertia);
            for col in 0..3 {
                for row in 0..3 {
                    r[27 + 3 * col + row] = axes[(row, col)] as f32;
                }
                r[36 + col] = sides[col] as f32;
            }
        }
    }
    for k in 0..model.nv {
        let d = &mut df[DOF_F32 * k..DOF_F32 * (k + 1)];
        d[0] = (model.dof_armature[k] + dt * model.dof_damping[k]) as f32;
        d[1] = model.dof_damping[k] as f32;
        d[2] = model.dof_stiffness[k] as f32;
        d[3] = model.dof_springref[k] as f32;
        d[4] = bound(model.dof_effort_limit[k]);
        // An integer well inside f32's exact range (nq < 2²⁴).
        d[5] = model.joint_idx_q[model.dof_body[k]] as f32;
    }
    (bu, bf, df)
}

/// The actuator buffer: per actuator [`ACT_WORDS`] words (see the shader).
pub(super) fn actuator_records(model: &Model) -> Vec<u32> {
    let mut out = Vec::with_capacity(ACT_WORDS * model.nu().max(1));
    for a in &model.actuators {
        let (clo, chi) = a.ctrl_range.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
        let (flo, fhi) = a.force_range.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
        out.push(a.dof as u32);
        out.push(model.joint_idx_q[a.joint] as u32);
        for x in [
            a.gear, a.gain, a.bias[0], a.bias[1], a.bias[2], clo, chi, flo, fhi,
        ] {
            out.push(bound(x).to_bits());
        }
    }
    if out.is_empty() {
        out.resize(ACT_WORDS, 0);
    }
    out
}
