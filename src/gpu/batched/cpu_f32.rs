//! The PGS kernels of `shaders/pgs.wgsl` (`ncp-pgs`, `ccp-pgs`, `lcp-pgs`)
//! in Rust, in f32, on one CPU core, over the same packed [`HostBatch`]:
//! the "CPU f32" column of `moreau bench solve`, which compares the GPU with
//! the same algorithm in the same precision (the f64 column compares it with
//! the reference solvers of [`crate::contact::solvers`]).
//!
//! It follows the invocation kernel step for step: the same warm-start
//! mapping, the same local updates and column updates of `c`, the same
//! stopping test before each sweep, judged on an exactly recomputed `c`
//! before convergence is declared, and the same f32 block test for positive
//! semi-definiteness. Its `c` is recomputed exactly only there (the kernel
//! also recomputes it at the start of each dispatch's chunk of sweeps), so
//! iteration counts agree with the kernel's within one on the tests'
//! problems, not bit for bit. The one-dimensional rows after the contacts
//! (unilateral, bilateral or boxes, their sets read as the kernel reads
//! them) are swept after the contacts as the kernel and the f64
//! `gauss_seidel` do, and judged by [`row_residuals`].

use super::BatchOutput;
use super::batch::{
    FLAG_CONE_ROWS, FLAG_DIVERGED, FLAG_NOT_PSD, GpuContact, GpuProblem, GpuResult, HostBatch,
    ROW_BILATERAL, ROW_BOUNDS_CONES, STATE_DONE,
};
use crate::contact::ContactModel;
use crate::contact::RowSet;
use crate::contact::cone::{get3, project_cone, project_disk, set3};
use crate::contact::criteria::row_residuals;
use crate::contact::solvers::pgs::{ccp_step, horizontal_step, lcp_initial, negative_minor};
use crate::contact::{Residuals, SolverKind, SolverSettings};
use crate::gpu::GpuError;

/// Whether `kind` has an f32 CPU twin (its catalog entry says so).
pub fn has_f32_twin(kind: SolverKind) -> bool {
    kind.spec().f32_twin
}

type V3 = [f32; 3];
type M3 = [[f32; 3]; 3];

/// One problem's packed data.
struct Problem<'a> {
    /// Its lower triangle of G, row-major.
    tri: &'a [f32],
    /// Its blocks: the contacts, then the unilateral rows three to a block.
    contacts: &'a [GpuContact],
    nc: usize,
    /// The sets of its rows after the contacts, coded as [`super::batch::row_bound`]
    /// codes them (empty: all unilateral).
    bounds: &'a [f32],
}

impl Problem<'_> {
    fn g(&self, i: usize, j: usize) -> f32 {
        let (a, b) = if i >= j { (i, j) } else { (j, i) };
        self.tri[a * (a + 1) / 2 + b]
    }

    fn mu(&self, i: usize) -> f32 {
        self.contacts[i].g_mu[3]
    }

    fn compliance(&self, k: usize) -> f32 {
        self.contacts[k / 3].compliance[k % 3]
    }

    fn free(&self, k: usize) -> f32 {
        self.contacts[k / 3].g_mu[k % 3]
    }

    /// The set of row `k ≥ 3·nc`, decoded from its bound (kernel `row_bound`).
    fn set(&self, k: usize) -> RowSet {
        match self.bounds.get(k - 3 * self.nc) {
            None => RowSet::Unilateral,
            Some(&b) if b < 0.0 => RowSet::Unilateral,
            Some(&b) if b >= ROW_BILATERAL => RowSet::Bilateral,
            Some(&b) => RowSet::Box(b as f64),
        }
    }

    /// Row `k`'s projection in f32 (kernel `project_row`).
    fn project(&self, k: usize, x: f32) -> f32 {
        match self.set(k) {
            RowSet::Unilateral => x.max(0.0),
            // (A cone row is never decoded: its problem is refused, pgs_cone_flag.)
            RowSet::Bilateral | RowSet::Cone(_) => x,
            RowSet::Box(b) => x.clamp(-(b as f32), b as f32),
        }
    }

    /// `W_i = G_ii + R_i`, symmetric.
    fn block(&self, i: usize) -> M3 {
        let k = 3 * i;
        let mut w = [[0.0; 3]; 3];
        for (r, row) in w.iter_mut().enumerate() {
            for (s, x) in row.iter_mut().enumerate() {
                *x = self.g(k + r, k + s);
            }
            row[r] += self.contacts[i].compliance[r];
        }
        w
    }

    /// `c = (G + R)λ + g`, exactly.
    fn velocity(&self, lambda: &[f32], c: &mut [f32]) {
        let m = lambda.len();
        for (i, ci) in c.iter_mut().enumerate() {
            let mut s = self.free(i) + self.compliance(i) * lambda[i];
            let row = &self.tri[i * (i + 1) / 2..][..i + 1];
            for (g, l) in row.iter().zip(lambda) {
                s += g * l;
            }
            for (j, l) in lambda.iter().enumerate().take(m).skip(i + 1) {
                s += self.tri[j * (j + 1) / 2 + i] * l;
            }
            *ci = s;
        }
    }
}

/// [`FLAG_CONE_ROWS`] where problem `h` has rows of a contact's cone, which
/// the PGS kernels refuse (`pgs_refusal` in `shaders/common.wgsl`).
fn pgs_cone_flag(h: &GpuProblem) -> u32 {
    if h.row_bounds & ROW_BOUNDS_CONES != 0 {
        FLAG_CONE_ROWS
    } else {
        0
    }
}

/// The kernel's block test (minors against `−1e-6·scaleᵏ`).
fn blocks_psd(p: &Problem, nc: usize, scale: f32) -> bool {
    (0..nc).all(|i| negative_minor(&p.block(i), 1e-6, scale).is_none())
}

/// Largest eigenvalue of a symmetric 3×3 matrix in closed form, as the
/// kernel computes the CCP's step size (the f64 solver uses nalgebra's).
fn largest_eigenvalue3(w: &M3) -> f32 {
    let det3 = |w: &M3| {
        w[0][0] * (w[1][1] * w[2][2] - w[1][2] * w[2][1])
            - w[0][1] * (w[1][0] * w[2][2] - w[1][2] * w[2][0])
            + w[0][2] * (w[1][0] * w[2][1] - w[1][1] * w[2][0])
    };
    let p1 = w[0][1] * w[0][1] + w[0][2] * w[0][2] + w[1][2] * w[1][2];
    let q = (w[0][0] + w[1][1] + w[2][2]) / 3.0;
    let d = [w[0][0] - q, w[1][1] - q, w[2][2] - q];
    let p2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + 2.0 * p1;
    if !(p2 > 0.0) {
        return w[0][0].max(w[1][1]).max(w[2][2]);
    }
    let p = (p2 / 6.0).sqrt();
    let mut b = *w;
    for (r, row) in b.iter_mut().enumerate() {
        row[r] -= q;
        for x in row.iter_mut() {
            *x /= p;
        }
    }
    let r = (0.5 * det3(&b)).clamp(-1.0, 1.0);
    q + 2.0 * p * (r.acos() / 3.0).cos()
}

fn residuals(model: ContactModel, p: &Problem, lambda: &[f32], c: &[f32]) -> Residuals<f32> {
    let r = (0..p.nc).fold(Residuals::zero(), |r, i| {
        r.max(model.contact_residuals(p.mu(i), get3(lambda, i), get3(c, i)))
    });
    (3 * p.nc..lambda.len()).fold(r, |r, k| r.max(row_residuals(p.set(k), lambda[k], c[k])))
}

fn initial(model: ContactModel, mu: f32, w: V3) -> V3 {
    match model {
        ContactModel::Lcp(pyr) => lcp_initial(&pyr, mu, w),
        _ => project_cone(mu, w),
    }
}

/// The local update of contact `i` (kernel `local_update`, without RaiSim).
fn local_update(model: ContactModel, omega: f32, w: &M3, mu: f32, l: V3, c: V3) -> V3 {
    match model {
        ContactModel::Ccp => ccp_step(largest_eigenvalue3(w), omega, mu, l, c),
        ContactModel::Lcp(pyr) => {
            horizontal_step(w, mu, omega, l, c, |r, lt| pyr.project_disk(r, lt))
        }
        ContactModel::Ncp => horizontal_step(w, mu, omega, l, c, project_disk),
    }
}

/// One sweep; false if an iterate or a velocity became non-finite.
fn sweep(model: ContactModel, omega: f32, p: &Problem, lambda: &mut [f32], c: &mut [f32]) -> bool {
    let nc = p.nc;
    for i in 0..nc {
        let k = 3 * i;
        let old = get3(lambda, i);
        let upd = local_update(model, omega, &p.block(i), p.mu(i), old, get3(c, i));
        let d = [upd[0] - old[0], upd[1] - old[1], upd[2] - old[2]];
        if d == [0.0; 3] {
            continue;
        }
        set3(lambda, i, upd);
        for (r, &dr) in d.iter().enumerate() {
            if dr == 0.0 {
                continue;
            }
            let col = k + r;
            c[col] += p.compliance(col) * dr;
            for (j, cj) in c.iter_mut().enumerate() {
                *cj += p.g(j, col) * dr;
            }
        }
    }
    // The one-dimensional rows: λ ← P(λ − ω c / (G + R)_kk) (kernel `row_step`).
    for k in 3 * nc..lambda.len() {
        let w = p.g(k, k) + p.compliance(k);
        if !(w > 0.0) {
            continue;
        }
        let old = lambda[k];
        let new = p.project(k, old - omega * c[k] / w);
        let d = new - old;
        if d == 0.0 {
            continue;
        }
        lambda[k] = new;
        c[k] += p.compliance(k) * d;
        for (j, cj) in c.iter_mut().enumerate() {
            *cj += p.g(j, k) * d;
        }
    }
    c.iter().chain(lambda.iter()).all(|x| x.is_finite())
}

fn solve_one(
    model: ContactModel,
    omega: f32,
    h: &GpuProblem,
    p: &Problem,
    lambda: &mut [f32],
    c: &mut [f32],
) -> GpuResult {
    let mut out = GpuResult {
        state: STATE_DONE,
        ..Default::default()
    };
    let nc = h.nc as usize;
    let refused = h.flags | pgs_cone_flag(h);
    if refused != 0 {
        out.flags = refused;
        return out;
    }
    if !blocks_psd(p, nc, h.delassus_scale) {
        out.flags = FLAG_NOT_PSD;
        return out;
    }
    for i in 0..nc {
        set3(lambda, i, initial(model, p.mu(i), get3(lambda, i)));
    }
    for k in 3 * nc..lambda.len() {
        lambda[k] = p.project(k, lambda[k]);
    }
    p.velocity(lambda, c);
    let mut it = 0u32;
    loop {
        let mut res = residuals(model, p, lambda, c);
        if res.eps_abs <= h.tolerance && it > 0 {
            // Judged on the exact velocities.
            p.velocity(lambda, c);
            res = residuals(model, p, lambda, c);
        }
        if res.eps_abs <= h.tolerance || lambda.is_empty() || it >= h.max_iterations {
            break;
        }
        it += 1;
        if !sweep(model, omega, p, lambda, c) {
            out.flags = FLAG_DIVERGED;
            break;
        }
    }
    p.velocity(lambda, c);
    let r = residuals(model, p, lambda, c);
    out.iterations = it;
    (out.eps_abs, out.primal, out.dual, out.complementarity) =
        (r.eps_abs, r.primal, r.dual, r.complementarity);
    out
}

/// Solves `batch` with `kind`'s PGS in f32 on the calling thread, into `out`
/// (the layout the GPU solver returns). Refuses a solver without an f32 twin.
pub fn solve_batch_f32(
    kind: SolverKind,
    batch: &HostBatch,
    settings: &SolverSettings,
    out: &mut BatchOutput,
) -> Result<(), GpuError> {
    let model = match kind.contact_model(settings) {
        Some(model) if has_f32_twin(kind) => model,
        _ => {
            return Err(GpuError::NoF32Twin {
                solver: kind.name(),
                available: SolverKind::names_where(|s| s.f32_twin),
            });
        }
    };
    settings.validate()?;
    let omega = settings.over_relaxation as f32;
    out.lambda.clear();
    out.lambda.extend_from_slice(&batch.lambda);
    out.c.clear();
    out.c.resize(batch.lambda.len(), 0.0);
    out.results.clear();
    for h in &batch.problems {
        let m = h.m();
        let v = 3 * h.contact_offset as usize;
        let d = h.delassus_offset as usize;
        let own = &batch.delassus[d..d + h.delassus_len()];
        let (tri, bounds) = own.split_at(m * (m + 1) / 2);
        let p = Problem {
            tri,
            contacts: &batch.contacts[h.contact_offset as usize..][..h.blocks()],
            nc: h.nc as usize,
            bounds,
        };
        let r = solve_one(
            model,
            omega,
            h,
            &p,
            &mut out.lambda[v..v + m],
            &mut out.c[v..v + m],
        );
        out.results.push(r);
    }
    out.headers
        .assign(&batch.problems, &batch.declared_nc, &batch.declared_nl);
    Ok(())
}
