//! Projected Gauss-Seidel: one contact at a time, each contact's impulse is
//! updated with the others frozen, and the contact velocities `c` are kept
//! current by a column update (`c += (G + R)[:, i] δλ_i`, `O(3·m)` per
//! contact with a dense `G`; over the coupled blocks' rows only when the
//! problem carries its [`crate::contact::BlockCoupling`]: on a pile of
//! separate boxes, the contacts of the boxes a contact touches).
//! The three PGS solvers differ only in their local update; they share
//! [`gauss_seidel`], which [`super::Raisim`] also uses.

use super::{ContactSolution, ContactSolver, SolverKind, SolverSettings, SolverStats};
use crate::contact::ContactProblem;
use crate::contact::RowSet;
use crate::contact::cone::{Pyramid, Real, get3, project_cone, project_disk, real, set3};
use crate::contact::criteria::{ContactModel, Residuals, rows_residuals};
use crate::contact::wide::{ConeRows, MAX_CONE_ROWS, Wide, project_cone_wide};
use crate::error::ProblemError;

/// The 3×3 diagonal block `W_i = G_ii + R_i` of contact `i`, row-major.
#[inline]
pub(crate) fn block(p: &ContactProblem, i: usize) -> [[f64; 3]; 3] {
    let mut w = [[0.0; 3]; 3];
    for (r, row) in w.iter_mut().enumerate() {
        for (s, x) in row.iter_mut().enumerate() {
            *x = p.delassus[(3 * i + r, 3 * i + s)];
        }
        row[r] += p.compliance[3 * i + r];
    }
    w
}

/// Largest eigenvalue of the tangential 2×2 block of `w`.
#[inline]
pub(crate) fn tangent_sigma<T: Real>(w: &[[T; 3]; 3]) -> T {
    let (a, b, d) = (w[0][0], w[0][1], w[1][1]);
    let half: T = real(0.5);
    half * (a + d) + (half * half * (a - d) * (a - d) + b * b).sqrt()
}

/// The first principal minor of the symmetric block `w` below `−tol·scaleᵏ`
/// (`k` its order), as `(row, value)`: `None` when `w` passes the test for
/// positive semi-definiteness (every principal minor non-negative, to `tol`).
pub(crate) fn negative_minor<T: Real>(w: &[[T; 3]; 3], tol: T, scale: T) -> Option<(usize, T)> {
    let minor2 = |a: usize, b: usize| w[a][a] * w[b][b] - w[a][b] * w[b][a];
    let det = w[0][0] * minor2(1, 2) - w[0][1] * (w[1][0] * w[2][2] - w[1][2] * w[2][0])
        + w[0][2] * (w[1][0] * w[2][1] - w[1][1] * w[2][0]);
    let e1 = -tol * scale;
    let bound = [e1, e1 * scale, e1 * scale * scale];
    [
        (0, 1, w[0][0]),
        (1, 1, w[1][1]),
        (2, 1, w[2][2]),
        (1, 2, minor2(0, 1)),
        (2, 2, minor2(0, 2)),
        (2, 2, minor2(1, 2)),
        (2, 3, det),
    ]
    .into_iter()
    .find(|&(_, k, v)| v < bound[k - 1])
    .map(|(r, _, v)| (r, v))
}

/// Refuses a problem whose contact blocks `W_i` are not positive
/// semi-definite (a necessary condition for `G + R`; cheap, `O(nc)`); the
/// unilateral rows' diagonal is checked by `ContactProblem::validate`.
pub(crate) fn check_blocks(p: &ContactProblem) -> Result<(), ProblemError> {
    let nc = p.nc();
    let scale = p.delassus.amax();
    for i in 0..nc {
        // PSD ⟺ every principal minor is non-negative (each k×k minor
        // compared with −1e-12·scaleᵏ).
        if let Some((r, value)) = negative_minor(&block(p, i), 1e-12, scale) {
            return Err(ProblemError::NotPsd {
                index: 3 * i + r,
                value,
            });
        }
    }
    Ok(())
}

/// `c += ((G + R) e_k) d`: the velocity change of a change `d` of `λ_k`,
/// over the rows of the blocks coupled with `k`'s (all rows when `G` is
/// dense; see [`crate::contact::BlockCoupling`]).
fn add_column(p: &ContactProblem, k: usize, d: f64, c: &mut [f64]) {
    c[k] += p.compliance[k] * d;
    p.add_column(k, d, c);
}

/// How the sweeps judge convergence.
pub(crate) enum Criterion {
    /// The model's `ε_abs`, evaluated before each sweep.
    Model(ContactModel),
    /// The largest local correction of the last sweep (returned by the
    /// local update), for solvers whose fixed points solve no cone problem.
    LocalCorrection,
}

/// Runs Gauss-Seidel sweeps until the criterion falls below the tolerance.
/// `initial` maps each contact's warm start to a starting impulse; `local`
/// gets the contact index, its impulse and its current velocity (with every
/// other contact's latest impulse) and returns the new impulse with the size
/// of its correction; `end_sweep` runs after each sweep. Fills `out` and
/// returns the stats, with the residuals of `criterion` (exact `c`).
/// Validates the problem and settings first. Refuses a problem with a
/// diagonal block that is not positive semi-definite
/// (a necessary condition on `G`), and reports a non-finite impulse (a
/// divergence, which an indefinite `G` can cause) as an error.
pub(crate) fn gauss_seidel(
    p: &ContactProblem,
    settings: &SolverSettings,
    criterion: Criterion,
    out: &mut ContactSolution,
    initial: impl Fn(usize, [f64; 3]) -> [f64; 3],
    local: impl FnMut(usize, [f64; 3], [f64; 3]) -> ([f64; 3], f64),
    end_sweep: impl FnMut(),
) -> Result<SolverStats, ProblemError> {
    // Their local steps are three-row cones.
    p.refuse_cone_rows("ccp-pgs, lcp-pgs, raisim and raisim-ds")?;
    let start = p.warm_start.as_slice();
    gauss_seidel_from(
        p, settings, criterion, start, out, initial, local, end_sweep,
    )
}

/// [`gauss_seidel`] from `start` (`m`) instead of the problem's warm start.
#[allow(clippy::too_many_arguments)]
fn gauss_seidel_from(
    p: &ContactProblem,
    settings: &SolverSettings,
    criterion: Criterion,
    start: &[f64],
    out: &mut ContactSolution,
    initial: impl Fn(usize, [f64; 3]) -> [f64; 3],
    mut local: impl FnMut(usize, [f64; 3], [f64; 3]) -> ([f64; 3], f64),
    mut end_sweep: impl FnMut(),
) -> Result<SolverStats, ProblemError> {
    p.validate()?;
    settings.validate()?;
    let nc = p.nc();
    let m = p.m();
    check_blocks(p)?;
    // Contacts with rows beyond their three (only `ncp-pgs` gets here with
    // them): the horizontal step over all their tangential rows.
    let cones = ConeRows::new(nc, &p.row_sets)?;
    let wide = WideBlocks::new(p, &cones);
    if start.len() != m {
        return Err(ProblemError::DimensionMismatch {
            what: "start",
            got: start.len(),
            expected: m,
        });
    }
    out.resize(m);
    for k in 3 * nc..m {
        out.lambda[k] = p.row_set(k - 3 * nc).project(start[k]);
    }
    for i in 0..nc {
        let rows = cones.of(i);
        if rows.is_empty() {
            set3(out.lambda.as_mut_slice(), i, initial(i, get3(start, i)));
        } else {
            project_cone_wide(p.mu[i], Wide::gather(start, i, rows)).scatter(
                out.lambda.as_mut_slice(),
                i,
                rows,
            );
        }
    }
    p.contact_velocity(out.lambda.as_slice(), out.c.as_mut_slice());
    let mut stats = SolverStats::default();
    let mut local_max = f64::INFINITY;
    let residuals = |lambda: &[f64], c: &[f64], local_max: f64| match &criterion {
        Criterion::Model(model) => rows_residuals(*model, &p.mu, &p.row_sets, lambda, c),
        Criterion::LocalCorrection => Residuals {
            dual: local_max,
            eps_abs: local_max,
            ..Default::default()
        },
    };
    for it in 0..=settings.max_iterations {
        stats.iterations = it;
        stats.residuals = residuals(out.lambda.as_slice(), out.c.as_slice(), local_max);
        if stats.residuals.eps_abs <= settings.tolerance || m == 0 {
            stats.converged = true;
            break;
        }
        if it == settings.max_iterations {
            break;
        }
        local_max = 0.0;
        for i in 0..nc {
            if !cones.of(i).is_empty() {
                let correction = wide.step(p, i, cones.of(i), settings.over_relaxation, out);
                local_max = crate::contact::criteria::nan_max(local_max, correction);
                continue;
            }
            let old = get3(out.lambda.as_slice(), i);
            let (new, correction) = local(i, old, get3(out.c.as_slice(), i));
            local_max = crate::contact::criteria::nan_max(local_max, correction);
            let d = [new[0] - old[0], new[1] - old[1], new[2] - old[2]];
            if d == [0.0; 3] {
                continue;
            }
            set3(out.lambda.as_mut_slice(), i, new);
            for (r, &dr) in d.iter().enumerate() {
                add_column(p, 3 * i + r, dr, out.c.as_mut_slice());
            }
        }
        // The one-dimensional rows: `λ ← P_S(λ − ω c / (G + R)_kk)` (for a
        // unilateral row `max(0, ·)`), exact for one row (ω = 1); a row with
        // a zero diagonal cannot move.
        for k in 3 * nc..m {
            let w = p.delassus[(k, k)] + p.compliance[k];
            if !(w > 0.0) || matches!(p.row_set(k - 3 * nc), RowSet::Cone(_)) {
                continue;
            }
            let old = out.lambda[k];
            let new = p
                .row_set(k - 3 * nc)
                .project(old - settings.over_relaxation * out.c[k] / w);
            let d = new - old;
            local_max = crate::contact::criteria::nan_max(local_max, (w * d).abs());
            if d == 0.0 {
                continue;
            }
            out.lambda[k] = new;
            add_column(p, k, d, out.c.as_mut_slice());
        }
        end_sweep();
        if !local_max.is_finite() || out.c.iter().any(|x| !x.is_finite()) {
            return Err(ProblemError::Diverged { iteration: it + 1 });
        }
    }
    // The incrementally updated c has accumulated rounding; return the exact one.
    p.contact_velocity(out.lambda.as_slice(), out.c.as_mut_slice());
    stats.residuals = residuals(out.lambda.as_slice(), out.c.as_slice(), local_max);
    if let Criterion::Model(_) = criterion {
        // Judged on the exact c, so that `converged` agrees with the residuals returned.
        stats.converged = stats.residuals.eps_abs <= settings.tolerance || m == 0;
    }
    Ok(stats)
}

/// The blocks `W = (G + R)` of the contacts with cone rows, over their
/// rows `[t1, t2, cone rows…, n]`, with the largest eigenvalue of each
/// one's tangential block (`σ_T` of the horizontal step).
struct WideBlocks {
    /// Per contact (empty for three-row contacts): `d × d` row-major, `σ_T`.
    blocks: Vec<(Vec<f64>, f64)>,
}

impl WideBlocks {
    fn new(p: &ContactProblem, cones: &ConeRows) -> Self {
        if cones.is_empty() {
            // (Nothing allocated for three-row problems.)
            return WideBlocks { blocks: Vec::new() };
        }
        let blocks = (0..p.nc())
            .map(|i| {
                let extra = cones.of(i);
                if extra.is_empty() {
                    return (Vec::new(), 0.0);
                }
                let (idx, d) = wide_rows(i, extra);
                let w: Vec<f64> = (0..d * d)
                    .map(|e| {
                        let (r, s) = (idx[e / d], idx[e % d]);
                        p.delassus[(r, s)] + if r == s { p.compliance[r] } else { 0.0 }
                    })
                    .collect();
                let tt = nalgebra::DMatrix::from_fn(d - 1, d - 1, |r, s| w[r * d + s]);
                (w, tt.symmetric_eigenvalues().max())
            })
            .collect();
        WideBlocks { blocks }
    }

    /// The horizontal step of contact `i` (cone rows `extra`) on `out`'s
    /// impulse and velocity: `λ_N ← max(0, λ_N − ω c_N / W_NN)`, then
    /// `λ_T ← P(μ λ_N, λ_T − ω c_T / σ_T)` over all its tangential rows
    /// (`c_T` corrected for the normal change, `P(r, ·)` onto the ball of
    /// radius `r`); returns the size of its correction (0: the NCP's
    /// criterion judges the sweep).
    fn step(
        &self,
        p: &ContactProblem,
        i: usize,
        extra: &[usize],
        omega: f64,
        out: &mut ContactSolution,
    ) -> f64 {
        let (w, sigma) = (&self.blocks[i].0, self.blocks[i].1);
        let (rows, d) = wide_rows(i, extra);
        let (idx, n) = (&rows[..d], d - 1);
        let (mut l, mut c) = ([0.0; 3 + MAX_CONE_ROWS], [0.0; 3 + MAX_CONE_ROWS]);
        for (e, &r) in idx.iter().enumerate() {
            (l[e], c[e]) = (out.lambda[r], out.c[r]);
        }
        let wnn = w[n * d + n];
        let ln = if wnn > 0.0 {
            (l[n] - omega * c[n] / wnn).max(0.0)
        } else {
            l[n]
        };
        let dn = ln - l[n];
        let mut new = l;
        new[n] = ln;
        if sigma > 0.0 {
            for t in 0..n {
                new[t] = l[t] - omega * (c[t] + w[t * d + n] * dn) / sigma;
            }
        }
        let norm = new[..n].iter().map(|x| x * x).sum::<f64>().sqrt();
        let radius = p.mu[i] * ln;
        if norm > radius {
            let k = if norm > 0.0 { radius / norm } else { 0.0 };
            new[..n].iter_mut().for_each(|x| *x *= k);
        }
        for (e, &r) in idx.iter().enumerate() {
            let delta = new[e] - l[e];
            if delta != 0.0 {
                out.lambda[r] = new[e];
                add_column(p, r, delta, out.c.as_mut_slice());
            }
        }
        0.0
    }
}

/// Contact `i`'s rows with its cone rows `extra`, `[t1, t2, extra…, n]`,
/// and their count.
fn wide_rows(i: usize, extra: &[usize]) -> ([usize; 3 + MAX_CONE_ROWS], usize) {
    let mut idx = [0; 3 + MAX_CONE_ROWS];
    idx[..2].copy_from_slice(&[3 * i, 3 * i + 1]);
    idx[2..2 + extra.len()].copy_from_slice(extra);
    idx[2 + extra.len()] = 3 * i + 2;
    (idx, 3 + extra.len())
}

/// The local update shared by the NCP and LCP sweeps: a normal step
/// `λ_N ← max(0, λ_N − ω c_N / W_NN)`, then a tangential step
/// `λ_T ← P(μ λ_N, λ_T − ω c_T / σ_T)` with the tangential velocity corrected
/// for the normal change, `σ_T` the largest eigenvalue of the tangential
/// block and `P(r, ·)` the projection onto the friction set of radius `r`
/// (keeping `λ_N`: the "horizontal" projection).
#[inline]
pub(crate) fn horizontal_step<T: Real>(
    w: &[[T; 3]; 3],
    mu: T,
    omega: T,
    l: [T; 3],
    c: [T; 3],
    project: impl Fn(T, [T; 2]) -> [T; 2],
) -> [T; 3] {
    let zero = T::zero();
    let ln = if w[2][2] > zero {
        (l[2] - omega * c[2] / w[2][2]).max(zero)
    } else {
        l[2]
    };
    let dn = ln - l[2];
    let ct = [c[0] + w[0][2] * dn, c[1] + w[1][2] * dn];
    let sigma = tangent_sigma(w);
    let mut lt = [l[0], l[1]];
    if sigma > zero {
        lt = [l[0] - omega * ct[0] / sigma, l[1] - omega * ct[1] / sigma];
    }
    let lt = project(mu * ln, lt);
    [lt[0], lt[1], ln]
}

/// The LCP's starting impulse from a warm start `w`: `λ_N = max(0, w_N)`,
/// `λ_T` projected onto the polygon `μ λ_N D`.
#[inline]
pub(crate) fn lcp_initial<T: Real>(pyr: &Pyramid, mu: T, w: [T; 3]) -> [T; 3] {
    let n = w[2].max(T::zero());
    let t = pyr.project_disk(mu * n, [w[0], w[1]]);
    [t[0], t[1], n]
}

/// The CCP's local step `P_K(λ − ω c / σ)` (`σ ≤ 0`: no step).
#[inline]
pub(crate) fn ccp_step<T: Real>(sigma: T, omega: T, mu: T, l: [T; 3], c: [T; 3]) -> [T; 3] {
    if !(sigma > T::zero()) {
        return l;
    }
    project_cone(mu, [0, 1, 2].map(|k| l[k] - omega * c[k] / sigma))
}

/// NCP via projected Gauss-Seidel. Per contact: a normal step
/// `λ_N ← max(0, λ_N − ω c_N / W_NN)`, then a tangential step projected onto
/// the disk `‖λ_T‖ ≤ μ λ_N` (the "horizontal" projection, which keeps `λ_N`:
/// a fixed point has `λ_T` minimizing `λ_T·c_T` on the disk, i.e. maximum
/// dissipation, so it solves the NCP, not its CCP relaxation). The step is
/// `ω / σ_T` with `σ_T` the largest eigenvalue of the tangential block.
/// No convergence guarantee (the NCP is not a convex problem); fails on
/// ill-conditioned problems (large mass ratios) like every per-contact method.
#[derive(Default)]
pub struct NcpPgs;

impl ContactSolver for NcpPgs {
    fn kind(&self) -> SolverKind {
        SolverKind::NcpPgs
    }

    fn solve(
        &mut self,
        p: &ContactProblem,
        settings: &SolverSettings,
        out: &mut ContactSolution,
    ) -> Result<(), ProblemError> {
        Self::solve_from(p, settings, p.warm_start.as_slice(), out)
    }
}

impl NcpPgs {
    /// The sweeps from `start` (`m`) instead of the problem's warm start.
    pub(crate) fn solve_from(
        p: &ContactProblem,
        settings: &SolverSettings,
        start: &[f64],
        out: &mut ContactSolution,
    ) -> Result<(), ProblemError> {
        let omega = settings.over_relaxation;
        out.stats = gauss_seidel_from(
            p,
            settings,
            Criterion::Model(ContactModel::Ncp),
            start,
            out,
            |i, w| project_cone(p.mu[i], w),
            |i, l, c| {
                let step = horizontal_step(&block(p, i), p.mu[i], omega, l, c, project_disk);
                (step, 0.0)
            },
            || {},
        )?;
        Ok(())
    }
}

/// LCP via projected Gauss-Seidel: the friction cone replaced by a pyramid
/// of `SolverSettings::pyramid_facets` facets ([`Pyramid`]; 4 facets is the
/// box `|λ_t1|, |λ_t2| ≤ μ λ_N`). Same sweep as [`NcpPgs`], the tangential
/// step projected onto the polygon `μ λ_N D` instead of the disk. A fixed point
/// minimizes `λ_T·c_T` over the polygon, so sliding friction points to a
/// vertex or along a facet normal rather than against the sliding velocity:
/// objects drift sideways unless they slide along a symmetry axis of the
/// pyramid; along the diagonals friction exceeds `μ λ_N` (by `√2` for the box).
#[derive(Default)]
pub struct LcpPgs;

impl ContactSolver for LcpPgs {
    fn kind(&self) -> SolverKind {
        SolverKind::LcpPgs
    }

    fn solve(
        &mut self,
        p: &ContactProblem,
        settings: &SolverSettings,
        out: &mut ContactSolution,
    ) -> Result<(), ProblemError> {
        let omega = settings.over_relaxation;
        let pyr = Pyramid::new(settings.pyramid_facets);
        out.stats = gauss_seidel(
            p,
            settings,
            Criterion::Model(ContactModel::Lcp(pyr)),
            out,
            |i, w| lcp_initial(&pyr, p.mu[i], w),
            |i, l, c| {
                let step = horizontal_step(&block(p, i), p.mu[i], omega, l, c, |r, lt| {
                    pyr.project_disk(r, lt)
                });
                (step, 0.0)
            },
            || {},
        )?;
        Ok(())
    }
}

/// CCP via projected Gauss-Seidel (Anitescu and Tasora's cone complementarity):
/// per contact `λ_i ← P_K(λ_i − ω c_i / σ_i)`, the full 3-vector projected onto
/// the cone, `σ_i` the largest eigenvalue of `W_i`. The fixed points solve
/// `K_μ ∋ λ ⟂ c ∈ K_μ*`, the optimality conditions of the convex QP
/// `min ½ λᵀ(G + R)λ + gᵀλ, λ ∈ K_μ`: Coulomb's cone and maximum dissipation
/// hold, but a sliding contact gets `c_N = μ ‖c_T‖ > 0`, so sliding bodies
/// separate from (bounce on) what they slide on. Converges (it is block
/// coordinate descent on a convex QP) but slowly when `G` is ill-conditioned.
#[derive(Default)]
pub struct CcpPgs {
    sigma: Vec<f64>,
}

impl ContactSolver for CcpPgs {
    fn kind(&self) -> SolverKind {
        SolverKind::CcpPgs
    }

    fn solve(
        &mut self,
        p: &ContactProblem,
        settings: &SolverSettings,
        out: &mut ContactSolution,
    ) -> Result<(), ProblemError> {
        // Validated before the blocks are read (gauss_seidel validates again, cheaply).
        p.validate()?;
        let omega = settings.over_relaxation;
        self.sigma.clear();
        for i in 0..p.nc() {
            let w = block(p, i);
            let m = nalgebra::Matrix3::from_fn(|r, s| w[r][s]);
            self.sigma.push(m.symmetric_eigenvalues().max());
        }
        let sigma = &self.sigma;
        out.stats = gauss_seidel(
            p,
            settings,
            Criterion::Model(ContactModel::Ccp),
            out,
            |i, w| project_cone(p.mu[i], w),
            |i, l, c| (ccp_step(sigma[i], omega, p.mu[i], l, c), 0.0),
            || {},
        )?;
        Ok(())
    }
}
