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

/// `moreau render` and `moreau run --video`: a PNG of the asked size; the
/// last row of a recorded trajectory draws the same image, bit for bit, as
/// the state `render --steps` reaches; a GIF with a frame every 1/fps s;
/// bad requests refused by name.
#[test]
fn render_and_video_from_the_command_line() {
    let Some(_ctx) = context() else { return };
    let bin = env!("CARGO_BIN_EXE_moreau");
    let dir = std::env::temp_dir().join(format!("moreau-render-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let moreau = |args: &[&str]| {
        let out = std::process::Command::new(bin)
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    };
    let png = |name: &str| {
        let decoder = png::Decoder::new(std::io::BufReader::new(
            std::fs::File::open(dir.join(name)).unwrap(),
        ));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        ((info.width, info.height), buf)
    };
    let size = ["--width", "96", "--height", "64"];
    let (ok, text) = moreau(
        &[
            &["run", "cartpole", "--steps", "1000", "--out", "t.csv"],
            &size[..],
            &["--video", "v.gif", "--fps", "10"],
        ]
        .concat(),
    );
    assert!(ok, "{text}");
    assert!(text.contains("wrote v.gif (11 frames of 96 x 64"), "{text}");
    let (ok, text) = moreau(
        &[
            &["render", "cartpole", "--steps", "1000", "--out", "a.png"],
            &size[..],
        ]
        .concat(),
    );
    assert!(ok, "{text}");
    let (ok, text) = moreau(
        &[
            &[
                "render", "cartpole", "--state", "t.csv", "--frame", "-1", "--out", "b.png",
            ],
            &size[..],
        ]
        .concat(),
    );
    assert!(ok, "{text}");
    let (a, b) = (png("a.png"), png("b.png"));
    assert_eq!(a.0, (96, 64));
    assert!(a == b, "the recorded last state draws as the stepped one");
    let (ok, _) = moreau(
        &[
            &[
                "render", "cartpole", "--state", "t.csv", "--frame", "0", "--out", "c.png",
            ],
            &size[..],
        ]
        .concat(),
    );
    assert!(ok && png("c.png") != a);
    let mut decoder = gif::DecodeOptions::new()
        .read_info(std::fs::File::open(dir.join("v.gif")).unwrap())
        .unwrap();
    let mut frames = 0;
    while let Some(frame) = decoder.read_next_frame().unwrap() {
        assert_eq!((frame.width, frame.height, frame.delay), (96, 64, 10));
        frames += 1;
    }
    assert_eq!(frames, 11);
    for (args, message) in [
        (
            vec![
                "render", "cartpole", "--state", "t.csv", "--frame", "1001", "--out", "x.png",
            ],
            "frame 1001: the trajectory has 1001 rows",
        ),
        (
            vec![
                "render", "cartpole", "--camera", "nowhere", "--out", "x.png",
            ],
            "--camera nowhere: not a camera of the file",
        ),
        (
            vec!["render", "pyramid", "--state", "t.csv", "--out", "x.png"],
            "the header lacks `t` or one of q0..q41",
        ),
        (
            vec!["run", "cartpole", "--steps", "5", "--video", "v.avi"],
            "use .gif or .mp4",
        ),
    ] {
        let (ok, text) = moreau(&args);
        assert!(!ok && text.contains(message), "{args:?}: {text}");
    }
    // The renderer's frames per second, one JSON line per point.
    let (ok, text) = moreau(&[
        "bench",
        "render",
        "--scene",
        "cartpole",
        "--worlds",
        "1,3",
        "--size",
        "32",
        "--repeats",
        "2",
    ]);
    assert!(ok, "{text}");
    let points: Vec<serde_json::Value> = text
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(points.len(), 2, "{text}");
    assert_eq!(points[1]["worlds"], 3);
    assert!(points[1]["frames_per_s"].as_f64().unwrap() > 0.0);
    std::fs::remove_dir_all(&dir).unwrap();
}
