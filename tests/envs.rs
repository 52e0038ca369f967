//! Vectorized environments: spaces and layouts, determinism for a seed,
//! same-step autoreset, bad actions (NaN flags one world, out-of-range is
//! clipped). (ARS learning the swing-up: the lab's `tests/ars.rs`.)

use moreau::batch::Backend;
use moreau::envs::{
    BoxPush, BoxSpace, CartPoleSwingUp, DerivativeCheck, EnvError, InputGradient, QuadrupedWalk,
    Rng, StepResult, TASK_NAMES, Task, Transition, TransitionGradient, VecEnv, VecEnvOptions,
    check_task_derivatives, make_task,
};
use moreau::model::{JointType, Model};
use moreau::sim::State;
use std::sync::Arc;
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

/// [`check_task_derivatives`] of `task` (steps of 1e-6) at a random
/// transition of 0.02 s: two of its initial states, their velocities and
/// (for a free base) orientations disturbed, the second's quaternion
/// scaled off unit norm (the derivatives go through its normalization), a
/// random action and energy.
fn check_at_random_transition(task: &dyn Task, rng: &mut Rng) -> Result<DerivativeCheck, EnvError> {
    let mut episode = vec![0.0; task.episode_dim()];
    let mut draw = |rng: &mut Rng, scale: f64| {
        let mut s = task.reset(rng, &mut episode);
        for v in s.v.iter_mut() {
            *v += rng.range(-1.0, 1.0);
        }
        if matches!(task.model().joint_type.get(1), Some(JointType::Free)) {
            for k in 3..7 {
                s.q[k] += rng.range(-0.3, 0.3);
            }
            let norm = s.q.rows(3, 4).norm();
            for k in 3..7 {
                s.q[k] *= scale / norm;
            }
        }
        s.t = rng.range(0.0, 2.0);
        s
    };
    let prev = draw(rng, 1.0);
    let next = draw(rng, 1.1);
    let action: Vec<f64> = (0..task.action_dim())
        .map(|_| rng.range(-1.0, 1.0))
        .collect();
    let t = Transition {
        prev: &prev,
        state: &next,
        action: &action,
        episode: &episode,
        energy: rng.range(0.0, 2.0),
        dt: 0.02,
    };
    check_task_derivatives(task, &t, 1e-6)
}

#[test]
fn the_tasks_derivatives_match_central_differences() {
    let mut rng = Rng::new(7);
    for name in ["cartpole-swingup", "quadruped-walk", "quadruped-stand-up"] {
        let task = make_task(name, &[]).unwrap();
        let mut worst = [0.0f64; 3];
        for _ in 0..20 {
            let c = check_at_random_transition(task.as_ref(), &mut rng).unwrap();
            worst[0] = worst[0].max(c.observe);
            worst[1] = worst[1].max(c.torques);
            worst[2] = worst[2].max(c.reward);
        }
        println!(
            "{name}: observe {:.1e}, torques {:.1e}, reward {:.1e}",
            worst[0], worst[1], worst[2]
        );
        // The observation is rounded to f32 (differences of step 1e-3).
        assert!(worst[0] < 1e-4, "{name}: observe {worst:?}");
        assert!(worst[1] < 1e-7, "{name}: torques {worst:?}");
        assert!(worst[2] < 1e-7, "{name}: reward {worst:?}");
    }
}

/// The cart-pole with a wrong written derivative of its reward (twice the
/// true one), to show the check sees it.
struct WrongReward(CartPoleSwingUp);

impl Task for WrongReward {
    fn name(&self) -> &str {
        "wrong-reward"
    }
    fn model(&self) -> &Arc<Model> {
        self.0.model()
    }
    fn substeps(&self) -> usize {
        self.0.substeps()
    }
    fn max_episode_steps(&self) -> usize {
        self.0.max_episode_steps()
    }
    fn observation_space(&self) -> BoxSpace {
        self.0.observation_space()
    }
    fn action_dim(&self) -> usize {
        1
    }
    fn reset(&self, rng: &mut Rng, episode: &mut [f64]) -> State {
        self.0.reset(rng, episode)
    }
    fn observe(&self, state: &State, episode: &[f64], out: &mut [f32]) {
        self.0.observe(state, episode, out)
    }
    fn torques(&self, state: &State, action: &[f64], episode: &[f64], tau: &mut [f64]) {
        self.0.torques(state, action, episode, tau)
    }
    fn reward(&self, t: &Transition) -> f64 {
        self.0.reward(t)
    }
    fn terminated(&self, state: &State, episode: &[f64]) -> bool {
        self.0.terminated(state, episode)
    }
    fn observe_vjp(
        &self,
        state: &State,
        episode: &[f64],
        g: &[f64],
        grad: &mut InputGradient,
    ) -> Result<(), EnvError> {
        self.0.observe_vjp(state, episode, g, grad)
    }
    fn torques_vjp(
        &self,
        state: &State,
        action: &[f64],
        episode: &[f64],
        g: &[f64],
        grad: &mut InputGradient,
    ) -> Result<(), EnvError> {
        self.0.torques_vjp(state, action, episode, g, grad)
    }
    fn reward_vjp(
        &self,
        t: &Transition,
        g: f64,
        grad: &mut TransitionGradient,
    ) -> Result<(), EnvError> {
        self.0.reward_vjp(t, 2.0 * g, grad)
    }
}

#[test]
fn the_derivative_check_sees_a_wrong_derivative_and_a_task_without_them_says_so() {
    let mut rng = Rng::new(3);
    let task = WrongReward(CartPoleSwingUp::new());
    let c = check_at_random_transition(&task, &mut rng).unwrap();
    assert!(c.observe < 1e-4 && c.torques < 1e-7, "{c:?}");
    assert!(
        c.reward > 0.1,
        "the doubled reward derivative went unseen: {c:?}"
    );

    let push = BoxPush::new();
    let e = check_at_random_transition(&push, &mut rng)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "task `box-push` has no written derivatives of its observe"
    );
}

#[test]
fn tasks_by_name_take_their_parameters_and_refuse_the_unknown() {
    for name in TASK_NAMES {
        assert_eq!(make_task(name, &[]).unwrap().name(), *name);
    }
    // The physics step and the control period are the task's parameters.
    let task = make_task(
        "cartpole-swingup",
        &[("dt", 0.02), ("substeps", 1.0), ("force_max", 5.0)],
    )
    .unwrap();
    assert_eq!(task.sim_params().dt, 0.02);
    assert_eq!(task.substeps(), 1);
    let state = task.reset(&mut Rng::new(1), &mut []);
    let mut tau = [0.0; 2];
    task.torques(&state, &[1.0], &[], &mut tau);
    assert_eq!(tau, [5.0, 0.0]);
    let e = VecEnv::new(task, 2, &VecEnvOptions::default()).unwrap();
    assert_eq!(e.sim().simulator(0).unwrap().params.dt, 0.02);

    let err = |name: &str, p: &[(&str, f64)]| make_task(name, p).err().unwrap().to_string();
    assert_eq!(
        err("cartpole", &[]),
        "task `cartpole`: no such task (known: cartpole-swingup, quadruped-walk, quadruped-stand-up, box-push)"
    );
    assert_eq!(
        err("cartpole-swingup", &[("mass", 1.0)]),
        "task `cartpole-swingup`: no parameter `mass` (it has: force_max, x_limit, episode_steps, substeps, dt)"
    );
    assert_eq!(
        err("quadruped-walk", &[("substeps", 2.5)]),
        "task `quadruped-walk`: parameter `substeps` must be a whole number ≥ 1, got 2.5"
    );
    assert_eq!(
        err("quadruped-walk", &[("dt", f64::NAN)]),
        "task `quadruped-walk`: parameter `dt` must be a positive time step (s), got NaN"
    );
    assert_eq!(
        err("box-push", &[("f_max", -1.0)]),
        "task `box-push`: parameter `f_max` must be a positive force (N), got -1"
    );
}
