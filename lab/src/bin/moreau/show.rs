//! `moreau info`, `moreau inspect` and `moreau compare`.

use super::*;

/// `moreau info`: the adapters, the one chosen and its limits.
pub(crate) fn info() -> Result<(), AnyError> {
    use moreau::gpu::{BatchCapacity, GpuContext};
    let wanted = std::env::var("MOREAU_ADAPTER").ok();
    let ctx = match GpuContext::with_adapter(wanted.as_deref()) {
        Ok(ctx) => ctx,
        Err(e) => {
            let (_, adapters) = moreau::gpu::enumerate_adapters();
            say!("adapters found: {}", adapters.len());
            for a in &adapters {
                say!("  {:?}", a.get_info());
            }
            return Err(e.into());
        }
    };
    say!("adapters found: {}", ctx.adapters.len());
    for (i, a) in ctx.adapters.iter().enumerate() {
        say!("  [{i}] {a}");
    }
    say!(
        "chosen: {}{}",
        ctx.adapter,
        match &wanted {
            Some(w) => format!(" (MOREAU_ADAPTER={w:?})"),
            None => " (by type: discrete > integrated > virtual > cpu)".into(),
        }
    );
    let l = &ctx.limits;
    say!("limits:");
    say!(
        "  max_storage_buffer_binding_size     {} bytes",
        l.max_storage_buffer_binding_size
    );
    say!(
        "  max_buffer_size                     {} bytes",
        l.max_buffer_size
    );
    say!(
        "  max_storage_buffers_per_shader_stage {}",
        l.max_storage_buffers_per_shader_stage
    );
    say!(
        "  max_compute_workgroups_per_dimension {}",
        l.max_compute_workgroups_per_dimension
    );
    say!(
        "  max_compute_invocations_per_workgroup {}",
        l.max_compute_invocations_per_workgroup
    );
    say!(
        "  max_compute_workgroup_storage_size   {} bytes",
        l.max_compute_workgroup_storage_size
    );
    say!(
        "subgroup sizes: {} to {}",
        ctx.adapter.subgroup_sizes.0,
        ctx.adapter.subgroup_sizes.1
    );
    say!(
        "timestamp queries: {}",
        match (ctx.timestamps, ctx.timestamps_in_encoders) {
            (true, true) => format!(
                "passes and copies ({} ns per tick): moreau bench solve and moreau bench report device times",
                ctx.timestamp_period_ns
            ),
            (true, false) => format!(
                "passes only ({} ns per tick): device times of the solves, not of the copies",
                ctx.timestamp_period_ns
            ),
            _ => "none: only wall times are reported".into(),
        }
    );
    say!(
        "driver loop limit: {}",
        match ctx.loop_limit {
            Some(n) => format!(
                "an invocation's loops stop after {n} iterations (probed): solves are split into chunks under it"
            ),
            None => format!(
                "none ({} iterations ran, probed): each solve runs in one dispatch",
                moreau::gpu::LOOP_PROBE_ITERATIONS
            ),
        }
    );
    say!("GPU solvers: {}", moreau::gpu::gpu_solvers());
    for nc in [4, 12, 48] {
        let cap = BatchCapacity::uniform(65_536, nc);
        say!(
            "device memory, 65536 problems of {nc} contacts: PGS {:.1} MiB ({} B/problem), ADMM {:.1} MiB ({} B/problem)",
            cap.device_bytes(moreau::contact::Kernel::Pgs) as f64 / 1048576.0,
            cap.device_bytes(moreau::contact::Kernel::Pgs) / 65_536,
            cap.device_bytes(moreau::contact::Kernel::Admm) as f64 / 1048576.0,
            cap.device_bytes(moreau::contact::Kernel::Admm) / 65_536,
        );
    }
    Ok(())
}

/// `moreau compare`: the experiments with a progress bar, then the tables,
/// the plots and the JSON.
pub(crate) fn compare(out: &std::path::Path, quick: bool) -> Result<(), AnyError> {
    let cfg = report::CompareConfig { quick };
    let pb = ProgressBar::new(cfg.work());
    pb.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} {wide_msg} [{elapsed_precise}]")
            .unwrap(),
    );
    let start = Instant::now();
    let result = report::compare(cfg, &|label: &str| {
        pb.set_message(label.to_string());
        pb.inc(1);
    });
    pb.finish_and_clear();
    let r = result.map_err(|e| e.to_string())?;
    say!("{}", r.render());
    let plots = report::write_plots(&r, out).map_err(|e| e.to_string())?;
    let json = report::write_json(&r, out).map_err(|e| e.to_string())?;
    for p in plots.iter().chain([&json]) {
        say!("wrote {}", p.display());
    }
    say!(
        "compare{}: {:.1} s wall (trajectories {:.1} s on {} threads, time-to-accuracy {:.1} s on one)",
        if quick { " --quick" } else { "" },
        start.elapsed().as_secs_f64(),
        r.wall_trajectories,
        rayon::current_num_threads(),
        r.wall_time_to_accuracy
    );
    Ok(())
}

pub(crate) fn inspect(file: &std::path::Path, args: &ModelFileArgs) -> Result<(), AnyError> {
    let start = Instant::now();
    let loaded = load_model_file(file, &args.options())?;
    let elapsed = start.elapsed();
    let m = &loaded.model;
    let format = match loaded.format {
        ModelFormat::Urdf => "URDF",
        ModelFormat::Mjcf => "MJCF",
    };
    say!(
        "{} ({format}, {}, loaded in {:.1} ms)",
        m.name,
        file.display(),
        elapsed.as_secs_f64() * 1e3
    );
    let mut summary = String::new();
    loaded.write_summary(&mut summary)?;
    let _ = write!(std::io::stdout(), "{summary}");
    Ok(())
}

/// `moreau compare events`: time-stepping against event-based simulation.
pub(crate) fn compare_events(out: &std::path::Path) -> Result<(), AnyError> {
    use moreau_lab::events::compare;
    let report = compare::compare_events().map_err(|e| e.to_string())?;
    say!("{}", compare::render(&report));
    for path in compare::write_events(&report, out).map_err(|e| e.to_string())? {
        say!("wrote {}", path.display());
    }
    Ok(())
}

/// `moreau compare locomotion`: the trot controllers and the contact
/// models on the quadruped.
pub(crate) fn compare_locomotion(out: &std::path::Path, quick: bool) -> Result<(), AnyError> {
    use moreau_lab::locomotion;
    let report = locomotion::compare_locomotion(quick, &|what: &str| eprintln!("walking: {what}"))
        .map_err(|e| e.to_string())?;
    say!("{}", locomotion::render(&report));
    for path in locomotion::write_locomotion(&report, out).map_err(|e| e.to_string())? {
        say!("wrote {}", path.display());
    }
    Ok(())
}

/// `moreau render`: the scene after `steps` steps, drawn offscreen, as a PNG.
pub(crate) fn render(
    name: &str,
    file_args: &ModelFileArgs,
    steps: usize,
    (width, height): (u32, u32),
    (azimuth, elevation, distance): (f64, f64, Option<f64>),
    out: &std::path::Path,
) -> Result<(), AnyError> {
    use moreau::render::{Camera, Renderer};
    let scene = load_scene(name, file_args, false)?;
    let mut state = scene.state.clone();
    if steps > 0 {
        let settings = (
            DEFAULT_TOLERANCE,
            DEFAULT_MAX_ITERATIONS,
            (true, true),
            DelassusPath::Auto,
        );
        let mut sim = run::make_sim(&scene, None, SolverKind::DEFAULT.name(), settings)?;
        let mut tau = DVector::zeros(scene.model.nv);
        let ctrl = (scene.controller.is_none() && scene.model.nu() > 0)
            .then(|| vec![0.0; scene.model.nu()]);
        for step in 0..steps {
            scene.control(&state, tau.as_mut_slice());
            match &ctrl {
                Some(ctrl) => sim.step_controls(&mut state, ctrl),
                None => sim.step(&mut state, tau.as_slice()),
            }
            .map_err(|e| format!("step {step}: {e}"))?;
        }
    }
    let start = Instant::now();
    let mut renderer = Renderer::new(scene.model.clone(), width, height)?;
    let q = state.q.as_slice();
    let fallback = renderer.default_camera(q)?;
    let distance = distance.unwrap_or((fallback.eye - fallback.target).norm());
    let camera = Camera::orbit(fallback.target, distance, azimuth, elevation);
    let image = renderer.render(q, &camera)?;
    let elapsed = start.elapsed();
    write_png(out, &image)?;
    say!(
        "wrote {} ({width} x {height}, t = {:.3} s, rendered in {:.0} ms on {})",
        out.display(),
        state.t,
        elapsed.as_secs_f64() * 1e3,
        moreau::gpu::GpuContext::new()?.adapter.name
    );
    Ok(())
}

/// `image` as an 8-bit RGB PNG file.
fn write_png(path: &std::path::Path, image: &moreau::render::Image) -> Result<(), AnyError> {
    let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), image.width, image.height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(&image.rgb)?;
    writer.finish()?;
    Ok(())
}
