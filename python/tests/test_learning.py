"""Learning: PPO (python/examples/ppo.py, a CleanRL-style single-file PPO on
JAX and optax) learns InvertedPendulum-v5 on moreau's vector environment,
judged on fresh episodes with the deterministic policy, beside random
actions on the same episodes."""

import importlib.util
import pathlib
import sys

import numpy as np

import moreau.gym as mg

_spec = importlib.util.spec_from_file_location(
    "ppo", pathlib.Path(__file__).resolve().parents[1] / "examples" / "ppo.py"
)
ppo = importlib.util.module_from_spec(_spec)
sys.modules["ppo"] = ppo  # (its dataclasses look their module up)
_spec.loader.exec_module(ppo)


def test_ppo_learns_inverted_pendulum_on_moreau():
    envs = mg.make_vec("InvertedPendulum-v5", num_envs=16)
    result = ppo.train(envs, ppo.Config(total_steps=60_000, seed=1))
    assert result.curve, "no episode ended during training"
    # Fresh episodes: other seeds than training's, 20 environments, one
    # episode each (at most 1000 steps, reward 1 per step).
    evaluation = mg.make_vec("InvertedPendulum-v5", num_envs=20)
    learned = ppo.evaluate(evaluation, result.act, seed=10_000)
    rng = np.random.default_rng(0)
    low, high = evaluation.single_action_space.low, evaluation.single_action_space.high
    random = ppo.evaluate(evaluation, lambda obs: rng.uniform(low, high, (len(obs), 1)), seed=10_000)
    print(f"PPO: {learned.mean():.1f} (min {learned.min():.0f}); random: {random.mean():.1f}")
    assert random.mean() < 10.0
    assert learned.mean() >= 500.0
    assert result.curve[-1][2] > 10 * random.mean()
