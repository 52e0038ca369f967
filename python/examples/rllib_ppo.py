"""PPO from Ray RLlib (its current API stack) on moreau's Gymnasium tasks,
with several EnvRunners: each runner is an actor holding one
:class:`moreau.BatchSim` of ``--envs-per-runner`` worlds
(:mod:`moreau.rllib`), and the learner trains one policy on what they all
sample. On this machine (a local Ray instance)::

    python python/examples/rllib_ppo.py --task Ant-v5 --env-runners 2 --envs-per-runner 32

On a cluster, start Ray on every node, then run the same script on the
head node with ``--address auto`` (the runners spread over the nodes)::

    ray start --head --port=6379                  # on the head node
    ray start --address=HEAD_IP:6379              # on every other node
    python python/examples/rllib_ppo.py --address auto --task Ant-v5 --env-runners 64

Every node needs moreau installed (``pip install "moreau[rllib]"``). Used
by ``python/tests/test_distributed.py`` (InvertedPendulum-v5, two runners,
one of them killed mid-training).
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Optional

import moreau.rllib
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.connectors.env_to_module import MeanStdFilter


def build_config(
    task: str = "Ant-v5",
    env_runners: int = 2,
    envs_per_runner: int = 32,
    cpus_per_runner: int = 1,
    backend: str = "cpu",
    gpus_per_runner: float = 0.0,
    train_batch: Optional[int] = None,
    minibatch: Optional[int] = None,
    epochs: int = 10,
    lr: float = 3e-4,
    normalize_observations: bool = True,
    seed: int = 0,
    env_config: Optional[dict[str, Any]] = None,
    engine: str = "moreau",
) -> PPOConfig:
    """RLlib's PPO on moreau's ``task``: ``env_runners`` EnvRunner actors of
    ``envs_per_runner`` worlds each on ``backend``, each actor given
    ``cpus_per_runner`` CPUs (its batch's threads) and ``gpus_per_runner``
    GPUs (``backend="gpu"`` needs one). The train batch defaults to 16
    steps of every world, at least 2 048 steps; minibatches to a 16th of
    it. ``engine="mujoco"``: the same on Gymnasium's own task (MuJoCo,
    ``envs_per_runner`` environments per runner in a ``SyncVectorEnv``), for
    comparison."""
    if engine not in ("moreau", "mujoco"):
        raise ValueError(f"engine must be 'moreau' or 'mujoco', got {engine!r}")
    if backend == "gpu" and gpus_per_runner <= 0:
        raise ValueError("backend='gpu' needs gpus_per_runner > 0 (each runner's batch opens an adapter)")
    if train_batch is None:
        train_batch = max(2048, 16 * max(env_runners, 1) * envs_per_runner)
    if engine == "moreau":
        env, env_settings = moreau.rllib.ENV_NAME, moreau.rllib.ENV_RUNNER_SETTINGS
        env_config = {"task": task, "backend": backend, **(env_config or {})}
    else:
        env, env_settings, env_config = task, {}, dict(env_config or {})
    config = (
        PPOConfig()
        .environment(
            env,
            env_config=env_config,
            # RLlib's default: the policy acts in [-1, 1], mapped onto the
            # control range and clipped to it before the environment (its
            # control cost then sees what the actuators do), as SB3 clips.
            normalize_actions=True,
        )
        .env_runners(
            num_env_runners=env_runners,
            num_envs_per_env_runner=envs_per_runner,
            num_cpus_per_env_runner=cpus_per_runner,
            num_gpus_per_env_runner=gpus_per_runner,
            rollout_fragment_length="auto",
            env_to_module_connector=(lambda env, spaces, device: MeanStdFilter()) if normalize_observations else None,
            **env_settings,
        )
        .training(
            train_batch_size_per_learner=train_batch,
            minibatch_size=minibatch or max(64, train_batch // 16),
            num_epochs=epochs,
            lr=lr,
            gamma=0.99,
            lambda_=0.95,
            vf_clip_param=10_000.0,
        )
        .rl_module(model_config={"fcnet_hiddens": [64, 64], "fcnet_activation": "tanh"})
        .fault_tolerance(restart_failed_env_runners=True)
        .debugging(seed=seed)
    )
    return config


def _main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="Ant-v5")
    p.add_argument("--env-runners", type=int, default=2)
    p.add_argument("--envs-per-runner", type=int, default=32)
    p.add_argument("--cpus-per-runner", type=int, default=1)
    p.add_argument("--backend", default="cpu", choices=["cpu", "cpu1", "gpu"])
    p.add_argument("--gpus-per-runner", type=float, default=0.0)
    p.add_argument("--iterations", type=int, default=500)
    p.add_argument("--target-return", type=float, default=None, help="stop once the mean return reaches it")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--address", default=None, help="a running Ray cluster ('auto'); default: a local instance")
    p.add_argument("--checkpoint", default=None, help="save the trained algorithm here")
    p.add_argument("--engine", default="moreau", choices=["moreau", "mujoco"],
                   help="mujoco: Gymnasium's own task, for comparison")
    args = p.parse_args()

    import ray

    if args.address is None:
        # A local instance with room for the runners and the learner (Ray's
        # CPUs are logical: on a small machine they share its cores).
        import os

        cpus = max(os.cpu_count() or 1, args.env_runners * args.cpus_per_runner + 1)
        ray.init(num_cpus=cpus, include_dashboard=False)
    else:
        ray.init(address=args.address, include_dashboard=False)
    algo = build_config(
        task=args.task,
        env_runners=args.env_runners,
        envs_per_runner=args.envs_per_runner,
        cpus_per_runner=args.cpus_per_runner,
        backend=args.backend,
        gpus_per_runner=args.gpus_per_runner,
        seed=args.seed,
        engine=args.engine,
    ).build_algo()
    start = time.perf_counter()
    for i in range(args.iterations):
        result = algo.train()
        runners = result["env_runners"]
        ret = runners.get("episode_return_mean")
        steps = runners.get("num_env_steps_sampled_lifetime")
        print(f"iteration {i + 1}: {steps} env steps, {time.perf_counter() - start:.0f} s, mean return {ret}", flush=True)
        if args.target_return is not None and ret is not None and ret >= args.target_return:
            break
    if args.checkpoint:
        print("saved", algo.save_to_path(args.checkpoint))
    algo.stop()
    ray.shutdown()


if __name__ == "__main__":
    _main()
