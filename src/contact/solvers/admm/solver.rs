//! The two ADMM solvers of the catalog (`ncp-admm`, `ccp-admm`) on a whole
//! contact problem: its cones and rows as an [`AdmmModel`], the core's run,
//! and `ncp-admm`'s `ncp-pgs` fallback.

use super::*;

/// The cones of a constraint problem (friction cones, then the rows' sets:
/// `ℝ₊`, `ℝ` or a box), with or without de Saxcé's correction.
struct Cones<'a> {
    mu: &'a [f64],
    /// (nl, or empty: all unilateral).
    row_sets: &'a [RowSet],
    model: ContactModel,
    /// Newton steps where a polish fails (`SolverSettings::newton`).
    newton: bool,
    /// The contacts' cone rows ([`RowSet::Cone`]).
    cones: ConeRows,
}

impl AdmmModel for Cones<'_> {
    fn project(&self, v: &[f64], z: &mut [f64]) {
        project_problem(self.mu, self.row_sets, &self.cones, v, z);
    }
    fn correction(&self, c: &[f64], s: &mut [f64]) {
        if self.model == ContactModel::Ncp {
            correct_problem(self.mu, &self.cones, c, s);
        }
    }
    fn residuals(&self, z: &[f64], c: &[f64]) -> Residuals {
        rows_residuals_with(self.model, self.mu, self.row_sets, &self.cones, z, c)
    }
    fn corrected(&self) -> bool {
        self.model == ContactModel::Ncp
    }
    fn unit_weights(&self, w: &mut [f64]) -> bool {
        for i in 0..self.mu.len() {
            let added = self.cones.of(i);
            let rows = (3 * i..3 * i + 3).chain(added.iter().copied());
            let mean = rows.clone().map(|k| w[k]).sum::<f64>() / (3 + added.len()) as f64;
            rows.for_each(|k| w[k] = mean);
        }
        true
    }
    fn newton(&self) -> bool {
        self.model == ContactModel::Ncp && self.newton
    }
    fn polish(
        &self,
        work: &mut PolishWork,
        a: &Delassus,
        d: &[f64],
        b: &[f64],
        z: &[f64],
        candidate: &mut [f64],
        finisher: Finisher,
        accept: &mut dyn FnMut(&[f64]) -> Option<f64>,
    ) {
        if self.model != ContactModel::Ncp {
            return;
        }
        // (The active-set polish takes three-row cones only; Newton any.)
        let solved = finisher != Finisher::Newton
            && self.cones.is_empty()
            && polish(
                work,
                self.mu,
                self.row_sets,
                a,
                d,
                b,
                z,
                POLISH_ROUNDS,
                candidate,
                &mut *accept,
            );
        if !solved && finisher != Finisher::Polish && self.newton {
            newton(
                &mut work.newton,
                self.mu,
                self.row_sets,
                &self.cones,
                a,
                d,
                b,
                z,
                candidate,
                accept,
            );
        }
    }
}

/// Runs the core on a whole contact problem, whose `G` is `tree`'s when
/// given (then `p.delassus` is not read).
fn solve_cones(
    core: &mut AdmmCore,
    model: ContactModel,
    p: &ContactProblem,
    tree: Option<&TreeDelassus>,
    settings: &SolverSettings,
    options: AdmmOptions,
    out: &mut ContactSolution,
) -> Result<f64, ProblemError> {
    let a = match tree {
        Some(t) => {
            p.validate_vectors(t.rows())?;
            Delassus::Tree(t)
        }
        None => {
            p.validate()?;
            Delassus::Dense(&p.delassus)
        }
    };
    settings.validate()?;
    out.resize(p.g.len());
    out.lambda.copy_from(&p.warm_start);
    let cones = Cones {
        mu: &p.mu,
        row_sets: &p.row_sets,
        model,
        newton: settings.newton,
        cones: ConeRows::new(p.nc(), &p.row_sets)?,
    };
    out.stats = core.run(
        &cones,
        &a,
        p.compliance.as_slice(),
        p.g.as_slice(),
        out.lambda.as_mut_slice(),
        out.c.as_mut_slice(),
        settings,
        options,
    )?;
    // ADMM at its cap, unconverged: it can stall at the de Saxcé fixed point
    // on some rank-deficient problems whose solution needs internal forces
    // far from its iterate's, which per-contact sweeps reach (measured on
    // the humanoidstandup under random controls: a 7-contact problem left
    // at ε_abs 2.4e-3 after 1 000 iterations, solved by 118 `ncp-pgs`
    // sweeps from ADMM's iterate).
    if model == ContactModel::Ncp && !out.stats.converged && settings.polish && settings.newton {
        core.fallback_start.clear();
        core.fallback_start.extend_from_slice(out.lambda.as_slice());
        // The sweeps read `G`'s entries: on the tree path, a dense copy of
        // the problem (symmetrized; rare enough to allocate).
        let dense;
        let q = match tree {
            None => p,
            Some(_) => {
                let m = p.g.len();
                let (mut g, mut unit) = (Vec::new(), Vec::new());
                a.dense_into(&vec![0.0; m], &mut g, &mut unit);
                let mut copy = p.clone();
                copy.delassus =
                    nalgebra::DMatrix::from_fn(m, m, |i, j| 0.5 * (g[j * m + i] + g[i * m + j]));
                dense = copy;
                &dense
            }
        };
        let fallback = &mut core.fallback;
        // A sweep that diverges leaves ADMM's answer (the error is not the
        // problem's: ADMM's factorization has checked `G`).
        if NcpPgs::solve_from(q, settings, &core.fallback_start, fallback).is_ok() {
            out.stats.fallback_sweeps = fallback.stats.iterations;
            if fallback.stats.residuals.eps_abs < out.stats.residuals.eps_abs {
                out.lambda.copy_from(&fallback.lambda);
                out.c.copy_from(&fallback.c);
                out.stats.residuals = fallback.stats.residuals;
                out.stats.converged = fallback.stats.converged;
            }
        }
    }
    Ok(out.stats.rho)
}

/// The two ADMM solvers of the catalog, on the whole contact problem.
pub struct AdmmSolver {
    model: ContactModel,
    core: AdmmCore,
    last_rho: Option<f64>,
}

impl AdmmSolver {
    /// `ncp-admm` (the default solver): NCP via ADMM with de Saxcé's
    /// correction. `Γ(c)` is updated after each iteration, so a fixed point
    /// solves `K_μ ∋ λ ⟂ c + Γ(c) ∈ K_μ*` (Signorini, Coulomb and maximum
    /// dissipation). Adaptive ρ by residual balancing (if
    /// `SolverSettings::adaptive_rho`), warm start of `λ` (primal), of the
    /// dual through `u = −(c(λ₀) + Γ)/ρ`, and of `ρ` (the simulator passes the
    /// last step's). A warm start that diverges is restarted cold once; the
    /// best iterate is returned when the cap is reached. Global, so it handles
    /// ill-conditioned problems (large mass ratios) that defeat per-contact
    /// methods; cold-started, its proximal steps pick the impulse without
    /// internal forces among equivalent ones (warm-started, it keeps the
    /// previous step's).
    pub fn ncp() -> Self {
        AdmmSolver {
            model: ContactModel::Ncp,
            core: AdmmCore::default(),
            last_rho: None,
        }
    }

    /// `ccp-admm`: the convex QP `min ½ λᵀ(G + R)λ + gᵀλ, λ ∈ K_μ`
    /// (Anitescu's relaxation, MuJoCo's model: sliding contacts separate at
    /// `c_N = μ‖c_T‖`), with `G + R + ρI` factorized once per solve (ρ fixed:
    /// the settings' or `0.1·L`) and kept across solves while `G` does not
    /// change. The problem's compliance `R` is MuJoCo's regularization when
    /// set to `R = α·diag(G)` ([`ContactProblem::set_diagonal_compliance`]): a
    /// numerical device that makes the problem strictly convex, at the price of
    /// contacts that obey `c = (G + R)λ + g`, i.e. a penetration velocity `Rλ`.
    pub fn ccp() -> Self {
        AdmmSolver {
            model: ContactModel::Ccp,
            ..AdmmSolver::ncp()
        }
    }
}

impl AdmmSolver {
    /// A solve with the dense `G` or, given, `tree`'s factors.
    fn solve_with(
        &mut self,
        p: &ContactProblem,
        tree: Option<&TreeDelassus>,
        settings: &SolverSettings,
        out: &mut ContactSolution,
    ) -> Result<(), ProblemError> {
        let options = AdmmOptions {
            adaptive: self.model == ContactModel::Ncp && settings.adaptive_rho,
            rho: settings.rho,
        };
        let rho = solve_cones(&mut self.core, self.model, p, tree, settings, options, out)?;
        // ρ = 0: a warm start solved the problem before any ρ was chosen
        // (none to report: the caller keeps the one it had).
        self.last_rho = (rho > 0.0).then_some(rho);
        Ok(())
    }
}

impl ContactSolver for AdmmSolver {
    fn kind(&self) -> SolverKind {
        if self.model == ContactModel::Ncp {
            SolverKind::NcpAdmm
        } else {
            SolverKind::CcpAdmm
        }
    }
    fn last_rho(&self) -> Option<f64> {
        self.last_rho
    }
    fn finisher_scale(&self) -> usize {
        self.core.polish.newton.scale()
    }
    fn set_finisher_scale(&mut self, scale: usize) -> bool {
        self.core.polish.newton.set_scale(scale)
    }
    fn forget_kept(&mut self) {
        self.core.forget_kept();
    }
    fn solve(
        &mut self,
        p: &ContactProblem,
        settings: &SolverSettings,
        out: &mut ContactSolution,
    ) -> Result<(), ProblemError> {
        self.solve_with(p, None, settings, out)
    }
    fn solves_tree(&self) -> bool {
        true
    }
    fn solve_tree(
        &mut self,
        p: &ContactProblem,
        tree: &TreeDelassus,
        settings: &SolverSettings,
        out: &mut ContactSolution,
    ) -> Result<(), ProblemError> {
        self.solve_with(p, Some(tree), settings, out)
    }
}
