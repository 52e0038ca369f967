"""moreau's vector environments with torch tensors in and out.

``TorchVecEnv(moreau.gym.make_vec(...), device)`` takes the actions as a
torch tensor on any device and returns the observations, rewards,
terminations and truncations as tensors on ``device`` (the ``info`` dict
stays numpy, as the environment gives it).

What each step copies, counted in ``copies`` (bytes each way):

- On the CPU (``device="cpu"``): nothing beyond the environment's own
  arrays: the actions' tensor is read through ``Tensor.numpy()`` and the
  outputs wrapped by ``torch.from_numpy``, sharing their memory.
- On a CUDA device: the actions once, device to host, into page-locked
  (pinned) host memory, synchronously (the step needs them); each output
  once into a pinned host buffer (a host copy), then to the device
  asynchronously (``non_blocking``), so that the transfer overlaps the
  caller's next work. A pinned buffer is written again only once its last
  transfer has finished (a CUDA event per buffer).
- On another device (``mps``, …): ``Tensor.to`` both ways, unpinned.

The physics stays where the environment's backend keeps it (the ``gpu``
backend's worlds on its wgpu device; wgpu and CUDA share no memory, so the
rows cross the host).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import torch


class TorchVecEnv:
    """``envs`` (a ``moreau.gym`` vector environment) with torch tensors
    in and out on ``device`` (see the module's doc)."""

    def __init__(self, envs: Any, device: str | torch.device = "cpu"):
        self.envs = envs
        self.device = torch.device(device)
        self.num_envs = envs.num_envs
        self.single_observation_space = envs.single_observation_space
        self.single_action_space = envs.single_action_space
        self.observation_space = envs.observation_space
        self.action_space = envs.action_space
        self.pinned = self.device.type == "cuda"
        self.copies = {"to_host": 0, "to_device": 0}
        # Pinned host buffers by name (and the event of their last transfer).
        self._buffers: dict[str, torch.Tensor] = {}
        self._events: dict[str, Any] = {}

    def _buffer(self, name: str, like: torch.Tensor) -> torch.Tensor:
        buf = self._buffers.get(name)
        if buf is None or buf.shape != like.shape or buf.dtype != like.dtype:
            buf = torch.empty(like.shape, dtype=like.dtype, pin_memory=True)
            self._buffers[name] = buf
            self._events.pop(name, None)
        event = self._events.get(name)
        if event is not None:
            event.synchronize()
        return buf

    def _out(self, name: str, array: np.ndarray) -> torch.Tensor:
        t = torch.from_numpy(np.ascontiguousarray(array))
        if self.device.type == "cpu":
            return t
        if not self.pinned:
            self.copies["to_device"] += t.numel() * t.element_size()
            return t.to(self.device)
        buf = self._buffer(name, t)
        buf.copy_(t)
        out = buf.to(self.device, non_blocking=True)
        event = torch.cuda.Event()
        event.record()
        self._events[name] = event
        self.copies["to_device"] += buf.numel() * buf.element_size()
        return out

    def _actions(self, actions: torch.Tensor) -> np.ndarray:
        if not isinstance(actions, torch.Tensor):
            raise TypeError(f"actions must be a torch tensor, got {type(actions).__name__}")
        if tuple(actions.shape) != tuple(self.action_space.shape):
            raise ValueError(f"actions has shape {tuple(actions.shape)}, expected {self.action_space.shape}")
        if not actions.dtype.is_floating_point:
            raise ValueError(f"actions must be floating point, got {actions.dtype}")
        a = actions.detach()
        if a.device.type == "cpu":
            return a.contiguous().numpy()
        self.copies["to_host"] += a.numel() * a.element_size()
        if a.device.type == "cuda":
            buf = self._buffer("actions", a)
            buf.copy_(a)
            return buf.numpy()
        return a.cpu().numpy()

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        obs, info = self.envs.reset(seed=seed, options=options)
        return self._out("obs", obs), info

    def step(self, actions: torch.Tensor):
        obs, reward, terminated, truncated, info = self.envs.step(self._actions(actions))
        return (
            self._out("obs", obs),
            self._out("reward", reward),
            self._out("terminated", terminated),
            self._out("truncated", truncated),
            info,
        )

    def close(self) -> None:
        self.envs.close()
