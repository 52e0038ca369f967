use super::{Data, forward_kinematics, forward_velocity};
use crate::math::{Mat6, Vec3, Vec6, force_cross, spatial};
use crate::model::Model;
use nalgebra::DVector;

/// Articulated-body algorithm: forward dynamics `q̈ = M⁻¹(τ − b(q, v))`.
/// `q`: (nq), `v`, `tau`: (nv). Returns `&data.ddq`.
pub fn aba<'a>(
    model: &Model,
    data: &'a mut Data,
    q: &[f64],
    v: &[f64],
    tau: &[f64],
) -> &'a DVector<f64> {
    forward_kinematics(model, data, q);
    forward_velocity(model, data, v);
    aba_from_kinematics(model, data, tau);
    &data.ddq
}

/// ABA after [`forward_kinematics`] and [`forward_velocity`], in the world
/// frame: articulated inertias are summed without frame changes.
pub fn aba_from_kinematics(model: &Model, data: &mut Data, tau: &[f64]) {
    for i in 1..model.nbodies {
        let inertia = data.body_inertia_world[i];
        inertia.write_matrix(&mut data.body_inertia_6[i]);
        let v = data.body_velocity[i];
        data.articulated_bias[i] = force_cross(&v, &inertia.apply(&v));
    }
    for i in (1..model.nbodies).rev() {
        let iv = model.joint_idx_v[i];
        let nvj = model.joint_type[i].nv();
        let p = model.body_parent[i];
        // A child of the world passes nothing on: its joint's D⁻¹, U and u
        // are all the forward pass needs.
        let passes_on = p != 0;
        let mut ia = data.body_inertia_6[i];
        let mut pa = data.articulated_bias[i];
        let c = data.body_bias_acceleration[i];
        match nvj {
            0 => {}
            1 => {
                let s = data.dof_jacobian[iv];
                let u = ia * s;
                let dinv = 1.0 / (s.dot(&u) + data.dof_armature[iv]);
                let ub = tau[iv] - s.dot(&pa);
                data.dof_u[iv] = u;
                data.dof_bias[iv] = ub;
                data.joint_d_inv[i][(0, 0)] = dinv;
                if passes_on {
                    // Iᴬ − U D⁻¹ Uᵀ, in place.
                    for col in 0..6 {
                        for row in 0..6 {
                            ia[(row, col)] -= u[row] * u[col] * dinv;
                        }
                    }
                    pa += ia * c + u * (dinv * ub);
                }
            }
            n => {
                let mut d = Mat6::identity();
                for a in 0..n {
                    let u = ia * data.dof_jacobian[iv + a];
                    data.dof_u[iv + a] = u;
                    data.dof_bias[iv + a] = tau[iv + a] - data.dof_jacobian[iv + a].dot(&pa);
                }
                for a in 0..n {
                    for b in 0..n {
                        d[(a, b)] = data.dof_jacobian[iv + a].dot(&data.dof_u[iv + b]);
                    }
                    d[(a, a)] += data.dof_armature[iv + a];
                }
                // A failed factorization (impossible for validated inertias) poisons the
                // result with NaN, which the simulator reports, rather than freezing the joint.
                let dinv = d
                    .cholesky()
                    .map(|ch| ch.inverse())
                    .unwrap_or_else(|| Mat6::repeat(f64::NAN));
                data.joint_d_inv[i] = dinv;
                if !passes_on {
                    continue;
                }
                let mut udinv_u = Vec6::zeros();
                for a in 0..n {
                    let mut w = Vec6::zeros();
                    let mut wu = 0.0;
                    for b in 0..n {
                        w += data.dof_u[iv + b] * dinv[(a, b)];
                        wu += dinv[(a, b)] * data.dof_bias[iv + b];
                    }
                    // w = U D⁻¹ e_a ; subtract (U D⁻¹)_a U_aᵀ
                    let ua = data.dof_u[iv + a];
                    for col in 0..6 {
                        for row in 0..6 {
                            ia[(row, col)] -= w[row] * ua[col];
                        }
                    }
                    udinv_u += data.dof_u[iv + a] * wu;
                }
                pa += ia * c + udinv_u;
            }
        }
        if passes_on {
            data.body_inertia_6[p] += ia;
            data.articulated_bias[p] += pa;
        }
    }
    data.body_acceleration[0] = spatial(&-model.gravity, &Vec3::zeros());
    for i in 1..model.nbodies {
        let iv = model.joint_idx_v[i];
        let nvj = model.joint_type[i].nv();
        let mut acc = data.body_acceleration[model.body_parent[i]] + data.body_bias_acceleration[i];
        let dinv = &data.joint_d_inv[i];
        let mut r = [0.0; 6];
        for a in 0..nvj {
            r[a] = data.dof_bias[iv + a] - data.dof_u[iv + a].dot(&acc);
        }
        for a in 0..nvj {
            let mut x = 0.0;
            for b in 0..nvj {
                x += dinv[(a, b)] * r[b];
            }
            data.ddq[iv + a] = x;
        }
        for a in 0..nvj {
            acc += data.dof_jacobian[iv + a] * data.ddq[iv + a];
        }
        data.body_acceleration[i] = acc;
    }
}
