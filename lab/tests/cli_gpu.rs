//! The GPU through the command line: `moreau solve --device gpu` prints the
//! CPU path's JSON lines, `moreau info` names the adapter, `moreau bench
//! solve` measures every decomposition. Without an adapter these return
//! early, unless `MOREAU_REQUIRE_GPU=1` (CI) makes that a failure.

use moreau::gpu::GpuContext;
use nalgebra::DVector;

/// Relative λ error allowed against the CPU path (as in the library's
/// `tests/gpu_solvers.rs`, where the f32 kernels are checked in depth).
const REL_LAMBDA: f64 = 1e-3;

fn context() -> Option<GpuContext> {
    let ctx = GpuContext::for_tests()?;
    eprintln!("adapter: {}", ctx.adapter);
    Some(ctx)
}

/// `moreau solve --device gpu` prints the CPU path's JSON lines, with the
/// same λ within the stated tolerance; `moreau info` names the adapter.
#[test]
fn cli_solves_problem_files_on_the_gpu_and_lists_adapters() {
    let Some(ctx) = context() else { return };
    let bin = env!("CARGO_BIN_EXE_moreau");
    let dir = std::env::temp_dir().join(format!("moreau-gpu-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("problems.json");
    let run = std::process::Command::new(bin)
        .args(["run", "cube-sliding", "--steps", "40", "--dump-every", "10"])
        .arg("--dump-problems")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let solve = |device: &str| {
        let out = std::process::Command::new(bin)
            .arg("solve")
            .arg(&file)
            .args(["--solver", "ncp-pgs", "--tol", "1e-6", "--device", device])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{device}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .collect::<Vec<_>>()
    };
    let (gpu, cpu) = (solve("gpu"), solve("cpu"));
    assert_eq!(gpu.len(), cpu.len());
    assert!(gpu.len() >= 3);
    for (g, c) in gpu.iter().zip(&cpu) {
        let keys =
            |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(g), keys(c));
        let lam = |v: &serde_json::Value| {
            DVector::from_iterator(
                v["nc"].as_u64().unwrap() as usize * 3,
                v["lambda"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap()),
            )
        };
        let rel = (lam(g) - lam(c)).norm() / lam(c).norm();
        assert!(
            rel < REL_LAMBDA,
            "problem {}: relative λ difference {rel:e}",
            g["problem"]
        );
        assert!(g["converged"].as_bool().unwrap());
        assert!(g["eps_abs"].as_f64().unwrap() <= 1e-5);
    }
    let info = std::process::Command::new(bin)
        .arg("info")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(info.status.success());
    assert!(
        text.contains("chosen: ") && text.contains(&ctx.adapter.name),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `moreau bench solve` measures the three decompositions of a PGS solver
/// and the f32 CPU twin, and only the invocation kernel of ADMM; where the
/// adapter has timestamp queries, each row has the device time of its
/// solve (within its wall time) and its distance from the dependency
/// floor, and a one-round solve is one submission and one map.
#[test]
fn bench_solve_reports_every_decomposition_both_cpu_precisions_and_device_times() {
    let Some(ctx) = context() else { return };
    let bin = env!("CARGO_BIN_EXE_moreau");
    let dir = std::env::temp_dir().join(format!("moreau-bench-solve-{}", std::process::id()));
    for (solver, expected) in [
        ("ncp-pgs", vec!["invocation", "lane", "workgroup"]),
        ("ncp-admm", vec!["invocation", "workgroup"]),
    ] {
        let out = std::process::Command::new(bin)
            .args(["bench", "solve", "--solver", solver, "--batch", "1,8"])
            .args([
                "--contacts",
                "3",
                "--iterations",
                "10",
                "--repeats",
                "1",
                "--out",
            ])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(dir.join("bench_solve.json")).unwrap();
        let rows: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
        let mut got: Vec<&str> = rows
            .iter()
            .map(|r| r["decomposition"].as_str().unwrap())
            .collect();
        assert_eq!(rows.len(), 2 * expected.len(), "{solver}: {text}");
        got.dedup();
        got.sort();
        got.dedup();
        assert_eq!(got, expected, "{solver}");
        for r in &rows {
            assert!(r["skipped"].is_null(), "{r}");
            assert!(r["gpu_problems_per_s"].as_f64().unwrap() > 0.0);
            assert_eq!(r["mean_iterations_gpu"].as_f64().unwrap(), 10.0, "{r}");
            assert_eq!(
                r["cpu_f32_problems_per_s"].is_number(),
                solver == "ncp-pgs",
                "{r}"
            );
            let dispatches = r["dispatches"].as_u64().unwrap();
            let submits = r["submits"].as_u64().unwrap();
            assert!(dispatches >= 1 && submits >= 1, "{r}");
            assert_eq!(
                r["maps"].as_u64(),
                Some(submits),
                "one map per submission: {r}"
            );
            if ctx.timestamps {
                let device = r["device_solve_ms"].as_f64().unwrap();
                let wall = r["solve_ms"].as_f64().unwrap();
                assert!(device > 0.0 && device <= wall, "{r}");
                let per = r["device_ns_per_serial_update"].as_f64().unwrap();
                let serial = r["serial_updates"].as_u64().unwrap();
                assert_eq!(serial, if solver == "ncp-pgs" { 30 } else { 10 }, "{r}");
                assert!(
                    (per * serial as f64 * 1e-6 - device).abs() <= 1e-9 * device.max(1.0),
                    "{r}"
                );
            } else {
                assert!(r["device_solve_ms"].is_null(), "{r}");
            }
        }
        assert!(dir.join("bench_solve.svg").exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
