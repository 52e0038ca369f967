"""SHAC (short-horizon actor-critic, Xu et al. 2022) on moreau's batched
worlds, in PyTorch: the policy's loss is the discounted reward of a short
window of differentiable rollout steps (``moreau.autograd.step``: the step
Jacobians' transposes carry the gradient back through the dynamics) plus a
learned value at the window's end; the critic regresses TD(λ) targets of
the windows' rewards.

Tasks: moreau's own ``cartpole-swingup`` and ``quadruped-walk``
(:class:`MoreauTask`: the library's definitions, :class:`moreau.Task`,
differentiated through their written derivatives), and Gymnasium's
HalfCheetah-v5 and Ant-v5 on ``moreau.gym``'s models and resets, their
rewards written in torch (:class:`GymLocomotion`, :class:`GymAnt`; Ant's
episodes end when it falls, and its window losses and value targets stop
there). Policies on the Gym
tasks are evaluated on ``moreau.gym``'s own environments (their rewards,
terminations and time limits). All worlds run their episodes in step,
each episode being ``episode steps / horizon`` windows. Used by
``python/tests/test_learning.py`` (a short cart-pole run in CI) and from
the command line for longer ones::

    python python/examples/shac.py --task cartpole-swingup --windows 400
    python python/examples/shac.py --task quadruped-walk --windows 1000 --horizon 10 --num-envs 64
    python python/examples/shac.py --task HalfCheetah-v5 --windows 2000 --horizon 10 --num-envs 64
    python python/examples/shac.py --task Ant-v5 --windows 2000 --horizon 10 --num-envs 64

``--gradient-norms`` trains nothing: it measures the gradient of a window's
reward with respect to its actions against the horizon, for each contact
model (``--solvers``), beside central differences of the same model's
rollout (see :func:`window_gradients`).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import torch
from torch import nn

import moreau
from moreau.autograd import observe, reward, step, torques


@dataclass
class Config:
    task: str = "cartpole-swingup"
    num_envs: int = 64
    horizon: int = 50  # environment steps per window (divides the episode's)
    windows: int = 100
    gamma: float = 0.99
    lam: float = 0.95
    actor_lr: float = 2e-3
    critic_lr: float = 2e-3
    critic_iterations: int = 16
    target_alpha: float = 0.2  # target critic: θ' ← (1 − α)θ' + αθ
    action_std: float = 0.3  # exploration noise (reparameterized)
    hidden: int = 64
    seed: int = 0
    backend: str = "cpu"  # the batch's: "cpu", "cpu1" or "gpu"
    # Observations standardized by running statistics of the training
    # windows (actor and critic share them).
    normalize_observations: bool = False


def mlp(inputs: int, outputs: int, hidden: int) -> nn.Module:
    return nn.Sequential(
        nn.Linear(inputs, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, outputs)
    ).double()


class RunningNormalizer(nn.Module):
    """``(x − mean) / std`` by the running statistics of what
    :meth:`update` was given (Chan et al.'s parallel update); the identity
    until then. Differentiable in ``x``; its statistics are buffers."""

    def __init__(self, dim: int):
        super().__init__()
        self.register_buffer("mean", torch.zeros(dim, dtype=torch.float64))
        self.register_buffer("var", torch.ones(dim, dtype=torch.float64))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    @torch.no_grad()
    def update(self, x: torch.Tensor, combine=None) -> None:
        """Adds the rows of ``x``; ``combine(n, mean, var)``, if given, returns
        the moments of every process's rows (see ``distributed.py``)."""
        n, mean, var = len(x), x.mean(0), x.var(0, unbiased=False)
        if combine is not None:
            n, mean, var = combine(n, mean, var)
        total = self.count + n
        delta = mean - self.mean
        m2 = self.var * self.count + var * n + delta**2 * self.count * n / total
        self.mean += delta * n / total
        self.var = m2 / total
        self.count = total

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / torch.sqrt(self.var + 1e-8)


class MoreauTask:
    """One of moreau's own tasks (:class:`moreau.Task`: ``cartpole-swingup``,
    ``quadruped-walk``): its reset, observation, torques, reward and
    termination are the library's (``src/envs``), the ones its ``VecEnv``
    and the lab's learners use, differentiable through their written
    derivatives (``moreau.autograd.observe``, ``torques``, ``reward``).
    The physics step ``dt`` and the physics steps per environment step
    ``substeps`` are the task's parameters: a differentiable window costs
    in proportion to its physics steps, so :data:`TASKS` takes longer
    physics steps than the library's 1 ms, with the same control period
    (0.02 s). ``t`` holds each world's time in its episode (the
    quadruped's gait clock): :func:`env_step` advances it, whoever resets
    a world sets it to 0."""

    def __init__(self, n: int, name: str, dt: float, substeps: int, parameters=None, **sim):
        self.task = moreau.Task(name, dt=dt, substeps=substeps, **(parameters or {}))
        self.model = self.task.model
        self.batch = moreau.BatchSim(self.model, n, dt=dt, **sim)
        self.obs_dim, self.act_dim = self.task.obs_dim, self.task.action_dim
        self.episode_steps, self.substeps = self.task.max_episode_steps, substeps
        self.dt = self.task.control_dt  # one environment step
        self.t = torch.zeros(n, dtype=torch.float64)
        self.work = None  # Σ|τ q̇| dt over the last environment step

    def initial_states(self, rng: np.random.Generator):
        q, v, _ = self.task.reset(self.batch.nworlds, int(rng.integers(2**63)))
        return torch.tensor(q), torch.tensor(v)

    def observe(self, q, v):
        return observe(self.task, q, v, self.t.numpy())

    def torques(self, a, q, v):
        return torques(self.task, q, v, a)

    def power(self, tau, v):
        return (tau * v).abs().sum(dim=1)

    def reward(self, q_before, v_before, q, v, a):
        return reward(self.task, q_before, v_before, q, v, a, self.work)

    def terminated(self, q, v):
        return torch.from_numpy(self.task.terminated(q.detach().numpy(), v.detach().numpy()))


class TaskVectorEnv:
    """One of this file's tasks (its dynamics, reset, reward, termination
    and episode length) as a Gymnasium-style vector environment with
    NEXT_STEP autoreset, for ``ppo.py --task cartpole-swingup`` and
    ``--task quadruped-walk``: the same task for the first-order and the
    zeroth-order learner. Actions in [-1, 1]."""

    def __init__(self, task):
        from gymnasium.spaces import Box
        from gymnasium.vector import AutoresetMode

        self.metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}
        self.task = task
        self.num_envs = task.batch.nworlds
        self.single_observation_space = Box(-np.inf, np.inf, (task.obs_dim,), np.float64)
        self.single_action_space = Box(-1.0, 1.0, (task.act_dim,), np.float32)
        self._rng = np.random.default_rng()
        self._elapsed = np.zeros(self.num_envs, dtype=np.int64)
        self._needs_reset = np.zeros(self.num_envs, dtype=bool)

    def _observe(self) -> np.ndarray:
        q, v = torch.tensor(self.task.batch.q), torch.tensor(self.task.batch.v)
        return self.task.observe(q, v).numpy()

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        q, v = self.task.initial_states(self._rng)
        self.task.batch.set_states(q.numpy(), v.numpy())
        self.task.t.zero_()
        self._elapsed[:] = 0
        self._needs_reset[:] = False
        return self._observe(), {}

    def step(self, actions):
        a = torch.tensor(np.clip(np.asarray(actions, dtype=np.float64), -1.0, 1.0))
        batch = self.task.batch
        q0, v0 = torch.tensor(batch.q), torch.tensor(batch.v)
        with torch.no_grad():
            q, v = env_step(self.task, q0, v0, a, differentiable=False)
            reward = self.task.reward(q0, v0, q, v, a).numpy()
            terminated = self.task.terminated(q, v).numpy()
        self._elapsed += 1
        truncated = (self._elapsed >= self.task.episode_steps) & ~terminated
        # NEXT_STEP autoreset: the step after an episode's end resets it.
        resetting = self._needs_reset
        if resetting.any():
            fresh_q, fresh_v = self.task.initial_states(self._rng)
            q_all, v_all = batch.q, batch.v
            q_all[resetting], v_all[resetting] = fresh_q.numpy()[resetting], fresh_v.numpy()[resetting]
            batch.set_states(q_all, v_all)
            self.task.t[torch.from_numpy(resetting)] = 0.0
            self._elapsed[resetting] = 0
            reward[resetting] = 0.0
            terminated[resetting] = False
            truncated[resetting] = False
        self._needs_reset = terminated | truncated
        return self._observe(), reward, terminated, truncated, {}


class GymLocomotion:
    """A Gymnasium planar locomotion task on ``moreau.gym``'s model and reset
    (HalfCheetah-v5): observation ``qpos[1:], qvel``, reward ``(x⁺ − x)/dt
    − w_ctrl Σa²`` per environment step of ``frame_skip`` physics steps,
    episodes of 1000 steps, no termination: the task's definition, written
    in torch so that it is differentiable."""

    def __init__(self, n: int, task_id: str = "HalfCheetah-v5", ctrl_weight: float = 0.1, **sim):
        import moreau.gym

        self.task_id = task_id
        self.env = moreau.gym.make_vec(task_id, num_envs=n, **sim)
        self.model, self.batch = self.env.model, self.env.batch
        self.substeps, self.dt, self.ctrl_weight = self.env.params["frame_skip"], self.env.dt, ctrl_weight
        self.obs_dim = self.env.single_observation_space.shape[0]
        self.act_dim = self.model.nu
        self.episode_steps = self.env.max_episode_steps
        # Motors: τ = A·ctrl within the control range (actions in [-1, 1]).
        eye = np.eye(self.model.nu)
        self.gains = torch.tensor(
            np.stack([self.batch.actuator_forces(np.tile(e, (n, 1)))[0] for e in eye], axis=1)
        )
        self.t = torch.zeros(n, dtype=torch.float64)  # (unobserved)

    def initial_states(self, rng: np.random.Generator):
        self.env.reset(seed=int(rng.integers(2**31)))
        return torch.tensor(self.batch.q), torch.tensor(self.batch.v)

    def observe(self, q, v):
        return torch.cat([q[:, 1:], v], dim=1)

    def torques(self, a, q, v):
        return a @ self.gains.T

    def reward(self, q_before, v_before, q, v, a):
        return (q[:, 0] - q_before[:, 0]) / self.dt - self.ctrl_weight * (a**2).sum(dim=1)

    def terminated(self, q, v):
        return torch.zeros(len(q), dtype=torch.bool)


class GymAnt(GymLocomotion):
    """Gymnasium's Ant-v5 on ``moreau.gym``: observation ``q[2:], v``
    (moreau's coordinates: the torso's height, quaternion and the joints;
    velocities), reward ``(x⁺ − x)/dt + 1 (healthy) − 0.5 Σa²`` per
    environment step of 5 physics steps, terminated when the torso's
    height leaves [0.2, 1] m. The contact cost of Gymnasium's reward
    (``5e-4 Σ clip(cfrc_ext)²``, about 1e-3 per step) is left out of the
    differentiable reward; evaluation counts it (``moreau.gym``'s own
    reward)."""

    def __init__(self, n: int, **sim):
        super().__init__(n, "Ant-v5", ctrl_weight=0.5, **sim)
        self.obs_dim = self.model.nq - 2 + self.model.nv

    def observe(self, q, v):
        return torch.cat([q[:, 2:], v], dim=1)

    def healthy(self, q):
        return (q[:, 2] >= 0.2) & (q[:, 2] <= 1.0)

    def reward(self, q_before, v_before, q, v, a):
        forward = (q[:, 0] - q_before[:, 0]) / self.dt
        return forward + self.healthy(q).double() - self.ctrl_weight * (a**2).sum(dim=1)

    def terminated(self, q, v):
        return ~self.healthy(q.detach())


TASKS = {
    # One physics step of 20 ms per environment step (the library's task:
    # 20 of 1 ms), on a 10 m rail (the library's: 3 m). On the 3 m rail
    # SHAC's policy learns to run off it: its rewards are ≥ 0 and a
    # window's loss stops where the episode ends, so leaving the rail
    # costs it only the critic's value there, near 0 early on (after 200
    # windows the deterministic policy leaves the rail after 39 steps,
    # return 7.8; on the 10 m rail 136 after 100 windows, seed 0).
    "cartpole-swingup": partial(
        MoreauTask, name="cartpole-swingup", dt=0.02, substeps=1, parameters={"x_limit": 10.0}
    ),
    # 10 physics steps of 2 ms (the library's task: 20 of 1 ms).
    "quadruped-walk": partial(MoreauTask, name="quadruped-walk", dt=0.002, substeps=10),
    "HalfCheetah-v5": GymLocomotion,
    "Ant-v5": GymAnt,
}


@dataclass
class Result:
    actor: nn.Module
    # (window, environment steps so far, wall-clock s, mean reward per
    # environment step of the window)
    curve: list = field(default_factory=list)


def env_step(task, q, v, a, differentiable: bool = True):
    """One environment step: ``substeps`` physics steps under the action's
    torques (a PD task's recomputed at every physics step), differentiable
    (``moreau.autograd.step``) or plain (``BatchSim.step`` from the worlds'
    states, ``q`` and ``v`` being theirs). Tasks with a ``power`` get the
    step's mechanical work ``Σ P h`` in ``task.work``; every world's time
    ``task.t`` advances by the step."""
    h = task.dt / task.substeps
    work = 0.0
    for _ in range(task.substeps):
        tau = task.torques(a, q, v)
        if differentiable:
            q, v = step(task.batch, q, v, tau, task.model)
        else:
            task.batch.step(np.ascontiguousarray(tau.numpy()))
            if task.batch.failures:
                world, why = task.batch.failures[0]
                raise RuntimeError(f"world {world}'s step failed: {why}")
            q, v = torch.tensor(task.batch.q), torch.tensor(task.batch.v)
        if hasattr(task, "power"):
            work = work + task.power(tau, v) * h
    task.work = work
    task.t = task.t + task.dt
    return q, v


def evaluate(actor, cfg: Config, seed: int, n: int = 16) -> float:
    """Mean return of ``n`` fresh episodes with the deterministic policy
    (``tanh`` of the actor's output): on the Gym tasks, ``moreau.gym``'s
    own episodes and rewards."""
    task = TASKS[cfg.task](n)
    if isinstance(task, GymLocomotion):
        return evaluate_gym(actor, task, seed)
    q, v = task.initial_states(np.random.default_rng(seed))
    task.t.zero_()
    total = torch.zeros(n, dtype=torch.float64)
    alive = torch.ones(n, dtype=torch.bool)
    with torch.no_grad():
        for _ in range(task.episode_steps):
            a = torch.tanh(actor(task.observe(q, v)))
            q1, v1 = env_step(task, q, v, a)
            total += torch.where(alive, task.reward(q, v, q1, v1, a), 0.0)
            alive &= ~task.terminated(q1, v1)
            q, v = q1, v1
    return float(total.mean())


def evaluate_gym(actor, task: GymLocomotion, seed: int) -> float:
    """Mean return of each world's first episode of ``moreau.gym``'s vector
    environment under the deterministic policy, observing the worlds'
    states as in training."""
    env = task.env
    env.reset(seed=seed)
    n = env.num_envs
    total, running = np.zeros(n), np.ones(n, dtype=bool)
    with torch.no_grad():
        while running.any():
            obs = task.observe(torch.tensor(task.batch.q), torch.tensor(task.batch.v))
            a = torch.tanh(actor(obs)).numpy()
            _, r, terminated, truncated, _ = env.step(a)
            total += np.where(running, r, 0.0)
            running &= ~(terminated | truncated)
    return float(total.mean())


def train(cfg: Config, log=None, sync=None) -> Result:
    """Trains for ``cfg.windows`` windows. ``sync``: one process of several
    training one policy (``distributed.py``'s ``Sync``: replicas made
    equal, gradients and observation statistics averaged over the
    processes, each process's worlds drawn from its own seed)."""
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    task = TASKS[cfg.task](cfg.num_envs, backend=cfg.backend)
    normalizer = RunningNormalizer(task.obs_dim) if cfg.normalize_observations else nn.Identity()
    actor = nn.Sequential(normalizer, mlp(task.obs_dim, task.act_dim, cfg.hidden))
    critic = nn.Sequential(normalizer, mlp(task.obs_dim, 1, cfg.hidden))
    target = nn.Sequential(normalizer, mlp(task.obs_dim, 1, cfg.hidden))
    target.load_state_dict(critic.state_dict())
    actor_opt = torch.optim.Adam(actor.parameters(), lr=cfg.actor_lr)
    critic_opt = torch.optim.Adam(critic.parameters(), lr=cfg.critic_lr)
    if sync is not None:
        sync.replicate(actor, critic, target)
        # Each process's own initial states and exploration noise.
        seed = sync.seed(cfg.seed)
        torch.manual_seed(seed)
        rng = np.random.default_rng(seed)
    result = Result(actor)
    start = time.perf_counter()
    q, v = task.initial_states(rng)
    task.t.zero_()
    elapsed = 0
    alive = torch.ones(cfg.num_envs, dtype=torch.float64)
    for w in range(cfg.windows):
        if elapsed >= task.episode_steps:
            q, v = task.initial_states(rng)
            task.t.zero_()
            elapsed = 0
            alive = torch.ones(cfg.num_envs, dtype=torch.float64)
        elif (alive == 0).any():
            # Fallen worlds start afresh (the others go on).
            q_new, v_new = task.initial_states(rng)
            fallen = (alive == 0)[:, None]
            q, v = torch.where(fallen, q_new, q), torch.where(fallen, v_new, v)
            task.t = torch.where(fallen[:, 0], 0.0, task.t)
            alive = torch.ones(cfg.num_envs, dtype=torch.float64)
        q, v = q.detach(), v.detach()
        loss = torch.zeros((), dtype=torch.float64)
        discount = 1.0
        observations, rewards, masks, running = [task.observe(q, v).detach()], [], [], []
        for t in range(cfg.horizon):
            running.append(alive.clone())
            mean = actor(task.observe(q, v))
            a = torch.tanh(mean + cfg.action_std * torch.randn_like(mean))
            q1, v1 = env_step(task, q, v, a)
            # A world's window ends with its episode: no reward after it.
            r = task.reward(q, v, q1, v1, a) * alive
            alive = alive * (~task.terminated(q1, v1)).double()
            q, v = q1, v1
            loss = loss - discount * r.sum()
            discount *= cfg.gamma
            rewards.append(r.detach())
            masks.append(alive.clone())
            observations.append(task.observe(q, v).detach())
        elapsed += cfg.horizon
        # The value at the window's end for the worlds still running
        # (time-limit truncation bootstraps too).
        loss = loss - discount * (alive * target(task.observe(q, v))[:, 0]).sum()
        loss = loss / (cfg.num_envs * cfg.horizon)
        actor_opt.zero_grad()
        loss.backward()
        if sync is not None:
            sync.average_gradients(actor)
        nn.utils.clip_grad_norm_(actor.parameters(), 1.0)
        actor_opt.step()

        # Critic: TD(λ) targets of the window from the target critic.
        with torch.no_grad():
            values = torch.stack([target(o)[:, 0] for o in observations])  # (h + 1, n)
            targets = torch.zeros(cfg.horizon, cfg.num_envs, dtype=torch.float64)
            ahead = values[-1]
            for t in reversed(range(cfg.horizon)):
                after = (1 - cfg.lam) * values[t + 1] + cfg.lam * ahead
                ahead = rewards[t] + cfg.gamma * masks[t] * after
                targets[t] = ahead
        # (The states of worlds whose episode ended in the window are not
        # the critic's.)
        keep = torch.cat(running) > 0
        inputs = torch.cat(observations[:-1])[keep]
        if cfg.normalize_observations:
            normalizer.update(inputs, combine=None if sync is None else sync.combine_moments)
        flat_targets = targets.reshape(-1)[keep]
        for _ in range(cfg.critic_iterations):
            critic_opt.zero_grad()
            critic_loss = ((critic(inputs)[:, 0] - flat_targets) ** 2).mean()
            critic_loss.backward()
            if sync is not None:
                sync.average_gradients(critic)
            critic_opt.step()
        with torch.no_grad():
            for p, pt in zip(critic.parameters(), target.parameters()):
                pt.mul_(1 - cfg.target_alpha).add_(cfg.target_alpha * p)
        mean_reward = float(torch.stack(rewards).mean())
        if sync is not None:
            mean_reward = sync.mean(mean_reward)
        steps = (w + 1) * cfg.horizon * cfg.num_envs * (1 if sync is None else sync.world_size)
        result.curve.append((w + 1, steps, time.perf_counter() - start, mean_reward))
        if log is not None and (w + 1) % 10 == 0:
            log(f"window {w + 1}/{cfg.windows}: {steps} steps, mean reward per step {mean_reward:.3f}")
    return result


def window_gradients(task, horizons, seed: int = 0, settle: int = 20, eps: float = 1e-6):
    """The gradient of a window's total reward with respect to its actions
    (random, std 0.5) from a state that settled ``settle`` steps on the
    ground, for each horizon: ``(horizon, gradient norm, directional
    derivative by autograd, by central differences of step ``eps``)``.

    Whatever solver the task's batch runs (its contact model), the
    backward pass differentiates the NCP's modes at the impulses that
    solver found (``moreau.contact`` sensitivity): the central differences
    are those of the model's own rollout, so where they part from autograd
    the model's impulses are not an NCP solution's (a relaxed or linearized
    cone) or the rollout crossed a kink."""
    n = task.batch.nworlds
    q0, v0 = task.initial_states(np.random.default_rng(seed))
    task.t.zero_()
    zero = torch.zeros(n, task.act_dim, dtype=torch.float64)
    with torch.no_grad():
        for _ in range(settle):
            q0, v0 = env_step(task, q0, v0, zero)
    t0 = task.t.clone()
    rows = []
    for h in horizons:
        rng = np.random.default_rng(seed + h)
        actions = 0.5 * rng.standard_normal((h, n, task.act_dim))

        def total(a):
            q, v, r = q0, v0, 0.0
            task.t = t0.clone()
            for t in range(h):
                q1, v1 = env_step(task, q, v, a[t])
                r = r + task.reward(q, v, q1, v1, a[t]).sum()
                q, v = q1, v1
            return r

        a = torch.tensor(actions, requires_grad=True)
        total(a).backward()
        g = a.grad.numpy()
        d = rng.standard_normal(actions.shape)
        with torch.no_grad():
            fd = (total(torch.tensor(actions + eps * d)) - total(torch.tensor(actions - eps * d))).item() / (2 * eps)
        rows.append((h, float(np.linalg.norm(g)), float((g * d).sum()), fd))
    return rows


def gradient_norms(task_id: str, solvers, horizons, n: int = 4, print_rows: bool = True):
    """:func:`window_gradients` for each contact model (``solvers``, each
    at tolerance 1e-10 so that the differences see the model, not its
    solver's stopping point): rows ``{solver, horizon, norm, autograd,
    differences, relative difference}``, printed as they come."""
    rows = []
    if print_rows:
        print(f"{task_id}: gradient of a window's total reward with respect to its actions ({n} worlds)")
        print(f"{'model':>10} {'horizon':>8} {'norm':>11} {'autograd':>16} {'differences':>16} {'rel. diff':>10}")
    for solver in solvers:
        task = TASKS[task_id](n, solver=solver, tolerance=1e-10)
        for h, norm, analytic, fd in window_gradients(task, horizons):
            rel = abs(analytic - fd) / max(abs(fd), 1e-12)
            rows.append(dict(solver=solver, horizon=h, norm=norm, autograd=analytic, differences=fd, relative=rel))
            if print_rows:
                print(f"{solver:>10} {h:8d} {norm:11.3e} {analytic:16.9e} {fd:16.9e} {rel:10.1e}", flush=True)
    return rows


def _main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="cartpole-swingup", choices=sorted(TASKS))
    p.add_argument("--windows", type=int, default=400)
    p.add_argument("--num-envs", type=int, default=64)
    p.add_argument("--horizon", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--normalize-observations", action="store_true", help="standardize observations by running statistics"
    )
    p.add_argument("--out", default=None, help="write the curve (JSON) here")
    p.add_argument(
        "--gradient-norms",
        action="store_true",
        help="train nothing: print the norm of a window's reward gradient against its horizon",
    )
    p.add_argument(
        "--solvers",
        default=moreau.DEFAULT_SOLVER,
        help="contact models (moreau's solvers) of --gradient-norms, comma-separated",
    )
    p.add_argument("--horizons", default="1,5,10,20,40", help="window lengths of --gradient-norms")
    args = p.parse_args()
    if args.gradient_norms:
        rows = gradient_norms(args.task, args.solvers.split(","), [int(h) for h in args.horizons.split(",")])
        if args.out:
            import json
            import pathlib

            path = pathlib.Path(args.out)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"task": args.task, "rows": rows}, indent=1))
        return
    cfg = Config(
        task=args.task,
        windows=args.windows,
        num_envs=args.num_envs,
        horizon=args.horizon,
        seed=args.seed,
        normalize_observations=args.normalize_observations,
    )
    torch.manual_seed(cfg.seed)
    task = TASKS[cfg.task](1)
    before = evaluate(mlp(task.obs_dim, task.act_dim, cfg.hidden), cfg, seed=1000)
    t0 = time.perf_counter()
    result = train(cfg, log=print)
    wall = time.perf_counter() - t0
    after = evaluate(result.actor, cfg, seed=1000)
    steps = cfg.windows * cfg.horizon * cfg.num_envs
    print(f"{cfg.task}: {steps} environment steps in {wall:.1f} s; return on fresh episodes {before:.1f} -> {after:.1f}")
    if args.out:
        import json
        import pathlib

        path = pathlib.Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"config": cfg.__dict__, "wall_s": wall, "return_before": before,
                                    "return_after": after, "curve": result.curve}))


if __name__ == "__main__":
    _main()
