//! `moreau bench` and `moreau bench solve`: the benchmark drivers of
//! `moreau_lab::bench` with progress, tables, JSON and plots.

use super::*;

/// `moreau bench solve`.
pub(crate) fn bench_solve(
    cfg: moreau_lab::bench::solve::BenchConfig,
    out: &std::path::Path,
) -> Result<(), AnyError> {
    use moreau_lab::bench::solve::{plot, run};
    let (kind, iterations, tol) = (cfg.kind, cfg.max_iterations, cfg.tolerance);
    moreau::gpu::check_kernel(kind)?;
    let ctx = moreau::gpu::GpuContext::new()?;
    say!("device: {}", ctx.adapter);
    if ctx.adapter.is_software() {
        say!(
            "notice: a software adapter: these are not GPU figures (correctness of the path only)"
        );
    }
    say!(
        "solver {} (GPU f32; one CPU core: the reference in f64{}), cold starts, random well-posed problems, {}",
        kind.name(),
        if moreau::gpu::cpu_f32::has_f32_twin(kind) {
            " and the kernel's twin in f32"
        } else {
            ""
        },
        match tol {
            Some(t) => format!("to eps_abs {t:e} (cap {iterations})"),
            None => format!("{iterations} iterations"),
        }
    );
    say!(
        "{:>8} {:>7} {:>22} {:>13} {:>13} {:>8} {:>13} {:>8} {:>10} {:>10} {:>10} {:>10} {:>9} {:>5} {:>8} {:>8} {:>10} {:>8}",
        "contacts",
        "batch",
        "decomp/layout",
        "GPU prob/s",
        "CPU64 prob/s",
        "ratio64",
        "CPU32 prob/s",
        "ratio32",
        "upload ms",
        "solve ms",
        "dl ms",
        "dev ms",
        "ns/update",
        "disp",
        "it GPU",
        "it CPU",
        "B/problem",
        "ΔRSS KiB"
    );
    let rows = run(&ctx, &cfg, |r| match &r.skipped {
        Some(why) => say!(
            "{:>8} {:>7} {:>22} skipped: {why}",
            r.contacts,
            r.batch,
            format!("{}/{}", r.decomposition.name(), r.layout.name())
        ),
        None => say!(
            "{:>8} {:>7} {:>22} {:>13.0} {:>13.0} {:>8.2} {:>13} {:>8} {:>10.2} {:>10.2} {:>10.2} {:>10} {:>9} {:>5} {:>8.1} {:>8.1} {:>10} {:>8}",
            r.contacts,
            r.batch,
            format!("{}/{}", r.decomposition.name(), r.layout.name()),
            r.gpu_problems_per_s,
            r.cpu_problems_per_s,
            r.ratio,
            r.cpu_f32_problems_per_s
                .map_or("-".into(), |x| format!("{x:.0}")),
            r.ratio_f32.map_or("-".into(), |x| format!("{x:.2}")),
            r.upload_ms,
            r.solve_ms,
            r.download_ms,
            r.device_solve_ms.map_or("-".into(), |x| format!("{x:.3}")),
            r.device_ns_per_serial_update
                .map_or("-".into(), |x| format!("{x:.0}")),
            r.dispatches,
            r.mean_iterations_gpu,
            r.mean_iterations_cpu,
            r.gpu_bytes_per_problem,
            r.host_rss_growth_kib.map_or("-".into(), |k| k.to_string())
        ),
    })?;
    std::fs::create_dir_all(out)?;
    let json = out.join("bench_solve.json");
    std::fs::write(&json, serde_json::to_string_pretty(&rows)?)?;
    say!("written: {}", json.display());
    let svg = out.join("bench_solve.svg");
    match plot(&rows, &svg) {
        Ok(()) => say!("written: {}", svg.display()),
        Err(e) => eprintln!("no plot: {e}"),
    }
    Ok(())
}

/// `moreau bench`: runs [`moreau_lab::bench::batch::run`] with a progress bar,
/// prints its tables and writes its JSON report and plot.
pub(crate) fn bench(cfg: SceneBenchConfig, out: &std::path::Path) -> Result<(), AnyError> {
    use moreau_lab::bench::batch::{self as bench, BenchEvent};
    let started = Instant::now();
    let pb = ProgressBar::new(0);
    pb.set_style(
        ProgressStyle::with_template(
            "{bar:40} {percent:>3}% world steps, {wide_msg} [{elapsed_precise}, eta {eta}]",
        )
        .unwrap(),
    );
    let report = bench::run(&cfg, |e| match e {
        BenchEvent::Start { world_steps } => pb.set_length(world_steps),
        BenchEvent::Note(n) => pb.suspend(|| eprintln!("note: {n}")),
        BenchEvent::Begin {
            scene,
            backend,
            nworlds,
        } => pb.set_message(format!("{scene}, {backend}, {nworlds} worlds")),
        BenchEvent::Progress(k) => pb.inc(k),
        BenchEvent::Done(r) => pb.suspend(|| match &r.skipped {
            Some(why) => eprintln!(
                "{} {} {} worlds: skipped: {why}",
                r.scene, r.backend, r.nworlds
            ),
            None => eprintln!(
                "{} {} {} worlds: {:.0} steps/s",
                r.scene, r.backend, r.nworlds, r.steps_per_s
            ),
        }),
    });
    pb.finish_and_clear();
    let report = report?;
    say!("{}", bench::render(&report));
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    std::fs::write(out, serde_json::to_string_pretty(&report)?)
        .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    say!("written: {}", out.display());
    let svg = out.with_extension("svg");
    match bench::plot(&report, &svg) {
        Ok(()) => say!("written: {}", svg.display()),
        Err(e) => eprintln!("no plot: {e}"),
    }
    say!("bench: {:.1} s wall", started.elapsed().as_secs_f64());
    Ok(())
}

/// `moreau bench env`.
pub(crate) fn bench_env(
    tasks: &[String],
    envs: &[usize],
    backends: &[Backend],
    steps: usize,
    assets: Option<PathBuf>,
    out: &std::path::Path,
    task_on_host: bool,
) -> Result<(), AnyError> {
    use moreau::envs::gymnasium::GymKind;
    let kinds: Vec<GymKind> = if tasks.iter().any(|t| t == "all") {
        GymKind::ALL.to_vec()
    } else {
        (tasks.iter())
            .map(|t| {
                GymKind::from_id(t).ok_or_else(|| {
                    let ids: Vec<_> = GymKind::ALL.iter().map(|k| k.id()).collect();
                    format!("unknown task `{t}`; tasks: {}, or all", ids.join(", "))
                })
            })
            .collect::<Result<_, _>>()?
    };
    if steps == 0 || envs.contains(&0) {
        return Err("--steps and --envs must be at least 1".into());
    }
    let assets = match assets {
        Some(a) => a,
        None => match std::env::var_os("MOREAU_ROBOT_FILES") {
            Some(site) => PathBuf::from(site).join("gymnasium/envs/mujoco/assets"),
            None => {
                return Err(
                    "Gymnasium's MuJoCo assets: give --assets DIR or set MOREAU_ROBOT_FILES \
                            (scripts/fetch-robot-files)"
                        .into(),
                );
            }
        },
    };
    println!(
        "{:<26} {:>6} {:>7} {:>12} {:>8} {:>8} {:>6} {:>6} {:>6} {:>6} {:>6}",
        "task",
        "envs",
        "backend",
        "env steps/s",
        "µs/step",
        "physics",
        "task",
        "reset",
        "other",
        "layer",
        "host"
    );
    let mut rows = Vec::new();
    for &kind in &kinds {
        for &backend in backends {
            for &n in envs {
                let r = moreau_lab::bench::env::bench_env(
                    kind,
                    &assets,
                    n,
                    backend,
                    steps,
                    1,
                    task_on_host,
                )?;
                println!(
                    "{:<26} {:>6} {:>7} {:>12.0} {:>8.2} {:>8.2} {:>6.2} {:>6.2} {:>6.2} {:>5.1}% {:>6}",
                    r.task,
                    n,
                    r.backend,
                    r.env_steps_per_s,
                    r.us_per_env_step,
                    r.physics_us,
                    r.task_us,
                    r.reset_us,
                    r.other_us,
                    100.0 * r.layer_share_of_physics,
                    r.host_us.map_or("-".into(), |h| format!("{h:.2}"))
                );
                rows.push(r);
            }
        }
    }
    std::fs::create_dir_all(out)?;
    let path = out.join("bench_env.json");
    std::fs::write(&path, serde_json::to_string_pretty(&rows)?)?;
    println!("wrote {}", path.display());
    Ok(())
}
