use super::{Data, forward_kinematics, forward_velocity};
use crate::math::{Vec3, force_cross, spatial};
use crate::model::Model;
use nalgebra::DVector;

/// Recursive Newton-Euler: the joint torques `τ = M(q) a + b(q, v)` (gravity
/// included). `q`: (nq), `v`, `a`: (nv). Returns `&data.tau`.
pub fn rnea<'a>(
    model: &Model,
    data: &'a mut Data,
    q: &[f64],
    v: &[f64],
    a: &[f64],
) -> &'a DVector<f64> {
    forward_kinematics(model, data, q);
    forward_velocity(model, data, v);
    rnea_from_kinematics(model, data, a);
    &data.tau
}

/// Nonlinear effects `b(q, v)` (Coriolis, centrifugal, gravity) = RNEA with `a = 0`.
pub fn nonlinear_effects<'a>(
    model: &Model,
    data: &'a mut Data,
    q: &[f64],
    v: &[f64],
) -> &'a DVector<f64> {
    forward_kinematics(model, data, q);
    forward_velocity(model, data, v);
    data.body_acceleration[0] = spatial(&-model.gravity, &Vec3::zeros());
    for i in 1..model.nbodies {
        data.body_acceleration[i] =
            data.body_acceleration[model.body_parent[i]] + data.body_bias_acceleration[i];
    }
    backward_forces(model, data);
    &data.tau
}

/// RNEA after [`forward_kinematics`] and [`forward_velocity`].
pub fn rnea_from_kinematics(model: &Model, data: &mut Data, a: &[f64]) {
    data.body_acceleration[0] = spatial(&-model.gravity, &Vec3::zeros());
    for i in 1..model.nbodies {
        let iv = model.joint_idx_v[i];
        let mut acc = data.body_acceleration[model.body_parent[i]] + data.body_bias_acceleration[i];
        for k in iv..iv + model.joint_type[i].nv() {
            acc += data.dof_jacobian[k] * a[k];
        }
        data.body_acceleration[i] = acc;
    }
    backward_forces(model, data);
    // The rotors' inertia (armature) acts on the joint acceleration alone.
    for (k, &arm) in model.dof_armature.iter().enumerate() {
        data.tau[k] += arm * a[k];
    }
}

fn backward_forces(model: &Model, data: &mut Data) {
    for i in 1..model.nbodies {
        let inertia = &data.body_inertia_world[i];
        let v = &data.body_velocity[i];
        data.body_force[i] =
            inertia.apply(&data.body_acceleration[i]) + force_cross(v, &inertia.apply(v));
    }
    for i in (1..model.nbodies).rev() {
        let iv = model.joint_idx_v[i];
        let f = data.body_force[i];
        for k in iv..iv + model.joint_type[i].nv() {
            data.tau[k] = data.dof_jacobian[k].dot(&f);
        }
        let p = model.body_parent[i];
        if p != 0 {
            data.body_force[p] += f;
        }
    }
}
