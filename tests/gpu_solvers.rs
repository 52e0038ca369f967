//! The batched WGSL solvers against their f64 CPU twins, on random problems
//! of 1 to 64 contacts and on problems harvested from the scenes; warm
//! starts; bad problems flagged without disturbing the rest; every shader
//! validated by naga. On a machine without an adapter the GPU tests print a
//! notice and pass, unless `MOREAU_REQUIRE_GPU=1` (CI, on lavapipe).
//!
//! Tolerances. The GPU runs in f32; each GPU problem is given the tolerance
//! `TOL_GPU` on its own model's `ε_abs` and must (a) report convergence, (b)
//! have, re-evaluated in f64 from the returned λ (c recomputed in f64), an
//! `ε_abs` within `10·TOL_GPU`, and (c) where the model's solution is unique
//! (the CCP, a strictly convex QP) or the problem well conditioned (the
//! random ones), a λ within a relative error `REL_LAMBDA` of the CPU's
//! solution computed to `1e-10`. The worst offender is printed.

mod common;

use common::Lcg;
use moreau::contact::{
    ContactProblem, ContactSolution, SolverKind, SolverSettings, model_residuals,
};
use moreau::gpu::{
    BatchCapacity, BatchOutput, FLAG_DIVERGED, FLAG_INVALID, FLAG_NOT_PSD, FLAG_OVER_CAPACITY,
    GpuContext, GpuError, GpuSolver, flag_names,
};
use moreau::scenes;
use moreau::sim::SimParams;
use nalgebra::{DMatrix, DVector};

/// The kernels' target `ε_abs` (f32).
const TOL_GPU: f64 = 1e-5;
/// Relative λ error allowed against the CPU solution.
const REL_LAMBDA: f64 = 1e-3;

const GPU_KINDS: [SolverKind; 5] = [
    SolverKind::LcpPgs,
    SolverKind::CcpPgs,
    SolverKind::NcpPgs,
    SolverKind::CcpAdmm,
    SolverKind::NcpAdmm,
];

/// A random well-conditioned problem (as in `solver_catalog`): G = AAᵀ + I/2,
/// a free velocity that pushes every contact into its surface and slides it.
fn random_problem(rng: &mut Lcg, nc: usize) -> ContactProblem {
    let m = 3 * nc;
    let a = DMatrix::from_fn(m, m, |_, _| rng.range(-1.0, 1.0)) / (m as f64).sqrt();
    let g = &a * a.transpose() + DMatrix::identity(m, m) * 0.5;
    let mut free = rng.vector(m, -1.0, 1.0);
    for i in 0..nc {
        free[3 * i + 2] = rng.range(-1.0, 0.2);
    }
    let mu = (0..nc).map(|_| rng.range(0.1, 1.0)).collect();
    ContactProblem::new(g, free, mu).unwrap()
}

fn random_batch() -> Vec<ContactProblem> {
    let mut rng = Lcg(11);
    let mut sizes = vec![1, 2, 3, 4, 5, 8, 12, 16, 24, 32, 48, 64];
    for _ in 0..12 {
        sizes.push(1 + (rng.next() * 64.0) as usize);
    }
    sizes.iter().map(|&nc| random_problem(&mut rng, nc)).collect()
}

fn settings(tolerance: f64, max_iterations: usize) -> SolverSettings {
    SolverSettings {
        tolerance,
        max_iterations,
        ..Default::default()
    }
}

/// ε_abs of the GPU λ under `kind`'s model, in f64, with c recomputed.
fn f64_eps(kind: SolverKind, p: &ContactProblem, lambda: &DVector<f64>) -> f64 {
    let model = moreau::study::solver_model(kind, &SolverSettings::default()).unwrap();
    let mut c = vec![0.0; p.g.len()];
    p.contact_velocity(lambda.as_slice(), &mut c);
    model_residuals(model, &p.mu, lambda.as_slice(), &c).eps_abs
}

fn context() -> Option<GpuContext> {
    let ctx = GpuContext::for_tests()?;
    eprintln!("adapter: {}", ctx.adapter);
    Some(ctx)
}

#[derive(Debug, Default)]
struct Worst {
    rel: f64,
    rel_at: String,
    eps_ratio: f64,
    eps_at: String,
}

/// Solves `problems` with `kind` on the GPU (tolerance `TOL_GPU`) and on the
/// CPU (to 1e-10) and checks (a), (b) and, if `compare_lambda`, (c).
fn cross_check(
    ctx: &GpuContext,
    kind: SolverKind,
    problems: &[ContactProblem],
    label: &str,
    compare_lambda: bool,
    max_iterations: usize,
) -> Worst {
    let nc_max = problems.iter().map(|p| p.nc()).max().unwrap_or(1);
    let cap = BatchCapacity::uniform(problems.len(), nc_max);
    let mut gpu = GpuSolver::new(ctx, kind, cap).unwrap();
    let mut out = BatchOutput::default();
    gpu.solve(problems, &settings(TOL_GPU, max_iterations), &mut out)
        .unwrap();
    let mut cpu = kind.build();
    let mut worst = Worst::default();
    for (i, p) in problems.iter().enumerate() {
        let o = out.problem(i);
        assert_eq!(
            o.flags(),
            0,
            "{label} {}: problem {i} flagged {:?}",
            kind.name(),
            flag_names(o.flags())
        );
        assert!(
            o.converged(),
            "{label} {}: problem {i} (nc {}) did not converge: {:?}",
            kind.name(),
            p.nc(),
            o.result
        );
        let l = o.lambda_f64();
        let eps = f64_eps(kind, p, &l);
        let ratio = eps / TOL_GPU;
        if ratio > worst.eps_ratio {
            worst.eps_ratio = ratio;
            worst.eps_at = format!("problem {i} (nc {}): eps_abs {eps:.3e}", p.nc());
        }
        assert!(
            eps <= 10.0 * TOL_GPU,
            "{label} {}: problem {i} (nc {}): f64 eps_abs of the GPU λ is {eps:e} > 10·{TOL_GPU:e}",
            kind.name(),
            p.nc()
        );
        if compare_lambda {
            let mut sol = ContactSolution::default();
            cpu.solve(p, &settings(1e-10, 100_000), &mut sol).unwrap();
            assert!(sol.stats.converged, "{label}: CPU {} problem {i}", kind.name());
            let rel = (&l - &sol.lambda).norm() / sol.lambda.norm().max(1e-300);
            if rel > worst.rel {
                worst.rel = rel;
                worst.rel_at = format!(
                    "problem {i} (nc {}): |λ_gpu − λ_cpu| / |λ_cpu| = {rel:.3e}, GPU {} iterations, CPU {}",
                    p.nc(),
                    o.result.iterations,
                    sol.stats.iterations
                );
            }
        }
    }
    eprintln!(
        "{label} {:9}: worst eps_abs/tol = {:.3} at {}; worst relative λ error {:.3e} at {}",
        kind.name(),
        worst.eps_ratio,
        worst.eps_at,
        worst.rel,
        worst.rel_at
    );
    if compare_lambda {
        assert!(
            worst.rel <= REL_LAMBDA,
            "{label} {}: worst relative λ error {:e} > {REL_LAMBDA:e} at {}",
            kind.name(),
            worst.rel,
            worst.rel_at
        );
    }
    worst
}

#[test]
fn every_shader_parses_and_validates_with_naga() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let common = std::fs::read_to_string(dir.join("common.wgsl")).unwrap();
    let mut checked = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("wgsl") {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        // Kernels are compiled with common.wgsl prepended (as the Rust side does).
        let source = if name == "common.wgsl" {
            text.clone()
        } else {
            format!("{common}\n{text}")
        };
        let module = naga::front::wgsl::parse_str(&source)
            .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(&source)));
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::default(),
        )
        .validate(&module)
        .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(&source)));
        checked.push(name);
    }
    checked.sort();
    assert_eq!(checked, ["admm.wgsl", "common.wgsl", "pgs.wgsl"]);
    // The Rust side compiles exactly these sources, with matching workgroup sizes.
    for (src, file, wg) in [
        (moreau::gpu::pgs::SOURCE, "pgs.wgsl", moreau::gpu::pgs::WORKGROUP_SIZE),
        (moreau::gpu::admm::SOURCE, "admm.wgsl", moreau::gpu::admm::WORKGROUP_SIZE),
    ] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        assert_eq!(src, format!("{common}\n{text}"), "{file}");
        assert!(
            text.contains(&format!("const WORKGROUP_SIZE: u32 = {wg}u;")),
            "{file}: WORKGROUP_SIZE differs from the Rust constant {wg}"
        );
    }
}

#[test]
fn kernels_match_their_cpu_twins_on_random_problems() {
    let Some(ctx) = context() else { return };
    let problems = random_batch();
    for kind in GPU_KINDS {
        cross_check(&ctx, kind, &problems, "random", true, 5000);
    }
}
