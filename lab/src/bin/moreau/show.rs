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
    // In the order of preference: `MOREAU_ADAPTER=#k` chooses the k-th.
    for k in 0..ctx.adapters.len() {
        let i = moreau::gpu::choose_adapter(&ctx.adapters, Some(&format!("#{k}")))?;
        say!("  #{k} {}", ctx.adapters[i]);
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

/// `moreau render`: the scene after `steps` steps, or a configuration of a
/// recorded trajectory, drawn offscreen, as a PNG.
pub(crate) fn render(
    name: &str,
    file_args: &ModelFileArgs,
    (steps, recorded): (usize, Option<(PathBuf, i64)>),
    args: &ViewArgs,
    out: &std::path::Path,
) -> Result<(), AnyError> {
    use moreau::render::Renderer;
    let scene = load_scene(name, file_args, false)?;
    let mut state = scene.state.clone();
    if args.contacts && recorded.is_some() {
        return Err(
            "--contacts draws a step's forces, which a trajectory file does not hold: use --steps"
                .into(),
        );
    }
    let mut overlay = moreau::render::Overlay::default();
    if let Some((path, frame)) = &recorded {
        let (t, q) = recorded_configuration(path, *frame, scene.model.nq)?;
        (state.t, state.q) = (t, DVector::from_vec(q));
    } else if steps > 0 {
        let settings = (
            DEFAULT_TOLERANCE,
            DEFAULT_MAX_ITERATIONS,
            (true, true, true),
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
        if args.contacts {
            overlay = moreau::render::Overlay::from_contacts(
                &scene.model,
                sim.solved_contacts(),
                sim.params.dt,
            );
        }
    }
    let view = view_of(&scene.model, args)?;
    let start = Instant::now();
    let mut renderer = Renderer::new(scene.model.clone(), args.width, args.height)?;
    let q = state.q.as_slice();
    let camera = renderer.camera(q, &view)?;
    let scale = moreau::render::Overlay::default_scale(&scene.model);
    let image = renderer
        .render_overlaid(&[q], &[camera], &[overlay], scale)?
        .remove(0);
    let elapsed = start.elapsed();
    write_png(out, &image)?;
    say!(
        "wrote {} ({} x {}, t = {:.3} s, rendered in {:.0} ms on {})",
        out.display(),
        args.width,
        args.height,
        state.t,
        elapsed.as_secs_f64() * 1e3,
        moreau::gpu::GpuContext::new()?.adapter.name
    );
    Ok(())
}

/// The camera the options ask for: `--camera` names a camera of the file
/// (which takes no angles or distance) or a body or frame to follow.
pub(crate) fn view_of(
    model: &moreau::Model,
    args: &ViewArgs,
) -> Result<moreau::render::View, AnyError> {
    use moreau::render::{Renderer, Target, View};
    let target = match &args.camera {
        None => Target::CenterOfMass,
        Some(name) => match View::named(model, name) {
            Some(View::Model(k)) => {
                let posed = args.distance.is_some()
                    || args.azimuth != Renderer::AZIMUTH
                    || args.elevation != Renderer::ELEVATION;
                if posed {
                    return Err(format!(
                        "--camera {name} is a camera of the file: it takes no --azimuth, --elevation or --distance"
                    )
                    .into());
                }
                return Ok(View::Model(k));
            }
            Some(View::Orbit { target, .. }) => target,
            None => {
                let cameras: Vec<&str> = model.cameras.iter().map(|c| c.name.as_str()).collect();
                return Err(format!(
                    "--camera {name}: not a camera of the file ({cameras:?}), a body or a frame (see `moreau inspect`)"
                )
                .into());
            }
        },
    };
    Ok(View::Orbit {
        target,
        azimuth: args.azimuth,
        elevation: args.elevation,
        distance: args.distance,
    })
}

/// Row `frame` (negative: from the end) of a trajectory `moreau run --out`
/// wrote: its time and configuration, checked against the model's `nq`.
fn recorded_configuration(
    path: &std::path::Path,
    frame: i64,
    nq: usize,
) -> Result<(f64, Vec<f64>), AnyError> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let bad = |why: String| -> AnyError { format!("{}: {why}", path.display()).into() };
    let json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let rows: Vec<(f64, Vec<f64>)> = if json {
        let doc: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
        let rows = doc["trajectory"].as_array().ok_or_else(|| {
            bad("no `trajectory` list (not written by `moreau run --out`?)".into())
        })?;
        rows.iter()
            .enumerate()
            .map(|(k, r)| {
                let q: Option<Vec<f64>> = r["q"]
                    .as_array()
                    .map(|q| q.iter().filter_map(|x| x.as_f64()).collect());
                match (r["t"].as_f64(), q) {
                    (Some(t), Some(q)) => Ok((t, q)),
                    _ => Err(bad(format!("row {k} has no `t` and `q`"))),
                }
            })
            .collect::<Result<_, _>>()?
    } else {
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
        let columns: Option<Vec<usize>> = std::iter::once("t".to_string())
            .chain((0..nq).map(|i| format!("q{i}")))
            .map(|c| header.iter().position(|h| h.trim() == c))
            .collect();
        let columns = columns.ok_or_else(|| {
            bad(format!(
                "the header lacks `t` or one of q0..q{} (nq = {nq} for this model)",
                nq.max(1) - 1
            ))
        })?;
        lines
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(k, line)| {
                let cells: Vec<&str> = line.split(',').collect();
                let values: Result<Vec<f64>, AnyError> = columns
                    .iter()
                    .map(|&c| {
                        let cell = cells.get(c).map(|s| s.trim()).unwrap_or_default();
                        cell.parse::<f64>()
                            .map_err(|_| bad(format!("row {k}: `{cell}` is not a number")))
                    })
                    .collect();
                let values = values?;
                Ok((values[0], values[1..].to_vec()))
            })
            .collect::<Result<_, AnyError>>()?
    };
    let n = rows.len() as i64;
    let k = if frame < 0 { n + frame } else { frame };
    if !(0..n).contains(&k) {
        return Err(bad(format!("frame {frame}: the trajectory has {n} rows")));
    }
    let (t, q) = rows[k as usize].clone();
    if q.len() != nq {
        return Err(bad(format!(
            "row {k} has {} coordinates, the model nq = {nq}",
            q.len()
        )));
    }
    Ok((t, q))
}

/// Draws the configurations `qs` of a run into the video `path`, each
/// with its overlay when `overlays` has them.
pub(crate) fn write_video(
    model: &std::sync::Arc<moreau::Model>,
    (qs, overlays): (&[Vec<f64>], &[moreau::render::Overlay]),
    (path, fps, args): (&std::path::Path, f64, &ViewArgs),
) -> Result<(), AnyError> {
    use moreau::render::Renderer;
    use moreau_lab::video::VideoWriter;
    let view = view_of(model, args)?;
    let start = Instant::now();
    let mut renderer = Renderer::new(model.clone(), args.width, args.height)?;
    let mut video = VideoWriter::create(path, args.width, args.height, fps)?;
    // A few frames per submission: one image per layer of the targets.
    let scale = moreau::render::Overlay::default_scale(model);
    for (k, chunk) in qs.chunks(16).enumerate() {
        let refs: Vec<&[f64]> = chunk.iter().map(Vec::as_slice).collect();
        let cameras = refs
            .iter()
            .map(|q| renderer.camera(q, &view))
            .collect::<Result<Vec<_>, _>>()?;
        let marks = overlays.get(16 * k..16 * k + chunk.len()).unwrap_or(&[]);
        for image in renderer.render_overlaid(&refs, &cameras, marks, scale)? {
            video.push(&image)?;
        }
    }
    let frames = video.finish()?;
    say!(
        "wrote {} ({frames} frames of {} x {} at {fps:.1} frames/s, drawn and encoded in {:.1} s)",
        path.display(),
        args.width,
        args.height,
        start.elapsed().as_secs_f64()
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

/// `moreau bench render`: frames per second of the batched renderer.
pub(crate) fn bench_render(
    scenes: &[String],
    file_args: &ModelFileArgs,
    (worlds, sizes): (&[usize], &[u32]),
    repeats: usize,
) -> Result<(), AnyError> {
    use moreau::render::{Renderer, View};
    let adapter = moreau::gpu::GpuContext::new()?.adapter;
    if adapter.is_software() {
        say!(
            "note: {} is a software adapter: these are not GPU figures",
            adapter.name
        );
    }
    for name in scenes {
        let scene = load_scene(name, file_args, false)?;
        let model = &scene.model;
        for &side in sizes {
            let mut renderer = Renderer::new(model.clone(), side, side)?;
            for &n in worlds {
                // Each world's joints moved by up to 0.1 (a fixed sequence).
                let qs: Vec<Vec<f64>> = (0..n)
                    .map(|w| {
                        let mut q = scene.state.q.clone();
                        for j in 1..model.nbodies {
                            if model.joint_type[j].nq() == 1 {
                                let k = model.joint_idx_q[j];
                                q[k] += 0.1 * ((w * 7 + j * 13) % 17) as f64 / 17.0;
                            }
                        }
                        q.as_slice().to_vec()
                    })
                    .collect();
                let refs: Vec<&[f64]> = qs.iter().map(Vec::as_slice).collect();
                let cameras = (refs.iter())
                    .map(|q| renderer.camera(q, &View::default()))
                    .collect::<Result<Vec<_>, _>>()?;
                renderer.render_many(&refs, &cameras)?; // targets made, shaders compiled
                let mut times = Vec::with_capacity(repeats.max(1));
                for _ in 0..repeats.max(1) {
                    let start = Instant::now();
                    let images = renderer.render_many(&refs, &cameras)?;
                    times.push(start.elapsed().as_secs_f64());
                    assert_eq!(images.len(), n);
                }
                times.sort_by(f64::total_cmp);
                let (best, median) = (times[0], times[times.len() / 2]);
                say!(
                    "{}",
                    serde_json::json!({
                        "scene": name, "worlds": n, "width": side, "height": side,
                        "best_s": best, "median_s": median,
                        "frames_per_s": n as f64 / best, "adapter": adapter.name,
                        "software_adapter": adapter.is_software(),
                    })
                );
            }
        }
    }
    Ok(())
}
