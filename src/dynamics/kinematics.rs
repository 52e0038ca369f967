use super::Data;
use crate::math::{Vec3, Vec6, motion_cross};
use crate::model::Model;

/// Forward kinematics: body placements, world-frame joint motion subspaces
/// (`data.dof_jacobian`) and world-frame body inertias. `q`: (nq).
pub fn forward_kinematics(model: &Model, data: &mut Data, q: &[f64]) {
    debug_assert_eq!(q.len(), model.nq);
    for i in 1..model.nbodies {
        let jt = &model.joint_type[i];
        let iq = model.joint_idx_q[i];
        let joint_from_body = jt.transform(&q[iq..iq + jt.nq()]);
        let pfb = model.joint_placement[i].mul(&joint_from_body);
        let wfb = data.world_from_body[model.body_parent[i]].mul(&pfb);
        data.parent_from_body[i] = pfb;
        data.world_from_body[i] = wfb;
        let iv = model.joint_idx_v[i];
        for k in iv..iv + jt.nv() {
            data.dof_jacobian[k] = wfb.act_motion(&model.dof_motion[k]);
        }
        data.body_inertia_world[i] = model.body_inertia[i].transformed(&wfb);
    }
}

/// Body spatial velocities and velocity-product accelerations, after
/// [`forward_kinematics`]. `v`: (nv).
pub fn forward_velocity(model: &Model, data: &mut Data, v: &[f64]) {
    debug_assert_eq!(v.len(), model.nv);
    data.body_velocity[0] = Vec6::zeros();
    for i in 1..model.nbodies {
        let iv = model.joint_idx_v[i];
        let mut vj = Vec6::zeros();
        for k in iv..iv + model.joint_type[i].nv() {
            vj += data.dof_jacobian[k] * v[k];
        }
        let vi = data.body_velocity[model.body_parent[i]] + vj;
        data.body_velocity[i] = vi;
        data.body_bias_acceleration[i] = motion_cross(&vi, &vj);
    }
}

/// Kinetic energy `½ Σ vᵢᵀ Iᵢ vᵢ`, after [`forward_kinematics`] and [`forward_velocity`].
pub fn kinetic_energy(model: &Model, data: &Data) -> f64 {
    (1..model.nbodies)
        .map(|i| {
            let v = &data.body_velocity[i];
            0.5 * v.dot(&data.body_inertia_world[i].apply(v))
        })
        .sum()
}

/// Gravitational potential energy `−Σ mᵢ g·cᵢ`, after [`forward_kinematics`].
pub fn potential_energy(model: &Model, data: &Data) -> f64 {
    (1..model.nbodies)
        .map(|i| {
            let b = &data.body_inertia_world[i];
            -b.mass * model.gravity.dot(&b.com)
        })
        .sum()
}

/// World position of the centre of mass of the whole model, after [`forward_kinematics`].
pub fn center_of_mass(model: &Model, data: &Data) -> Vec3 {
    let mut c = Vec3::zeros();
    let mut m = 0.0;
    for i in 1..model.nbodies {
        let b = &data.body_inertia_world[i];
        c += b.com * b.mass;
        m += b.mass;
    }
    if m > 0.0 { c / m } else { c }
}
