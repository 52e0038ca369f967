//! Criterion benches of one step beside the same step with its Jacobians
//! (`Simulator::step_with_jacobians`: of v⁺ and q⁺ with respect to q, v,
//! τ and μ) and with a vector–Jacobian product (`step_with_vjp`), on the
//! built-in quadruped and, when `scripts/fetch-robot-files` has run, on
//! Gymnasium's half-cheetah, ant and humanoid and example-robot-data's UR5,
//! Solo-12 and Talos, each under its PD after 300 steps, solver tolerance
//! 1e-10. (Central differences cost `6 nv` such steps, and more from a
//! cold start: `moreau grad FILE --fd` times them.)
//!
//! `cargo bench --bench gradients`

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use moreau::scenes::{self, Scene};
use moreau::sim::{SimParams, Simulator, StepJacobians, StepVjp};
use nalgebra::DVector;
use std::time::Duration;

fn scenes_to_bench() -> Vec<Scene> {
    let mut out = vec![scenes::scene("quadruped").unwrap()];
    if let Some(files) = common::robot_files() {
        let erd = &files.example_robot_data;
        for path in [
            files.gymnasium_assets.join("half_cheetah.xml"),
            files.gymnasium_assets.join("ant.xml"),
            files.gymnasium_assets.join("humanoid.xml"),
            erd.join("ur_description/urdf/ur5_robot.urdf"),
            erd.join("solo_description/robots/solo12.urdf"),
            erd.join("talos_data/robots/talos_full_v2.urdf"),
        ] {
            let Ok(loaded) = moreau::load::load_model_file(&path, &Default::default()) else {
                continue;
            };
            out.push(scenes::from_loaded(&loaded, false).unwrap());
        }
    }
    out
}

fn steps(c: &mut Criterion) {
    for scene in scenes_to_bench() {
        let mut group = c.benchmark_group(format!("gradients/{}-nv{}", scene.name, scene.model.nv));
        group
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2))
            .sample_size(20);
        let mut params = SimParams {
            dt: scene.dt,
            ..Default::default()
        };
        params.solver_settings.tolerance = 1e-10;
        params.solver_settings.max_iterations = 2000;
        let mut sim = Simulator::new(scene.model.clone(), params).unwrap();
        let mut state = scene.state.clone();
        let mut tau = DVector::zeros(scene.model.nv);
        for _ in 0..300 {
            scene.control(&state, tau.as_mut_slice());
            sim.step(&mut state, tau.as_slice()).unwrap();
        }
        scene.control(&state, tau.as_mut_slice());
        let nc = sim.contacts().len();
        group.bench_function(format!("step-{nc}contacts"), |b| {
            b.iter(|| {
                let mut s = state.clone();
                sim.step(&mut s, tau.as_slice()).unwrap().nc
            })
        });
        let mut jac = StepJacobians::default();
        group.bench_function(format!("step-with-jacobians-{nc}contacts"), |b| {
            b.iter(|| {
                let mut s = state.clone();
                sim.step_with_jacobians(&mut s, tau.as_slice(), &mut jac)
                    .unwrap()
                    .nc
            })
        });
        let w = vec![1.0; scene.model.nv];
        let mut vjp = StepVjp::default();
        group.bench_function(format!("step-with-vjp-{nc}contacts"), |b| {
            b.iter(|| {
                let mut s = state.clone();
                sim.step_with_vjp(&mut s, tau.as_slice(), (&w, &w), &mut jac, &mut vjp)
                    .unwrap()
                    .nc
            })
        });
        group.finish();
    }
}

criterion_group!(benches, steps);
criterion_main!(benches);
