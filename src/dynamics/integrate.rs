//! The configuration manifold: `q ⊕ v` (exponential map on SE(3) for free
//! joints, on SO(3) for spherical joints) and its inverse `q₁ ⊖ q₀`.

use crate::math::{
    SE3, Vec3, Vec6, exp6, log6, quat_exp, quat_from_slice, quat_log, quat_to_slice,
};
use crate::model::{JointType, Model};
use nalgebra::{DMatrix, Quaternion, UnitQuaternion};

/// `out = q ⊕ v·dt`. `q`, `out`: (nq); `v`: (nv). `out` may not alias `q`.
pub fn integrate(model: &Model, q: &[f64], v: &[f64], dt: f64, out: &mut [f64]) {
    for i in 1..model.nbodies {
        let (iq, iv) = (model.joint_idx_q[i], model.joint_idx_v[i]);
        match model.joint_type[i] {
            JointType::Free => {
                let rot = quat_from_slice(&q[iq + 3..iq + 7]);
                let xi = Vec6::from_column_slice(&v[iv..iv + 6]) * dt;
                let step = exp6(&xi);
                let p = Vec3::new(q[iq], q[iq + 1], q[iq + 2]) + rot * step.translation;
                out[iq..iq + 3].copy_from_slice(p.as_slice());
                let w = Vec3::new(xi[3], xi[4], xi[5]);
                let qn = UnitQuaternion::new_normalize(*(rot * quat_exp(&w)).quaternion());
                quat_to_slice(&qn, &mut out[iq + 3..iq + 7]);
            }
            JointType::Spherical => {
                let rot = quat_from_slice(&q[iq..iq + 4]);
                let w = Vec3::new(v[iv], v[iv + 1], v[iv + 2]) * dt;
                let qn = UnitQuaternion::new_normalize(*(rot * quat_exp(&w)).quaternion());
                quat_to_slice(&qn, &mut out[iq..iq + 4]);
            }
            JointType::Revolute(_) | JointType::Prismatic(_) => out[iq] = q[iq] + v[iv] * dt,
            JointType::Fixed => {}
        }
    }
}

/// The coordinate charts of the configuration space at `q`, which carry
/// gradients between the tangent space (velocities, the step Jacobians'
/// `q` columns) and the coordinates `q` (quaternions `(x, y, z, w)`):
/// `c` (nq × nv) `= ∂(q ⊕ δ)/∂δ` at `δ = 0` and `d` (nv × nq) `= ∂(q' ⊖
/// q)/∂q'` at `q' = q`. With unit quaternions `d·c = I`; `d` ignores a
/// change of a quaternion's norm (the dynamics normalize it). A gradient
/// `g` with respect to `q ⊕ δ`'s coordinates is `cᵀg` in the tangent
/// space; a tangent gradient `h` is `dᵀh` with respect to `q`'s coordinates.
pub fn configuration_charts(model: &Model, q: &[f64], c: &mut DMatrix<f64>, d: &mut DMatrix<f64>) {
    let (nq, nv) = (model.nq, model.nv);
    c.resize_mut(nq, nv, 0.0);
    d.resize_mut(nv, nq, 0.0);
    c.fill(0.0);
    d.fill(0.0);
    // A unit quaternion's first-order change under a body-frame rotation
    // δω: (q ⊗ (δω/2, 0)) = ½ M δω, M (4 × 3) with orthonormal columns.
    let rotation = |iq: usize, iv: usize, c: &mut DMatrix<f64>, d: &mut DMatrix<f64>| {
        let qn = quat_from_slice(&q[iq..iq + 4]);
        let (v, w) = (Vec3::new(qn.i, qn.j, qn.k), qn.w);
        let top = nalgebra::Matrix3::identity() * w + crate::math::skew(&v);
        for r in 0..3 {
            for k in 0..3 {
                c[(iq + r, iv + k)] = 0.5 * top[(r, k)];
                d[(iv + k, iq + r)] = 2.0 * top[(r, k)];
            }
        }
        for k in 0..3 {
            c[(iq + 3, iv + k)] = -0.5 * v[k];
            d[(iv + k, iq + 3)] = -2.0 * v[k];
        }
    };
    for i in 1..model.nbodies {
        let (iq, iv) = (model.joint_idx_q[i], model.joint_idx_v[i]);
        match model.joint_type[i] {
            JointType::Free => {
                // p ⊕ δ = p + R δ_lin to first order (δ in the body frame).
                let r = quat_from_slice(&q[iq + 3..iq + 7]).to_rotation_matrix();
                for a in 0..3 {
                    for b in 0..3 {
                        c[(iq + a, iv + b)] = r[(a, b)];
                        d[(iv + b, iq + a)] = r[(a, b)];
                    }
                }
                rotation(iq + 3, iv + 3, c, d);
            }
            JointType::Spherical => rotation(iq, iv, c, d),
            JointType::Revolute(_) | JointType::Prismatic(_) => {
                c[(iq, iv)] = 1.0;
                d[(iv, iq)] = 1.0;
            }
            JointType::Fixed => {}
        }
    }
}

/// `out = q1 ⊖ q0`: the velocity that `integrate` over unit time maps `q0` to `q1`.
pub fn difference(model: &Model, q0: &[f64], q1: &[f64], out: &mut [f64]) {
    for i in 1..model.nbodies {
        let (iq, iv) = (model.joint_idx_q[i], model.joint_idx_v[i]);
        match model.joint_type[i] {
            JointType::Free => {
                let r0 = quat_from_slice(&q0[iq + 3..iq + 7]);
                let r1 = quat_from_slice(&q1[iq + 3..iq + 7]);
                let dp = Vec3::new(
                    q1[iq] - q0[iq],
                    q1[iq + 1] - q0[iq + 1],
                    q1[iq + 2] - q0[iq + 2],
                );
                let rel = SE3::from_quaternion(&(r0.inverse() * r1), r0.inverse() * dp);
                let mut xi = log6(&rel);
                // Use the quaternion log for the angular part (more accurate than from a matrix).
                let w = quat_log(&(r0.inverse() * r1));
                xi.fixed_rows_mut::<3>(3).copy_from(&w);
                out[iv..iv + 6].copy_from_slice(xi.as_slice());
            }
            JointType::Spherical => {
                let r0 = quat_from_slice(&q0[iq..iq + 4]);
                let r1 = quat_from_slice(&q1[iq..iq + 4]);
                out[iv..iv + 3].copy_from_slice(quat_log(&(r0.inverse() * r1)).as_slice());
            }
            JointType::Revolute(_) | JointType::Prismatic(_) => out[iv] = q1[iq] - q0[iq],
            JointType::Fixed => {}
        }
    }
}

/// `(body, index into q)` of each joint's unit quaternion (free and
/// spherical joints), in body order.
pub fn quaternion_offsets(model: &Model) -> impl Iterator<Item = (usize, usize)> + '_ {
    (1..model.nbodies).filter_map(|i| {
        model.joint_type[i]
            .quaternion_offset()
            .map(|o| (i, model.joint_idx_q[i] + o))
    })
}

/// Renormalizes the quaternions of `q` in place.
pub fn normalize_configuration(model: &Model, q: &mut [f64]) {
    for (_, off) in quaternion_offsets(model) {
        let n = (q[off] * q[off]
            + q[off + 1] * q[off + 1]
            + q[off + 2] * q[off + 2]
            + q[off + 3] * q[off + 3])
            .sqrt();
        if n > 0.0 {
            for x in &mut q[off..off + 4] {
                *x /= n;
            }
        }
    }
}

/// A random configuration: positions in [-1, 1]³, uniform rotations, angles in
/// [-π, π], prismatic displacements in [-1, 1]. `uniform()` returns samples in [0, 1).
pub fn random_configuration(
    model: &Model,
    mut uniform: impl FnMut() -> f64,
) -> nalgebra::DVector<f64> {
    let mut q = model.neutral_configuration();
    let rand_quat = |u: &mut dyn FnMut() -> f64| {
        // Shoemake's uniform quaternion.
        let (u1, u2, u3) = (u(), u(), u());
        let tau = std::f64::consts::TAU;
        let (a, b) = ((1.0 - u1).sqrt(), u1.sqrt());
        UnitQuaternion::new_unchecked(Quaternion::new(
            b * (tau * u3).cos(),
            a * (tau * u2).sin(),
            a * (tau * u2).cos(),
            b * (tau * u3).sin(),
        ))
    };
    for i in 1..model.nbodies {
        let iq = model.joint_idx_q[i];
        match model.joint_type[i] {
            JointType::Free => {
                for k in 0..3 {
                    q[iq + k] = 2.0 * uniform() - 1.0;
                }
                let r = rand_quat(&mut uniform);
                quat_to_slice(&r, &mut q.as_mut_slice()[iq + 3..iq + 7]);
            }
            JointType::Spherical => {
                let r = rand_quat(&mut uniform);
                quat_to_slice(&r, &mut q.as_mut_slice()[iq..iq + 4]);
            }
            JointType::Revolute(_) => q[iq] = std::f64::consts::PI * (2.0 * uniform() - 1.0),
            JointType::Prismatic(_) => q[iq] = 2.0 * uniform() - 1.0,
            JointType::Fixed => {}
        }
    }
    q
}
