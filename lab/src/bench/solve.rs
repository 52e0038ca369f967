//! Throughput of a batched GPU solver against the same algorithm on one CPU
//! core (`moreau bench solve`, `benches/gpu_solvers.rs`).
//!
//! The problems are random and well posed (`G = AAᵀ + I/2`, a free
//! velocity that pushes every contact into its surface and slides it, μ in
//! [0.1, 1]): a pool of 16 per size, repeated to fill the batch. The GPU runs
//! in f32; on one CPU core, the reference solver runs in f64 and, for the
//! PGS solvers, the kernel's f32 twin ([`moreau::gpu::cpu_f32`]) on the same
//! packed batch. All get the same iteration cap and tolerance
//! (fixed-iteration runs use a tolerance of 1e-30, never reached, and turn
//! off `ncp-admm`'s polish and Newton finisher, which end a solve early
//! where they find an exact solution: f32's residual can be exactly 0). Each
//! point runs every requested [`Decomposition`] the solver has, with each
//! requested [`Layout`] of G. Wall times are host-side: upload
//! (packing into wgpu's staging buffers and encoding), solve (submit to
//! results mapped: transfers, dispatches and the round trips between
//! rounds) and download (copy out of the mapped readback); where the
//! adapter has timestamp queries, the device time of the solve's passes
//! and copies is reported beside them.

use moreau::contact::random::random_problem;
use moreau::contact::{ContactSolution, SolverKind, SolverSettings};
use moreau::counters::Stage;
use moreau::gpu::{
    BatchCapacity, BatchOutput, Decomposition, GpuContext, GpuError, GpuSolver, HostBatch, Layout,
    check_kernel, cpu_f32,
};
use std::time::Instant;

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    pub kind: SolverKind,
    pub contacts: Vec<usize>,
    pub batches: Vec<usize>,
    pub max_iterations: usize,
    /// `None`: fixed iteration count (tolerance 1e-30).
    pub tolerance: Option<f64>,
    /// Timed GPU solves per point (after one warm-up); the fastest is kept.
    pub repeats: usize,
    /// Problems solved on the CPU per point (the throughput is extrapolated).
    pub cpu_sample: usize,
    /// The GPU decompositions to measure (those the solver lacks are skipped).
    pub decompositions: Vec<Decomposition>,
    /// The layouts of G to measure.
    pub layouts: Vec<Layout>,
}

/// One point: a solver, a problem size, a batch size.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct BenchRow {
    pub device: String,
    pub driver: String,
    pub solver: String,
    pub decomposition: Decomposition,
    pub layout: Layout,
    pub gpu_precision: &'static str,
    pub cpu_precision: &'static str,
    pub contacts: usize,
    pub batch: usize,
    pub max_iterations: usize,
    pub tolerance: f64,
    pub warm_start: bool,
    pub gpu_problems_per_s: f64,
    /// The reference solver (f64) on one core.
    pub cpu_problems_per_s: f64,
    /// GPU over one CPU core (f64).
    pub ratio: f64,
    /// The kernel's f32 twin on one core (PGS solvers).
    pub cpu_f32_problems_per_s: Option<f64>,
    /// GPU over one CPU core (f32).
    pub ratio_f32: Option<f64>,
    pub mean_iterations_cpu_f32: Option<f64>,
    /// Wall times of the fastest repeat: packing and upload, from
    /// submission to the mapped readback, copying out of the readback.
    pub upload_ms: f64,
    pub solve_ms: f64,
    pub download_ms: f64,
    /// Device time of the solve's compute passes and of its readback copies
    /// (timestamp queries; `None` where the adapter has none).
    pub device_solve_ms: Option<f64>,
    pub device_readback_ms: Option<f64>,
    /// Dispatches, submissions and readback maps of one solve.
    pub dispatches: u64,
    pub submits: u32,
    pub maps: u32,
    /// The longest chain of dependent local updates of the batch (Gauss-Seidel:
    /// iterations × contacts of its longest solve; ADMM: its iterations), and
    /// the device time per link of that chain: the solve's distance from
    /// the dependency floor, whatever the latency of one local update.
    pub serial_updates: u64,
    pub device_ns_per_serial_update: Option<f64>,
    pub mean_iterations_gpu: f64,
    pub mean_iterations_cpu: f64,
    pub gpu_bytes_per_problem: u64,
    /// Host resident memory growth over the timed repeats (KiB; Linux only).
    pub host_rss_growth_kib: Option<i64>,
    /// Why the point was not measured (e.g. over the adapter's buffer limits).
    pub skipped: Option<String>,
}

/// Resident set size in KiB (Linux), for the host-memory check.
pub fn rss_kib() -> Option<i64> {
    let s = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: i64 = s.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4)
}

/// Runs every (contacts, batch) point of `cfg`, calling `each` after each.
pub fn run(
    ctx: &GpuContext,
    cfg: &BenchConfig,
    mut each: impl FnMut(&BenchRow),
) -> Result<Vec<BenchRow>, GpuError> {
    let tolerance = cfg.tolerance.unwrap_or(1e-30);
    let settings = SolverSettings {
        max_iterations: cfg.max_iterations,
        tolerance,
        // (Fixed iterations: the GPU's ADMM would stop at f32's floor, and
        // where a finisher's answer has a residual of exactly 0, as the
        // device's polish found on one of the 8 problems of 3 contacts.)
        f32_floor: cfg.tolerance.is_some(),
        polish: cfg.tolerance.is_some(),
        newton: cfg.tolerance.is_some(),
        ..Default::default()
    };
    let (kernel, _) = check_kernel(cfg.kind)?;
    let mut rows = Vec::new();
    for &nc in &cfg.contacts {
        let pool: Vec<_> = (0..16).map(|s| random_problem(s as u64 + 1, nc)).collect();
        // The CPU twin, on a sample.
        let mut cpu = cfg.kind.build();
        let mut sol = ContactSolution::default();
        let sample = cfg.cpu_sample.max(1);
        let start = Instant::now();
        let mut cpu_iterations = 0usize;
        for k in 0..sample {
            cpu.solve(&pool[k % pool.len()], &settings, &mut sol)?;
            cpu_iterations += sol.stats.iterations;
        }
        let cpu_rate = sample as f64 / start.elapsed().as_secs_f64();
        // The kernel's f32 twin, on the same sample, packed.
        let f32_twin = if cpu_f32::has_f32_twin(cfg.kind) {
            let mut batch = HostBatch::new(nc);
            for k in 0..sample {
                batch.push(&pool[k % pool.len()], settings.max_iterations, tolerance);
            }
            let mut out = BatchOutput::default();
            let start = Instant::now();
            cpu_f32::solve_batch_f32(cfg.kind, &batch, &settings, &mut out)?;
            let rate = sample as f64 / start.elapsed().as_secs_f64();
            let it = out.results.iter().map(|r| r.iterations as f64).sum::<f64>() / sample as f64;
            Some((rate, it))
        } else {
            None
        };
        let layouts = if cfg.layouts.is_empty() {
            vec![Layout::Packed]
        } else {
            cfg.layouts.clone()
        };
        let points = cfg.batches.iter().flat_map(|&n| {
            let layouts = &layouts;
            cfg.decompositions
                .iter()
                .filter(|d| d.check(cfg.kind, &BatchCapacity::uniform(1, nc)).is_ok())
                .flat_map(move |&d| layouts.iter().map(move |&l| (n, d, l)))
        });
        for (n, decomposition, layout) in points {
            let cap = BatchCapacity::uniform(n, nc);
            let mut row = BenchRow {
                device: ctx.adapter.name.clone(),
                driver: format!("{} {}", ctx.adapter.driver, ctx.adapter.driver_info),
                solver: cfg.kind.name().into(),
                decomposition,
                layout,
                gpu_precision: "f32",
                cpu_precision: "f64",
                contacts: nc,
                batch: n,
                max_iterations: cfg.max_iterations,
                tolerance,
                warm_start: false,
                cpu_problems_per_s: cpu_rate,
                mean_iterations_cpu: cpu_iterations as f64 / sample as f64,
                cpu_f32_problems_per_s: f32_twin.map(|t| t.0),
                mean_iterations_cpu_f32: f32_twin.map(|t| t.1),
                gpu_bytes_per_problem: cap.device_bytes(kernel) / n.max(1) as u64,
                ..Default::default()
            };
            let mut solver = match GpuSolver::with_decomposition(ctx, cfg.kind, cap, decomposition)
            {
                Ok(s) => s,
                // Points this adapter or decomposition cannot hold are reported, not fatal.
                Err(
                    e @ (GpuError::CapacityTooLarge { .. }
                    | GpuError::DispatchCapacity { .. }
                    | GpuError::WorkgroupCapacity { .. }
                    | GpuError::NoWorkgroupKernel { .. }),
                ) => {
                    row.skipped = Some(e.to_string());
                    each(&row);
                    rows.push(row);
                    continue;
                }
                Err(e) => return Err(e),
            };
            solver.set_layout(layout);
            let mut batch = solver.new_batch();
            for k in 0..n {
                batch.push(&pool[k % pool.len()], settings.max_iterations, tolerance);
            }
            let mut out = BatchOutput::default();
            solver.solve_batch(&batch, &settings, &mut out)?; // warm-up (pipeline compilation)
            let rss0 = rss_kib();
            let mut best = f64::INFINITY;
            for _ in 0..cfg.repeats.max(1) {
                let start = Instant::now();
                solver.solve_batch(&batch, &settings, &mut out)?;
                let t = start.elapsed().as_secs_f64();
                if t < best {
                    best = t;
                    let tm = solver.last_timings();
                    row.upload_ms = tm.get(Stage::Upload).as_secs_f64() * 1e3;
                    row.solve_ms = tm.get(Stage::Solve).as_secs_f64() * 1e3;
                    row.download_ms = tm.get(Stage::Download).as_secs_f64() * 1e3;
                    let dt = solver.last_device_times();
                    row.device_solve_ms = dt.measured.then_some(dt.solve.as_secs_f64() * 1e3);
                    row.device_readback_ms = (dt.measured && ctx.timestamps_in_encoders)
                        .then_some(dt.readback.as_secs_f64() * 1e3);
                    row.dispatches = dt.dispatches;
                    row.submits = dt.submits;
                    row.maps = dt.maps;
                }
            }
            row.host_rss_growth_kib = match (rss0, rss_kib()) {
                (Some(a), Some(b)) => Some(b - a),
                _ => None,
            };
            row.gpu_problems_per_s = n as f64 / best;
            row.ratio = row.gpu_problems_per_s / cpu_rate;
            row.ratio_f32 = f32_twin.map(|t| row.gpu_problems_per_s / t.0);
            row.mean_iterations_gpu =
                out.results.iter().map(|r| r.iterations as f64).sum::<f64>() / n.max(1) as f64;
            let longest = out
                .results
                .iter()
                .map(|r| r.iterations as u64)
                .max()
                .unwrap_or(0);
            row.serial_updates = match kernel {
                moreau::contact::Kernel::Pgs => longest * nc as u64,
                moreau::contact::Kernel::Admm => longest,
            };
            row.device_ns_per_serial_update = row
                .device_solve_ms
                .filter(|_| row.serial_updates > 0)
                .map(|ms| ms * 1e6 / row.serial_updates as f64);
            each(&row);
            rows.push(row);
        }
    }
    Ok(rows)
}

/// Throughput versus batch size, log-log, one GPU line and one CPU line per
/// problem size, as SVG.
pub fn plot(rows: &[BenchRow], path: &std::path::Path) -> Result<(), String> {
    use plotters::prelude::*;
    let done: Vec<&BenchRow> = rows.iter().filter(|r| r.skipped.is_none()).collect();
    if done.is_empty() {
        return Err("no measured point to plot".into());
    }
    let xmax = done.iter().map(|r| r.batch).max().unwrap_or(1) as f64 * 1.5;
    let ys = done.iter().flat_map(|r| {
        [
            r.gpu_problems_per_s,
            r.cpu_problems_per_s,
            r.cpu_f32_problems_per_s.unwrap_or(r.cpu_problems_per_s),
        ]
    });
    let (ylo, yhi) = ys.fold((f64::INFINITY, 0.0f64), |(a, b), y| (a.min(y), b.max(y)));
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    let e = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let title = format!(
        "{} on {} (f32) vs one CPU core",
        done[0].solver, done[0].device
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((0.7..xmax).log_scale(), (ylo / 2.0..yhi * 2.0).log_scale())
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc("problems per batch")
        .y_desc("problems per second")
        .draw()
        .map_err(|x| e(&x))?;
    let mut contacts: Vec<usize> = done.iter().map(|r| r.contacts).collect();
    contacts.sort_unstable();
    contacts.dedup();
    let mut series = 0;
    for nc in &contacts {
        for d in Decomposition::ALL {
            let pts: Vec<(f64, f64)> = done
                .iter()
                .filter(|r| r.contacts == *nc && r.decomposition == d)
                .map(|r| (r.batch as f64, r.gpu_problems_per_s))
                .collect();
            if pts.is_empty() {
                continue;
            }
            let color = Palette99::pick(series).to_rgba();
            series += 1;
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(|x| e(&x))?
                .label(format!("GPU, {nc} contacts, {}", d.name()))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(|x| e(&x))?;
        }
        let color = Palette99::pick(series).to_rgba();
        series += 1;
        // One CPU rate per problem size, drawn across the batch sizes.
        let first = done.iter().find(|r| r.contacts == *nc);
        let batches: Vec<f64> = done
            .iter()
            .filter(|r| r.contacts == *nc)
            .map(|r| r.batch as f64)
            .collect();
        let (lo, hi) = batches
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
        if let Some(r) = first {
            chart
                .draw_series(DashedLineSeries::new(
                    [(lo, r.cpu_problems_per_s), (hi, r.cpu_problems_per_s)],
                    6,
                    4,
                    color.stroke_width(1),
                ))
                .map_err(|x| e(&x))?
                .label(format!("CPU core f64, {nc} contacts (dashed)"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            if let Some(f) = r.cpu_f32_problems_per_s {
                chart
                    .draw_series(DashedLineSeries::new(
                        [(lo, f), (hi, f)],
                        2,
                        3,
                        color.stroke_width(1),
                    ))
                    .map_err(|x| e(&x))?
                    .label(format!("CPU core f32, {nc} contacts (dotted)"))
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            }
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
