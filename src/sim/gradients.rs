//! Derivatives of one step with respect to the velocity, the torques and
//! the friction coefficients: `∂v⁺/∂v`, `∂v⁺/∂τ`, `∂v⁺/∂μ` and those of
//! `q⁺` (the seed paper "Highly-Efficient
//! Differentiable Simulation for Robotics", with the contact problem
//! differentiated implicitly, see [`crate::contact::sensitivity`]).
//!
//! The step is `v_f = v + dt·M̃⁻¹(τ − D v − b(q, v))` (`M̃ = M + dt·D`, the
//! springs explicit), `g = J v_f + e J_N v` (restitution on impacting
//! contacts) plus terms of `q` alone, `λ = λ*(g)`, `v⁺ = v_f + M̃⁻¹ Jᵀ λ`,
//! `q⁺ = q ⊕ v⁺ dt`. So, with `Λ = ∂λ*/∂g`:
//!
//! ```text
//! ∂v_f/∂τ = dt M̃⁻¹                 ∂v_f/∂v = I + dt (∂q̈/∂v − M̃⁻¹ D)
//! ∂v⁺/∂x  = ∂v_f/∂x + M̃⁻¹ Jᵀ Λ (J ∂v_f/∂x + [x = v] E)
//! ∂q⁺/∂x  = J_⊕(v⁺ dt) dt ∂v⁺/∂x    (the right Jacobian of ⊕, tangent)
//! ```
//!
//! with `∂q̈/∂v` from [`crate::dynamics::aba_derivatives`] on `M̃` and `E`
//! the restitution rows. With respect to `q`, only steps without contacts
//! and limit rows are differentiated (`∂v⁺/∂q = dt (∂q̈/∂q − M̃⁻¹ K)`,
//! `∂q⁺/∂q = Ad(exp(v⁺dt))⁻¹ + J_⊕ dt ∂v⁺/∂q`): with constraints they need
//! the derivatives of the contact points, normals and Jacobians (the
//! collision term), not written yet. Nor are those of the fluid forces: a
//! model with an active medium is refused.

use super::{SimError, Simulator, State, StepReport};
use crate::contact::{ContactSensitivity, TreeDelassus};
use crate::dynamics::{Derivatives, aba_derivatives, integrate_jacobians};
use nalgebra::{DMatrix, DVector};

/// The Jacobians of one step, all `nv × nv` (`q⁺` and `q` in the tangent
/// space).
#[derive(Clone, Debug, Default)]
pub struct StepJacobians {
    pub dv_dv: DMatrix<f64>,
    pub dv_dtau: DMatrix<f64>,
    pub dq_dv: DMatrix<f64>,
    pub dq_dtau: DMatrix<f64>,
    /// `∂v⁺/∂q` and `∂q⁺/∂q`, for a step without contacts and joint-limit
    /// rows (`wrt_q` true); with constraints they need the collision term,
    /// not written yet (`wrt_q` false, the matrices unspecified).
    pub dv_dq: DMatrix<f64>,
    pub dq_dq: DMatrix<f64>,
    pub wrt_q: bool,
    /// `∂v⁺/∂μ` and `∂q⁺/∂μ` (nv × nc): column `i` for the friction
    /// coefficient of the step's contact `i` (`Simulator::contacts`); only
    /// sliding contacts' coefficients matter to first order.
    pub dv_dmu: DMatrix<f64>,
    pub dq_dmu: DMatrix<f64>,
    dl_dmu: DMatrix<f64>,
    /// The state the step started from.
    q0: DVector<f64>,
    v0: DVector<f64>,
    derivatives: Option<Derivatives>,
    sensitivity: ContactSensitivity,
    /// `J ∂v_f/∂x` then `∂λ/∂x` (m × nv).
    rows: DMatrix<f64>,
    jq: DMatrix<f64>,
    jv: DMatrix<f64>,
    column: Vec<f64>,
    c: Vec<f64>,
    /// The restitution rows of the step: (row, coefficient).
    impacts: Vec<(usize, f64)>,
}

impl Simulator {
    /// [`Self::step`] from `state` with torques `tau`, and the Jacobians of
    /// the step with respect to `state.v` and `tau` into `out` (see the
    /// module doc). The contact problem is differentiated at the solver's
    /// answer, so ask for a tight tolerance (1e-10 or less) where the
    /// derivatives matter.
    pub fn step_with_jacobians(
        &mut self,
        state: &mut State,
        tau: &[f64],
        out: &mut StepJacobians,
    ) -> Result<StepReport, SimError> {
        if self.model.medium.is_active() {
            return Err(SimError::InvalidParameter {
                name: "medium",
                reason: "the derivatives of the fluid forces are not written: \
                         step Jacobians need a model without an active medium"
                    .into(),
            });
        }
        // (Kept in `out`'s buffers: no allocation once they have grown.)
        let (mut q0, mut v0) = (std::mem::take(&mut out.q0), std::mem::take(&mut out.v0));
        for (dst, src) in [(&mut q0, &state.q), (&mut v0, &state.v)] {
            if dst.len() != src.len() {
                *dst = DVector::zeros(src.len());
            }
            dst.copy_from(src);
        }
        let result = self
            .step(state, tau)
            .and_then(|report| self.step_jacobians(&q0, &v0, out).map(|()| report));
        (out.q0, out.v0) = (q0, v0);
        result
    }

    /// The Jacobians of the step just taken from `(q0, v0)`.
    fn step_jacobians(
        &mut self,
        q0: &DVector<f64>,
        v0: &DVector<f64>,
        out: &mut StepJacobians,
    ) -> Result<(), SimError> {
        let model = self.model.clone();
        let (nv, dt) = (model.nv, self.params.dt);
        for mat in [
            &mut out.dv_dv,
            &mut out.dv_dtau,
            &mut out.dq_dv,
            &mut out.dq_dtau,
            &mut out.dv_dq,
            &mut out.dq_dq,
            &mut out.jq,
            &mut out.jv,
        ] {
            if mat.shape() != (nv, nv) {
                *mat = DMatrix::zeros(nv, nv);
            }
        }
        if out
            .derivatives
            .as_ref()
            .is_none_or(|d| d.dtau_dq.nrows() != nv)
        {
            out.derivatives = Some(Derivatives::new(&model));
        }
        let der = out.derivatives.as_mut().expect("just built");
        // The free dynamics on M̃ (data.dof_armature holds armature + dt·D
        // since the step's stage 1), at the step's generalized forces.
        aba_derivatives(
            &model,
            &mut self.data,
            der,
            q0.as_slice(),
            v0.as_slice(),
            self.tau.as_slice(),
        );
        out.dv_dtau.copy_from(&der.ddq_dtau);
        out.dv_dtau *= dt;
        out.dv_dv.copy_from(&der.ddq_dv);
        subtract_diagonal_response(&mut out.dv_dv, &der.ddq_dtau, &model.dof_damping);
        out.dv_dv *= dt;
        for k in 0..nv {
            out.dv_dv[(k, k)] += 1.0;
        }
        let m = self.problem.m();
        if m == 0 {
            out.dv_dmu = DMatrix::zeros(nv, 0);
        }
        // Without constraints, v⁺ = v_f: ∂v⁺/∂q = dt (∂q̈/∂q − M̃⁻¹ K) (the
        // springs' stiffness K, explicit).
        out.wrt_q = m == 0;
        if out.wrt_q {
            out.dv_dq.copy_from(&der.ddq_dq);
            subtract_diagonal_response(&mut out.dv_dq, &der.ddq_dtau, &model.dof_stiffness);
            out.dv_dq *= dt;
        }
        if m > 0 {
            self.impacts(v0, &mut out.impacts);
            self.problem_with_delassus();
            let problem = &self.problem;
            out.c.resize(m, 0.0);
            problem.contact_velocity(self.solution.lambda.as_slice(), &mut out.c);
            out.sensitivity
                .factorize(problem, self.solution.lambda.as_slice(), &out.c)
                .map_err(SimError::Problem)?;
            // ∂λ/∂μ, then ∂v⁺/∂μ = M̃⁻¹ Jᵀ ∂λ/∂μ (v_f does not depend on μ).
            let nc = problem.nc();
            out.sensitivity
                .apply_mu(self.solution.lambda.as_slice(), &out.c, &mut out.dl_dmu);
            if out.dv_dmu.shape() != (nv, nc) {
                out.dv_dmu = DMatrix::zeros(nv, nc);
            }
            out.dv_dmu.fill(0.0);
            // G's factors as the tree path sees them: Jᵀ over the blocks'
            // supports, M̃⁻¹ by the tree LᵀDL.
            let t = TreeDelassus::new(&model, &self.data, &self.jacobian, &self.tree_work);
            out.column.resize(nv, 0.0);
            add_minv_jt(&t, &out.dl_dmu, &mut out.dv_dmu, &mut out.column);
            let j = &self.jacobian.jacobian;
            if out.rows.shape() != (m, nv) {
                out.rows = DMatrix::zeros(m, nv);
            }
            for (target, restitution) in [(0usize, true), (1, false)] {
                let src = if target == 0 {
                    &out.dv_dv
                } else {
                    &out.dv_dtau
                };
                j.mul_to(src, &mut out.rows);
                if restitution {
                    for &(row, e) in &out.impacts {
                        for k in 0..nv {
                            out.rows[(row, k)] += e * j[(row, k)];
                        }
                    }
                }
                out.sensitivity.apply(&mut out.rows);
                let dst = if target == 0 {
                    &mut out.dv_dv
                } else {
                    &mut out.dv_dtau
                };
                add_minv_jt(&t, &out.rows, dst, &mut out.column);
            }
        }
        integrate_jacobians(&model, self.v_next.as_slice(), dt, &mut out.jq, &mut out.jv);
        // jv is ∂(q ⊕ v dt)/∂v, dt included.
        out.jv.mul_to(&out.dv_dv, &mut out.dq_dv);
        out.jv.mul_to(&out.dv_dtau, &mut out.dq_dtau);
        if out.wrt_q {
            out.jv.mul_to(&out.dv_dq, &mut out.dq_dq);
            out.dq_dq += &out.jq;
        }
        if out.dq_dmu.shape() != out.dv_dmu.shape() {
            out.dq_dmu = DMatrix::zeros(nv, out.dv_dmu.ncols());
        }
        out.jv.mul_to(&out.dv_dmu, &mut out.dq_dmu);
        Ok(())
    }
}

/// `dst -= M̃⁻¹ diag(coefficients)`, given `M̃⁻¹` (a force proportional to
/// each dof's own coordinate or velocity, as damping or a spring).
fn subtract_diagonal_response(dst: &mut DMatrix<f64>, minv: &DMatrix<f64>, coefficients: &[f64]) {
    for (k, &a) in coefficients.iter().enumerate() {
        if a != 0.0 {
            dst.column_mut(k).axpy(-a, &minv.column(k), 1.0);
        }
    }
}

/// `dst += M̃⁻¹ Jᵀ x`, column by column (`x`: m × k, `dst`: nv × k).
fn add_minv_jt(t: &TreeDelassus, x: &DMatrix<f64>, dst: &mut DMatrix<f64>, column: &mut [f64]) {
    let m = x.nrows();
    for col in 0..x.ncols() {
        t.jt_mul(&x.as_slice()[col * m..(col + 1) * m], column);
        t.mass_solve(column);
        for (d, c) in dst.column_mut(col).iter_mut().zip(column.iter()) {
            *d += c;
        }
    }
}

impl Simulator {
    /// The normal rows of the contacts whose `g` carried restitution at
    /// the step from `v0` (as stage 3 decided), with their coefficient.
    fn impacts(&self, v0: &DVector<f64>, out: &mut Vec<(usize, f64)>) {
        let j = &self.jacobian.jacobian;
        let dt = self.params.dt;
        out.clear();
        for (i, c) in self.contacts.iter().enumerate() {
            let row = 3 * i + 2;
            let vn: f64 = (0..self.model.nv).map(|k| j[(row, k)] * v0[k]).sum();
            if c.restitution > 0.0
                && vn < -self.params.bounce_velocity
                && c.distance + vn * dt <= 0.0
            {
                out.push((row, c.restitution));
            }
        }
    }
}

/// The same Jacobians by central differences of whole steps, each from a
/// fresh simulator with `params` (no warm start): `6·nv` steps (`v`, `τ`
/// and `q`, the last through `⊕`, `wrt_q` true), velocity and
/// configuration perturbations `eps`, torque perturbations `eps/dt` (a
/// velocity change of order `eps`). For cross-checks and
/// timing (`moreau grad --fd`); where contacts slide, `eps` ≥ 1e-4 (the
/// NCP residual sees a sliding contact's friction direction only at second
/// order, so solves to 1e-12 leave ~1e-10 of noise in the velocities).
pub fn step_jacobians_by_differences(
    model: &std::sync::Arc<crate::Model>,
    params: super::SimParams,
    state: &State,
    tau: &[f64],
    eps: f64,
) -> Result<StepJacobians, SimError> {
    let nv = model.nv;
    let dt = params.dt;
    let step = |s: &State, t: &[f64]| -> Result<State, SimError> {
        let mut sim = Simulator::new(model.clone(), params)?;
        let mut s = s.clone();
        sim.step(&mut s, t)?;
        Ok(s)
    };
    let base = step(state, tau)?;
    let mut out = StepJacobians {
        dv_dv: DMatrix::zeros(nv, nv),
        dv_dtau: DMatrix::zeros(nv, nv),
        dq_dv: DMatrix::zeros(nv, nv),
        dq_dtau: DMatrix::zeros(nv, nv),
        dv_dq: DMatrix::zeros(nv, nv),
        dq_dq: DMatrix::zeros(nv, nv),
        wrt_q: true,
        ..Default::default()
    };
    let mut dp = DVector::zeros(nv);
    let mut dm = DVector::zeros(nv);
    let tau = DVector::from_column_slice(tau);
    let mut unit = DVector::zeros(nv);
    for k in 0..nv {
        // 0: v, 1: τ, 2: q (through ⊕).
        for wrt in 0..3 {
            let h = if wrt == 1 { eps / dt } else { eps };
            let (mut sp, mut sm) = (state.clone(), state.clone());
            let (mut tp, mut tm) = (tau.clone(), tau.clone());
            match wrt {
                0 => {
                    sp.v[k] += h;
                    sm.v[k] -= h;
                }
                1 => {
                    tp[k] += h;
                    tm[k] -= h;
                }
                _ => {
                    unit.fill(0.0);
                    unit[k] = 1.0;
                    let q = state.q.as_slice();
                    crate::dynamics::integrate(model, q, unit.as_slice(), h, sp.q.as_mut_slice());
                    crate::dynamics::integrate(model, q, unit.as_slice(), -h, sm.q.as_mut_slice());
                }
            }
            let (p, m) = (step(&sp, tp.as_slice())?, step(&sm, tm.as_slice())?);
            crate::dynamics::difference(
                model,
                base.q.as_slice(),
                p.q.as_slice(),
                dp.as_mut_slice(),
            );
            crate::dynamics::difference(
                model,
                base.q.as_slice(),
                m.q.as_slice(),
                dm.as_mut_slice(),
            );
            let (dv, dq) = match wrt {
                0 => (&mut out.dv_dv, &mut out.dq_dv),
                1 => (&mut out.dv_dtau, &mut out.dq_dtau),
                _ => (&mut out.dv_dq, &mut out.dq_dq),
            };
            dv.set_column(k, &((&p.v - &m.v) / (2.0 * h)));
            dq.set_column(k, &((&dp - &dm) / (2.0 * h)));
        }
    }
    Ok(out)
}
