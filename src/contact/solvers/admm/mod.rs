//! ADMM on the global contact problem (after Carpentier, Le Lidec, Montaut,
//! "From compliant to rigid contact simulation: a unified and efficient
//! approach", RSS 2024), as a core shared by [`AdmmSolver`] (`ncp-admm`, `ccp-admm`) and the
//! sub-problems of [`super::Staggered`].
//!
//! The core solves `min ½ zᵀAz + (b + s)ᵀz, z ∈ C` with `A = G + diag(d)`
//! (n × n, PSD), a constraint set `C` given by its projection, and an
//! optional correction `s = s(Az + b)` held fixed within an iteration (de
//! Saxcé's `Γ` for the NCP, zero for convex problems). ADMM splits `x = z`
//! with scaled dual `u`:
//!
//! ```text
//! x⁺ = (A + ρI)⁻¹ (−(b + s) + ρ (z − u))
//! x̂  = α x⁺ + (1 − α) z                     (over-relaxation α)
//! z⁺ = P_C(x̂ + u)
//! u⁺ = u + x̂ − z⁺
//! s⁺ = s(A z⁺ + b)
//! ```
//!
//! At a fixed point `c + s = −ρu ∈ N_C(z)°`, i.e. `−(c + s) ∈ N_C(z)`: for the
//! friction cone that is `K_μ ∋ z ⟂ c + s ∈ K_μ*`. Warm start: `z = P_C(z₀)`
//! and `u = −(c(z₀) + s)/ρ`, so that an exact `z₀` is a fixed point from the
//! first iteration. `ρ` starts at the caller's value or `0.1·L` (`L` the
//! largest eigenvalue of `A`, by ten Lanczos steps: measured on Gymnasium's
//! humanoid lying down over 2000 steps, 93.9 % of the solves converged
//! against 82.3 % with the 20-step power iteration it replaced, whose lower
//! estimates set ρ too small), and may be adapted by
//! residual balancing on the normalized primal and dual ADMM residuals.
//!
//! **ρ scaled per row** (`SolverSettings::scaled_rho`, on by default): the
//! penalty is `ρW`, `W` diagonal, `w_k` the diagonal of `A` averaged over
//! each unit projected together (a contact's cone rows; a row alone),
//! relative to the largest, floored at [`WEIGHT_FLOOR`]; `ρI` above becomes
//! `ρW` and `u` is scaled by it. `W` is uniform within each cone, so the
//! projection in `W`'s norm is the Euclidean one and the fixed points are
//! unchanged: only the path to them is. One ρ for every row moves a row
//! whose `G_kk` is far below ρ by about `G_kk/ρ` of its error per
//! iteration: robosuite's UR5e has contacts at `G_kk` 1e-3 beside a wrist
//! stop at 7.5e3 (problems of rank 6 in 25 rows), where ADMM with one ρ
//! reached its cap on all of 50 dumped problems and the scaled one
//! converges on 24 (`tests/solvers.rs`). When: only where the units'
//! diagonals span more than [`SCALED_SPREAD`]; `ccp-admm` from the start;
//! `ncp-admm` from the start above [`SCALED_AT_START`], else at its first
//! stall (where the stall guard would raise ρ), since one large ρ on the
//! light rows keeps a good warm start's modes for the polish. The GPU
//! kernels follow the same rule (`shaders/admm.wgsl` `scaled_weights`,
//! `stall_guarded`).
//!
//! The Cholesky factor of `A + ρI` is kept between solves: a solve whose `A`
//! and `ρ` are bit-identical to the previous one's (a resting body, a batch
//! of copies) reuses it for an `O(n²)` comparison instead of `O(n³/3)` flops.
//! Each change of `ρ` costs one refactorization; changes are rate-limited:
//! at most one per `RHO_MIN_INTERVAL` iterations, only when the normalized
//! primal and dual residuals differ by more than `RHO_RATIO`, and then by
//! the square root of their ratio, at most `RHO_MAX_STEP`.
//!
//! A model may polish (`AdmmModel::polish`; the NCP's cones do, see
//! [`super::polish`] and [`super::newton`]): with `SolverSettings::polish`,
//! the warm start (before the spectrum estimate and any factorization) and
//! every `POLISH_INTERVAL`-th iterate are offered to an active-set solve,
//! then, where it fails (and for the warm start only once the first
//! factorization has checked that `G` is PSD), to a few semismooth Newton
//! steps; an answer that meets the tolerance ends the run, any other is
//! dropped (adopting a better but unconverged answer as the next iterate
//! was measured to slow ADMM down on the walker's problems). Polishing
//! before the Lanczos estimate saves it on most warm-started solves: the
//! quadruped's steps/s went from 52 k to 81 k, the walker's from 89 k to
//! 114 k (`moreau run`, 3000 steps).
//!
//! `G` is dense ([`Delassus::Dense`]) or kept as its factors `J` and `M`
//! ([`Delassus::Tree`], see [`crate::contact::TreeDelassus`]): then every
//! product with `G` and every solve with `G + R + ρI` goes through them
//! (`O(m·s + nv·depth)` per iteration, a change of ρ refactorizes an
//! `nv × nv` matrix), and both paths run the same iterations.
//!
//! Why refactorize rather than make ρ changes free with an eigendecomposition
//! `A = QΛQᵀ` (then `(A + ρI)⁻¹ = Q(Λ + ρ)⁻¹Qᵀ` for any ρ, at the same
//! `O(n²)` per solve): the decomposition costs about 27 Cholesky
//! factorizations, and measured over 1000 steps with `ncp-admm` the
//! quadruped changes ρ 2.3 times per solve (n = 12: 3.4 factorizations of
//! 576 flops each), the stacked cubes 2.0 times, the pyramid 0.006 times
//! (n = 108; 0.54 factorizations per solve, the rest reused or skipped by
//! an exact warm start). Refactorizing is the cheaper choice at these rates.

use super::newton::newton;
use super::pgs::NcpPgs;
use super::polish::{PolishWork, polish};
use super::{ContactSolution, ContactSolver, SolverKind, SolverSettings, SolverStats};
use crate::contact::RowSet;
use crate::contact::criteria::{ContactModel, nan_max, rows_residuals_with};
use crate::contact::linalg::{cholesky_in_place, cholesky_solve_in_place, lanczos_largest};
use crate::contact::operator::{Delassus, DelassusOperator};
use crate::contact::tree::{TreeDelassus, TreeFactor};
use crate::contact::wide::{ConeRows, correct_problem, project_problem};
use crate::contact::{ContactProblem, Residuals};
use crate::error::ProblemError;

mod solver;
pub use solver::AdmmSolver;

/// Residual-balancing trigger: adapt ρ when the normalized primal and dual
/// residuals differ by more than this ratio.
pub(crate) const RHO_RATIO: f64 = 10.0;
/// A run whose `ε_abs` exceeds this factor times its starting value has diverged.
pub(crate) const DIVERGENCE_FACTOR: f64 = 1e4;
/// Minimum iterations between two changes of ρ.
pub(crate) const RHO_MIN_INTERVAL: usize = 5;
/// Largest factor by which one update may change ρ.
pub(crate) const RHO_MAX_STEP: f64 = 10.0;
/// ρ stays within [RHO_RANGE.0, RHO_RANGE.1] × L (L the largest eigenvalue of A).
pub(crate) const RHO_RANGE: (f64, f64) = (1e-6, 1e3);

/// Lanczos steps of the estimate of the largest eigenvalue of `A`.
pub(crate) const LANCZOS_STEPS: usize = 10;

/// The smallest of ρ's per-row weights relative to the largest
/// (`SolverSettings::scaled_rho`): a row `G` cannot move still gets a
/// penalty.
pub(crate) const WEIGHT_FLOOR: f64 = 1e-6;
/// ρ is scaled per row only where the units' diagonals span more than this
/// factor (robosuite's UR5e 1e10, dm_control's dog 1e4, Gymnasium's
/// humanoid lying down 7e2; the box pyramid's 1.75, whose loose-tolerance
/// trajectory scaled weights within that factor sent into ADMM on 820 of
/// 2 000 steps instead of 40: `tests/solver_polish.rs`): from the start
/// for `ccp-admm`, for `ncp-admm` where the stall guard would first raise
/// ρ (then instead of raising it), or from the start above
/// [`SCALED_AT_START`].
pub(crate) const SCALED_SPREAD: f64 = 10.0;
/// `ncp-admm` scales ρ from the start where the units' diagonals span more
/// than this: with one ρ near `0.1·L` the smallest row then moves by at
/// most 1e-4 of its error per iteration, short of converging within the
/// cap (robosuite's UR5e, 1e10: unconverged solves 50 → 28 of 2 000 when
/// scaled at the stall, → 9 from the start). Below it the warm start's
/// modes are kept by the large penalty on light rows, which Meta-World's
/// `sweep_tool` needs (12 contacts of the tool on its table, 3e4: scaled
/// from the start its polish at the 20th iteration failed where one ρ's
/// succeeded; 3 → 5 of 60 dumped problems unconverged, 2 → 6 of 2 000 in
/// a run, up to 60 tolerances).
pub(crate) const SCALED_AT_START: f64 = 1e5;

/// What distinguishes one ADMM problem from another.
pub(crate) trait AdmmModel {
    /// `z = P_C(v)`.
    fn project(&self, v: &[f64], z: &mut [f64]);
    /// The correction `s` for the velocity `c = Az + b` (zero for convex problems).
    fn correction(&self, c: &[f64], s: &mut [f64]);
    /// Convergence residuals of `z` with velocity `c`.
    fn residuals(&self, z: &[f64], c: &[f64]) -> Residuals;
    /// Whether `correction` is non-zero (the fixed-point iteration may then
    /// diverge from a bad warm start, and is restarted cold).
    fn corrected(&self) -> bool;
    /// Averages the per-row weights `w` (ρ's diagonal scaling) over each
    /// unit of rows projected together (a friction cone), so that the
    /// projection in the weighted norm is the Euclidean one; `false` where
    /// the model takes no scaling (the weights are then all 1).
    fn unit_weights(&self, _w: &mut [f64]) -> bool {
        false
    }
    /// Whether [`Self::polish`] tries Newton steps (with [`Finisher::Newton`]).
    fn newton(&self) -> bool {
        false
    }
    /// Offers active-set polishes of the iterate `z` and, where they fail,
    /// Newton iterates from it (as `finisher` says) to `accept`, which
    /// returns each one's `ε_abs` or `None` to stop (see [`super::polish`],
    /// [`super::newton`]); none by default.
    #[allow(clippy::too_many_arguments)]
    fn polish(
        &self,
        _work: &mut PolishWork,
        _a: &Delassus,
        _d: &[f64],
        _b: &[f64],
        _z: &[f64],
        _candidate: &mut [f64],
        _finisher: Finisher,
        _accept: &mut dyn FnMut(&[f64]) -> Option<f64>,
    ) {
    }
}

/// Which finishers [`AdmmModel::polish`] tries on an iterate.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Finisher {
    /// The active-set polish only (no factorization of `G` has checked it yet).
    Polish,
    /// The Newton steps only.
    Newton,
    /// The polish, then Newton where it fails.
    Both,
}

/// Iterations without a 1 % gain of `ε_abs` after which `ncp-admm` raises
/// ρ (`SolverSettings::stall_guard`; measured on dumped problems: 100 beat
/// 30 and 50 on the humanoid's, all three solved Solo-12's).
pub(crate) const STALL_WINDOW: usize = 100;

/// Iterations between two polishing attempts (see [`super::polish`]).
pub(crate) const POLISH_INTERVAL: usize = 20;
/// Direction refinements per polishing attempt.
pub(crate) const POLISH_ROUNDS: usize = 4;
/// The most rows `m` of a problem `ncp-admm` takes Newton steps on (each
/// step a dense LU of up to `m × m`). Measured on the box pyramid (108
/// rows; `moreau run docs/experiments/piles/pyramid.xml --passive --steps
/// 3000`, 2026-11-29): with Newton, its solves (2 ms each) and ADMM's runs
/// between them took half the run while the pile settled, and the pile
/// came to rest differently (up to 38 contacts instead of 36); without,
/// the polish finished every solve ADMM did not. The lying humanoid's
/// problems (up to 40 rows), where Newton is needed, stay under it.
pub(crate) const NEWTON_MAX_ROWS: usize = 96;
/// With the polish on, the tolerance a warm start or a polished answer must
/// meet when the solve's own is looser (`min(tolerance, WARM_TOLERANCE)`;
/// the default tolerance is this). ADMM's iterates still stop at the solve's
/// tolerance, and one polish then tries to finish them to this. Each
/// accepted answer leaves its residual in the next step's velocities: at
/// `--tol 1e-6` the pyramid's warm starts kept passing loosely, the polish
/// from them failed, and ADMM ran on 755 of 2 000 steps (4 074 steps/s
/// against 11 650 at 1e-8; `moreau run pyramid --steps 2000 --tol T`,
/// 2026-11-29). With this rule ADMM ran on 40 (9 355 steps/s).
pub(crate) const WARM_TOLERANCE: f64 = 1e-8;

/// How a run is tuned.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AdmmOptions {
    pub adaptive: bool,
    /// Starting ρ (`None`: `0.1·L`).
    pub rho: Option<f64>,
}

/// Workspaces and the kept factorization.
#[derive(Default)]
pub(crate) struct AdmmCore {
    chol: Vec<f64>,
    tree: TreeFactor,
    /// `d + ρ` of the tree path's factorization.
    delta: Vec<f64>,
    /// `A` as last factorized, and the `ρ` added to it (NaN: none).
    factored: Vec<f64>,
    factored_rho: f64,
    /// ρ's per-row weights (`ρ W` is added to `A`), and those factorized.
    weights: Vec<f64>,
    factored_weights: Vec<f64>,
    diag: Vec<f64>,
    x: Vec<f64>,
    z_prev: Vec<f64>,
    u: Vec<f64>,
    s: Vec<f64>,
    tmp: Vec<f64>,
    best: Vec<f64>,
    polish: PolishWork,
    polish_z: Vec<f64>,
    polish_c: Vec<f64>,
    polish_best: Vec<f64>,
    /// The `ncp-pgs` fallback's start and answer.
    fallback_start: Vec<f64>,
    fallback: ContactSolution,
}

fn inf_norm(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |a, &x| nan_max(a, x.abs()))
}

impl AdmmCore {
    /// See [`super::ContactSolver::forget_kept`].
    pub(crate) fn forget_kept(&mut self) {
        self.polish.forget_kept();
    }
    /// Factorizes `G + diag(d) + ρW` (`W` the current weights) unless that
    /// exact matrix is already factored (for the tree path: the same `J`,
    /// `M`, `d`, `ρ` and `W`). Returns whether it factorized.
    fn factorize(&mut self, a: &Delassus, d: &[f64], rho: f64) -> Result<bool, ProblemError> {
        let n = d.len();
        match a {
            Delassus::Dense(a) => {
                let same = self.factored.len() == n * n
                    && self.factored_rho == rho
                    && self.factored_weights == self.weights
                    && (0..n).all(|j| {
                        (0..n).all(|i| {
                            let v = a[(i, j)] + if i == j { d[i] } else { 0.0 };
                            v.to_bits() == self.factored[j * n + i].to_bits()
                        })
                    });
                if same {
                    return Ok(false);
                }
                self.factored.clear();
                self.factored.extend_from_slice(a.as_slice());
                for i in 0..n {
                    self.factored[i * n + i] += d[i];
                }
                self.chol.clear();
                self.chol.extend_from_slice(&self.factored);
                for i in 0..n {
                    self.chol[i * n + i] += rho * self.weights[i];
                }
                self.factored_rho = f64::NAN;
                cholesky_in_place(&mut self.chol, n).map_err(|(j, pivot)| {
                    ProblemError::NotPsd {
                        index: j,
                        value: pivot - rho * self.weights[j],
                    }
                })?;
            }
            Delassus::Tree(t) => {
                let (j, m) = (t.jacobian().jacobian.as_slice(), t.mass().as_slice());
                let key = j.iter().chain(m).chain(d);
                let same = self.factored_rho == rho
                    && self.factored_weights == self.weights
                    && self.factored.len() == j.len() + m.len() + n
                    && key
                        .clone()
                        .zip(&self.factored)
                        .all(|(x, y)| x.to_bits() == y.to_bits());
                if same {
                    return Ok(false);
                }
                self.factored.clear();
                self.factored.extend(key);
                self.factored_rho = f64::NAN;
                self.delta.clear();
                self.delta
                    .extend(d.iter().zip(&self.weights).map(|(di, wi)| di + rho * wi));
                // A failing pivot is M's (K = M + JᵀΔ⁻¹J with Δ > 0).
                self.tree
                    .factorize(t, &self.delta)
                    .map_err(|(j, pivot)| ProblemError::NotPsd {
                        index: j,
                        value: pivot,
                    })?;
            }
        }
        self.factored_rho = rho;
        self.factored_weights.clone_from(&self.weights);
        Ok(true)
    }

    /// Estimate of the largest eigenvalue of `G + diag(d)` by
    /// [`LANCZOS_STEPS`] Lanczos steps (a lower bound; it sets ρ's scale).
    fn largest_eigenvalue(&mut self, a: &Delassus, d: &[f64]) -> f64 {
        let n = d.len();
        self.z_prev.clear();
        self.z_prev.resize(n, 0.0);
        let zero = &self.z_prev;
        lanczos_largest(n, LANCZOS_STEPS, &mut self.tmp, |x, out| {
            a.affine(d, zero, x, out)
        })
    }

    /// ρ's per-row weights for this problem: where the model takes them
    /// and its units' diagonals span more than `spread` (∞: never), the
    /// diagonal of `A` averaged over each unit, relative to the largest,
    /// floored at [`WEIGHT_FLOOR`]; else 1 everywhere.
    fn set_weights(&mut self, model: &impl AdmmModel, a: &Delassus, d: &[f64], spread: f64) {
        let n = d.len();
        self.weights.clear();
        self.weights.resize(n, 1.0);
        if !spread.is_finite() || n == 0 {
            return;
        }
        match a {
            Delassus::Dense(g) => {
                for i in 0..n {
                    self.weights[i] = g[(i, i)] + d[i];
                }
            }
            Delassus::Tree(t) => {
                t.block_diagonal(&mut self.diag);
                for i in 0..n {
                    self.weights[i] = t.block_entry(&self.diag, i, i) + d[i];
                }
            }
        }
        if !model.unit_weights(&mut self.weights) {
            self.weights.fill(1.0);
            return;
        }
        let top = self.weights.iter().fold(0.0f64, |m, &w| nan_max(m, w));
        let low = self.weights.iter().fold(f64::INFINITY, |m, &w| m.min(w));
        // (`!(… > …)` so that a NaN diagonal leaves ρ unscaled.)
        if !(top > 0.0 && top.is_finite() && top > spread * low) {
            self.weights.fill(1.0);
            return;
        }
        for w in self.weights.iter_mut() {
            *w = (*w / top).max(WEIGHT_FLOOR);
        }
    }

    /// For `z`: the velocity `c = Az + b`, the correction `s(c)` and the
    /// residuals; remembers `z` if it is the best iterate so far.
    #[allow(clippy::too_many_arguments)]
    fn evaluate(
        &mut self,
        model: &impl AdmmModel,
        a: &Delassus,
        d: &[f64],
        b: &[f64],
        z: &[f64],
        c: &mut [f64],
        best_eps: &mut f64,
    ) -> Residuals {
        a.affine(d, b, z, c);
        model.correction(c, &mut self.s);
        let r = model.residuals(z, c);
        if r.eps_abs < *best_eps {
            *best_eps = r.eps_abs;
            self.best.copy_from_slice(z);
        }
        r
    }

    /// An active-set polish of `z` ([`AdmmModel::polish`]) whose residuals
    /// are within `tolerance`: then `z`, `c` (and the correction) hold it and
    /// its residuals are returned; otherwise nothing changes.
    #[allow(clippy::too_many_arguments)]
    fn polished(
        &mut self,
        model: &impl AdmmModel,
        a: &Delassus,
        d: &[f64],
        b: &[f64],
        z: &mut [f64],
        c: &mut [f64],
        tolerance: f64,
        best_eps: &mut f64,
        finisher: Finisher,
    ) -> Option<Residuals> {
        let n = b.len();
        self.polish_z.resize(n, 0.0);
        self.polish_c.resize(n, 0.0);
        self.polish_best.resize(n, 0.0);
        let mut found = None;
        // The polish's linear solves on the tree path stop refining once the
        // residual is a millionth of the tolerance, near rounding (piles: 9 %
        // fewer instructions; at a thousandth the tree and dense paths'
        // answers parted by up to 4e-7 of the velocity change on the
        // pyramid, `tests/tree_delassus.rs`).
        self.polish.target = 1e-6 * tolerance;
        let (pc, pb, best) = (&mut self.polish_c, &mut self.polish_best, &mut self.best);
        model.polish(
            &mut self.polish,
            a,
            d,
            b,
            z,
            &mut self.polish_z,
            finisher,
            &mut |cand: &[f64]| {
                // Accepted already (the finishers stop there): keep it.
                if found.is_some() {
                    return None;
                }
                a.affine(d, b, cand, pc);
                let r = model.residuals(cand, pc);
                let eps = r.eps_abs;
                if eps <= tolerance {
                    found = Some(r);
                    pb.copy_from_slice(cand);
                    return None;
                }
                // A candidate better than every iterate so far is what the
                // solve returns if it reaches its cap.
                if eps < *best_eps {
                    best.copy_from_slice(cand);
                    *best_eps = eps;
                }
                Some(eps)
            },
        );
        let r = found?;
        // The accepted candidate's velocity and residuals are those of the
        // test's last call (it ends the polish): `evaluate`, less the work.
        z.copy_from_slice(&self.polish_best);
        c.copy_from_slice(&self.polish_c);
        model.correction(c, &mut self.s);
        if r.eps_abs < *best_eps {
            *best_eps = r.eps_abs;
            self.best.copy_from_slice(z);
        }
        Some(r)
    }

    /// Runs ADMM from the guess `z` (n); leaves the solution in `z` and its
    /// velocity `Az + b` in `c`. Returns the stats and the final ρ.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run(
        &mut self,
        model: &impl AdmmModel,
        a: &Delassus,
        d: &[f64],
        b: &[f64],
        z: &mut [f64],
        c: &mut [f64],
        settings: &SolverSettings,
        options: AdmmOptions,
    ) -> Result<SolverStats, ProblemError> {
        let n = b.len();
        let mut stats = SolverStats::default();
        let newton_steps = self.polish.newton.steps;
        if n == 0 {
            stats.converged = true;
            return Ok(stats);
        }
        for v in [&mut self.z_prev, &mut self.u, &mut self.s, &mut self.best] {
            v.clear();
            v.resize(n, 0.0);
        }
        // A warm start that already solves the problem costs one evaluation:
        // no spectrum estimate, no factorization.
        let mut best_eps = f64::INFINITY;
        self.tmp.clear();
        self.tmp.extend_from_slice(z);
        model.project(&self.tmp, z);
        stats.residuals = self.evaluate(model, a, d, b, z, c, &mut best_eps);
        // Warm starts and polished answers meet `WARM_TOLERANCE` when the
        // solve's tolerance is looser.
        let tol = settings.tolerance;
        let warm_tol = if settings.polish && model.corrected() {
            tol.min(WARM_TOLERANCE)
        } else {
            tol
        };
        if stats.residuals.eps_abs <= warm_tol {
            stats.converged = true;
            stats.rho = options.rho.unwrap_or(0.0);
            return Ok(stats);
        }
        // The warm start's modes are often the solution's: one polish
        // before the spectrum estimate and any factorization, first with
        // the factors of the last polish where its unknowns are these.
        self.polish.reuse = true;
        self.polish.reused = 0;
        if settings.polish
            && let Some(r) = self.polished(
                model,
                a,
                d,
                b,
                z,
                c,
                warm_tol,
                &mut best_eps,
                Finisher::Polish,
            )
        {
            stats.residuals = r;
            stats.polishes += 1;
            stats.reused_factors = self.polish.reused;
            stats.converged = true;
            stats.rho = options.rho.unwrap_or(0.0);
            return Ok(stats);
        }
        self.polish.reuse = false;
        // Where the polish fails, Newton steps from the warm start usually
        // finish (the humanoid under random controls: 2 675 of 4 974
        // solves). They need `G` checked first, by a factorization; with
        // the last solve's ρ at hand, that is the factorization ADMM would
        // use (kept if ρ's range leaves ρ as it is), and the spectrum
        // estimate waits until ADMM needs it.
        let warm_rho = options.rho.filter(|r| r.is_finite() && *r > 0.0);
        // Newton's step is a dense LU of up to `m × m`: above
        // `NEWTON_MAX_ROWS` rows (piles) the polish finishes alone.
        let newton = model.newton() && n <= NEWTON_MAX_ROWS;
        let mut newton_tried = false;
        // The spread of the units' diagonals above which ρ is scaled from
        // the start (`SCALED_SPREAD` for a convex model; see
        // `SCALED_AT_START`), and whether the stall guard may still scale it.
        let scaled = match (settings.scaled_rho, model.corrected()) {
            (false, _) => f64::INFINITY,
            (true, true) => SCALED_AT_START,
            (true, false) => SCALED_SPREAD,
        };
        let mut switched = !settings.scaled_rho || !model.corrected();
        if settings.polish
            && newton
            && let Some(rho) = warm_rho
        {
            // (One ρ: Newton needs only the check, and the diagonal's
            // spread costs a pass ADMM alone needs.)
            self.set_weights(model, a, d, f64::INFINITY);
            stats.factorizations += self.factorize(a, d, rho)? as usize;
            newton_tried = true;
            if let Some(r) =
                self.polished(model, a, d, b, z, c, tol, &mut best_eps, Finisher::Newton)
            {
                stats.residuals = r;
                stats.polishes += 1;
                stats.converged = true;
                stats.rho = rho;
                stats.newton_steps = self.polish.newton.steps - newton_steps;
                return Ok(stats);
            }
        }
        self.set_weights(model, a, d, scaled);
        // (Scaled from the start: the stall guard raises ρ.)
        switched |= self.weights.iter().any(|&w| w != 1.0);
        let lmax = self.largest_eigenvalue(a, d);
        self.x.clear();
        self.x.resize(n, 0.0);
        let scale = if lmax > 0.0 { lmax } else { 1.0 };
        let (rho_min, rho_max) = (RHO_RANGE.0 * scale, RHO_RANGE.1 * scale);
        let rho_cold = 0.1 * scale;
        let mut rho = match options.rho {
            Some(r) if r.is_finite() && r > 0.0 => r.clamp(rho_min, rho_max),
            _ => rho_cold,
        };
        let alpha = settings.over_relaxation;
        let both = if newton {
            Finisher::Both
        } else {
            Finisher::Polish
        };
        // The Lanczos steps used tmp: restore the (projected) guess.
        self.tmp.clear();
        self.tmp.extend_from_slice(z);
        let attempts = if model.corrected() { 2 } else { 1 };
        // The ρ before the stall guard first raised it: the one reported
        // for the next solve's warm start (a raised ρ carried from step to
        // step stalled the humanoid's later solves).
        let mut guarded_from: Option<f64> = None;
        'attempts: for attempt in 0..attempts {
            if attempt > 0 {
                // The warm-started run diverged: restart cold.
                rho = rho_cold;
                self.tmp.fill(0.0);
            }
            model.project(&self.tmp, z);
            stats.residuals = self.evaluate(model, a, d, b, z, c, &mut best_eps);
            for k in 0..n {
                self.u[k] = -(c[k] + self.s[k]) / (rho * self.weights[k]);
            }
            let start_eps = stats.residuals.eps_abs;
            if start_eps <= settings.tolerance {
                stats.converged = true;
                break 'attempts;
            }
            // (The warm start was polished above; a cold restart's zero
            // guess has nothing to polish.) Once G has passed the
            // factorization's PSD check, Newton steps from the guess.
            if attempt > 0
                && settings.polish
                && let Some(r) =
                    self.polished(model, a, d, b, z, c, tol, &mut best_eps, Finisher::Polish)
            {
                stats.residuals = r;
                stats.polishes += 1;
                stats.converged = true;
                break 'attempts;
            }
            stats.factorizations += self.factorize(a, d, rho)? as usize;
            if settings.polish
                && newton
                && !(attempt == 0 && newton_tried)
                && let Some(r) =
                    self.polished(model, a, d, b, z, c, tol, &mut best_eps, Finisher::Newton)
            {
                stats.residuals = r;
                stats.polishes += 1;
                stats.converged = true;
                break 'attempts;
            }
            let mut last_update = stats.iterations;
            // Stall guard (corrected models): the best residual of the
            // window, and the floor the balancing may not push ρ under.
            let (mut window_best, mut window_start, mut rho_floor) =
                (f64::INFINITY, stats.iterations, rho_min);
            for it in stats.iterations + 1..=settings.max_iterations {
                stats.iterations = it;
                for k in 0..n {
                    self.x[k] = -(b[k] + self.s[k]) + rho * self.weights[k] * (z[k] - self.u[k]);
                }
                match a {
                    Delassus::Dense(_) => cholesky_solve_in_place(&self.chol, n, &mut self.x),
                    Delassus::Tree(t) => self.tree.solve(t, &mut self.x),
                }
                self.z_prev.copy_from_slice(z);
                for k in 0..n {
                    self.tmp[k] = alpha * self.x[k] + (1.0 - alpha) * self.z_prev[k] + self.u[k];
                }
                model.project(&self.tmp, z);
                for k in 0..n {
                    // u + x̂ − z⁺, with tmp = x̂ + u.
                    self.u[k] = self.tmp[k] - z[k];
                }
                stats.residuals = self.evaluate(model, a, d, b, z, c, &mut best_eps);
                let mut eps = stats.residuals.eps_abs;
                // Every POLISH_INTERVAL iterations, an active-set polish
                // that solves the problem ends the run.
                if settings.polish
                    && eps > settings.tolerance
                    && it % POLISH_INTERVAL == 0
                    && eps.is_finite()
                    && let Some(r) = self.polished(model, a, d, b, z, c, tol, &mut best_eps, both)
                {
                    stats.residuals = r;
                    stats.polishes += 1;
                    eps = r.eps_abs;
                }
                if eps <= settings.tolerance {
                    stats.converged = true;
                    // A loose tolerance's iterate, finished when its modes
                    // allow (see `WARM_TOLERANCE`).
                    if warm_tol < tol
                        && eps > warm_tol
                        && let Some(r) = self.polished(
                            model,
                            a,
                            d,
                            b,
                            z,
                            c,
                            warm_tol,
                            &mut best_eps,
                            Finisher::Polish,
                        )
                    {
                        stats.residuals = r;
                        stats.polishes += 1;
                    }
                    break 'attempts;
                }
                if model.corrected()
                    && (!eps.is_finite()
                        || eps > DIVERGENCE_FACTOR * start_eps.max(settings.tolerance))
                {
                    self.tmp.fill(0.0);
                    continue 'attempts;
                }
                // The de Saxcé fixed point can cycle when ρ is small (the
                // residual balancing drives it there on ill-conditioned
                // problems): without a 1 % gain over a window, ρ grows
                // tenfold and stays at least that large. (A 10 % rule also
                // fired on slow but steady solves and stalled a walker's.)
                if model.corrected() && options.adaptive && settings.stall_guard {
                    if eps < 0.99 * window_best {
                        window_best = eps;
                        window_start = it;
                    } else if it - window_start >= STALL_WINDOW {
                        // The first stall of a problem whose rows' scales
                        // differ scales ρ per row instead of raising it.
                        let scale = !switched && {
                            switched = true;
                            self.set_weights(model, a, d, SCALED_SPREAD);
                            self.weights.iter().any(|&w| w != 1.0)
                        };
                        let raise = !scale && rho < rho_max;
                        if scale {
                            // ρW(u/W) is the dual ρu: the iterate goes on.
                            for (u, w) in self.u.iter_mut().zip(&self.weights) {
                                *u /= w;
                            }
                        } else if raise {
                            let new_rho = (rho * RHO_MAX_STEP).min(rho_max);
                            for u in self.u.iter_mut() {
                                *u *= rho / new_rho;
                            }
                            if guarded_from.is_none() {
                                guarded_from = Some(rho);
                            }
                            rho = new_rho;
                            rho_floor = rho;
                        }
                        if scale || raise {
                            stats.factorizations += self.factorize(a, d, rho)? as usize;
                            stats.rho_updates += 1;
                            last_update = it;
                            (window_best, window_start) = (eps, it);
                        }
                    }
                }
                if options.adaptive && it - last_update >= RHO_MIN_INTERVAL {
                    let mut rp = 0.0f64;
                    let mut rd = 0.0f64;
                    let mut wu = 0.0f64;
                    for k in 0..n {
                        let w = self.weights[k];
                        rp = rp.max((self.x[k] - z[k]).abs());
                        rd = rd.max(w * (z[k] - self.z_prev[k]).abs());
                        wu = nan_max(wu, w * self.u[k].abs());
                    }
                    let rp = rp / inf_norm(z).max(inf_norm(&self.x)).max(1e-30);
                    let rd = rho * rd / inf_norm(b).max(rho * wu).max(1e-30);
                    // A stalled z (rd = 0) with x ≠ z calls for a larger ρ.
                    let ratio = if rd > 0.0 {
                        rp / rd
                    } else if rp > 0.0 {
                        f64::INFINITY
                    } else {
                        1.0
                    };
                    if !(1.0 / RHO_RATIO..=RHO_RATIO).contains(&ratio) {
                        let new_rho = (rho * ratio.sqrt())
                            .clamp(rho / RHO_MAX_STEP, rho * RHO_MAX_STEP)
                            .clamp(rho_floor, rho_max);
                        if new_rho != rho {
                            for u in self.u.iter_mut() {
                                *u *= rho / new_rho;
                            }
                            rho = new_rho;
                            stats.factorizations += self.factorize(a, d, rho)? as usize;
                            stats.rho_updates += 1;
                            last_update = it;
                        }
                    }
                }
            }
            break;
        }
        // (`!(a <= b)` so that a NaN final residual also falls back.)
        if !stats.converged && best_eps.is_finite() && !(stats.residuals.eps_abs <= best_eps) {
            // Return the best iterate seen, with its own velocity and residuals.
            z.copy_from_slice(&self.best);
            a.affine(d, b, z, c);
            stats.residuals = model.residuals(z, c);
        }
        stats.rho = guarded_from.unwrap_or(rho);
        stats.newton_steps = self.polish.newton.steps - newton_steps;
        Ok(stats)
    }
}
