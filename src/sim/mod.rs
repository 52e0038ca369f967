//! One world, one step: the six stages of the velocity-level time stepping,
//! in order, each timed.
//!
//! ```text
//! 1. free dynamics   τ = τ_applied + actuators(ctrl, q, v) − D v,
//!                    v_f = v + dt · M̃⁻¹(τ − b(q, v)) by ABA, M̃ = M + dt·D
//! 2. collision       contacts at q (broad + narrow phase), active joint limits
//! 3. delassus        CRBA, M̃ = LᵀDL, J, G = J M̃⁻¹ Jᵀ, g = J v_f + stabilization
//! 4. solve           λ from the constraint problem, warm-started by identity
//! 5. velocity update v⁺ = v_f + M̃⁻¹ Jᵀ λ
//! 6. integrate       q⁺ = q ⊕ v⁺ dt
//! ```
//!
//! `M` includes the joints' armature; joint springs `−k (q − q_ref)` and
//! the fluid's drag ([`crate::dynamics::fluid_forces`]) are explicit forces. Joint damping `D` (diagonal,
//! `Model::dof_damping`) is integrated implicitly, as MuJoCo's Euler
//! integrator does: `(M + dt·D) v_f = M v + dt (τ − b)` with `τ` free of the
//! damping force, i.e. `M (v_f − v) = dt (τ − b − D v_f)`; it is unconditionally
//! stable however stiff the damping. The constraint impulses see the same
//! `M̃ = M + dt·D`, so the whole step is implicit in the damping:
//! `M (v⁺ − v) = dt (τ − b − D v⁺) + Jᵀλ`.
//!
//! Joint limits: a one-dof joint with a range whose position is within
//! `SimParams::limit_margin` of a stop, or would cross it in this step at
//! the free velocity, gets a unilateral row `λ ≥ 0 ⟂ c ≥ 0` with
//! `c = ±q̇` after the contact rows of the problem (see
//! [`crate::contact::ContactProblem`]), with the contacts' speculative and
//! Baumgarte terms on its distance to the stop (and no restitution: a stop
//! is inelastic). After the limits come the other one-dimensional rows
//! ([`rows`]): equality constraints (bilateral), dry friction on dofs and
//! tendons (boxes `|λ| ≤ f·dt`), tendon limits and ball joints' cone
//! limits (unilateral), each with
//! its set in `ContactProblem::row_sets`; fixed tendons' springs are
//! explicit forces.
//!
//! Stabilization in `g` (normal component of contact `i`, signed distance `φ`,
//! pre-step normal velocity `v⁻_N = J_N v`):
//! - gap `φ ≥ 0` (speculative contact within the margin): `g_N += φ/dt`, so the
//!   surfaces may close the gap in this step but not cross it;
//! - penetration `φ < 0` (Baumgarte): `g_N += β φ/dt`, pushing out a fraction
//!   `β` of the penetration per step;
//! - restitution `e > 0` on an impact (`v⁻_N < −v_bounce` and the gap closes
//!   this step, `φ + v⁻_N dt ≤ 0`): `g_N += e·v⁻_N + β min(φ, 0)/dt` instead,
//!   so that the post-step normal velocity obeys `J_N v⁺ ≥ −e v⁻_N − β min(φ, 0)/dt`
//!   (Newton's impact law; the remaining gap is ignored).

use crate::collision::{CollisionDetector, Contact, ContactKey};
use crate::contact::{
    ContactJacobian, ContactProblem, ContactSolution, ContactSolver, JointLimitRow, LimitSide,
    RowSet, SolverKind, TreeDelassus, TreeWork, constraint_jacobian, delassus_ltdl_coupled,
};
use crate::contact::{CouplingWork, SolverStats};
use crate::dynamics::{
    Data, aba_from_kinematics, crba_from_kinematics, fluid_forces, forward_kinematics,
    forward_velocity, integrate, kinetic_energy, ltdl_factorize, ltdl_solve_in_place,
    potential_energy,
};
use crate::error::SimError;
use crate::math::{SE3, Vec3};
use crate::model::{JointType, Model};
use nalgebra::DVector;
use rustc_hash::FxHashMap;
use std::sync::Arc;

pub use crate::counters::{Stage, StageTimes};

mod actuators;
mod checks;
mod gradients;
pub mod kinks;
mod params;
mod penetration;
pub mod rows;
mod screen;
mod sensors;
mod snapshot;
mod state;
mod trajectory;
pub use actuators::{Actuation, actuator_forces, next_activations};
pub use checks::{check_rows, check_state, check_vec};
pub(crate) use gradients::check_differentiable;
pub use gradients::{Q_EXACT_RESIDUAL, StepJacobians, StepVjp, step_jacobians_by_differences};
pub use kinks::{KINK_REACH, QSide};
pub use params::{
    DEFAULT_MOCAP_COMPLIANCE, DelassusPath, OVERLAP_COMPLIANCE, PENETRATION_COMPLIANCE_DEPTH,
    PENETRATION_COMPLIANCE_ONSET, SimParams, TREE_ROWS_PER_DOF,
};
pub use snapshot::{Snapshot, WarmStart, snapshots_from_bytes, snapshots_to_bytes};
pub use state::{State, WorldContact};
use std::time::Instant;
pub use trajectory::{Trajectory, TrajectoryError, TrajectoryRow};

/// What one step did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepReport {
    /// Number of contacts.
    pub nc: usize,
    /// Number of one-dimensional rows after the contacts': the active
    /// joint limits, then the [`rows::ExtraRows`] (equalities, dry
    /// friction, tendon limits).
    pub nl: usize,
    /// Solver stats (`None` when there was no contact).
    pub solver: Option<crate::contact::SolverStats>,
    pub times: StageTimes,
    /// Open contacts set aside and left out of the step's problem
    /// ([`SimParams::screen_contacts`]), and those taken back after a solve
    /// (each time, the problem was solved again).
    pub set_aside: usize,
    pub taken_back: usize,
}

/// A single-world simulator. Owns its workspaces; `step` does not allocate
/// once the contact buffers have grown to the largest contact count seen.
pub struct Simulator {
    model: Arc<Model>,
    pub params: SimParams,
    data: Data,
    collision: CollisionDetector,
    contacts: Vec<Contact>,
    /// The active joint limits of the step, rows `3·nc..` of the problem.
    limits: Vec<JointLimitRow>,
    /// Previous step's limit impulses, `2·body + side` (NaN: none).
    limit_warm: Vec<f64>,
    /// The rows after the limits (equalities, dry friction, tendon limits).
    rows: rows::ExtraRows,
    /// Previous step's impulses of those rows by [`rows::RowKind::slot`] (NaN: none).
    row_warm: Vec<f64>,
    jacobian: ContactJacobian,
    problem: ContactProblem,
    solution: ContactSolution,
    solver: Box<dyn ContactSolver>,
    solver_kind: SolverKind,
    /// Previous step's impulses by contact identity, in world coordinates
    /// (robust to a change of tangent basis).
    warm: FxHashMap<ContactKey, Vec3>,
    /// Previous step's impulses of the contacts' cone rows (spin and
    /// rolling, scaled as their rows are) by contact identity: `Σ_r λ_r a_r`
    /// over their unit axes `a_r` (`n`, `t1`, `t2`) in world coordinates.
    spin_warm: FxHashMap<ContactKey, Vec3>,
    last_rho: Option<f64>,
    /// The generalized forces of the step (applied, actuators, springs,
    /// explicit part of the damping).
    tau: DVector<f64>,
    v_free: DVector<f64>,
    v_next: DVector<f64>,
    q_next: DVector<f64>,
    /// The activations at the end of the prepared step (na), when it runs
    /// under controls (`act_pending`); under torques they stay as they are.
    act_next: DVector<f64>,
    act_pending: bool,
    /// The tendons' Jacobian entries while their forces are summed.
    tendon_scratch: Vec<(usize, f64)>,
    scratch: DVector<f64>,
    scratch_rows: Vec<f64>,
    tree_work: TreeWork,
    coupling_work: CouplingWork,
    /// Set by [`Self::prepare`], consumed by [`Self::finish`]: the stage
    /// times so far.
    prepared: Option<StageTimes>,
    /// The prepared problem's `G` is left to the solver as its factors
    /// (`problem.delassus` is then empty).
    tree: bool,
    /// Cumulated stage times since creation (or `reset_timers`).
    pub times: StageTimes,
    /// The last step, for the sensors that read it, and their workspace.
    last_step: sensors::LastStep,
    sensor_data: Option<Box<Data>>,
    /// Each mocap body's pose in this world ([`Model::mocap`]), and its
    /// displacement from the file's pose (`pose · file_pose⁻¹`), which
    /// carries the `connect`s and `weld`s that name it.
    mocap: Vec<SE3>,
    mocap_shift: Vec<SE3>,
    /// The contacts set aside by [`SimParams::screen_contacts`] this step
    /// (`screen.rs`) and the bodies' velocities it uses, and whether the
    /// step keeps every contact (it is differentiated).
    screened: Vec<Contact>,
    taken_back: usize,
    screen_body_v: Vec<crate::math::Vec6>,
    keep_all_contacts: bool,
}

/// Whether `pose` is finite and its rotation a rotation matrix (to 1e-9).
pub(crate) fn is_pose(pose: &SE3) -> bool {
    let r = &pose.rotation;
    pose.translation
        .iter()
        .chain(r.iter())
        .all(|x| x.is_finite())
        && (r.transpose() * r - crate::math::Mat3::identity()).amax() <= 1e-9
        && r.determinant() > 0.0
}

impl Simulator {
    pub fn new(model: Arc<Model>, params: SimParams) -> Result<Self, SimError> {
        params.validate()?;
        let (nq, nv) = (model.nq, model.nv);
        Ok(Simulator {
            data: Data::new(&model),
            collision: CollisionDetector::new(&model, params.contact_margin),
            contacts: Vec::new(),
            limits: Vec::new(),
            limit_warm: vec![f64::NAN; 2 * model.nbodies],
            rows: rows::ExtraRows::default(),
            row_warm: vec![f64::NAN; rows::RowKind::slots(&model)],
            jacobian: ContactJacobian::default(),
            problem: ContactProblem::default(),
            solution: ContactSolution::default(),
            solver: params.solver.build(),
            solver_kind: params.solver,
            warm: FxHashMap::default(),
            spin_warm: FxHashMap::default(),
            last_rho: None,
            tau: DVector::zeros(nv),
            v_free: DVector::zeros(nv),
            v_next: DVector::zeros(nv),
            q_next: DVector::zeros(nq),
            act_next: DVector::zeros(model.na()),
            act_pending: false,
            tendon_scratch: Vec::new(),
            scratch: DVector::zeros(nv),
            prepared: None,
            tree: false,
            scratch_rows: Vec::new(),
            tree_work: TreeWork::default(),
            coupling_work: CouplingWork::default(),
            times: StageTimes::default(),
            last_step: Default::default(),
            sensor_data: None,
            mocap: model.mocap.iter().map(|m| m.pose).collect(),
            mocap_shift: vec![SE3::identity(); model.mocap.len()],
            screened: Vec::new(),
            taken_back: 0,
            screen_body_v: Vec::new(),
            keep_all_contacts: false,
            params,
            model,
        })
    }

    /// Each mocap body's pose in this world ([`Model::mocap`], in its
    /// order): the file's until set.
    pub fn mocap_poses(&self) -> &[SE3] {
        &self.mocap
    }

    /// Sets mocap body `i`'s pose in this world from the next step on
    /// (MuJoCo's `mocap_pos` and `mocap_quat`): the `connect`s and `weld`s
    /// that name it pull their other bodies towards it, at the recovery
    /// rate of any violated equality ([`SimParams::recovery`]). A pose that
    /// is not finite, or an index past [`Model::mocap`], is refused and
    /// nothing changes.
    pub fn set_mocap_pose(&mut self, i: usize, pose: SE3) -> Result<(), SimError> {
        let n = self.model.mocap.len();
        if i >= n {
            return Err(SimError::InvalidParameter {
                name: "mocap",
                reason: format!("mocap body {i} of a model with {n}"),
            });
        }
        if !is_pose(&pose) {
            return Err(SimError::InvalidParameter {
                name: "mocap",
                reason: format!(
                    "the pose of mocap body `{}` must be finite with a rotation matrix",
                    self.model.mocap[i].name
                ),
            });
        }
        self.mocap[i] = pose;
        self.mocap_shift[i] = pose.mul(&self.model.mocap[i].pose.inverse());
        Ok(())
    }

    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }
    pub fn data(&self) -> &Data {
        &self.data
    }
    /// Contacts of the last step.
    pub fn contacts(&self) -> &[Contact] {
        &self.contacts
    }
    /// The last step's contact forces on the geometries they touch,
    /// `(geometry, world point, world force)`: two per contact, equal and
    /// opposite (the impulse over `dt`; on `geom_a` along the normal).
    pub fn contact_forces(&self) -> impl Iterator<Item = (usize, Vec3, Vec3)> + '_ {
        let dt = self.params.dt;
        self.solved_contacts().flat_map(move |c| {
            let f = c.impulse / dt;
            [(c.geom_a, c.point, f), (c.geom_b, c.point, -f)]
        })
    }
    /// Active joint limits of the last step: the problem's rows after the
    /// contacts', in this order.
    pub fn limits(&self) -> &[JointLimitRow] {
        &self.limits
    }

    /// The rows of the last step after the limits (equalities, dry
    /// friction, tendon limits): the problem's last rows.
    pub fn extra_rows(&self) -> &rows::ExtraRows {
        &self.rows
    }
    /// Contact problem of the last step (G, g, μ, warm start). After a step
    /// that took the tree path ([`Self::tree_path`]) its `delassus` is
    /// empty (0 × 0): [`Self::problem_with_delassus`] forms it.
    pub fn problem(&self) -> &ContactProblem {
        &self.problem
    }

    /// The constraint Jacobian of the last prepared step (contacts, then limits).
    pub fn jacobian(&self) -> &ContactJacobian {
        &self.jacobian
    }

    /// Whether the last step's solver got `G` as its factors
    /// ([`DelassusPath`]) rather than dense.
    pub fn tree_path(&self) -> bool {
        self.tree
    }

    /// The last step's problem with its dense `G`, formed now if the step
    /// took the tree path (for dumps, solver comparisons, the criteria).
    pub fn problem_with_delassus(&mut self) -> &ContactProblem {
        let m = self.problem.m();
        if self.tree && self.problem.delassus.shape() != (m, m) {
            let (model, data, p) = (&*self.model, &self.data, &mut self.problem);
            let jac = &self.jacobian;
            p.coupling.from_supports(
                jac.nblocks(),
                model.nv,
                &jac.support,
                &jac.offsets,
                &mut self.coupling_work,
            );
            delassus_ltdl_coupled(
                model,
                data,
                &mut self.jacobian,
                &p.coupling,
                &mut p.delassus,
            );
        }
        &self.problem
    }
    /// The free velocity `v_f` of the step prepared or taken last (the
    /// velocity without contact impulses).
    pub fn free_velocity(&self) -> &DVector<f64> {
        &self.v_free
    }
    /// Solution of the last step's contact problem.
    pub fn solution(&self) -> &ContactSolution {
        &self.solution
    }
    /// The initial ρ this simulator's next ADMM solve starts from: the
    /// settings' if they fix one, else (with warm starts) the last solve's.
    pub fn warm_rho(&self) -> Option<f64> {
        match self.params.solver_settings.rho {
            Some(r) => Some(r),
            None if self.params.warm_start => self.last_rho,
            None => None,
        }
    }
    /// Drops the warm-start memory (e.g. after teleporting the state).
    pub fn clear_warm_start(&mut self) {
        self.warm.clear();
        self.spin_warm.clear();
        self.limit_warm.fill(f64::NAN);
        self.row_warm.fill(f64::NAN);
        self.last_rho = None;
        self.solver.forget_kept();
    }
    pub fn reset_timers(&mut self) {
        self.times = StageTimes::default();
    }

    /// Refuses a state of the wrong size, with a non-finite value or a
    /// quaternion of norm near zero.
    pub fn check_state(&self, state: &State) -> Result<(), SimError> {
        check_state(&self.model, state)
    }

    /// Kinetic and potential energy of `state` (uses the simulator's
    /// workspace). Refuses a state of the wrong size, with a non-finite
    /// value or a quaternion of norm near zero (so it validates a state).
    pub fn energy(&mut self, state: &State) -> Result<(f64, f64), SimError> {
        self.check_state(state)?;
        forward_kinematics(&self.model, &mut self.data, state.q.as_slice());
        forward_velocity(&self.model, &mut self.data, state.v.as_slice());
        Ok((
            kinetic_energy(&self.model, &self.data),
            potential_energy(&self.model, &self.data),
        ))
    }

    /// Advances `state` by one time step under joint torques `tau` (nv).
    /// On error the state is left untouched (and the warm-start memory is
    /// dropped rather than filled from a failed step). `params` may be changed
    /// between steps; they are validated here.
    ///
    /// A step is [`Self::prepare`] (stages 1 to 3), the contact solve with
    /// this simulator's solver, and [`Self::finish`] (stages 5 and 6); a batch
    /// of worlds calls the three itself to solve all its problems at once.
    pub fn step(&mut self, state: &mut State, tau: &[f64]) -> Result<StepReport, SimError> {
        self.step_with(state, Actuation::Torques(tau))
    }

    /// Advances `state` by one time step under the actuators' controls
    /// `ctrl` (nu); see [`actuator_forces`]. Otherwise like [`Self::step`].
    pub fn step_controls(
        &mut self,
        state: &mut State,
        ctrl: &[f64],
    ) -> Result<StepReport, SimError> {
        self.step_with(state, Actuation::Controls(ctrl))
    }

    /// [`Self::step`] or [`Self::step_controls`].
    pub fn step_with(
        &mut self,
        state: &mut State,
        input: Actuation<'_>,
    ) -> Result<StepReport, SimError> {
        self.prepare_for(state, input, true)?;
        self.solve_and_finish(state)
    }

    /// After [`Self::prepare`]: solves the prepared problem with this
    /// simulator's own solver and finishes the step (the rest of [`Self::step`]).
    pub fn solve_and_finish(&mut self, state: &mut State) -> Result<StepReport, SimError> {
        if self.prepared.is_none() {
            return Err(SimError::NotPrepared);
        }
        if self.problem.m() > 0 || !self.screened.is_empty() {
            let clock = Instant::now();
            loop {
                if self.problem.m() > 0 {
                    self.solve()?;
                }
                if !self.readmit_violated(state) {
                    break;
                }
            }
            if let Some(t) = self.prepared.as_mut() {
                t.set(Stage::Solve, clock.elapsed());
            }
        }
        self.finish_step(state)
    }

    /// Stages 1 to 3 of a step at `state` under torques `tau` (nv): free
    /// dynamics, collision detection and the contact problem ([`Self::problem`],
    /// warm start included). Returns the number of contacts `nc` (the
    /// problem may also hold limit rows: [`Self::limits`]). Follow with
    /// [`Self::finish`] on the same state. Validates its inputs like
    /// [`Self::step`]; on error nothing is prepared.
    pub fn prepare(&mut self, state: &State, tau: &[f64]) -> Result<usize, SimError> {
        self.prepare_with(state, Actuation::Torques(tau))
    }

    /// [`Self::prepare`] under torques or controls.
    pub fn prepare_with(&mut self, state: &State, input: Actuation<'_>) -> Result<usize, SimError> {
        self.prepare_for(state, input, false)
    }

    /// Prepares a step whose problem this simulator's solver solves
    /// (`own_solver`: `G` may then stay factored, see [`DelassusPath`]) or
    /// that an outside solver does (dense `G`).
    fn prepare_for(
        &mut self,
        state: &State,
        input: Actuation<'_>,
        own_solver: bool,
    ) -> Result<usize, SimError> {
        self.prepared = None;
        self.last_step.forget();
        self.params.validate()?;
        if self.params.solver != self.solver_kind {
            self.solver = self.params.solver.build();
            self.solver_kind = self.params.solver;
            self.clear_warm_start();
        }
        check_state(&self.model, state)?;
        match input {
            Actuation::Torques(tau) => check_vec("tau", tau, self.model.nv)?,
            Actuation::Controls(ctrl) => check_vec("ctrl", ctrl, self.model.nu())?,
        }
        if !state.t.is_finite() {
            return Err(SimError::NonFinite {
                what: "t",
                index: 0,
                value: state.t,
            });
        }
        let mut times = StageTimes::default();
        times.time(Stage::FreeDynamics, || self.free_dynamics(state, input));
        self.screened.clear();
        self.taken_back = 0;
        times.time(Stage::Collision, || {
            self.collision()?;
            self.active_limits(state);
            if own_solver {
                self.screen_contacts();
            }
            self.gather_rows(state);
            Ok::<(), SimError>(())
        })?;
        let nc = self.contacts.len();
        let m = 3 * nc + self.limits.len() + self.rows.len();
        self.tree =
            own_solver && self.solver.solves_tree() && self.params.delassus.tree(m, self.model.nv);
        times.time(Stage::Delassus, || {
            if m > 0 {
                self.assemble_problem(state);
            } else {
                self.problem.resize(0, 0);
            }
        });
        self.prepared = Some(times);
        Ok(nc)
    }

    /// Stages 5 and 6 of a step prepared by [`Self::prepare`] at `state`,
    /// with the impulses `lambda` (`3·nc + nl`: contact frames, then the limits) of the prepared
    /// problem found by any solver (the batched GPU one) and its `stats`:
    /// `v⁺ = v_f + M̃⁻¹ Jᵀ λ`, `q⁺ = q ⊕ v⁺ dt`. Remembers `lambda` for the
    /// next warm start. A non-finite impulse is refused naming the contact,
    /// and the state is left untouched.
    pub fn finish(
        &mut self,
        state: &mut State,
        lambda: &[f64],
        stats: SolverStats,
    ) -> Result<StepReport, SimError> {
        if self.prepared.is_none() {
            return Err(SimError::NotPrepared);
        }
        let m = self.problem.m();
        if lambda.len() != m {
            return Err(SimError::DimensionMismatch {
                what: "lambda",
                got: lambda.len(),
                expected: m,
            });
        }
        self.solution.resize(m);
        self.solution.lambda.copy_from_slice(lambda);
        self.solution.stats = stats;
        if m > 0 {
            self.accept_solution()?;
            // An ADMM solve reports its final ρ: the next warm start.
            if stats.rho > 0.0 && stats.rho.is_finite() {
                self.last_rho = Some(stats.rho);
            }
        }
        self.finish_step(state)
    }

    /// Velocity update and integration after the solve (or with no contact).
    fn finish_step(&mut self, state: &mut State) -> Result<StepReport, SimError> {
        let Some(mut times) = self.prepared.take() else {
            return Err(SimError::NotPrepared);
        };
        let (nc, nl) = (self.contacts.len(), self.limits.len() + self.rows.len());
        times.time(Stage::VelocityUpdate, || {
            if nc + nl > 0 {
                self.velocity_update();
            } else {
                self.v_next.copy_from(&self.v_free);
                self.warm.clear();
                self.spin_warm.clear();
                self.limit_warm.fill(f64::NAN);
                self.row_warm.fill(f64::NAN);
            }
        });
        if let Err(e) = times.time(Stage::Integrate, || self.integrate(state)) {
            self.clear_warm_start();
            return Err(e);
        }

        self.times.accumulate(&times);
        Ok(StepReport {
            nc,
            nl,
            solver: (nc + nl > 0).then_some(self.solution.stats),
            times,
            set_aside: self.screened.len(),
            taken_back: self.taken_back,
        })
    }

    /// The rows after the contacts and the limits (equalities, dry
    /// friction, tendon limits, the contacts' cone rows) at `state`.
    fn gather_rows(&mut self, state: &State) {
        self.rows.gather(
            &self.model,
            &self.data,
            state.q.as_slice(),
            self.v_free.as_slice(),
            &self.params,
            &self.mocap_shift,
        );
        self.rows
            .gather_cones(&self.model, &self.data, &self.contacts);
    }

    /// Stage 1: kinematics at (q, v), the step's generalized forces and
    /// `v_f = v + dt·M̃⁻¹(τ − b)` by ABA on `M̃ = M + dt·D`.
    fn free_dynamics(&mut self, state: &State, input: Actuation<'_>) {
        let (model, data) = (&*self.model, &mut self.data);
        let dt = self.params.dt;
        let (q, v) = (state.q.as_slice(), state.v.as_slice());
        forward_kinematics(model, data, q);
        let act = state.act.as_slice();
        self.act_pending = false;
        match input {
            Actuation::Torques(tau) => self.tau.copy_from_slice(tau),
            Actuation::Controls(ctrl) => {
                let input = actuators::ActuatorInput::new(q, v, ctrl, act, dt);
                let (tau, scratch) = (self.tau.as_mut_slice(), &mut self.tendon_scratch);
                actuators::actuator_forces_with(model, Some(&*data), &input, tau, scratch);
                if !self.act_next.is_empty() {
                    next_activations(model, ctrl, act, dt, self.act_next.as_mut_slice());
                    self.act_pending = true;
                }
            }
        }
        for k in 0..model.nv {
            // Joint springs, explicit.
            let stiffness = model.dof_stiffness[k];
            if stiffness != 0.0 {
                let qk = q[model.joint_idx_q[model.dof_body[k]]];
                self.tau[k] -= stiffness * (qk - model.dof_springref[k]);
            }
            // Implicit damping: −D v here, D·dt in the inertia (see the module doc).
            self.tau[k] -= model.dof_damping[k] * v[k];
            data.dof_armature[k] = model.dof_armature[k] + dt * model.dof_damping[k];
        }
        rows::tendon_forces(
            model,
            data,
            q,
            v,
            self.tau.as_mut_slice(),
            &mut self.tendon_scratch,
        );
        forward_velocity(model, data, v);
        fluid_forces(model, data, v, self.tau.as_mut_slice());
        aba_from_kinematics(model, data, self.tau.as_slice());
        self.v_free.copy_from(&state.v);
        self.v_free.axpy(dt, &data.ddq, 1.0);
    }

    /// The joint limits that are active at `state` (stage 2, after the contacts).
    fn active_limits(&mut self, state: &State) {
        self.limits.clear();
        let model = &*self.model;
        let (dt, margin) = (self.params.dt, self.params.limit_margin);
        for (joint, _, (lower, upper)) in model.limited_joints() {
            if !matches!(
                model.joint_type[joint],
                JointType::Revolute(_) | JointType::Prismatic(_)
            ) {
                continue;
            }
            let dof = model.joint_idx_v[joint];
            let q = state.q[model.joint_idx_q[joint]];
            for (side, distance, sign) in [
                (LimitSide::Lower, q - lower, 1.0),
                (LimitSide::Upper, upper - q, -1.0),
            ] {
                // Close to the stop, or about to cross it at the free velocity.
                if distance < margin || distance + dt * sign * self.v_free[dof] < 0.0 {
                    self.limits.push(JointLimitRow {
                        joint,
                        dof,
                        side,
                        distance,
                    });
                }
            }
        }
    }

    /// Stage 2: contacts at q.
    fn collision(&mut self) -> Result<(), SimError> {
        self.collision.margin = self.params.contact_margin;
        self.collision
            .detect(&self.model, &self.data, &mut self.contacts)
    }

    /// Stage 3: mass matrix and its factorization, contact Jacobian, Delassus,
    /// free contact velocity with stabilization, warm start.
    fn assemble_problem(&mut self, state: &State) {
        let (model, data) = (&*self.model, &mut self.data);
        crba_from_kinematics(model, data);
        ltdl_factorize(model, data);
        constraint_jacobian(
            model,
            data,
            &self.contacts,
            &self.limits,
            &self.rows.jacobian,
            &mut self.jacobian,
        );
        let nc = self.contacts.len();
        let (nb, nl) = (self.jacobian.nblocks(), self.limits.len() + self.rows.len());
        if self.tree {
            // G stays factored: the solver gets J and M (see `solve`).
            self.problem.resize_without_delassus(nc, nl);
        } else {
            self.problem.resize(nc, nl);
        }
        if !self.rows.is_empty() {
            let p = &mut self.problem;
            p.row_sets.resize(self.limits.len(), RowSet::Unilateral);
            p.row_sets.extend(self.rows.rows.iter().map(|r| r.set));
        }
        if self.tree {
            // No `G` is formed, so no coupling until one is
            // ([`Self::problem_with_delassus`]; cleared, it reads as dense).
            self.problem.coupling.clear();
            if self.params.compliance > 0.0 {
                let t = TreeDelassus::new(model, data, &self.jacobian, &self.tree_work);
                t.block_diagonal(&mut self.scratch_rows);
                let alpha = self.params.compliance;
                for r in 0..self.problem.m() {
                    self.problem.compliance[r] =
                        alpha * t.block_entry(&self.scratch_rows, r, r).max(0.0);
                }
            }
        } else {
            // Blocks whose supports do not meet (separate bodies) are zero.
            let (p, jac) = (&mut self.problem, &self.jacobian);
            p.coupling.from_supports(
                nb,
                model.nv,
                &jac.support,
                &jac.offsets,
                &mut self.coupling_work,
            );
            delassus_ltdl_coupled(
                model,
                data,
                &mut self.jacobian,
                &p.coupling,
                &mut p.delassus,
            );
            if self.params.compliance > 0.0 {
                // Validated in `step`; cannot fail.
                let _ = self.problem.set_diagonal_compliance(self.params.compliance);
            }
        }
        let first = 3 * nc + self.limits.len();
        self.rows.regularize_mocap_rows(
            model,
            data,
            self.params.mocap_compliance,
            &mut self.problem.compliance.as_mut_slice()[first..],
            self.scratch.as_mut_slice(),
        );
        self.regularize_penetrations();
        let j = &self.jacobian.jacobian;
        let (dt, params) = (self.params.dt, self.params);
        for (i, c) in self.contacts.iter().enumerate() {
            self.problem.mu[i] = c.mu * self.params.friction_scale;
            let mut gi = [0.0; 3];
            let mut vn_before = 0.0;
            for &k in self.jacobian.contact_support(i) {
                for (r, g) in gi.iter_mut().enumerate() {
                    *g += j[(3 * i + r, k)] * self.v_free[k];
                }
                vn_before += j[(3 * i + 2, k)] * state.v[k];
            }
            let phi = c.distance;
            let impact = c.restitution > 0.0
                && vn_before < -self.params.bounce_velocity
                && phi + vn_before * dt <= 0.0;
            gi[2] += if impact {
                c.restitution * vn_before + params.recovery(phi.min(0.0))
            } else if phi >= 0.0 {
                phi / dt
            } else {
                params.recovery(phi)
            };
            for r in 0..3 {
                self.problem.g[3 * i + r] = gi[r];
            }
            if self.params.warm_start
                && let Some(lw) = self.warm.get(&c.key)
            {
                let l = c.frame.tr_mul(lw);
                for r in 0..3 {
                    self.problem.warm_start[3 * i + r] = l[r];
                }
            }
        }
        for (l, limit) in self.limits.iter().enumerate() {
            let k = 3 * nc + l;
            let d = limit.distance;
            let stabilization = if d >= 0.0 { d / dt } else { params.recovery(d) };
            self.problem.g[k] = limit.sign() * self.v_free[limit.dof] + stabilization;
            let w = self.limit_warm[2 * limit.joint + limit.side as usize];
            if self.params.warm_start && w.is_finite() {
                self.problem.warm_start[k] = w;
            }
        }
        for (r, row) in self.rows.rows.iter().enumerate() {
            let k = first + r;
            let jv: f64 = self
                .rows
                .jacobian
                .row(r)
                .map(|(dof, c)| c * self.v_free[dof])
                .sum();
            self.problem.g[k] = jv + row.stabilization;
            let w = match (row.kind.slot(&self.model), row.kind) {
                (Some(slot), _) => self.row_warm[slot],
                (None, rows::RowKind::ContactCone(i, r)) => {
                    let c = &self.contacts[i];
                    self.spin_warm
                        .get(&c.key)
                        .map_or(f64::NAN, |w| w.dot(&rows::cone_axis(&c.frame, r)))
                }
                (None, _) => f64::NAN,
            };
            if self.params.warm_start && w.is_finite() {
                self.problem.warm_start[k] = row.set.project(w);
            }
        }
    }

    /// Stage 4: the contact solve; remembers the impulses for the next warm start.
    fn solve(&mut self) -> Result<(), SimError> {
        let mut settings = self.params.solver_settings;
        settings.rho = self.warm_rho();
        // Assembled here: G's O(m²) checks are left to debug builds.
        let _trusted = crate::contact::problem::BuiltBySimulator::enter();
        let solved = if self.tree {
            let t = TreeDelassus::new(&self.model, &self.data, &self.jacobian, &self.tree_work);
            self.solver
                .solve_tree(&self.problem, &t, &settings, &mut self.solution)
        } else {
            self.solver
                .solve(&self.problem, &settings, &mut self.solution)
        };
        if let Err(e) = solved {
            self.prepared = None;
            self.clear_warm_start();
            return Err(e.into());
        }
        self.accept_solution()?;
        // (A solve that chose no ρ leaves the last one: the simulator's,
        // not the solver's, so that a restored warm start continues alike.)
        if let Some(rho) = self.solver.last_rho() {
            self.last_rho = Some(rho);
        }
        Ok(())
    }

    /// Checks the impulses of `self.solution` and remembers them for the
    /// next warm start.
    fn accept_solution(&mut self) -> Result<(), SimError> {
        if let Some(k) = self.solution.lambda.iter().position(|x| !x.is_finite()) {
            let nc = self.contacts.len();
            if k >= 3 * nc + self.limits.len() {
                let row = self.rows.rows[k - 3 * nc - self.limits.len()];
                let err = SimError::SolverDivergedOnRow {
                    solver: self.solver.name(),
                    row: row.kind.describe(&self.model),
                };
                self.prepared = None;
                self.clear_warm_start();
                return Err(err);
            }
            if k >= 3 * nc {
                let err = SimError::SolverDivergedOnLimit {
                    solver: self.solver.name(),
                    joint: self.model.joint_name[self.limits[k - 3 * nc].joint].clone(),
                };
                self.prepared = None;
                self.clear_warm_start();
                return Err(err);
            }
            let c = &self.contacts[k / 3];
            let err = SimError::SolverDiverged {
                solver: self.solver.name(),
                contact: k / 3,
                body_a: self.model.body_name[c.body_a].clone(),
                body_b: self.model.body_name[c.body_b].clone(),
            };
            self.prepared = None;
            self.clear_warm_start();
            return Err(err);
        }
        self.warm.clear();
        for (i, c) in self.contacts.iter().enumerate() {
            let l = Vec3::new(
                self.solution.lambda[3 * i],
                self.solution.lambda[3 * i + 1],
                self.solution.lambda[3 * i + 2],
            );
            self.warm.insert(c.key, c.frame * l);
        }
        self.limit_warm.fill(f64::NAN);
        let nc = self.contacts.len();
        for (l, limit) in self.limits.iter().enumerate() {
            self.limit_warm[2 * limit.joint + limit.side as usize] =
                self.solution.lambda[3 * nc + l];
        }
        self.row_warm.fill(f64::NAN);
        self.spin_warm.clear();
        let first = 3 * nc + self.limits.len();
        for (r, row) in self.rows.rows.iter().enumerate() {
            let lambda = self.solution.lambda[first + r];
            match (row.kind.slot(&self.model), row.kind) {
                (Some(slot), _) => self.row_warm[slot] = lambda,
                (None, rows::RowKind::ContactCone(i, a)) => {
                    let c = &self.contacts[i];
                    *self.spin_warm.entry(c.key).or_insert_with(Vec3::zeros) +=
                        rows::cone_axis(&c.frame, a) * lambda;
                }
                (None, _) => {}
            }
        }
        Ok(())
    }

    /// Stage 5: `v⁺ = v_f + M⁻¹ Jᵀ λ`.
    fn velocity_update(&mut self) {
        let j = &self.jacobian.jacobian;
        self.scratch.fill(0.0);
        for b in 0..self.jacobian.nblocks() {
            for &k in self.jacobian.contact_support(b) {
                let mut s = 0.0;
                for r in self.jacobian.block_rows(b) {
                    s += j[(r, k)] * self.solution.lambda[r];
                }
                self.scratch[k] += s;
            }
        }
        ltdl_solve_in_place(
            &self.model.dof_parent,
            &self.data.ltdl,
            self.scratch.as_mut_slice(),
        );
        self.v_next.copy_from(&self.v_free);
        self.v_next += &self.scratch;
    }

    /// Stage 6: `q⁺ = q ⊕ v⁺ dt`; commits the state if everything is finite.
    fn integrate(&mut self, state: &mut State) -> Result<(), SimError> {
        let dt = self.params.dt;
        integrate(
            &self.model,
            state.q.as_slice(),
            self.v_next.as_slice(),
            dt,
            self.q_next.as_mut_slice(),
        );
        check_vec("next v", self.v_next.as_slice(), self.model.nv)?;
        check_vec("next q", self.q_next.as_slice(), self.model.nq)?;
        if self.act_pending {
            check_vec("next act", self.act_next.as_slice(), self.model.na())?;
            if state.act.len() == self.act_next.len() {
                state.act.copy_from(&self.act_next);
            } else {
                state.act.clone_from(&self.act_next);
            }
        }
        let (q, v) = (self.q_next.as_slice(), self.v_next.as_slice());
        self.last_step.record(&self.model, state, q, v, dt);
        state.q.copy_from(&self.q_next);
        state.v.copy_from(&self.v_next);
        state.t += dt;
        Ok(())
    }
}
