//! Resident worlds with contacts (issue 34): collision, Delassus, the
//! solve in place and the finish on the device, against the f64 CPU step
//! (`Simulator`) of the same model, solver and parameters.

mod common;

use moreau::gpu::GpuContext;
use moreau::gpu::resident::{ResidentBatch, contacts::device_pairs};
use moreau::model::Model;
use moreau::sim::{SimParams, Simulator, State};
use std::sync::Arc;

/// `steps` CPU steps of `model` from `state` under `tau` (per step).
fn cpu_trajectory(
    model: &Model,
    params: &SimParams,
    state: &State,
    steps: usize,
    tau: impl Fn(usize) -> Vec<f64>,
) -> Vec<State> {
    let mut sim = Simulator::new(Arc::new(model.clone()), *params).unwrap();
    let mut s = state.clone();
    let mut out = Vec::with_capacity(steps);
    for k in 0..steps {
        sim.step(&mut s, &tau(k)).unwrap();
        out.push(s.clone());
    }
    out
}

fn max_abs_diff(a: &[f64], b: impl Iterator<Item = f64>) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

#[test]
fn seed_scenes_step_resident_as_on_the_cpu() {
    let Some(ctx) = GpuContext::for_tests() else {
        return;
    };
    for (name, steps, tol_q) in [
        ("ball-drop", 300, 2e-3),
        ("cube-resting", 200, 1e-3),
        ("cube-sliding", 300, 2e-3),
    ] {
        let scene = moreau::scenes::scene(name).unwrap();
        let model = &scene.model;
        assert!(!device_pairs(model).unwrap().is_empty(), "{name}");
        let params = SimParams {
            dt: scene.dt,
            ..SimParams::default()
        };
        let zero = vec![0.0; model.nv];
        let want = cpu_trajectory(model, &params, &scene.state, steps, |_| zero.clone());
        let mut gpu =
            ResidentBatch::new(&ctx, model, &params, std::slice::from_ref(&scene.state), 2)
                .unwrap();
        let mut worst = (0.0f64, 0);
        for (k, w) in want.iter().enumerate() {
            gpu.step(&vec![0.0; 2 * model.nv]).unwrap();
            if k % 25 == 24 || k + 1 == steps {
                let (states, flagged) = gpu.states().unwrap();
                assert!(flagged.is_empty(), "{name}: step {k}: flagged {flagged:?}");
                for s in &states {
                    let d = max_abs_diff(w.q.as_slice(), s.q.iter().copied());
                    if d > worst.0 {
                        worst = (d, k);
                    }
                }
            }
        }
        let last = &want[steps - 1];
        println!(
            "{name}: {steps} steps, worst |Δq| {:.2e} (step {}), final q {:?}",
            worst.0,
            worst.1,
            last.q.as_slice()
        );
        assert!(worst.0 < tol_q, "{name}: |Δq| {} at step {}", worst.0, worst.1);
    }
}
