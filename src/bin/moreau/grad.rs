//! `moreau grad`: the step Jacobians with respect to `v` and `τ` (and `q`
//! on steps without constraints) along a trajectory, timed against the step itself and against central finite
//! differences, and (with `--fd`) checked against them.

use super::*;
use moreau::State;
use moreau::sim::{StepJacobians, step_jacobians_by_differences};
use serde::Serialize;

#[derive(Serialize)]
struct GradRow {
    step: usize,
    t: f64,
    q: Vec<f64>,
    v: Vec<f64>,
    tau: Vec<f64>,
    nc: usize,
    /// Row-major nv × nv matrices.
    dv_dv: Vec<Vec<f64>>,
    dv_dtau: Vec<Vec<f64>>,
    dq_dv: Vec<Vec<f64>>,
    dq_dtau: Vec<Vec<f64>>,
    /// With respect to q: only for steps without contacts and limit rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    dv_dq: Option<Vec<Vec<f64>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dq_dq: Option<Vec<Vec<f64>>>,
}

fn rows(m: &nalgebra::DMatrix<f64>) -> Vec<Vec<f64>> {
    (0..m.nrows())
        .map(|r| m.row(r).iter().copied().collect())
        .collect()
}

/// The worst relative difference of the four Jacobians, each relative to
/// its largest entry but at least its free-flight scale (1, dt/m, dt,
/// dt²/m; m the total mass).
/// (With respect to `q` too where `a` has it: a step without constraints;
/// floors 1/dt and 1.)
fn worst_difference(a: &StepJacobians, b: &StepJacobians, dt: f64, mass: f64) -> f64 {
    let mut pairs = vec![
        (&a.dv_dv, &b.dv_dv, 1.0),
        (&a.dv_dtau, &b.dv_dtau, dt / mass),
        (&a.dq_dv, &b.dq_dv, dt),
        (&a.dq_dtau, &b.dq_dtau, dt * dt / mass),
    ];
    if a.wrt_q {
        pairs.push((&a.dv_dq, &b.dv_dq, 1.0 / dt));
        pairs.push((&a.dq_dq, &b.dq_dq, 1.0));
    }
    pairs
        .iter()
        .map(|(x, y, floor)| (*x - *y).amax() / y.amax().max(*floor))
        .fold(0.0, f64::max)
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn grad(
    name: &str,
    (file_args, passive): (&ModelFileArgs, bool),
    steps: usize,
    tolerance: f64,
    fd: Option<usize>,
    eps: f64,
    out: Option<PathBuf>,
) -> Result<(), AnyError> {
    let scene = load_scene(name, file_args, passive)?;
    let model = scene.model.clone();
    let (nv, dt) = (model.nv, scene.dt);
    let mut params = SimParams {
        dt,
        ..Default::default()
    };
    params.solver_settings.tolerance = tolerance;
    params.solver_settings.max_iterations = 5000;
    // The trajectory with plain steps (timed), its states and torques kept.
    let mut sim = Simulator::new(model.clone(), params)?;
    let mut state = scene.state.clone();
    let mut tau = DVector::zeros(nv);
    let mut path: Vec<(State, DVector<f64>)> = Vec::with_capacity(steps);
    let start = Instant::now();
    for _ in 0..steps {
        scene.control(&state, tau.as_mut_slice());
        path.push((state.clone(), tau.clone()));
        sim.step(&mut state, tau.as_slice())?;
    }
    let step_time = start.elapsed().as_secs_f64() / steps.max(1) as f64;
    // The same trajectory with the Jacobians (timed).
    let mut sim = Simulator::new(model.clone(), params)?;
    let mut jac = StepJacobians::default();
    let mut recorded = Vec::new();
    let (mut contacts, mut with_q) = (0, 0);
    let start = Instant::now();
    for (k, (s0, t0)) in path.iter().enumerate() {
        let mut s = s0.clone();
        let report = sim.step_with_jacobians(&mut s, t0.as_slice(), &mut jac)?;
        contacts += report.nc;
        with_q += usize::from(jac.wrt_q);
        if out.is_some() {
            recorded.push(GradRow {
                step: k,
                t: s0.t,
                q: s0.q.iter().copied().collect(),
                v: s0.v.iter().copied().collect(),
                tau: t0.iter().copied().collect(),
                nc: report.nc,
                dv_dv: rows(&jac.dv_dv),
                dv_dtau: rows(&jac.dv_dtau),
                dq_dv: rows(&jac.dq_dv),
                dq_dtau: rows(&jac.dq_dtau),
                dv_dq: jac.wrt_q.then(|| rows(&jac.dv_dq)),
                dq_dq: jac.wrt_q.then(|| rows(&jac.dq_dq)),
            });
        }
    }
    let jac_time = start.elapsed().as_secs_f64() / steps.max(1) as f64;
    say!(
        "{}: nv {nv}, dt {dt} s, {steps} steps, {:.2} contacts per step, solver tolerance {tolerance:e}",
        scene.name,
        contacts as f64 / steps.max(1) as f64
    );
    say!(
        "step {:.2} µs; step with its Jacobians (∂v⁺/∂v, ∂v⁺/∂τ, ∂q⁺/∂v, ∂q⁺/∂τ) {:.2} µs ({:.1}× a step)",
        1e6 * step_time,
        1e6 * jac_time,
        jac_time / step_time
    );
    if let Some(every) = fd {
        let (mut worst, mut fd_time, mut count) = (0.0f64, 0.0, 0);
        let mut sim = Simulator::new(model.clone(), params)?;
        for (k, (s0, t0)) in path.iter().enumerate() {
            let mut s = s0.clone();
            // (Warm starts as along the trajectory; the checked steps are
            // every `every`-th.)
            sim.step_with_jacobians(&mut s, t0.as_slice(), &mut jac)?;
            if k % every.max(1) != 0 {
                continue;
            }
            let t = Instant::now();
            let fdj = step_jacobians_by_differences(&model, params, s0, t0.as_slice(), eps)?;
            fd_time += t.elapsed().as_secs_f64();
            count += 1;
            worst = worst.max(worst_difference(&jac, &fdj, dt, model.total_mass()));
        }
        let per = fd_time / count.max(1) as f64;
        say!(
            "central differences ({} steps each, eps {eps:e}) {:.2} µs per Jacobian, {:.1}× the analytical Jacobians; worst relative difference over {count} steps {worst:.1e}",
            6 * nv,
            1e6 * per,
            per / (jac_time - step_time).max(1e-12)
        );
    }
    say!(
        "with respect to q: {with_q} of {steps} steps (those without contacts and limit rows); not yet with contacts, nor with respect to mu"
    );
    if let Some(path) = out {
        std::fs::write(&path, serde_json::to_string(&recorded)?)?;
        say!("Jacobians and states written to {}", path.display());
    }
    Ok(())
}
