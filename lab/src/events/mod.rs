//! Event-based (hybrid) simulation over the same models as the
//! time-stepping [`moreau::sim::Simulator`], after the seed paper "Comparing
//! time-stepping and event-based simulation for nonsmooth dynamics with
//! frictional impacts" (Boussema).
//!
//! Between events the dynamics are smooth and integrated with a fixed step
//! `h` ([`EventParams::h`]) by classical RK4 or by the implicit midpoint
//! rule ([`SmoothIntegrator`]). Contacts are in one of two states:
//!
//! - **free**: the surfaces are apart. Each free contact point's signed
//!   distance `φ` is an event function; when one crosses `−gap_tolerance`
//!   during a step, the step is bisected to the crossing (to
//!   [`EventParams::time_tolerance`]) and an **impact** is applied there.
//! - **held** (persistent): `φ ≈ 0` and `u_N ≈ 0`. The contact is a
//!   constraint at the acceleration level, in one of two modes:
//!   - *stick*: the contact force `f ∈ K_μ` and the contact acceleration
//!     `α = G f + α_free` solve the cone complementarity problem
//!     `K_μ ∋ f ⟂ α + Γ(α) ∈ K_μ*` (the velocity-level problem of the
//!     time-stepping with accelerations in place of velocities). Where the
//!     contact cannot stick, the force sits on the cone's boundary against
//!     the tangential acceleration and the contact slips slowly; its
//!     sliding velocity is damped at the stabilization's rate;
//!   - *slide* along the tangential direction `û` of the sliding velocity:
//!     `f_T = −μ f_N û` and `0 ≤ f_N ⟂ α_N ≥ 0` (Coulomb's law for a
//!     sliding contact, maximum dissipation). RK4's stages follow `û` as
//!     the velocity turns; the implicit midpoint keeps the step's start `û`.
//!
//!   Mode switches are events too: *lift-off* (`f_N` reaches 0 while `α_N`
//!   turns positive, or an impact elsewhere sends it away faster than
//!   `zeno_velocity`), *stick → slide* (the sliding velocity exceeds
//!   `zeno_velocity`), *slide → stick* (the sliding velocity crosses zero
//!   along `û`; if it only turned, the slide goes on along it). Touching
//!   contacts at rest that would penetrate are held. After any event the
//!   modes are settled: each held contact is checked against its mode and
//!   switched until all agree.
//!
//!   Several held contacts on a face make an indeterminate problem; its
//!   sliding contacts' normal forces are the fixed point of a cone problem
//!   with their friction given (plain iterations, then Newton's), solved
//!   to the contact solver's accuracy ([`EventParams::solver_tolerance`],
//!   300 `ncp-admm` iterations, accepted up to `ε_abs = 10⁻⁶ ‖g‖∞`).
//!
//! **Contact identity.** Held contacts are followed by key. Parry numbers a
//! polyhedron's vertex by the face it reports it with, and that face
//! changes as a body rocks on an edge, so vertex contacts are keyed by the
//! vertex's place on its body instead. A contact released while slightly
//! penetrating fires its impact event only below where it was released.
//!
//! **Impact law** (the seed's §III): at an impact time, every contact with
//! `φ ≤ contact_distance` takes part in one velocity-level problem,
//! `u⁺ = u⁻ + G Λ` with `K_μ ∋ Λ ⟂ c + Γ(c) ∈ K_μ*`, `c = u⁺ + e u⁻_N n`:
//! Newton's restitution `u⁺_N = −e u⁻_N` where the normal impulse is
//! positive, the tangential impulse in Coulomb's cone opposing the
//! post-impact sliding (sticking or sliding impacts), the same law as the
//! time-stepping's. Contacts leaving the impact with `u⁺_N ≈ 0` are held.
//!
//! **Zeno rule.** A bouncing sequence has infinitely many impacts before
//! its accumulation time. An impact whose approach speed is below
//! [`EventParams::zeno_velocity`] is made plastic (`e = 0`), which ends the
//! sequence: the contact is held from then on. The time this cuts short is
//! at most `2 e v_z / (a_N (1 − e))` (`a_N` the contact's normal
//! acceleration in flight); the event records the analytic accumulation
//! time `t + 2 e v / (a_N (1 − e))` estimated from the approach speed `v`.
//! Should events still pile up (more than [`EventParams::max_events_at_once`]
//! within one time tolerance), the simulator stops with an error rather
//! than loop.
//!
//! **Integrators.** RK4 integrates `q̇ = C(q) v` (the configuration chart,
//! [`moreau::dynamics::configuration_charts`]: quaternions as coordinates,
//! normalized after each step) and `v̇ = a(q, v)`. The implicit midpoint
//! rule works on the configuration manifold: `v̄ = v₀ + (h/2) a(q₀ ⊕ (h/2) v̄, v̄)`,
//! `v₁ = 2 v̄ − v₀`, `q₁ = q₀ ⊕ h v̄`, solved by fixed-point iteration
//! ([`EventParams::midpoint_tolerance`]). For a torque-free body in its
//! body frame it conserves the kinetic energy exactly (`(v₁ − v₀)ᵀM(v₁ + v₀)/2
//! = h v̄ᵀ(−v̄ ×* M v̄) = 0`); RK4 drifts at `O(h⁴)`.
//!
//! **Contact accelerations.** `α = J a + J̇ v` with `J̇ v` the acceleration
//! of the contact point fixed on each body at zero joint accelerations
//! (velocity-product and centripetal terms). The rotation of the contact
//! normal on curved surfaces is not differentiated; the drift it leaves in
//! `φ` and `u_N` is held at zero by a critically damped stabilization of
//! time constant [`EventParams::stabilization_time`] on the normal
//! (`α_N + 2 u_N/τ + φ/τ² ≥ 0`), zero on flat contacts at rest.
//!
//! Joint limits are not events (yet): the event-based simulator ignores
//! them, and says so by refusing a model that has any.

mod accel;
pub mod compare;

use moreau::collision::{CollisionDetector, Contact, ContactKey};
use moreau::contact::{
    ContactJacobian, ContactProblem, ContactSolution, ContactSolver, SolverKind, SolverSettings,
    contact_jacobian, delassus_ltdl,
};
use moreau::dynamics::{
    Data, aba_from_kinematics, configuration_charts, crba_from_kinematics, forward_kinematics,
    forward_velocity, integrate, kinetic_energy, ltdl_factorize, ltdl_solve_in_place,
    normalize_configuration, potential_energy,
};
use moreau::math::Vec3;
use moreau::model::Model;
use moreau::sim::State;
use nalgebra::{DMatrix, DVector};
use std::collections::BTreeMap;
use std::sync::Arc;

pub use accel::Held;

/// The integrator of the smooth phases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmoothIntegrator {
    /// Classical fourth-order Runge–Kutta on `(q, v)` in coordinates.
    Rk4,
    /// The implicit midpoint rule on the configuration manifold (symmetric,
    /// second order; conserves a free body's kinetic energy).
    ImplicitMidpoint,
}

impl SmoothIntegrator {
    pub fn name(self) -> &'static str {
        match self {
            SmoothIntegrator::Rk4 => "rk4",
            SmoothIntegrator::ImplicitMidpoint => "midpoint",
        }
    }
}

impl std::str::FromStr for SmoothIntegrator {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "rk4" => Ok(SmoothIntegrator::Rk4),
            "midpoint" => Ok(SmoothIntegrator::ImplicitMidpoint),
            _ => Err(format!("unknown integrator {s:?} (rk4, midpoint)")),
        }
    }
}

/// Parameters of the event-based simulator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EventParams {
    /// Step of the smooth integrator (s).
    pub h: f64,
    pub integrator: SmoothIntegrator,
    /// Events are located in time to this (s).
    pub time_tolerance: f64,
    /// An impact is detected when a free contact's signed distance falls
    /// below `−gap_tolerance` (m).
    pub gap_tolerance: f64,
    /// Contacts closer than this take part in an impact or can be held (m).
    pub contact_distance: f64,
    /// A touching contact with `|u_N|` below this is held; a held contact
    /// slides when `|u_T|` exceeds it (m/s).
    pub velocity_tolerance: f64,
    /// Tolerance of the mode checks on forces (N).
    pub force_tolerance: f64,
    /// A touching contact at rest is held when its normal acceleration
    /// without it is below `−acceleration_tolerance` (m/s²).
    pub acceleration_tolerance: f64,
    /// Impacts approaching slower than this are plastic: the Zeno rule (m/s).
    pub zeno_velocity: f64,
    /// More events than this within one `time_tolerance` is an error.
    pub max_events_at_once: usize,
    /// Time constant of the normal stabilization of held contacts (s).
    pub stabilization_time: f64,
    /// Fixed-point tolerance of the implicit midpoint rule on `v̄` (m/s, rad/s).
    pub midpoint_tolerance: f64,
    /// Contact problems (impacts and held contacts) are solved to this `ε_abs`.
    pub solver_tolerance: f64,
}

impl Default for EventParams {
    fn default() -> Self {
        EventParams {
            h: 1e-3,
            integrator: SmoothIntegrator::Rk4,
            time_tolerance: 1e-12,
            gap_tolerance: 1e-10,
            contact_distance: 1e-7,
            velocity_tolerance: 1e-9,
            force_tolerance: 1e-9,
            acceleration_tolerance: 1e-9,
            zeno_velocity: 1e-3,
            max_events_at_once: 100,
            stabilization_time: 0.1,
            midpoint_tolerance: 1e-14,
            solver_tolerance: 1e-10,
        }
    }
}

impl EventParams {
    pub fn validate(&self) -> Result<(), EventError> {
        let positive = [
            ("h", self.h),
            ("time_tolerance", self.time_tolerance),
            ("gap_tolerance", self.gap_tolerance),
            ("contact_distance", self.contact_distance),
            ("velocity_tolerance", self.velocity_tolerance),
            ("force_tolerance", self.force_tolerance),
            ("acceleration_tolerance", self.acceleration_tolerance),
            ("stabilization_time", self.stabilization_time),
            ("midpoint_tolerance", self.midpoint_tolerance),
            ("solver_tolerance", self.solver_tolerance),
        ];
        for (name, x) in positive {
            if !(x.is_finite() && x > 0.0) {
                return Err(EventError::InvalidParameter {
                    name,
                    reason: format!("must be positive and finite, got {x}"),
                });
            }
        }
        if !(self.zeno_velocity.is_finite() && self.zeno_velocity >= 0.0) {
            return Err(EventError::InvalidParameter {
                name: "zeno_velocity",
                reason: format!("must be finite and ≥ 0, got {}", self.zeno_velocity),
            });
        }
        if self.gap_tolerance >= self.contact_distance {
            return Err(EventError::InvalidParameter {
                name: "gap_tolerance",
                reason: format!(
                    "must be below contact_distance ({}), got {}",
                    self.contact_distance, self.gap_tolerance
                ),
            });
        }
        Ok(())
    }
}

/// What went wrong in an event-based run. The state is left as it was
/// before the failing call.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error("invalid parameter `{name}`: {reason}")]
    InvalidParameter { name: &'static str, reason: String },
    #[error(transparent)]
    Sim(#[from] moreau::error::SimError),
    #[error("the event-based simulator does not handle joint limits; joint `{joint}` has a range")]
    JointLimits { joint: String },
    #[error("the event-based simulator handles contacts only; this model has {0}")]
    Constraints(String),
    #[error("the {what} contact problem at t = {t} s was not solved (ε_abs = {residual:e})")]
    ContactSolve {
        what: &'static str,
        t: f64,
        residual: f64,
    },
    #[error(
        "sliding friction and normal forces did not agree after {iterations} iterations at t = {t} s (a Painlevé-like inconsistency?)"
    )]
    SlidingFixedPoint { t: f64, iterations: usize },
    #[error(
        "the implicit midpoint iteration did not converge at t = {t} s (step {h} s too large?)"
    )]
    Midpoint { t: f64, h: f64 },
    #[error("the contact modes did not settle at t = {t} s after {switches} switches")]
    ModesDidNotSettle { t: f64, switches: usize },
    #[error(
        "more than {count} events within {tolerance:e} s at t = {t} s: a Zeno sequence the Zeno rule did not end"
    )]
    Zeno {
        t: f64,
        count: usize,
        tolerance: f64,
    },
}

/// The mode of a held contact.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    Stick,
    /// Sliding along the world direction `dir` (unit, tangential): the last
    /// known direction of the sliding velocity.
    Slide {
        dir: Vec3,
    },
}

/// What happened at an event.
#[derive(Clone, Debug, PartialEq)]
pub enum EventKind {
    /// An impact: `contacts` took part; `normal_impulse` is the sum of
    /// their normal impulses (N·s); `approach` the fastest approach speed.
    Impact {
        contacts: usize,
        normal_impulse: f64,
        approach: f64,
        restitution: f64,
    },
    /// An impact made plastic by the Zeno rule; `accumulation_time` is the
    /// analytic end of the bounce sequence it cut short.
    Zeno { accumulation_time: f64 },
    /// A held contact separated.
    LiftOff { key: ContactKey },
    /// A sticking contact started to slide.
    Slip { key: ContactKey },
    /// A sliding contact stuck.
    Stick { key: ContactKey },
    /// A free contact became held without an impact (touching at rest).
    Touch { key: ContactKey },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub t: f64,
    pub kind: EventKind,
}

/// What one [`EventSim::step`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepOutcome {
    /// The time advanced (s): `h`, or less when an event ended the step.
    pub dt: f64,
    /// Events handled at the end of the step.
    pub events: usize,
    /// Acceleration evaluations (each one a contact solve when contacts are held).
    pub evaluations: usize,
}

/// The event functions at a state: a value per (what, contact) that must
/// stay non-negative; an event is a sign change to negative.
#[derive(Clone, Debug, Default)]
struct Guards {
    values: BTreeMap<(u8, ContactKey), f64>,
}

const GUARD_IMPACT: u8 = 0;
const GUARD_LIFT: u8 = 1;
const GUARD_SLIP: u8 = 2;
const GUARD_STOP: u8 = 3;
const GUARD_MISSING: u8 = 4;

impl Guards {
    /// Whether a guard that was non-negative (or absent) in `start` is negative here.
    fn fired_since(&self, start: &Guards) -> bool {
        self.values
            .iter()
            .any(|(id, &v)| v < 0.0 && start.values.get(id).is_none_or(|&s| s >= 0.0))
    }
}

/// An event-based simulator of one world. See the module documentation.
pub struct EventSim {
    model: Arc<Model>,
    pub params: EventParams,
    data: Data,
    detector: CollisionDetector,
    contacts: Vec<Contact>,
    /// The held contacts and their modes.
    held: BTreeMap<ContactKey, Mode>,
    jacobian: ContactJacobian,
    delassus: DMatrix<f64>,
    solver: Box<dyn ContactSolver>,
    solution: ContactSolution,
    /// Guards at the current state (the start of the next step).
    guards: Option<Guards>,
    /// Free contacts that started the phase slightly penetrating (a
    /// released held contact): their impact guard is measured from there.
    phi_floor: BTreeMap<ContactKey, f64>,
    events: Vec<Event>,
    /// Acceleration evaluations since creation.
    pub evaluations: usize,
    /// Implicit midpoint steps split in two since creation (see `midpoint`).
    pub midpoint_splits: usize,
    /// Steps that ended at an event (each one a bisection) since creation.
    pub located: usize,
    /// Implicit midpoint steps of `h / 8` taken without a converged
    /// fixed point (the held contacts' solves too coarse) since creation.
    pub midpoint_unconverged: usize,
    tau_total: DVector<f64>,
    bias_acc: Vec<moreau::math::Vec6>,
}

/// The result of one acceleration evaluation.
struct Eval {
    a: DVector<f64>,
    held: Vec<Held>,
    missing: Vec<ContactKey>,
    /// Signed distances of the free contacts.
    free: Vec<(ContactKey, f64)>,
}

impl EventSim {
    pub fn new(model: Arc<Model>, params: EventParams) -> Result<Self, EventError> {
        params.validate()?;
        if let Some(what) = model.constraint_features() {
            return Err(EventError::Constraints(what));
        }
        if let Some((joint, _, _)) = model.limited_joints().next() {
            return Err(EventError::JointLimits {
                joint: model.joint_name[joint].clone(),
            });
        }
        let mut data = Data::new(&model);
        data.dof_armature.copy_from_slice(&model.dof_armature);
        Ok(EventSim {
            detector: CollisionDetector::new(&model, 1e-3),
            data,
            contacts: Vec::new(),
            held: BTreeMap::new(),
            jacobian: ContactJacobian::default(),
            delassus: DMatrix::zeros(0, 0),
            solver: SolverKind::NcpAdmm.build(),
            solution: ContactSolution::default(),
            guards: None,
            phi_floor: BTreeMap::new(),
            events: Vec::new(),
            evaluations: 0,
            midpoint_splits: 0,
            located: 0,
            midpoint_unconverged: 0,
            tau_total: DVector::zeros(model.nv),
            bias_acc: vec![moreau::math::Vec6::zeros(); model.nbodies],
            params,
            model,
        })
    }

    pub fn model(&self) -> &Arc<Model> {
        &self.model
    }

    /// Every event so far.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The held contacts and their modes.
    pub fn held(&self) -> impl Iterator<Item = (&ContactKey, &Mode)> {
        self.held.iter()
    }

    /// Kinetic and potential energy of `state` (refused like [`Self::step`]
    /// refuses it).
    pub fn energy(&mut self, state: &State) -> Result<(f64, f64), EventError> {
        self.check(state, &vec![0.0; self.model.nv])?;
        forward_kinematics(&self.model, &mut self.data, state.q.as_slice());
        forward_velocity(&self.model, &mut self.data, state.v.as_slice());
        Ok((
            kinetic_energy(&self.model, &self.data),
            potential_energy(&self.model, &self.data),
        ))
    }

    /// The held contacts at `state` with their forces, accelerations and
    /// velocities (contact frames), under generalized forces `tau`.
    pub fn held_contacts(&mut self, state: &State, tau: &[f64]) -> Result<Vec<Held>, EventError> {
        self.check(state, tau)?;
        Ok(self.eval(&state.q, &state.v, tau, state.t)?.held)
    }

    /// Forgets the held contacts (call after changing the state from outside).
    pub fn reset(&mut self) {
        self.held.clear();
        self.guards = None;
        self.phi_floor.clear();
    }

    fn check(&self, state: &State, tau: &[f64]) -> Result<(), EventError> {
        moreau::sim::check_state(&self.model, state)?;
        moreau::sim::check_vec("tau", tau, self.model.nv)?;
        moreau::sim::check_vec("t", &[state.t], 1)?;
        Ok(())
    }

    /// Advances `state` to `t_end` (steps of `h`, the last one shortened),
    /// handling every event on the way, under constant generalized forces
    /// `tau` (nv). On error the state is the one after the last good step.
    pub fn advance_to(
        &mut self,
        state: &mut State,
        t_end: f64,
        tau: &[f64],
    ) -> Result<(), EventError> {
        while state.t < t_end - self.params.time_tolerance {
            let dt = self.params.h.min(t_end - state.t);
            self.step(state, dt, tau)?;
        }
        Ok(())
    }

    /// One step of at most `dt`: integrates the smooth dynamics; if an
    /// event happens within the step, stops there (bisection to the time
    /// tolerance) and handles it. On error the state is untouched.
    pub fn step(
        &mut self,
        state: &mut State,
        dt: f64,
        tau: &[f64],
    ) -> Result<StepOutcome, EventError> {
        self.check(state, tau)?;
        if !(dt.is_finite() && dt > 0.0) {
            return Err(EventError::InvalidParameter {
                name: "dt",
                reason: format!("must be positive and finite, got {dt}"),
            });
        }
        let evaluations = self.evaluations;
        let start_guards = match self.guards.take() {
            Some(g) => g,
            None => {
                self.settle(state, tau)?;
                self.set_floors(state)?;
                self.guards_at(state, tau)?
            }
        };
        let end = self.integrate(state, dt, tau)?;
        let (end_guards, end_held) = self.guards_and_held(&end, tau)?;
        if !end_guards.fired_since(&start_guards) {
            self.follow_sliding(&end_held);
            *state = end;
            self.guards = Some(end_guards);
            return Ok(StepOutcome {
                dt,
                events: 0,
                evaluations: self.evaluations - evaluations,
            });
        }
        // Bisect to the first event: `lo` has not fired, `hi` has.
        self.located += 1;
        let (mut lo, mut hi) = (0.0, dt);
        let mut at_lo = state.clone();
        let mut at_hi = (end, end_guards);
        while hi - lo > self.params.time_tolerance {
            let mid = 0.5 * (lo + hi);
            let y = self.integrate(state, mid, tau)?;
            let g = self.guards_at(&y, tau)?;
            if g.fired_since(&start_guards) {
                hi = mid;
                at_hi = (y, g);
            } else {
                lo = mid;
                at_lo = y;
            }
        }
        let (y_hi, fired) = at_hi;
        let before = self.events.len();
        // An impact is applied just before the crossing, so that the
        // contact's guard is armed again as soon as it separates; mode
        // switches just after theirs, where the modes disagree.
        let impact = fired.values.iter().any(|(id, &v)| {
            id.0 == GUARD_IMPACT && v < 0.0 && start_guards.values.get(id).is_none_or(|&s| s >= 0.0)
        });
        let (mut y, advanced) = if impact { (at_lo, lo) } else { (y_hi, hi) };
        if impact {
            self.impact(&mut y, tau)?;
        } else {
            // Sliding contacts whose velocity along their direction
            // crossed zero: if the sliding velocity vanished they stick
            // (and slip again in settling if they cannot); if it turned
            // (a slide that curves within a step), they slide on along it.
            let held = self.held_contacts(&y, tau)?;
            for (id, &v) in &fired.values {
                if id.0 != GUARD_STOP || v >= 0.0 {
                    continue;
                }
                let Some(h) = held.iter().find(|h| h.key == id.1) else {
                    continue;
                };
                let ut = h.frame * Vec3::new(h.velocity.x, h.velocity.y, 0.0);
                if ut.norm() > self.params.velocity_tolerance {
                    self.held.insert(
                        id.1,
                        Mode::Slide {
                            dir: ut.normalize(),
                        },
                    );
                } else {
                    self.held.insert(id.1, Mode::Stick);
                    self.events.push(Event {
                        t: y.t,
                        kind: EventKind::Stick { key: id.1 },
                    });
                }
            }
        }
        self.settle(&y, tau)?;
        let events = self.events.len() - before;
        let piled = self
            .events
            .iter()
            .rev()
            .take_while(|e| y.t - e.t <= self.params.time_tolerance)
            .count();
        if piled > self.params.max_events_at_once {
            return Err(EventError::Zeno {
                t: y.t,
                count: self.params.max_events_at_once,
                tolerance: self.params.time_tolerance,
            });
        }
        *state = y;
        self.set_floors(state)?;
        self.guards = Some(self.guards_at(state, tau)?);
        Ok(StepOutcome {
            dt: advanced,
            events,
            evaluations: self.evaluations - evaluations,
        })
    }

    /// Integrates one step of `dt` from `state` with the held contacts'
    /// modes frozen.
    fn integrate(&mut self, state: &State, dt: f64, tau: &[f64]) -> Result<State, EventError> {
        match self.params.integrator {
            SmoothIntegrator::Rk4 => self.rk4(state, dt, tau),
            SmoothIntegrator::ImplicitMidpoint => self.midpoint(state, dt, tau),
        }
    }

    fn rk4(&mut self, s: &State, h: f64, tau: &[f64]) -> Result<State, EventError> {
        let model = Arc::clone(&self.model);
        let (mut c, mut d) = (DMatrix::zeros(0, 0), DMatrix::zeros(0, 0));
        let mut qdot = |q: &DVector<f64>, v: &DVector<f64>| {
            configuration_charts(&model, q.as_slice(), &mut c, &mut d);
            &c * v
        };
        let stage = |q0: &DVector<f64>, dq: &DVector<f64>, w: f64| {
            let mut q = q0 + dq * w;
            normalize_configuration(&model, q.as_mut_slice());
            q
        };
        let (q0, v0) = (&s.q, &s.v);
        let a1 = self.eval(q0, v0, tau, s.t)?.a;
        let k1q = qdot(q0, v0);
        let (q, v) = (stage(q0, &k1q, h / 2.0), v0 + &a1 * (h / 2.0));
        let a2 = self.eval(&q, &v, tau, s.t + h / 2.0)?.a;
        let k2q = qdot(&q, &v);
        let (q, v) = (stage(q0, &k2q, h / 2.0), v0 + &a2 * (h / 2.0));
        let a3 = self.eval(&q, &v, tau, s.t + h / 2.0)?.a;
        let k3q = qdot(&q, &v);
        let (q, v) = (stage(q0, &k3q, h), v0 + &a3 * h);
        let a4 = self.eval(&q, &v, tau, s.t + h)?.a;
        let k4q = qdot(&q, &v);
        let dq = (k1q + k2q * 2.0 + k3q * 2.0 + k4q) / 6.0;
        let q1 = stage(q0, &dq, h);
        let v1 = v0 + (a1 + a2 * 2.0 + a3 * 2.0 + a4) * (h / 6.0);
        Ok(State {
            q: q1,
            v: v1,
            act: s.act.clone(),
            t: s.t + h,
        })
    }

    /// The implicit midpoint step; where its fixed point does not
    /// converge (a mode change inside the step makes the accelerations
    /// jump), two half steps, down to `h / 8`, where the iteration's last
    /// iterate is taken.
    fn midpoint(&mut self, s: &State, h: f64, tau: &[f64]) -> Result<State, EventError> {
        self.midpoint_split(s, h, tau, 3)
    }

    fn midpoint_split(
        &mut self,
        s: &State,
        h: f64,
        tau: &[f64],
        depth: u32,
    ) -> Result<State, EventError> {
        match self.midpoint_step(s, h, tau, depth == 0) {
            Err(EventError::Midpoint { .. }) if depth > 0 => {
                self.midpoint_splits += 1;
                let half = self.midpoint_split(s, h / 2.0, tau, depth - 1)?;
                self.midpoint_split(&half, h / 2.0, tau, depth - 1)
            }
            other => other,
        }
    }

    /// One implicit midpoint step; with `last_resort`, an iteration that
    /// does not converge is taken as it ends (and counted in
    /// [`Self::midpoint_unconverged`]) rather than refused.
    fn midpoint_step(
        &mut self,
        s: &State,
        h: f64,
        tau: &[f64],
        last_resort: bool,
    ) -> Result<State, EventError> {
        let model = Arc::clone(&self.model);
        let (nq, tol) = (model.nq, self.params.midpoint_tolerance);
        let mut q_mid = DVector::zeros(nq);
        let a0 = self.eval(&s.q, &s.v, tau, s.t)?.a;
        let mut vbar = &s.v + a0 * (h / 2.0);
        let mut converged = false;
        for _ in 0..200 {
            integrate(
                &model,
                s.q.as_slice(),
                vbar.as_slice(),
                h / 2.0,
                q_mid.as_mut_slice(),
            );
            let a = self.eval(&q_mid, &vbar, tau, s.t + h / 2.0)?.a;
            let next = &s.v + a * (h / 2.0);
            let change = (&next - &vbar).amax();
            vbar = next;
            // With held contacts, the accelerations are as accurate as
            // their contact solves.
            let noise = if self.held.is_empty() {
                0.0
            } else {
                0.5 * h * 1e3 * self.params.solver_tolerance
            };
            if change <= tol * (1.0 + vbar.amax()) + noise {
                converged = true;
                break;
            }
        }
        if !converged && last_resort {
            self.midpoint_unconverged += 1;
        } else if !converged {
            return Err(EventError::Midpoint { t: s.t, h });
        }
        let mut q1 = DVector::zeros(nq);
        integrate(
            &model,
            s.q.as_slice(),
            vbar.as_slice(),
            h,
            q1.as_mut_slice(),
        );
        Ok(State {
            q: q1,
            v: vbar * 2.0 - &s.v,
            act: s.act.clone(),
            t: s.t + h,
        })
    }

    /// At the start of a phase: the free touching contacts that penetrate
    /// (by less than `contact_distance`: a held contact just released)
    /// fire their impact guard only below where they start.
    fn set_floors(&mut self, y: &State) -> Result<(), EventError> {
        self.phi_floor.clear();
        self.touching(y, None)?;
        for c in &self.contacts {
            // (Below the impact threshold only: a contact that just
            // bounced starts at −gap_tolerance and keeps its threshold.)
            let floor = c.distance + self.params.gap_tolerance;
            if floor < 0.0 && !self.held.contains_key(&c.key) {
                self.phi_floor.insert(c.key, floor);
            }
        }
        Ok(())
    }

    /// The event functions at `y`.
    fn guards_at(&mut self, y: &State, tau: &[f64]) -> Result<Guards, EventError> {
        Ok(self.guards_and_held(y, tau)?.0)
    }

    /// The event functions at `y` and the held contacts there.
    fn guards_and_held(
        &mut self,
        y: &State,
        tau: &[f64],
    ) -> Result<(Guards, Vec<Held>), EventError> {
        let e = self.eval(&y.q, &y.v, tau, y.t)?;
        let p = self.params;
        let mut g = Guards::default();
        for (key, phi) in e.free {
            let floor = self.phi_floor.get(&key).copied().unwrap_or(0.0);
            g.values
                .insert((GUARD_IMPACT, key), phi - floor + p.gap_tolerance);
        }
        for key in e.missing {
            g.values.insert((GUARD_MISSING, key), -1.0);
        }
        for h in &e.held {
            g.values.insert((GUARD_LIFT, h.key), h.lift_margin(&p));
            match h.mode {
                Mode::Stick => {
                    g.values.insert((GUARD_SLIP, h.key), h.slip_margin(&p));
                }
                Mode::Slide { dir } => {
                    // Located where the sliding velocity crosses zero.
                    let stop = h.stop_margin(&dir, &p) - p.velocity_tolerance;
                    g.values.insert((GUARD_STOP, h.key), stop);
                }
            }
        }
        Ok((g, e.held))
    }

    /// After a step: each sliding contact's direction follows its sliding
    /// velocity (while on the same side).
    fn follow_sliding(&mut self, held: &[Held]) {
        for h in held {
            if let Some(Mode::Slide { dir }) = self.held.get_mut(&h.key) {
                let ut = h.frame * Vec3::new(h.velocity.x, h.velocity.y, 0.0);
                if ut.norm() > self.params.velocity_tolerance && ut.dot(dir) > 0.0 {
                    *dir = ut.normalize();
                }
            }
        }
    }

    /// Switches the held contacts' modes until they agree with the
    /// contact problem at `y`. First, touching contacts at rest whose
    /// normal acceleration would make them penetrate are held, all at
    /// once; then, one at a time, the held contact that disagrees most
    /// with its mode is switched: dropped if it pulls (lift-off), sliding
    /// where it cannot stick, sticking where its sliding reversed.
    fn settle(&mut self, y: &State, tau: &[f64]) -> Result<(), EventError> {
        let p = self.params;
        const MAX_SWITCHES: usize = 100;
        for _ in 0..MAX_SWITCHES {
            let e = self.eval(&y.q, &y.v, tau, y.t)?;
            // Touching contacts at rest that would penetrate.
            let touching = self.touching(y, Some(&e.a))?;
            let mut touched = false;
            for (key, u, alpha_n) in touching {
                if !self.held.contains_key(&key)
                    && u.z.abs() <= p.velocity_tolerance
                    && alpha_n < -p.acceleration_tolerance
                {
                    let mode = self.mode_for(&key, &u);
                    self.held.insert(key, mode);
                    self.events.push(Event {
                        t: y.t,
                        kind: EventKind::Touch { key },
                    });
                    touched = true;
                }
            }
            if touched {
                continue;
            }
            // Sliding contacts whose sliding reversed stick, all at once
            // (the contacts of one body stop together).
            let stopped: Vec<ContactKey> = e
                .held
                .iter()
                .filter(|h| matches!(h.mode, Mode::Slide { dir } if h.stop_margin(&dir, &p) < 0.0))
                .map(|h| h.key)
                .collect();
            if !stopped.is_empty() {
                for key in stopped {
                    self.held.insert(key, Mode::Stick);
                    self.events.push(Event {
                        t: y.t,
                        kind: EventKind::Stick { key },
                    });
                }
                continue;
            }
            // The held contact that disagrees most with its mode.
            let mut worst: Option<(f64, EventKind)> = e
                .missing
                .first()
                .map(|key| (f64::NEG_INFINITY, EventKind::LiftOff { key: *key }));
            for h in &e.held {
                // Separating faster than the Zeno rule's speed (after an
                // impact elsewhere): released.
                if h.velocity.z > p.zeno_velocity.max(p.velocity_tolerance) {
                    worst = Some((f64::NEG_INFINITY, EventKind::LiftOff { key: h.key }));
                    break;
                }
                let (margin, kind) = match h.mode {
                    Mode::Stick => {
                        let (lift, slip) = (h.lift_margin(&p), h.slip_margin(&p));
                        if lift <= slip {
                            (lift, EventKind::LiftOff { key: h.key })
                        } else {
                            (slip, EventKind::Slip { key: h.key })
                        }
                    }
                    Mode::Slide { .. } => (h.lift_margin(&p), EventKind::LiftOff { key: h.key }),
                };
                if margin < 0.0 && worst.as_ref().is_none_or(|(w, _)| margin < *w) {
                    worst = Some((margin, kind));
                }
            }
            let Some((_, kind)) = worst else {
                return Ok(());
            };
            match &kind {
                EventKind::LiftOff { key } => {
                    self.held.remove(key);
                }
                EventKind::Slip { key } => {
                    let h = e.held.iter().find(|h| h.key == *key).expect("held");
                    let dir = h.slip_direction();
                    self.held.insert(*key, Mode::Slide { dir });
                }
                _ => {}
            }
            self.events.push(Event { t: y.t, kind });
        }
        Err(EventError::ModesDidNotSettle {
            t: y.t,
            switches: MAX_SWITCHES,
        })
    }

    /// The mode a contact with contact-frame velocity `u` is held in.
    fn mode_for(&self, key: &ContactKey, u: &Vec3) -> Mode {
        let ut = Vec3::new(u.x, u.y, 0.0);
        if ut.norm()
            > self
                .params
                .zeno_velocity
                .max(self.params.velocity_tolerance)
        {
            let frame = self
                .contacts
                .iter()
                .find(|c| c.key == *key)
                .map(|c| c.frame)
                .unwrap_or_else(moreau::math::Mat3::identity);
            Mode::Slide {
                dir: (frame * ut).normalize(),
            }
        } else {
            Mode::Stick
        }
    }

    /// Contacts closer than `contact_distance` at `y`, their contact-frame
    /// velocities and, given the joint accelerations `a`, their normal
    /// accelerations (else 0). Fills `self.contacts` and `self.jacobian`.
    fn touching(
        &mut self,
        y: &State,
        a: Option<&DVector<f64>>,
    ) -> Result<Vec<(ContactKey, Vec3, f64)>, EventError> {
        let model = Arc::clone(&self.model);
        let model = &*model;
        forward_kinematics(model, &mut self.data, y.q.as_slice());
        forward_velocity(model, &mut self.data, y.v.as_slice());
        self.detect()?;
        let d = self.params.contact_distance;
        self.contacts.retain(|c| c.distance <= d);
        contact_jacobian(model, &self.data, &self.contacts, &mut self.jacobian);
        let u = &self.jacobian.jacobian * &y.v;
        let ja = a.map(|a| &self.jacobian.jacobian * a);
        self.update_bias_accelerations();
        Ok(self
            .contacts
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let alpha_n = ja.as_ref().map_or(0.0, |ja| {
                    ja[3 * i + 2] + accel::drift(&self.data, &self.bias_acc, c).z
                });
                (
                    c.key,
                    Vec3::new(u[3 * i], u[3 * i + 1], u[3 * i + 2]),
                    alpha_n,
                )
            })
            .collect())
    }

    /// Applies the impact law at `y` (see the module documentation).
    fn impact(&mut self, y: &mut State, tau: &[f64]) -> Result<(), EventError> {
        let p = self.params;
        let touching = self.touching(y, None)?;
        if touching.is_empty() {
            return Ok(());
        }
        let model = Arc::clone(&self.model);
        let data = &mut self.data;
        crba_from_kinematics(&model, data);
        ltdl_factorize(&model, data);
        delassus_ltdl(&model, data, &mut self.jacobian, &mut self.delassus);
        let nc = self.contacts.len();
        let mut g = DVector::zeros(3 * nc);
        let mut mu = Vec::with_capacity(nc);
        let (mut approach, mut restitution) = (0.0f64, 0.0f64);
        // Free normal accelerations, for the Zeno rule's accumulation time.
        let alpha_free = self.free_normal_accelerations(y, tau);
        let mut zeno = Vec::new();
        for (i, (c, (_, u, _))) in self.contacts.iter().zip(&touching).enumerate() {
            mu.push(c.mu);
            g[3 * i] = u.x;
            g[3 * i + 1] = u.y;
            g[3 * i + 2] = u.z;
            let speed = -u.z;
            approach = approach.max(speed);
            if c.restitution > 0.0 && speed > 0.0 {
                if speed >= p.zeno_velocity {
                    g[3 * i + 2] += c.restitution * u.z;
                    restitution = restitution.max(c.restitution);
                } else if speed > p.velocity_tolerance {
                    let e = c.restitution;
                    let a = -alpha_free[i];
                    if a > 0.0 && e < 1.0 {
                        zeno.push(y.t + 2.0 * e * speed / (a * (1.0 - e)));
                    }
                }
            }
        }
        let problem = ContactProblem::new(self.delassus.clone(), g, mu)
            .expect("the impact problem is built from a valid model");
        let settings = self.solver_settings();
        self.solver
            .solve(&problem, &settings, &mut self.solution)
            .map_err(|_| EventError::ContactSolve {
                what: "impact",
                t: y.t,
                residual: f64::NAN,
            })?;
        let stats = self.solution.stats;
        if !stats.converged && stats.residuals.eps_abs > accel::acceptable(&settings, &problem.g) {
            return Err(EventError::ContactSolve {
                what: "impact",
                t: y.t,
                residual: stats.residuals.eps_abs,
            });
        }
        let lambda = &self.solution.lambda;
        let mut jt_l = self.jacobian.jacobian.tr_mul(lambda);
        ltdl_solve_in_place(&model.dof_parent, &self.data.ltdl, jt_l.as_mut_slice());
        y.v += jt_l;
        let normal_impulse = (0..nc).map(|i| lambda[3 * i + 2]).sum();
        self.events.push(Event {
            t: y.t,
            kind: EventKind::Impact {
                contacts: nc,
                normal_impulse,
                approach,
                restitution,
            },
        });
        for accumulation_time in zeno {
            self.events.push(Event {
                t: y.t,
                kind: EventKind::Zeno { accumulation_time },
            });
        }
        Ok(())
    }

    /// The normal accelerations of `self.contacts` with no contact force
    /// (after [`Self::touching`] at `y`).
    fn free_normal_accelerations(&mut self, y: &State, tau: &[f64]) -> Vec<f64> {
        let model = Arc::clone(&self.model);
        forward_velocity(&model, &mut self.data, y.v.as_slice());
        self.total_forces(y, tau);
        aba_from_kinematics(&model, &mut self.data, self.tau_total.as_slice());
        let a = self.data.ddq.clone();
        let ja = &self.jacobian.jacobian * a;
        self.update_bias_accelerations();
        self.contacts
            .iter()
            .enumerate()
            .map(|(i, c)| ja[3 * i + 2] + accel::drift(&self.data, &self.bias_acc, c).z)
            .collect()
    }

    fn solver_settings(&self) -> SolverSettings {
        SolverSettings {
            tolerance: self.params.solver_tolerance,
            max_iterations: 300,
            ..SolverSettings::default()
        }
    }

    /// Applied forces, joint springs and damping (explicit), fluid forces,
    /// into `self.tau_total`, after forward kinematics and velocity.
    fn total_forces(&mut self, y: &State, tau: &[f64]) {
        let model = &*self.model;
        self.tau_total.copy_from_slice(tau);
        for k in 0..model.nv {
            let stiffness = model.dof_stiffness[k];
            if stiffness != 0.0 {
                let qk = y.q[model.joint_idx_q[model.dof_body[k]]];
                self.tau_total[k] -= stiffness * (qk - model.dof_springref[k]);
            }
            self.tau_total[k] -= model.dof_damping[k] * y.v[k];
        }
        moreau::dynamics::fluid_forces(
            model,
            &self.data,
            y.v.as_slice(),
            self.tau_total.as_mut_slice(),
        );
    }

    /// Each body's spatial acceleration at zero joint accelerations and no
    /// gravity (the velocity-product terms), after forward velocity.
    fn update_bias_accelerations(&mut self) {
        let model = &*self.model;
        self.bias_acc[0] = moreau::math::Vec6::zeros();
        for i in 1..model.nbodies {
            self.bias_acc[i] =
                self.bias_acc[model.body_parent[i]] + self.data.body_bias_acceleration[i];
        }
    }

    /// Collision detection at the current kinematics, with keys that
    /// follow a polyhedron's vertex: parry numbers a vertex by the face it
    /// reports it with, and the face changes as a body rocks on an edge;
    /// such contacts are keyed by the vertex's position on their body.
    fn detect(&mut self) -> Result<(), EventError> {
        let model = &*self.model;
        self.detector
            .detect(model, &self.data, &mut self.contacts)?;
        for c in &mut self.contacts {
            if let moreau::collision::ContactGeometry::PointFace {
                on_a: true, core, ..
            } = c.geometry
            {
                let local = self.data.world_from_body[c.body_a]
                    .inverse()
                    .act_point(&core);
                // Micrometre cells: a vertex sits far from a cell's edge.
                let cell = |x: f64| (x * 1e6).round() as i64 as u64;
                let h = cell(local.x)
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    .rotate_left(21)
                    ^ cell(local.y).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
                    ^ cell(local.z)
                        .wrapping_mul(0x1656_67B1_9E37_79F9)
                        .rotate_left(42);
                c.key.feature_a = (h >> 32) as u32 ^ h as u32;
                c.key.feature_b = u32::MAX;
            }
        }
        Ok(())
    }

    /// The accelerations at `(q, v)` with the held contacts in their modes.
    fn eval(
        &mut self,
        q: &DVector<f64>,
        v: &DVector<f64>,
        tau: &[f64],
        t: f64,
    ) -> Result<Eval, EventError> {
        self.evaluations += 1;
        let model = Arc::clone(&self.model);
        let mut y = State::new(q.clone(), v.clone());
        y.t = t;
        forward_kinematics(&model, &mut self.data, q.as_slice());
        forward_velocity(&model, &mut self.data, v.as_slice());
        self.total_forces(&y, tau);
        self.detect()?;
        let mut free = Vec::new();
        let mut held_contacts = Vec::new();
        let mut modes = Vec::new();
        for c in &self.contacts {
            match self.held.get(&c.key) {
                Some(m) => {
                    held_contacts.push(*c);
                    modes.push(*m);
                }
                None => free.push((c.key, c.distance)),
            }
        }
        let missing: Vec<ContactKey> = self
            .held
            .keys()
            .filter(|k| !held_contacts.iter().any(|c| c.key == **k))
            .copied()
            .collect();
        if held_contacts.is_empty() {
            aba_from_kinematics(&model, &mut self.data, self.tau_total.as_slice());
            return Ok(Eval {
                a: self.data.ddq.clone(),
                held: Vec::new(),
                missing,
                free,
            });
        }
        crba_from_kinematics(&model, &mut self.data);
        ltdl_factorize(&model, &mut self.data);
        aba_from_kinematics(&model, &mut self.data, self.tau_total.as_slice());
        let a_free = self.data.ddq.clone();
        contact_jacobian(&model, &self.data, &held_contacts, &mut self.jacobian);
        delassus_ltdl(&model, &self.data, &mut self.jacobian, &mut self.delassus);
        self.update_bias_accelerations();
        let j = &self.jacobian.jacobian;
        let u = j * v;
        let ja = j * &a_free;
        let n = held_contacts.len();
        let tau_s = self.params.stabilization_time;
        let mut alpha_free = DVector::zeros(3 * n);
        for (i, c) in held_contacts.iter().enumerate() {
            let drift = accel::drift(&self.data, &self.bias_acc, c);
            for r in 0..3 {
                alpha_free[3 * i + r] = ja[3 * i + r] + drift[r];
            }
            alpha_free[3 * i + 2] += 2.0 * u[3 * i + 2] / tau_s + c.distance / (tau_s * tau_s);
            // A sticking contact's sliding velocity (the integrator's
            // drift) is damped at the same rate.
            if modes[i] == Mode::Stick {
                alpha_free[3 * i] += u[3 * i] / tau_s;
                alpha_free[3 * i + 1] += u[3 * i + 1] / tau_s;
            }
        }
        let settings = self.solver_settings();
        let forces = accel::solve_modes(
            &self.delassus,
            &alpha_free,
            &held_contacts,
            &modes,
            &u,
            // RK4's stages follow a curving slide; the implicit midpoint's
            // fixed point needs a friction direction that does not jump.
            match self.params.integrator {
                SmoothIntegrator::Rk4 => Some(self.params.velocity_tolerance),
                SmoothIntegrator::ImplicitMidpoint => None,
            },
            &mut *self.solver,
            &settings,
            &mut self.solution,
            t,
        )?;
        let mut jt_f = self.jacobian.jacobian.tr_mul(&forces);
        ltdl_solve_in_place(&model.dof_parent, &self.data.ltdl, jt_f.as_mut_slice());
        let alpha = &self.delassus * &forces + &alpha_free;
        let held = held_contacts
            .iter()
            .zip(&modes)
            .enumerate()
            .map(|(i, (c, m))| Held {
                key: c.key,
                mode: *m,
                frame: c.frame,
                mu: c.mu,
                force: Vec3::new(forces[3 * i], forces[3 * i + 1], forces[3 * i + 2]),
                accel: Vec3::new(alpha[3 * i], alpha[3 * i + 1], alpha[3 * i + 2]),
                velocity: Vec3::new(u[3 * i], u[3 * i + 1], u[3 * i + 2]),
                g_nn: self.delassus[(3 * i + 2, 3 * i + 2)],
                g_tt: 0.5 * (self.delassus[(3 * i, 3 * i)] + self.delassus[(3 * i + 1, 3 * i + 1)]),
            })
            .collect();
        Ok(Eval {
            a: a_free + jt_f,
            held,
            missing,
            free,
        })
    }
}
