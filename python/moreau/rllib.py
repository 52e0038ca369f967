"""Ray RLlib on moreau's vector environments (RLlib's current API stack).

::

    import moreau.rllib
    from ray.rllib.algorithms.ppo import PPOConfig

    config = (
        PPOConfig()
        .environment("moreau", env_config={"task": "Ant-v5", "backend": "cpu"})
        .env_runners(num_env_runners=2, num_envs_per_env_runner=64,
                     num_cpus_per_env_runner=1, **moreau.rllib.ENV_RUNNER_SETTINGS)
    )

Importing this module registers the environment ``"moreau"`` with Ray
(:func:`register`; Ray's registry carries the creator to the EnvRunner
actors, before or after ``ray.init``). Each EnvRunner makes one
:class:`moreau.gym.MoreauVectorEnv` of ``num_envs_per_env_runner`` worlds
(one :class:`moreau.BatchSim`), through Gymnasium's vector entry point: no
per-world Python environments, no ``SyncVectorEnv``.

``env_config``:

- ``task`` (required): a Gymnasium task of :data:`moreau.gym.TASKS`
  (``"Ant-v5"``, ``"InvertedPendulum-v5"``, …);
- ``backend``: ``"cpu"`` (the default: the worlds on the runner's threads),
  ``"cpu1"`` or ``"gpu"``;
- ``threads``: the threads the runner's batch steps on; by default the CPUs
  Ray gave the actor (``num_cpus_per_env_runner``), so that runners sharing
  a machine do not each start one thread per core. In the driver (no
  assigned CPUs) the pool is left as it is;
- anything else: the task's and the batch's keywords, as
  :func:`moreau.gym.make_vec` takes them (``ctrl_cost_weight``, ``solver``,
  ``tolerance``, …).

Seeds: RLlib resets runner ``k``'s environments once with ``seed + k``
(``config.debugging(seed=…)``). Gymnasium's rule (``seed + i`` for world
``i``) would give runner 0's world 1 the stream of runner 1's world 0, so
here world ``i`` of a runner reset with ``s`` draws from
``SeedSequence([s, i])``: distinct per runner and per world, and the same on
a rerun.

A world whose physics fails is truncated and flagged in ``info["failure"]``
(as in :mod:`moreau.gym`) and reset at the next step; the runner goes on. A
runner that dies is replaced by RLlib (``restart_failed_env_runners``, on by
default).

The CPU backends never open a GPU adapter; ``backend="gpu"`` needs the
runner to have one (``num_gpus_per_env_runner``).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import numpy as np

try:
    import gymnasium
    from gymnasium.vector import VectorWrapper
    from ray.tune.registry import register_env
except ImportError as e:  # pragma: no cover - a clear message without Ray
    raise ImportError('moreau.rllib needs Ray RLlib: pip install "ray[rllib]" torch') from e

import moreau
from moreau.gym import TASKS, MoreauEnv, MoreauVectorEnv

#: The name :func:`register` gives moreau's environments by default.
ENV_NAME = "moreau"

#: The EnvRunner settings moreau's environments need:
#: ``config.env_runners(..., **ENV_RUNNER_SETTINGS)``. RLlib would otherwise
#: make ``num_envs_per_env_runner`` single-world environments and step them
#: one by one (``SyncVectorEnv``); Gymnasium's vector entry point makes one
#: batch of that many worlds.
ENV_RUNNER_SETTINGS: dict[str, Any] = {"gym_env_vectorize_mode": gymnasium.VectorizeMode.VECTOR_ENTRY_POINT}

_RESERVED = ("task", "backend", "threads", "num_envs")


def world_seeds(seed: int, num_envs: int) -> list[int]:
    """The seeds of a runner's ``num_envs`` worlds when RLlib resets it with
    ``seed``: world ``i`` gets a 63-bit draw of ``SeedSequence([seed, i])``."""
    if seed < 0:
        raise ValueError(f"seed must be non-negative, got {seed}")
    return [
        int(np.random.SeedSequence([seed, i]).generate_state(1, np.uint64)[0] >> np.uint64(1))
        for i in range(num_envs)
    ]


class RunnerVectorEnv(VectorWrapper):
    """A :class:`moreau.gym.MoreauVectorEnv` as one EnvRunner's environment:
    an integer reset seed is spread over the worlds by :func:`world_seeds`
    (see the module's docstring); everything else is the wrapped
    environment's."""

    def __init__(self, env: MoreauVectorEnv):
        super().__init__(env)

    def reset(self, *, seed: Optional[Any] = None, options: Optional[dict] = None):
        if isinstance(seed, (int, np.integer)):
            seed = world_seeds(int(seed), self.num_envs)
        return self.env.reset(seed=seed, options=options)


def _assigned_cpus() -> Optional[int]:
    """The CPUs Ray assigned to this worker (None in the driver or outside Ray)."""
    try:
        import ray

        if not ray.is_initialized():
            return None
        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU")
    except Exception:  # pragma: no cover - outside an actor there is nothing to read
        return None
    if not cpus:
        return None
    return max(1, int(cpus))


def _limit_threads(threads: Optional[Any]) -> None:
    if threads is None:
        threads = _assigned_cpus()
        if threads is None:
            return
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise ValueError(f"env_config['threads'] must be a positive integer, got {threads!r}")
    moreau.set_num_threads(int(threads))


def make_env(config: Mapping[str, Any]):
    """RLlib's environment creator: a :class:`RunnerVectorEnv` of
    ``config["num_envs"]`` worlds when RLlib asks for a vector environment
    (the vector entry point), else one :class:`moreau.gym.MoreauEnv`. See
    the module's docstring for ``config``'s keys."""
    config = dict(config)
    task = config.get("task")
    if task is None:
        raise ValueError(
            f"moreau's RLlib environment needs env_config['task'], one of: {', '.join(sorted(TASKS))}"
        )
    if task not in TASKS:
        raise ValueError(f"env_config['task']: unknown task {task!r}; tasks: {', '.join(sorted(TASKS))}")
    backend = config.get("backend", "cpu")
    _limit_threads(config.get("threads"))
    kwargs = {k: v for k, v in config.items() if k not in _RESERVED}
    if "num_envs" in config:
        return RunnerVectorEnv(MoreauVectorEnv(task, int(config["num_envs"]), backend, **kwargs))
    return MoreauEnv(task, backend, **kwargs)


def register(name: str = ENV_NAME) -> str:
    """Registers moreau's environments with Ray under ``name`` (done for
    ``"moreau"`` when this module is imported) and returns the name."""
    register_env(name, make_env)
    return name


register()

__all__ = ["ENV_NAME", "ENV_RUNNER_SETTINGS", "RunnerVectorEnv", "make_env", "register", "world_seeds"]
