//! The simulation parameters ([`SimParams`]) and how a step forms the
//! Delassus matrix ([`DelassusPath`]).

use crate::contact::{SolverKind, SolverSettings};
use crate::error::SimError;

/// Simulation parameters.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SimParams {
    /// Time step (s).
    pub dt: f64,
    pub solver: SolverKind,
    pub solver_settings: SolverSettings,
    /// Baumgarte factor `β ∈ [0, 1]` for penetration recovery: a row whose
    /// position error `e` is a violation (a penetration, a joint past its
    /// stop, an equality's error) asks for the velocity `β e / dt` back
    /// (see [`Self::recovery`]).
    pub baumgarte: f64,
    /// The most speed that recovery may ask for, in each row's units (m/s
    /// for contacts, slides and positions, rad/s for hinges and
    /// orientations); `None`: unbounded (`β e / dt` whatever `e`). A start
    /// far from its constraints (a joint 0.5 rad past its stop, a hand
    /// welded to a target 20 cm away) is then recovered at this speed
    /// rather than in a few steps: the kinetic energy recovery can inject
    /// is bounded. The step derivatives take the bound (slope 0 beyond
    /// it, its depth a kink: [`crate::sim::QSide`]), and so does the
    /// resident GPU step.
    #[serde(default)]
    pub max_recovery_speed: Option<f64>,
    /// The most speed the recovery of an equality's error may ask for
    /// (m/s, rad/s; a `connect`'s or `weld`'s position and orientation
    /// errors each as a vector), under [`Self::max_recovery_speed`] too: by default
    /// [`DEFAULT_EQUALITY_RECOVERY`]. A weld started far from its pose (a
    /// hand welded to a mocap target its arm's stops keep it from) then
    /// pulls at this speed instead of `β e / dt` (Meta-World's scenes,
    /// before their mocap welds were compliant: a body thrown 72 m in a
    /// passive second, three settles refused on a non-finite step; none
    /// bounded). `None`: unbounded.
    #[serde(default = "default_equality_recovery")]
    pub max_equality_recovery_speed: Option<f64>,
    /// Contacts are generated for gaps below this margin (m).
    pub contact_margin: f64,
    /// Minimum approach speed for restitution to apply (m/s).
    pub bounce_velocity: f64,
    /// Warm start the solver from the previous step's impulses (by contact identity).
    pub warm_start: bool,
    /// MuJoCo-like compliance `α`: every contact problem gets `R = α·diag(G)`
    /// ([`ContactProblem::set_diagonal_compliance`](crate::contact::ContactProblem::set_diagonal_compliance)); 0 = rigid contacts.
    pub compliance: f64,
    /// The compliance `α` of the rows of a `connect` or `weld` to a mocap
    /// body ([`crate::model::Model::mocap`]): each gets `R = α·s`, `s` the
    /// largest `G_kk` of the equality's three position (or orientation)
    /// rows (default [`DEFAULT_MOCAP_COMPLIANCE`]; 0: rigid). A mocap body
    /// is a target the user moves, not a part of the mechanism: a pose its
    /// arm's stops or contacts keep out of reach makes the rigid problem
    /// infeasible (Meta-World's hand welded to its mocap with `right_j1`
    /// started past its stop: 1 816 of 2 000 solves unconverged in
    /// `drawer`, `assembly_peg` ending with 33 kJ of kinetic energy; below
    /// α ≈ 2e-3 the weld and a stop can ring instead of settling). With
    /// `R` the equality gives way in the
    /// `G`-weighted least-squares sense and the rest of the problem holds
    /// rigidly; where the pose is reachable a held equality is off by
    /// `R λ dt / β` at rest (micrometres for an arm's weight) and lags a
    /// target moving at `v` by about `α v dt / β`.
    #[serde(default = "default_mocap_compliance")]
    pub mocap_compliance: f64,
    /// The compliance `α` of a deeply penetrating contact's normal row:
    /// bodies overlapping by `d = −φ` more than `d₀` get `R_N = α·s·e² /
    /// (e² + D²)`, `e = d − d₀`, `s` the mean of the contact's three
    /// `G_kk` (`tr G_c / 3`: the row's own units, whatever its tangent
    /// frame, and positive where any of its rows can move)
    /// ([`Self::penetration_compliance_at`], `d₀` =
    /// [`PENETRATION_COMPLIANCE_ONSET`], `D` =
    /// [`PENETRATION_COMPLIANCE_DEPTH`]), on top of [`Self::compliance`]
    /// (0, rigid, by default; [`OVERLAP_COMPLIANCE`] for files that start
    /// overlapping: on by default, it changed the impacts of Gymnasium's
    /// falling humanoid, which then met 3× as many solves that stall,
    /// docs/robot-files.md). Objects
    /// started wedged into a fixture (overlapping walls on opposite sides)
    /// make the rigid problem infeasible, since no velocity recovers both
    /// penetrations, and so does a link started inside another along a
    /// direction no joint moves it (`G_NN = 0`): with `R` the pushes balance
    /// in least squares and every other row stays rigid. A contact within
    /// `d₀` of touching (at rest, recovered to rounding, or after an
    /// impact's step) is rigid as before: a tiny `R` on a statically
    /// indeterminate contact set would make its solution unique but
    /// ill-conditioned.
    #[serde(default)]
    pub penetration_compliance: f64,
    /// Multiplies every contact's friction coefficient (1: the model's):
    /// per-world friction for domain randomization.
    pub friction_scale: f64,
    /// A joint limit becomes a constraint row when the joint is closer than
    /// this to its stop (rad or m), or would cross it in the step.
    pub limit_margin: f64,
    /// How the simulator's own solve sees `G` (see [`DelassusPath`]).
    pub delassus: DelassusPath,
    /// Set aside, before the solve, the contacts that open on their own: a
    /// gap (`φ > 0`) that the free velocity widens or closes by less than
    /// `φ` in the step (`J_N v_f + φ/dt > 0`). The problem is solved without
    /// them, and any of them the answer would violate (`J_N v⁺ + φ/dt <
    /// −tolerance`) is taken back and the problem solved again, so the
    /// answer solves the whole NCP (see `src/sim/screen.rs`). Only on the
    /// CPU, for the NCP's solvers, not in steps that are differentiated.
    #[serde(default = "yes")]
    pub screen_contacts: bool,
}

fn yes() -> bool {
    true
}

/// Whether a step forms the dense Delassus matrix `G = J M⁻¹ Jᵀ` or hands
/// the solver its factors ([`crate::contact::TreeDelassus`]). Only solvers
/// with [`ContactSolver::solves_tree`](crate::contact::ContactSolver::solves_tree) (`ncp-admm`, `ccp-admm`) take the
/// tree path; the others, and every problem prepared for an outside solver
/// ([`Simulator::prepare`](super::Simulator::prepare), the GPU), get the dense `G`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum DelassusPath {
    /// The tree path when the problem has at least
    /// [`TREE_ROWS_PER_DOF`] rows per dof (measured, see its notes).
    #[default]
    Auto,
    Dense,
    Tree,
}

/// [`DelassusPath::Auto`] takes the tree path when `m ≥ TREE_ROWS_PER_DOF · nv`.
///
/// Measured on whole `ncp-admm` steps (`cargo bench --bench tree_delassus`,
/// one core, 2026-11-24), tree against dense: the pyramid (m/nv = 3) 0.19×,
/// a 3 × 3 grid of boxes (2) 0.21×, the stacked cubes (2 to 3) 0.90×, the
/// resting cube (2) 0.94×, the walker (1.8) 1.01×, the standing quadruped
/// (0.7) 1.07×, the hopper (1.3) 1.10×. On the humanoid lying down (m/nv
/// near 1) each solve takes hundreds of iterations, and one iteration costs
/// two products with `J` and a solve with `M` where the dense path has one
/// `m × m` product: 1.6× per solve.
pub const TREE_ROWS_PER_DOF: f64 = 1.5;

impl std::str::FromStr for DelassusPath {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(DelassusPath::Auto),
            "dense" => Ok(DelassusPath::Dense),
            "tree" => Ok(DelassusPath::Tree),
            _ => Err(format!("unknown Delassus path {s:?} (auto, dense, tree)")),
        }
    }
}

impl DelassusPath {
    /// Whether a problem of `m` rows over `nv` dofs takes the tree path
    /// (with a solver that can).
    pub fn tree(self, m: usize, nv: usize) -> bool {
        match self {
            DelassusPath::Auto => m as f64 >= TREE_ROWS_PER_DOF * nv as f64,
            DelassusPath::Dense => false,
            DelassusPath::Tree => true,
        }
    }
}

impl Default for SimParams {
    fn default() -> Self {
        SimParams {
            dt: 1e-3,
            solver: SolverKind::DEFAULT,
            solver_settings: SolverSettings::default(),
            baumgarte: 0.2,
            max_recovery_speed: None,
            max_equality_recovery_speed: default_equality_recovery(),
            contact_margin: 5e-3,
            bounce_velocity: 0.1,
            warm_start: true,
            compliance: 0.0,
            mocap_compliance: DEFAULT_MOCAP_COMPLIANCE,
            penetration_compliance: 0.0,
            friction_scale: 1.0,
            limit_margin: 0.01,
            delassus: DelassusPath::Auto,
            screen_contacts: true,
        }
    }
}

/// The default [`SimParams::max_equality_recovery_speed`]: 5 m/s (rad/s).
/// MuJoCo's default weld (`solref` 0.02 s, critically damped) closes an
/// error `e` at a peak speed of about `e / (0.02 s · ℯ)`: 9 m/s for the
/// 0.49 m Meta-World's hand starts from its mocap weld once its arm is in
/// range. At 5 m/s moreau's welds close it nearly as fast (every body of
/// the 44 scenes within MuJoCo's own spread every 0.25 s of a passive
/// settle, `tests/mjcf_corpus.rs`), where 1 m/s (the bound until
/// 2026-12-08) left the hand 26 cm from MuJoCo's at 0.25 s. Not higher: a
/// mocap target out of reach pulls each step with an impulse of about
/// `bound / (α s)` ([`SimParams::mocap_compliance`]), and the taut arm's
/// explicit step rings once `bound · dt / (α L)` nears 4 (`L` its length):
/// two 0.5 m links at `dt` 2 ms and α 0.01 ring at 33 rad/s with 10 m/s
/// and come to rest with 5 (`tests/equality_tendon_friction.rs`).
pub const DEFAULT_EQUALITY_RECOVERY: f64 = 5.0;

fn default_equality_recovery() -> Option<f64> {
    Some(DEFAULT_EQUALITY_RECOVERY)
}

/// The default [`SimParams::mocap_compliance`].
pub const DEFAULT_MOCAP_COMPLIANCE: f64 = 1e-2;

fn default_mocap_compliance() -> f64 {
    DEFAULT_MOCAP_COMPLIANCE
}

/// The [`SimParams::penetration_compliance`] measured to hold the starts
/// that overlap in the files users bring (Meta-World's wedged objects,
/// robosuite's Tiago; docs/robot-files.md): 1.
pub const OVERLAP_COMPLIANCE: f64 = 1.0;

/// The penetration (m) beyond which [`SimParams::penetration_compliance`]
/// acts.
pub const PENETRATION_COMPLIANCE_ONSET: f64 = crate::collision::DEEP_PENETRATION;

/// The penetration `D` (m) past [`PENETRATION_COMPLIANCE_ONSET`] at which
/// [`SimParams::penetration_compliance`] reaches half its full `α·s`.
pub const PENETRATION_COMPLIANCE_DEPTH: f64 = 5e-3;

impl SimParams {
    /// The default parameters with the time step `dt`.
    pub fn with_dt(dt: f64) -> Self {
        SimParams {
            dt,
            ..Default::default()
        }
    }

    /// The velocity asked of a row whose position error `e` is a
    /// violation: `β e / dt`, bounded by [`Self::max_recovery_speed`].
    #[inline]
    pub fn recovery(&self, e: f64) -> f64 {
        let r = self.baumgarte * e / self.dt;
        match self.max_recovery_speed {
            Some(v) => r.clamp(-v, v),
            None => r,
        }
    }

    /// The velocities asked of a `connect`'s or `weld`'s position (or
    /// orientation) error vector `e` (world axes): `β e / dt`, its norm
    /// bounded by [`Self::max_recovery_speed`] and
    /// [`Self::max_equality_recovery_speed`] (the direction kept, so that
    /// the recovery does not depend on the world's axes).
    pub fn equality_recovery_vector(&self, e: [f64; 3]) -> [f64; 3] {
        let r = e.map(|e| self.baumgarte * e / self.dt);
        let norm = r.iter().map(|x| x * x).sum::<f64>().sqrt();
        let bound = [self.max_recovery_speed, self.max_equality_recovery_speed]
            .into_iter()
            .flatten()
            .fold(f64::INFINITY, f64::min);
        if norm > bound {
            r.map(|x| x * (bound / norm))
        } else {
            r
        }
    }

    /// [`Self::recovery`] of an equality's error, bounded by
    /// [`Self::max_equality_recovery_speed`] too.
    #[inline]
    pub fn equality_recovery(&self, e: f64) -> f64 {
        let r = self.recovery(e);
        match self.max_equality_recovery_speed {
            Some(v) => r.clamp(-v, v),
            None => r,
        }
    }

    /// `∂/∂e` of [`Self::recovery`]: `β / dt`, or 0 where the bound holds.
    #[inline]
    pub fn recovery_slope(&self, e: f64) -> f64 {
        match self.max_recovery_speed {
            Some(v) if (self.baumgarte * e / self.dt).abs() > v => 0.0,
            _ => self.baumgarte / self.dt,
        }
    }

    /// The compliance of a contact's normal row at distance `phi` whose
    /// three `G_kk` have the mean `s` ([`Self::penetration_compliance`]):
    /// `α·s·e² / (e² + D²)` for `e = −φ − d₀ > 0`, else 0. Continuously
    /// differentiable in `φ`.
    #[inline]
    pub fn penetration_compliance_at(&self, phi: f64, s: f64) -> f64 {
        let e = (-phi - PENETRATION_COMPLIANCE_ONSET).max(0.0);
        let d2 = PENETRATION_COMPLIANCE_DEPTH * PENETRATION_COMPLIANCE_DEPTH;
        self.penetration_compliance * s.max(0.0) * e * e / (e * e + d2)
    }

    /// `∂/∂φ` of [`Self::penetration_compliance_at`] (`s` held).
    #[inline]
    pub fn penetration_compliance_slope(&self, phi: f64, s: f64) -> f64 {
        let e = (-phi - PENETRATION_COMPLIANCE_ONSET).max(0.0);
        let d2 = PENETRATION_COMPLIANCE_DEPTH * PENETRATION_COMPLIANCE_DEPTH;
        let k = e * e + d2;
        -self.penetration_compliance * s.max(0.0) * 2.0 * e * d2 / (k * k)
    }

    /// The scale `s = tr G_c / 3` of contact `i`'s compliance from the
    /// diagonal entries `g(r, r)` of its three rows `3i..3i + 3`.
    #[inline]
    pub fn penetration_scale(i: usize, mut g: impl FnMut(usize) -> f64) -> f64 {
        (0..3).map(|r| g(3 * i + r)).sum::<f64>() / 3.0
    }

    /// The error at which [`Self::recovery`] reaches its bound, `v dt / β`
    /// (`None`: unbounded, or β = 0): a kink of the step in `q`.
    pub fn recovery_kink(&self) -> Option<f64> {
        let v = self.max_recovery_speed?;
        (self.baumgarte > 0.0).then(|| v * self.dt / self.baumgarte)
    }

    pub fn validate(&self) -> Result<(), SimError> {
        let bad = |name, reason: String| Err(SimError::InvalidParameter { name, reason });
        for (name, bound) in [
            ("max_recovery_speed", self.max_recovery_speed),
            (
                "max_equality_recovery_speed",
                self.max_equality_recovery_speed,
            ),
        ] {
            if let Some(v) = bound
                && !(v.is_finite() && v > 0.0)
            {
                return bad(
                    name,
                    format!("must be positive and finite (or unset), got {v}"),
                );
            }
        }
        if !(self.dt.is_finite() && self.dt > 0.0) {
            return bad("dt", format!("must be positive, got {}", self.dt));
        }
        if !(self.bounce_velocity.is_finite() && self.bounce_velocity >= 0.0) {
            return bad(
                "bounce_velocity",
                format!("must be finite and ≥ 0, got {}", self.bounce_velocity),
            );
        }
        if !(0.0..=1.0).contains(&self.baumgarte) {
            return bad(
                "baumgarte",
                format!("must be in [0, 1], got {}", self.baumgarte),
            );
        }
        if !(self.contact_margin.is_finite() && self.contact_margin >= 0.0) {
            return bad(
                "contact_margin",
                format!("must be ≥ 0, got {}", self.contact_margin),
            );
        }
        for (name, alpha) in [
            ("compliance", self.compliance),
            ("mocap_compliance", self.mocap_compliance),
            ("penetration_compliance", self.penetration_compliance),
        ] {
            if !(alpha.is_finite() && alpha >= 0.0) {
                return bad(name, format!("must be finite and ≥ 0, got {alpha}"));
            }
        }
        if !(self.friction_scale.is_finite() && self.friction_scale >= 0.0) {
            return bad(
                "friction_scale",
                format!("must be finite and ≥ 0, got {}", self.friction_scale),
            );
        }
        if !(self.limit_margin.is_finite() && self.limit_margin >= 0.0) {
            return bad(
                "limit_margin",
                format!("must be finite and ≥ 0, got {}", self.limit_margin),
            );
        }
        if let Err(crate::error::ProblemError::InvalidSetting { name, reason }) =
            self.solver_settings.validate()
        {
            return bad(name, reason);
        }
        Ok(())
    }
}
