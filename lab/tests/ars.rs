//! Augmented random search (the lab's `ars`) learns the cart-pole swing-up
//! of the library's RL tasks beyond random policies.

use moreau::envs::{CartPoleSwingUp, Rng, VecEnv, VecEnvOptions, world_seed};
use moreau_lab::ars::{Ars, ArsConfig, LinearPolicy, rollout};
use std::time::Instant;

#[test]
fn ars_learns_cartpole_swing_up_beyond_random_policies() {
    let t = Instant::now();
    let config = ArsConfig {
        directions: 16,
        top: 8,
        step_size: 0.05,
        noise: 0.05,
        eval_worlds: 4,
        normalize: true,
        seed: 0,
        ..Default::default()
    };
    let iterations = 25;
    let mut ars = Ars::new(CartPoleSwingUp::new(), config).unwrap();
    let mut curve = Vec::new();
    for _ in 0..iterations {
        curve.push(ars.iterate().unwrap());
    }
    let episodes = curve.last().unwrap().episodes;
    let ars_return = ars.evaluate(1234).unwrap();
    let t_ars = t.elapsed().as_secs_f64();
    println!(
        "ARS: {iterations} iterations, {episodes} episodes, eval return per iteration {:?}",
        curve
            .iter()
            .map(|r| r.eval_return.round())
            .collect::<Vec<_>>()
    );

    // The baseline: as many random linear policies (weights N(0, 1) on the
    // raw observations) as ARS ran episodes, one episode each; then the best
    // of them re-evaluated on the same fresh episodes as ARS's policy.
    let t = Instant::now();
    let nenv = ars.env().num_envs();
    let options = VecEnvOptions {
        autoreset: false,
        ..Default::default()
    };
    let mut e = VecEnv::new(CartPoleSwingUp::new(), nenv, &options).unwrap();
    let policy = LinearPolicy::zeros(e.obs_dim(), e.action_dim());
    let mut rng = Rng::new(77);
    let (mut returns, mut best) = (Vec::new(), (f64::NEG_INFINITY, Vec::new()));
    let mut batch = 0;
    while returns.len() < episodes {
        let weights: Vec<Vec<f64>> = (0..nenv)
            .map(|_| (0..policy.weights.len()).map(|_| rng.normal()).collect())
            .collect();
        let refs: Vec<&[f64]> = weights.iter().map(|w| w.as_slice()).collect();
        let seeds: Vec<u64> = (0..nenv).map(|w| world_seed(500 + batch, w)).collect();
        let r = rollout(&mut e, &policy, &refs, &seeds, None).unwrap();
        for (w, &ret) in r.returns.iter().enumerate() {
            if ret > best.0 {
                best = (ret, weights[w].clone());
            }
        }
        returns.extend(r.returns);
        batch += 1;
    }
    let random_mean = returns.iter().sum::<f64>() / returns.len() as f64;
    let refs: Vec<&[f64]> = (0..nenv).map(|_| best.1.as_slice()).collect();
    let seeds: Vec<u64> = (0..nenv).map(|w| world_seed(1234, w)).collect();
    let best_again = rollout(&mut e, &policy, &refs, &seeds, None).unwrap();
    let best_random = best_again.returns.iter().sum::<f64>() / nenv as f64;
    println!(
        "cart-pole swing-up (max return {}): ARS policy {ars_return:.2} ({t_ars:.1} s); {} random policies: mean {random_mean:.2}, best single episode {:.2}, best re-evaluated {best_random:.2} ({:.1} s)",
        CartPoleSwingUp::new().episode_steps,
        returns.len(),
        best.0,
        t.elapsed().as_secs_f64()
    );
    let max_return = CartPoleSwingUp::new().episode_steps as f64;
    assert!(
        ars_return > random_mean + 0.2 * max_return && ars_return > 2.0 * random_mean,
        "ARS {ars_return:.2} is not clearly above the random policies' mean {random_mean:.2}"
    );
    assert!(
        ars_return > best_random,
        "ARS {ars_return:.2} is below the best of {} random policies re-evaluated, {best_random:.2}",
        returns.len()
    );
}
