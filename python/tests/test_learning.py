"""Learning: PPO (python/examples/ppo.py, a CleanRL-style single-file PPO on
JAX and optax; ppo_torch.py, the same in PyTorch on the gpu backend)
learns InvertedPendulum-v5 on moreau's vector environment, judged on fresh
episodes with the deterministic policy, beside random actions on the same
episodes; SHAC improves the cart-pole swing-up."""

import importlib.util
import pathlib
import sys

import numpy as np

import moreau.gym as mg



def _example(name):
    """python/examples/NAME.py as a module (registered: its dataclasses
    look their module up)."""
    spec = importlib.util.spec_from_file_location(
        name, pathlib.Path(__file__).resolve().parents[1] / "examples" / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


ppo = _example("ppo")
shac = _example("shac")
ppo_torch = _example("ppo_torch")


def _against_random(evaluate, act, seed=10_000):
    """The learned policy's and random actions' returns on the same 20
    fresh InvertedPendulum-v5 episodes (at most 1000 steps, reward 1 a step)."""
    evaluation = mg.make_vec("InvertedPendulum-v5", num_envs=20)
    learned = evaluate(evaluation, act, seed=seed)
    rng = np.random.default_rng(0)
    low, high = evaluation.single_action_space.low, evaluation.single_action_space.high
    random = evaluate(evaluation, lambda obs: rng.uniform(low, high, (len(obs), 1)), seed=seed)
    return learned, random


def test_ppo_learns_inverted_pendulum_on_moreau():
    envs = mg.make_vec("InvertedPendulum-v5", num_envs=16)
    result = ppo.train(envs, ppo.Config(total_steps=60_000, seed=1))
    assert result.curve, "no episode ended during training"
    # Fresh episodes: other seeds than training's.
    learned, random = _against_random(ppo.evaluate, result.act)
    print(f"PPO: {learned.mean():.1f} (min {learned.min():.0f}); random: {random.mean():.1f}")
    assert random.mean() < 10.0
    assert learned.mean() >= 500.0
    assert result.curve[-1][2] > 10 * random.mean()


def test_shac_improves_the_cartpole_swing_up():
    """SHAC (python/examples/shac.py: gradients through 50-step windows of
    64 worlds, moreau.autograd, on the library's task ``cartpole-swingup``
    differentiated through its written derivatives) for 60 windows (192k
    simulated steps, about 20 s on two cores): the deterministic policy's
    return on fresh episodes (reward ``(1 + cos θ)/2`` less small
    penalties, at most 250) beats the untrained policy's and no force at
    all (the pole hanging, about 0) by a wide margin: the pole is swung up
    part of the time. (Measured 2026-11-28: untrained −19.0, no force 0.1,
    trained 92.0 after 60 windows, 138.9 after 100.)"""
    import torch

    cfg = shac.Config(windows=60, seed=0)
    torch.manual_seed(cfg.seed)
    untrained = shac.evaluate(shac.mlp(5, 1, cfg.hidden), cfg, seed=1000)
    idle = shac.evaluate(lambda obs: torch.zeros(len(obs), 1, dtype=torch.float64), cfg, seed=1000)
    result = shac.train(cfg)
    trained = shac.evaluate(result.actor, cfg, seed=1000)
    print(f"SHAC cart-pole swing-up: untrained {untrained:.1f}, no force {idle:.1f}, trained {trained:.1f}")
    assert idle < 5
    assert trained > idle + 50
    assert trained > untrained + 50
    # The windows' mean reward rose over training.
    first = np.mean([c[-1] for c in result.curve[:10]])
    last = np.mean([c[-1] for c in result.curve[-10:]])
    assert last > first + 0.15, (first, last)


def test_torch_ppo_learns_inverted_pendulum_on_the_gpu_backend():
    """python/examples/ppo_torch.py on the "gpu" backend (the worlds on the
    device: lavapipe in CI), 64 environments with philox resets: after
    60 000 steps its deterministic policy's fresh episodes return well
    above random actions' (measured 1000, the most an episode gives)."""
    envs = mg.make_vec("InvertedPendulum-v5", 64, backend="gpu", reset_rng="philox")
    assert envs.batch.resident
    result = ppo_torch.train(envs, ppo_torch.Config(total_steps=60_000, num_steps=32, seed=1, device="cpu"))
    assert result.curve, "no episode ended during training"
    learned, random = _against_random(ppo_torch.evaluate, result.act)
    print(f"torch PPO: {learned.mean():.1f} (min {learned.min():.0f}); random: {random.mean():.1f}")
    assert random.mean() < 10.0
    assert learned.mean() >= 10 * random.mean()
    assert result.curve[-1][2] > 5 * random.mean()
