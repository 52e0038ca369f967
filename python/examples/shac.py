"""SHAC (short-horizon actor-critic, Xu et al. 2022) on moreau's batched
worlds, in PyTorch: the policy's loss is the discounted reward of a short
window of differentiable rollout steps (``moreau.autograd.step``: the step
Jacobians' transposes carry the gradient back through the dynamics) plus a
learned value at the window's end; the critic regresses TD(λ) targets of
the windows' rewards.

The task here is the cart-pole swing-up on moreau's ``cartpole`` scene
(the pole hangs at θ = π, upright is θ = 0; a force on the cart, the pole
unactuated): reward ``cos θ − 0.05 x² − 0.001 (f/f_max)²`` per step of
``dt = 0.02 s``, episodes of 250 steps (5 s) that all worlds run in step,
each episode being ``250 / horizon`` windows. Used by
``python/tests/test_learning.py`` (a short run in CI) and from the command
line for longer ones::

    python python/examples/shac.py --windows 400 --num-envs 64
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

import moreau
from moreau.autograd import step


@dataclass
class Config:
    num_envs: int = 64
    horizon: int = 50  # steps per window (divides episode_steps)
    episode_steps: int = 250
    windows: int = 100
    dt: float = 0.02
    max_force: float = 10.0
    gamma: float = 0.99
    lam: float = 0.95
    actor_lr: float = 2e-3
    critic_lr: float = 2e-3
    critic_iterations: int = 16
    target_alpha: float = 0.2  # target critic: θ' ← (1 − α)θ' + αθ
    action_std: float = 0.3  # exploration noise (reparameterized)
    hidden: int = 64
    seed: int = 0


def observe(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    x, th = q[:, 0], q[:, 1]
    return torch.stack([x, torch.sin(th), torch.cos(th), v[:, 0], v[:, 1]], dim=1)


def reward(q: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    return torch.cos(q[:, 1]) - 0.05 * q[:, 0] ** 2 - 1e-3 * action[:, 0] ** 2


def mlp(inputs: int, outputs: int, hidden: int) -> nn.Module:
    return nn.Sequential(
        nn.Linear(inputs, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, outputs)
    ).double()


@dataclass
class Result:
    actor: nn.Module
    # (window, wall-clock s, mean undiscounted reward per step of the window)
    curve: list = field(default_factory=list)


def initial_states(rng: np.random.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    q = np.zeros((n, 2))
    q[:, 1] = np.pi + rng.uniform(-0.2, 0.2, n)
    v = rng.uniform(-0.1, 0.1, (n, 2))
    return torch.tensor(q), torch.tensor(v)


def act(actor: nn.Module, obs: torch.Tensor) -> torch.Tensor:
    """The deterministic action in [-1, 1] (scaled by max_force on the cart)."""
    return torch.tanh(actor(obs))


def evaluate(actor: nn.Module, cfg: Config, seed: int, n: int = 16) -> float:
    """Mean return of ``n`` fresh episodes with the deterministic policy."""
    model = moreau.scene("cartpole")
    batch = moreau.BatchSim(model, n, dt=cfg.dt)
    q, v = initial_states(np.random.default_rng(seed), n)
    total = torch.zeros(n, dtype=torch.float64)
    with torch.no_grad():
        for _ in range(cfg.episode_steps):
            a = act(actor, observe(q, v))
            tau = torch.cat([a * cfg.max_force, torch.zeros_like(a)], dim=1)
            q, v = step(batch, q, v, tau, model)
            total += reward(q, a)
    return float(total.mean())


def train(cfg: Config, log=None) -> Result:
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    model = moreau.scene("cartpole")
    batch = moreau.BatchSim(model, cfg.num_envs, dt=cfg.dt)
    actor, critic = mlp(5, 1, cfg.hidden), mlp(5, 1, cfg.hidden)
    target = mlp(5, 1, cfg.hidden)
    target.load_state_dict(critic.state_dict())
    actor_opt = torch.optim.Adam(actor.parameters(), lr=cfg.actor_lr)
    critic_opt = torch.optim.Adam(critic.parameters(), lr=cfg.critic_lr)
    result = Result(actor)
    start = time.perf_counter()
    q, v = initial_states(rng, cfg.num_envs)
    elapsed = 0
    for w in range(cfg.windows):
        if elapsed >= cfg.episode_steps:
            q, v = initial_states(rng, cfg.num_envs)
            elapsed = 0
        q, v = q.detach(), v.detach()
        loss = torch.zeros((), dtype=torch.float64)
        discount = 1.0
        observations, rewards = [observe(q, v).detach()], []
        for t in range(cfg.horizon):
            mean = actor(observe(q, v))
            a = torch.tanh(mean + cfg.action_std * torch.randn_like(mean))
            tau = torch.cat([a * cfg.max_force, torch.zeros_like(a)], dim=1)
            q, v = step(batch, q, v, tau, model)
            r = reward(q, a)
            loss = loss - discount * r.sum()
            discount *= cfg.gamma
            rewards.append(r.detach())
            observations.append(observe(q, v).detach())
        elapsed += cfg.horizon
        # The value at the window's end (time-limit truncation bootstraps too).
        loss = loss - discount * target(observe(q, v)).sum()
        loss = loss / (cfg.num_envs * cfg.horizon)
        actor_opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(actor.parameters(), 1.0)
        actor_opt.step()

        # Critic: TD(λ) targets of the window from the target critic.
        with torch.no_grad():
            values = torch.stack([target(o)[:, 0] for o in observations])  # (h + 1, n)
            targets = torch.zeros(cfg.horizon, cfg.num_envs, dtype=torch.float64)
            ahead = values[-1]
            for t in reversed(range(cfg.horizon)):
                ahead = rewards[t] + cfg.gamma * ((1 - cfg.lam) * values[t + 1] + cfg.lam * ahead)
                targets[t] = ahead
        inputs = torch.cat(observations[:-1])
        flat_targets = targets.reshape(-1)
        for _ in range(cfg.critic_iterations):
            critic_opt.zero_grad()
            critic_loss = ((critic(inputs)[:, 0] - flat_targets) ** 2).mean()
            critic_loss.backward()
            critic_opt.step()
        with torch.no_grad():
            for p, pt in zip(critic.parameters(), target.parameters()):
                pt.mul_(1 - cfg.target_alpha).add_(cfg.target_alpha * p)
        mean_reward = float(torch.stack(rewards).mean())
        result.curve.append((w + 1, time.perf_counter() - start, mean_reward))
        if log is not None and (w + 1) % 10 == 0:
            log(f"window {w + 1}/{cfg.windows}: mean reward per step {mean_reward:.3f}")
    return result


def _main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--windows", type=int, default=400)
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    cfg = Config(windows=args.windows, num_envs=args.num_envs, seed=args.seed)
    torch.manual_seed(cfg.seed)
    before = evaluate(mlp(5, 1, cfg.hidden), cfg, seed=1000)
    t0 = time.perf_counter()
    result = train(cfg, log=print)
    wall = time.perf_counter() - t0
    after = evaluate(result.actor, cfg, seed=1000)
    steps = cfg.windows * cfg.horizon * cfg.num_envs
    print(f"{steps} simulated steps in {wall:.1f} s; return on fresh episodes {before:.1f} -> {after:.1f}")


if __name__ == "__main__":
    _main()
