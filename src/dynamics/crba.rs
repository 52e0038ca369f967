use super::{Data, forward_kinematics};
use crate::model::{Model, NO_DOF};
use nalgebra::DMatrix;

/// Composite rigid-body algorithm: the joint-space mass matrix `M(q)` (both
/// triangles filled; entries between dofs on different branches stay zero).
pub fn crba<'a>(model: &Model, data: &'a mut Data, q: &[f64]) -> &'a DMatrix<f64> {
    forward_kinematics(model, data, q);
    crba_from_kinematics(model, data);
    &data.mass_matrix
}

/// CRBA after [`forward_kinematics`]: composite inertias accumulate in the
/// world frame (no transforms), `M[j,k] = S_jᵀ Iᶜ_i S_k` for `j` supporting `k`.
pub fn crba_from_kinematics(model: &Model, data: &mut Data) {
    for i in 1..model.nbodies {
        data.body_inertia_world[i].write_matrix(&mut data.body_inertia_6[i]);
    }
    for i in (1..model.nbodies).rev() {
        let iv = model.joint_idx_v[i];
        for k in iv..iv + model.joint_type[i].nv() {
            let f = data.body_inertia_6[i] * data.dof_jacobian[k];
            let mut j = k;
            while j != NO_DOF {
                let val = data.dof_jacobian[j].dot(&f);
                data.mass_matrix[(j, k)] = val;
                data.mass_matrix[(k, j)] = val;
                j = model.dof_parent[j];
            }
        }
        let p = model.body_parent[i];
        if p != 0 {
            // Parents precede children: add in place, without a copy.
            let (parents, rest) = data.body_inertia_6.split_at_mut(i);
            parents[p] += &rest[0];
        }
    }
    for (k, &arm) in data.dof_armature.iter().enumerate() {
        data.mass_matrix[(k, k)] += arm;
    }
}
