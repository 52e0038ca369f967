//! The report's plots (SVG, plotters).

use moreau::contact::SolverKind;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::*;

/// One colour per solver of [`SolverKind::ALL`] (and black for references);
/// the event comparison's plot cycles through them too.
pub(crate) const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

fn color_of(solver: &str) -> RGBColor {
    let i = SolverKind::ALL
        .iter()
        .position(|k| k.name() == solver)
        .unwrap_or(0);
    COLORS[i % COLORS.len()]
}

/// A log range covering the positive `values` (at least `floor`), padded.
fn log_range(values: impl Iterator<Item = f64>, floor: f64) -> Range<f64> {
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for v in values.filter(|v| v.is_finite()) {
        let v = v.max(floor);
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !(lo.is_finite() && hi > 0.0) {
        return floor..1.0;
    }
    if hi <= lo * 10.0 {
        hi = lo * 10.0;
    }
    (lo / 2.0).max(floor * 0.99)..hi * 2.0
}

fn exp_label(v: &f64) -> String {
    format!("{v:.0e}")
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn legend_line(color: RGBColor) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
}

fn legend_dashed(
    color: RGBColor,
    width: u32,
) -> impl Fn((i32, i32)) -> DashedPathElement<std::vec::IntoIter<(i32, i32)>, i32> {
    move |(x, y)| DashedPathElement::new(vec![(x, y), (x + 20, y)], 5, 3, color.stroke_width(width))
}

fn energy_plot(r: &CompareReport, root: &Area) -> Result<(), ReportError> {
    let t_end = r.energy_analytic.x.last().copied().unwrap_or(0.4);
    let e_max = r
        .energy
        .iter()
        .flat_map(|s| s.y.iter())
        .chain(&r.energy_analytic.y)
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let mut chart = ChartBuilder::on(root)
        .caption(
            "Sliding cube: kinetic energy (1 kg, μ = 0.4, 1 m/s at 30° from t1, dt 1 ms)",
            ("sans-serif", 22),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(0.0..t_end, 0.0..(1.1 * e_max).max(1e-3))?;
    chart
        .configure_mesh()
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .x_desc("time (s)")
        .y_desc("kinetic energy (J)")
        .draw()?;
    for s in &r.energy {
        let c = color_of(&s.solver);
        chart
            .draw_series(LineSeries::new(
                s.x.iter().copied().zip(s.y.iter().copied()),
                c.stroke_width(2),
            ))?
            .label(s.solver.clone())
            .legend(legend_line(c));
    }
    let a = &r.energy_analytic;
    chart
        .draw_series(DashedLineSeries::new(
            a.x.iter().copied().zip(a.y.iter().copied()),
            8,
            5,
            BLACK.stroke_width(2),
        ))?
        .label("analytic ½ m (v₀ − μ g t)²")
        .legend(legend_dashed(BLACK, 2));
    chart
        .configure_series_labels()
        .label_font(("sans-serif", 14))
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

fn internal_plot(r: &CompareReport, root: &Area) -> Result<(), ReportError> {
    let t_end = r
        .internal_forces
        .iter()
        .filter_map(|s| s.x.last().copied())
        .fold(0.0, f64::max)
        .max(1e-3);
    let hi = r
        .internal_forces
        .iter()
        .flat_map(|s| s.y.iter())
        .copied()
        .filter(|v| v.is_finite())
        .fold(1.0, f64::max)
        * 2.0;
    let mut chart = ChartBuilder::on(root)
        .caption(
            "Dragged cube: lateral squeeze (largest world-y impulse of one contact / ‖λ‖), warm-started",
            ("sans-serif", 22),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(0.0..t_end, (LOG_FLOOR * 0.5..hi).log_scale())?;
    chart
        .configure_mesh()
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .x_desc("time (s)")
        .y_desc(format!("lateral squeeze (floor {LOG_FLOOR:.0e})"))
        .y_label_formatter(&exp_label)
        .draw()?;
    for s in &r.internal_forces {
        let c = color_of(&s.solver);
        chart
            .draw_series(LineSeries::new(
                s.x.iter().copied().zip(
                    s.y.iter()
                        .map(|&v| if v.is_nan() { v } else { v.max(LOG_FLOOR) }),
                ),
                c.stroke_width(2),
            ))?
            .label(s.solver.clone())
            .legend(legend_line(c));
    }
    let grey = RGBColor(90, 90, 90);
    chart
        .draw_series(DashedLineSeries::new(
            [(r.slip_time, LOG_FLOOR * 0.5), (r.slip_time, hi)],
            6,
            4,
            grey.stroke_width(1),
        ))?
        .label(format!("Coulomb slip at {:.3} s", r.slip_time))
        .legend(legend_dashed(grey, 1));
    // The legend where the curves are not: early, between 1e-10 and 1e-3.
    let (x0, y0) = chart.plotting_area().get_base_pixel();
    let (x1, y1) = chart.backend_coord(&(0.02 * t_end, 1e-3));
    chart
        .configure_series_labels()
        .label_font(("sans-serif", 14))
        .position(SeriesLabelPosition::Coordinate(x1 - x0, y1 - y0))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

fn mass_ratio_plot(r: &CompareReport, root: &Area) -> Result<(), ReportError> {
    let y = log_range(
        r.mass_ratio
            .iter()
            .map(|r| r.eps_abs)
            .chain([ROBUST_TOLERANCE]),
        LOG_FLOOR,
    );
    let x = MASS_RATIOS[0] / 3.0..MASS_RATIOS[MASS_RATIOS.len() - 1] * 3.0;
    let mut chart = ChartBuilder::on(root)
        .caption(
            format!(
                "Stacked cubes: own-model eps_abs after ≤ {ROBUST_MAX_ITERATIONS} iterations (cold, tol {ROBUST_TOLERANCE:.0e}); ● converged, ○ not"
            ),
            ("sans-serif", 22),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(x.clone().log_scale(), y.log_scale())?;
    chart
        .configure_mesh()
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .x_desc("mass ratio (top / bottom)")
        .y_desc("eps_abs")
        .x_label_formatter(&exp_label)
        .y_label_formatter(&exp_label)
        .draw()?;
    for name in &r.solvers {
        let c = color_of(name);
        let pts: Vec<(f64, f64, bool)> = r
            .mass_ratio
            .iter()
            .filter(|r| &r.solver == name)
            .map(|r| (r.ratio, r.eps_abs.max(LOG_FLOOR), r.converged))
            .collect();
        chart
            .draw_series(LineSeries::new(
                pts.iter().map(|p| (p.0, p.1)),
                c.stroke_width(2),
            ))?
            .label(name.clone())
            .legend(legend_line(c));
        chart.draw_series(pts.iter().map(|&(x, y, ok)| {
            Circle::new((x, y), 4, if ok { c.filled() } else { c.stroke_width(2) })
        }))?;
    }
    chart
        .draw_series(DashedLineSeries::new(
            [(x.start, ROBUST_TOLERANCE), (x.end, ROBUST_TOLERANCE)],
            8,
            5,
            BLACK.stroke_width(1),
        ))?
        .label(format!("tolerance {ROBUST_TOLERANCE:.0e}"))
        .legend(legend_dashed(BLACK, 1));
    chart
        .configure_series_labels()
        .label_font(("sans-serif", 14))
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

fn tta_panel(r: &CompareReport, root: &Area, scene: &str, legend: bool) -> Result<(), ReportError> {
    let rows: Vec<&TtaRow> = r
        .time_to_accuracy
        .iter()
        .filter(|t| t.scene == scene)
        .collect();
    let x = log_range(
        rows.iter().flat_map(|t| t.points.iter().map(|p| p.mean_us)),
        1e-3,
    );
    let y = TTA_TOLERANCES[TTA_TOLERANCES.len() - 1] / 5.0..TTA_TOLERANCES[0] * 5.0;
    let problems = r
        .harvests
        .iter()
        .find(|h| h.plan.scene == scene)
        .map_or(0, |h| h.problems);
    let mut chart = ChartBuilder::on(root)
        .caption(
            format!(
                "{scene} ({problems} problems): solid cold, dashed warm; ● all converged, ✕ not"
            ),
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(65)
        .build_cartesian_2d(x.log_scale(), y.log_scale())?;
    chart
        .configure_mesh()
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .x_desc("mean time per solve (µs)")
        .y_desc("tolerance reached (eps_abs, own model)")
        .x_label_formatter(&|v: &f64| {
            if *v >= 1.0 {
                format!("{v:.0}")
            } else {
                format!("{v}")
            }
        })
        .y_label_formatter(&exp_label)
        .draw()?;
    for t in rows {
        let c = color_of(&t.solver);
        let pts: Vec<(f64, f64)> = t.points.iter().map(|p| (p.mean_us, p.tolerance)).collect();
        let style = c.stroke_width(2);
        if t.warm {
            chart.draw_series(DashedLineSeries::new(pts.iter().copied(), 7, 4, style))?;
        } else {
            let series = chart.draw_series(LineSeries::new(pts.iter().copied(), style))?;
            if legend {
                series.label(t.solver.clone()).legend(legend_line(c));
            }
        }
        let ok = |p: &&TtaPoint| p.converged >= 1.0;
        chart.draw_series(
            t.points
                .iter()
                .filter(ok)
                .map(|p| Circle::new((p.mean_us, p.tolerance), 3, c.filled())),
        )?;
        chart.draw_series(
            t.points
                .iter()
                .filter(|p| !ok(p))
                .map(|p| Cross::new((p.mean_us, p.tolerance), 4, c.stroke_width(2))),
        )?;
    }
    if legend {
        for (name, warm) in [("cold", false), ("warm", true)] {
            let series = chart.draw_series(std::iter::empty::<PathElement<(f64, f64)>>())?;
            if warm {
                series.label(name).legend(legend_dashed(BLACK, 2));
            } else {
                series.label(name).legend(legend_line(BLACK));
            }
        }
        chart
            .configure_series_labels()
            .label_font(("sans-serif", 14))
            .label_font(("sans-serif", 14))
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
    }
    Ok(())
}

fn tta_plot(r: &CompareReport, root: &Area) -> Result<(), ReportError> {
    let panels = root.split_evenly((1, 2));
    let scenes: Vec<&str> = r.harvests.iter().map(|h| h.plan.scene).collect();
    for (i, (panel, scene)) in panels.iter().zip(&scenes).enumerate() {
        tta_panel(r, panel, scene, i + 1 == scenes.len())?;
    }
    Ok(())
}

fn svg(
    dir: &Path,
    name: &str,
    size: (u32, u32),
    draw: impl Fn(&Area) -> Result<(), ReportError>,
) -> Result<PathBuf, ReportError> {
    let path = dir.join(name);
    {
        let root = SVGBackend::new(&path, size).into_drawing_area();
        root.fill(&WHITE)?;
        draw(&root).map_err(|e| format!("{}: {e}", path.display()))?;
        root.present()
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(path)
}

/// Writes `energy.svg`, `internal_forces.svg`, `time_to_accuracy.svg` and
/// `mass_ratio.svg` into `dir` (created if missing); returns their paths.
pub fn write_plots(report: &CompareReport, dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(vec![
        svg(dir, "energy.svg", (1000, 650), |a| energy_plot(report, a))?,
        svg(dir, "internal_forces.svg", (1000, 650), |a| {
            internal_plot(report, a)
        })?,
        svg(dir, "time_to_accuracy.svg", (1600, 650), |a| {
            tta_plot(report, a)
        })?,
        svg(dir, "mass_ratio.svg", (1000, 650), |a| {
            mass_ratio_plot(report, a)
        })?,
    ])
}
