//! Inverse problems solved with the step Jacobians (the seed paper "Highly-
//! Efficient Differentiable Simulation for Robotics", its Fig. 3 and 4):
//!
//! - [`standing_torques`]: the joint torques that hold a robot standing on
//!   the ground, i.e. that give zero velocity after one step, by
//!   Gauss–Newton on `½‖v⁺(τ)‖²` with `∂v⁺/∂τ` from
//!   [`Simulator::step_with_jacobians`], restricted to the actuated dofs (a
//!   floating base has no motor);
//! - [`initial_velocity`]: the velocity an object was thrown with, from
//!   where it lies after `T` steps (landing, sliding), by Gauss–Newton on
//!   `½‖q_T(v₀) ⊖ q*‖²` with `∂q_T/∂v₀` chained through the steps'
//!   Jacobians (with respect to `q` and `v`), or, to compare, from central
//!   differences of whole rollouts.

use moreau::State;
use moreau::error::SimError;
use moreau::model::JointType;
use moreau::sim::{Simulator, StepJacobians};
use nalgebra::{DMatrix, DVector};

/// One Gauss–Newton iteration's figures.
#[derive(Clone, Copy, Debug)]
pub struct GaussNewtonIterate {
    /// `‖v⁺(τ)‖∞` at the iterate (m/s or rad/s).
    pub velocity: f64,
    /// Contacts and active limits of the step.
    pub nc: usize,
    /// Steps taken so far (a Jacobian by differences costs 2 per actuated
    /// dof, the analytical one none beyond its step, each backtracking
    /// trial 1), and wall-clock seconds since the start.
    pub steps: usize,
    pub seconds: f64,
}

/// Gauss–Newton from `tau` (nv; the unactuated dofs stay as given) on
/// `½‖v⁺(τ)‖²` for one step of `sim` from `state` (not advanced), at most
/// `iterations`, stopping when `‖v⁺‖∞ ≤ tolerance`. The step is
/// `δ = −(AᵀA + εI)⁻¹ Aᵀ v⁺` with `A = ∂v⁺/∂τ` on the actuated columns and
/// `ε = 1e-12 · tr(AᵀA)` (a few contacts sticking leave `A` rank deficient),
/// halved until `‖v⁺‖` decreases (the contact modes may change along it).
/// Returns the iterates (the last is where it stopped); `tau` holds the
/// answer. With [`Gradients::FiniteDifferences`], `A` is by central
/// differences of the step, `eps/dt` in each torque (a velocity change of
/// order `eps`).
pub fn standing_torques(
    sim: &mut Simulator,
    state: &State,
    tau: &mut DVector<f64>,
    iterations: usize,
    tolerance: f64,
    gradients: Gradients,
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
    let start = std::time::Instant::now();
    let mut steps = 1;
    // The step, with its Jacobians where they are used.
    let step = |sim: &mut Simulator, st: &mut State, t: &DVector<f64>, jac: &mut StepJacobians| {
        if gradients == Gradients::Analytic {
            sim.step_with_jacobians(st, t.as_slice(), jac)
        } else {
            sim.step(st, t.as_slice())
        }
    };
    let mut s = state.clone();
    let report = step(sim, &mut s, tau, &mut jac)?;
    let mut velocity = s.v.amax();
    out.push(GaussNewtonIterate {
        velocity,
        nc: report.nc + report.nl,
        steps,
        seconds: start.elapsed().as_secs_f64(),
    });
    let mut trial = tau.clone();
    for _ in 0..iterations {
        if velocity <= tolerance {
            break;
        }
        let a = match gradients {
            Gradients::Analytic => {
                DMatrix::from_fn(model.nv, n, |r, c| jac.dv_dtau[(r, actuated[c])])
            }
            Gradients::FiniteDifferences { eps } => {
                let h = eps / sim.params.dt;
                let mut a = DMatrix::zeros(model.nv, n);
                for (c, &k) in actuated.iter().enumerate() {
                    let mut v = [DVector::zeros(0), DVector::zeros(0)];
                    for (side, sign) in [(0, 1.0), (1, -1.0)] {
                        let (mut st, mut t) = (state.clone(), tau.clone());
                        t[k] += sign * h;
                        sim.step(&mut st, t.as_slice())?;
                        v[side] = st.v;
                    }
                    a.set_column(c, &((&v[0] - &v[1]) / (2.0 * h)));
                }
                steps += 2 * n;
                a
            }
        };
        let Some(direction) = gauss_newton_direction(&a, &s.v) else {
            break;
        };
        // Backtracking: the contacts' modes may change along the step, and
        // with them the Jacobian; halve it until ‖v⁺‖ decreases.
        let mut t = 1.0;
        let accepted = loop {
            trial.copy_from(tau);
            for (c, &k) in actuated.iter().enumerate() {
                trial[k] += t * direction[c];
            }
            let mut st = state.clone();
            let report = step(sim, &mut st, &trial, &mut jac)?;
            steps += 1;
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
            steps,
            seconds: start.elapsed().as_secs_f64(),
        });
    }
    Ok(out)
}

/// The Gauss–Newton direction `−(AᵀA + εI)⁻¹ Aᵀ r` for the residual `r`
/// with Jacobian `A`, `ε = 1e-12 · tr(AᵀA)` (rank-deficient `A`: sticking
/// contacts); `None` where the normal matrix is not positive definite.
fn gauss_newton_direction(a: &DMatrix<f64>, r: &DVector<f64>) -> Option<DVector<f64>> {
    let mut normal = a.transpose() * a;
    let eps = 1e-12 * normal.trace().max(f64::MIN_POSITIVE);
    for k in 0..normal.nrows() {
        normal[(k, k)] += eps;
    }
    let rhs = -(a.transpose() * r);
    normal.cholesky().map(|ch| ch.solve(&rhs))
}

/// How [`initial_velocity`] gets its Jacobian.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Gradients {
    /// The step Jacobians chained along the rollout.
    Analytic,
    /// Central differences of whole rollouts, `eps` in each velocity.
    FiniteDifferences { eps: f64 },
}

/// One Gauss–Newton iteration of [`initial_velocity`].
#[derive(Clone, Copy, Debug)]
pub struct RolloutIterate {
    /// `‖q_T(v₀) ⊖ q*‖₂` at the iterate.
    pub error: f64,
    /// Rollouts of `T` steps spent so far (a Jacobian by differences costs
    /// 2 per unknown, the analytical one 1, each backtracking trial 1).
    pub rollouts: usize,
    /// Wall-clock seconds since the start.
    pub seconds: f64,
}

/// `T = steps` steps of `sim` (warm start cleared, zero torques) from
/// `state`; returns the final state, and with `jacobian` `∂q_T/∂v₀` (nv × nv,
/// tangent spaces) chained through the steps' Jacobians:
/// `S_q ← ∂q⁺/∂q S_q + ∂q⁺/∂v S_v`, `S_v ← ∂v⁺/∂q S_q + ∂v⁺/∂v S_v` from
/// `S_q = 0`, `S_v = I` (where a step is not differentiable in `q`, with
/// its least-squares derivative, see [`StepJacobians::q_residual`]).
/// Refused where a contact's derivatives are not written
/// ([`StepJacobians::wrt_q`]).
pub fn rollout(
    sim: &mut Simulator,
    state: &State,
    steps: usize,
    jacobian: Option<&mut DMatrix<f64>>,
) -> Result<State, SimError> {
    let nv = sim.model().nv;
    let tau = DVector::zeros(nv);
    let mut s = state.clone();
    sim.clear_warm_start();
    let Some(out) = jacobian else {
        for _ in 0..steps {
            sim.step(&mut s, tau.as_slice())?;
        }
        return Ok(s);
    };
    let mut jac = StepJacobians::default();
    let (mut s_q, mut s_v) = (DMatrix::zeros(nv, nv), DMatrix::identity(nv, nv));
    for k in 0..steps {
        sim.step_with_jacobians(&mut s, tau.as_slice(), &mut jac)?;
        if !jac.wrt_q {
            return Err(SimError::InvalidParameter {
                name: "state",
                reason: format!(
                    "step {k} of the rollout has a contact whose features' derivatives \
                     are not written (see collision::ContactGeometry)"
                ),
            });
        }
        let q_next = &jac.dq_dq * &s_q + &jac.dq_dv * &s_v;
        s_v = &jac.dv_dq * &s_q + &jac.dv_dv * &s_v;
        s_q = q_next;
    }
    *out = s_q;
    Ok(s)
}

/// Gauss–Newton on `½‖q_T(v₀) ⊖ q*‖²` over the components `unknowns` of
/// the initial velocity `state.v` (updated with the answer; the others
/// stay as given), `q_T` after `steps` steps of `sim` from `state` (see
/// [`rollout`]); the residual's Jacobian is
/// `∂(q_T ⊖ q*)/∂q_T · ∂q_T/∂v₀` ([`moreau::dynamics::difference_jacobian`])
/// on those columns, the direction that of [`standing_torques`], halved
/// until the error decreases. At most `iterations`, stopping when the
/// error is below `tolerance`. Returns the iterates.
#[allow(clippy::too_many_arguments)]
pub fn initial_velocity(
    sim: &mut Simulator,
    state: &mut State,
    unknowns: &[usize],
    target: &DVector<f64>,
    steps: usize,
    iterations: usize,
    tolerance: f64,
    gradients: Gradients,
) -> Result<Vec<RolloutIterate>, SimError> {
    let start = std::time::Instant::now();
    let model = sim.model().clone();
    let nv = model.nv;
    let mut residual = DVector::zeros(nv);
    let mut error_at = |sim: &mut Simulator, s: &State, jac: Option<&mut DMatrix<f64>>| {
        let end = rollout(sim, s, steps, jac)?;
        moreau::dynamics::difference(
            &model,
            target.as_slice(),
            end.q.as_slice(),
            residual.as_mut_slice(),
        );
        Ok::<_, SimError>((end, residual.clone()))
    };
    let mut dq = DMatrix::zeros(nv, nv);
    let (mut end, mut r) = error_at(sim, state, None)?;
    let mut rollouts = 1;
    let mut out = vec![RolloutIterate {
        error: r.norm(),
        rollouts,
        seconds: start.elapsed().as_secs_f64(),
    }];
    let mut d = DMatrix::zeros(nv, nv);
    for _ in 0..iterations {
        if r.norm() <= tolerance {
            break;
        }
        match gradients {
            Gradients::Analytic => {
                (end, r) = error_at(sim, state, Some(&mut dq))?;
                rollouts += 1;
            }
            Gradients::FiniteDifferences { eps } => {
                for &k in unknowns {
                    let (mut plus, mut minus) = (state.clone(), state.clone());
                    plus.v[k] += eps;
                    minus.v[k] -= eps;
                    let (p, m) = (
                        rollout(sim, &plus, steps, None)?,
                        rollout(sim, &minus, steps, None)?,
                    );
                    let mut dp = DVector::zeros(nv);
                    let mut dm = DVector::zeros(nv);
                    moreau::dynamics::difference(
                        &model,
                        end.q.as_slice(),
                        p.q.as_slice(),
                        dp.as_mut_slice(),
                    );
                    moreau::dynamics::difference(
                        &model,
                        end.q.as_slice(),
                        m.q.as_slice(),
                        dm.as_mut_slice(),
                    );
                    dq.set_column(k, &((dp - dm) / (2.0 * eps)));
                }
                rollouts += 2 * unknowns.len();
            }
        }
        moreau::dynamics::difference_jacobian(&model, target.as_slice(), end.q.as_slice(), &mut d);
        let a = &d * dq.select_columns(unknowns);
        let Some(step) = gauss_newton_direction(&a, &r) else {
            break;
        };
        let mut t = 1.0;
        let accepted = loop {
            let mut trial = state.clone();
            for (c, &k) in unknowns.iter().enumerate() {
                trial.v[k] += t * step[c];
            }
            let (e, rt) = error_at(sim, &trial, None)?;
            rollouts += 1;
            if rt.norm() < r.norm() {
                break Some((trial, e, rt));
            }
            t *= 0.5;
            if t < 1e-3 {
                break None;
            }
        };
        let Some((trial, e, rt)) = accepted else {
            break;
        };
        state.v.copy_from(&trial.v);
        (end, r) = (e, rt);
        out.push(RolloutIterate {
            error: r.norm(),
            rollouts,
            seconds: start.elapsed().as_secs_f64(),
        });
    }
    Ok(out)
}

/// The thrown cube of [`initial_velocity`]'s example and test: the
/// `cube-sliding` scene's 0.2 m cube (μ = 0.3) on the floor, 0.1 mm into
/// it, with velocity `v` (its body twist: linear then angular, m/s and
/// rad/s).
pub fn thrown_cube(v: [f64; 6]) -> Result<(moreau::scenes::Scene, State), moreau::ModelError> {
    let scene = moreau::scenes::scene("cube-sliding")?;
    let mut state = scene.state.clone();
    state.q[2] -= 1e-4;
    state.v = DVector::from_row_slice(&v);
    Ok((scene, state))
}

/// The thrown cube's unknowns: `v_x`, `v_y` and the spin `ω_z`.
pub const THROWN_CUBE_UNKNOWNS: [usize; 3] = [0, 1, 5];
