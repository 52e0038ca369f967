//! `batch::solve::solve_problems`, the one batched solve behind `moreau
//! solve` and `moreau.solve`: all cores give one core's results bit for
//! bit, the GPU's agree within its f32 tolerance, and a bad problem or a
//! flagged one is named by its index, with nothing returned.

use moreau::batch::Backend;
use moreau::batch::solve::{SolveError, solve_problems};
use moreau::contact::random::random_problem;
use moreau::contact::{SolverKind, SolverSettings};
use moreau::gpu::GpuContext;

fn problems() -> Vec<moreau::contact::ContactProblem> {
    (0..24)
        .map(|k| random_problem(k + 1, 1 + (k as usize % 6)))
        .collect()
}

#[test]
fn all_cores_give_one_cores_results_bit_for_bit() {
    let problems = problems();
    let settings = SolverSettings::default();
    for kind in [SolverKind::NcpAdmm, SolverKind::NcpPgs, SolverKind::CcpAdmm] {
        let one = solve_problems(&problems, kind, &settings, Backend::CpuSingle).unwrap();
        let all = solve_problems(&problems, kind, &settings, Backend::CpuParallel).unwrap();
        assert_eq!(one.len(), problems.len());
        for (k, (a, b)) in one.iter().zip(&all).enumerate() {
            assert_eq!(a.lambda, b.lambda, "{} problem {k}", kind.name());
            assert_eq!(a.iterations, b.iterations);
            assert!(
                a.converged,
                "{} problem {k}: {:?}",
                kind.name(),
                a.residuals
            );
            assert!(a.residuals.eps_abs <= settings.tolerance);
        }
    }
}

#[test]
fn a_bad_problem_is_named_and_nothing_is_returned() {
    let mut problems = problems();
    problems[5].mu[0] = -0.5;
    for backend in [Backend::CpuSingle, Backend::CpuParallel] {
        match solve_problems(&problems, SolverKind::NcpAdmm, &Default::default(), backend) {
            Err(SolveError::Problem { index, error }) => {
                assert_eq!(index, 5);
                let text = SolveError::Problem { index, error }.to_string();
                assert!(text.starts_with("problem 5: "), "{text}");
            }
            other => panic!("{backend}: expected problem 5 refused, got {other:?}"),
        }
    }
}

#[test]
fn the_gpu_agrees_with_the_cpu_and_flags_a_non_psd_problem() {
    if GpuContext::for_tests().is_none() {
        return;
    }
    let problems = problems();
    let settings = SolverSettings {
        tolerance: 1e-5,
        ..Default::default()
    };
    let kind = SolverKind::NcpPgs;
    let cpu = solve_problems(&problems, kind, &settings, Backend::CpuSingle).unwrap();
    let gpu = solve_problems(&problems, kind, &settings, Backend::Gpu).unwrap();
    let mut worst = 0.0f64;
    for (a, b) in cpu.iter().zip(&gpu) {
        let scale = a.lambda.iter().fold(1e-3f64, |m, x| m.max(x.abs()));
        for (x, y) in a.lambda.iter().zip(&b.lambda) {
            worst = worst.max((x - y).abs() / scale);
        }
        assert!(b.converged, "{:?}", b.residuals);
    }
    println!("GPU against CPU, ncp-pgs at 1e-5: worst relative λ difference {worst:.2e}");
    assert!(worst < 1e-2, "{worst:e}");
    // G with a negative eigenvalue: refused by the GPU's check, by index.
    let mut bad = problems.clone();
    let m = bad[3].delassus.nrows();
    for i in 0..m {
        bad[3].delassus[(i, i)] = -1.0;
    }
    match solve_problems(&bad, kind, &settings, Backend::Gpu) {
        Err(SolveError::Flagged(f)) => {
            assert_eq!(f.len(), 1, "{f:?}");
            assert_eq!(f[0].0, 3);
        }
        other => panic!("expected problem 3 flagged, got {other:?}"),
    }
}
