"""Stable-Baselines3 on moreau's vector environments.

``moreau.sb3.to_sb3(moreau.gym.make_vec("Hopper-v5", 16))`` is a
:class:`stable_baselines3.common.vec_env.VecEnv` over the same batch of
worlds, with SB3's conventions where they differ from Gymnasium's:

- **same-step autoreset**: an environment whose episode ends is reset in
  that step; the step returns its reset observation, with the episode's
  last one in ``info["terminal_observation"]``, and ``done`` true;
- ``done = terminated or truncated``, and ``info["TimeLimit.truncated"]``
  says a truncation (including a world whose physics failed, which moreau
  truncates and flags in ``info["failure"]``);
- infos are a list of dicts, one per environment, holding the keys the
  vector info holds for that environment (its ``_key`` masks);
- ``seed(s)`` seeds environment ``i`` with ``s + i`` at the next ``reset()``
  (SB3's rule), as ``moreau.gym``'s vector reset does.

Everything steps in the one :class:`moreau.BatchSim` (on the backend the
vector environment was made with); nothing is copied per environment.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

try:
    from stable_baselines3.common.vec_env.base_vec_env import VecEnv
except ImportError as e:  # pragma: no cover - a clear message without SB3
    raise ImportError("moreau.sb3 needs stable-baselines3: pip install stable-baselines3") from e

from moreau.gym import MoreauVectorEnv


class MoreauSB3VecEnv(VecEnv):
    """A :class:`moreau.gym.MoreauVectorEnv` as SB3's ``VecEnv`` (see the
    module's docstring)."""

    def __init__(self, venv: MoreauVectorEnv):
        if not isinstance(venv, MoreauVectorEnv):
            raise TypeError(f"expected a moreau.gym.MoreauVectorEnv, got {type(venv).__name__}")
        self.venv = venv
        self._actions: Optional[np.ndarray] = None
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)

    def _infos(self, info: dict[str, Any]) -> list[dict[str, Any]]:
        """The vector info as one dict per environment (the keys its masks
        give that environment)."""
        out: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for key, value in info.items():
            if key.startswith("_"):
                continue
            mask = info.get("_" + key, np.ones(self.num_envs, dtype=bool))
            for i in np.flatnonzero(mask):
                out[i][key] = value[i]
        return out

    def reset(self) -> np.ndarray:
        seeds = None if all(s is None for s in self._seeds) else list(self._seeds)
        options = self._options[0] if self._options and self._options[0] else None
        obs, info = self.venv.reset(seed=seeds, options=options)
        self.reset_infos = self._infos(info)
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self):
        if self._actions is None:
            raise RuntimeError("step_wait() without step_async()")
        actions, self._actions = self._actions, None
        obs, reward, terminated, truncated, info = self.venv.step(actions)
        done = terminated | truncated
        infos = self._infos(info)
        for i in range(self.num_envs):
            infos[i]["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
        if done.any():
            obs = obs.copy()
            ended = np.flatnonzero(done)
            for i in ended:
                infos[i]["terminal_observation"] = obs[i].copy()
            # Reset now (Gymnasium's next-step autoreset would do it in the
            # next step): the others step on untouched.
            reset_obs, reset_info = self.venv.reset(options={"reset_mask": done})
            obs[ended] = reset_obs[ended]
            for i, d in enumerate(self._infos(reset_info)):
                if done[i]:
                    self.reset_infos[i] = d
        return obs, reward.astype(np.float32), done, infos

    def close(self) -> None:
        self.venv.close()

    def _indices(self, indices) -> Sequence[int]:
        if indices is None:
            return range(self.num_envs)
        if isinstance(indices, int):
            return [indices]
        return indices

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        """The vector environment's attribute, once per index (the
        environments share one batch, hence one attribute)."""
        value = getattr(self.venv, attr_name)
        return [value for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        if indices is not None and len(self._indices(indices)) != self.num_envs:
            raise ValueError(
                f"set_attr({attr_name!r}) on some environments only: they share one batch"
            )
        setattr(self.venv, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        method = getattr(self.venv, method_name)
        result = method(*method_args, **method_kwargs)
        return [result for _ in self._indices(indices)]

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False for _ in self._indices(indices)]


def to_sb3(venv: MoreauVectorEnv) -> MoreauSB3VecEnv:
    """``venv`` as Stable-Baselines3's ``VecEnv`` (see the module docstring)."""
    return MoreauSB3VecEnv(venv)


__all__ = ["MoreauSB3VecEnv", "to_sb3"]
