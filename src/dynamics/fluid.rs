//! MuJoCo's inertia-box fluid model: each body moving in a medium of
//! density `ρ` and viscosity `η` (`Model::medium`) is replaced by the box
//! with its mass and principal moments of inertia, whose sides
//! `s_a = √(6 (I_b + I_c − I_a) / m)` set the drag. In the body's principal
//! axes, with `v` and `ω` its centre-of-mass velocity relative to the wind
//! and its angular velocity:
//!
//! - viscous (Stokes) drag on the sphere of diameter `d = (s₀ + s₁ + s₂)/3`:
//!   `f = −3π η d v`, `τ = −π η d³ ω`;
//! - quadratic drag of the box's faces: `f_a = −½ ρ s_b s_c |v_a| v_a` and
//!   `τ_a = −ρ s_a (s_b⁴ + s_c⁴) |ω_a| ω_a / 64`.
//!
//! The wrench acts at the centre of mass. This is the model MuJoCo applies
//! when no geom sets `fluidshape` (Gymnasium's swimmer swims in it).

use super::{Data, point_velocity_column};
use crate::math::{Mat3, Vec3};
use crate::model::{Model, NO_DOF};

/// Principal moments (ascending order irrelevant) and axes of a body's
/// rotational inertia about its centre of mass (body frame).
fn principal(rotational: &Mat3) -> (Vec3, Mat3) {
    let eig = rotational.symmetric_eigen();
    (eig.eigenvalues, eig.eigenvectors)
}

/// The sides `s_a = √(6 (I_b + I_c − I_a) / m)` of a body's inertia box
/// and the principal axes they lie along (columns, body frame). The body
/// must have a positive mass.
pub fn inertia_box(inertia: &crate::math::Inertia) -> ([f64; 3], Mat3) {
    let (moments, axes) = principal(&inertia.rotational);
    let side = |a: usize| {
        let (i, j) = ((a + 1) % 3, (a + 2) % 3);
        ((moments[i] + moments[j] - moments[a]).max(1e-15) / inertia.mass * 6.0).sqrt()
    };
    ([side(0), side(1), side(2)], axes)
}

/// Adds the fluid's generalized forces at the state of `data` (after
/// forward kinematics) with velocity `v` (nv) to `tau` (nv). Nothing
/// when the medium is vacuum.
pub fn fluid_forces(model: &Model, data: &Data, v: &[f64], tau: &mut [f64]) {
    let medium = model.medium;
    if !medium.is_active() {
        return;
    }
    for b in 1..model.nbodies {
        let inertia = &model.body_inertia[b];
        let mass = inertia.mass;
        if !(mass > 0.0) || model.body_last_dof[b] == NO_DOF {
            continue;
        }
        let (s, axes) = inertia_box(inertia);
        let pose = &data.world_from_body[b];
        let com = pose.rotation * inertia.com + pose.translation;
        // World rotation of the principal frame.
        let frame = pose.rotation * axes;
        // Centre-of-mass velocity and angular velocity, from the dofs' columns.
        let (mut lin, mut ang) = (Vec3::zeros(), Vec3::zeros());
        let mut k = model.body_last_dof[b];
        while k != NO_DOF {
            let col = &data.dof_jacobian[k];
            lin += point_velocity_column(col, &com) * v[k];
            ang += crate::math::ang(col) * v[k];
            k = model.dof_parent[k];
        }
        let lv = frame.transpose() * (lin - medium.wind);
        let la = frame.transpose() * ang;
        let (mut f, mut t) = (Vec3::zeros(), Vec3::zeros());
        if medium.viscosity > 0.0 {
            let d = (s[0] + s[1] + s[2]) / 3.0;
            let pi = std::f64::consts::PI;
            t -= la * (pi * d * d * d * medium.viscosity);
            f -= lv * (3.0 * pi * d * medium.viscosity);
        }
        if medium.density > 0.0 {
            let rho = medium.density;
            for a in 0..3 {
                let (i, j) = ((a + 1) % 3, (a + 2) % 3);
                f[a] -= 0.5 * rho * s[i] * s[j] * lv[a].abs() * lv[a];
                t[a] -= rho * s[a] * (s[i].powi(4) + s[j].powi(4)) * la[a].abs() * la[a] / 64.0;
            }
        }
        let (f, t) = (frame * f, frame * t);
        // Generalized force: τ_k = f · (velocity of the com per unit v_k) + t · ω_k.
        let mut k = model.body_last_dof[b];
        while k != NO_DOF {
            let col = &data.dof_jacobian[k];
            tau[k] += f.dot(&point_velocity_column(col, &com)) + t.dot(&crate::math::ang(col));
            k = model.dof_parent[k];
        }
    }
}
