//! `moreau compare`: every solver of the catalog through the seed study's
//! experiments, measured, tabulated and plotted.
//!
//! [`compare`] runs the experiments (this file), ([`CompareReport`] holds every number);
//! [`CompareReport::render`] prints the tables (the study's Table II decided
//! from measurements, with the thresholds in a legend under it);
//! (`render.rs`); [`write_plots`] (`plots.rs`) draws `energy.svg`, `internal_forces.svg`,
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
use moreau::contact::{ContactProblem, SolverKind, SolverSettings};
use moreau::math::Vec3;
use moreau::scenes;
use rayon::prelude::*;
use serde::Serialize;
use std::fmt::Write as _;
use std::time::Instant;

pub(crate) mod plots;
mod render;

pub use plots::write_plots;
pub use render::{TABLE_II_TITLE, write_json};

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
