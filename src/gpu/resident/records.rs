//! The kernel's source and the model records it reads: what a model
//! becomes on the device (sizes in the generated header, per-body, per-dof
//! and per-actuator words, per-world parameters; their layouts in
//! `layout.rs`).

use super::contacts::{ContactSizes, device_pairs};
use super::layout::{
    ActuatorWords, BodyFloats, BodyWords, DofFloats, JointCode, StepParams, WorldParams,
};
use super::{ACT_WORDS, BODY_F32, BODY_U32, DOF_F32, LIMIT_PIVOTS_PER_ROW, WORKGROUP};
use crate::gpu::contract::{WgslConst, declaration, header};
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
/// [`ContactSizes::starting_with`]): the generated constants and the
/// uniform's struct (`StepParams`) (the model's
/// sizes, the records' offsets, the joint codes; with contacts, the
/// contact stage's sizes, the pair kinds and the problem records'
/// structs), then `shaders/resident.wgsl`, then
/// `shaders/resident_contacts.wgsl` and `shaders/resident_collide.wgsl`
/// or, without contacts, a stub.
pub fn source_for(model: &Model, per_world: bool, initial_moving: usize) -> String {
    // The contact stage when the model has pairs that can collide (a model
    // with pairs the device cannot collide is refused before).
    let pairs = device_pairs(model).unwrap_or_default();
    let c = constants_with(model, per_world, initial_moving, &pairs);
    let resident = include_str!("../../../shaders/resident.wgsl");
    let step_params = declaration::<StepParams>();
    if pairs.is_empty() {
        return format!(
            "{}{step_params}{resident}fn prepare_contacts(w: u32, n: u32, dt: f32, nl: u32) {{}}\n",
            header(&c)
        );
    }
    format!(
        "{}{step_params}{}{resident}{}\n{}",
        header(&c),
        crate::gpu::shader::problem_structs(),
        include_str!("../../../shaders/resident_contacts.wgsl"),
        include_str!("../../../shaders/resident_collide.wgsl")
    )
}

/// The constants [`source_for`] generates.
pub fn constants_for(model: &Model, per_world: bool, initial_moving: usize) -> Vec<WgslConst> {
    let pairs = device_pairs(model).unwrap_or_default();
    constants_with(model, per_world, initial_moving, &pairs)
}

/// [`constants_for`] with the model's device pairs.
fn constants_with(
    model: &Model,
    per_world: bool,
    initial_moving: usize,
    pairs: &[super::contacts::DevicePair],
) -> Vec<WgslConst> {
    // At least 4: lavapipe compiled the kernel with 1- or 2-row arrays
    // into code 7× slower (13 ms against 1.9 ms a step of 1 024 double
    // pendulums, 2 cores), whatever the rows in use.
    let rows = limit_rows(model).max(4);
    let u = |name, x: usize| WgslConst::u32(name, x as u32);
    let mut c = vec![
        u("NB", model.nbodies),
        u("NV", model.nv),
        u("NQ", model.nq),
        u("NU", model.nu().max(1)),
        u("LROWS", rows),
        u("LROWS_SQ", rows * rows),
        u("DINV", dinv_floats(model).max(1)),
        u("BODY_U32", BODY_U32),
        u("BODY_F32", BODY_F32),
        u("DOF_F32", DOF_F32),
        u("ACT_WORDS", ACT_WORDS),
        WgslConst::u32("LIMIT_PIVOTS", LIMIT_PIVOTS_PER_ROW * rows as u32 + 8),
        WgslConst::u32("WORKGROUP", WORKGROUP),
        WgslConst::bool("PER_WORLD", per_world),
        u("WORLD_PARAMS", WORLD_PARAMS),
        WgslConst::bool("CONTACTS", !pairs.is_empty()),
        WgslConst::f32("ROW_UNILATERAL", crate::gpu::batch::ROW_UNILATERAL as f64),
    ];
    c.extend(super::layout::constants());
    if !pairs.is_empty() {
        c.extend(
            ContactSizes::starting_with(pairs, rows, initial_moving)
                .constants(model.nv, model.nbodies),
        );
    }
    c
}

/// Storage buffers the kernel binds.
pub(super) const STORAGE_BUFFERS: u32 = 14;

/// Floats of one world's parameters in the per-world mode (see the
/// kernel's `world_params`).
pub(super) const WORLD_PARAMS: usize = std::mem::size_of::<WorldParams>() / 4;

/// One world's parameters for the per-world mode: dt, gravity, the limit
/// rows' margin, Baumgarte β, compliance and tolerance, the fluid, the
/// contacts' margin, friction scale and bounce velocity.
pub(super) fn world_params(model: &Model, params: &SimParams) -> WorldParams {
    let (g, m) = (model.gravity, &model.medium);
    let f = |x: f64| x as f32;
    WorldParams {
        dt: f(params.dt),
        gravity: [g.x, g.y, g.z].map(f),
        limit_margin: f(params.limit_margin),
        baumgarte: f(params.baumgarte),
        compliance: f(params.compliance),
        tolerance: f(params.solver_settings.tolerance),
        density: f(m.density),
        viscosity: f(m.viscosity),
        wind: [m.wind.x, m.wind.y, m.wind.z].map(f),
        contact_margin: f(params.contact_margin),
        friction_scale: f(params.friction_scale),
        bounce_velocity: f(params.bounce_velocity),
        max_recovery: max_recovery(params),
        penetration_compliance: f(params.penetration_compliance),
    }
}

/// [`SimParams::max_recovery_speed`] as the kernel reads it (`f32::MAX`:
/// unbounded).
pub(super) fn max_recovery(params: &SimParams) -> f32 {
    params
        .max_recovery_speed
        .map_or(f32::MAX, |v| (v as f32).min(f32::MAX))
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

/// The most rows after the contacts one world's step can have: one per
/// side of each limited joint, then one per dof with dry friction
/// (`frictionloss`; a model with contact pairs only: see
/// [`super::unsupported`]).
pub fn limit_rows(model: &Model) -> usize {
    2 * (1..model.nbodies).filter(|&i| limited(model, i)).count() + friction_dofs(model)
}

/// The dofs with dry friction (`frictionloss > 0`).
pub fn friction_dofs(model: &Model) -> usize {
    model.dof_frictionloss.iter().filter(|&&f| f > 0.0).count()
}

/// `f32::MAX` for an open bound, else the bound in f32.
pub(super) fn bound(x: f64) -> f32 {
    if x.is_finite() {
        x as f32
    } else {
        f32::MAX.copysign(x as f32)
    }
}

/// The model buffers: per body a [`BodyWords`] and a [`BodyFloats`], per
/// dof a [`DofFloats`], as words (see `layout.rs`).
pub(super) fn model_records(model: &Model, dt: f64) -> (Vec<u32>, Vec<f32>, Vec<f32>) {
    let nb = model.nbodies;
    let mut bu = vec![BodyWords::default(); nb];
    let mut bf = vec![BodyFloats::default(); nb];
    let mut df = vec![DofFloats::default(); model.nv.max(1)];
    let mut dinv_offset = 0;
    for i in 1..nb {
        let (code, axis) = JointCode::of(&model.joint_type[i]);
        let nj = model.joint_type[i].nv();
        bu[i] = BodyWords {
            parent: model.body_parent[i] as u32,
            joint: code as u32,
            iq: model.joint_idx_q[i] as u32,
            iv: model.joint_idx_v[i] as u32,
            limited: u32::from(limited(model, i)),
            nv: nj as u32,
            dinv: dinv_offset as u32,
        };
        dinv_offset += nj * nj;
        let r = &mut bf[i];
        let p = &model.joint_placement[i];
        // Column-major rotation.
        for col in 0..3 {
            for row in 0..3 {
                r.rotation[3 * col + row] = p.rotation[(row, col)] as f32;
            }
        }
        for k in 0..3 {
            r.translation[k] = p.translation[k] as f32;
            r.axis[k] = axis[k] as f32;
        }
        let inertia = &model.body_inertia[i];
        r.mass = inertia.mass as f32;
        let ri = &inertia.rotational;
        for k in 0..3 {
            r.com[k] = inertia.com[k] as f32;
            r.inertia_diagonal[k] = ri[(k, k)] as f32;
        }
        r.inertia_off_diagonal = [ri[(0, 1)], ri[(0, 2)], ri[(1, 2)]].map(|x| x as f32);
        if let Some((lower, upper)) = model.joint_range[i] {
            r.range = [bound(lower), bound(upper)];
        }
        // The fluid's inertia box (dynamics::fluid_forces): none for a
        // massless body or one without a dof.
        if model.medium.is_active() && inertia.mass > 0.0 && model.body_last_dof[i] != NO_DOF {
            let (sides, axes) = crate::dynamics::inertia_box(inertia);
            for col in 0..3 {
                for row in 0..3 {
                    r.fluid_axes[3 * col + row] = axes[(row, col)] as f32;
                }
                r.fluid_sides[col] = sides[col] as f32;
            }
        }
    }
    for k in 0..model.nv {
        df[k] = DofFloats {
            armature: (model.dof_armature[k] + dt * model.dof_damping[k]) as f32,
            damping: model.dof_damping[k] as f32,
            stiffness: model.dof_stiffness[k] as f32,
            springref: model.dof_springref[k] as f32,
            effort: bound(model.dof_effort_limit[k]),
            // An integer well inside f32's exact range (nq < 2²⁴).
            iq: model.joint_idx_q[model.dof_body[k]] as f32,
            frictionloss: model.dof_frictionloss[k] as f32,
        };
    }
    (
        bytemuck::cast_slice(&bu).to_vec(),
        bytemuck::cast_slice(&bf).to_vec(),
        bytemuck::cast_slice(&df).to_vec(),
    )
}

/// The actuator buffer: per actuator an [`ActuatorWords`], as words.
pub(super) fn actuator_records(model: &Model) -> Vec<u32> {
    let mut out: Vec<ActuatorWords> = model
        .actuators
        .iter()
        .map(|a| {
            let (clo, chi) = a.ctrl_range.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
            let (flo, fhi) = a.force_range.unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
            ActuatorWords {
                dof: a.dof as u32,
                iq: model.joint_idx_q[a.joint] as u32,
                gear: bound(a.gear),
                gain: bound(a.gain),
                bias: a.bias.map(bound),
                ctrl_range: [bound(clo), bound(chi)],
                force_range: [bound(flo), bound(fhi)],
            }
        })
        .collect();
    if out.is_empty() {
        out.push(ActuatorWords::default());
    }
    bytemuck::cast_slice(&out).to_vec()
}
