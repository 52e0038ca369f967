//! Inverse dynamics with rigid contact and friction (after Zapolsky and
//! Drumwright, "Inverse Dynamics with Rigid Contact and Friction"): given a
//! state `(q, v)` and desired accelerations `a*` of the actuated dofs, the
//! actuated torques `τ` and the contact impulses `λ` that realize them
//! under the time-stepping model moreau simulates with.
//!
//! **The step being inverted** is the simulator's (see [`crate::sim`]):
//! `M̃ (v⁺ − v_f) = Jᵀλ + dt Sᵀτ` with `v_f` the free velocity without
//! actuation (springs, damping and bias included), and the contact
//! velocity `c = J v⁺ + s` (`s` the stabilization and restitution terms of
//! the step's problem, `g = J v_f + s`). The actuated velocities are known,
//! `v⁺_a = v_a + dt a*`; the unactuated ones (the floating base, passive
//! joints) follow from their rows of the dynamics,
//! `v⁺_b = M̃_bb⁻¹ (h_b + J_bᵀ λ)`, `h_b = (M̃ v_f)_b − M̃_ba v⁺_a`. So the
//! contacts see a **reduced problem**
//!
//! ```text
//! c = G_b λ + g_b,   G_b = J_b M̃_bb⁻¹ J_bᵀ,   g_b = J_b M̃_bb⁻¹ h_b + J_a v⁺_a + s
//! ```
//!
//! (the contact problem of the unactuated dofs with the actuated ones
//! moving as asked), of the size of the forward one. Each formulation
//! solves it under its own contact law; then `τ = [M̃(v⁺ − v_f) − Jᵀλ]_a / dt`.
//!
//! - [`Formulation::NoSlip`] (§3, infinite friction): `c_T = 0`,
//!   `0 ≤ λ_N ⟂ c_N ≥ 0`, the KKT conditions of the convex QP
//!   `min ½λᵀG_bλ + g_bᵀλ, λ_N ≥ 0` (solved by Clarabel). **Indeterminacy**
//!   (four feet: `G_b` singular) is mitigated as the seed does, in a second
//!   stage over the solution set (`J_bᵀλ` fixed, which fixes `c` and `v⁺`;
//!   breaking contacts kept at zero): the least torques,
//!   `min ½‖dt τ‖² + ε‖λ‖²`. The problem has the size `3 nc` of the contact
//!   set: it scales with the number of contacts, not with its square's
//!   pivots.
//! - [`Formulation::Coulomb`] (§4): Coulomb friction on the friction
//!   pyramid of the settings (the `lcp-pgs` model: a polygon of inradius
//!   `μ λ_N`), maximum dissipation over it, as the Stewart–Trinkle LCP in
//!   `(λ_N, β, γ)`, solved by Lemke's algorithm ([`mod@crate::contact::lemke`]).
//!   Indeterminate impulses are those Lemke's pivoting reaches.
//! - [`Formulation::TwoStage`] (§5, convex, no normal complementarity):
//!   stage I `min ½λᵀG_bλ + g_bᵀλ, λ ∈ K_μ` (the second-order cones: the
//!   `ccp-*` model), stage II the torques nearest the previous ones
//!   ([`InverseSettings::previous_tau`], or zero) over stage I's solution
//!   set, `min ½‖dt (τ − τ_prev)‖² + ε‖λ‖²`. Both by Clarabel.
//! - [`Formulation::Ncp`]: the NCP moreau simulates by default, through
//!   the step itself: Gauss–Newton on `v⁺_a(τ) − v⁺_a*` with the step's
//!   Jacobian `∂v⁺/∂τ` ([`Simulator::step_with_jacobians`]), from the
//!   no-slip torques.
//!
//! Joint-limit rows are unilateral rows in every formulation (`λ ≥ 0 ⟂ c ≥ 0`).

use crate::contact::lemke::{LemkeError, LemkeSettings, lemke};
use crate::dynamics::crba_from_kinematics;
use crate::error::SimError;
use crate::model::{JointType, Model};
use crate::sim::{SimParams, Simulator, State, StepJacobians};
use clarabel::algebra::CscMatrix;
use clarabel::solver::{
    DefaultSettingsBuilder, DefaultSolver, IPSolver, SolverStatus, SupportedConeT,
};
use nalgebra::{DMatrix, DVector};
use std::str::FromStr;
use std::sync::Arc;
use thiserror::Error;

/// How the contact impulses are found (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Formulation {
    NoSlip,
    Coulomb,
    TwoStage,
    Ncp,
}

impl Formulation {
    pub const ALL: [Formulation; 4] = [
        Formulation::NoSlip,
        Formulation::Coulomb,
        Formulation::TwoStage,
        Formulation::Ncp,
    ];
    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Formulation::NoSlip => "no-slip",
            Formulation::Coulomb => "coulomb",
            Formulation::TwoStage => "two-stage",
            Formulation::Ncp => "ncp",
        }
    }
}

impl FromStr for Formulation {
    type Err = InverseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Formulation::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| InverseError::UnknownFormulation(s.into()))
    }
}

/// Why an inverse-dynamics call gave no answer.
#[derive(Debug, Error)]
pub enum InverseError {
    #[error(
        "unknown inverse-dynamics formulation `{0}`; formulations: no-slip, coulomb, two-stage, ncp"
    )]
    UnknownFormulation(String),
    #[error("{0}")]
    Sim(#[from] SimError),
    #[error("{what} has length {got}, expected {expected}")]
    DimensionMismatch {
        what: &'static str,
        got: usize,
        expected: usize,
    },
    #[error("{what}[{index}] is not finite ({value})")]
    NonFinite {
        what: &'static str,
        index: usize,
        value: f64,
    },
    #[error("actuated dof {dof} does not exist (the model has {nv}) or is listed twice")]
    BadActuatedDof { dof: usize, nv: usize },
    #[error("the unactuated dofs' mass matrix is not positive definite")]
    SingularBase,
    #[error("the Coulomb inverse dynamics' LCP: {0}")]
    Lemke(#[from] LemkeError),
    #[error(
        "{stage}: no contact impulses realize the desired accelerations (the QP is unbounded: they would move contacts that must stick or stay closed)"
    )]
    Unrealizable { stage: &'static str },
    #[error("{stage}: the QP solver (Clarabel) stopped with status {status}")]
    Qp { stage: &'static str, status: String },
}

/// Settings of [`InverseDynamics::solve`].
#[derive(Clone, Debug)]
pub struct InverseSettings {
    pub formulation: Formulation,
    /// Two-stage: the torques stage II stays near (nv; zero if none).
    pub previous_tau: Option<DVector<f64>>,
    /// The QPs' regularization `ε`, relative to the largest diagonal
    /// entry of their quadratic form.
    pub regularization: f64,
    /// NCP: Gauss–Newton iterations at most, and the velocity residual
    /// (m/s or rad/s, max norm) at which they stop.
    pub max_iterations: usize,
    pub tolerance: f64,
    /// Replace the desired accelerations by the nearest under which the
    /// contacts can stick (see [`consistent_velocities`]): with more
    /// touching contacts than the unactuated dofs can follow (four feet
    /// down), arbitrary joint accelerations ask the no-slip and the
    /// Coulomb problems for unbounded internal impulses.
    pub consistent: bool,
}

/// Contacts at or below this distance (m) touch: [`consistent_velocities`]
/// holds their normal rows too.
pub const TOUCHING: f64 = 1e-3;

/// The actuated velocities `v⁺_a` nearest `v_a*` for which some velocity
/// `x` of the unactuated dofs makes every contact's tangential velocity
/// and every touching contact's normal velocity zero,
/// `J_a v⁺_a + J_b x + s = 0` on those rows (`s` the stabilization): the
/// KKT system of `min ½‖v⁺_a − v_a*‖² + ½‖x − v_b‖²` under those
/// equalities, `v_b` the unactuated dofs' velocity now (so that the
/// impulses need not swing the base to an arbitrary velocity).
/// `touching`: (nc). Rows the others make redundant are handled by a tiny
/// regularization; if the system cannot be solved, `v_a*` is returned.
pub fn consistent_velocities(
    j_a: &DMatrix<f64>,
    j_b: &DMatrix<f64>,
    s: &DVector<f64>,
    touching: &[bool],
    v_a: DVector<f64>,
    v_b: &DVector<f64>,
) -> DVector<f64> {
    let (na, nb) = (j_a.ncols(), j_b.ncols());
    let rows: Vec<usize> = (0..touching.len())
        .flat_map(|i| {
            let n = if touching[i] { 3 } else { 2 };
            (0..n).map(move |k| 3 * i + k)
        })
        .collect();
    let (nx, nr) = (na + nb, rows.len());
    let mut k = DMatrix::zeros(nx + nr, nx + nr);
    let mut rhs = DVector::zeros(nx + nr);
    for i in 0..na {
        k[(i, i)] = 1.0;
        rhs[i] = v_a[i];
    }
    for i in 0..nb {
        k[(na + i, na + i)] = 1.0;
        rhs[na + i] = v_b[i];
    }
    for (r, &row) in rows.iter().enumerate() {
        for c in 0..na {
            k[(nx + r, c)] = j_a[(row, c)];
            k[(c, nx + r)] = j_a[(row, c)];
        }
        for c in 0..nb {
            k[(nx + r, na + c)] = j_b[(row, c)];
            k[(na + c, nx + r)] = j_b[(row, c)];
        }
        k[(nx + r, nx + r)] = -1e-14;
        rhs[nx + r] = -s[row];
    }
    match k.lu().solve(&rhs) {
        Some(x) if x.iter().all(|v| v.is_finite()) => x.rows(0, na).into_owned(),
        _ => v_a,
    }
}

impl Default for InverseSettings {
    fn default() -> Self {
        InverseSettings {
            formulation: Formulation::NoSlip,
            previous_tau: None,
            regularization: 1e-10,
            max_iterations: 30,
            tolerance: 1e-11,
            consistent: false,
        }
    }
}

/// What [`InverseDynamics::solve`] found.
#[derive(Clone, Debug, Default)]
pub struct InverseSolution {
    /// Torques (nv): on the actuated dofs, zero elsewhere.
    pub tau: DVector<f64>,
    /// Contact impulses in the contact frames (`[t1, t2, n]` per contact),
    /// then the limit rows' (as the step's problem orders them).
    pub lambda: DVector<f64>,
    /// The velocity after the step.
    pub v_next: DVector<f64>,
    /// Contacts and rows of the step's problem.
    pub nc: usize,
    pub m: usize,
    /// Whether the impulses are not unique (`G_b` singular: the
    /// formulation's own rule picked them).
    pub indeterminate: bool,
    /// The largest residual of the formulation's conditions (complementarity
    /// and cone for the QPs and the LCP, `‖v⁺_a − v⁺_a*‖∞` for the NCP).
    pub residual: f64,
    /// Gauss–Newton iterations (NCP), Lemke's pivots (Coulomb), or the
    /// QP solver's iterations summed over its stages.
    pub iterations: usize,
    /// No-slip and two-stage: whether the second stage (least torques over
    /// the first's solution set) was found empty by the QP solver and
    /// the first stage's impulses kept (see `least_torques`).
    pub second_stage_skipped: bool,
}

/// The reduced problem of one call (see the module doc).
struct Reduced {
    m_tilde: DMatrix<f64>,
    v_free: DVector<f64>,
    j: DMatrix<f64>,
    /// `J_b` (m × nb) and `J_a`.
    j_b: DMatrix<f64>,
    j_a: DMatrix<f64>,
    /// The Cholesky factor of `M̃_bb`.
    m_bb: nalgebra::Cholesky<f64, nalgebra::Dyn>,
    h_b: DVector<f64>,
    v_a: DVector<f64>,
    g: DMatrix<f64>,
    g_vec: DVector<f64>,
    mu: Vec<f64>,
    nc: usize,
}

/// Inverse dynamics of one model under the simulator's parameters (its
/// `dt`, stabilization and, for the NCP, its solver).
pub struct InverseDynamics {
    model: Arc<Model>,
    params: SimParams,
    sim: Simulator,
    actuated: Vec<usize>,
    passive: Vec<usize>,
    jacobians: StepJacobians,
}

impl InverseDynamics {
    /// `actuated`: the dofs the torques act on (`None`: every dof but a
    /// free joint's).
    pub fn new(
        model: Arc<Model>,
        params: SimParams,
        actuated: Option<Vec<usize>>,
    ) -> Result<Self, InverseError> {
        if let Some(what) = model.constraint_features() {
            return Err(InverseError::Sim(SimError::InvalidParameter {
                name: "model",
                reason: format!(
                    "inverse dynamics is written for contacts and joint limits: this model has {what}"
                ),
            }));
        }
        let nv = model.nv;
        let actuated = match actuated {
            Some(a) => a,
            None => (0..nv)
                .filter(|&k| model.joint_type[model.dof_body[k]] != JointType::Free)
                .collect(),
        };
        let mut seen = vec![false; nv];
        for &k in &actuated {
            if k >= nv || seen[k] {
                return Err(InverseError::BadActuatedDof { dof: k, nv });
            }
            seen[k] = true;
        }
        let passive = (0..nv).filter(|&k| !seen[k]).collect();
        let sim = Simulator::new(model.clone(), params)?;
        Ok(InverseDynamics {
            model,
            params,
            sim,
            actuated,
            passive,
            jacobians: StepJacobians::default(),
        })
    }

    pub fn actuated(&self) -> &[usize] {
        &self.actuated
    }

    /// The torques and impulses that give the actuated dofs the
    /// accelerations `accelerations` (one per actuated dof, in
    /// [`Self::actuated`]'s order) over one step from `state`.
    pub fn solve(
        &mut self,
        state: &State,
        accelerations: &[f64],
        settings: &InverseSettings,
    ) -> Result<InverseSolution, InverseError> {
        let na = self.actuated.len();
        if accelerations.len() != na {
            return Err(InverseError::DimensionMismatch {
                what: "accelerations",
                got: accelerations.len(),
                expected: na,
            });
        }
        if let Some((index, &value)) = accelerations
            .iter()
            .enumerate()
            .find(|(_, x)| !x.is_finite())
        {
            return Err(InverseError::NonFinite {
                what: "accelerations",
                index,
                value,
            });
        }
        if let Some(p) = &settings.previous_tau
            && p.len() != self.model.nv
        {
            return Err(InverseError::DimensionMismatch {
                what: "previous_tau",
                got: p.len(),
                expected: self.model.nv,
            });
        }
        let dt = self.params.dt;
        let v_a = DVector::from_iterator(
            na,
            self.actuated
                .iter()
                .zip(accelerations)
                .map(|(&k, &a)| state.v[k] + dt * a),
        );
        let r = self.reduce(state, v_a, settings.consistent)?;
        let m = r.g.nrows();
        let mut out = match settings.formulation {
            Formulation::NoSlip | Formulation::Ncp => self.no_slip(&r, settings)?,
            Formulation::Coulomb => self.coulomb(&r, settings)?,
            Formulation::TwoStage => self.two_stage(&r, settings)?,
        };
        out.nc = r.nc;
        out.m = m;
        out.indeterminate = m > 0 && rank(&r.j_b, 1e-9) < m;
        if settings.formulation == Formulation::Ncp {
            self.newton(state, &r, settings, &mut out)?;
        }
        Ok(out)
    }

    /// The reduced problem at `state` with the actuated velocities `v_a`.
    fn reduce(
        &mut self,
        state: &State,
        v_a: DVector<f64>,
        consistent: bool,
    ) -> Result<Reduced, InverseError> {
        let model = self.model.clone();
        let nv = model.nv;
        self.sim.clear_warm_start();
        self.sim.prepare(state, &vec![0.0; nv])?;
        // M̃ = M + armature + dt·D at q (the step's stage 1 set the armature).
        let mut data = self.sim.data().clone();
        crba_from_kinematics(&model, &mut data);
        let m_tilde = data.mass_matrix.clone();
        let v_free = self.sim.free_velocity().clone();
        let problem = self.sim.problem_with_delassus().clone();
        let m = problem.m();
        let j = if m > 0 {
            self.sim.jacobian().jacobian.clone()
        } else {
            DMatrix::zeros(0, nv)
        };
        let (b, a) = (&self.passive, &self.actuated);
        let j_b = DMatrix::from_fn(m, b.len(), |r, c| j[(r, b[c])]);
        let j_a = DMatrix::from_fn(m, a.len(), |r, c| j[(r, a[c])]);
        // s = g − J v_f, then g_b = J_b M̃_bb⁻¹ h_b + J_a v⁺_a + s.
        let s = &problem.g - &j * &v_free;
        let v_a = if consistent && m > 0 {
            let touching: Vec<bool> = self
                .sim
                .contacts()
                .iter()
                .map(|c| c.distance <= TOUCHING)
                .collect();
            let v_b = DVector::from_iterator(b.len(), b.iter().map(|&k| state.v[k]));
            consistent_velocities(&j_a, &j_b, &s, &touching, v_a, &v_b)
        } else {
            v_a
        };
        let m_bb = DMatrix::from_fn(b.len(), b.len(), |r, c| m_tilde[(b[r], b[c])]);
        let m_bb = nalgebra::Cholesky::new(m_bb).ok_or(InverseError::SingularBase)?;
        let mv = &m_tilde * &v_free;
        let h_b = DVector::from_fn(b.len(), |r, _| {
            mv[b[r]]
                - a.iter()
                    .enumerate()
                    .map(|(i, &k)| m_tilde[(b[r], k)] * v_a[i])
                    .sum::<f64>()
        });
        let g_vec = &j_b * m_bb.solve(&h_b) + &j_a * &v_a + s;
        let g = &j_b * m_bb.solve(&j_b.transpose());
        let g = (&g + g.transpose()) * 0.5;
        Ok(Reduced {
            m_tilde,
            v_free,
            j,
            j_b,
            j_a,
            m_bb,
            h_b,
            v_a,
            g,
            g_vec,
            mu: problem.mu.clone(),
            nc: problem.nc(),
        })
    }

    /// `v⁺` and `τ` of the impulses `lambda`.
    fn finish(&self, r: &Reduced, lambda: DVector<f64>) -> InverseSolution {
        let nv = self.model.nv;
        let dt = self.params.dt;
        let mut v_next = DVector::zeros(nv);
        let v_b = r.m_bb.solve(&(&r.h_b + r.j_b.tr_mul(&lambda)));
        for (i, &k) in self.passive.iter().enumerate() {
            v_next[k] = v_b[i];
        }
        for (i, &k) in self.actuated.iter().enumerate() {
            v_next[k] = r.v_a[i];
        }
        let force = &r.m_tilde * (&v_next - &r.v_free) - r.j.tr_mul(&lambda);
        let mut tau = DVector::zeros(nv);
        for &k in &self.actuated {
            tau[k] = force[k] / dt;
        }
        InverseSolution {
            tau,
            lambda,
            v_next,
            ..Default::default()
        }
    }

    /// Rows of the unilateral blocks: each contact's normal, each limit row.
    fn unilateral_rows(r: &Reduced) -> Vec<usize> {
        let m = r.g.nrows();
        (0..r.nc).map(|i| 3 * i + 2).chain(3 * r.nc..m).collect()
    }

    /// §3: the QP of infinite friction, then the least torques over its
    /// solution set.
    fn no_slip(&self, r: &Reduced, s: &InverseSettings) -> Result<InverseSolution, InverseError> {
        let m = r.g.nrows();
        if m == 0 {
            return Ok(self.finish(r, DVector::zeros(0)));
        }
        let rows = Self::unilateral_rows(r);
        // Stage I, then again without the contacts it finds breaking (a
        // positive normal velocity): c_T = 0 holds at every contact of
        // the QP, so a breaking one could carry a tangential impulse
        // without a normal one (and the least-torque set below, which
        // zeroes breaking blocks, would be empty). Until the breaking set
        // stops growing (it only grows; at most nc rounds).
        let scale = 1e-9 * r.g_vec.amax().max(1.0);
        let mut breaking: Vec<usize> = Vec::new();
        let mut iterations = 0;
        let lambda = loop {
            let nz = breaking.len();
            let mut a = DMatrix::zeros(nz + rows.len(), m);
            for (k, &row) in breaking.iter().enumerate() {
                a[(k, row)] = 1.0;
            }
            for (k, &row) in rows.iter().enumerate() {
                a[(nz + k, row)] = -1.0;
            }
            let mut cones = vec![SupportedConeT::ZeroConeT(nz)];
            cones.push(SupportedConeT::NonnegativeConeT(rows.len()));
            if nz == 0 {
                cones.remove(0);
            }
            let (lambda, its) = qp(
                "no-slip stage I",
                &regularized(&r.g, s.regularization),
                &r.g_vec,
                &a,
                &DVector::zeros(nz + rows.len()),
                &cones,
            )?;
            iterations += its;
            let c = &r.g * &lambda + &r.g_vec;
            let now: Vec<usize> = (0..r.nc)
                .filter(|&i| c[3 * i + 2] > scale || breaking.contains(&(3 * i + 2)))
                .flat_map(|i| 3 * i..3 * i + 3)
                .chain((3 * r.nc..m).filter(|&k| c[k] > scale || breaking.contains(&k)))
                .collect();
            if now.len() == breaking.len() {
                break lambda;
            }
            breaking = now;
        };
        let (lambda, more, skipped) = self.least_torques(r, &lambda, &breaking, None, s, false)?;
        let mut out = self.finish(r, lambda);
        out.iterations = iterations + more;
        out.second_stage_skipped = skipped;
        let c = &r.g * &out.lambda + &r.g_vec;
        out.residual = (0..r.nc)
            .flat_map(|i| {
                let (ln, cn) = (out.lambda[3 * i + 2], c[3 * i + 2]);
                [
                    c[3 * i].abs(),
                    c[3 * i + 1].abs(),
                    -ln,
                    -cn,
                    (ln * cn).abs(),
                ]
            })
            .chain(
                (3 * r.nc..m).flat_map(|k| [-out.lambda[k], -c[k], (out.lambda[k] * c[k]).abs()]),
            )
            .fold(0.0, f64::max);
        Ok(out)
    }

    /// The second stage: over the impulses with the same `J_bᵀλ` as
    /// `lambda` (the same `c` and `v⁺`), zero on the `zero` rows, in the
    /// cones (`socp`: friction cones; else normals nonnegative), the ones of
    /// the least `½‖dt (τ − τ_prev)‖² + ε‖λ‖²`. Where the QP solver
    /// declares that set empty (stage I's impulses sit on it only to the
    /// first QP's tolerance, and a degenerate set can be judged infeasible
    /// at the second's), stage I's impulses are kept: returns
    /// `(λ, iterations, skipped)`.
    fn least_torques(
        &self,
        r: &Reduced,
        lambda: &DVector<f64>,
        zero: &[usize],
        previous: Option<&DVector<f64>>,
        s: &InverseSettings,
        socp: bool,
    ) -> Result<(DVector<f64>, usize, bool), InverseError> {
        let m = r.g.nrows();
        let dt = self.params.dt;
        // dt τ(λ) = f₀ − J_aᵀλ on the actuated dofs.
        let base = self.finish(r, DVector::zeros(m));
        let mut f0 = DVector::from_iterator(
            self.actuated.len(),
            self.actuated.iter().map(|&k| dt * base.tau[k]),
        );
        if let Some(p) = previous {
            for (i, &k) in self.actuated.iter().enumerate() {
                f0[i] -= dt * p[k];
            }
        }
        let mut p = &r.j_a * r.j_a.transpose();
        let eps = s.regularization * p.diagonal().amax().max(1e-12);
        for k in 0..m {
            p[(k, k)] += eps;
        }
        let q = -(&r.j_a * &f0);
        // Equalities: U_rᵀλ = U_rᵀλ* for the range of J_b (full row rank),
        // and the zero rows.
        let svd = r.j_b.clone().svd(true, false);
        let u = svd.u.expect("asked for");
        let smax = svd.singular_values.amax();
        let range: Vec<usize> = (0..svd.singular_values.len())
            .filter(|&k| svd.singular_values[k] > 1e-9 * smax.max(1e-300))
            .collect();
        let neq = range.len() + zero.len();
        let (cones_rows, cones) = if socp {
            let mut cones = Vec::new();
            for _ in 0..r.nc {
                cones.push(SupportedConeT::SecondOrderConeT(3));
            }
            if m > 3 * r.nc {
                cones.push(SupportedConeT::NonnegativeConeT(m - 3 * r.nc));
            }
            (m, cones)
        } else {
            let n = Self::unilateral_rows(r).len();
            (n, vec![SupportedConeT::NonnegativeConeT(n)])
        };
        // Stage I's impulses meet its cones to its tolerance only: put them
        // in (normals ≥ 0, the zero rows zero) so that the set holds them
        // exactly, as an interior-point solver needs of a set this thin.
        let mut inside = lambda.clone();
        if !socp {
            for k in Self::unilateral_rows(r) {
                inside[k] = inside[k].max(0.0);
            }
        }
        for &k in zero {
            inside[k] = 0.0;
        }
        let mut a = DMatrix::zeros(neq + cones_rows, m);
        let mut b = DVector::zeros(neq + cones_rows);
        for (row, &k) in range.iter().enumerate() {
            let uk = u.column(k);
            for c in 0..m {
                a[(row, c)] = uk[c];
            }
            b[row] = uk.dot(&inside);
        }
        for (i, &k) in zero.iter().enumerate() {
            a[(range.len() + i, k)] = 1.0;
        }
        cone_rows(r, socp, &mut a, neq);
        let mut all = vec![SupportedConeT::ZeroConeT(neq)];
        all.extend(cones);
        if neq == 0 {
            all.remove(0);
        }
        let (mut x, iterations) = match qp("second stage", &p, &q, &a, &b, &all) {
            Ok(x) => x,
            Err(InverseError::Qp { .. }) => return Ok((inside, 0, true)),
            Err(e) => return Err(e),
        };
        // Back onto the equalities exactly (the QP's are met to its tolerance).
        let a_eq = a.rows(0, neq).into_owned();
        if neq > 0 {
            let defect = b.rows(0, neq) - &a_eq * &x;
            let aat = &a_eq * a_eq.transpose();
            if let Some(ch) = nalgebra::Cholesky::new(aat) {
                x += a_eq.tr_mul(&ch.solve(&defect));
            }
        }
        Ok((x, iterations, false))
    }

    /// §4: the Stewart–Trinkle LCP on the settings' pyramid, by Lemke.
    fn coulomb(&self, r: &Reduced, s: &InverseSettings) -> Result<InverseSolution, InverseError> {
        let m = r.g.nrows();
        if m == 0 {
            return Ok(self.finish(r, DVector::zeros(0)));
        }
        let (nc, nl) = (r.nc, m - 3 * r.nc);
        let facets = self.params.solver_settings.pyramid_facets.max(3);
        // The polygon's vertices: unit directions at the half-facet angles,
        // at radius μλ_N / cos(π/F) (inradius μλ_N, as the LCP solvers').
        let half = std::f64::consts::PI / facets as f64;
        let dirs: Vec<[f64; 2]> = (0..facets)
            .map(|k| {
                let t = (2 * k + 1) as f64 * half;
                [t.cos(), t.sin()]
            })
            .collect();
        // z = [λ_N (nc), β (F·nc), γ (nc), λ_limits (nl)], λ = B z.
        let nz = nc * (facets + 2) + nl;
        let (beta0, gamma0, limit0) = (nc, nc + facets * nc, nc * (facets + 2));
        let mut bmat = DMatrix::zeros(m, nz);
        for i in 0..nc {
            bmat[(3 * i + 2, i)] = 1.0;
            for (k, d) in dirs.iter().enumerate() {
                bmat[(3 * i, beta0 + facets * i + k)] = d[0];
                bmat[(3 * i + 1, beta0 + facets * i + k)] = d[1];
            }
        }
        for l in 0..nl {
            bmat[(3 * nc + l, limit0 + l)] = 1.0;
        }
        // (G regularized as in the QPs: desired accelerations consistent
        // with redundant contacts only to rounding make the LCP infeasible.)
        let mut mm = bmat.tr_mul(&(regularized(&r.g, s.regularization) * &bmat));
        let q = bmat.tr_mul(&r.g_vec);
        for i in 0..nc {
            let mu_v = r.mu[i] / half.cos();
            mm[(gamma0 + i, i)] = mu_v;
            for k in 0..facets {
                let b = beta0 + facets * i + k;
                mm[(b, gamma0 + i)] = 1.0;
                mm[(gamma0 + i, b)] = -1.0;
            }
        }
        let sol = lemke(&mm, &q, &LemkeSettings::for_size(nz))?;
        let z = polish_lcp(&mm, &q, &sol.z);
        let w = &mm * &z + &q;
        let residual = z
            .iter()
            .zip(w.iter())
            .map(|(&z, &w)| (-z).max(-w).max((z * w).abs()))
            .fold(0.0, f64::max);
        let mut out = self.finish(r, &bmat * &z);
        out.iterations = sol.pivots;
        out.residual = residual;
        Ok(out)
    }

    /// §5: the convex stage I (second-order cones), then the torques nearest
    /// the previous ones over its solution set.
    fn two_stage(&self, r: &Reduced, s: &InverseSettings) -> Result<InverseSolution, InverseError> {
        let m = r.g.nrows();
        if m == 0 {
            return Ok(self.finish(r, DVector::zeros(0)));
        }
        let mut a = DMatrix::zeros(m, m);
        let mut cones = vec![SupportedConeT::SecondOrderConeT(3); r.nc];
        if m > 3 * r.nc {
            cones.push(SupportedConeT::NonnegativeConeT(m - 3 * r.nc));
        }
        cone_rows(r, true, &mut a, 0);
        let (lambda, iterations) = qp(
            "two-stage stage I",
            &regularized(&r.g, s.regularization),
            &r.g_vec,
            &a,
            &DVector::zeros(m),
            &cones,
        )?;
        let zero = vec![0.0; self.model.nv];
        let previous = s
            .previous_tau
            .clone()
            .unwrap_or_else(|| DVector::from_vec(zero));
        let (lambda, more, skipped) =
            self.least_torques(r, &lambda, &[], Some(&previous), s, true)?;
        let mut out = self.finish(r, lambda);
        out.iterations = iterations + more;
        out.second_stage_skipped = skipped;
        out.residual = (0..r.nc)
            .map(|i| {
                let l = &out.lambda;
                l[3 * i].hypot(l[3 * i + 1]) - r.mu[i] * l[3 * i + 2]
            })
            .fold(0.0, f64::max);
        Ok(out)
    }

    /// The NCP through the step: Gauss–Newton on `v⁺_a(τ) − v⁺_a*` from
    /// the no-slip torques in `out`.
    fn newton(
        &mut self,
        state: &State,
        r: &Reduced,
        s: &InverseSettings,
        out: &mut InverseSolution,
    ) -> Result<(), InverseError> {
        let na = self.actuated.len();
        let mut tau = out.tau.clone();
        let mut best = f64::INFINITY;
        out.iterations = 0;
        for it in 0..=s.max_iterations {
            let mut sim = Simulator::new(self.model.clone(), self.params)?;
            let mut next = state.clone();
            sim.step_with_jacobians(&mut next, tau.as_slice(), &mut self.jacobians)?;
            let res = DVector::from_iterator(
                na,
                self.actuated
                    .iter()
                    .enumerate()
                    .map(|(i, &k)| next.v[k] - r.v_a[i]),
            );
            let norm = res.amax();
            if norm < best {
                best = norm;
                out.tau.copy_from(&tau);
                out.v_next.copy_from(&next.v);
                out.lambda = sim.solution().lambda.clone();
            }
            out.iterations = it;
            if norm <= s.tolerance || it == s.max_iterations {
                break;
            }
            let jac = DMatrix::from_fn(na, na, |i, c| {
                self.jacobians.dv_dtau[(self.actuated[i], self.actuated[c])]
            });
            let mut jtj = jac.tr_mul(&jac);
            let eps = 1e-12 * jtj.diagonal().amax().max(1e-300);
            for k in 0..na {
                jtj[(k, k)] += eps;
            }
            let Some(ch) = nalgebra::Cholesky::new(jtj) else {
                break;
            };
            let step = ch.solve(&jac.tr_mul(&res));
            for (i, &k) in self.actuated.iter().enumerate() {
                tau[k] -= step[i];
            }
        }
        out.residual = best;
        Ok(())
    }
}

/// Writes into `a` from row `first` the cone rows `s = −Kλ` of Clarabel's
/// `Aλ + s = b, s ∈ K`: per contact `(μλ_N, λ_t1, λ_t2)` (second-order
/// cone) or `λ_N` (nonnegative), then the limit rows `λ_l ≥ 0`.
fn cone_rows(r: &Reduced, socp: bool, a: &mut DMatrix<f64>, first: usize) {
    let m = r.g.nrows();
    let mut row = first;
    for i in 0..r.nc {
        if socp {
            a[(row, 3 * i + 2)] = -r.mu[i];
            a[(row + 1, 3 * i)] = -1.0;
            a[(row + 2, 3 * i + 1)] = -1.0;
            row += 3;
        } else {
            a[(row, 3 * i + 2)] = -1.0;
            row += 1;
        }
    }
    for k in 3 * r.nc..m {
        a[(row, k)] = -1.0;
        row += 1;
    }
}

/// Lemke's answer `z` refined on its basis: the variables it left positive
/// solve `(Mz + q)_B = 0` (least squares, `M_BB` may be singular), the
/// others stay zero; kept if the LCP's residual drops (the tableau's
/// explicit inverse loses digits over many pivots).
fn polish_lcp(m: &DMatrix<f64>, q: &DVector<f64>, z: &DVector<f64>) -> DVector<f64> {
    let zmax = z.amax().max(1e-300);
    let basis: Vec<usize> = (0..z.len()).filter(|&i| z[i] > 1e-12 * zmax).collect();
    let residual = |z: &DVector<f64>| {
        let w = m * z + q;
        z.iter()
            .zip(w.iter())
            .map(|(&z, &w)| (-z).max(-w).max((z * w).abs()))
            .fold(0.0, f64::max)
    };
    if basis.is_empty() {
        return z.clone();
    }
    let mbb = DMatrix::from_fn(basis.len(), basis.len(), |r, c| m[(basis[r], basis[c])]);
    let rhs = DVector::from_fn(basis.len(), |r, _| -q[basis[r]]);
    let Ok(x) = mbb.svd(true, true).solve(&rhs, 1e-13) else {
        return z.clone();
    };
    let mut polished = DVector::zeros(z.len());
    for (k, &i) in basis.iter().enumerate() {
        polished[i] = x[k];
    }
    if residual(&polished) < residual(z) {
        polished
    } else {
        z.clone()
    }
}

/// `G + εI`, `ε` relative to `G`'s largest diagonal entry: with redundant
/// contacts `G` is singular, and desired accelerations consistent with
/// the contacts only to rounding make the exact QP unbounded along its
/// null space; regularized, it answers the least-squares compromise
/// (its contact-velocity residual reported).
fn regularized(g: &DMatrix<f64>, eps: f64) -> DMatrix<f64> {
    let mut p = g.clone();
    let e = eps * g.diagonal().amax().max(1e-300);
    for k in 0..p.nrows() {
        p[(k, k)] += e;
    }
    p
}

/// The numerical rank of `a` (singular values above `tol` of the largest).
fn rank(a: &DMatrix<f64>, tol: f64) -> usize {
    if a.is_empty() {
        return 0;
    }
    let s = a.singular_values();
    let max = s.amax();
    s.iter().filter(|&&x| x > tol * max.max(1e-300)).count()
}

/// A dense matrix in Clarabel's compressed columns (its upper triangle
/// when `upper`).
fn csc(a: &DMatrix<f64>, upper: bool) -> CscMatrix<f64> {
    let (mut colptr, mut rowval, mut nzval) = (vec![0], Vec::new(), Vec::new());
    for c in 0..a.ncols() {
        for r in 0..a.nrows() {
            if (!upper || r <= c) && a[(r, c)] != 0.0 {
                rowval.push(r);
                nzval.push(a[(r, c)]);
            }
        }
        colptr.push(rowval.len());
    }
    CscMatrix::new(a.nrows(), a.ncols(), colptr, rowval, nzval)
}

/// `min ½xᵀPx + qᵀx` s.t. `Ax + s = b, s ∈ cones`, by Clarabel at tight
/// tolerances: the solution and the iterations.
fn qp(
    stage: &'static str,
    p: &DMatrix<f64>,
    q: &DVector<f64>,
    a: &DMatrix<f64>,
    b: &DVector<f64>,
    cones: &[SupportedConeT<f64>],
) -> Result<(DVector<f64>, usize), InverseError> {
    let settings = DefaultSettingsBuilder::default()
        .verbose(false)
        .tol_gap_abs(1e-12)
        .tol_gap_rel(1e-12)
        .tol_feas(1e-12)
        .tol_ktratio(1e-10)
        .max_iter(400)
        .build()
        .map_err(|e| InverseError::Qp {
            stage,
            status: e.to_string(),
        })?;
    let mut solver = DefaultSolver::new(
        &csc(p, true),
        q.as_slice(),
        &csc(a, false),
        b.as_slice(),
        cones,
        settings,
    )
    .map_err(|e| InverseError::Qp {
        stage,
        status: e.to_string(),
    })?;
    solver.solve();
    match solver.solution.status {
        SolverStatus::DualInfeasible | SolverStatus::AlmostDualInfeasible => {
            Err(InverseError::Unrealizable { stage })
        }
        SolverStatus::Solved | SolverStatus::AlmostSolved => Ok((
            DVector::from_column_slice(&solver.solution.x),
            solver.solution.iterations as usize,
        )),
        status => Err(InverseError::Qp {
            stage,
            status: format!("{status:?}"),
        }),
    }
}
