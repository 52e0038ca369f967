//! Vectorized environments: spaces and layouts, determinism for a seed,
//! same-step autoreset, bad actions (NaN flags one world, out-of-range is
//! clipped). (ARS learning the swing-up: the lab's `tests/ars.rs`.)

use moreau::batch::Backend;
use moreau::envs::{
    BoxPush, CartPoleSwingUp, EnvError, QuadrupedWalk, Rng, StepResult, Task, VecEnv, VecEnvOptions,
};
use std::time::Instant;

fn env<T: Task>(task: T, nenv: usize) -> VecEnv<T> {
    VecEnv::new(task, nenv, &VecEnvOptions::default()).expect("env builds")
}

fn random_actions(rng: &mut Rng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.range(-1.0, 1.0) as f32).collect()
}

fn check_spaces<T: Task>(task: T, obs_dim: usize, action_dim: usize) {
    let name = task.name().to_string();
    let nenv = 3;
    let mut e = env(task, nenv);
    assert_eq!(
        (e.obs_dim(), e.action_dim()),
        (obs_dim, action_dim),
        "{name}"
    );
    let os = e.observation_space().clone();
    assert_eq!((os.low.len(), os.high.len()), (obs_dim, obs_dim), "{name}");
    assert!(os.low.iter().zip(&os.high).all(|(l, h)| l < h), "{name}");
    let acts = e.action_space();
    assert_eq!(acts.low, vec![-1.0; action_dim], "{name}");
    assert_eq!(acts.high, vec![1.0; action_dim], "{name}");
    let obs = e.reset(7).unwrap().to_vec();
    assert_eq!(obs.len(), nenv * obs_dim, "{name}: obs is (nenv, obs_dim)");
    for w in 0..nenv {
        let row = &obs[w * obs_dim..(w + 1) * obs_dim];
        assert!(
            os.contains(row),
            "{name}: world {w} obs {row:?} outside its space"
        );
    }
    // Worlds draw different initial states.
    assert_ne!(obs[..obs_dim], obs[obs_dim..2 * obs_dim], "{name}");
    let r = e.step(&vec![0.0; nenv * action_dim]).unwrap();
    assert_eq!(r.obs.len(), nenv * obs_dim);
    assert_eq!(r.final_obs.len(), nenv * obs_dim);
    assert_eq!(
        (r.reward.len(), r.terminated.len(), r.truncated.len()),
        (nenv, nenv, nenv)
    );
    assert!(
        r.obs.iter().chain(&r.reward).all(|x| x.is_finite()),
        "{name}"
    );
    // A wrong action length is refused and nothing moves.
    let before: Vec<_> = e.sim().states().cloned().collect();
    match e.step(&vec![0.0; nenv * action_dim + 1]) {
        Err(EnvError::DimensionMismatch { expected, .. }) => {
            assert_eq!(expected, nenv * action_dim)
        }
        other => panic!("{name}: expected a dimension error, got {other:?}"),
    }
    let after: Vec<_> = e.sim().states().cloned().collect();
    assert_eq!(before, after, "{name}: a refused step moved the worlds");
    println!("{name}: obs {obs_dim}, actions {action_dim}: spaces and layouts ok");
}

#[test]
fn spaces_and_layouts() {
    check_spaces(CartPoleSwingUp::new(), 5, 1);
    check_spaces(QuadrupedWalk::new(), 36, 12);
    check_spaces(BoxPush::new(), 9, 2);
}

/// Observations, rewards and flags of `steps` steps under seeded random actions.
fn trajectory<T: Task>(task: T, seed: u64, steps: usize) -> Vec<StepResult> {
    trajectory_on(task, seed, steps, Backend::CpuParallel)
}

fn trajectory_on<T: Task>(task: T, seed: u64, steps: usize, backend: Backend) -> Vec<StepResult> {
    let options = VecEnvOptions {
        backend,
        ..Default::default()
    };
    let mut e = VecEnv::new(task, 4, &options).unwrap();
    e.reset(seed).unwrap();
    let mut rng = Rng::new(99);
    (0..steps)
        .map(|_| {
            let a = random_actions(&mut rng, 4 * e.action_dim());
            e.step(&a).unwrap()
        })
        .collect()
}

#[test]
fn same_seed_same_trajectory_bit_for_bit() {
    let mut short = CartPoleSwingUp::new();
    short.episode_steps = 15; // several autoresets within the run
    let a = trajectory(short.clone(), 5, 60);
    let b = trajectory(short.clone(), 5, 60);
    let c = trajectory(short, 6, 60);
    let bits = |t: &[StepResult]| -> Vec<u32> {
        t.iter()
            .flat_map(|r| r.obs.iter().chain(&r.reward).chain(&r.final_obs))
            .map(|x| x.to_bits())
            .collect()
    };
    assert_eq!(
        bits(&a),
        bits(&b),
        "cart-pole: same seed, different trajectories"
    );
    assert_eq!(a, b);
    assert_ne!(
        bits(&a),
        bits(&c),
        "cart-pole: seeds 5 and 6 gave the same trajectory"
    );
    let resets: usize = a
        .iter()
        .map(|r| r.truncated.iter().filter(|&&t| t).count())
        .sum();
    assert!(resets >= 4, "expected autoresets in the run, got {resets}");

    let mut q = QuadrupedWalk::new();
    q.episode_steps = 10;
    let a = trajectory(q.clone(), 3, 15);
    let b = trajectory_on(q, 3, 15, Backend::CpuSingle);
    assert_eq!(
        bits(&a),
        bits(&b),
        "quadruped: same seed, different trajectories on all cores and on one"
    );
    let a = trajectory(BoxPush::new(), 3, 15);
    let b = trajectory(BoxPush::new(), 3, 15);
    assert_eq!(
        bits(&a),
        bits(&b),
        "box-push: same seed, different trajectories"
    );
    println!(
        "cart-pole (with {resets} autoresets), quadruped (all cores vs one), box-push: same seed, bit-identical obs and rewards"
    );
}

#[test]
fn autoreset_returns_the_first_observation_of_the_next_episode() {
    let mut task = CartPoleSwingUp::new();
    task.episode_steps = 5;
    let nenv = 3;
    let mut e = env(task.clone(), nenv);
    let first = e.reset(11).unwrap().to_vec();
    let mut rewards = vec![0.0f64; nenv];
    let mut last = None;
    for step in 1..=5 {
        let r = e.step(&[0.3, -0.2, 0.0]).unwrap();
        for w in 0..nenv {
            rewards[w] += r.reward[w] as f64;
            assert!(!r.terminated[w]);
            assert_eq!(r.truncated[w], step == 5, "world {w} step {step}");
            if step < 5 {
                assert_eq!(r.obs, r.final_obs);
            }
        }
        last = Some(r);
    }
    let r = last.unwrap();
    for w in 0..nenv {
        let row = w * 5..(w + 1) * 5;
        assert_eq!(r.episode_length[w], 5);
        assert!((r.episode_return[w] - rewards[w]).abs() < 1e-5);
        assert_ne!(r.obs[row.clone()], r.final_obs[row.clone()], "world {w}");
        // The new episode starts at t = 0 from a fresh draw (not the first one).
        let state = e.sim().state(w).unwrap();
        assert_eq!(state.t, 0.0);
        let mut o = [0.0f32; 5];
        task.observe(state, &[], &mut o);
        assert_eq!(r.obs[row.clone()], o);
        assert_ne!(r.obs[row.clone()], first[row]);
    }
    // Termination: the cart pushed off a short rail.
    task.x_limit = 0.3;
    task.episode_steps = 1000;
    let mut e = env(task, 1);
    let mut steps = 0;
    let r = loop {
        steps += 1;
        let r = e.step(&[1.0]).unwrap();
        if r.done(0) {
            break r;
        }
        assert!(steps < 100, "the cart never left its 0.3 m rail");
    };
    assert!(r.terminated[0] && !r.truncated[0]);
    assert!(r.final_obs[0] >= 0.3 - 1e-6 && r.obs[0].abs() < 0.2);
    println!("autoreset: truncated at 5 steps; cart off its rail terminated after {steps} steps");

    // Autoreset off: a finished world is frozen until the next reset.
    let mut task = CartPoleSwingUp::new();
    task.episode_steps = 2;
    let options = VecEnvOptions {
        autoreset: false,
        ..Default::default()
    };
    let mut e = VecEnv::new(task, 2, &options).unwrap();
    e.step(&[0.5, 0.5]).unwrap();
    let r = e.step(&[0.5, 0.5]).unwrap();
    assert!(r.truncated[0] && r.truncated[1] && r.obs == r.final_obs);
    let r2 = e.step(&[0.5, 0.5]).unwrap();
    assert_eq!(e.finished(), &[true, true]);
    assert_eq!(r2.obs, r.obs);
    assert_eq!(r2.reward, vec![0.0, 0.0]);
    assert!(!r2.done(0) && !r2.done(1));
    e.reset(1).unwrap();
    assert_eq!(e.finished(), &[false, false]);
}

#[test]
fn nan_action_terminates_that_world_only_and_out_of_range_is_clipped() {
    let nenv = 4;
    let mut bad = env(CartPoleSwingUp::new(), nenv);
    let mut good = env(CartPoleSwingUp::new(), nenv);
    bad.reset(3).unwrap();
    good.reset(3).unwrap();
    let actions = [0.5, 0.2, -0.7, 0.9];
    for _ in 0..3 {
        let (rb, rg) = (bad.step(&actions).unwrap(), good.step(&actions).unwrap());
        assert_eq!(rb, rg);
    }
    let rb = bad.step(&[0.5, 0.2, f32::NAN, 0.9]).unwrap();
    let rg = good.step(&actions).unwrap();
    assert_eq!(rb.invalid.len(), 1);
    assert_eq!(rb.invalid[0].0, 2);
    assert!(
        rb.invalid[0].1.contains("not finite"),
        "{}",
        rb.invalid[0].1
    );
    assert!(rb.terminated[2] && rb.reward[2] == 0.0 && rb.episode_length[2] == 4);
    for w in [0, 1, 3] {
        let row = w * 5..(w + 1) * 5;
        assert_eq!(rb.obs[row.clone()], rg.obs[row], "world {w}");
        assert_eq!(rb.reward[w], rg.reward[w]);
        assert!(!rb.terminated[w]);
    }
    // The flagged world was reset and steps again.
    let r = bad.step(&actions).unwrap();
    assert!(r.invalid.is_empty() && r.obs.iter().all(|x| x.is_finite()));
    println!(
        "NaN action: world 2 terminated and flagged ({}), worlds 0, 1, 3 bit-identical to a clean run",
        rb.invalid[0].1
    );

    // Out of range: clipped to [-1, 1], counted.
    let mut a = env(CartPoleSwingUp::new(), 2);
    let mut b = env(CartPoleSwingUp::new(), 2);
    let ra = a.step(&[5.0, -1.0e9]).unwrap();
    let rb = b.step(&[1.0, -1.0]).unwrap();
    assert_eq!(ra.clipped, 2);
    assert_eq!(rb.clipped, 0);
    assert_eq!(ra.obs, rb.obs);
    let r = a.step(&[f32::INFINITY, 0.0]).unwrap();
    assert_eq!(r.invalid.len(), 1);
    assert!(r.terminated[0] && !r.terminated[1]);
}

fn smoke<T: Task>(task: T, steps: usize) {
    let name = task.name().to_string();
    let nenv = 4;
    let t = Instant::now();
    let mut e = env(task, nenv);
    let mut rng = Rng::new(1);
    let (mut ended, mut terminated, mut returns) = (0, 0, Vec::new());
    for _ in 0..steps {
        let a = random_actions(&mut rng, nenv * e.action_dim());
        let r = e.step(&a).unwrap();
        assert!(r.invalid.is_empty(), "{name}: {:?}", r.invalid);
        assert!(
            r.obs
                .iter()
                .chain(&r.final_obs)
                .chain(&r.reward)
                .all(|x| x.is_finite()),
            "{name}: non-finite observation or reward"
        );
        for w in 0..nenv {
            if r.done(w) {
                ended += 1;
                terminated += usize::from(r.terminated[w]);
                returns.push(r.episode_return[w]);
            }
        }
    }
    assert!(
        ended >= nenv,
        "{name}: only {ended} episodes ended in {steps} steps"
    );
    let mean = returns.iter().sum::<f64>() / returns.len() as f64;
    println!(
        "{name}: {steps} steps × {nenv} worlds of random actions: {ended} episodes ended ({terminated} terminated), mean return {mean:.2}, {:.1} s",
        t.elapsed().as_secs_f64()
    );
}

#[test]
fn quadruped_and_box_push_run_with_random_actions() {
    smoke(QuadrupedWalk::new(), 200);
    smoke(QuadrupedWalk::stand_up(), 200);
    smoke(BoxPush::new(), 250);
}

/// The GPU backend runs the same environment as the CPU within f32's
/// accuracy, or, without an adapter, `VecEnv::new` returns the batch's error
/// (skipped unless `MOREAU_REQUIRE_GPU=1`).
#[test]
fn gpu_backend_matches_cpu_or_reports_why_not() {
    use moreau::batch::BatchError;
    let options = VecEnvOptions {
        backend: Backend::Gpu,
        ..Default::default()
    };
    let mut gpu = match VecEnv::new(QuadrupedWalk::new(), 4, &options) {
        Ok(e) => e,
        Err(e) => {
            assert!(
                matches!(e, EnvError::Batch(BatchError::Gpu(_))),
                "expected the batch's GPU error, got {e}"
            );
            assert!(
                std::env::var("MOREAU_REQUIRE_GPU").as_deref() != Ok("1"),
                "GPU required: {e}"
            );
            eprintln!("SKIPPED (no GPU): {e}");
            return;
        }
    };
    let mut cpu = env(QuadrupedWalk::new(), 4);
    gpu.reset(2).unwrap();
    cpu.reset(2).unwrap();
    let mut rng = Rng::new(4);
    let mut worst = 0.0f32;
    for _ in 0..10 {
        let a = random_actions(&mut rng, 4 * 12);
        let (rg, rc) = (gpu.step(&a).unwrap(), cpu.step(&a).unwrap());
        assert!(rg.invalid.is_empty(), "{:?}", rg.invalid);
        for (g, c) in rg.final_obs.iter().zip(&rc.final_obs) {
            worst = worst.max((g - c).abs());
        }
    }
    println!(
        "quadruped, 10 env steps (200 physics steps) on {:?} vs CPU: largest observation difference {worst:.2e}",
        gpu.sim().device_name()
    );
    assert!(worst < 5e-3, "GPU and CPU environments differ by {worst}");
}

/// A scripted pusher (go behind the box in the goal frame, then push along
/// it) brings boxes closer to their goals: the task is solvable through
/// its observation and action spaces.
#[test]
fn box_push_scripted_pusher_brings_boxes_to_their_goals() {
    let nenv = 8;
    let options = VecEnvOptions {
        autoreset: false,
        ..Default::default()
    };
    let mut e = VecEnv::new(BoxPush::new(), nenv, &options).unwrap();
    let mut obs = e.reset(21).unwrap().to_vec();
    let start: Vec<f32> = (0..nenv).map(|w| obs[w * 9 + 4]).collect();
    let mut actions = vec![0.0f32; 2 * nenv];
    let mut successes = 0;
    while !e.finished().iter().all(|&f| f) {
        for w in 0..nenv {
            let (px, py) = (obs[w * 9], obs[w * 9 + 1]);
            // In contact from behind at x = −0.14 (half side + pusher radius).
            let (tx, ty) = if px < -0.12 && py.abs() < 0.04 {
                (px + 1.0, 0.0) // push along the box–goal axis
            } else if px < -0.12 {
                (-0.22, 0.0) // line up behind the box
            } else {
                (-0.25, if py >= 0.0 { 0.25 } else { -0.25 }) // go around it
            };
            actions[2 * w] = 5.0 * (tx - px);
            actions[2 * w + 1] = 5.0 * (ty - py);
        }
        let r = e.step(&actions).unwrap();
        successes += r.terminated.iter().filter(|&&t| t).count();
        obs = r.obs;
    }
    let end: Vec<f32> = (0..nenv).map(|w| obs[w * 9 + 4]).collect();
    println!(
        "box-push, scripted pusher: box–goal distances {start:?} → {end:?}, {successes} reached the goal"
    );
    let mean = |x: &[f32]| x.iter().sum::<f32>() / x.len() as f32;
    assert!(mean(&end) < 0.5 * mean(&start));
}

#[test]
fn a_boxed_task_is_a_task() {
    let tasks: Vec<Box<dyn Task>> = vec![
        Box::new(CartPoleSwingUp::new()),
        Box::new(QuadrupedWalk::new()),
        Box::new(BoxPush::new()),
    ];
    for task in tasks {
        let name = task.name().to_string();
        let mut e = env(task, 2);
        let r = e.step(&vec![0.1; 2 * e.action_dim()]).unwrap();
        assert!(r.obs.iter().all(|x| x.is_finite()), "{name}");
    }
}
