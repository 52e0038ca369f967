//! `moreau compare events`: time-stepping against event-based simulation
//! on the event-based seed's falling cube, and on the bouncing ball and the
//! sliding block, whose answers are analytic. Writes `events.json` and
//! `events.svg`.

use crate::events::{EventKind, EventParams, EventSim, SmoothIntegrator};
use crate::study::report::ReportError;
use moreau::math::{Vec3, quat_from_slice};
use moreau::scenes;
use moreau::sim::{SimParams, Simulator, State};
use plotters::prelude::*;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Simulated time of the falling cube (s).
pub const DURATION: f64 = 3.0;
const G: f64 = 9.81;

/// One method at one step on the falling cube.
#[derive(Clone, Debug, Serialize)]
pub struct CubeRun {
    /// `time-stepping`, `event-rk4` or `event-midpoint`.
    pub method: String,
    pub h: f64,
    /// Whether this run is its method's reference (smallest step).
    pub reference: bool,
    pub wall_s: f64,
    pub final_position: [f64; 3],
    /// `(x, y, z, w)`.
    pub final_quaternion: [f64; 4],
    /// Against the method's own reference run (m, rad).
    pub position_error: f64,
    pub angle_error: f64,
    /// Against the other method's reference (m, rad).
    pub position_error_cross: f64,
    pub angle_error_cross: f64,
    /// Events (event-based; 0 for time-stepping) and impacts among them.
    pub events: usize,
    pub impacts: usize,
    /// Steps taken (time-stepping) or acceleration evaluations (event-based).
    pub work: usize,
    /// Samples every 5 ms: time, centre height, total energy, cumulated
    /// normal impulse.
    pub t: Vec<f64>,
    pub z: Vec<f64>,
    pub energy: Vec<f64>,
    pub normal_impulse: Vec<f64>,
}

/// The analytic checks.
#[derive(Clone, Debug, Serialize)]
pub struct AnalyticRow {
    pub scene: String,
    pub method: String,
    pub h: f64,
    /// What is compared, and the largest error.
    pub quantity: String,
    pub error: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct EventsReport {
    pub duration: f64,
    pub cube: Vec<CubeRun>,
    pub analytic: Vec<AnalyticRow>,
    /// Lines of code (not blank, not comments) of each path's own module:
    /// `src/sim/mod.rs` (the time-stepping loop) and `src/events/`.
    pub code_lines_time_stepping: usize,
    pub code_lines_event_based: usize,
}

fn code_lines(text: &str) -> usize {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .count()
}

fn ts_params(dt: f64) -> SimParams {
    SimParams {
        dt,
        // The event-based Zeno rule's speed: slower impacts are plastic.
        bounce_velocity: EventParams::default().zeno_velocity,
        ..SimParams::default()
    }
}

struct Recorder {
    next: f64,
    run: CubeRun,
}

impl Recorder {
    fn new(method: &str, h: f64) -> Self {
        Recorder {
            next: 0.0,
            run: CubeRun {
                method: method.into(),
                h,
                reference: false,
                wall_s: 0.0,
                final_position: [0.0; 3],
                final_quaternion: [0.0; 4],
                position_error: 0.0,
                angle_error: 0.0,
                position_error_cross: 0.0,
                angle_error_cross: 0.0,
                events: 0,
                impacts: 0,
                work: 0,
                t: Vec::new(),
                z: Vec::new(),
                energy: Vec::new(),
                normal_impulse: Vec::new(),
            },
        }
    }
    fn sample(&mut self, s: &State, energy: f64, impulse: f64) {
        if s.t + 1e-12 >= self.next {
            self.run.t.push(s.t);
            self.run.z.push(s.q[2]);
            self.run.energy.push(energy);
            self.run.normal_impulse.push(impulse);
            self.next += 5e-3;
        }
    }
    fn finish(mut self, s: &State, wall: f64) -> CubeRun {
        self.run.wall_s = wall;
        self.run.final_position = [s.q[0], s.q[1], s.q[2]];
        self.run.final_quaternion = [s.q[3], s.q[4], s.q[5], s.q[6]];
        self.run
    }
}

fn cube_time_stepping(dt: f64) -> Result<CubeRun, ReportError> {
    let scene = scenes::falling_cube()?;
    let mut sim = Simulator::new(scene.model.clone(), ts_params(dt))?;
    let mut s = scene.state.clone();
    let mut rec = Recorder::new("time-stepping", dt);
    let mut impulse = 0.0;
    let clock = Instant::now();
    let mut steps = 0;
    while s.t < DURATION - 1e-9 {
        let (k, p) = sim.energy(&s)?;
        rec.sample(&s, k + p, impulse);
        let report = sim.step(&mut s, &[0.0; 6])?;
        let l = &sim.solution().lambda;
        impulse += (0..report.nc).map(|i| l[3 * i + 2]).sum::<f64>();
        steps += 1;
    }
    let mut run = rec.finish(&s, clock.elapsed().as_secs_f64());
    run.work = steps;
    Ok(run)
}

fn cube_event_based(integrator: SmoothIntegrator, h: f64) -> Result<CubeRun, ReportError> {
    let scene = scenes::falling_cube()?;
    let params = EventParams {
        h,
        integrator,
        ..EventParams::default()
    };
    let mut sim = EventSim::new(scene.model.clone(), params)?;
    let mut s = scene.state.clone();
    let method = format!("event-{}", integrator.name());
    let mut rec = Recorder::new(&method, h);
    let (mut impulse, mut seen) = (0.0, 0);
    let clock = Instant::now();
    while s.t < DURATION - 1e-9 {
        let (k, p) = sim.energy(&s)?;
        rec.sample(&s, k + p, impulse);
        // The held contacts' forces over the step (at its start), then the
        // impacts' impulses.
        let held: f64 = sim
            .held_contacts(&s, &[0.0; 6])?
            .iter()
            .map(|c| c.force.z)
            .sum();
        let dt = h.min(DURATION - s.t);
        let out = sim.step(&mut s, dt, &[0.0; 6])?;
        impulse += held * out.dt;
        for e in &sim.events()[seen..] {
            if let EventKind::Impact { normal_impulse, .. } = e.kind {
                impulse += normal_impulse;
            }
        }
        seen = sim.events().len();
    }
    let mut run = rec.finish(&s, clock.elapsed().as_secs_f64());
    run.events = sim.events().len();
    run.impacts = sim
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Impact { .. }))
        .count();
    run.work = sim.evaluations;
    Ok(run)
}

fn pose_error(a: &CubeRun, b: &CubeRun) -> (f64, f64) {
    let p = |r: &CubeRun| Vec3::from_column_slice(&r.final_position);
    let q = |r: &CubeRun| quat_from_slice(&r.final_quaternion);
    ((p(a) - p(b)).norm(), q(a).angle_to(&q(b)))
}

/// The bouncing ball's apex heights (`e^{2k} h₀`) and the sliding block's
/// stopping distance (`v²/(2μg)`), each method at `h`.
fn analytic(rows: &mut Vec<AnalyticRow>) -> Result<(), ReportError> {
    let ball = scenes::ball_drop()?;
    let (r, e, h0): (f64, f64, f64) = (0.1, 0.5, 0.9);
    let zero = [0.0; 6];
    // Event-based: fly to each analytic apex time after a bounce.
    for integrator in [SmoothIntegrator::Rk4, SmoothIntegrator::ImplicitMidpoint] {
        let h = 0.01;
        let params = EventParams {
            h,
            integrator,
            ..EventParams::default()
        };
        let mut sim = EventSim::new(ball.model.clone(), params)?;
        let mut s = ball.state.clone();
        let (mut k, mut worst, mut seen) = (0, 0.0f64, 0);
        while s.t < 1.3 && k < 8 {
            sim.step(&mut s, h, &zero)?;
            let bounced = sim.events()[seen..].iter().any(
                |ev| matches!(ev.kind, EventKind::Impact { restitution, .. } if restitution > 0.0),
            );
            seen = sim.events().len();
            if bounced {
                k += 1;
                let mut apex = s.clone();
                let mut side = EventSim::new(ball.model.clone(), params)?;
                side.advance_to(&mut apex, s.t + s.v[2] / G, &zero)?;
                worst = worst.max((apex.q[2] - r - e.powi(2 * k) * h0).abs());
            }
        }
        rows.push(AnalyticRow {
            scene: "ball-drop".into(),
            method: format!("event-{}", integrator.name()),
            h,
            quantity: format!("apex height, first {k} bounces (m)"),
            error: worst,
        });
    }
    // Time-stepping: the highest sample between bounces.
    for dt in [1e-3, 1e-4] {
        let mut sim = Simulator::new(ball.model.clone(), ts_params(dt))?;
        let mut s = ball.state.clone();
        let (mut rising, mut top, mut k, mut worst) = (false, 0.0f64, 0, 0.0f64);
        while s.t < 1.3 && k < 8 {
            sim.step(&mut s, &zero)?;
            if s.v[2] > 0.0 {
                if !rising {
                    top = 0.0;
                }
                rising = true;
            }
            if rising {
                top = top.max(s.q[2] - r);
                if s.v[2] < 0.0 {
                    rising = false;
                    k += 1;
                    worst = worst.max((top - e.powi(2 * k) * h0).abs());
                }
            }
        }
        rows.push(AnalyticRow {
            scene: "ball-drop".into(),
            method: "time-stepping".into(),
            h: dt,
            quantity: format!("apex height, first {k} bounces (m)"),
            error: worst,
        });
    }
    // The sliding block: 1 m/s, μ = 0.3.
    let block = scenes::scene("cube-sliding")?;
    let distance = 1.0 / (2.0 * 0.3 * G);
    for integrator in [SmoothIntegrator::Rk4, SmoothIntegrator::ImplicitMidpoint] {
        let params = EventParams {
            h: 0.01,
            integrator,
            ..EventParams::default()
        };
        let mut sim = EventSim::new(block.model.clone(), params)?;
        let mut s = block.state.clone();
        sim.advance_to(&mut s, 1.0, &zero)?;
        rows.push(AnalyticRow {
            scene: "cube-sliding".into(),
            method: format!("event-{}", integrator.name()),
            h: 0.01,
            quantity: "stopping distance (m)".into(),
            error: (s.q[1] - block.state.q[1] - distance).abs(),
        });
    }
    for dt in [1e-2, 1e-3] {
        let mut sim = Simulator::new(block.model.clone(), ts_params(dt))?;
        let mut s = block.state.clone();
        while s.t < 1.0 - 1e-9 {
            sim.step(&mut s, &zero)?;
        }
        rows.push(AnalyticRow {
            scene: "cube-sliding".into(),
            method: "time-stepping".into(),
            h: dt,
            quantity: "stopping distance (m)".into(),
            error: (s.q[1] - block.state.q[1] - distance).abs(),
        });
    }
    Ok(())
}

/// Runs the comparison (a few seconds on one core).
pub fn compare_events() -> Result<EventsReport, ReportError> {
    let mut cube = Vec::new();
    let ts_ref = cube_time_stepping(1e-4)?;
    let ev_ref = cube_event_based(SmoothIntegrator::Rk4, 1e-3)?;
    for h in [0.05, 0.01] {
        cube.push(cube_time_stepping(h)?);
        cube.push(cube_event_based(SmoothIntegrator::Rk4, h)?);
        cube.push(cube_event_based(SmoothIntegrator::ImplicitMidpoint, h)?);
    }
    for run in &mut cube {
        // The implicit midpoint is measured against the RK4 reference: at
        // 1 ms its fixed points on resting contacts cost minutes.
        let (own, other) = if run.method == "time-stepping" {
            (&ts_ref, &ev_ref)
        } else {
            (&ev_ref, &ts_ref)
        };
        (run.position_error, run.angle_error) = pose_error(run, own);
        (run.position_error_cross, run.angle_error_cross) = pose_error(run, other);
    }
    for mut r in [ts_ref.clone(), ev_ref.clone()] {
        r.reference = true;
        let other = if r.method == "time-stepping" {
            &ev_ref
        } else {
            &ts_ref
        };
        (r.position_error_cross, r.angle_error_cross) = pose_error(&r, other);
        cube.push(r);
    }
    let mut analytic_rows = Vec::new();
    analytic(&mut analytic_rows)?;
    Ok(EventsReport {
        duration: DURATION,
        cube,
        analytic: analytic_rows,
        code_lines_time_stepping: code_lines(include_str!("../../../src/sim/mod.rs")),
        code_lines_event_based: code_lines(include_str!("mod.rs"))
            + code_lines(include_str!("accel.rs")),
    })
}

/// The report as text: the cube's table, the analytic errors, code sizes.
pub fn render(r: &EventsReport) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "Falling cube ({} s): resting pose against each method's reference (time-stepping 0.1 ms, event RK4 1 ms) and the other's\n",
        r.duration
    ));
    s.push_str(&format!(
        "{:16} {:>7} {:>9} {:>8} {:>8} {:>9} {:>9} {:>9} {:>8} {:>8}\n",
        "method",
        "h (s)",
        "wall (s)",
        "events",
        "impacts",
        "Δp own",
        "Δθ own",
        "Δp other",
        "Δθ other",
        "work"
    ));
    for c in &r.cube {
        s.push_str(&format!(
            "{:16} {:>7} {:>9.3} {:>8} {:>8} {:>9.2e} {:>9.2e} {:>9.2e} {:>8.2e} {:>8}{}\n",
            c.method,
            c.h,
            c.wall_s,
            c.events,
            c.impacts,
            c.position_error,
            c.angle_error,
            c.position_error_cross,
            c.angle_error_cross,
            c.work,
            if c.reference { "  (reference)" } else { "" }
        ));
    }
    s.push_str("Analytic answers\n");
    for a in &r.analytic {
        s.push_str(&format!(
            "{:14} {:16} h = {:<7} {:40} error {:.2e}\n",
            a.scene, a.method, a.h, a.quantity, a.error
        ));
    }
    s.push_str(&format!(
        "Code: time-stepping loop {} lines (src/sim/mod.rs), event-based {} lines (src/events/); both share the dynamics, collision and contact solvers\n",
        r.code_lines_time_stepping, r.code_lines_event_based
    ));
    s
}

/// Writes `events.json` and `events.svg` (the cube's height, energy and
/// cumulated normal impulse against time) into `dir`.
pub fn write_events(r: &EventsReport, dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let json = dir.join("events.json");
    std::fs::write(&json, serde_json::to_string_pretty(r)?)
        .map_err(|e| format!("cannot write {}: {e}", json.display()))?;
    let svg = dir.join("events.svg");
    {
        let root = SVGBackend::new(&svg, (1200, 1200)).into_drawing_area();
        root.fill(&WHITE)?;
        let panels = root.split_evenly((3, 1));
        type Pick = fn(&CubeRun) -> &Vec<f64>;
        let series: [(&str, Pick); 3] = [
            ("centre height (m)", |c| &c.z),
            ("total energy (J)", |c| &c.energy),
            ("cumulated normal impulse (N·s)", |c| &c.normal_impulse),
        ];
        let colors = crate::study::report::plots::COLORS;
        for (panel, (label, pick)) in panels.iter().zip(series) {
            let (lo, hi) = r
                .cube
                .iter()
                .flat_map(|c| pick(c).iter())
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                    (a.min(v), b.max(v))
                });
            let pad = 0.05 * (hi - lo).max(1e-9);
            let mut chart = ChartBuilder::on(panel)
                .caption(
                    format!("Falling cube: {label}, time-stepping against event-based"),
                    ("sans-serif", 20),
                )
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(60)
                .build_cartesian_2d(0.0..r.duration, (lo - pad)..(hi + pad))?;
            chart
                .configure_mesh()
                .x_desc("time (s)")
                .y_desc(label)
                .draw()?;
            for (k, c) in r.cube.iter().enumerate() {
                let color = colors[k % colors.len()];
                chart
                    .draw_series(LineSeries::new(
                        c.t.iter().copied().zip(pick(c).iter().copied()),
                        color.stroke_width(if c.reference { 3 } else { 1 }),
                    ))?
                    .label(format!("{} h = {}", c.method, c.h))
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()?;
        }
        root.present()
            .map_err(|e| format!("cannot write {}: {e}", svg.display()))?;
    }
    Ok(vec![json, svg])
}
