"""PPO in PyTorch on moreau's vector environments, in one file (CleanRL's
``ppo_continuous_action.py`` style), for thousands of environments on one
machine: the rollout's tensors live on the torch device (CUDA when there is
one), the environments on moreau's backend (``gpu``: the worlds on the
device; ``cpu``: on the cores), tensors in and out through
``moreau.gym.tensors.TorchVecEnv`` (pinned host memory on CUDA).

The algorithm is the one ``ppo.py`` (JAX) documents: a Gaussian policy
with a state-independent log standard deviation, two tanh layers of 64 for
actor and critic (orthogonal initialization), generalized advantage
estimation, the clipped surrogate and value losses, advantages normalized
per minibatch, Adam with a linearly annealed learning rate and a clipped
gradient norm, running normalizations of observations and returns. With
many environments the rollout is short (``num_steps`` 16 by default) and
the minibatches large.

Autoreset: moreau's ``NEXT_STEP`` (the step after an episode ends only
resets that environment: its transition is masked out of the loss; a
truncated episode bootstraps from the final observation). Resets draw
their noise with ``reset_rng="philox"`` (in the library, the same on every
backend).

    python python/examples/ppo_torch.py --task Ant-v5 --num-envs 4096 \\
        --backend gpu --steps 50000000 --out target/ppo-torch-ant

prints the mean return of the episodes each rollout finished, with the
wall clock, and writes them to ``OUT/curve.json``. Used by
``python/tests/test_learning.py`` (InvertedPendulum-v5 on the ``gpu``
backend: lavapipe in CI).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import torch
from torch import nn

import moreau.gym as mg
from moreau.gym.tensors import TorchVecEnv


@dataclass
class Config:
    total_steps: int = 10_000_000
    num_steps: int = 16  # steps per environment per rollout
    learning_rate: float = 3e-4
    anneal_lr: bool = True
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 8
    update_epochs: int = 5
    clip_coef: float = 0.2
    vf_coef: float = 0.5
    ent_coef: float = 0.0
    max_grad_norm: float = 0.5
    hidden: int = 64
    seed: int = 1
    device: str = "cuda" if torch.cuda.is_available() else "cpu"


class Normalizer:
    """Running mean and variance of a batch's rows (Chan et al.), on the device."""

    def __init__(self, shape, device):
        self.mean = torch.zeros(shape, dtype=torch.float64, device=device)
        self.var = torch.ones(shape, dtype=torch.float64, device=device)
        self.count = 1e-4

    def update(self, x: torch.Tensor) -> None:
        n = x.shape[0]
        mean, var = x.mean(0), x.var(0, unbiased=False)
        delta, total = mean - self.mean, self.count + n
        self.mean = self.mean + delta * n / total
        self.var = (self.var * self.count + var * n + delta**2 * self.count * n / total) / total
        self.count = total

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.mean) / torch.sqrt(self.var + 1e-8)).clamp(-10, 10).float()


def _layer(n_in: int, n_out: int, gain: float) -> nn.Linear:
    layer = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_dim: int, act_dim: int, hidden: int):
        super().__init__()
        root2 = float(np.sqrt(2.0))

        def mlp(out: int, gain: float) -> nn.Sequential:
            return nn.Sequential(
                _layer(obs_dim, hidden, root2), nn.Tanh(), _layer(hidden, hidden, root2), nn.Tanh(), _layer(hidden, out, gain)
            )

        self.actor, self.critic = mlp(act_dim, 0.01), mlp(1, 1.0)
        self.log_std = nn.Parameter(torch.zeros(act_dim))

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(obs)[:, 0]

    def distribution(self, obs: torch.Tensor) -> torch.distributions.Normal:
        return torch.distributions.Normal(self.actor(obs), self.log_std.exp())


@dataclass
class Result:
    agent: Agent
    obs_norm: Normalizer
    # (environment steps, wall-clock seconds, mean return of the episodes
    # the rollout finished)
    curve: list = field(default_factory=list)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """The deterministic policy (the Gaussian's mean) for raw observations."""
        with torch.no_grad():
            x = self.obs_norm(torch.as_tensor(obs, device=self.obs_norm.mean.device))
            return self.agent.actor(x).cpu().numpy()


def train(envs, cfg: Config, log: Optional[Callable[[str], None]] = None) -> Result:
    """PPO on the vector environment ``envs`` for ``cfg.total_steps``
    environment steps (summed over its environments)."""
    torch.manual_seed(cfg.seed)
    dev = torch.device(cfg.device)
    # Tensors in and out on `dev` (through pinned memory on CUDA).
    envs = TorchVecEnv(envs, dev)
    n, obs_dim = envs.num_envs, envs.single_observation_space.shape[0]
    act_dim = envs.single_action_space.shape[0]
    low = torch.as_tensor(envs.single_action_space.low, device=dev)
    high = torch.as_tensor(envs.single_action_space.high, device=dev)
    agent = Agent(obs_dim, act_dim, cfg.hidden).to(dev)
    optimizer = torch.optim.Adam(agent.parameters(), lr=cfg.learning_rate, eps=1e-5)
    batch = n * cfg.num_steps
    updates = max(cfg.total_steps // batch, 1)
    obs_norm, ret_norm = Normalizer((obs_dim,), dev), Normalizer((), dev)
    T = cfg.num_steps
    obs_buf = torch.zeros((T + 1, n, obs_dim), device=dev)
    act_buf = torch.zeros((T, n, act_dim), device=dev)
    logp_buf, rew_buf = torch.zeros((T, n), device=dev), torch.zeros((T, n), device=dev)
    val_buf = torch.zeros((T + 1, n), device=dev)
    term_buf, done_buf, valid_buf = (torch.zeros((T, n), dtype=torch.bool, device=dev) for _ in range(3))
    raw, _ = envs.reset(seed=cfg.seed)
    prev_done = torch.zeros(n, dtype=torch.bool, device=dev)
    discounted = torch.zeros(n, dtype=torch.float64, device=dev)
    episode_return = torch.zeros(n, dtype=torch.float64, device=dev)
    result, start, steps = Result(agent, obs_norm), time.perf_counter(), 0
    for u in range(updates):
        if cfg.anneal_lr:
            optimizer.param_groups[0]["lr"] = cfg.learning_rate * (1.0 - u / updates)
        finished = []
        for t in range(T):
            raw_t = torch.as_tensor(raw, device=dev)
            obs_norm.update(raw_t)
            obs = obs_norm(raw_t)
            with torch.no_grad():
                dist = agent.distribution(obs)
                action = dist.sample()
                obs_buf[t], act_buf[t], val_buf[t] = obs, action, agent.value(obs)
                logp_buf[t] = dist.log_prob(action).sum(-1)
            clipped = torch.maximum(torch.minimum(action, high), low)
            raw, reward, terminated, truncated, _ = envs.step(clipped)
            steps += n
            reward = torch.as_tensor(reward, device=dev)
            terminated = torch.as_tensor(terminated, device=dev)
            done = terminated | torch.as_tensor(truncated, device=dev)
            valid = ~prev_done
            discounted = torch.where(valid, discounted * cfg.gamma + reward, 0.0)
            ret_norm.update(discounted[valid] if valid.any() else discounted)
            episode_return += torch.where(valid, reward, 0.0)
            ended = done & valid
            if ended.any():
                finished.extend(episode_return[ended].tolist())
            episode_return[done] = 0.0
            rew_buf[t] = (reward / torch.sqrt(ret_norm.var + 1e-8)).clamp(-10, 10)
            term_buf[t], done_buf[t], valid_buf[t] = terminated, done, valid
            prev_done = done
        with torch.no_grad():
            last = obs_norm(torch.as_tensor(raw, device=dev))
            obs_buf[T], val_buf[T] = last, agent.value(last)
            # GAE: a transition's successor value is that of the observation
            # its step returned, zero when it terminated; the recursion stops
            # at every episode's end.
            adv = torch.zeros((T, n), device=dev)
            carry = torch.zeros(n, device=dev)
            for t in reversed(range(T)):
                delta = rew_buf[t] + cfg.gamma * val_buf[t + 1] * (~term_buf[t]) - val_buf[t]
                carry = delta + cfg.gamma * cfg.gae_lambda * (~done_buf[t]) * carry
                adv[t] = carry
            ret = adv + val_buf[:-1]
        flat = [x.reshape((batch,) + x.shape[2:]) for x in (obs_buf[:-1], act_buf, logp_buf, adv, ret, val_buf[:-1])]
        mask = valid_buf.reshape(batch).float()
        size = batch // cfg.num_minibatches
        for _ in range(cfg.update_epochs):
            perm = torch.randperm(batch, device=dev)
            for k in range(cfg.num_minibatches):
                idx = perm[k * size : (k + 1) * size]
                o, a, lp_old, ad, rt, v_old = (x[idx] for x in flat)
                m = mask[idx]
                count = m.sum().clamp(min=1.0)
                ad_mean = (ad * m).sum() / count
                ad = (ad - ad_mean) / (torch.sqrt(((ad - ad_mean) ** 2 * m).sum() / count) + 1e-8)
                dist = agent.distribution(o)
                ratio = (dist.log_prob(a).sum(-1) - lp_old).exp()
                pg = torch.maximum(-ad * ratio, -ad * ratio.clamp(1 - cfg.clip_coef, 1 + cfg.clip_coef))
                v = agent.value(o)
                v_clipped = v_old + (v - v_old).clamp(-cfg.clip_coef, cfg.clip_coef)
                v_loss = 0.5 * torch.maximum((v - rt) ** 2, (v_clipped - rt) ** 2)
                entropy = dist.entropy().sum(-1)
                loss = ((pg + cfg.vf_coef * v_loss - cfg.ent_coef * entropy) * m).sum() / count
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), cfg.max_grad_norm)
                optimizer.step()
        if finished:
            mean_return = float(np.mean(finished))
            result.curve.append((steps, time.perf_counter() - start, mean_return))
            if log is not None:
                log(f"update {u + 1}/{updates}  steps {steps}  {time.perf_counter() - start:.1f} s  mean return {mean_return:.1f}")
    return result


# The return of one fresh episode per environment.
evaluate = mg.episode_returns


def _main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="Ant-v5")
    p.add_argument("--num-envs", type=int, default=4096)
    p.add_argument("--backend", default="gpu", help="moreau's backend: gpu, cpu or cpu1")
    p.add_argument("--steps", type=int, default=10_000_000)
    p.add_argument("--num-steps", type=int, default=16, help="steps per environment per rollout")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", default=Config.device, help="torch's device")
    p.add_argument("--out", help="a folder for curve.json")
    args = p.parse_args()
    envs = mg.make_vec(args.task, args.num_envs, backend=args.backend, reset_rng="philox")
    cfg = Config(total_steps=args.steps, num_steps=args.num_steps, seed=args.seed, device=args.device)
    result = train(envs, cfg, log=print)
    if args.out:
        out = pathlib.Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        meta = {"task": args.task, "num_envs": args.num_envs, "backend": args.backend, "device": cfg.device}
        (out / "curve.json").write_text(json.dumps({"meta": meta, "curve": result.curve}, indent=1))


if __name__ == "__main__":
    _main()
