//! Derivatives of one step with respect to the configuration, the
//! velocity, the torques and the friction coefficients: `∂v⁺/∂(q, v, τ, μ)`
//! and those of `q⁺`, forward ([`Simulator::step_with_jacobians`]) or as a
//! vector–Jacobian product ([`Simulator::step_with_vjp`]) (the seed paper
//! "Highly-Efficient Differentiable Simulation for Robotics", with the
//! contact problem differentiated implicitly, see
//! [`crate::contact::sensitivity`]).
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
//! the restitution rows.
//!
//! With respect to `q` (through `⊕`), the impulse is a force `Jᵀλ/dt` of
//! the step, so that `v⁺ = v + dt·M̃⁻¹(τ − b + Jᵀλ/dt)`, and the constraint
//! velocity is `c = J v⁺ + s(φ) + e J_N v` (`s`: the stabilization of
//! [`super`]). At fixed `λ` (the collision term: how the contacts' points,
//! frames and distances move with the bodies, [`crate::collision::Contact::variation`]):
//!
//! ```text
//! X = ∂v⁺/∂q|λ = dt (∂q̈/∂q − M̃⁻¹ K) + M̃⁻¹ ∂(Jᵀλ)/∂q     (q̈ at τ + Jᵀλ/dt)
//! C = ∂c/∂q|λ  = ∂J/∂q v⁺ + J X + ∂s/∂q + e ∂J_N/∂q v
//! ∂v⁺/∂q = X + M̃⁻¹ Jᵀ Λ C
//! ∂q⁺/∂q = Ad(exp(v⁺dt))⁻¹ + J_⊕ dt ∂v⁺/∂q
//! ```
//!
//! (`K` the springs' stiffness, explicit). `∂J/∂q u` and `∂(Jᵀλ)/∂q` come
//! from the motion columns' derivatives, `∂S_j/∂q_k = S_k × S_j` where dof
//! `k` supports dof `j`'s body (world frame), and from the contacts'
//! variations. A step with a contact whose features' derivatives are not
//! written ([`crate::collision::ContactGeometry::Unknown`]) is not
//! differentiated with respect to `q` (`wrt_q` false). Nor are the fluid
//! forces: a model with an active medium is refused.

use super::{SimError, Simulator, State, StepReport, check_vec};
use crate::collision::ContactGeometry;
use crate::contact::sensitivity::VjpWorld;
use crate::contact::{ContactMode, ContactProblem, ContactSensitivity};
use crate::dynamics::{
    Derivatives, crba_from_kinematics, integrate_jacobians, ltdl_factorize, mass_inverse,
    rnea_derivatives_from_kinematics,
};
use crate::math::{Vec3, Vec6, small};
use crate::model::Model;
use nalgebra::{DMatrix, DVector};

mod deep;
pub(super) mod wrt_q;

/// The Jacobians of one step, all `nv × nv` (`q⁺` and `q` in the tangent
/// space).
#[derive(Clone, Debug, Default)]
pub struct StepJacobians {
    pub dv_dv: DMatrix<f64>,
    pub dv_dtau: DMatrix<f64>,
    pub dq_dv: DMatrix<f64>,
    pub dq_dtau: DMatrix<f64>,
    /// `∂v⁺/∂q` and `∂q⁺/∂q` (`q` through `⊕`), where `wrt_q` is true: on
    /// every step whose contacts' features have written derivatives
    /// ([`crate::collision::ContactGeometry`]); otherwise the matrices are
    /// unspecified.
    pub dv_dq: DMatrix<f64>,
    pub dq_dq: DMatrix<f64>,
    pub wrt_q: bool,
    /// The worst relative residual of the contact modes' linearized
    /// equations along the `q` directions
    /// ([`ContactSensitivity::worst_residual`]). Above 1e-6, `G` is
    /// singular and moving `q` asks the contacts for a change their
    /// motions cannot produce (Gymnasium's ant on four sticking feet: `J`
    /// has rank 11 of 12; a cube landing on an edge): the modes must
    /// change, the step is not differentiable in `q`, and `∂λ/∂q` is the
    /// least-squares one ([`ContactSensitivity::apply_least_squares`]), a
    /// documented choice of generalized derivative, finite where the
    /// regularized solve is not.
    pub q_residual: f64,
    /// For each column `k` of `dv_dq` and `dq_dq` (where `wrt_q`; also in
    /// reverse mode), which perturbations `δq_k` it is the derivative for:
    /// both signs, one (the one-sided derivative), or neither (a kink: the
    /// step changes a contact's or a stop's mode, or the stabilization's
    /// slope, either way within [`super::KINK_REACH`]). See
    /// [`super::kinks`]: a robot at rest sits on such boundaries.
    pub q_sides: Vec<super::QSide>,
    /// The same for the columns of `v` (`dv_dv`, `dq_dv`) and of `τ`
    /// (`dv_dtau`, `dq_dtau`): a perturbation of a velocity or a torque
    /// can take a sticking contact to its cone's edge, a pressed one off,
    /// a stop off its bound, as one of `q` can; `τ`'s boundaries counted
    /// within `KINK_REACH/dt` (see [`super::kinks::velocity_sides`]).
    /// Forward mode only (empty in a reverse record).
    pub v_sides: Vec<super::QSide>,
    pub tau_sides: Vec<super::QSide>,
    /// `∂v⁺/∂μ` and `∂q⁺/∂μ` (nv × nc): column `i` for the friction
    /// coefficient of the step's contact `i` (`Simulator::contacts`); only
    /// sliding contacts' coefficients matter to first order.
    pub dv_dmu: DMatrix<f64>,
    pub dq_dmu: DMatrix<f64>,
    dl_dmu: DMatrix<f64>,
    /// The velocity the step started from.
    v0: DVector<f64>,
    derivatives: Option<Derivatives>,
    sensitivity: ContactSensitivity,
    /// `∂λ/∂x` (m × nv), `Λ J` (`Λ = ∂λ*/∂g`), and the restitution rows
    /// `E` of `∂g/∂v` then `Λ E`; `∂c/∂x` for the sides of `v` and `τ`.
    rows: DMatrix<f64>,
    dc_x: DMatrix<f64>,
    lj: DMatrix<f64>,
    jv_impacts: DMatrix<f64>,
    /// The multi-dof joints' blocks of `jv`: (first dof, dofs).
    blocks: Vec<(usize, usize)>,
    jq: DMatrix<f64>,
    jv: DMatrix<f64>,
    /// `Jᵀ` and `M̃⁻¹Jᵀ` (nv × m).
    jt: DMatrix<f64>,
    minv_jt: DMatrix<f64>,
    c: Vec<f64>,
    /// The restitution rows of the step: (row, coefficient).
    impacts: Vec<(usize, f64)>,
    wrt_q_work: QWork,
    /// Recorded for reverse mode ([`Simulator::step_for_vjp`]): `dv_dv`
    /// and `dv_dtau` hold the free parts `∂v_f/∂(v, τ)`, `dv_dmu` and the
    /// `q⁺` matrices are not formed, and the contact stage (`problem`,
    /// `lambda`, `c`, the factorized sensitivity) is kept for
    /// [`Self::vjp`].
    reverse: bool,
    /// Rows of the step's contact problem.
    m: usize,
    problem: ContactProblem,
    lambda: Vec<f64>,
}

/// The largest relative residual of the linearized mode equations along
/// the `q` directions for which the derivative is taken as exact (see
/// [`StepJacobians::q_residual`]).
pub const Q_EXACT_RESIDUAL: f64 = 1e-6;

/// Buffers of the derivatives with respect to `q` under constraints.
#[derive(Clone, Debug, Default)]
struct QWork {
    /// `q̈` at `τ + Jᵀλ/dt`: `(v⁺ − v)/dt`.
    ddq: DVector<f64>,
    /// `∂(Jᵀλ)/∂q` (nv × nv), then `∂(Jᵀλ)/∂q − dt (∂τ/∂q + K)`.
    djtl: DMatrix<f64>,
    /// `∂c/∂q` at fixed λ, then `∂λ/∂q` (m × nv), and a copy of the first.
    dc: DMatrix<f64>,
    dc_kept: DMatrix<f64>,
    /// (nbodies × nv) whether dof k supports body b, at `b·nv + k`.
    supports: Vec<bool>,
    /// Per body: its spatial velocity under `v⁺` and under `v` (world
    /// frame), and the contact wrench on its subtree.
    vel_next: Vec<Vec6>,
    vel_prev: Vec<Vec6>,
    wrench: Vec<Vec6>,
    /// Per contact: the stabilization's slope `∂s_N/∂φ`, the world force.
    slope: Vec<f64>,
    force: Vec<Vec3>,
    /// `∂φ/∂q` (nc × nv) and the total `∂c/∂q = C + (G + R) ∂λ/∂q` (m × nv),
    /// for [`super::kinks::q_sides`].
    dphi: DMatrix<f64>,
    dc_total: DMatrix<f64>,
}

impl StepJacobians {
    /// The mode of each contact, then of each joint-limit row, read off
    /// the step's solution (see [`crate::contact::sensitivity`]).
    pub fn modes(&self) -> &[crate::contact::ContactMode] {
        &self.sensitivity.modes
    }
}

impl Simulator {
    /// [`Self::step`] from `state` with torques `tau`, and the Jacobians of
    /// the step with respect to `state.q` (where `out.wrt_q`), `state.v`,
    /// `tau` and the contacts' friction coefficients into `out` (see the
    /// module doc). The contact problem is differentiated at the solver's
    /// answer, so ask for a tight tolerance (1e-10 or less) where the
    /// derivatives matter.
    pub fn step_with_jacobians(
        &mut self,
        state: &mut State,
        tau: &[f64],
        out: &mut StepJacobians,
    ) -> Result<StepReport, SimError> {
        check_differentiable(&self.model)?;
        // (Kept in `out`'s buffers: no allocation once they have grown.)
        let mut v0 = std::mem::take(&mut out.v0);
        if v0.len() != state.v.len() {
            v0 = DVector::zeros(state.v.len());
        }
        v0.copy_from(&state.v);
        let result = self
            .keeping_all_contacts(|s| s.step(state, tau))
            .and_then(|report| self.step_jacobians(&v0, out, false, 0.0).map(|()| report));
        out.v0 = v0;
        result
    }

    /// [`Self::step`] from `state` with torques `tau`, and the
    /// vector–Jacobian product of the step (reverse mode): given the
    /// adjoints `w_v` of `v⁺` and `w_q` of `q⁺` (nv each, `q⁺` in the
    /// tangent space), `out` receives `wᵀ ∂(v⁺, q⁺)/∂x` for `x` = `q`, `v`,
    /// `τ` and the contacts' friction coefficients. Without forming the
    /// Jacobians with respect to `v` and `τ`: the contact problem's
    /// sensitivity is applied once, transposed, instead of once per dof
    /// (with respect to `q`, `∂v⁺/∂q` is formed, as in
    /// [`Self::step_with_jacobians`]). `work` holds the buffers (its
    /// matrices are left unspecified). Chained backwards over a stored
    /// trajectory, this is backpropagation through time.
    pub fn step_with_vjp(
        &mut self,
        state: &mut State,
        tau: &[f64],
        (w_v, w_q): (&[f64], &[f64]),
        work: &mut StepJacobians,
        out: &mut StepVjp,
    ) -> Result<StepReport, SimError> {
        check_vec("w_v", w_v, self.model.nv)?;
        check_vec("w_q", w_q, self.model.nv)?;
        check_differentiable(&self.model)?;
        let v0 = state.v.clone();
        let report = self.keeping_all_contacts(|s| s.step(state, tau))?;
        self.step_jacobians(&v0, work, true, 0.0)?;
        work.vjp(w_v, w_q, out)?;
        Ok(report)
    }

    /// [`Self::step`] from `state` with torques `tau`, recording into `out`
    /// what the step's vector–Jacobian product needs, for later
    /// ([`StepJacobians::vjp`], any number of times): backpropagation
    /// through a trajectory keeps one record per step. The contact stage
    /// is kept for its transposed solve rather than applied to every
    /// direction (`∂v⁺/∂q` is formed, as in [`Self::step_with_vjp`]).
    pub fn step_for_vjp(
        &mut self,
        state: &mut State,
        tau: &[f64],
        out: &mut StepJacobians,
    ) -> Result<StepReport, SimError> {
        check_differentiable(&self.model)?;
        let v0 = state.v.clone();
        let report = self.keeping_all_contacts(|s| s.step(state, tau))?;
        self.step_jacobians(&v0, out, true, 0.0)?;
        Ok(report)
    }

    /// The Jacobians of the step just taken from velocity `v0` (the
    /// simulator's data still at its start), or (`reverse`) the record of
    /// [`Self::step_for_vjp`]. The contact modes are read off the solution
    /// at `accuracy` ([`ContactSensitivity::factorize_at_accuracy`]: 0 for
    /// the f64 solvers, the residual of an f32 GPU solve).
    pub(crate) fn step_jacobians(
        &mut self,
        v0: &DVector<f64>,
        out: &mut StepJacobians,
        reverse: bool,
        accuracy: f64,
    ) -> Result<(), SimError> {
        out.reverse = reverse;
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
        if out.derivatives.as_ref().is_none_or(|d| !d.fits(&model)) {
            out.derivatives = Some(Derivatives::new(&model));
        }
        let der = out.derivatives.as_mut().expect("just built");
        // The free dynamics on M̃ (data.dof_armature holds armature + dt·D
        // since the step's stage 1) at the step's forces plus the
        // impulse's, `τ + Jᵀλ/dt`: the impulse's share of ∂q̈/∂q at fixed
        // λ. Their q̈ is the step's `(v⁺ − v)/dt`; `data` holds the step's
        // kinematics at (q, v) and the factorization of M̃.
        let m = self.problem.m();
        out.m = m;
        if m == 0 {
            // (The step skipped stage 3: no mass matrix to reuse.)
            crba_from_kinematics(&model, &mut self.data);
            ltdl_factorize(&model, &mut self.data);
        }
        let w = &mut out.wrt_q_work;
        if w.ddq.len() != nv {
            w.ddq = DVector::zeros(nv);
        }
        w.ddq.copy_from(&self.v_next);
        w.ddq -= v0;
        w.ddq /= dt;
        // ∂q̈/∂(q, v) = −M̃⁻¹ ∂τ/∂(q, v) are not formed: each product
        // with M̃⁻¹ is taken once, on the sum it multiplies.
        rnea_derivatives_from_kinematics(&model, &mut self.data, der, w.ddq.as_slice());
        mass_inverse(&model, &self.data, der);
        out.dv_dtau.copy_from(&der.ddq_dtau);
        out.dv_dtau *= dt;
        // ∂v_f/∂v = I − dt M̃⁻¹ (∂τ/∂v + D) (the damping D explicit).
        add_diagonal(&mut der.dtau_dv, &model.dof_damping);
        small::gemm(&mut out.dv_dv, -dt, &der.ddq_dtau, &der.dtau_dv, 0.0);
        for k in 0..nv {
            out.dv_dv[(k, k)] += 1.0;
        }
        if m == 0 {
            out.dv_dmu = DMatrix::zeros(nv, 0);
            out.sensitivity.modes.clear();
        }
        // At fixed λ: −dt M̃⁻¹ (∂τ/∂q + K) (the springs' stiffness K,
        // explicit); with constraints, M̃⁻¹'s product is taken below, once
        // the impulse's `∂(Jᵀλ)/∂q` is added to what it multiplies.
        out.q_residual = 0.0;
        out.q_sides.clear();
        out.v_sides.clear();
        out.tau_sides.clear();
        out.wrt_q = self
            .contacts
            .iter()
            .all(|c| c.geometry != ContactGeometry::Unknown);
        if out.wrt_q {
            add_diagonal(&mut der.dtau_dq, &model.dof_stiffness);
            if m == 0 {
                small::gemm(&mut out.dv_dq, -dt, &der.ddq_dtau, &der.dtau_dq, 0.0);
            }
        }
        if m > 0 {
            self.impacts(v0, &mut out.impacts);
            self.problem_with_delassus();
            let problem = &self.problem;
            out.c.resize(m, 0.0);
            problem.contact_velocity(self.solution.lambda.as_slice(), &mut out.c);
            out.sensitivity
                .factorize_at_accuracy(problem, self.solution.lambda.as_slice(), &out.c, accuracy)
                .map_err(SimError::Problem)?;
            if reverse {
                out.problem.clone_from(problem);
                out.lambda.clear();
                out.lambda
                    .extend_from_slice(self.solution.lambda.as_slice());
            }
            // ∂λ/∂μ, then ∂v⁺/∂μ = M̃⁻¹ Jᵀ ∂λ/∂μ (v_f does not depend on μ).
            let nc = problem.nc();
            out.sensitivity
                .apply_mu(self.solution.lambda.as_slice(), &out.c, &mut out.dl_dmu);
            if out.dv_dmu.shape() != (nv, nc) {
                out.dv_dmu = DMatrix::zeros(nv, nc);
            }
            out.dv_dmu.fill(0.0);
            // M̃⁻¹ Jᵀ products with the dense M̃⁻¹ of the free dynamics'
            // derivatives: M̃⁻¹Jᵀ formed once, then one matrix product a
            // block of columns.
            let j = &self.jacobian.jacobian;
            if out.jt.shape() != (nv, m) {
                out.jt = DMatrix::zeros(nv, m);
            }
            j.transpose_to(&mut out.jt);
            if out.minv_jt.shape() != (nv, m) {
                out.minv_jt = DMatrix::zeros(nv, m);
            }
            let minv = &out.derivatives.as_ref().expect("built above").ddq_dtau;
            small::gemm(&mut out.minv_jt, 1.0, minv, &out.jt, 0.0);
            for mat in [&mut out.rows, &mut out.jv_impacts, &mut out.dc_x] {
                if mat.shape() != (m, nv) {
                    *mat = DMatrix::zeros(m, nv);
                }
            }
            // (Reverse mode: only ∂v⁺/∂q is formed, below.)
            if !reverse {
                small::gemm(&mut out.dv_dmu, 1.0, &out.minv_jt, &out.dl_dmu, 1.0);
                // Λ (J Y) = (Λ J) Y for any Y (the columns of J Y are
                // combinations of J's, Λ is linear): one solve, Λ J, for
                // ∂v⁺/∂v and ∂v⁺/∂τ, instead of one per matrix.
                if out.lj.shape() != j.shape() {
                    out.lj = DMatrix::zeros(m, nv);
                }
                out.lj.copy_from(j);
                out.sensitivity.apply(&mut out.lj);
                for target in 0..2 {
                    let src = if target == 0 {
                        &out.dv_dv
                    } else {
                        &out.dv_dtau
                    };
                    small::gemm(&mut out.rows, 1.0, &out.lj, src, 0.0);
                    if target == 0 && !out.impacts.is_empty() {
                        // The restitution rows `E` of ∂g/∂v, solved apart.
                        out.jv_impacts.fill(0.0);
                        for &(row, e) in &out.impacts {
                            for k in 0..nv {
                                out.jv_impacts[(row, k)] = e * j[(row, k)];
                            }
                        }
                        out.sensitivity.apply(&mut out.jv_impacts);
                        out.rows += &out.jv_impacts;
                    }
                    let dst = if target == 0 {
                        &mut out.dv_dv
                    } else {
                        &mut out.dv_dtau
                    };
                    small::gemm(dst, 1.0, &out.minv_jt, &out.rows, 1.0);
                    // The sides: ∂c/∂x = J ∂v⁺/∂x + R ∂λ/∂x (+ E for v),
                    // c = J v⁺ + Rλ + e J_N v + s(φ), completed on the rows
                    // whose velocity decides a piece (breaking and sliding
                    // contacts, open stops).
                    small::gemm(&mut out.dc_x, 1.0, j, dst, 0.0);
                    let problem = &self.problem;
                    let modes = &out.sensitivity.modes;
                    let rows_of = |b: usize| -> std::ops::Range<usize> {
                        match modes[b] {
                            ContactMode::Sticking => 0..0,
                            _ if b >= nc => 2 * nc + b..2 * nc + b + 1,
                            ContactMode::Breaking => 3 * b + 2..3 * b + 3,
                            ContactMode::Sliding => 3 * b..3 * b + 2,
                        }
                    };
                    for r in (0..modes.len()).flat_map(rows_of) {
                        let e = if target == 0 {
                            out.impacts
                                .iter()
                                .find(|&&(row, _)| row == r)
                                .map_or(0.0, |x| x.1)
                        } else {
                            0.0
                        };
                        let rr = problem.compliance[r];
                        for k in 0..nv {
                            out.dc_x[(r, k)] += rr * out.rows[(r, k)] + e * j[(r, k)];
                        }
                    }
                    let pieces = super::kinks::StepPieces {
                        contacts: &self.contacts,
                        limits: &self.limits,
                        mu: &problem.mu,
                        modes: &out.sensitivity.modes,
                        lambda: self.solution.lambda.as_slice(),
                        c: &out.c,
                        dlambda: &out.rows,
                        dc: &out.dc_x,
                        dphi: None,
                        impacts: &out.impacts,
                        residuals: &[],
                        recovery_kink: None,
                    };
                    let (sides, reach) = if target == 0 {
                        (&mut out.v_sides, super::KINK_REACH)
                    } else {
                        (&mut out.tau_sides, super::KINK_REACH / dt)
                    };
                    super::kinks::velocity_sides(&pieces, nv, reach, sides);
                }
            }
            if out.wrt_q {
                self.constrained_wrt_q(v0, out);
                let w = &mut out.wrt_q_work;
                // Where a direction leaves the modes' equations without a
                // solution (a singular A, the residual says), all in the
                // least-squares sense.
                copy_matrix(&mut w.dc_kept, &w.dc);
                out.sensitivity
                    .apply_unless_unsolvable(&mut w.dc, Q_EXACT_RESIDUAL);
                out.q_residual = out.sensitivity.worst_residual();
                if out.q_residual > Q_EXACT_RESIDUAL {
                    w.dc.copy_from(&w.dc_kept);
                    out.sensitivity.apply_least_squares(&mut w.dc);
                }
                small::gemm(&mut out.dv_dq, 1.0, &out.minv_jt, &w.dc, 1.0);
                {
                    // ∂c/∂q = C + (G + R) ∂λ/∂q.
                    let problem = &self.problem;
                    copy_matrix(&mut w.dc_total, &w.dc_kept);
                    small::gemm(&mut w.dc_total, 1.0, &problem.delassus, &w.dc, 1.0);
                    for r in 0..m {
                        let rr = problem.compliance[r];
                        for k in 0..nv {
                            w.dc_total[(r, k)] += rr * w.dc[(r, k)];
                        }
                    }
                    let pieces = super::kinks::StepPieces {
                        contacts: &self.contacts,
                        limits: &self.limits,
                        mu: &problem.mu,
                        modes: &out.sensitivity.modes,
                        lambda: self.solution.lambda.as_slice(),
                        c: &out.c,
                        dlambda: &w.dc,
                        dc: &w.dc_total,
                        dphi: Some(&w.dphi),
                        impacts: &out.impacts,
                        residuals: out.sensitivity.column_residuals(),
                        recovery_kink: self.params.recovery_kink(),
                    };
                    super::kinks::q_sides(&pieces, nv, &mut out.q_sides);
                }
            }
        }
        if out.wrt_q && m == 0 {
            out.q_sides.resize(nv, super::QSide::Both);
        }
        if !reverse && m == 0 {
            out.v_sides.resize(nv, super::QSide::Both);
            out.tau_sides.resize(nv, super::QSide::Both);
        }
        integrate_jacobians(&model, self.v_next.as_slice(), dt, &mut out.jq, &mut out.jv);
        if reverse {
            return Ok(());
        }
        // jv is ∂(q ⊕ v dt)/∂v, dt included: block diagonal, a block per
        // joint.
        out.blocks.clear();
        out.blocks.extend(
            (1..model.nbodies)
                .map(|b| (model.joint_idx_v[b], model.joint_type[b].nv()))
                .filter(|&(_, n)| n > 1),
        );
        debug_assert!((0..nv).all(|k| {
            out.blocks.iter().any(|&(iv, n)| (iv..iv + n).contains(&k)) || out.jv[(k, k)] == dt
        }));
        joint_blocks_mul(&out.blocks, dt, &out.jv, &out.dv_dv, &mut out.dq_dv);
        joint_blocks_mul(&out.blocks, dt, &out.jv, &out.dv_dtau, &mut out.dq_dtau);
        if out.wrt_q {
            joint_blocks_mul(&out.blocks, dt, &out.jv, &out.dv_dq, &mut out.dq_dq);
            out.dq_dq += &out.jq;
        }
        if out.dq_dmu.shape() != out.dv_dmu.shape() {
            out.dq_dmu = DMatrix::zeros(nv, out.dv_dmu.ncols());
        }
        joint_blocks_mul(&out.blocks, dt, &out.jv, &out.dv_dmu, &mut out.dq_dmu);
        Ok(())
    }
}

impl StepJacobians {
    /// Whether this is a record of [`Simulator::step_for_vjp`] (reverse
    /// mode) rather than the Jacobians of [`Simulator::step_with_jacobians`].
    pub fn is_reverse_record(&self) -> bool {
        self.reverse
    }

    /// The vector–Jacobian product of the recorded step: given the
    /// adjoints `w_v` of `v⁺` and `w_q` of `q⁺` (nv each, `q⁺` in the
    /// tangent space), `out` receives `wᵀ ∂(v⁺, q⁺)/∂x` for `x` = `q`, `v`,
    /// `τ`, `μ`. Works on both kinds of record: from full Jacobians by
    /// transposed products, from a reverse record by the contact stage's
    /// transposed solve ([`Self::vjp_start`], `ḡ = Λᵀλ̄`,
    /// [`Self::vjp_finish`]). The record is kept: call it again with other
    /// adjoints.
    pub fn vjp(&mut self, w_v: &[f64], w_q: &[f64], out: &mut StepVjp) -> Result<(), SimError> {
        let (w_bar, lambda_bar) = self.vjp_start(w_v, w_q)?;
        let g_bar = self.contact_adjoint(&lambda_bar);
        self.vjp_finish(w_q, &w_bar, &lambda_bar, &g_bar, out);
        Ok(())
    }

    /// The contact stage's transposed solve on the CPU, in f64:
    /// `ḡ = Λᵀ λ̄ = −D_cᵀ A⁻ᵀ λ̄` (empty for an empty `lambda_bar`).
    pub fn contact_adjoint(&mut self, lambda_bar: &DVector<f64>) -> Vec<f64> {
        let mut g_bar = lambda_bar.as_slice().to_vec();
        if !g_bar.is_empty() {
            self.sensitivity.apply_transpose(&mut g_bar);
        }
        g_bar
    }

    /// The first half of [`Self::vjp`]: `w̄ = w_v + J_⊕ᵀ w_q` and, for a
    /// reverse record with contacts, the impulses' adjoint
    /// `λ̄ = J M̃⁻¹ w̄` (empty otherwise).
    pub fn vjp_start(
        &self,
        w_v: &[f64],
        w_q: &[f64],
    ) -> Result<(DVector<f64>, DVector<f64>), SimError> {
        let nv = self.dv_dv.nrows();
        check_vec("w_v", w_v, nv)?;
        check_vec("w_q", w_q, nv)?;
        let mut w_bar = DVector::from_column_slice(w_v);
        w_bar.gemv_tr(1.0, &self.jv, &DVector::from_column_slice(w_q), 1.0);
        let lambda_bar = if self.reverse && self.m > 0 {
            self.minv_jt.tr_mul(&w_bar)
        } else {
            DVector::zeros(0)
        };
        Ok((w_bar, lambda_bar))
    }

    /// The contact stage of a reverse record with contacts, with the
    /// impulses' adjoint `lambda_bar` of [`Self::vjp_start`], for the GPU's
    /// batched transposed solve ([`crate::gpu::vjp::GpuContactVjp`]).
    pub fn contact_stage<'a>(&'a self, lambda_bar: &'a [f64]) -> Option<VjpWorld<'a>> {
        (self.reverse && self.m > 0).then_some(VjpWorld {
            problem: &self.problem,
            lambda: &self.lambda,
            c: &self.c,
            modes: &self.sensitivity.modes,
            lambda_bar,
        })
    }

    /// The second half of [`Self::vjp`], given the free velocity's adjoint
    /// `g_bar = Λᵀ λ̄` (computed on the CPU or the GPU; empty where
    /// `lambda_bar` is):
    ///
    /// ```text
    /// v̄_f = w̄ + Jᵀ ḡ               v̄ = (∂v_f/∂v)ᵀ v̄_f + Eᵀ ḡ
    /// τ̄ = (∂v_f/∂τ)ᵀ v̄_f            μ̄ = (∂λ/∂μ)ᵀ λ̄
    /// q̄ = (Ad(exp(v⁺dt))⁻¹)ᵀ w_q + (∂v⁺/∂q)ᵀ w̄
    /// ```
    ///
    /// (from full Jacobians: `v̄ = (∂v⁺/∂v)ᵀ w̄`, and so on).
    pub fn vjp_finish(
        &self,
        w_q: &[f64],
        w_bar: &DVector<f64>,
        lambda_bar: &DVector<f64>,
        g_bar: &[f64],
        out: &mut StepVjp,
    ) {
        let mut v_f_bar = w_bar.clone();
        let nc = match (self.reverse, self.m) {
            (true, 0) => 0,
            (true, _) => self.dl_dmu.ncols(),
            (false, _) => self.dv_dmu.ncols(),
        };
        out.v = DVector::zeros(w_bar.len());
        out.mu = DVector::zeros(nc);
        if self.reverse && self.m > 0 && g_bar.len() == self.m {
            let g_bar = DVector::from_column_slice(g_bar);
            v_f_bar.gemv(1.0, &self.jt, &g_bar, 1.0);
            for &(row, e) in &self.impacts {
                out.v.axpy(e * g_bar[row], &self.jt.column(row), 1.0);
            }
            out.mu.gemv_tr(1.0, &self.dl_dmu, lambda_bar, 0.0);
        } else if !self.reverse {
            out.mu.gemv_tr(1.0, &self.dv_dmu, w_bar, 0.0);
        }
        out.v.gemv_tr(1.0, &self.dv_dv, &v_f_bar, 1.0);
        out.tau = self.dv_dtau.tr_mul(&v_f_bar);
        out.wrt_q = self.wrt_q;
        out.q_residual = self.q_residual;
        out.q_sides.clone_from(&self.q_sides);
        out.q = self.jq.tr_mul(&DVector::from_column_slice(w_q));
        if self.wrt_q {
            out.q.gemv_tr(1.0, &self.dv_dq, w_bar, 1.0);
        }
    }
}

/// Step derivatives are written for every model but one whose medium is
/// active (the fluid forces' derivatives are not).
pub(crate) fn check_differentiable(model: &Model) -> Result<(), SimError> {
    if let Some(what) = model.constraint_features() {
        return Err(SimError::InvalidParameter {
            name: "model",
            reason: format!(
                "the step derivatives are written for contacts and joint limits: this model has {what}"
            ),
        });
    }
    if model.medium.is_active() {
        return Err(SimError::InvalidParameter {
            name: "medium",
            reason: "the derivatives of the fluid forces are not written: \
                     step derivatives need a model without an active medium"
                .into(),
        });
    }
    Ok(())
}

/// The vector–Jacobian product of one step ([`Simulator::step_with_vjp`]):
/// `wᵀ ∂(v⁺, q⁺)/∂x` for each input `x`.
#[derive(Clone, Debug, Default)]
pub struct StepVjp {
    /// With respect to `q` (tangent space), where `wrt_q` (see
    /// [`StepJacobians::wrt_q`] and [`StepJacobians::q_residual`]).
    pub q: DVector<f64>,
    pub v: DVector<f64>,
    pub tau: DVector<f64>,
    /// With respect to each contact's friction coefficient.
    pub mu: DVector<f64>,
    pub wrt_q: bool,
    pub q_residual: f64,
    /// Which side of a kink each component of `q` is for (see
    /// [`StepJacobians::q_sides`]).
    pub q_sides: Vec<super::QSide>,
}

/// `dst = a src` for `a` block diagonal (`nv × nv`): `scale` on the
/// diagonal but for the `blocks`, each `(first dof, size)` (the Jacobian
/// of `q ⊕ v dt` with respect to `v`, [`integrate_jacobians`]: `dt` for a
/// 1-dof joint, a block per free or spherical joint).
fn joint_blocks_mul(
    blocks: &[(usize, usize)],
    scale: f64,
    a: &DMatrix<f64>,
    src: &DMatrix<f64>,
    dst: &mut DMatrix<f64>,
) {
    let nv = a.nrows();
    debug_assert_eq!(src.shape(), dst.shape());
    debug_assert_eq!(src.nrows(), nv);
    let a = a.as_slice();
    for (s, d) in src
        .as_slice()
        .chunks_exact(nv)
        .zip(dst.as_mut_slice().chunks_exact_mut(nv))
    {
        for (d, &s) in d.iter_mut().zip(s) {
            *d = scale * s;
        }
        for &(iv, n) in blocks {
            match n {
                6 => block_mul::<6>(a, nv, iv, s, d),
                3 => block_mul::<3>(a, nv, iv, s, d),
                _ => {
                    let (s, d) = (&s[iv..iv + n], &mut d[iv..iv + n]);
                    d.fill(0.0);
                    for (t, &st) in s.iter().enumerate() {
                        let at = &a[(iv + t) * nv + iv..(iv + t) * nv + iv + n];
                        for (d, &a) in d.iter_mut().zip(at) {
                            *d += a * st;
                        }
                    }
                }
            }
        }
    }
}

/// `d[iv..iv + N] = A s[iv..iv + N]` for the `N × N` block of the
/// column-major `nv × nv` `a` at `(iv, iv)`.
#[inline]
fn block_mul<const N: usize>(a: &[f64], nv: usize, iv: usize, s: &[f64], d: &mut [f64]) {
    let s: &[f64; N] = s[iv..iv + N].try_into().expect("a joint's block");
    let mut out = [0.0; N];
    for (t, &st) in s.iter().enumerate() {
        let at: &[f64; N] = a[(iv + t) * nv + iv..(iv + t) * nv + iv + N]
            .try_into()
            .expect("a joint's block");
        for (o, &a) in out.iter_mut().zip(at) {
            *o += a * st;
        }
    }
    d[iv..iv + N].copy_from_slice(&out);
}

/// `dst = src`, reusing `dst`'s allocation where the shapes agree.
fn copy_matrix(dst: &mut DMatrix<f64>, src: &DMatrix<f64>) {
    if dst.shape() != src.shape() {
        *dst = DMatrix::zeros(src.nrows(), src.ncols());
    }
    dst.copy_from(src);
}

/// `dst += diag(coefficients)` (a force proportional to each dof's own
/// coordinate or velocity, as damping or a spring, added to `∂τ/∂(q, v)`).
fn add_diagonal(dst: &mut DMatrix<f64>, coefficients: &[f64]) {
    for (k, &a) in coefficients.iter().enumerate() {
        dst[(k, k)] += a;
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
