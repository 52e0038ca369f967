//! Inverse problems solved with the step Jacobians (the seed paper "Highly-
//! Efficient Differentiable Simulation for Robotics", its Fig. 4): the
//! joint torques that hold a robot standing on the ground, i.e. that give
//! zero velocity after one step, by Gauss–Newton on `½‖v⁺(τ)‖²` with
//! `∂v⁺/∂τ` from [`Simulator::step_with_jacobians`], restricted to the
//! actuated dofs (a floating base has no motor).

use crate::State;
use crate::error::SimError;
use crate::model::JointType;
use crate::sim::{Simulator, StepJacobians};
use nalgebra::{DMatrix, DVector};

/// One Gauss–Newton iteration's figures.
#[derive(Clone, Copy, Debug)]
pub struct GaussNewtonIterate {
    /// `‖v⁺(τ)‖∞` at the iterate (m/s or rad/s).
    pub velocity: f64,
    /// Contacts and active limits of the step.
    pub nc: usize,
}

/// Gauss–Newton from `tau` (nv; the unactuated dofs stay as given) on
/// `½‖v⁺(τ)‖²` for one step of `sim` from `state` (not advanced), at most
/// `iterations`, stopping when `‖v⁺‖∞ ≤ tolerance`. The step is
/// `δ = −(AᵀA + εI)⁻¹ Aᵀ v⁺` with `A = ∂v⁺/∂τ` on the actuated columns and
/// `ε = 1e-12 · tr(AᵀA)` (a few contacts sticking leave `A` rank deficient),
/// halved until `‖v⁺‖` decreases (the contact modes may change along it).
/// Returns the iterates (the last is where it stopped); `tau` holds the
/// answer.
pub fn standing_torques(
    sim: &mut Simulator,
    state: &State,
    tau: &mut DVector<f64>,
    iterations: usize,
    tolerance: f64,
) -> Result<Vec<GaussNewtonIterate>, SimError> {
    let model = sim.model().clone();
    // The actuated dofs: every dof but those of free joints.
    let actuated: Vec<usize> = (1..model.nbodies)
        .filter(|&i| !matches!(model.joint_type[i], JointType::Free))
        .flat_map(|i| {
            let iv = model.joint_idx_v[i];
            iv..iv + model.joint_type[i].nv()
        })
        .collect();
    let n = actuated.len();
    let mut jac = StepJacobians::default();
    let mut out = Vec::new();
    let mut s = state.clone();
    let report = sim.step_with_jacobians(&mut s, tau.as_slice(), &mut jac)?;
    let mut velocity = s.v.amax();
    out.push(GaussNewtonIterate {
        velocity,
        nc: report.nc + report.nl,
    });
    let mut trial = tau.clone();
    for _ in 0..iterations {
        if velocity <= tolerance {
            break;
        }
        let a = DMatrix::from_fn(model.nv, n, |r, c| jac.dv_dtau[(r, actuated[c])]);
        let mut normal = a.transpose() * &a;
        let eps = 1e-12 * normal.trace().max(f64::MIN_POSITIVE);
        for k in 0..n {
            normal[(k, k)] += eps;
        }
        let rhs = -(a.transpose() * &s.v);
        let Some(step) = normal.cholesky().map(|ch| ch.solve(&rhs)) else {
            break;
        };
        // Backtracking: the contacts' modes may change along the step, and
        // with them the Jacobian; halve it until ‖v⁺‖ decreases.
        let mut t = 1.0;
        let accepted = loop {
            trial.copy_from(tau);
            for (c, &k) in actuated.iter().enumerate() {
                trial[k] += t * step[c];
            }
            let mut st = state.clone();
            let report = sim.step_with_jacobians(&mut st, trial.as_slice(), &mut jac)?;
            if st.v.norm() < s.v.norm() {
                s = st;
                break Some(report);
            }
            t *= 0.5;
            if t < 1e-3 {
                break None;
            }
        };
        let Some(report) = accepted else {
            break;
        };
        tau.copy_from(&trial);
        velocity = s.v.amax();
        out.push(GaussNewtonIterate {
            velocity,
            nc: report.nc + report.nl,
        });
    }
    Ok(out)
}
