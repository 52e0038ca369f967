//! The contact solver catalog. Each solver takes a [`ContactProblem`] and
//! fills a [`ContactSolution`] (`λ`, `c` and [`SolverStats`]); none reads the
//! model. Every solver starts from the problem's warm start, and stops when
//! its model's `ε_abs` (see [`crate::contact::criteria`]) falls below
//! `SolverSettings::tolerance` or after `max_iterations`; `raisim`, whose
//! fixed points solve no cone problem, stops on its own fixed-point residual
//! (see [`Raisim`]).
//!
//! | name        | model (what it relaxes)                     | algorithm                          |
//! |-------------|---------------------------------------------|------------------------------------|
//! | `lcp-pgs`   | LCP: cone → pyramid                          | per-contact projected Gauss-Seidel |
//! | `ccp-pgs`   | CCP: drops `Γ` (sliding contacts separate)   | per-contact projected Gauss-Seidel |
//! | `ccp-admm`  | CCP, optional compliance `R = α diag(G)`     | global ADMM, `G + R + ρI` factorized once |
//! | `raisim`    | RaiSim: MDP replaced by a per-contact rule   | per-contact bisection              |
//! | `raisim-ds` | NCP (per-contact exact with de Saxcé)        | per-contact bisection              |
//! | `ncp-pgs`   | NCP                                          | per-contact projected Gauss-Seidel |
//! | `ncp-admm`  | NCP                                          | global ADMM, de Saxcé fixed point, adaptive ρ |
//! | `staggered` | NCP                                          | alternating normal / friction QPs  |

pub(crate) mod admm;
pub(crate) mod newton;
pub(crate) mod pgs;
pub(crate) mod polish;
pub(crate) mod raisim;
mod staggered;

pub use admm::AdmmSolver;
pub use pgs::{CcpPgs, LcpPgs, NcpPgs};
pub use raisim::Raisim;
pub use staggered::Staggered;

use super::cone::Pyramid;
use super::{ContactModel, ContactProblem, Residuals};
use crate::error::ProblemError;
use nalgebra::DVector;
use std::str::FromStr;

/// Stopping and tuning parameters shared by the solvers.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SolverSettings {
    pub max_iterations: usize,
    /// Target `ε_abs`.
    pub tolerance: f64,
    /// Over-relaxation factor (1 = none); used by ADMM (relaxed x-update) and PGS.
    pub over_relaxation: f64,
    /// ADMM: initial penalty `ρ`; `None` picks it from the spectrum of `G`.
    pub rho: Option<f64>,
    /// ADMM: adapt `ρ` by residual balancing (refactorizing `G + R + ρI`).
    /// `ccp-admm` never adapts: it factorizes once.
    pub adaptive_rho: bool,
    /// `lcp-pgs`: number of facets of the friction pyramid (≥ 3).
    pub pyramid_facets: usize,
    /// `ncp-admm`: polish the warm start and every 20th iterate by an
    /// active-set solve (see `solvers/polish.rs`), ending the run when that
    /// solves the problem. The GPU `ncp-admm` polishes too (in f32, see
    /// `shaders/admm.wgsl`): set it to false to compare the ADMM iterations
    /// alone, or to run a fixed number of them.
    pub polish: bool,
    /// `ncp-admm`, with `polish`: where a polish fails, a few semismooth
    /// Newton steps on the Alart–Curnier function from the same iterate
    /// (see `solvers/newton.rs`), ending the run when they solve the problem.
    /// On the CPU, also the fallback where ADMM reaches its cap
    /// unconverged: `ncp-pgs` sweeps from ADMM's best iterate (at most
    /// `max_iterations` more; on the tree path over a dense copy of `G`),
    /// kept where they end with a smaller `ε_abs`.
    pub newton: bool,
    /// `ncp-admm`: when `ε_abs` gains less than 1 % in 100 iterations,
    /// raise ρ tenfold and keep the residual balancing above it (the de
    /// Saxcé fixed point cycles at small ρ on ill-conditioned problems).
    /// The GPU `ncp-admm` guards too: set it to false, with `polish`, to
    /// compare bare ADMM iterations.
    pub stall_guard: bool,
    /// The GPU's ADMM (f32): stop at f32's floor under `ε_abs` where it is
    /// over the tolerance, and where the solve stalls near it (see
    /// [`criteria::FLOOR_STALL_FACTOR`](super::criteria::FLOOR_STALL_FACTOR)).
    /// False: run to the tolerance or the cap, as fixed-iteration
    /// benchmarks do (a tolerance of 1e-30).
    pub f32_floor: bool,
    /// `ncp-admm` and `ccp-admm`: ρ scaled per row by the
    /// diagonal of `G + R` (averaged over each contact's cone, relative to
    /// the largest, floored at 1e-6 of it), where the rows' scales span
    /// more than 10× (`ccp-admm` from the start, `ncp-admm` at its first
    /// stall, or from the start above 1e5), so that a contact `G` barely
    /// moves and a light wrist's stop (`G_kk` 1e-3 and 7.5e3 on robosuite's
    /// UR5e) converge alike, on the CPU and the GPU kernels; false: one ρ
    /// for every row.
    #[serde(default = "scaled_rho_default")]
    pub scaled_rho: bool,
}

fn scaled_rho_default() -> bool {
    true
}

impl SolverSettings {
    pub fn validate(&self) -> Result<(), ProblemError> {
        let bad = |name, reason: String| Err(ProblemError::InvalidSetting { name, reason });
        if !(self.tolerance.is_finite() && self.tolerance > 0.0) {
            return bad(
                "tolerance",
                format!("must be positive and finite, got {}", self.tolerance),
            );
        }
        if !(self.over_relaxation > 0.0 && self.over_relaxation < 2.0) {
            return bad(
                "over_relaxation",
                format!("must be in (0, 2), got {}", self.over_relaxation),
            );
        }
        if let Some(r) = self.rho
            && !(r.is_finite() && r > 0.0)
        {
            return bad("rho", format!("must be positive and finite, got {r}"));
        }
        if self.pyramid_facets < 3 {
            return bad(
                "pyramid_facets",
                format!(
                    "a pyramid needs at least 3 facets, got {}",
                    self.pyramid_facets
                ),
            );
        }
        Ok(())
    }
}

/// The default tolerance on `ε_abs` of one world's solve (`Simulator`,
/// `moreau run`, `moreau solve`, `moreau.Simulator`, `moreau.solve`). Batches
/// default to [`crate::batch::GPU_MIN_TOLERANCE`] instead, so that every
/// backend, the f32 GPU kernels included, runs the same settings.
pub const DEFAULT_TOLERANCE: f64 = 1e-8;

/// The default iteration cap of a solve.
pub const DEFAULT_MAX_ITERATIONS: usize = 1000;

impl Default for SolverSettings {
    fn default() -> Self {
        SolverSettings {
            max_iterations: DEFAULT_MAX_ITERATIONS,
            tolerance: DEFAULT_TOLERANCE,
            over_relaxation: 1.0,
            rho: None,
            adaptive_rho: true,
            pyramid_facets: 4,
            polish: true,
            newton: true,
            stall_guard: true,
            f32_floor: true,
            scaled_rho: true,
        }
    }
}

/// What a solve did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SolverStats {
    pub iterations: usize,
    pub converged: bool,
    /// Residuals of the returned `(λ, c)` under the solver's model (`raisim`:
    /// its last sweep's largest correction, reported as `dual` and `eps_abs`).
    pub residuals: Residuals,
    /// ADMM: final `ρ` (0 for other solvers).
    pub rho: f64,
    /// ADMM: number of `ρ` changes (each a refactorization).
    pub rho_updates: usize,
    /// ADMM: number of factorizations of `G + R + ρI` (0 when reused from the previous solve).
    pub factorizations: usize,
    /// Staggered projections: ADMM iterations spent in the sub-problems
    /// (`iterations` counts the outer alternations).
    pub inner_iterations: usize,
    /// ADMM (NCP): active-set polishes or Newton finishes that solved the problem.
    pub polishes: usize,
    /// ADMM (NCP, CPU, tree path): polishes that solved the problem with the
    /// factors kept from an earlier solve of the same unknowns (no
    /// factorization; counted in `polishes` too).
    pub reused_factors: usize,
    /// ADMM (NCP): steps of the semismooth Newton finisher (each a dense
    /// `m × m` LU), tried where the polish failed.
    pub newton_steps: usize,
    /// ADMM (NCP, CPU): sweeps of the `ncp-pgs` fallback run
    /// where ADMM reached its cap unconverged (counted whether or not their
    /// answer was kept; `iterations` counts ADMM's alone).
    pub fallback_sweeps: usize,
    /// The f32 kernels' floor under `ε_abs` at the returned `λ` (the GPU
    /// ADMM's `eps_floor`: what rounding `c` in f32 costs); 0 for the f64
    /// solvers, whose floor is far below any tolerance.
    pub eps_floor: f64,
}

impl SolverStats {
    /// Short of the tolerance, but within
    /// [`FLOOR_STALL_FACTOR`](super::criteria::FLOOR_STALL_FACTOR) of f32's
    /// floor: as far as an f32 solve goes (counted apart from the
    /// unconverged).
    pub fn at_floor(&self) -> bool {
        !self.converged && super::criteria::at_floor(self.residuals.eps_abs, self.eps_floor)
    }
}

/// A solution: `λ` and `c = (G + R) λ + g`, both (`3·nc + nl`), with stats.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContactSolution {
    pub lambda: DVector<f64>,
    pub c: DVector<f64>,
    pub stats: SolverStats,
}

impl ContactSolution {
    pub(crate) fn resize(&mut self, m: usize) {
        super::linalg::reshape_vector_zeroed(&mut self.lambda, m);
        super::linalg::reshape_vector_zeroed(&mut self.c, m);
        self.stats = SolverStats::default();
    }
}

/// A contact solver with its own reusable workspace.
pub trait ContactSolver: Send {
    /// Which solver of the catalog this is.
    fn kind(&self) -> SolverKind;
    /// Its catalog name.
    fn name(&self) -> &'static str {
        self.kind().name()
    }
    /// Solves `problem` (validated first) into `out`.
    fn solve(
        &mut self,
        problem: &ContactProblem,
        settings: &SolverSettings,
        out: &mut ContactSolution,
    ) -> Result<(), ProblemError>;
    /// What the solver carries from one solve to the next besides ρ: the
    /// Newton finisher's regularization scale that solved last (it is
    /// tried first next). Part of a world's warm start.
    fn finisher_scale(&self) -> usize {
        0
    }
    /// Sets what [`Self::finisher_scale`] returned; a scale this solver
    /// does not have is refused (false) and nothing changes.
    fn set_finisher_scale(&mut self, scale: usize) -> bool {
        scale == 0
    }
    /// Drops what the solver keeps from its last solves besides its warm
    /// start (ADMM's polish keeps the factors of its last system, and a
    /// solve that reuses them ends within the tolerance of one that does
    /// not, yet not bit for bit): the next solve then depends on the
    /// problem, the warm start and [`Self::finisher_scale`] only.
    fn forget_kept(&mut self) {}
    /// ADMM's final penalty in the last solve, to warm start the next one;
    /// `None` when that solve chose none (a warm start that solved it).
    fn last_rho(&self) -> Option<f64> {
        None
    }
    /// Whether [`Self::solve_tree`] is implemented (the solver never needs
    /// the dense `G`).
    fn solves_tree(&self) -> bool {
        false
    }
    /// Solves `problem` with the Delassus operator `tree` in place of
    /// `problem.delassus` (not read): see [`crate::contact::TreeDelassus`].
    /// Only where [`Self::solves_tree`]; the others refuse.
    fn solve_tree(
        &mut self,
        _problem: &ContactProblem,
        _tree: &crate::contact::TreeDelassus,
        _settings: &SolverSettings,
        _out: &mut ContactSolution,
    ) -> Result<(), ProblemError> {
        Err(ProblemError::InvalidSetting {
            name: "delassus",
            reason: format!("{} needs the dense Delassus matrix", self.name()),
        })
    }
}

/// The solvers a user can pick by name (`--solver NAME`); see the module
/// table. [`SolverKind::spec`] is the one place that says what each one
/// solves, how, and where it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum SolverKind {
    LcpPgs,
    CcpPgs,
    CcpAdmm,
    Raisim,
    RaisimDs,
    NcpPgs,
    /// The default.
    NcpAdmm,
    Staggered,
}

/// The contact law a solver's solutions satisfy (see [`ContactModel`],
/// which evaluates it; the LCP's pyramid comes from the settings).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Law {
    Ncp,
    Ccp,
    Lcp,
}

/// How a solver iterates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// Per-contact projected Gauss-Seidel sweeps.
    ProjectedGaussSeidel,
    /// Per-contact Gauss-Seidel sweeps with RaiSim's exact 1-D bisection step.
    Bisection,
    /// Global ADMM on all contacts at once.
    Admm,
    /// Alternating normal and friction sub-problems, each solved by ADMM.
    StaggeredProjections,
}

/// The batched WGSL kernels (`shaders/<kernel>.wgsl`, driven by `src/gpu/<kernel>.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    Pgs,
    Admm,
}

/// What a kernel's `Params::model` selects: the law and the local step. The
/// WGSL constants `MODEL_*` are generated from this enum (`src/gpu/header.rs`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelModel {
    Ncp = 0,
    Ccp = 1,
    Lcp = 2,
    /// RaiSim's step; stops on its largest local correction.
    Raisim = 3,
    /// RaiSim's step with de Saxcé's correction; stops on the NCP's `ε_abs`.
    RaisimDs = 4,
}

impl KernelModel {
    pub const ALL: [KernelModel; 5] = [
        KernelModel::Ncp,
        KernelModel::Ccp,
        KernelModel::Lcp,
        KernelModel::Raisim,
        KernelModel::RaisimDs,
    ];
    /// The WGSL constant's name.
    pub fn wgsl_name(self) -> &'static str {
        match self {
            KernelModel::Ncp => "MODEL_NCP",
            KernelModel::Ccp => "MODEL_CCP",
            KernelModel::Lcp => "MODEL_LCP",
            KernelModel::Raisim => "MODEL_RAISIM",
            KernelModel::RaisimDs => "MODEL_RAISIM_DS",
        }
    }
}

/// One row of the solver catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SolverSpec {
    pub name: &'static str,
    /// `None`: RaiSim, whose fixed points solve no cone problem.
    pub law: Option<Law>,
    pub algorithm: Algorithm,
    /// The GPU kernel that runs it and the model that kernel is given.
    pub gpu: Option<(Kernel, KernelModel)>,
    /// Whether `gpu::cpu_f32` runs its kernel's f32 twin on one CPU core.
    pub f32_twin: bool,
}

impl SolverKind {
    pub const ALL: [SolverKind; 8] = [
        SolverKind::LcpPgs,
        SolverKind::CcpPgs,
        SolverKind::CcpAdmm,
        SolverKind::Raisim,
        SolverKind::RaisimDs,
        SolverKind::NcpPgs,
        SolverKind::NcpAdmm,
        SolverKind::Staggered,
    ];

    /// The catalog: each solver's law, algorithm, kernel and twins.
    pub const fn spec(self) -> SolverSpec {
        use Algorithm::*;
        const fn row(
            name: &'static str,
            law: Option<Law>,
            algorithm: Algorithm,
            gpu: Option<(Kernel, KernelModel)>,
            f32_twin: bool,
        ) -> SolverSpec {
            SolverSpec {
                name,
                law,
                algorithm,
                gpu,
                f32_twin,
            }
        }
        let (pgs, admm) = (Kernel::Pgs, Kernel::Admm);
        match self {
            SolverKind::LcpPgs => row(
                "lcp-pgs",
                Some(Law::Lcp),
                ProjectedGaussSeidel,
                Some((pgs, KernelModel::Lcp)),
                true,
            ),
            SolverKind::CcpPgs => row(
                "ccp-pgs",
                Some(Law::Ccp),
                ProjectedGaussSeidel,
                Some((pgs, KernelModel::Ccp)),
                true,
            ),
            SolverKind::CcpAdmm => row(
                "ccp-admm",
                Some(Law::Ccp),
                Admm,
                Some((admm, KernelModel::Ccp)),
                false,
            ),
            SolverKind::Raisim => row(
                "raisim",
                None,
                Bisection,
                Some((pgs, KernelModel::Raisim)),
                false,
            ),
            SolverKind::RaisimDs => row(
                "raisim-ds",
                Some(Law::Ncp),
                Bisection,
                Some((pgs, KernelModel::RaisimDs)),
                false,
            ),
            SolverKind::NcpPgs => row(
                "ncp-pgs",
                Some(Law::Ncp),
                ProjectedGaussSeidel,
                Some((pgs, KernelModel::Ncp)),
                true,
            ),
            SolverKind::NcpAdmm => row(
                "ncp-admm",
                Some(Law::Ncp),
                Admm,
                Some((admm, KernelModel::Ncp)),
                false,
            ),
            SolverKind::Staggered => row(
                "staggered",
                Some(Law::Ncp),
                StaggeredProjections,
                None,
                false,
            ),
        }
    }

    /// The solver used where none is named: the NCP (Signorini, Coulomb,
    /// maximum dissipation) by ADMM, finished by the active-set polish and
    /// Newton steps. The command line, the Python bindings and `SimParams`
    /// all read it.
    pub const DEFAULT: SolverKind = SolverKind::NcpAdmm;

    pub fn name(&self) -> &'static str {
        self.spec().name
    }

    pub fn build(&self) -> Box<dyn ContactSolver> {
        match self {
            SolverKind::LcpPgs => Box::new(LcpPgs),
            SolverKind::CcpPgs => Box::new(CcpPgs::default()),
            SolverKind::CcpAdmm => Box::new(AdmmSolver::ccp()),
            SolverKind::Raisim => Box::new(Raisim::new(false)),
            SolverKind::RaisimDs => Box::new(Raisim::new(true)),
            SolverKind::NcpPgs => Box::new(NcpPgs),
            SolverKind::NcpAdmm => Box::new(AdmmSolver::ncp()),
            SolverKind::Staggered => Box::new(Staggered::default()),
        }
    }

    /// The contact model the solver imposes, with the settings' pyramid for
    /// the LCP (`None`: RaiSim, whose fixed points solve no cone problem).
    pub fn contact_model(&self, settings: &SolverSettings) -> Option<ContactModel> {
        self.spec().law.map(|law| match law {
            Law::Ncp => ContactModel::Ncp,
            Law::Ccp => ContactModel::Ccp,
            Law::Lcp => ContactModel::Lcp(Pyramid::new(settings.pyramid_facets)),
        })
    }

    /// Per-contact (Gauss-Seidel-like) rather than global.
    pub fn is_per_contact(&self) -> bool {
        matches!(
            self.spec().algorithm,
            Algorithm::ProjectedGaussSeidel | Algorithm::Bisection
        )
    }

    /// The GPU kernel that runs this solver, if any.
    pub fn kernel(&self) -> Option<Kernel> {
        self.spec().gpu.map(|(k, _)| k)
    }

    /// A comma-separated list of every name, for help and error messages.
    pub fn names() -> String {
        Self::names_where(|_| true)
    }

    /// A comma-separated list of the names of the solvers whose spec passes `keep`.
    pub fn names_where(keep: impl Fn(&SolverSpec) -> bool) -> String {
        SolverKind::ALL
            .iter()
            .map(|k| k.spec())
            .filter(|s| keep(s))
            .map(|s| s.name)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl FromStr for SolverKind {
    type Err = ProblemError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SolverKind::ALL
            .iter()
            .copied()
            .find(|k| k.name() == s)
            .ok_or_else(|| ProblemError::UnknownSolver {
                name: s.into(),
                known: SolverKind::names(),
            })
    }
}
