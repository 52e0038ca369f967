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
//! problems, not bit for bit.

use super::batch::{
    FLAG_DIVERGED, FLAG_NOT_PSD, GpuContact, GpuProblem, GpuResult, HostBatch, STATE_DONE,
};
use super::{BatchOutput, GpuError};
use crate::contact::{SolverKind, SolverSettings};

/// The solvers with an f32 CPU twin here.
pub const F32_SOLVERS: &str = "ncp-pgs, ccp-pgs, lcp-pgs";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Model {
    Ncp,
    Ccp,
    Lcp { facets: u32 },
}

fn model(kind: SolverKind, settings: &SolverSettings) -> Option<Model> {
    match kind {
        SolverKind::NcpPgs => Some(Model::Ncp),
        SolverKind::CcpPgs => Some(Model::Ccp),
        SolverKind::LcpPgs => Some(Model::Lcp {
            facets: settings.pyramid_facets as u32,
        }),
        _ => None,
    }
}

/// Whether `kind` has an f32 CPU twin ([`F32_SOLVERS`]).
pub fn has_f32_twin(kind: SolverKind) -> bool {
    model(kind, &SolverSettings::default()).is_some()
}

type V3 = [f32; 3];
type M3 = [[f32; 3]; 3];

fn nan_max(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        a.max(b)
    }
}

fn norm2(x: f32, y: f32) -> f32 {
    (x * x + y * y).sqrt()
}

fn dist(a: V3, b: V3) -> f32 {
    let d = [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt()
}

/// One problem's packed data.
struct Problem<'a> {
    /// Its lower triangle of G, row-major.
    tri: &'a [f32],
    contacts: &'a [GpuContact],
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

fn det3(w: &M3) -> f32 {
    w[0][0] * (w[1][1] * w[2][2] - w[1][2] * w[2][1])
        - w[0][1] * (w[1][0] * w[2][2] - w[1][2] * w[2][0])
        + w[0][2] * (w[1][0] * w[2][1] - w[1][1] * w[2][0])
}

/// The kernel's block test (minors against `−1e-6·scaleᵏ`).
fn blocks_psd(p: &Problem, nc: usize, scale: f32) -> bool {
    (0..nc).all(|i| {
        let w = p.block(i);
        let e1 = -1e-6 * scale;
        let (e2, e3) = (e1 * scale, e1 * scale * scale);
        let m = |a: usize, b: usize| w[a][a] * w[b][b] - w[a][b] * w[a][b];
        !(w[0][0] < e1
            || w[1][1] < e1
            || w[2][2] < e1
            || m(0, 1) < e2
            || m(0, 2) < e2
            || m(1, 2) < e2
            || det3(&w) < e3)
    })
}

fn tangent_sigma(w: &M3) -> f32 {
    let (a, b, d) = (w[0][0], w[0][1], w[1][1]);
    0.5 * (a + d) + (0.25 * (a - d) * (a - d) + b * b).sqrt()
}

/// Largest eigenvalue of a symmetric 3×3 matrix (closed form, as the kernel).
fn largest_eigenvalue3(w: &M3) -> f32 {
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

fn project_soc(a: f32, half_space: bool, x: V3) -> V3 {
    let n = x[2];
    if half_space {
        return [x[0], x[1], n.max(0.0)];
    }
    let t = norm2(x[0], x[1]);
    if t <= a * n && n >= 0.0 {
        return x;
    }
    if a * t <= -n {
        return [0.0; 3];
    }
    let np = if a > 1.0 {
        (t + n / a) / (a + 1.0 / a)
    } else {
        (a * t + n) / (1.0 + a * a)
    };
    let s = a * np / t;
    [x[0] * s, x[1] * s, np]
}

fn project_cone(mu: f32, x: V3) -> V3 {
    project_soc(mu, false, x)
}

fn project_dual_cone(mu: f32, x: V3) -> V3 {
    if mu > 0.0 {
        project_soc(1.0 / mu, false, x)
    } else {
        project_soc(0.0, true, x)
    }
}

const TAU: f32 = std::f32::consts::TAU;

fn pyramid_vertex(facets: u32, k: u32, r: f32) -> [f32; 2] {
    let f = facets as f32;
    let a = TAU * (k as f32 + 0.5) / f;
    let rad = r / (0.5 * TAU / f).cos();
    [rad * a.cos(), rad * a.sin()]
}

fn pyramid_gauge(facets: u32, x: [f32; 2]) -> f32 {
    if facets == 4 {
        return x[0].abs().max(x[1].abs());
    }
    (0..facets).fold(0.0f32, |g, k| {
        let a = TAU * k as f32 / facets as f32;
        g.max(a.cos() * x[0] + a.sin() * x[1])
    })
}

fn pyramid_support(facets: u32, u: [f32; 2]) -> f32 {
    if facets == 4 {
        return u[0].abs() + u[1].abs();
    }
    (0..facets).fold(-3.0e38f32, |h, k| {
        let v = pyramid_vertex(facets, k, 1.0);
        h.max(v[0] * u[0] + v[1] * u[1])
    })
}

fn pyramid_project(facets: u32, r: f32, x: [f32; 2]) -> [f32; 2] {
    if !(r > 0.0) {
        return [0.0; 2];
    }
    if facets == 4 {
        return [x[0].clamp(-r, r), x[1].clamp(-r, r)];
    }
    if pyramid_gauge(facets, x) <= r {
        return x;
    }
    let mut best = [0.0; 2];
    let mut best_d = 3.0e38f32;
    let mut prev = pyramid_vertex(facets, facets - 1, r);
    for k in 0..facets {
        let (a, b) = (prev, pyramid_vertex(facets, k, r));
        prev = b;
        let e = [b[0] - a[0], b[1] - a[1]];
        let t = (((x[0] - a[0]) * e[0] + (x[1] - a[1]) * e[1]) / (e[0] * e[0] + e[1] * e[1]))
            .clamp(0.0, 1.0);
        let p = [a[0] + t * e[0], a[1] + t * e[1]];
        let d = (x[0] - p[0]).powi(2) + (x[1] - p[1]).powi(2);
        if d < best_d {
            best_d = d;
            best = p;
        }
    }
    best
}

fn assemble(primal: f32, dual: f32, l: V3, y: V3) -> [f32; 4] {
    let n = l[0].abs().max(l[1].abs()).max(l[2].abs());
    let mut compl = 0.0;
    if n > 0.0 {
        let u = [l[0] / n, l[1] / n, l[2] / n];
        compl = (u[0] * y[0] + u[1] * y[1] + u[2] * y[2]).abs()
            / (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]).sqrt();
    }
    [primal, dual, compl, nan_max(nan_max(primal, dual), compl)]
}

fn contact_residuals(model: Model, mu: f32, l: V3, c: V3) -> [f32; 4] {
    match model {
        Model::Ccp => {
            let primal = dist(l, project_cone(mu, l));
            let dual = dist(c, project_dual_cone(mu, c));
            assemble(primal, dual, l, c)
        }
        Model::Lcp { facets } => {
            let r = mu * l[2].max(0.0);
            let lt = pyramid_project(facets, r, [l[0], l[1]]);
            let primal = (-l[2]).max(0.0) + norm2(l[0] - lt[0], l[1] - lt[1]);
            let gamma = mu * pyramid_support(facets, [-c[0], -c[1]]);
            let y = [c[0], c[1], c[2] + gamma];
            assemble(primal, (-c[2]).max(0.0), l, y)
        }
        Model::Ncp => {
            let primal = dist(l, project_cone(mu, l));
            let y = [c[0], c[1], c[2] + mu * norm2(c[0], c[1])];
            let dual = dist(y, project_dual_cone(mu, y));
            assemble(primal, dual, l, y)
        }
    }
}

fn residuals(model: Model, p: &Problem, lambda: &[f32], c: &[f32]) -> [f32; 4] {
    let mut r = [0.0f32; 4];
    for (i, (l, v)) in lambda.chunks_exact(3).zip(c.chunks_exact(3)).enumerate() {
        let ri = contact_residuals(model, p.mu(i), [l[0], l[1], l[2]], [v[0], v[1], v[2]]);
        for (a, b) in r.iter_mut().zip(ri) {
            *a = nan_max(*a, b);
        }
    }
    r
}

fn initial(model: Model, mu: f32, w: V3) -> V3 {
    match model {
        Model::Lcp { facets } => {
            let n = w[2].max(0.0);
            let t = pyramid_project(facets, mu * n, [w[0], w[1]]);
            [t[0], t[1], n]
        }
        _ => project_cone(mu, w),
    }
}

/// The local update of contact `i` (kernel `local_update`, without RaiSim).
fn local_update(model: Model, omega: f32, w: &M3, mu: f32, l: V3, c: V3) -> V3 {
    if model == Model::Ccp {
        let s = largest_eigenvalue3(w);
        if !(s > 0.0) {
            return l;
        }
        return project_cone(
            mu,
            [
                l[0] - omega * c[0] / s,
                l[1] - omega * c[1] / s,
                l[2] - omega * c[2] / s,
            ],
        );
    }
    // The normal step, then the tangential one corrected for it.
    let mut ln = l[2];
    if w[2][2] > 0.0 {
        ln = (l[2] - omega * c[2] / w[2][2]).max(0.0);
    }
    let dn = ln - l[2];
    let ct = [c[0] + w[0][2] * dn, c[1] + w[1][2] * dn];
    let sigma = tangent_sigma(w);
    let mut lt = [l[0], l[1]];
    if sigma > 0.0 {
        lt = [l[0] - omega * ct[0] / sigma, l[1] - omega * ct[1] / sigma];
    }
    let r = mu * ln;
    if let Model::Lcp { facets } = model {
        lt = pyramid_project(facets, r, lt);
    } else {
        let norm = norm2(lt[0], lt[1]);
        if norm > r {
            let s = if norm > 0.0 { r / norm } else { 0.0 };
            lt = [lt[0] * s, lt[1] * s];
        }
    }
    [lt[0], lt[1], ln]
}

/// One sweep; false if an iterate or a velocity became non-finite.
fn sweep(model: Model, omega: f32, p: &Problem, lambda: &mut [f32], c: &mut [f32]) -> bool {
    let nc = lambda.len() / 3;
    for i in 0..nc {
        let k = 3 * i;
        let old = [lambda[k], lambda[k + 1], lambda[k + 2]];
        let upd = local_update(
            model,
            omega,
            &p.block(i),
            p.mu(i),
            old,
            [c[k], c[k + 1], c[k + 2]],
        );
        let d = [upd[0] - old[0], upd[1] - old[1], upd[2] - old[2]];
        if d == [0.0; 3] {
            continue;
        }
        lambda[k..k + 3].copy_from_slice(&upd);
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
    c.iter().chain(lambda.iter()).all(|x| x.is_finite())
}

fn solve_one(
    model: Model,
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
    if h.flags != 0 {
        out.flags = h.flags;
        return out;
    }
    if !blocks_psd(p, nc, h.delassus_scale) {
        out.flags = FLAG_NOT_PSD;
        return out;
    }
    for i in 0..nc {
        let w = initial(
            model,
            p.mu(i),
            [lambda[3 * i], lambda[3 * i + 1], lambda[3 * i + 2]],
        );
        lambda[3 * i..3 * i + 3].copy_from_slice(&w);
    }
    p.velocity(lambda, c);
    let mut it = 0u32;
    loop {
        let mut res = residuals(model, p, lambda, c);
        if res[3] <= h.tolerance && it > 0 {
            // Judged on the exact velocities.
            p.velocity(lambda, c);
            res = residuals(model, p, lambda, c);
        }
        if res[3] <= h.tolerance || nc == 0 || it >= h.max_iterations {
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
    (out.eps_abs, out.primal, out.dual, out.complementarity) = (r[3], r[0], r[1], r[2]);
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
    let Some(model) = model(kind, settings) else {
        return Err(GpuError::InvalidSetting(format!(
            "`{}` has no f32 CPU twin (those with one: {F32_SOLVERS})",
            kind.name()
        )));
    };
    settings
        .validate()
        .map_err(|e| GpuError::InvalidSetting(e.to_string()))?;
    let omega = settings.over_relaxation as f32;
    out.lambda.clear();
    out.lambda.extend_from_slice(&batch.lambda);
    out.c.clear();
    out.c.resize(batch.lambda.len(), 0.0);
    out.results.clear();
    for h in &batch.problems {
        let m = 3 * h.nc as usize;
        let v = 3 * h.contact_offset as usize;
        let d = h.delassus_offset as usize;
        let p = Problem {
            tri: &batch.delassus[d..d + m * (m + 1) / 2],
            contacts: &batch.contacts[h.contact_offset as usize..][..h.nc as usize],
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
    out.headers.clear();
    out.headers.extend_from_slice(&batch.problems);
    out.declared_nc.clear();
    out.declared_nc.extend_from_slice(&batch.declared_nc);
    Ok(())
}
