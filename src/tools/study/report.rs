//! `moreau compare`: every solver of the catalog through the seed study's
//! experiments, measured, tabulated and plotted.
//!
//! [`compare`] runs the experiments ([`CompareReport`] holds every number);
//! [`CompareReport::render`] prints the tables (the study's Table II decided
//! from measurements, with the thresholds in a legend under it);
//! [`write_plots`] draws `energy.svg`, `internal_forces.svg`,
//! `time_to_accuracy.svg` and `mass_ratio.svg`; [`write_json`] writes
//! `compare.json`.
//!
//! The trajectories run in parallel (rayon); the time-to-accuracy
//! measurements run one at a time afterwards, so that their timings are not
//! shared with other work.

use super::{
    RatioResult, Trajectory, compliant_penetration, drag_force, drag_slip_time, dragged_cube,
    harvest, mass_ratio_study, model_name, params, simulate, sliding_cube, sliding_cube_energy,
    time_to_accuracy, trajectory_distance,
};
use crate::contact::{ContactProblem, SolverKind, SolverSettings};
use crate::math::Vec3;
use crate::scenes;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use rayon::prelude::*;
use serde::Serialize;
use std::fmt::Write as _;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Errors of the comparison (scenes, simulations, files, plots).
pub type ReportError = Box<dyn std::error::Error + Send + Sync>;

/// Table II thresholds: Signorini violation (m/s) on the sliding cube.
pub const SIGNORINI_MAX: f64 = 1e-6;
/// Coulomb violation (relative to `‖λ‖`) on the sliding cube.
pub const COULOMB_MAX: f64 = 1e-6;
/// Maximum-dissipation angle (degrees) on the sliding cube.
pub const MDP_MAX_DEG: f64 = 0.1;
/// Lateral squeeze (relative to `‖λ‖`) on the dragged cube.
pub const INTERNAL_MAX: f64 = 1e-6;
/// Robustness: own tolerance and iteration cap on the stacked cubes at this mass ratio.
pub const ROBUST_TOLERANCE: f64 = 1e-6;
pub const ROBUST_MAX_ITERATIONS: usize = 1000;
pub const ROBUST_RATIO: f64 = 1e6;
/// Fraction of converged solves over the sliding and dragged cubes.
pub const CONVERGED_MIN: f64 = 0.99;

/// Steps of the sliding cube (it stops after 0.255 s) and of the dragged cube
/// (it slips at 0.196 s).
pub const SLIDE_STEPS: usize = 400;
pub const DRAG_STEPS: usize = 350;
/// Mass ratios of the stacked cubes (top / bottom).
pub const MASS_RATIOS: [f64; 4] = [1.0, 1e2, 1e4, 1e6];
/// Self-consistency: the dragged cube over this duration (s).
pub const CONSISTENCY_DURATION: f64 = 0.4;
/// Self-consistency against the stopping tolerance: tolerances, reference, cap (at dt = 1 ms).
pub const CONSISTENCY_TOLERANCES: [f64; 3] = [1e-2, 1e-4, 1e-6];
pub const REFERENCE_TOLERANCE: f64 = 1e-9;
pub const CONSISTENCY_MAX_ITERATIONS: usize = 10_000;
/// Time-to-accuracy: tolerances and iteration cap.
pub const TTA_TOLERANCES: [f64; 4] = [1e-2, 1e-4, 1e-6, 1e-8];
pub const TTA_MAX_ITERATIONS: usize = 2000;
/// The quadruped's push: this force (N) along `x` on its base from `PUSH_START` (s) on.
pub const QUADRUPED_PUSH: f64 = 10.0;
pub const PUSH_START: f64 = 0.8;
/// Compliance: `R = α·diag(G)` for these `α`, with these solvers.
pub const ALPHAS: [f64; 5] = [0.0, 1e-2, 2e-2, 4e-2, 8e-2];
pub const COMPLIANCE_SOLVERS: [SolverKind; 2] = [SolverKind::CcpAdmm, SolverKind::NcpAdmm];
/// Floor of the log axes (values below are drawn at it).
pub const LOG_FLOOR: f64 = 1e-16;

/// What to run: the full comparison, or a quick one (coarser reference,
/// fewer time steps and problems) for tests.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct CompareConfig {
    pub quick: bool,
}

/// A scene whose contact problems are harvested for time-to-accuracy.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct HarvestPlan {
    pub scene: &'static str,
    pub steps: usize,
    /// Keep every `every`-th step's problem.
    pub every: usize,
    /// A push of `QUADRUPED_PUSH` N along `x` on the base from `PUSH_START` on.
    pub push: bool,
}

impl CompareConfig {
    /// Reference time step of the time-step study (s).
    pub fn reference_dt(&self) -> f64 {
        if self.quick { 5e-4 } else { 1e-4 }
    }
    /// Time steps compared with the reference (s).
    pub fn dts(&self) -> &'static [f64] {
        if self.quick {
            &[1e-3, 1e-2]
        } else {
            &[1e-3, 1e-2, 1e-1]
        }
    }
    /// The scenes harvested for time-to-accuracy.
    pub fn harvests(&self) -> [HarvestPlan; 2] {
        let (qs, ps, every) = if self.quick {
            (1000, 400, 40)
        } else {
            (1500, 1000, 10)
        };
        [
            HarvestPlan {
                scene: "quadruped",
                steps: qs,
                every,
                push: true,
            },
            HarvestPlan {
                scene: "pyramid",
                steps: ps,
                every,
                push: false,
            },
        ]
    }
    /// Units of work, for a progress bar (one per [`compare`] callback).
    pub fn work(&self) -> u64 {
        self.jobs().len() as u64 + (2 * 2 * SolverKind::ALL.len()) as u64
    }

    fn jobs(&self) -> Vec<Job> {
        let mut jobs: Vec<Job> = (0..2).map(Job::Harvest).collect();
        for kind in SolverKind::ALL {
            jobs.push(Job::Dt(kind, self.reference_dt()));
        }
        for kind in SolverKind::ALL {
            jobs.push(Job::Tol(kind, REFERENCE_TOLERANCE));
            for &tol in &CONSISTENCY_TOLERANCES {
                jobs.push(Job::Tol(kind, tol));
            }
            for &dt in self.dts() {
                jobs.push(Job::Dt(kind, dt));
            }
            jobs.push(Job::Slide(kind));
            jobs.push(Job::Drag(kind));
        }
        jobs.extend(MASS_RATIOS.iter().map(|&r| Job::Ratio(r)));
        for kind in COMPLIANCE_SOLVERS {
            jobs.extend(ALPHAS.iter().map(|&a| Job::Compliance(kind, a)));
        }
        jobs
    }
}

#[derive(Clone, Copy, Debug)]
enum Job {
    Slide(SolverKind),
    Drag(SolverKind),
    Ratio(f64),
    Dt(SolverKind, f64),
    Tol(SolverKind, f64),
    Compliance(SolverKind, f64),
    Harvest(usize),
}

impl Job {
    fn label(&self) -> String {
        match *self {
            Job::Slide(k) => format!("sliding cube, {}", k.name()),
            Job::Drag(k) => format!("dragged cube, {}", k.name()),
            Job::Ratio(r) => format!("stacked cubes, ratio {r:.0e}"),
            Job::Dt(k, dt) => format!("dragged cube at dt {dt:.0e} s, {}", k.name()),
            Job::Tol(k, tol) => format!("dragged cube at tol {tol:.0e}, {}", k.name()),
            Job::Compliance(k, a) => format!("compliance α = {a:.0e}, {}", k.name()),
            Job::Harvest(i) => format!("harvesting problems ({})", ["quadruped", "pyramid"][i]),
        }
    }
}

enum Done {
    Traj(Trajectory),
    Ratio(Vec<RatioResult>),
    Penetration(f64),
    Problems(Vec<ContactProblem>),
}

/// A cell of Table II: the measured number and whether it passes.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Check {
    pub value: f64,
    pub pass: bool,
}

impl Check {
    fn below(value: f64, max: f64) -> Check {
        Check {
            value,
            pass: value < max,
        }
    }
}

/// One row of Table II.
#[derive(Clone, Debug, Serialize)]
pub struct TableRow {
    pub solver: String,
    pub model: String,
    /// m/s.
    pub signorini: Check,
    /// Relative to `‖λ‖`.
    pub coulomb: Check,
    /// Degrees.
    pub mdp_deg: Check,
    /// Relative to `‖λ‖`.
    pub internal: Check,
    /// Own-model `ε_abs` at the mass ratio `ROBUST_RATIO`.
    pub robust: Check,
    pub robust_iterations: usize,
    /// Fraction of converged solves.
    pub converged: Check,
    pub solves: usize,
}

/// A curve of one solver: `y(x)`.
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    pub solver: String,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RatioRow {
    pub solver: String,
    pub ratio: f64,
    pub eps_abs: f64,
    pub eps_ncp: f64,
    pub iterations: usize,
    pub converged: bool,
}

/// Self-consistency: mean distance (m) to the reference trajectory of the same solver.
#[derive(Clone, Debug, Serialize)]
pub struct ConsistencyRow {
    pub solver: String,
    /// The time step (s) or stopping tolerance varied.
    pub value: f64,
    pub distance: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct TtaPoint {
    pub tolerance: f64,
    pub mean_us: f64,
    pub converged: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct TtaRow {
    pub scene: String,
    pub solver: String,
    pub warm: bool,
    pub points: Vec<TtaPoint>,
}

/// The harvested problems of one scene.
#[derive(Clone, Debug, Serialize)]
pub struct HarvestSummary {
    pub plan: HarvestPlan,
    pub harvested_with: String,
    pub problems: usize,
    pub mean_contacts: f64,
    pub max_contacts: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct ComplianceRow {
    pub solver: String,
    pub alpha: f64,
    /// m.
    pub penetration: f64,
    /// m per unit α (NaN at α = 0).
    pub per_alpha: f64,
}

/// Every number of `moreau compare`.
#[derive(Clone, Debug, Serialize)]
pub struct CompareReport {
    pub config: CompareConfig,
    pub solvers: Vec<String>,
    pub table: Vec<TableRow>,
    /// Sliding cube: kinetic energy (J) against time (s), and the analytic curve.
    pub energy: Vec<Series>,
    pub energy_analytic: Series,
    /// Dragged cube: lateral squeeze (relative) against time (s).
    pub internal_forces: Vec<Series>,
    pub slip_time: f64,
    pub mass_ratio: Vec<RatioRow>,
    pub reference_dt: f64,
    pub dt_consistency: Vec<ConsistencyRow>,
    pub tolerance_consistency: Vec<ConsistencyRow>,
    pub harvests: Vec<HarvestSummary>,
    pub time_to_accuracy: Vec<TtaRow>,
    pub compliance: Vec<ComplianceRow>,
    /// Wall time (s) of the trajectories (parallel) and of time-to-accuracy (serial).
    pub wall_trajectories: f64,
    pub wall_time_to_accuracy: f64,
}

/// `max` over the records that propagates NaN.
fn worst(t: &Trajectory, f: impl Fn(&super::Record) -> f64) -> f64 {
    t.records.iter().map(f).fold(0.0, |a: f64, b| {
        if a.is_nan() || b.is_nan() {
            f64::NAN
        } else {
            a.max(b)
        }
    })
}

fn drag_run(
    kind: SolverKind,
    dt: f64,
    tolerance: f64,
    max_iterations: usize,
) -> Result<Trajectory, ReportError> {
    let scene = dragged_cube()?;
    let mut p = params(kind, dt);
    p.solver_settings.tolerance = tolerance;
    p.solver_settings.max_iterations = max_iterations;
    let steps = (CONSISTENCY_DURATION / dt).round() as usize;
    Ok(simulate(&scene, p, steps, Some(&drag_force))?)
}

fn quadruped_push(t: f64) -> Vec3 {
    if t >= PUSH_START {
        Vec3::new(QUADRUPED_PUSH, 0.0, 0.0)
    } else {
        Vec3::zeros()
    }
}

/// The solver the problems are harvested with (the study's reference).
const HARVEST_SOLVER: SolverKind = SolverKind::NcpAdmm;

fn run_job(job: Job, cfg: CompareConfig) -> Result<Done, ReportError> {
    Ok(match job {
        Job::Slide(kind) => {
            let scene = sliding_cube()?;
            Done::Traj(simulate(&scene, params(kind, scene.dt), SLIDE_STEPS, None)?)
        }
        Job::Drag(kind) => {
            let scene = dragged_cube()?;
            Done::Traj(simulate(
                &scene,
                params(kind, scene.dt),
                DRAG_STEPS,
                Some(&drag_force),
            )?)
        }
        Job::Ratio(ratio) => {
            let settings = SolverSettings {
                tolerance: ROBUST_TOLERANCE,
                max_iterations: ROBUST_MAX_ITERATIONS,
                ..Default::default()
            };
            Done::Ratio(mass_ratio_study(&[ratio], &SolverKind::ALL, &settings)?)
        }
        Job::Dt(kind, dt) => {
            let s = params(kind, dt).solver_settings;
            Done::Traj(drag_run(kind, dt, s.tolerance, s.max_iterations)?)
        }
        Job::Tol(kind, tol) => Done::Traj(drag_run(kind, 1e-3, tol, CONSISTENCY_MAX_ITERATIONS)?),
        Job::Compliance(kind, alpha) => Done::Penetration(compliant_penetration(kind, alpha)?),
        Job::Harvest(i) => {
            let plan = cfg.harvests()[i];
            let scene = scenes::scene(plan.scene)?;
            let push: Option<super::Push> = if plan.push {
                Some(&quadruped_push)
            } else {
                None
            };
            Done::Problems(harvest(
                &scene,
                params(HARVEST_SOLVER, scene.dt),
                plan.steps,
                plan.every,
                push,
            )?)
        }
    })
}

/// Runs the comparison; `progress` is called with a label after each of
/// [`CompareConfig::work`] units of work (from several threads).
pub fn compare(
    cfg: CompareConfig,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<CompareReport, ReportError> {
    let start = Instant::now();
    let jobs = cfg.jobs();
    let done: Vec<(Job, Result<Done, ReportError>)> = jobs
        .into_par_iter()
        .map(|job| {
            let r = run_job(job, cfg);
            progress(&job.label());
            (job, r)
        })
        .collect();
    let wall_trajectories = start.elapsed().as_secs_f64();

    let mut slide = Vec::new();
    let mut drag = Vec::new();
    let mut ratios = Vec::new();
    let mut dt_runs = Vec::new();
    let mut tol_runs = Vec::new();
    let mut pens = Vec::new();
    let mut problems: [Vec<ContactProblem>; 2] = Default::default();
    for (job, r) in done {
        let r = r.map_err(|e| format!("{}: {e}", job.label()))?;
        match (job, r) {
            (Job::Slide(_), Done::Traj(t)) => slide.push(t),
            (Job::Drag(_), Done::Traj(t)) => drag.push(t),
            (Job::Ratio(_), Done::Ratio(r)) => ratios.extend(r),
            (Job::Dt(_, _), Done::Traj(t)) => dt_runs.push(t),
            (Job::Tol(_, tol), Done::Traj(t)) => tol_runs.push((tol, t)),
            (Job::Compliance(k, a), Done::Penetration(d)) => pens.push((k, a, d)),
            (Job::Harvest(i), Done::Problems(p)) => problems[i] = p,
            _ => unreachable!("every job has its kind of result"),
        }
    }
    let find = |v: &[Trajectory], k: SolverKind| v.iter().position(|t| t.solver == k).unwrap();

    // Table II.
    let mut table = Vec::new();
    for kind in SolverKind::ALL {
        let s = &slide[find(&slide, kind)];
        let d = &drag[find(&drag, kind)];
        let robust = ratios
            .iter()
            .find(|r| r.solver == kind && r.ratio == ROBUST_RATIO)
            .expect("the mass-ratio study covers ROBUST_RATIO");
        let solved: Vec<_> = s
            .records
            .iter()
            .chain(&d.records)
            .filter(|r| r.nc > 0)
            .collect();
        let converged = solved.iter().filter(|r| r.converged).count() as f64;
        let settings = params(kind, 1e-3).solver_settings;
        table.push(TableRow {
            solver: kind.name().into(),
            model: model_name(kind.contact_model(&settings)),
            signorini: Check::below(worst(s, |r| r.signorini), SIGNORINI_MAX),
            coulomb: Check::below(worst(s, |r| r.coulomb), COULOMB_MAX),
            mdp_deg: Check::below(worst(s, |r| r.mdp).to_degrees(), MDP_MAX_DEG),
            internal: Check::below(worst(d, |r| r.lateral_squeeze()), INTERNAL_MAX),
            robust: Check {
                value: robust.eps_abs,
                pass: robust.converged && robust.eps_abs <= ROBUST_TOLERANCE,
            },
            robust_iterations: robust.iterations,
            converged: {
                let f = converged / solved.len().max(1) as f64;
                Check {
                    value: f,
                    pass: f >= CONVERGED_MIN,
                }
            },
            solves: solved.len(),
        });
    }

    let series = |v: &[Trajectory], f: &dyn Fn(&super::Record) -> f64| -> Vec<Series> {
        SolverKind::ALL
            .iter()
            .map(|&k| {
                let t = &v[find(v, k)];
                Series {
                    solver: k.name().into(),
                    x: t.records.iter().map(|r| r.t).collect(),
                    y: t.records.iter().map(f).collect(),
                }
            })
            .collect()
    };
    let energy = series(&slide, &|r| r.kinetic);
    let internal_forces = series(&drag, &|r| r.lateral_squeeze());
    let n = 400;
    let t_end = SLIDE_STEPS as f64 * 1e-3;
    let energy_analytic = Series {
        solver: "analytic".into(),
        x: (0..=n).map(|i| t_end * i as f64 / n as f64).collect(),
        y: (0..=n)
            .map(|i| sliding_cube_energy(t_end * i as f64 / n as f64))
            .collect(),
    };

    let mass_ratio = SolverKind::ALL
        .iter()
        .flat_map(|&k| {
            MASS_RATIOS
                .iter()
                .map(move |&ratio| (k, ratio))
                .map(|(k, ratio)| {
                    let r = ratios
                        .iter()
                        .find(|r| r.solver == k && r.ratio == ratio)
                        .expect("every solver at every ratio");
                    RatioRow {
                        solver: k.name().into(),
                        ratio,
                        eps_abs: r.eps_abs,
                        eps_ncp: r.eps_ncp,
                        iterations: r.iterations,
                        converged: r.converged,
                    }
                })
        })
        .collect();

    let mut dt_consistency = Vec::new();
    for kind in SolverKind::ALL {
        let of = |dt: f64| {
            dt_runs
                .iter()
                .find(|t| t.solver == kind && t.dt == dt)
                .expect("every solver at every dt")
        };
        let reference = of(cfg.reference_dt());
        for &dt in cfg.dts() {
            dt_consistency.push(ConsistencyRow {
                solver: kind.name().into(),
                value: dt,
                distance: trajectory_distance(of(dt), reference),
            });
        }
    }
    let mut tolerance_consistency = Vec::new();
    for kind in SolverKind::ALL {
        let of = |tol: f64| {
            &tol_runs
                .iter()
                .find(|(t, r)| r.solver == kind && *t == tol)
                .expect("every solver at every tolerance")
                .1
        };
        let reference = of(REFERENCE_TOLERANCE);
        for &tol in &CONSISTENCY_TOLERANCES {
            tolerance_consistency.push(ConsistencyRow {
                solver: kind.name().into(),
                value: tol,
                distance: trajectory_distance(of(tol), reference),
            });
        }
    }

    let compliance = COMPLIANCE_SOLVERS
        .iter()
        .flat_map(|&k| ALPHAS.iter().map(move |&a| (k, a)))
        .map(|(k, a)| {
            let d = pens
                .iter()
                .find(|p| p.0 == k && p.1 == a)
                .expect("every solver at every α")
                .2;
            ComplianceRow {
                solver: k.name().into(),
                alpha: a,
                penetration: d,
                per_alpha: if a > 0.0 { d / a } else { f64::NAN },
            }
        })
        .collect();

    // Time-to-accuracy, one solve at a time.
    let start_tta = Instant::now();
    let mut harvests = Vec::new();
    let mut time_to_accuracy_rows = Vec::new();
    for (plan, problems) in cfg.harvests().into_iter().zip(&problems) {
        let ncs: Vec<usize> = problems.iter().map(|p| p.nc()).collect();
        harvests.push(HarvestSummary {
            plan,
            harvested_with: HARVEST_SOLVER.name().into(),
            problems: problems.len(),
            mean_contacts: ncs.iter().sum::<usize>() as f64 / ncs.len().max(1) as f64,
            max_contacts: ncs.iter().copied().max().unwrap_or(0),
        });
        for kind in SolverKind::ALL {
            for warm in [false, true] {
                let r = time_to_accuracy(kind, problems, &TTA_TOLERANCES, warm, TTA_MAX_ITERATIONS)
                    .map_err(|e| {
                        format!("time-to-accuracy, {}, {}: {e}", plan.scene, kind.name())
                    })?;
                time_to_accuracy_rows.push(TtaRow {
                    scene: plan.scene.into(),
                    solver: kind.name().into(),
                    warm,
                    points: r
                        .points
                        .iter()
                        .map(|&(tolerance, time, converged)| TtaPoint {
                            tolerance,
                            mean_us: 1e6 * time,
                            converged,
                        })
                        .collect(),
                });
                progress(&format!(
                    "time-to-accuracy, {}, {} {}",
                    plan.scene,
                    kind.name(),
                    if warm { "warm" } else { "cold" }
                ));
            }
        }
    }

    Ok(CompareReport {
        config: cfg,
        solvers: SolverKind::ALL.iter().map(|k| k.name().into()).collect(),
        table,
        energy,
        energy_analytic,
        internal_forces,
        slip_time: drag_slip_time(),
        mass_ratio,
        reference_dt: cfg.reference_dt(),
        dt_consistency,
        tolerance_consistency,
        harvests,
        time_to_accuracy: time_to_accuracy_rows,
        compliance,
        wall_trajectories,
        wall_time_to_accuracy: start_tta.elapsed().as_secs_f64(),
    })
}

/// The header line of Table II, as [`CompareReport::table_ii`] prints it.
pub const TABLE_II_TITLE: &str =
    "Table II (measured): contact models and solvers against the physical criteria";

fn cell(c: Check, text: String) -> String {
    format!("{} {text}", if c.pass { '✓' } else { '✗' })
}

impl CompareReport {
    /// Table II with its legend.
    pub fn table_ii(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "{TABLE_II_TITLE}");
        let _ = writeln!(
            s,
            "{:<10} {:<6} | {:<11} | {:<11} | {:<10} | {:<18} | {:<17} | {:<9}",
            "solver",
            "model",
            "Signorini",
            "Coulomb",
            "MDP",
            "no internal forces",
            "robust",
            "converged"
        );
        let _ = writeln!(s, "{}", "-".repeat(114));
        for r in &self.table {
            let _ = writeln!(
                s,
                "{:<10} {:<6} | {:<11} | {:<11} | {:<10} | {:<18} | {:<17} | {:<9}",
                r.solver,
                r.model,
                cell(r.signorini, format!("{:.1e}", r.signorini.value)),
                cell(r.coulomb, format!("{:.1e}", r.coulomb.value)),
                cell(r.mdp_deg, format!("{:.2}°", r.mdp_deg.value)),
                cell(r.internal, format!("{:.1e}", r.internal.value)),
                cell(
                    r.robust,
                    format!("{:.1e} {:>4} it", r.robust.value, r.robust_iterations)
                ),
                cell(r.converged, format!("{:.1} %", 100.0 * r.converged.value)),
            );
        }
        let _ = writeln!(
            s,
            "✓/✗ decided from measurements (sliding cube: {SLIDE_STEPS} steps; dragged cube: {DRAG_STEPS} steps, warm-started; dt 1 ms, tol 1e-8, 1000 iterations):"
        );
        let legend = [
            (
                "Signorini",
                format!(
                    "max over the sliding cube of max(0, -c_N) + |λ_N c_N|/‖λ‖ (m/s) < {SIGNORINI_MAX:.0e}"
                ),
            ),
            (
                "Coulomb",
                format!(
                    "max over the sliding cube of max(0, ‖λ_T‖ - μ λ_N, -λ_N)/‖λ‖ < {COULOMB_MAX:.0e} (the 4-facet pyramid exceeds the cone along its diagonals)"
                ),
            ),
            (
                "MDP",
                format!(
                    "max over the sliding cube of the angle between λ_T and -c_T at loaded sliding contacts (‖c_T‖ > {} m/s) < {MDP_MAX_DEG}°",
                    super::SLIDE_THRESHOLD
                ),
            ),
            (
                "no internal forces",
                format!(
                    "max over the dragged cube of the lateral squeeze (largest world-y impulse of one contact / ‖λ‖) < {INTERNAL_MAX:.0e}"
                ),
            ),
            (
                "robust",
                format!(
                    "reaches its own tolerance {ROBUST_TOLERANCE:.0e} within {ROBUST_MAX_ITERATIONS} iterations, cold, on the 1e3 kg on 1e-3 kg stacked cubes (ratio {ROBUST_RATIO:.0e}); own-model eps_abs and iterations"
                ),
            ),
            (
                "converged",
                format!(
                    "fraction of the sliding- and dragged-cube solves that reached tol 1e-8 within 1000 iterations ≥ {:.0} %",
                    100.0 * CONVERGED_MIN
                ),
            ),
        ];
        for (name, text) in legend {
            let _ = writeln!(s, "  {name:<19} {text}");
        }
        s
    }

    /// The mass-ratio table.
    pub fn mass_ratio_table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Mass ratio (stacked cubes, top/bottom, 1e-3 kg bottom; cold, tol {ROBUST_TOLERANCE:.0e}, {ROBUST_MAX_ITERATIONS} iterations): own-model eps_abs, iterations, * = converged"
        );
        header_row(
            &mut s,
            "solver",
            MASS_RATIOS.iter().map(|r| format!("ratio {r:.0e}")),
            19,
        );
        for name in &self.solvers {
            let _ = write!(s, "{name:<10}");
            for r in self.mass_ratio.iter().filter(|r| &r.solver == name) {
                let _ = write!(
                    s,
                    " | {:>9.1e} {:>5} it{}",
                    r.eps_abs,
                    r.iterations,
                    if r.converged { '*' } else { ' ' }
                );
            }
            let _ = writeln!(s);
        }
        s
    }

    fn consistency_table(&self, title: &str, head: &str, rows: &[ConsistencyRow]) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "{title}");
        let mut values: Vec<f64> = Vec::new();
        for r in rows {
            if !values.contains(&r.value) {
                values.push(r.value);
            }
        }
        header_row(
            &mut s,
            "solver",
            values.iter().map(|v| format!("{head} {v:.0e}")),
            12,
        );
        for name in &self.solvers {
            let _ = write!(s, "{name:<10}");
            for v in &values {
                let d = rows
                    .iter()
                    .find(|r| &r.solver == name && r.value == *v)
                    .map_or(f64::NAN, |r| r.distance);
                let _ = write!(s, " | {d:>12.2e}");
            }
            let _ = writeln!(s);
        }
        s
    }

    /// Self-consistency against the time step.
    pub fn dt_table(&self) -> String {
        self.consistency_table(
            &format!(
                "Self-consistency against the time step: dragged cube for {CONSISTENCY_DURATION} s, mean distance (m) to the same solver at dt {:.0e} s (tol 1e-8, 1000 iterations)",
                self.reference_dt
            ),
            "dt",
            &self.dt_consistency,
        )
    }

    /// Self-consistency against the stopping tolerance.
    pub fn tolerance_table(&self) -> String {
        self.consistency_table(
            &format!(
                "Self-consistency against the stopping tolerance: dragged cube for {CONSISTENCY_DURATION} s at dt 1 ms, mean distance (m) to the same solver at tol {REFERENCE_TOLERANCE:.0e} ({CONSISTENCY_MAX_ITERATIONS} iterations for all)"
            ),
            "tol",
            &self.tolerance_consistency,
        )
    }

    /// Time-to-accuracy, one block per scene.
    pub fn time_to_accuracy_table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Time-to-accuracy: mean time per solve (µs) and fraction converged, cap {TTA_MAX_ITERATIONS} iterations, one solve at a time"
        );
        for h in &self.harvests {
            let _ = writeln!(
                s,
                "{}: {} problems (every {}th of {} steps{}, harvested with {}), {:.1} contacts on average, at most {}",
                h.plan.scene,
                h.problems,
                h.plan.every,
                h.plan.steps,
                if h.plan.push {
                    format!(", {QUADRUPED_PUSH} N push along x from {PUSH_START} s")
                } else {
                    String::new()
                },
                h.harvested_with,
                h.mean_contacts,
                h.max_contacts
            );
            header_row(
                &mut s,
                &format!("{:<10} {:<4}", "solver", ""),
                TTA_TOLERANCES.iter().map(|t| format!("tol {t:.0e}")),
                18,
            );
            for r in self
                .time_to_accuracy
                .iter()
                .filter(|r| r.scene == h.plan.scene)
            {
                let _ = write!(
                    s,
                    "{:<10} {:<4}",
                    r.solver,
                    if r.warm { "warm" } else { "cold" }
                );
                for p in &r.points {
                    let _ = write!(s, " | {:>9.1} µs {:>5.1}%", p.mean_us, 100.0 * p.converged);
                }
                let _ = writeln!(s);
            }
        }
        s
    }

    /// Compliance: penetration against `α`.
    pub fn compliance_table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "Compliance R = α·diag(G): penetration (m) of the resting cube after 0.5 s, and per unit α"
        );
        header_row(
            &mut s,
            "solver",
            ALPHAS.iter().map(|a| format!("α = {a:.0e}")),
            21,
        );
        for k in COMPLIANCE_SOLVERS {
            let _ = write!(s, "{:<10}", k.name());
            for r in self.compliance.iter().filter(|r| r.solver == k.name()) {
                let per = if r.per_alpha.is_nan() {
                    "-".to_string()
                } else {
                    format!("{:.3e}", r.per_alpha)
                };
                let _ = write!(s, " | {:>10.3e} {per:>10}", r.penetration);
            }
            let _ = writeln!(s);
        }
        s
    }

    /// Every table, in the order of `moreau compare`.
    pub fn render(&self) -> String {
        [
            self.table_ii(),
            self.mass_ratio_table(),
            self.dt_table(),
            self.tolerance_table(),
            self.time_to_accuracy_table(),
            self.compliance_table(),
        ]
        .join("\n")
    }
}

/// Writes `compare.json` into `dir` (created if missing); returns its path.
pub fn write_json(report: &CompareReport, dir: &Path) -> Result<PathBuf, ReportError> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join("compare.json");
    let text = serde_json::to_string_pretty(report)?;
    std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// One colour per solver of [`SolverKind::ALL`] (and black for references).
const COLORS: [RGBColor; 8] = [
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

/// A table's header line: `first` in a 10-wide column, then each label
/// right-aligned in `width` after a ` | ` separator.
fn header_row(s: &mut String, first: &str, labels: impl IntoIterator<Item = String>, width: usize) {
    let _ = write!(s, "{first:<10}");
    for label in labels {
        let _ = write!(s, " | {label:>width$}");
    }
    let _ = writeln!(s);
}
