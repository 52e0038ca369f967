//! The resident step's time per stage (`ResidentBatch::set_stage_timing`):
//! the stages submitted one by one change nothing the worlds do (the same
//! trajectories, bit for bit, as the untimed steps), every timed step is
//! counted, each stage takes time on the host's clock and, where the
//! adapter has timestamp queries (lavapipe does), on the device's; and
//! `BatchSim` passes it through.

mod common;

use moreau::batch::{Backend, BatchOptions, BatchSim};
use moreau::gpu::GpuContext;
use moreau::gpu::resident::ResidentBatch;
use moreau::sim::SimParams;
use std::time::Duration;

#[test]
fn timed_stages_leave_the_trajectory_as_it_was_and_time_each_stage() {
    let Some(ctx) = GpuContext::for_tests() else {
        return;
    };
    // With contacts (the step kernel, the solve, the finish), and without
    // (the step kernel alone).
    for (name, with_contacts) in [("quadruped", true), ("cartpole", false)] {
        let scene = moreau::scenes::scene(name).unwrap();
        let model = &scene.model;
        let mut params = SimParams {
            dt: scene.dt,
            ..SimParams::default()
        };
        params.solver_settings.tolerance = 1e-6;
        let n = 3;
        let states = vec![scene.state.clone(); n];
        let torques = |k: usize| -> Vec<f64> {
            (0..n * model.nv)
                .map(|i| 0.5 * ((i * 7 + k * 3) % 11) as f64 / 11.0 - 0.25)
                .collect()
        };
        let steps = 12;
        let mut plain = ResidentBatch::new(&ctx, model, &params, &states, n).unwrap();
        let mut timed = ResidentBatch::new(&ctx, model, &params, &states, n).unwrap();
        assert!(timed.stage_times().is_none());
        timed.set_stage_timing(true);
        // Some steps as one call of two repeats under the same torques.
        let mut k = 0;
        while k < steps {
            let tau = torques(k);
            let repeats = if k % 4 == 0 { 2 } else { 1 };
            for _ in 0..repeats {
                plain.step(&tau).unwrap();
            }
            timed
                .step_repeated(moreau::sim::Actuation::Torques(&tau), None, repeats)
                .unwrap();
            k += repeats;
        }
        let (a, flagged_a) = plain.states().unwrap();
        let (b, flagged_b) = timed.states().unwrap();
        assert!(flagged_a.is_empty() && flagged_b.is_empty(), "{name}");
        for (w, (x, y)) in a.iter().zip(&b).enumerate() {
            assert_eq!(x.q, y.q, "{name}: world {w}'s q");
            assert_eq!(x.v, y.v, "{name}: world {w}'s v");
        }
        let t = timed.stage_times().unwrap();
        println!("{name}: {t:?}");
        assert_eq!(t.steps, steps as u64, "{name}");
        assert!(t.host.step > Duration::ZERO, "{name}: {t:?}");
        assert_eq!(t.device_measured, ctx.timestamps, "{name}");
        if ctx.timestamps {
            assert!(t.device.step > Duration::ZERO, "{name}: {t:?}");
        }
        if with_contacts {
            assert!(
                t.host.solve > Duration::ZERO && t.host.finish > Duration::ZERO,
                "{name}: {t:?}"
            );
            if ctx.timestamps {
                assert!(
                    t.device.solve > Duration::ZERO && t.device.finish > Duration::ZERO,
                    "{name}: {t:?}"
                );
            }
        } else {
            assert_eq!(
                (t.host.solve, t.host.finish),
                (Duration::ZERO, Duration::ZERO),
                "{name}"
            );
        }
        timed.reset_stage_times();
        assert_eq!(timed.stage_times().unwrap().steps, 0);
        timed.set_stage_timing(false);
        assert!(timed.stage_times().is_none());
    }
}

#[test]
fn batch_sim_times_its_resident_stages_when_asked() {
    let scene = moreau::scenes::scene("quadruped").unwrap();
    let mut options = BatchOptions {
        backend: Backend::Gpu,
        ..Default::default()
    };
    options.params.dt = scene.dt;
    let Some(mut batch) = common::gpu_batch(scene.model.clone(), &scene.state, 4, &options) else {
        return;
    };
    assert!(batch.is_resident());
    assert!(batch.resident_stage_times().is_none());
    assert!(batch.set_resident_stage_timing(true));
    let tau = vec![0.0; 4 * scene.model.nv];
    for _ in 0..3 {
        batch.step(&tau).unwrap();
    }
    let t = batch.resident_stage_times().unwrap();
    assert_eq!(t.steps, 3);
    assert!(t.host.total() > Duration::ZERO);
    // A CPU batch has no resident stages to time.
    let mut cpu = BatchSim::new(
        scene.model.clone(),
        &scene.state,
        2,
        &BatchOptions {
            backend: Backend::CpuSingle,
            ..options
        },
    )
    .unwrap();
    assert!(!cpu.set_resident_stage_timing(true));
    assert!(cpu.resident_stage_times().is_none());
}
