//! Gymnasium's nine v5 tasks on the `gpu` backend against `cpu`, with
//! episodes ending and Philox resets: each environment step starts both
//! batches from the CPU's states (f32 physics drifts from f64 within tens
//! of steps on the contact tasks, so whole trajectories are not
//! comparable), steps the frame skip on each, and compares the
//! observations, rewards and terminations; the states after resets are the
//! same on both (`tests/gymnasium_tasks.rs` has them bit for bit across the
//! CPU backends; on `gpu` the tasks the device evaluates (all nine) draw them
//! there, in f32, and compute their outputs there). On lavapipe in CI
//! (`MOREAU_REQUIRE_GPU=1`).

mod common;

use moreau::batch::{Backend, BatchSim};
use moreau::envs::Rng;
use moreau::envs::gymnasium::{GymBatch, GymKind};

const WORLDS: usize = 4;
const STEPS: usize = 500;

fn setup(kind: GymKind, backend: Backend) -> Option<(BatchSim, GymBatch)> {
    let (file, frame_skip, _) = kind.registration();
    let (batch, mut gym) = common::gym_batch(file, kind, WORLDS, backend, frame_skip)?;
    gym.seed(&[true; WORLDS], &[11, 12, 13, 14]).unwrap();
    Some((batch, gym))
}

#[test]
fn every_task_observes_rewards_and_ends_alike_on_gpu_and_cpu() {
    for kind in GymKind::ALL {
        let Some((mut cpu, mut gc)) = setup(kind, Backend::CpuParallel) else {
            return;
        };
        let Some((mut gpu, mut gg)) = setup(kind, Backend::Gpu) else {
            return;
        };
        let nu = cpu.model().nu();
        let mut rng = Rng::new(3);
        let mut reset = vec![true; WORLDS];
        let (mut worst_obs, mut worst_reward, mut ends, mut ended_alike) = (0.0f64, 0.0f64, 0, 0);
        // World-steps whose observation differs by more than 1e-2 (relative
        // to 1 + |x|): where a contact or a stop switched within the frame
        // skip on one backend and not the other.
        let mut apart = 0;
        for step in 0..STEPS {
            // The worlds whose episode ended: Philox resets on both, the
            // same states.
            if reset.iter().any(|&r| r) {
                gc.reset_worlds(&mut cpu, &reset).unwrap();
                gg.reset_worlds(&mut gpu, &reset).unwrap();
                // Drawn on the device (in f32) for the tasks it evaluates,
                // on the host (the same f64 numbers) for the others.
                let device = gg.on_device() == Some(&Ok(()));
                for w in (0..WORLDS).filter(|&w| reset[w]) {
                    let (a, b) = (cpu.state(w).unwrap(), gpu.state(w).unwrap());
                    if device {
                        let e = (a.q.iter().chain(&a.v).zip(b.q.iter().chain(&b.v)))
                            .map(|(x, y)| (x - y).abs() / (1.0 + x.abs()))
                            .fold(0.0, f64::max);
                        assert!(e < 1e-6, "{kind:?} step {step}: world {w}'s reset, {e:.1e}");
                    } else {
                        assert_eq!(a.q, b.q, "{kind:?} step {step}: world {w}'s reset");
                    }
                }
            }
            // Both from the CPU's states.
            for w in 0..WORLDS {
                gpu.set_state(w, cpu.state(w).unwrap().clone()).unwrap();
            }
            let ctrl: Vec<f64> = (0..WORLDS * nu).map(|_| rng.range(-1.0, 1.0)).collect();
            let sq: Vec<f64> = ctrl
                .chunks(nu)
                .map(|c| c.iter().map(|a| a * a).sum())
                .collect();
            assert!(gc.step(&mut cpu, &ctrl, &sq, &reset).unwrap().is_empty());
            assert!(gg.step(&mut gpu, &ctrl, &sq, &reset).unwrap().is_empty());
            let (a, b) = (gc.output(), gg.output());
            let dim = a.obs.len() / WORLDS;
            for w in 0..WORLDS {
                let e = (a.obs[w * dim..(w + 1) * dim].iter())
                    .zip(&b.obs[w * dim..(w + 1) * dim])
                    .map(|(x, y)| (x - y).abs() / (1.0 + x.abs()))
                    .fold(0.0, f64::max);
                apart += (e > 1e-2) as usize;
                worst_obs = worst_obs.max(e);
            }
            for (x, y) in a.reward.iter().zip(&b.reward) {
                worst_reward = worst_reward.max((x - y).abs() / (1.0 + x.abs()));
            }
            ends += a.terminated.iter().filter(|&&t| t).count();
            ended_alike += a
                .terminated
                .iter()
                .zip(&b.terminated)
                .filter(|(x, y)| **x && **y)
                .count();
            reset.copy_from_slice(&a.terminated);
        }
        // Every task on the device.
        let on_device = gg.on_device().cloned().unwrap();
        assert_eq!(on_device, Ok(()), "{kind:?}");
        println!(
            "{}: {STEPS} steps × {WORLDS} environments, task on the device: {}, observations within {worst_obs:.1e} ({apart} world-steps beyond 1e-2), rewards within {worst_reward:.1e} (relative to 1 + |x|); {ends} episodes ended on cpu, {ended_alike} of them on gpu too",
            kind.id(),
            on_device.is_ok()
        );
        let contacts = !matches!(
            kind,
            GymKind::InvertedPendulum
                | GymKind::InvertedDoublePendulum
                | GymKind::Reacher
                | GymKind::Swimmer
        );
        if contacts {
            assert!(
                apart * 50 <= STEPS * WORLDS,
                "{kind:?}: {apart} world-steps apart"
            );
        } else {
            assert!(worst_obs < 1e-3 && worst_reward < 1e-3, "{kind:?}");
        }
        assert!(
            ended_alike + ends / 20 >= ends,
            "{kind:?}: {ended_alike} of {ends}"
        );
    }
}
