//! The locomotion experiments (`moreau compare locomotion`): the trot
//! controller ([`crate::control`]) walking the quadruped, after Zapolsky
//! and Drumwright's controller comparison and the contact-model study's
//! §IV-D.
//!
//! - [`walk`] runs one controller on one terrain under one contact model
//!   and measures it ([`WalkResult`]): base velocity and height tracking,
//!   feet tracking (the foot centres against the planner's targets, in the
//!   base frame), torque smoothness (RMS of `Δτ/dt`), falls, time per
//!   controller call against the number of contacts its inverse dynamics
//!   saw, and, over time, the base velocity and the NCP criterion of the
//!   simulator's contact impulses.
//! - [`controllers`]: every feedforward on flat ground with μ = 0.1, with
//!   μ = ∞ (no-slip: the terrain's friction set to 1e6), and on rough
//!   terrain (3 cm bumps, μ ~ U(0.1, 1.5) per 0.5 m region).
//! - [`contact_models`]: one controller (no-slip feedforward) on each
//!   simulator contact model (`lcp-pgs`, `ccp-admm`, `raisim`,
//!   `ncp-admm`), flat with μ = 0.9 and bumpy (bumps of 0.1 leg length)
//!   with μ = 0.3.

use crate::control::{
    ControlError, Feedforward, Quadruped, TrotController, TrotSettings, base_posture,
};
use moreau::contact::SolverKind;
use moreau::contact::criteria::ncp_residuals;
use moreau::model::Terrain;
use moreau::model::terrain::RoughTerrain;
use moreau::sim::{SimParams, Simulator, State};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One walk's set-up.
#[derive(Clone, Debug)]
pub struct WalkConfig {
    pub duration: f64,
    pub dt: f64,
    pub solver: SolverKind,
    pub settings: TrotSettings,
    pub terrain: Terrain,
    /// Keep a time-series point every this many steps.
    pub record_every: usize,
}

/// One time-series point.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct WalkSample {
    pub t: f64,
    /// Base velocity along its heading (m/s).
    pub velocity: f64,
    pub height: f64,
    /// The NCP criterion `ε_abs` of the step's impulses (whatever model
    /// the simulator solved).
    pub ncp_criterion: f64,
    pub contacts: usize,
}

/// What one walk measured.
#[derive(Clone, Debug, Serialize)]
pub struct WalkResult {
    pub controller: String,
    pub terrain: String,
    pub solver: String,
    pub duration: f64,
    /// When the base fell (height below half the standing height or its
    /// up axis more than 60° from vertical), if it did.
    pub fell_at: Option<f64>,
    /// Mean base velocity along the heading after the first gait period,
    /// and the RMS difference of the per-period mean from the desired one.
    pub mean_velocity: f64,
    pub velocity_error: f64,
    /// RMS of the base height from the standing height above the terrain
    /// under it (m).
    pub height_error: f64,
    /// RMS distance of the feet from their targets (m, base frame).
    pub feet_error: f64,
    /// RMS of the torques' rate of change (N·m/s) and of the torques (N·m).
    pub torque_rate: f64,
    pub torque_rms: f64,
    /// Mean controller time (s) per number of contacts the feedforward
    /// saw: `(contacts, calls, mean seconds, mean feedforward seconds)`.
    pub time_by_contacts: Vec<(usize, usize, f64, f64)>,
    pub mean_controller_seconds: f64,
    pub feedforward_failures: usize,
    pub last_feedforward_failure: Option<String>,
    /// Median of the NCP criterion over the steps with contacts.
    pub median_ncp_criterion: f64,
    pub samples: Vec<WalkSample>,
}

/// Runs the trot controller on the quadruped from standing.
pub fn walk(robot: &Quadruped, cfg: &WalkConfig) -> Result<WalkResult, ControlError> {
    let model = Arc::new(
        robot
            .model
            .with_terrain(&cfg.terrain)
            .map_err(|e| ControlError::Model(e.to_string()))?,
    );
    let robot = robot.on(model.clone())?;
    let params = SimParams {
        dt: cfg.dt,
        solver: cfg.solver,
        ..SimParams::default()
    };
    let mut sim = Simulator::new(model.clone(), params)?;
    let mut ctrl = TrotController::new(robot.clone(), params, cfg.settings.clone())?;
    let nv = model.nv;
    // Standing, feet on the terrain under the hips' nominal footholds.
    let mut q = robot.q_stand.clone();
    let ground = robot
        .legs
        .iter()
        .map(|l| cfg.terrain.height_at(l.nominal.x, l.nominal.y))
        .fold(f64::NEG_INFINITY, f64::max);
    q[2] = robot.standing_height + ground + 1e-3;
    let mut state = State::new(q, nalgebra::DVector::zeros(nv));
    let mut tau = vec![0.0; nv];
    let mut prev_tau: Option<Vec<f64>> = None;
    let steps = (cfg.duration / cfg.dt).round() as usize;
    let period = cfg.settings.gait.period;
    let desired = cfg.settings.velocity[0];
    let (mut feet_sq, mut feet_n) = (0.0, 0usize);
    let (mut rate_sq, mut tau_sq, mut tau_n) = (0.0, 0.0, 0usize);
    let (mut height_sq, mut height_n) = (0.0, 0usize);
    let mut by_contacts: BTreeMap<usize, (usize, f64, f64)> = BTreeMap::new();
    let mut seconds = 0.0;
    let mut criteria = Vec::new();
    let mut samples = Vec::new();
    let mut fell_at = None;
    let x0 = state.q[0];
    // Per-period mean velocities: base x at each period boundary.
    let mut period_starts = vec![(0.0, state.q[0])];
    for k in 0..steps {
        let report = ctrl.control(&state, &mut tau)?;
        seconds += report.seconds;
        let e = by_contacts.entry(report.contacts).or_insert((0, 0.0, 0.0));
        e.0 += 1;
        e.1 += report.seconds;
        e.2 += report.feedforward_seconds;
        if let Some(p) = &prev_tau {
            for i in 6..nv {
                rate_sq += ((tau[i] - p[i]) / cfg.dt).powi(2);
                tau_sq += tau[i] * tau[i];
                tau_n += 1;
            }
        }
        prev_tau = Some(tau.clone());
        // Feet against their targets (the reference of this instant).
        let targets = ctrl.last_reference().feet;
        let feet = ctrl.feet_in_base(&state);
        for (f, t) in feet.iter().zip(targets.iter()) {
            feet_sq += (f - t).norm_squared();
            feet_n += 1;
        }
        let step = sim.step(&mut state, &tau)?;
        ctrl.observe(&sim);
        let eps = if step.nc > 0 {
            let p = sim.problem();
            let s = sim.solution();
            ncp_residuals(&p.mu, s.lambda.as_slice(), s.c.as_slice()).eps_abs
        } else {
            0.0
        };
        if step.nc > 0 {
            criteria.push(eps);
        }
        let (up, z) = base_posture(&state);
        let ground = cfg.terrain.height_at(state.q[0], state.q[1]);
        let height = z - ground;
        height_sq += (height - robot.standing_height).powi(2);
        height_n += 1;
        let velocity = TrotController::heading(&state).1.x;
        if k % cfg.record_every == 0 {
            samples.push(WalkSample {
                t: state.t,
                velocity,
                height,
                ncp_criterion: eps,
                contacts: step.nc,
            });
        }
        let last = period_starts.last().expect("starts with one").0;
        if state.t >= last + period - 1e-9 {
            period_starts.push((state.t, state.q[0]));
        }
        if height < 0.5 * robot.standing_height || up < 0.5 {
            fell_at = Some(state.t);
            break;
        }
    }
    let walked = state.t;
    let means: Vec<f64> = period_starts
        .windows(2)
        .skip(1)
        .map(|w| (w[1].1 - w[0].1) / (w[1].0 - w[0].0))
        .collect();
    let velocity_error = if means.is_empty() {
        f64::NAN
    } else {
        (means.iter().map(|m| (m - desired).powi(2)).sum::<f64>() / means.len() as f64).sqrt()
    };
    let mean_velocity = if period_starts.len() > 1 && walked > period_starts[1].0 {
        (state.q[0] - period_starts[1].1) / (walked - period_starts[1].0)
    } else {
        (state.q[0] - x0) / walked.max(cfg.dt)
    };
    criteria.sort_by(f64::total_cmp);
    let median = criteria.get(criteria.len() / 2).copied().unwrap_or(0.0);
    let calls: usize = by_contacts.values().map(|v| v.0).sum();
    Ok(WalkResult {
        controller: cfg.settings.feedforward.name(),
        terrain: String::new(),
        solver: cfg.solver.name().into(),
        duration: walked,
        fell_at,
        mean_velocity,
        velocity_error,
        height_error: (height_sq / height_n.max(1) as f64).sqrt(),
        feet_error: (feet_sq / feet_n.max(1) as f64).sqrt(),
        torque_rate: (rate_sq / tau_n.max(1) as f64).sqrt(),
        torque_rms: (tau_sq / tau_n.max(1) as f64).sqrt(),
        time_by_contacts: by_contacts
            .into_iter()
            .map(|(nc, (n, s, f))| (nc, n, s / n as f64, f / n as f64))
            .collect(),
        mean_controller_seconds: seconds / calls.max(1) as f64,
        feedforward_failures: ctrl.feedforward_failures,
        last_feedforward_failure: ctrl.last_failure.clone(),
        median_ncp_criterion: median,
        samples,
    })
}

/// A named terrain of the experiments.
#[derive(Clone, Debug)]
pub struct NamedTerrain {
    pub name: String,
    pub terrain: Terrain,
}

/// Flat ground of friction `mu` (20 m × 20 m).
pub fn flat(name: &str, mu: f64) -> NamedTerrain {
    NamedTerrain {
        name: name.into(),
        terrain: Terrain::flat([20.0, 20.0], mu),
    }
}

/// Rough terrain: bumps up to `bump` (m), friction in `mu` per 0.5 m region.
pub fn rough(
    name: &str,
    bump: f64,
    mu: (f64, f64),
    seed: u64,
) -> Result<NamedTerrain, ControlError> {
    let terrain = Terrain::rough(&RoughTerrain {
        size: [12.0, 4.0],
        resolution: 0.02,
        bump_height: bump,
        bump_spacing: 0.1,
        friction: mu,
        friction_region: 0.5,
        seed,
    })
    .map_err(|e| ControlError::Model(e.to_string()))?;
    Ok(NamedTerrain {
        name: name.into(),
        terrain,
    })
}

/// What [`controllers`] and [`contact_models`] run.
#[derive(Clone, Debug)]
pub struct Experiment {
    pub duration: f64,
    pub dt: f64,
    pub record_every: usize,
}

/// Every `(contact model, feedforward)` of `setups` on each terrain.
fn walks(
    robot: &Quadruped,
    exp: &Experiment,
    terrains: &[NamedTerrain],
    setups: &[(SolverKind, Feedforward)],
    progress: &dyn Fn(&str),
) -> Result<Vec<WalkResult>, ControlError> {
    let mut out = Vec::new();
    for t in terrains {
        for &(solver, feedforward) in setups {
            progress(&format!(
                "{} on {} with {}",
                feedforward.name(),
                t.name,
                solver.name()
            ));
            let cfg = WalkConfig {
                duration: exp.duration,
                dt: exp.dt,
                solver,
                settings: TrotSettings {
                    feedforward,
                    ..TrotSettings::default()
                },
                terrain: t.terrain.clone(),
                record_every: exp.record_every,
            };
            let mut r = walk(robot, &cfg)?;
            r.terrain = t.name.clone();
            out.push(r);
        }
    }
    Ok(out)
}

/// The controller comparison: every feedforward of `feedforwards` on each
/// of the three terrains, on the simulator's default contact model.
pub fn controllers(
    robot: &Quadruped,
    exp: &Experiment,
    feedforwards: &[Feedforward],
    progress: &dyn Fn(&str),
) -> Result<Vec<WalkResult>, ControlError> {
    let terrains = [
        flat("flat, μ = 0.1", 0.1),
        flat("flat, μ = ∞", 1e6),
        rough("rough, 3 cm, μ ~ U(0.1, 1.5)", 0.03, (0.1, 1.5), 7)?,
    ];
    let setups: Vec<_> = feedforwards
        .iter()
        .map(|&f| (SolverKind::NcpAdmm, f))
        .collect();
    walks(robot, exp, &terrains, &setups, progress)
}

/// The contact models' effect: the no-slip-feedforward controller on each
/// simulator contact model, flat (μ = 0.9) and bumpy (0.1 leg length, μ =
/// 0.3).
pub fn contact_models(
    robot: &Quadruped,
    exp: &Experiment,
    solvers: &[SolverKind],
    progress: &dyn Fn(&str),
) -> Result<Vec<WalkResult>, ControlError> {
    let leg = moreau::scenes::solo::UPPER_LEG + moreau::scenes::solo::LOWER_LEG;
    let terrains = [
        flat("flat, μ = 0.9", 0.9),
        rough("bumpy, 0.1 leg length, μ = 0.3", 0.1 * leg, (0.3, 0.3), 11)?,
    ];
    let no_slip = TrotSettings::default().feedforward;
    let setups: Vec<_> = solvers.iter().map(|&s| (s, no_slip)).collect();
    walks(robot, exp, &terrains, &setups, progress)
}

/// Everything `moreau compare locomotion` measured.
#[derive(Clone, Debug, Serialize)]
pub struct LocomotionReport {
    pub quick: bool,
    pub duration: f64,
    pub dt: f64,
    pub desired_velocity: f64,
    /// The controller comparison ([`controllers`]).
    pub controllers: Vec<WalkResult>,
    /// The contact models' effect ([`contact_models`]).
    pub contact_models: Vec<WalkResult>,
    pub wall_s: f64,
}

/// Runs both experiments on the built-in quadruped: 10 s walks, or 3 s
/// with `quick`.
pub fn compare_locomotion(
    quick: bool,
    progress: &dyn Fn(&str),
) -> Result<LocomotionReport, ControlError> {
    let start = std::time::Instant::now();
    let robot = Quadruped::builtin()?;
    let exp = Experiment {
        duration: if quick { 3.0 } else { 10.0 },
        dt: 1e-3,
        record_every: if quick { 20 } else { 50 },
    };
    let controllers = controllers(&robot, &exp, &Feedforward::ALL, progress)?;
    let solvers = [
        SolverKind::LcpPgs,
        SolverKind::CcpAdmm,
        SolverKind::Raisim,
        SolverKind::NcpAdmm,
    ];
    let contact_models = contact_models(&robot, &exp, &solvers, progress)?;
    Ok(LocomotionReport {
        quick,
        duration: exp.duration,
        dt: exp.dt,
        desired_velocity: TrotSettings::default().velocity[0],
        controllers,
        contact_models,
        wall_s: start.elapsed().as_secs_f64(),
    })
}

impl WalkResult {
    /// The walk as a row of [`table_header`]'s table, `by` in its second
    /// column (the controller or the contact model).
    pub fn table_row(&self, by: &str) -> String {
        format!(
            "{:34} {:>10} {:>9} {:>8.3} {:>8.3} {:>8.4} {:>8.4} {:>9.0} {:>7.3} {:>9.0} {:>9} {:>9.1e}\n",
            self.terrain,
            by,
            self.fell_at
                .map_or("no".to_string(), |t| format!("{t:.2} s")),
            self.mean_velocity,
            self.velocity_error,
            self.height_error,
            self.feet_error,
            self.torque_rate,
            self.torque_rms,
            self.mean_controller_seconds * 1e6,
            self.feedforward_failures,
            self.median_ncp_criterion
        )
    }
}

/// The header of [`WalkResult::table_row`]'s rows.
pub fn table_header(by: &str) -> String {
    format!(
        "{:34} {:>10} {:>9} {:>8} {:>8} {:>8} {:>8} {:>9} {:>7} {:>9} {:>9} {:>9}\n",
        "terrain",
        by,
        "fell",
        "v (m/s)",
        "v err",
        "z err",
        "feet err",
        "dτ/dt",
        "τ rms",
        "µs/call",
        "ff fails",
        "NCP ε"
    )
}

/// The report's tables.
pub fn render(r: &LocomotionReport) -> String {
    let mut s = format!(
        "Trot at {} m/s on the built-in quadruped, {} s per walk, dt = {} s ({:.0} s wall)\n\n",
        r.desired_velocity, r.duration, r.dt, r.wall_s
    );
    s.push_str("Controllers (PD + feedforward; simulator: ncp-admm)\n");
    s.push_str(&table_header("controller"));
    for w in &r.controllers {
        s.push_str(&w.table_row(&w.controller));
    }
    s.push_str("\nController time (µs per call) against the contacts its inverse dynamics saw (all terrains)\n");
    let mut by: BTreeMap<(String, usize), (usize, f64)> = BTreeMap::new();
    for w in &r.controllers {
        for &(nc, n, mean, _) in &w.time_by_contacts {
            let e = by.entry((w.controller.clone(), nc)).or_insert((0, 0.0));
            e.0 += n;
            e.1 += mean * n as f64;
        }
    }
    let mut last = String::new();
    for ((c, nc), (n, total)) in &by {
        if *c != last {
            s.push_str(&format!("\n{c:>10}:"));
            last = c.clone();
        }
        s.push_str(&format!(
            "  {nc} contacts {:.0} ({n} calls)",
            total / *n as f64 * 1e6
        ));
    }
    s.push_str("\n\nContact models (no-slip feedforward)\n");
    s.push_str(&table_header("model"));
    for w in &r.contact_models {
        s.push_str(&w.table_row(&w.solver));
    }
    s
}

/// Writes `locomotion.json`, `contact_models.svg` (base velocity and the
/// NCP criterion over time for each contact model, flat and bumpy) and
/// `controllers.svg` (base velocity over time on each terrain for each
/// controller) into `dir`.
pub fn write_locomotion(
    r: &LocomotionReport,
    dir: &std::path::Path,
) -> Result<Vec<std::path::PathBuf>, crate::study::report::ReportError> {
    use plotters::prelude::*;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let json = dir.join("locomotion.json");
    std::fs::write(&json, serde_json::to_string(r)?)
        .map_err(|e| format!("cannot write {}: {e}", json.display()))?;
    let colors = crate::study::report::plots::COLORS;
    type Pick = fn(&WalkSample) -> f64;
    let draw = |path: &std::path::Path,
                runs: &[WalkResult],
                label: fn(&WalkResult) -> String,
                panels: &[(&str, Pick, bool)]|
     -> Result<(), crate::study::report::ReportError> {
        let mut terrains: Vec<String> = Vec::new();
        for w in runs {
            if !terrains.contains(&w.terrain) {
                terrains.push(w.terrain.clone());
            }
        }
        let root = SVGBackend::new(
            path,
            (600 * terrains.len() as u32, 380 * panels.len() as u32),
        )
        .into_drawing_area();
        root.fill(&WHITE)?;
        let areas = root.split_evenly((panels.len(), terrains.len()));
        for (p, &(what, pick, log)) in panels.iter().enumerate() {
            for (t, terrain) in terrains.iter().enumerate() {
                let area = &areas[p * terrains.len() + t];
                let value = |s: &WalkSample| {
                    let v = pick(s);
                    if log { v.max(1e-16).log10() } else { v }
                };
                let here: Vec<&WalkResult> =
                    runs.iter().filter(|w| &w.terrain == terrain).collect();
                let (lo, hi) = here
                    .iter()
                    .flat_map(|w| w.samples.iter().map(value))
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                        (a.min(v), b.max(v))
                    });
                let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
                let pad = 0.05 * (hi - lo).max(1e-9);
                let mut chart = ChartBuilder::on(area)
                    .caption(format!("{terrain}: {what}"), ("sans-serif", 16))
                    .margin(10)
                    .x_label_area_size(35)
                    .y_label_area_size(55)
                    .build_cartesian_2d(0.0..r.duration, (lo - pad)..(hi + pad))?;
                chart
                    .configure_mesh()
                    .x_desc("time (s)")
                    .y_desc(what)
                    .draw()?;
                for (k, w) in here.iter().enumerate() {
                    let color = colors[k % colors.len()];
                    chart
                        .draw_series(LineSeries::new(
                            w.samples.iter().map(|s| (s.t, value(s))),
                            color.stroke_width(1),
                        ))?
                        .label(label(w))
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                        });
                }
                chart
                    .configure_series_labels()
                    .position(SeriesLabelPosition::LowerRight)
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK)
                    .draw()?;
            }
        }
        root.present()
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(())
    };
    let models = dir.join("contact_models.svg");
    draw(
        &models,
        &r.contact_models,
        |w| w.solver.clone(),
        &[
            ("base velocity (m/s)", |s| s.velocity, false),
            ("log10 NCP criterion", |s| s.ncp_criterion, true),
        ],
    )?;
    let ctrl = dir.join("controllers.svg");
    draw(
        &ctrl,
        &r.controllers,
        |w| w.controller.clone(),
        &[
            ("base velocity (m/s)", |s| s.velocity, false),
            ("base height (m)", |s| s.height, false),
        ],
    )?;
    Ok(vec![json, models, ctrl])
}
