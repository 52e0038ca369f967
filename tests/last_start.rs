//! `BatchSim::keep_last_start`: the state the last step of a repeated call
//! started from equals the state a twin batch reaches after one step
//! fewer, on the CPU backends (bit for bit) and with the worlds on the
//! device (the copy in the same submission; lavapipe in CI), with
//! contacts (the quadruped standing) and without (the cart-pole); the
//! state after the call is the twin's after its last step.

mod common;

use moreau::batch::{Backend, BatchSim};
use moreau::math::Rng;

/// Torques that move every dof a little, world by world.
fn torques(nv: usize, n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    (0..n * nv).map(|_| rng.range(-0.5, 0.5)).collect()
}

/// `timed`: the kept batch times its device stages (each submitted alone).
fn check(scene: &str, backend: Backend, timed: bool) {
    let s = moreau::scenes::scene(scene).unwrap();
    let n = 3;
    let options = common::batch_options(backend, s.dt);
    let make = || {
        if backend == Backend::Gpu {
            common::gpu_batch(s.model.clone(), &s.state, n, &options)
        } else {
            Some(BatchSim::new(s.model.clone(), &s.state, n, &options).unwrap())
        }
    };
    let (Some(mut kept), Some(mut twin)) = (make(), make()) else {
        return;
    };
    if backend == Backend::Gpu {
        assert!(kept.is_resident(), "{scene}: {:?}", kept.notice());
    }
    kept.keep_last_start(true).unwrap();
    if timed {
        assert!(kept.set_resident_stage_timing(true));
    }
    assert_eq!(kept.last_start(0).unwrap(), None);
    let nv = s.model.nv;
    let tau = torques(nv, n, 7);
    // World 1 sits the call out: it keeps no start.
    let active = [true, false, true];
    kept.step_repeated(&tau, 5, Some(&active)).unwrap();
    twin.step_repeated(&tau, 4, Some(&active)).unwrap();
    for w in [0, 2] {
        let (q, v) = kept.last_start(w).unwrap().expect("kept");
        let s4 = twin.state(w).unwrap();
        assert_eq!(q, s4.q.as_slice(), "{scene} {backend:?} world {w}: q");
        assert_eq!(v, s4.v.as_slice(), "{scene} {backend:?} world {w}: v");
    }
    assert_eq!(kept.last_start(1).unwrap(), None);
    twin.step_repeated(&tau, 1, Some(&active)).unwrap();
    for w in 0..n {
        assert_eq!(
            kept.state(w).unwrap(),
            twin.state(w).unwrap(),
            "{scene} world {w}"
        );
    }
    // Off: nothing kept.
    kept.keep_last_start(false).unwrap();
    kept.step_repeated(&tau, 2, None).unwrap();
    assert_eq!(kept.last_start(0).unwrap(), None);
}

#[test]
fn the_last_steps_start_is_the_state_one_step_before_on_the_cpu() {
    for backend in [Backend::CpuSingle, Backend::CpuParallel] {
        check("quadruped", backend, false);
        check("cartpole", backend, false);
    }
}

#[test]
fn the_last_steps_start_is_kept_on_the_device_in_the_same_submission() {
    for timed in [false, true] {
        check("cartpole", Backend::Gpu, timed);
        check("quadruped", Backend::Gpu, timed);
    }
}
