//! Gymnasium's v5 tasks in the batch (`moreau::envs::gymnasium`), on
//! Gymnasium's own files: the same outputs on one core and on all of
//! them, episodes ending and resetting; a reset world observed without
//! forces and unrewarded; the info's terms adding up to the reward; bad
//! input refused by name. (Against Gymnasium's MuJoCo tasks themselves:
//! python/tests/test_gym.py.)

mod common;

use moreau::batch::{Backend, BatchSim};
use moreau::envs::Rng;
use moreau::envs::gymnasium::{GymBatch, GymKind, GymParams, GymTask};
use moreau::sim::State;
use std::sync::Arc;

/// A batch of `n` worlds of Gymnasium's `file` for task `kind` on `backend`,
/// with MuJoCo's qpos0.
fn setup(file: &str, kind: GymKind, n: usize, backend: Backend) -> Option<(BatchSim, GymBatch)> {
    common::gym_batch(file, kind, n, backend, 5)
}

/// Sets the worlds `reset` to noisy states drawn from `rng` (q0 ± 0.1).
fn reset_worlds(batch: &mut BatchSim, reset: &[bool], rng: &mut Rng) {
    let q0 = batch.state(0).unwrap().q.clone();
    let nv = batch.model().nv;
    for (w, _) in reset.iter().enumerate().filter(|(_, r)| **r) {
        let mut s = State::new(q0.clone(), nalgebra::DVector::zeros(nv));
        // The positions and hinge angles (not the free joint's quaternion).
        for k in 0..3 {
            s.q[k] += 0.1 * (2.0 * rng.uniform() - 1.0);
        }
        for k in 7..s.q.len() {
            s.q[k] += 0.1 * (2.0 * rng.uniform() - 1.0);
        }
        batch.set_state(w, s).unwrap();
    }
}

/// `steps` environment steps of random controls, worlds reset when their
/// episode ends (at the next step, as Gymnasium's NEXT_STEP autoreset);
/// every step's outputs.
fn rollout(batch: &mut BatchSim, gym: &mut GymBatch, steps: usize) -> Vec<Vec<f64>> {
    let (n, nu) = (batch.nworlds(), batch.model().nu());
    let mut rng = Rng::new(7);
    let mut reset = vec![true; n];
    reset_worlds(batch, &reset, &mut rng);
    gym.observe(batch, &reset).unwrap();
    reset.fill(false);
    let mut out = Vec::new();
    for _ in 0..steps {
        reset_worlds(batch, &reset, &mut rng);
        let ctrl: Vec<f64> = (0..n * nu)
            .map(|_| 0.8 * (2.0 * rng.uniform() - 1.0))
            .collect();
        let sq: Vec<f64> = ctrl
            .chunks(nu)
            .map(|c| c.iter().map(|a| a * a).sum())
            .collect();
        let failed = gym.step(batch, &ctrl, &sq, &reset).unwrap();
        assert!(failed.is_empty(), "{failed:?}");
        let o = gym.output();
        let mut row = o.obs.clone();
        row.extend(&o.reward);
        row.extend(o.terminated.iter().map(|&t| t as u8 as f64));
        row.extend(&o.info);
        out.push(row);
        reset.copy_from_slice(&o.terminated);
    }
    out
}

#[test]
fn the_same_outputs_on_one_core_and_on_all_with_episodes_ending() {
    for (file, kind) in [
        ("ant.xml", GymKind::Ant),
        ("humanoid.xml", GymKind::Humanoid),
    ] {
        let Some((mut b1, mut g1)) = setup(file, kind, 6, Backend::CpuSingle) else {
            return;
        };
        let (mut b2, mut g2) = setup(file, kind, 6, Backend::CpuParallel).unwrap();
        let one = rollout(&mut b1, &mut g1, 40);
        let all = rollout(&mut b2, &mut g2, 40);
        assert_eq!(one, all, "{file}: bit for bit across backends");
        // Episodes ended and the worlds went on (the humanoid falls).
        let terminated: f64 = one
            .iter()
            .map(|r| {
                r[r.len() - 6 * g1.task().info_dim() - 6..][..6]
                    .iter()
                    .sum::<f64>()
            })
            .sum();
        if kind == GymKind::Humanoid {
            assert!(terminated > 0.0, "{file}: no episode ended in 40 steps");
        }
    }
}

#[test]
fn a_reset_world_is_observed_without_forces_and_its_info_terms_add_up() {
    let Some((mut batch, mut gym)) = setup("ant.xml", GymKind::Ant, 3, Backend::CpuParallel) else {
        return;
    };
    let steps = rollout(&mut batch, &mut gym, 30);
    assert_eq!(steps.len(), 30);
    let task = gym.task();
    let (od, id) = (task.obs_dim(), task.info_dim());
    let col = |name: &str| {
        let mut at = 0;
        for &(n, w) in task.info_columns() {
            if n == name {
                return at;
            }
            at += w;
        }
        panic!("no info term {name}")
    };
    let out = gym.output().clone();
    let nq = batch.model().nq;
    for w in 0..3 {
        let info = &out.info[w * id..(w + 1) * id];
        let reward = out.reward[w];
        let terms = [
            "reward_forward",
            "reward_survive",
            "reward_ctrl",
            "reward_contact",
        ];
        let sum: f64 = terms.iter().map(|t| info[col(t)]).sum();
        assert!(
            (sum - reward).abs() < 1e-12,
            "world {w}: {sum} against {reward}"
        );
        // The observation: qpos without x, y (MuJoCo's order), then qvel.
        let s = batch.state(w).unwrap();
        let mut qpos = vec![0.0; nq];
        batch.model().mujoco_qpos(s.q.as_slice(), &mut qpos);
        assert_eq!(&out.obs[w * od..w * od + nq - 2], &qpos[2..]);
        assert_eq!(info[col("x_position")], qpos[0]);
    }
    // The ant stands on its feet: its clipped contact forces are in the
    // observation (the last 6 × 13 entries).
    let forces = |o: &[f64]| o[o.len() - 6 * 13..].iter().map(|f| f.abs()).sum::<f64>();
    assert!(forces(&out.obs[..od]) > 0.0, "no contact force observed");
    // World 1 reset: observed at its new state, no forces, no reward.
    let mut reset = vec![false; 3];
    reset[1] = true;
    reset_worlds(&mut batch, &reset, &mut Rng::new(1));
    gym.observe(&mut batch, &reset).unwrap();
    let after = gym.output();
    assert_eq!(forces(&after.obs[od..2 * od]), 0.0);
    assert_eq!(&after.obs[..od], &out.obs[..od], "world 0 kept");
    assert!(gym.fresh()[1] && !gym.fresh()[0]);
    let nu = batch.model().nu();
    let failed = gym
        .step(&mut batch, &vec![0.0; 3 * nu], &[0.0; 3], &reset)
        .unwrap();
    assert!(failed.is_empty());
    assert_eq!(gym.output().reward[1], 0.0);
    assert!(!gym.output().terminated[1]);
}

#[test]
fn bad_input_is_refused_by_name() {
    let Some(loaded) = common::gymnasium("ant.xml") else {
        return;
    };
    let model = Arc::new(loaded.model);
    let mut qpos0 = vec![0.0; model.nq];
    model.mujoco_qpos(loaded.q0.as_slice(), &mut qpos0);
    let mut p = GymParams::gymnasium(GymKind::Ant);
    p.main_body = "thorax".into();
    let qvel0 = vec![0.0; model.nv];
    let e = GymTask::new(GymKind::Ant, p, model.clone(), &qpos0, &qvel0).unwrap_err();
    assert!(e.contains("\"thorax\""), "{e}");
    let e = GymTask::new(
        GymKind::Reacher,
        GymParams::gymnasium(GymKind::Reacher),
        model.clone(),
        &qpos0,
        &qvel0,
    )
    .unwrap_err();
    assert!(e.contains("fingertip"), "{e}");
    let (mut batch, mut gym) = setup("ant.xml", GymKind::Ant, 2, Backend::CpuSingle).unwrap();
    let before = batch.state(0).unwrap().clone();
    let nu = batch.model().nu();
    let e = gym.step(&mut batch, &vec![0.0; 2 * nu], &[0.0; 2], &[false; 3]);
    assert!(e.unwrap_err().to_string().contains("reset mask"));
    let e = gym.step(&mut batch, &vec![0.0; nu], &[0.0; 2], &[false; 2]);
    assert!(e.unwrap_err().to_string().contains("controls"));
    let e = gym.step(
        &mut batch,
        &vec![0.0; 2 * nu],
        &[0.0, f64::NAN],
        &[false; 2],
    );
    assert!(
        e.unwrap_err()
            .to_string()
            .contains("world 1's sum of squared actions")
    );
    assert_eq!(batch.state(0).unwrap(), &before, "state untouched");
    assert!(GymBatch::new(gym.task().clone(), &batch, 0).is_err());
}

#[test]
fn philox_resets_depend_on_seed_world_and_episode_only() {
    let Some((mut b1, mut g1)) = setup("humanoid.xml", GymKind::Humanoid, 4, Backend::CpuSingle)
    else {
        return;
    };
    let (mut b2, mut g2) =
        setup("humanoid.xml", GymKind::Humanoid, 4, Backend::CpuParallel).unwrap();
    let all = [true; 4];
    let q = |b: &BatchSim, w: usize| b.state(w).unwrap().q.clone();
    g1.seed(&all, &[5; 4]).unwrap();
    g2.seed(&all, &[5; 4]).unwrap();
    g1.reset_worlds(&mut b1, &all).unwrap();
    // Worlds reset one at a time, in another order: the same states.
    for w in [3, 1, 0, 2] {
        let mut one = [false; 4];
        one[w] = true;
        g2.reset_worlds(&mut b2, &one).unwrap();
    }
    for w in 0..4 {
        assert_eq!(q(&b1, w), q(&b2, w), "world {w}");
    }
    assert_ne!(q(&b1, 0), q(&b1, 1), "worlds draw their own noise");
    let first = q(&b1, 0);
    g1.reset_worlds(&mut b1, &all).unwrap();
    assert_ne!(q(&b1, 0), first, "the next episode, other noise");
    g1.seed(&all, &[5; 4]).unwrap();
    g1.reset_worlds(&mut b1, &all).unwrap();
    assert_eq!(q(&b1, 0), first, "seeded again: the first episode's");
    // Humanoid-v5's noise: uniform within ±0.01 of qpos0 (MuJoCo's).
    let m = b1.model().clone();
    let mut qpos = vec![0.0; m.nq];
    m.mujoco_qpos(first.as_slice(), &mut qpos);
    let loaded = common::gymnasium("humanoid.xml").unwrap();
    let mut qpos0 = vec![0.0; m.nq];
    m.mujoco_qpos(loaded.q0.as_slice(), &mut qpos0);
    let worst = qpos
        .iter()
        .zip(&qpos0)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(worst <= 0.01 && worst > 0.005, "{worst}");
    assert!(g1.seed(&all, &[1; 3]).is_err());
}
