//! `moreau grad`: the step Jacobians with respect to `v`, `τ`, `q` (see
//! `StepJacobians::wrt_q` and `q_residual`) and the
//! friction coefficients along a trajectory, timed against the step itself
//! and against central finite differences, and (with `--fd`) checked
//! against them.

use super::*;
use moreau::State;
use moreau::sim::{Q_EXACT_RESIDUAL, QSide, StepJacobians, step_jacobians_by_differences};
use nalgebra::DMatrix;
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
    /// With respect to q: where the step is differentiable in q.
    #[serde(skip_serializing_if = "Option::is_none")]
    dv_dq: Option<Vec<Vec<f64>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dq_dq: Option<Vec<Vec<f64>>>,
    /// nv × nc: with respect to each contact's friction coefficient.
    dv_dmu: Vec<Vec<f64>>,
}

fn rows(m: &nalgebra::DMatrix<f64>) -> Vec<Vec<f64>> {
    (0..m.nrows())
        .map(|r| m.row(r).iter().copied().collect())
        .collect()
}

/// The worst relative differences of the Jacobians with respect to `v`
/// and `τ`, each relative to its largest entry but at least its
/// free-flight scale (1, dt/m, dt, dt²/m; m the total mass), over the
/// columns whose side is [`QSide::Both`] (`a`'s `v_sides`, `tau_sides`:
/// central differences straddle the others' boundaries) and over the
/// others; and of those with respect to `q` (floors 1/dt and 1).
fn worst_differences(a: &StepJacobians, b: &StepJacobians, dt: f64, mass: f64) -> [f64; 3] {
    type Pair<'a> = (&'a DMatrix<f64>, &'a DMatrix<f64>, f64, &'a [QSide]);
    let worst = |pairs: &[Pair], smooth: bool| {
        let mut e = 0.0f64;
        for (x, y, floor, sides) in pairs {
            let scale = y.amax().max(*floor);
            for k in 0..x.ncols() {
                let both = sides.get(k).is_none_or(|s| *s == QSide::Both);
                if both == smooth {
                    e = e.max((x.column(k) - y.column(k)).amax() / scale);
                }
            }
        }
        e
    };
    let (v, t) = (&a.v_sides[..], &a.tau_sides[..]);
    let vt: [Pair; 4] = [
        (&a.dv_dv, &b.dv_dv, 1.0, v),
        (&a.dv_dtau, &b.dv_dtau, dt / mass, t),
        (&a.dq_dv, &b.dq_dv, dt, v),
        (&a.dq_dtau, &b.dq_dtau, dt * dt / mass, t),
    ];
    let q: [Pair; 2] = [
        (&a.dv_dq, &b.dv_dq, 1.0 / dt, &[]),
        (&a.dq_dq, &b.dq_dq, 1.0, &[]),
    ];
    [worst(&vt, true), worst(&vt, false), worst(&q, true)]
}

/// Whether a contact or a joint stop of the step just taken is within
/// `eps` of distance 0, where the stabilization's slope changes (`φ/dt` on
/// a gap, `βφ/dt` in penetration): central differences in `q` straddle it.
fn at_kink(sim: &Simulator, eps: f64) -> bool {
    sim.contacts().iter().any(|c| c.distance.abs() <= eps)
        || sim.limits().iter().any(|l| l.distance.abs() <= eps)
}

pub(crate) fn grad(
    name: &str,
    (file_args, passive): (&ModelFileArgs, bool),
    steps: usize,
    tolerance: f64,
    (fd, eps): (Option<usize>, f64),
    repeats: usize,
    out: Option<PathBuf>,
) -> Result<(), AnyError> {
    let scene = load_scene(name, file_args, passive)?;
    let model = scene.model.clone();
    let (nv, dt) = (model.nv, scene.dt);
    let mut params = SimParams::with_dt(dt);
    params.solver_settings.tolerance = tolerance;
    params.solver_settings.max_iterations = 5000;
    // The trajectory, its states and torques kept.
    let mut sim = Simulator::new(model.clone(), params)?;
    let mut state = scene.state.clone();
    let mut tau = DVector::zeros(nv);
    let mut path: Vec<(State, DVector<f64>)> = Vec::with_capacity(steps);
    for _ in 0..steps {
        scene.control(&state, tau.as_mut_slice());
        path.push((state.clone(), tau.clone()));
        sim.step(&mut state, tau.as_slice())?;
    }
    // Its steps taken again from the kept states, plain and with their
    // Jacobians, each by a fresh simulator (warm starts as along the
    // trajectory), in alternating timed passes: the fastest of each.
    let mut jac = StepJacobians::default();
    let (mut contacts, mut with_q, mut exact_q) = (0, 0, 0);
    let (mut step_time, mut jac_time) = (f64::INFINITY, f64::INFINITY);
    let per_step = |start: Instant| start.elapsed().as_secs_f64() / steps.max(1) as f64;
    for pass in 0..repeats.max(1) {
        let mut sim = Simulator::new(model.clone(), params)?;
        let start = Instant::now();
        for (s0, t0) in &path {
            let mut s = s0.clone();
            sim.step(&mut s, t0.as_slice())?;
        }
        step_time = step_time.min(per_step(start));
        let mut sim = Simulator::new(model.clone(), params)?;
        let start = Instant::now();
        for (s0, t0) in &path {
            let mut s = s0.clone();
            let report = sim.step_with_jacobians(&mut s, t0.as_slice(), &mut jac)?;
            if pass == 0 {
                contacts += report.nc;
                with_q += usize::from(jac.wrt_q);
                exact_q += usize::from(jac.wrt_q && jac.q_residual <= Q_EXACT_RESIDUAL);
            }
        }
        jac_time = jac_time.min(per_step(start));
    }
    // The Jacobians written out (untimed).
    let mut recorded = Vec::new();
    if out.is_some() {
        let mut sim = Simulator::new(model.clone(), params)?;
        for (k, (s0, t0)) in path.iter().enumerate() {
            let mut s = s0.clone();
            let report = sim.step_with_jacobians(&mut s, t0.as_slice(), &mut jac)?;
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
                dv_dmu: rows(&jac.dv_dmu),
            });
        }
    }
    say!(
        "{}: nv {nv}, dt {dt} s, {steps} steps, {:.2} contacts per step, solver tolerance {tolerance:e}",
        scene.name,
        contacts as f64 / steps.max(1) as f64
    );
    say!(
        "step {:.2} µs; step with its Jacobians (∂v⁺/∂v, ∂v⁺/∂τ, ∂v⁺/∂q, ∂v⁺/∂μ and those of q⁺) {:.2} µs ({:.1}× a step; fastest of {repeats} passes each)",
        1e6 * step_time,
        1e6 * jac_time,
        jac_time / step_time
    );
    say!(
        "with respect to q: {with_q} of {steps} steps (the others have a contact whose features' derivatives are not written), {exact_q} exact (the others not differentiable in q, with the least-squares derivative: see StepJacobians::q_residual)"
    );
    if let Some(every) = fd {
        let (mut worst, mut worst_q, mut fd_time, mut count, mut count_q, mut kinks) =
            (0.0f64, 0.0f64, 0.0, 0, 0, 0);
        // Columns of v and τ on a boundary (not `Both`), and the worst
        // difference there.
        let (mut sided, mut columns, mut worst_sided) = (0, 0, 0.0f64);
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
            let [e, e_sided, e_q] = worst_differences(&jac, &fdj, dt, model.total_mass());
            worst = worst.max(e);
            worst_sided = worst_sided.max(e_sided);
            columns += jac.v_sides.len() + jac.tau_sides.len();
            sided += (jac.v_sides.iter().chain(&jac.tau_sides))
                .filter(|s| **s != QSide::Both)
                .count();
            let exact = jac.wrt_q && jac.q_residual <= Q_EXACT_RESIDUAL;
            if exact && at_kink(&sim, 2.0 * eps) {
                kinks += 1;
            } else if exact {
                count_q += 1;
                worst_q = worst_q.max(e_q);
            }
        }
        let per = fd_time / count.max(1) as f64;
        say!(
            "central differences ({} steps each, eps {eps:e}) {:.2} µs per Jacobian, {:.1}× the analytical Jacobians; worst relative difference over {count} steps {worst:.1e} (v, τ; the two-sided columns)",
            6 * nv,
            1e6 * per,
            per / (jac_time - step_time).max(1e-12)
        );
        say!(
            "with respect to v and τ: {sided} of {columns} columns one-sided or on a kink (StepJacobians::v_sides, tau_sides), where central differences straddle a change of mode: worst relative difference there {worst_sided:.1e}"
        );
        say!(
            "with respect to q: worst relative difference over {count_q} steps {worst_q:.1e} (steps with exact derivatives; {kinks} with a contact or a stop within 2·eps of distance 0, where the stabilization's slope changes, not compared)"
        );
    }
    if let Some(path) = out {
        std::fs::write(&path, serde_json::to_string(&recorded)?)?;
        say!("Jacobians and states written to {}", path.display());
    }
    Ok(())
}
