//! The built-in tasks by name, with their parameters set by name (what the
//! Python package's `moreau.Task` takes), and a check of a task's written
//! derivatives against central differences.

use super::{
    BoxPush, CartPoleSwingUp, EnvError, InputGradient, QuadrupedWalk, Task, Transition,
    TransitionGradient,
};
use crate::sim::State;

/// The names [`make_task`] knows.
pub const TASK_NAMES: &[&str] = &[
    "cartpole-swingup",
    "quadruped-walk",
    "quadruped-stand-up",
    "box-push",
];

/// A positive finite value (`what`: its name and unit, for the error).
pub(crate) fn positive(value: f64, what: &str) -> Result<f64, String> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(format!("must be a positive {what}, got {value}"))
    }
}

/// A finite value ≥ 0 (`what`: its name and unit, for the error).
pub(crate) fn non_negative(value: f64, what: &str) -> Result<f64, String> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(format!("must be a {what} ≥ 0, got {value}"))
    }
}

/// A positive physics time step.
pub(crate) fn time_step(value: f64) -> Result<f64, String> {
    positive(value, "time step (s)")
}

/// A count of at least 1 given as a float.
pub(crate) fn count(value: f64) -> Result<usize, String> {
    if value.is_finite() && value >= 1.0 && value.fract() == 0.0 && value <= u32::MAX as f64 {
        Ok(value as usize)
    } else {
        Err(format!("must be a whole number ≥ 1, got {value}"))
    }
}

/// A finite value.
pub(crate) fn finite(value: f64) -> Result<f64, String> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(format!("must be finite, got {value}"))
    }
}

/// The built-in task `name` ([`TASK_NAMES`]) with `parameters` set (each
/// name one of the task's [`Task::parameters`]). An unknown task or
/// parameter, or a value out of range, is refused naming it.
pub fn make_task(name: &str, parameters: &[(&str, f64)]) -> Result<Box<dyn Task>, EnvError> {
    fn with<T: Task + 'static>(
        mut task: T,
        parameters: &[(&str, f64)],
    ) -> Result<Box<dyn Task>, EnvError> {
        for &(key, value) in parameters {
            let known = task.parameters();
            if !known.iter().any(|(k, _)| *k == key) {
                let names: Vec<&str> = known.iter().map(|(k, _)| *k).collect();
                return Err(EnvError::Task {
                    task: task.name().to_string(),
                    reason: format!("no parameter `{key}` (it has: {})", names.join(", ")),
                });
            }
            task.set_parameter(key, value)
                .map_err(|why| EnvError::Task {
                    task: task.name().to_string(),
                    reason: format!("parameter `{key}` {why}"),
                })?;
        }
        Ok(Box::new(task))
    }
    match name {
        "cartpole-swingup" => with(CartPoleSwingUp::new(), parameters),
        "quadruped-walk" => with(QuadrupedWalk::new(), parameters),
        "quadruped-stand-up" => with(QuadrupedWalk::stand_up(), parameters),
        "box-push" => with(BoxPush::new(), parameters),
        _ => Err(EnvError::Task {
            task: name.to_string(),
            reason: format!("no such task (known: {})", TASK_NAMES.join(", ")),
        }),
    }
}

/// The worst disagreement between a task's written derivatives and central
/// differences of its functions, per function: `max |J_written − J_diff|`
/// over the Jacobian's entries, relative to its largest entry `max
/// |J_diff|`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DerivativeCheck {
    pub observe: f64,
    pub torques: f64,
    pub reward: f64,
}

/// Checks [`Task::observe_vjp`] (at `t.prev`), [`Task::torques_vjp`] (at
/// `t.prev` under `t.action`) and [`Task::reward_vjp`] (of `t`) against
/// central differences: every Jacobian entry, one input coordinate at a
/// time, of step `eps` (the observation is rounded to f32, so its
/// differences use `max(eps, 1e-3)`). Quaternions are perturbed as four
/// free coordinates, as the derivatives are defined.
pub fn check_task_derivatives(
    task: &dyn Task,
    t: &Transition,
    eps: f64,
) -> Result<DerivativeCheck, EnvError> {
    let (prev, next, action, episode, energy, dt) =
        (t.prev, t.state, t.action, t.episode, t.energy, t.dt);
    let (nq, nv, na) = (prev.q.len(), prev.v.len(), action.len());
    let no = task.observation_space().dim();
    let worst = |written: &[f64], diff: &[f64]| {
        let scale = diff.iter().fold(0.0, |m: f64, d| m.max(d.abs())).max(1e-12);
        written
            .iter()
            .zip(diff)
            .map(|(w, d)| (w - d).abs() / scale)
            .fold(0.0, f64::max)
    };
    // Perturbs coordinate k of (q, v, action) of a copy.
    let perturbed = |state: &State, action: &[f64], k: usize, h: f64| {
        let (mut s, mut a) = (state.clone(), action.to_vec());
        if k < nq {
            s.q[k] += h;
        } else if k < nq + nv {
            s.v[k - nq] += h;
        } else {
            a[k - nq - nv] += h;
        }
        (s, a)
    };

    // Observation: (no) × (nq + nv).
    let h_obs = eps.max(1e-3);
    let mut written = Vec::new();
    let mut diff = Vec::new();
    let observe = |s: &State| {
        let mut out = vec![0f32; no];
        task.observe(s, episode, &mut out);
        out
    };
    for i in 0..no {
        let mut grad = InputGradient::zeros(nq, nv, na);
        let mut g = vec![0.0; no];
        g[i] = 1.0;
        task.observe_vjp(prev, episode, &g, &mut grad)?;
        written.extend(grad.q.iter().chain(&grad.v).copied());
        for k in 0..nq + nv {
            let (plus, _) = perturbed(prev, action, k, h_obs);
            let (minus, _) = perturbed(prev, action, k, -h_obs);
            diff.push((observe(&plus)[i] as f64 - observe(&minus)[i] as f64) / (2.0 * h_obs));
        }
    }
    let observe_error = worst(&written, &diff);

    // Torques: (nv) × (nq + nv + na).
    let torques = |s: &State, a: &[f64]| {
        let mut tau = vec![0.0; nv];
        task.torques(s, a, episode, &mut tau);
        tau
    };
    let (mut written, mut diff) = (Vec::new(), Vec::new());
    for i in 0..nv {
        let mut grad = InputGradient::zeros(nq, nv, na);
        let mut g = vec![0.0; nv];
        g[i] = 1.0;
        task.torques_vjp(prev, action, episode, &g, &mut grad)?;
        written.extend(grad.q.iter().chain(&grad.v).chain(&grad.action).copied());
        for k in 0..nq + nv + na {
            let (sp, ap) = perturbed(prev, action, k, eps);
            let (sm, am) = perturbed(prev, action, k, -eps);
            diff.push((torques(&sp, &ap)[i] - torques(&sm, &am)[i]) / (2.0 * eps));
        }
    }
    let torques_error = worst(&written, &diff);

    // Reward: 1 × (prev q, v; next q, v, action; energy).
    let reward = |p: &State, n: &State, a: &[f64], e: f64| {
        task.reward(&Transition {
            prev: p,
            state: n,
            action: a,
            episode,
            energy: e,
            dt,
        })
    };
    let mut grad = TransitionGradient::zeros(nq, nv, na);
    task.reward_vjp(t, 1.0, &mut grad)?;
    let mut written: Vec<f64> = grad.prev.q.iter().chain(&grad.prev.v).copied().collect();
    written.extend(
        grad.next
            .q
            .iter()
            .chain(&grad.next.v)
            .chain(&grad.next.action),
    );
    written.push(grad.energy);
    let mut diff = Vec::new();
    for k in 0..nq + nv {
        let (pp, _) = perturbed(prev, action, k, eps);
        let (pm, _) = perturbed(prev, action, k, -eps);
        diff.push(
            (reward(&pp, next, action, energy) - reward(&pm, next, action, energy)) / (2.0 * eps),
        );
    }
    for k in 0..nq + nv + na {
        let (np, ap) = perturbed(next, action, k, eps);
        let (nm, am) = perturbed(next, action, k, -eps);
        diff.push((reward(prev, &np, &ap, energy) - reward(prev, &nm, &am, energy)) / (2.0 * eps));
    }
    diff.push(
        (reward(prev, next, action, energy + eps) - reward(prev, next, action, energy - eps))
            / (2.0 * eps),
    );
    let reward_error = worst(&written, &diff);
    Ok(DerivativeCheck {
        observe: observe_error,
        torques: torques_error,
        reward: reward_error,
    })
}
