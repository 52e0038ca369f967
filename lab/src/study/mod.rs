//! The seed study ("Contact Models in Robotics: a Comparative Analysis", Le
//! Lidec et al., T-RO 2024) as runnable experiments: the scenes, the pushes,
//! and trajectories recorded with every criterion at every step. The tests
//! (`tests/seed_findings.rs`) assert the study's findings on them, and
//! `moreau compare` prints and plots them.
//!
//! Setups (after the study's reference code): a 1 kg, 0.2 m cube with
//! `μ = 0.4`, `dt = 1 ms`; sliding at 1 m/s, 30° away from the tangent axis
//! (so not along a symmetry axis of the 4-facet pyramid); dragged by a force
//! through its centre growing at 20 N/s; a light cube under a heavy one.

use moreau::contact::{
    ContactModel, ContactSolution, ContactSolver, SolverKind, SolverSettings, contact_power,
    model_residuals, ncp_residuals, physics,
};
use moreau::error::{ModelError, SimError};
use moreau::math::Vec3;
use moreau::scenes::drive;
use moreau::scenes::{self, Scene};
use moreau::scenes::{Push, harvest, stacked_cubes_problem};
use moreau::sim::SimParams;
use nalgebra::{Quaternion, UnitQuaternion};
use std::time::Instant;

pub mod report;

/// Friction coefficient of the cube experiments (ground and cube).
pub const CUBE_MU: f64 = 0.4;
/// Initial speed of the sliding cube (m/s).
pub const SLIDE_SPEED: f64 = 1.0;
/// Angle of the sliding velocity from the contact frames' `t1` axis (degrees).
pub const SLIDE_ANGLE_DEG: f64 = 30.0;
/// Growth rate of the dragging force (N/s).
pub const DRAG_RATE: f64 = 20.0;
/// A contact slides when its tangential velocity exceeds this (m/s).
pub const SLIDE_THRESHOLD: f64 = 1e-3;
/// Standard gravity of the scenes (m/s²).
pub const GRAVITY: f64 = 9.81;

/// Short name of a contact model, as `moreau solve` and `moreau compare`
/// print it: `ncp`, `ccp`, `lcp-<facets>`; `raisim` for `None` (RaiSim's
/// fixed points solve no cone problem: its residuals are its own).
pub fn model_name(model: Option<ContactModel>) -> String {
    match model {
        Some(ContactModel::Ncp) => "ncp".into(),
        Some(ContactModel::Ccp) => "ccp".into(),
        Some(ContactModel::Lcp(p)) => format!("lcp-{}", p.facets()),
        None => "raisim".into(),
    }
}

/// One step of a trajectory, with the criteria of its contact solution.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Record {
    /// Time at the end of the step (s).
    pub t: f64,
    /// World position and linear velocity of the first body's frame origin.
    pub position: [f64; 3],
    pub velocity: [f64; 3],
    pub kinetic: f64,
    pub potential: f64,
    pub nc: usize,
    pub iterations: usize,
    pub converged: bool,
    /// The solver's own stopping residual.
    pub eps_abs: f64,
    /// The NCP's `ε_abs` of the same solution (the physical truth).
    pub eps_ncp: f64,
    pub signorini: f64,
    pub coulomb: f64,
    /// Worst MDP angle among sliding contacts (rad).
    pub mdp: f64,
    /// Internal forces (N·s) and relative to `‖λ‖`.
    pub internal: f64,
    pub internal_relative: f64,
    /// Largest normal velocity `c_N` among loaded contacts (m/s): a contact
    /// that pushes while separating.
    pub max_loaded_normal_velocity: f64,
    /// Sum of normal impulses (N·s).
    pub normal_impulse: f64,
    /// Contact power (W), negative when dissipating.
    pub power: f64,
    /// Wall time of the contact solve (s).
    pub solve_time: f64,
    /// (nc) contact impulses in world coordinates (N·s).
    pub impulses: Vec<[f64; 3]>,
}

/// A simulated trajectory.
#[derive(Clone, Debug)]
pub struct Trajectory {
    pub scene: String,
    pub solver: SolverKind,
    pub dt: f64,
    pub records: Vec<Record>,
}

impl Record {
    /// Lateral squeeze: the largest world-`y` impulse of one contact relative
    /// to `‖λ‖` (0 when `λ = 0`). For the cube dragged along `x`, the internal
    /// forces the study plots: contacts pushing the cube sideways against
    /// each other.
    pub fn lateral_squeeze(&self) -> f64 {
        let norm = self
            .impulses
            .iter()
            .flatten()
            .map(|x| x * x)
            .sum::<f64>()
            .sqrt();
        let worst = self
            .impulses
            .iter()
            .map(|l| l[1].abs())
            .fold(0.0, moreau::contact::criteria::nan_max);
        if norm > 0.0 { worst / norm } else { 0.0 }
    }
}

impl Trajectory {
    pub fn max_of(&self, f: impl Fn(&Record) -> f64) -> f64 {
        self.records
            .iter()
            .map(f)
            .fold(0.0, moreau::contact::criteria::nan_max)
    }
}

/// Simulates `scene` for `steps` steps with `params`, the scene's controller
/// and an optional push on its first body (which must be a free root), and
/// records every step.
pub fn simulate(
    scene: &Scene,
    params: SimParams,
    steps: usize,
    push: Option<Push>,
) -> Result<Trajectory, SimError> {
    let own_model = params.solver.contact_model(&params.solver_settings);
    let mut records = Vec::with_capacity(steps);
    drive(scene, params, steps, push, |sim, state, report, _| {
        let (kinetic, potential) = sim.energy(state)?;
        let q = &state.q;
        let rot = UnitQuaternion::from_quaternion(Quaternion::new(q[6], q[3], q[4], q[5]));
        let v = rot * Vec3::new(state.v[0], state.v[1], state.v[2]);
        let mut r = Record {
            t: state.t,
            position: [q[0], q[1], q[2]],
            velocity: [v.x, v.y, v.z],
            kinetic,
            potential,
            nc: report.nc,
            solve_time: report
                .times
                .get(moreau::counters::Stage::Solve)
                .as_secs_f64(),
            ..Default::default()
        };
        if let Some(stats) = report.solver {
            sim.problem_with_delassus();
            let (p, sol) = (sim.problem(), sim.solution());
            let lambda = sol.lambda.as_slice();
            r.iterations = stats.iterations;
            r.converged = stats.converged;
            r.eps_abs = match own_model {
                Some(m) => model_residuals(m, &p.mu, lambda, sol.c.as_slice()).eps_abs,
                None => stats.residuals.eps_abs,
            };
            r.eps_ncp = ncp_residuals(&p.mu, lambda, sol.c.as_slice()).eps_abs;
            let ph = physics(p, lambda, SLIDE_THRESHOLD)?;
            r.signorini = ph.signorini;
            r.coulomb = ph.coulomb;
            r.mdp = ph.mdp;
            r.internal = ph.internal;
            r.internal_relative = ph.internal_relative;
            let c = &p.delassus * &sol.lambda + &p.g;
            for i in 0..p.nc() {
                let ln = lambda[3 * i + 2];
                r.normal_impulse += ln;
                if ln > 1e-9 * lambda.iter().fold(0.0f64, |a, x| a.max(x.abs())) {
                    r.max_loaded_normal_velocity = r.max_loaded_normal_velocity.max(c[3 * i + 2]);
                }
            }
            r.power = contact_power(p, lambda, params.dt)?;
            for (i, contact) in sim.contacts().iter().enumerate() {
                let w =
                    contact.frame * Vec3::new(lambda[3 * i], lambda[3 * i + 1], lambda[3 * i + 2]);
                r.impulses.push([w.x, w.y, w.z]);
            }
        }
        records.push(r);
        Ok(())
    })?;
    Ok(Trajectory {
        scene: scene.name.clone(),
        solver: params.solver,
        dt: params.dt,
        records,
    })
}

/// Parameters of the study: the scene's time step, the given solver, the
/// study's tolerance (1e-8) and an iteration cap of 1000.
pub fn params(kind: SolverKind, dt: f64) -> SimParams {
    SimParams {
        dt,
        solver: kind,
        solver_settings: SolverSettings {
            tolerance: 1e-8,
            max_iterations: 1000,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The sliding cube: 1 kg, `μ = 0.4`, 1 m/s at 30° from `t1`.
pub fn sliding_cube() -> Result<Scene, ModelError> {
    let a = SLIDE_ANGLE_DEG.to_radians();
    scenes::cube(
        "sliding-cube",
        CUBE_MU,
        Vec3::new(a.cos(), a.sin(), 0.0) * SLIDE_SPEED,
    )
}

/// Kinetic energy of the sliding cube under Coulomb friction with maximum
/// dissipation: `½ m (v₀ − μ g t)²` until it stops (m = 1 kg).
pub fn sliding_cube_energy(t: f64) -> f64 {
    0.5 * (SLIDE_SPEED - CUBE_MU * GRAVITY * t).max(0.0).powi(2)
}

/// The cube at rest, to be dragged along `x` by [`drag_force`].
pub fn dragged_cube() -> Result<Scene, ModelError> {
    scenes::cube("dragged-cube", CUBE_MU, Vec3::zeros())
}

/// The dragging force at time `t`: `DRAG_RATE · t` along `x` (N).
pub fn drag_force(t: f64) -> Vec3 {
    Vec3::new(DRAG_RATE * t, 0.0, 0.0)
}

/// When Coulomb says the dragged cube starts to slide: `μ m g / rate` (s).
pub fn drag_slip_time() -> f64 {
    CUBE_MU * GRAVITY / DRAG_RATE
}

/// One row of the mass-ratio study: a solver on the stacked cubes' problem.
#[derive(Clone, Copy, Debug)]
pub struct RatioResult {
    pub solver: SolverKind,
    pub ratio: f64,
    pub iterations: usize,
    /// Reached its own tolerance within the cap.
    pub converged: bool,
    /// Its own stopping residual, and the NCP's `ε_abs` of its solution.
    pub eps_abs: f64,
    pub eps_ncp: f64,
}

/// Solves the stacked cubes' problem for each ratio with each solver, cold,
/// at `settings`.
pub fn mass_ratio_study(
    ratios: &[f64],
    solvers: &[SolverKind],
    settings: &SolverSettings,
) -> Result<Vec<RatioResult>, SimError> {
    let mut out = Vec::new();
    for &ratio in ratios {
        let p = stacked_cubes_problem(ratio)?;
        for &kind in solvers {
            let mut sol = ContactSolution::default();
            if kind.build().solve(&p, settings, &mut sol).is_err() {
                // A solver that fails outright (e.g. diverges) is a row of the study, not its end.
                out.push(RatioResult {
                    solver: kind,
                    ratio,
                    iterations: settings.max_iterations,
                    converged: false,
                    eps_abs: f64::INFINITY,
                    eps_ncp: f64::INFINITY,
                });
                continue;
            }
            let eps_abs = match kind.contact_model(settings) {
                Some(m) => {
                    model_residuals(m, &p.mu, sol.lambda.as_slice(), sol.c.as_slice()).eps_abs
                }
                None => sol.stats.residuals.eps_abs,
            };
            out.push(RatioResult {
                solver: kind,
                ratio,
                iterations: sol.stats.iterations,
                converged: sol.stats.converged,
                eps_abs,
                eps_ncp: ncp_residuals(&p.mu, sol.lambda.as_slice(), sol.c.as_slice()).eps_abs,
            });
        }
    }
    Ok(out)
}

/// Penetration (m, positive) of the resting cube after 0.5 s with the
/// MuJoCo-like compliance `R = α·diag(G)`, using `kind`.
pub fn compliant_penetration(kind: SolverKind, alpha: f64) -> Result<f64, SimError> {
    let scene = scenes::cube("compliant-cube", CUBE_MU, Vec3::zeros()).map_err(|e| {
        SimError::InvalidParameter {
            name: "scene",
            reason: e.to_string(),
        }
    })?;
    let mut p = params(kind, scene.dt);
    p.compliance = alpha;
    let traj = simulate(&scene, p, 500, None)?;
    let z = traj.records.last().map(|r| r.position[2]).unwrap_or(0.1);
    Ok(0.1 - z)
}

/// Self-consistency: the mean distance (m) between the first body's
/// trajectory at time step `dt` and a reference at `dt_ref`, over
/// `duration`, sampled at the coarse steps (the study's `Σ‖q − q̄‖Δt / T`).
pub fn trajectory_distance(coarse: &Trajectory, reference: &Trajectory) -> f64 {
    let mut sum = 0.0;
    let mut n = 0;
    for r in &coarse.records {
        // The reference record closest in time.
        let k = ((r.t / reference.dt).round() as usize).saturating_sub(1);
        if let Some(q) = reference.records.get(k) {
            let d = (0..3)
                .map(|i| (r.position[i] - q.position[i]).powi(2))
                .sum::<f64>()
                .sqrt();
            sum += d;
            n += 1;
        }
    }
    if n > 0 { sum / n as f64 } else { f64::NAN }
}

/// Time-to-accuracy of one solver on a set of problems: for each tolerance,
/// the mean wall time per solve (s) and the fraction of solves that reached it.
#[derive(Clone, Debug)]
pub struct TimeToAccuracy {
    pub solver: SolverKind,
    pub warm: bool,
    /// (tolerance, mean time per solve in s, fraction converged)
    pub points: Vec<(f64, f64, f64)>,
}

/// Measures [`TimeToAccuracy`] for `kind` on `problems`, cold (warm start
/// dropped) or warm (the simulator's warm start kept), at each tolerance.
pub fn time_to_accuracy(
    kind: SolverKind,
    problems: &[moreau::contact::ContactProblem],
    tolerances: &[f64],
    warm: bool,
    max_iterations: usize,
) -> Result<TimeToAccuracy, SimError> {
    let mut solver: Box<dyn ContactSolver> = kind.build();
    let mut sol = ContactSolution::default();
    let mut points = Vec::new();
    let cold: Vec<_> = problems
        .iter()
        .map(|p| {
            let mut p = p.clone();
            if !warm {
                p.warm_start.fill(0.0);
            }
            p
        })
        .collect();
    for &tol in tolerances {
        let settings = SolverSettings {
            tolerance: tol,
            max_iterations,
            ..Default::default()
        };
        let mut time = 0.0;
        let mut ok = 0;
        for p in &cold {
            let start = Instant::now();
            let solved = solver.solve(p, &settings, &mut sol);
            time += start.elapsed().as_secs_f64();
            // A failed solve counts as not converged.
            ok += (solved.is_ok() && sol.stats.converged) as usize;
        }
        let n = cold.len().max(1) as f64;
        points.push((tol, time / n, ok as f64 / n));
    }
    Ok(TimeToAccuracy {
        solver: kind,
        warm,
        points,
    })
}
