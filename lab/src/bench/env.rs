//! `moreau bench env`: Gymnasium's v5 tasks as an RL loop runs them, in
//! Rust (no Python): random actions in each task's control range, the
//! frame skip, every environment's observation, reward and termination
//! ([`GymBatch`]), Gymnasium's NEXT_STEP autoreset with Philox resets and
//! its time limits. Per (task, backend, batch size): environment steps per
//! second and, per environment step, where the time went: the physics (the
//! frame skip), the task (kinematic states, contact forces, every world
//! evaluated), the resets, and the rest of the loop (drawing actions).

use moreau::batch::{Backend, BatchOptions, BatchSim};
use moreau::envs::gymnasium::{GymBatch, GymKind, GymParams, GymTask};
use moreau::load::mjcf::{MjcfOptions, load_mjcf};
use moreau::math::PhiloxStream;
use moreau::sim::{SimParams, State};
use nalgebra::DVector;
use serde::Serialize;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One measured (task, backend, batch size).
#[derive(Clone, Debug, Serialize)]
pub struct EnvBenchRow {
    pub task: String,
    pub envs: usize,
    pub backend: String,
    /// Environment steps timed (after a warm-up of 5).
    pub steps: usize,
    pub episodes_ended: usize,
    pub env_steps_per_s: f64,
    pub physics_steps_per_s: f64,
    /// Per environment step, µs.
    pub us_per_env_step: f64,
    pub physics_us: f64,
    pub task_us: f64,
    pub reset_us: f64,
    pub other_us: f64,
    /// Resident worlds: the time per environment step the host waited for
    /// the device, and the library's own host time (all but those waits
    /// and the loop's action draws, `other_us`).
    pub device_wait_us: Option<f64>,
    pub host_us: Option<f64>,
    /// Whether the task was computed on the device.
    pub task_on_device: bool,
    /// Everything but the physics, as a share of the physics.
    pub layer_share_of_physics: f64,
    /// World steps that failed (a flagged solve), counted over the run.
    pub failed: usize,
}

/// Times `steps` environment steps of `kind` on `n` worlds of `backend`,
/// from Gymnasium's file in `assets`.
pub fn bench_env(
    kind: GymKind,
    assets: &Path,
    n: usize,
    backend: Backend,
    steps: usize,
    seed: u64,
    task_on_host: bool,
) -> Result<EnvBenchRow, String> {
    let (file, frame_skip, max_steps) = kind.registration();
    let m = load_mjcf(assets.join(file), &MjcfOptions::default()).map_err(|e| e.to_string())?;
    let model = Arc::new(m.model);
    let mut qpos0 = vec![0.0; model.nq];
    model.mujoco_qpos(m.q0.as_slice(), &mut qpos0);
    let options = BatchOptions {
        backend,
        params: SimParams {
            dt: m.timestep,
            ..BatchOptions::default().params
        },
        ..Default::default()
    };
    let initial = State::new(m.q0.clone(), DVector::zeros(model.nv));
    let mut batch =
        BatchSim::new(model.clone(), &initial, n, &options).map_err(|e| e.to_string())?;
    let task = GymTask::new(
        kind,
        GymParams::gymnasium(kind),
        model.clone(),
        &qpos0,
        &vec![0.0; model.nv],
    )?;
    let mut gym = GymBatch::new(task, &batch, frame_skip)?;
    if task_on_host {
        gym.keep_on_host();
    }
    let all = vec![true; n];
    gym.seed(&all, &vec![seed; n]).map_err(|e| e.to_string())?;
    gym.reset_worlds(&mut batch, &all)
        .map_err(|e| e.to_string())?;
    gym.observe(&mut batch, &all).map_err(|e| e.to_string())?;
    let nu = model.nu();
    let ranges: Vec<(f64, f64)> = (model.actuators.iter())
        .map(|a| a.ctrl_range.unwrap_or((-1.0, 1.0)))
        .collect();
    let (mut ctrl, mut sq) = (vec![0.0; n * nu], vec![0.0; n]);
    let mut elapsed = vec![0usize; n];
    let mut resetting = vec![false; n];
    let (mut ended, mut failed) = (0, 0);
    let (mut reset_time, mut other_time) = (Duration::ZERO, Duration::ZERO);
    let mut start = Instant::now();
    let mut waited_before = None;
    for step in 0..steps + 5 {
        if step == 5 {
            gym.reset_times();
            (reset_time, other_time, ended, failed) = (Duration::ZERO, Duration::ZERO, 0, 0);
            waited_before = batch.resident_waited();
            start = Instant::now();
        }
        let t = Instant::now();
        for w in 0..n {
            let mut rng = PhiloxStream::new(seed ^ 0xAC71_0A5E, w as u32, step as u32);
            let row = &mut ctrl[w * nu..(w + 1) * nu];
            for (c, &(lo, hi)) in row.iter_mut().zip(&ranges) {
                *c = rng.range(lo, hi);
            }
            sq[w] = row.iter().map(|c| c * c).sum();
        }
        other_time += t.elapsed();
        let t = Instant::now();
        if resetting.iter().any(|&r| r) {
            gym.reset_worlds(&mut batch, &resetting)
                .map_err(|e| e.to_string())?;
        }
        reset_time += t.elapsed();
        let failures = gym
            .step(&mut batch, &ctrl, &sq, &resetting)
            .map_err(|e| e.to_string())?;
        failed += failures.len();
        let t = Instant::now();
        let out = gym.output();
        for w in 0..n {
            elapsed[w] = if resetting[w] { 0 } else { elapsed[w] + 1 };
            let done = !resetting[w] && (out.terminated[w] || elapsed[w] >= max_steps);
            let failed_here = failures.iter().any(|(f, _)| *f == w);
            ended += done as usize;
            resetting[w] = done || failed_here;
        }
        other_time += t.elapsed();
    }
    let total = start.elapsed().as_secs_f64();
    let times = gym.times();
    let per = 1e6 / (steps * n) as f64;
    let physics = times.physics.as_secs_f64();
    let device_wait_us = batch
        .resident_waited()
        .zip(waited_before)
        .map(|(after, before)| (after - before).as_secs_f64() * per);
    let other_us = other_time.as_secs_f64() * per;
    Ok(EnvBenchRow {
        task: kind.id().into(),
        envs: n,
        backend: backend.name().into(),
        steps,
        episodes_ended: ended,
        env_steps_per_s: (steps * n) as f64 / total,
        physics_steps_per_s: (steps * n * frame_skip) as f64 / physics,
        us_per_env_step: total * per,
        physics_us: physics * per,
        task_us: times.task.as_secs_f64() * per,
        reset_us: reset_time.as_secs_f64() * per,
        other_us,
        device_wait_us,
        host_us: device_wait_us.map(|d| total * per - d - other_us),
        task_on_device: gym.on_device() == Some(&Ok(())),
        layer_share_of_physics: (total - physics) / physics,
        failed,
    })
}
