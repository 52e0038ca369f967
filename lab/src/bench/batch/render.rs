//! The benchmark's report as text tables and as a plot.

use super::*;

/// Column heads of the stages ([`Stage::ALL`]) in the printed table.
const STAGE_HEADS: [&str; Stage::COUNT] = [
    "act", "dyn", "col", "del", "pack", "up", "solv", "down", "vel", "int", "oth",
];

/// The table of a report, one block per scene, and the ratio lines.
pub fn render(report: &BenchReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "solver {} (tolerance {:e}, cap {} iterations, warm start {}), actions: {}",
        report.settings.solver,
        report.settings.tolerance,
        report.settings.max_iterations,
        if report.settings.warm_start {
            "on"
        } else {
            "off"
        },
        if report.settings.random_actions {
            "random (each scene's below)"
        } else {
            "the scenes' PD controllers"
        },
    );
    let _ = writeln!(
        s,
        "GPU: {}; CPU: {} ({} threads); precision: GPU f32 solve + f64 host, CPU f64",
        match (&report.gpu.device, &report.gpu.unavailable_reason) {
            (Some(d), _) => format!(
                "{d}{}",
                if report.gpu.software {
                    " (software adapter)"
                } else {
                    ""
                }
            ),
            (None, Some(why)) => format!("unavailable ({why})"),
            (None, None) => "not requested".into(),
        },
        report.host.cpu.as_deref().unwrap_or("?"),
        report.host.threads
    );
    for sc in &report.scenes {
        let _ = writeln!(
            s,
            "\n{} (nq {}, nv {}, dt {} s, {} steps timed after {} warm-up; stage shares in %)",
            sc.name, sc.nq, sc.nv, sc.dt, report.settings.steps, report.settings.warmup_steps
        );
        if report.settings.random_actions {
            let _ = writeln!(s, "actions: {}", sc.actions);
        }
        let stage_heads: String = STAGE_HEADS.iter().map(|h| format!(" {h:>4}")).collect();
        let _ = writeln!(
            s,
            "{:>7} {:>9} {:>11} {:>9} |{stage_heads} | {:>6} {:>6} {:>5} {:>4} {:>8} {:>4} {:>9} {:>8} {:>9}",
            "worlds",
            "back",
            "steps/s",
            "ms/step",
            "nc/w",
            "iters",
            "newt",
            "fin%",
            "eps_abs",
            "fb",
            "host B/w",
            "ΔRSS KiB",
            "host µs/w"
        );
        for r in report.runs.iter().filter(|r| r.scene == sc.name) {
            if let Some(why) = &r.skipped {
                let _ = writeln!(s, "{:>7} {:>9} skipped: {why}", r.nworlds, r.backend);
                continue;
            }
            let shares: String = r
                .stage_shares
                .iter()
                .map(|(_, x)| format!(" {:>4.0}", 100.0 * x))
                .collect();
            let _ = writeln!(
                s,
                "{:>7} {:>9} {:>11.0} {:>9.3} |{shares} | {:>6.2} {:>6.1} {:>5.2} {:>4.0} {:>8.1e} {:>4} {:>9} {:>8} {:>9.3}",
                r.nworlds,
                r.backend,
                r.steps_per_s,
                1e3 / r.batch_steps_per_s,
                r.contacts_per_world,
                r.iterations_per_solve,
                r.newton_steps_per_solve,
                100.0 * r.finished_share,
                r.max_eps_abs,
                r.fallbacks,
                r.memory
                    .host_bytes_per_world
                    .map_or("-".into(), |b| format!("{b:.0}")),
                r.memory
                    .host_rss_growth_kib
                    .map_or("-".into(), |k| k.to_string()),
                r.host_cpu_seconds_per_world_step * 1e6,
            );
            if r.resident {
                let _ = writeln!(
                    s,
                    "{:>13} resident on the device: the host's own time {:.3} µs per world step (inputs, submit, state read back), {:.3} ms per step waiting for the device",
                    "",
                    r.host_cpu_seconds_per_world_step * 1e6,
                    r.stage_seconds.get(Stage::Solve) * 1e3,
                );
                if let Some(st) = &r.resident_stages {
                    let ms = |x: &ResidentStageSeconds| {
                        format!(
                            "step {:.3}, solve {:.3}, finish {:.3}",
                            x.step_s * 1e3,
                            x.solve_s * 1e3,
                            x.finish_s * 1e3
                        )
                    };
                    let _ = writeln!(
                        s,
                        "{:>13} device stages per step, ms ({} steps, each stage alone): {}; host clock: {}",
                        "",
                        st.steps,
                        st.device
                            .as_ref()
                            .map_or("not timed (no timestamp queries)".into(), ms),
                        ms(&st.host),
                    );
                }
            } else if r.backend == Backend::Gpu.name() || r.backend == Backend::GpuSolve.name() {
                let solve = r.stage_seconds.get(Stage::Solve);
                let _ = writeln!(
                    s,
                    "{:>13} GPU per step: solve {:.3} ms wall, {} on the device ({} readback copies); {:.1} dispatches, {:.1} submits, {:.1} maps",
                    "",
                    solve * 1e3,
                    r.device_solve_s
                        .map_or("not timed".into(), |d| format!("{:.3} ms", d * 1e3)),
                    r.device_readback_s
                        .map_or("-".into(), |d| format!("{:.3} ms", d * 1e3)),
                    r.dispatches_per_step,
                    r.submits_per_step,
                    r.maps_per_step,
                );
            }
            if r.overflowed_worlds > 0 {
                let _ = writeln!(
                    s,
                    "{:>13} {} world steps found more contacts than the world has room for: {} dropped (the deepest kept)",
                    "", r.overflowed_worlds, r.dropped_contacts
                );
            }
            if r.unconverged > 0 || r.at_floor > 0 {
                let _ = writeln!(
                    s,
                    "{:>13} of {} solves, {} unconverged (over the tolerance at the iteration cap), {} ended at f32's floor short of the tolerance",
                    "", r.solves, r.unconverged, r.at_floor
                );
            }
            if r.failed > 0 {
                let _ = writeln!(
                    s,
                    "{:>13} {} failed world steps; first: {}",
                    "",
                    r.failed,
                    r.first_failure.as_deref().unwrap_or("?")
                );
            }
        }
    }
    // Every GPU ratio; all cores over one only at each scene's largest size.
    let largest = |q: &Ratio| {
        report
            .ratios
            .iter()
            .filter(|o| o.scene == q.scene && o.backend == q.backend)
            .all(|o| o.nworlds <= q.nworlds)
    };
    let mut first = true;
    for q in report
        .ratios
        .iter()
        .filter(|q| q.backend.starts_with("gpu") || largest(q))
    {
        if first {
            let _ = writeln!(s);
            first = false;
        }
        let name = match q.backend.as_str() {
            "gpu" => "GPU",
            "gpu-solve" => "GPU solve (host-prepared)",
            "cpu" => "all cores",
            other => other,
        };
        let _ = writeln!(
            s,
            "{name} over {}: ×{:.2} at {} worlds ({}){}",
            if q.over == "cpu" {
                "all cores"
            } else {
                "single core"
            },
            q.ratio,
            q.nworlds,
            q.scene,
            if q.over_nworlds != q.nworlds {
                format!(" (single core measured at {} worlds)", q.over_nworlds)
            } else {
                String::new()
            }
        );
    }
    for n in &report.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// World steps per second versus batch size, log-log, one line per
/// (scene, backend), as SVG.
pub fn plot(report: &BenchReport, path: &Path) -> Result<(), String> {
    use plotters::prelude::*;
    let done: Vec<&BenchRun> = report
        .runs
        .iter()
        .filter(|r| r.skipped.is_none() && r.steps_per_s > 0.0)
        .collect();
    if done.is_empty() {
        return Err("no measured run to plot".into());
    }
    let xmax = done.iter().map(|r| r.nworlds).max().unwrap_or(1) as f64 * 1.5;
    let (ylo, yhi) = done
        .iter()
        .map(|r| r.steps_per_s)
        .fold((f64::INFINITY, 0.0f64), |(a, b), y| (a.min(y), b.max(y)));
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    let e = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let gpu = report.gpu.device.as_deref().unwrap_or("no GPU");
    let title = format!(
        "moreau bench: world steps/s vs worlds ({}, GPU: {gpu})",
        report.settings.solver
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        // Headroom above the lines for the legend.
        .build_cartesian_2d((0.7..xmax).log_scale(), (ylo / 2.0..yhi * 10.0).log_scale())
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc("worlds per batch")
        .y_desc("world steps per second")
        .draw()
        .map_err(|x| e(&x))?;
    let mut k = 0;
    for sc in &report.scenes {
        for b in Backend::ALL {
            let pts: Vec<(f64, f64)> = done
                .iter()
                .filter(|r| r.scene == sc.name && r.backend == b.name())
                .map(|r| (r.nworlds as f64, r.steps_per_s))
                .collect();
            if pts.is_empty() {
                continue;
            }
            let color = Palette99::pick(k).to_rgba();
            k += 1;
            let label = format!(
                "{} {}",
                sc.name,
                match b {
                    Backend::Gpu => "GPU",
                    Backend::GpuSolve => "GPU solve, host-prepared",
                    Backend::CpuParallel => "CPU all cores (f64)",
                    Backend::CpuSingle => "CPU one core (f64)",
                }
            );
            let style = color.stroke_width(2);
            match b {
                Backend::CpuSingle => chart
                    .draw_series(DashedLineSeries::new(pts.clone(), 6, 4, style))
                    .map_err(|x| e(&x))?
                    .label(label),
                _ => chart
                    .draw_series(LineSeries::new(pts.clone(), style))
                    .map_err(|x| e(&x))?
                    .label(label),
            }
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(|x| e(&x))?;
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}
