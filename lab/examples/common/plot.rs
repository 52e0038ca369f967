//! The examples' one plot: series of (x, y) points on a log y axis, with
//! markers and a legend, written as SVG.

use plotters::prelude::*;

/// Plots `series` (name, points) into `out`.
pub fn log_series(
    out: &str,
    caption: &str,
    (x_desc, y_desc): (&str, &str),
    series: &[(&str, Vec<(f64, f64)>)],
) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(out, (640, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let points = series.iter().flat_map(|s| s.1.iter());
    let lo = points.clone().map(|p| p.1).fold(1.0, f64::min).max(1e-16) * 0.5;
    let hi = points.clone().map(|p| p.1).fold(0.0, f64::max) * 2.0;
    let most = points.map(|p| p.0).fold(1.0, f64::max);
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..most, (lo..hi).log_scale())?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .draw()?;
    for ((name, points), color) in series.iter().zip([BLUE, RED, GREEN]) {
        chart
            .draw_series(LineSeries::new(points.iter().copied(), color))?
            .label(*name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE)
        .draw()?;
    root.present()?;
    println!("plot written to {out}");
    Ok(())
}
