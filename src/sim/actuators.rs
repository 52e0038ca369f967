//! What drives a step: generalized forces, or the actuators' controls
//! turned into them.

use crate::model::Model;

/// What drives a step: raw generalized forces on the dofs, or the
/// actuators' controls.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Actuation<'a> {
    /// (nv) generalized forces `τ` applied on the dofs as they are.
    Torques(&'a [f64]),
    /// (nu) the controls of `Model::actuators` (see [`actuator_forces`]).
    Controls(&'a [f64]),
}

/// The actuators' generalized forces (nv) at `(q, v)` under the controls
/// `ctrl` (nu), written into `tau`, as MuJoCo computes them for joint and
/// fixed-tendon transmissions (a tendon's length `L` in place of `q`, its
/// joints each getting `coef·gear·force`): each control is clamped to its `ctrl_range`, the scalar
/// force `gain·ctrl + bias₀ + bias₁·l + bias₂·l̇` (length `l = gear·q`,
/// velocity `l̇ = gear·q̇`) to its `force_range`, and the dof receives
/// `gear · force`. Then each dof's total is clamped to its effort limit
/// (`Model::dof_effort_limit`, URDF's `effort`).
pub fn actuator_forces(model: &Model, q: &[f64], v: &[f64], ctrl: &[f64], tau: &mut [f64]) {
    tau.fill(0.0);
    for (u, a) in ctrl.iter().zip(&model.actuators) {
        let ctrl = match a.ctrl_range {
            Some((lo, hi)) => u.clamp(lo, hi),
            None => *u,
        };
        let (length, velocity) = match a.tendon {
            None => (q[model.joint_idx_q[a.joint]], v[a.dof]),
            Some(t) => {
                let t = &model.tendons[t];
                (
                    t.length(&model.joint_idx_q, q),
                    t.velocity(&model.joint_idx_v, v),
                )
            }
        };
        let (length, velocity) = (a.gear * length, a.gear * velocity);
        let mut force = a.gain * ctrl + a.bias[0] + a.bias[1] * length + a.bias[2] * velocity;
        if let Some((lo, hi)) = a.force_range {
            force = force.clamp(lo, hi);
        }
        match a.tendon {
            None => tau[a.dof] += a.gear * force,
            Some(t) => {
                for &(j, c) in &model.tendons[t].joints {
                    tau[model.joint_idx_v[j]] += a.gear * c * force;
                }
            }
        }
    }
    for (t, &e) in tau.iter_mut().zip(&model.dof_effort_limit) {
        *t = t.clamp(-e, e);
    }
}
