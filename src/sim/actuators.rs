//! What drives a step: generalized forces, or the actuators' controls
//! turned into them.

use crate::dynamics::spatial_length;
use crate::dynamics::{Data, forward_kinematics};
use crate::model::{Actuator, Model};

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
/// `ctrl` (nu) and activations `act` (`Model::na`, or empty: all zero),
/// written into `tau`, as MuJoCo computes them for joint and tendon
/// transmissions (a tendon's length `L` in place of `q`, the force
/// reaching the dofs through the tendon's Jacobian `∂L/∂q`: a fixed
/// tendon's joints each get `coef·gear·force`): each control is clamped to its
/// `ctrl_range`; the actuator's input is that control, or its activation
/// when it has [`crate::model::ActuatorDynamics`] (the activation at the end of the step
/// of `dt` for an `act_early` one, see [`next_activations`]); the scalar
/// force `gain·input + bias₀ + bias₁·l + bias₂·l̇` (length `l = gear·q`,
/// velocity `l̇ = gear·q̇`) is clamped to its `force_range`, and the dof receives
/// `gear · force`. Then each dof's total is clamped to its effort limit
/// (`Model::dof_effort_limit`, URDF's `effort`). Actuators on spatial
/// tendons need the kinematics at `q`, computed here (the simulator's
/// step reuses its own).
pub fn actuator_forces(
    model: &Model,
    q: &[f64],
    v: &[f64],
    ctrl: &[f64],
    act: &[f64],
    dt: f64,
    tau: &mut [f64],
) {
    let data = pulls_spatial_tendons(model).then(|| {
        let mut data = Data::new(model);
        forward_kinematics(model, &mut data, q);
        data
    });
    let input = ActuatorInput::new(q, v, ctrl, act, dt);
    actuator_forces_with(model, data.as_ref(), &input, tau, &mut Vec::new());
}

/// Whether an actuator of `model` pulls on a spatial tendon.
pub(crate) fn pulls_spatial_tendons(model: &Model) -> bool {
    model
        .actuators
        .iter()
        .any(|a| a.tendon.is_some_and(|t| model.tendons[t].is_spatial()))
}

/// What [`actuator_forces`] reads.
pub(crate) struct ActuatorInput<'a> {
    q: &'a [f64],
    v: &'a [f64],
    ctrl: &'a [f64],
    act: &'a [f64],
    dt: f64,
}

impl<'a> ActuatorInput<'a> {
    pub(crate) fn new(
        q: &'a [f64],
        v: &'a [f64],
        ctrl: &'a [f64],
        act: &'a [f64],
        dt: f64,
    ) -> Self {
        ActuatorInput {
            q,
            v,
            ctrl,
            act,
            dt,
        }
    }
}

/// [`actuator_forces`] with the kinematics at `q` given (`data`; only
/// actuators on spatial tendons read it, and skip without it) and a
/// workspace for a tendon's Jacobian.
pub(crate) fn actuator_forces_with(
    model: &Model,
    data: Option<&Data>,
    input: &ActuatorInput<'_>,
    tau: &mut [f64],
    scratch: &mut Vec<(usize, f64)>,
) {
    let ActuatorInput {
        q,
        v,
        ctrl,
        act,
        dt,
    } = *input;
    tau.fill(0.0);
    for (u, a) in ctrl.iter().zip(&model.actuators) {
        let ctrl = clamped_control(a, *u);
        let input = match a.act {
            None => ctrl,
            Some(i) => {
                let now = act.get(i).copied().unwrap_or(0.0);
                if a.act_early {
                    next_activation(a, now, ctrl, dt)
                } else {
                    now
                }
            }
        };
        scratch.clear();
        let (length, velocity) = match a.tendon {
            None => (q[model.joint_idx_q[a.joint]], v[a.dof]),
            Some(t) if model.tendons[t].is_spatial() => {
                let Some(data) = data else { continue };
                let l = spatial_length(model, &model.tendons[t].path, data, 1.0, scratch);
                (l, scratch.iter().map(|&(k, c)| c * v[k]).sum())
            }
            Some(t) => {
                let t = &model.tendons[t];
                (
                    t.length(&model.joint_idx_q, q),
                    t.velocity(&model.joint_idx_v, v),
                )
            }
        };
        let (length, velocity) = (a.gear * length, a.gear * velocity);
        let mut force = a.gain * input + a.bias[0] + a.bias[1] * length + a.bias[2] * velocity;
        if let Some((lo, hi)) = a.force_range {
            force = force.clamp(lo, hi);
        }
        match a.tendon {
            None => tau[a.dof] += a.gear * force,
            Some(t) if model.tendons[t].is_spatial() => {
                for &(k, c) in scratch.iter() {
                    tau[k] += a.gear * c * force;
                }
            }
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

/// The activations at the end of a step of `dt` from `act` (`Model::na`,
/// or empty: all zero) under the controls `ctrl` (nu), written into `out`
/// (na), as MuJoCo's `mj_nextActivation`: each control clamped to its
/// `ctrl_range`, the activation integrated by its [`crate::model::ActuatorDynamics`],
/// then clamped to its `act_range`.
pub fn next_activations(model: &Model, ctrl: &[f64], act: &[f64], dt: f64, out: &mut [f64]) {
    for (u, a) in ctrl.iter().zip(&model.actuators) {
        if let Some(i) = a.act {
            let now = act.get(i).copied().unwrap_or(0.0);
            out[i] = next_activation(a, now, clamped_control(a, *u), dt);
        }
    }
}

fn clamped_control(a: &Actuator, u: f64) -> f64 {
    match a.ctrl_range {
        Some((lo, hi)) => u.clamp(lo, hi),
        None => u,
    }
}

/// One actuator's activation after a step, clamped to its range.
fn next_activation(a: &Actuator, act: f64, ctrl: f64, dt: f64) -> f64 {
    let next = a.dynamics.next(act, ctrl, dt);
    match a.act_range {
        Some((lo, hi)) => next.clamp(lo, hi),
        None => next,
    }
}
