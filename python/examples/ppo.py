"""PPO for continuous actions on a Gymnasium vector environment, in one file
(CleanRL's style: the whole algorithm readable top to bottom), on JAX and
optax (CPU wheels from PyPI).

The algorithm is Schulman et al.'s PPO with the choices CleanRL's
``ppo_continuous_action.py`` documents: a Gaussian policy with a
state-independent log standard deviation, two tanh layers of 64 for the
actor and for the critic (orthogonal initialization), generalized advantage
estimation, the clipped surrogate, a clipped value loss, advantages
normalized per minibatch, Adam with a linearly annealed learning rate and
the gradient's norm clipped, and running normalizations of observations and
returns.

Vector environments reset as Gymnasium >= 1.1 declares it in
``metadata["autoreset_mode"]``: with ``NEXT_STEP`` (moreau's and Gymnasium's
default) the step after an episode ends only resets that environment, so its
transition is masked out of the loss, and a truncated episode bootstraps from
the final observation the ending step returned.

Used by ``python/tests/test_learning.py`` (InvertedPendulum-v5 on moreau,
in CI) and, from the command line, to train a task on moreau and on MuJoCo
(Gymnasium's own ``make_vec``, sync) with the same script and budget, plot
both learning curves and save the policies, then run each saved policy on
both engines::

    python python/examples/ppo.py --task HalfCheetah-v5 --steps 1000000 \\
        --num-envs 16 --seeds 1,2,3 --out target/ppo-halfcheetah
    python python/examples/ppo.py --task HalfCheetah-v5 --out target/ppo-halfcheetah \\
        --cross-evaluate

``--task cartpole-swingup`` and ``--task quadruped-walk`` (with
``--engines moreau``) train on moreau's own tasks (``moreau.Task``, not
Gymnasium's) with SHAC's parameters, through ``shac.py``'s
``TaskVectorEnv``, for the comparison with SHAC.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax
from gymnasium.vector import AutoresetMode

import moreau.gym as mg


@dataclass
class Config:
    total_steps: int = 200_000
    num_steps: int = 128  # steps per environment per rollout
    learning_rate: float = 3e-4
    anneal_lr: bool = True
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 32
    update_epochs: int = 10
    clip_coef: float = 0.2
    vf_coef: float = 0.5
    ent_coef: float = 0.0
    max_grad_norm: float = 0.5
    hidden: int = 64
    normalize_reward: bool = True
    seed: int = 1


class RunningMeanStd:
    """Running mean and variance (Chan et al.'s parallel update)."""

    def __init__(self, shape=()):
        self.mean = np.zeros(shape)
        self.var = np.ones(shape)
        self.count = 1e-4

    def update(self, x: np.ndarray) -> None:
        mean, var, n = x.mean(axis=0), x.var(axis=0), x.shape[0]
        delta = mean - self.mean
        total = self.count + n
        self.mean = self.mean + delta * n / total
        self.var = (self.var * self.count + var * n + delta**2 * self.count * n / total) / total
        self.count = total

    def normalize(self, x: np.ndarray) -> np.ndarray:
        return np.clip((x - self.mean) / np.sqrt(self.var + 1e-8), -10.0, 10.0)


def _orthogonal(key, shape, scale):
    return jax.nn.initializers.orthogonal(scale)(key, shape, jnp.float32)


def init_params(key, obs_dim: int, act_dim: int, hidden: int) -> dict:
    """Actor and critic MLPs (tanh, two hidden layers), CleanRL's initialization."""
    keys = jax.random.split(key, 6)
    root2 = float(np.sqrt(2.0))

    def mlp(ks, out, out_scale):
        return [
            (_orthogonal(ks[0], (obs_dim, hidden), root2), jnp.zeros(hidden)),
            (_orthogonal(ks[1], (hidden, hidden), root2), jnp.zeros(hidden)),
            (_orthogonal(ks[2], (hidden, out), out_scale), jnp.zeros(out)),
        ]

    return {
        "actor": mlp(keys[:3], act_dim, 0.01),
        "critic": mlp(keys[3:], 1, 1.0),
        "log_std": jnp.zeros(act_dim),
    }


def _mlp(layers, x):
    for w, b in layers[:-1]:
        x = jnp.tanh(x @ w + b)
    w, b = layers[-1]
    return x @ w + b


def _log_prob(mean, log_std, a):
    return jnp.sum(-0.5 * ((a - mean) / jnp.exp(log_std)) ** 2 - log_std - 0.5 * jnp.log(2 * jnp.pi), axis=-1)


@jax.jit
def _act(params, obs, key):
    mean = _mlp(params["actor"], obs)
    action = mean + jnp.exp(params["log_std"]) * jax.random.normal(key, mean.shape)
    value = _mlp(params["critic"], obs)[:, 0]
    return action, _log_prob(mean, params["log_std"], action), value


@jax.jit
def _value(params, obs):
    return _mlp(params["critic"], obs)[:, 0]


@jax.jit
def policy_mean(params, obs):
    """The deterministic action (the Gaussian's mean)."""
    return _mlp(params["actor"], obs)


def _loss(params, batch, clip_coef, vf_coef, ent_coef):
    obs, act, logp_old, adv, ret, val_old, mask = batch
    mean = _mlp(params["actor"], obs)
    logp = _log_prob(mean, params["log_std"], act)
    ratio = jnp.exp(logp - logp_old)
    n = jnp.maximum(mask.sum(), 1.0)
    adv_mean = jnp.sum(adv * mask) / n
    adv_std = jnp.sqrt(jnp.sum(mask * (adv - adv_mean) ** 2) / n)
    adv = (adv - adv_mean) / (adv_std + 1e-8)
    pg = jnp.maximum(-adv * ratio, -adv * jnp.clip(ratio, 1 - clip_coef, 1 + clip_coef))
    value = _mlp(params["critic"], obs)[:, 0]
    v_clipped = val_old + jnp.clip(value - val_old, -clip_coef, clip_coef)
    v_loss = 0.5 * jnp.maximum((value - ret) ** 2, (v_clipped - ret) ** 2)
    entropy = jnp.sum(params["log_std"] + 0.5 * jnp.log(2 * jnp.pi * jnp.e))
    return (jnp.sum(pg * mask) + vf_coef * jnp.sum(v_loss * mask)) / n - ent_coef * entropy


def _make_update(optimizer, cfg: Config, batch_size: int):
    minibatch = batch_size // cfg.num_minibatches
    grad = jax.grad(_loss)

    @jax.jit
    def update(params, opt_state, batch, key):
        def epoch(carry, k):
            params, opt_state = carry
            perm = jax.random.permutation(k, batch_size)[: minibatch * cfg.num_minibatches]
            shuffled = jax.tree_util.tree_map(
                lambda x: x[perm].reshape((cfg.num_minibatches, minibatch) + x.shape[1:]), batch
            )

            def step(carry, mb):
                params, opt_state = carry
                g = grad(params, mb, cfg.clip_coef, cfg.vf_coef, cfg.ent_coef)
                updates, opt_state = optimizer.update(g, opt_state, params)
                return (optax.apply_updates(params, updates), opt_state), None

            return jax.lax.scan(step, (params, opt_state), shuffled)[0], None

        keys = jax.random.split(key, cfg.update_epochs)
        return jax.lax.scan(epoch, (params, opt_state), keys)[0]

    return update


@dataclass
class Result:
    params: dict
    obs_rms: RunningMeanStd
    # (environment steps so far, wall-clock seconds so far, mean return of
    # the episodes that ended in that rollout)
    curve: list = field(default_factory=list)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """The trained policy's deterministic actions for raw observations."""
        return np.asarray(policy_mean(self.params, jnp.asarray(self.obs_rms.normalize(obs), jnp.float32)))


def train(envs, cfg: Config, log: Optional[Callable[[str], None]] = None) -> Result:
    """Trains a policy on the vector environment ``envs`` for
    ``cfg.total_steps`` environment steps (summed over its environments)."""
    mode = envs.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
    if mode != AutoresetMode.NEXT_STEP:
        raise ValueError(f"this script expects NEXT_STEP autoreset, the environment declares {mode}")
    n = envs.num_envs
    obs_dim = envs.single_observation_space.shape[0]
    act_dim = envs.single_action_space.shape[0]
    low, high = envs.single_action_space.low, envs.single_action_space.high
    batch_size = n * cfg.num_steps
    updates = max(cfg.total_steps // batch_size, 1)
    key = jax.random.PRNGKey(cfg.seed)
    key, k = jax.random.split(key)
    params = init_params(k, obs_dim, act_dim, cfg.hidden)
    schedule = (
        optax.linear_schedule(cfg.learning_rate, 0.0, updates * cfg.update_epochs * cfg.num_minibatches)
        if cfg.anneal_lr
        else cfg.learning_rate
    )
    optimizer = optax.chain(optax.clip_by_global_norm(cfg.max_grad_norm), optax.adam(schedule, eps=1e-5))
    opt_state = optimizer.init(params)
    update = _make_update(optimizer, cfg, batch_size)

    obs_rms = RunningMeanStd((obs_dim,))
    ret_rms = RunningMeanStd(())
    discounted = np.zeros(n)
    episode_return = np.zeros(n)
    raw_obs, _ = envs.reset(seed=cfg.seed)
    prev_done = np.zeros(n, dtype=bool)
    result = Result(params, obs_rms)
    start = time.perf_counter()
    steps = 0

    buf_obs = np.zeros((cfg.num_steps + 1, n, obs_dim), np.float32)
    buf_act = np.zeros((cfg.num_steps, n, act_dim), np.float32)
    buf_logp = np.zeros((cfg.num_steps, n), np.float32)
    buf_val = np.zeros((cfg.num_steps + 1, n), np.float32)
    buf_rew = np.zeros((cfg.num_steps, n), np.float32)
    buf_term = np.zeros((cfg.num_steps, n), bool)
    buf_done = np.zeros((cfg.num_steps, n), bool)
    buf_valid = np.zeros((cfg.num_steps, n), bool)
    for u in range(updates):
        finished = []
        for t in range(cfg.num_steps):
            obs_rms.update(raw_obs)
            obs = obs_rms.normalize(raw_obs).astype(np.float32)
            key, k = jax.random.split(key)
            action, logp, value = _act(params, obs, k)
            action = np.asarray(action)
            buf_obs[t], buf_act[t], buf_logp[t], buf_val[t] = obs, action, logp, value
            raw_obs, reward, terminated, truncated, _ = envs.step(np.clip(action, low, high))
            steps += n
            valid = ~prev_done
            # Return normalization (the scale of the discounted return).
            discounted = np.where(valid, discounted * cfg.gamma + reward, 0.0)
            ret_rms.update(discounted[valid] if valid.any() else discounted)
            episode_return += np.where(valid, reward, 0.0)
            done = terminated | truncated
            for i in np.flatnonzero(done & valid):
                finished.append(episode_return[i])
            episode_return[done] = 0.0
            scale = np.sqrt(ret_rms.var + 1e-8) if cfg.normalize_reward else 1.0
            buf_rew[t] = np.clip(reward / scale, -10, 10)
            buf_term[t], buf_done[t], buf_valid[t] = terminated, done, valid
            prev_done = done
        last = obs_rms.normalize(raw_obs).astype(np.float32)
        buf_obs[cfg.num_steps] = last
        buf_val[cfg.num_steps] = np.asarray(_value(params, last))

        # Generalized advantage estimation. A transition's successor value is
        # that of the observation its step returned (the final one when the
        # episode was truncated), zero when it terminated; the recursion stops
        # at every episode's end. Reset transitions (valid False) are masked.
        adv = np.zeros((cfg.num_steps, n), np.float32)
        carry = np.zeros(n, np.float32)
        for t in reversed(range(cfg.num_steps)):
            delta = buf_rew[t] + cfg.gamma * buf_val[t + 1] * (~buf_term[t]) - buf_val[t]
            carry = delta + cfg.gamma * cfg.gae_lambda * (~buf_done[t]) * carry
            adv[t] = carry
        ret = adv + buf_val[:-1]
        batch = tuple(
            jnp.asarray(x.reshape((batch_size,) + x.shape[2:]))
            for x in (
                buf_obs[:-1],
                buf_act,
                buf_logp,
                adv,
                ret,
                buf_val[:-1],
                buf_valid.astype(np.float32),
            )
        )
        key, k = jax.random.split(key)
        params, opt_state = update(params, opt_state, batch, k)
        if finished:
            mean_return = float(np.mean(finished))
            result.curve.append((steps, time.perf_counter() - start, mean_return))
            if log is not None:
                log(f"update {u + 1}/{updates}  steps {steps}  mean return {mean_return:.1f}")
    result.params = params
    return result


def save_policy(result: Result, path) -> None:
    """Writes the policy (actor weights, observation normalization) to an npz file."""
    arrays = {f"actor_{k}_{'wb'[j]}": np.asarray(x) for k, layer in enumerate(result.params["actor"]) for j, x in enumerate(layer)}
    np.savez(path, obs_mean=result.obs_rms.mean, obs_var=result.obs_rms.var, **arrays)


def load_policy(path) -> Callable[[np.ndarray], np.ndarray]:
    """The deterministic policy saved by :func:`save_policy`, in numpy."""
    f = np.load(path)
    layers = [(f[f"actor_{k}_w"], f[f"actor_{k}_b"]) for k in range(3)]

    def act(obs):
        x = np.clip((obs - f["obs_mean"]) / np.sqrt(f["obs_var"] + 1e-8), -10.0, 10.0)
        for w, b in layers[:-1]:
            x = np.tanh(x @ w + b)
        return x @ layers[-1][0] + layers[-1][1]

    return act


# The return of one fresh episode per environment (seeded ``seed + i``).
evaluate = mg.episode_returns


def _main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="HalfCheetah-v5")
    p.add_argument("--steps", type=int, default=1_000_000)
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--seeds", default="1", help="comma-separated training seeds (one run each)")
    p.add_argument("--engines", default="moreau,mujoco", help="comma-separated: moreau, mujoco")
    p.add_argument("--out", default="target/ppo", help="folder for curves.json, curves.svg and the policies")
    p.add_argument(
        "--cross-evaluate",
        action="store_true",
        help="train nothing: run each policy saved in --out on every engine (fresh episodes)",
    )
    args = p.parse_args()

    import pathlib

    import gymnasium

    import moreau.gym

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def make(engine: str):
        if args.task in ("cartpole-swingup", "quadruped-walk"):
            # (shac.py's tasks, beside this script: moreau only.)
            from shac import TASKS, TaskVectorEnv

            if engine != "moreau":
                raise SystemExit(f"{args.task} is moreau's task: --engines moreau")
            return TaskVectorEnv(TASKS[args.task](args.num_envs))
        if engine == "moreau":
            return moreau.gym.make_vec(args.task, num_envs=args.num_envs)
        if engine == "mujoco":
            return gymnasium.make_vec(args.task, num_envs=args.num_envs, vectorization_mode="sync")
        raise SystemExit(f"unknown engine {engine!r}")

    if args.cross_evaluate:
        engines = args.engines.split(",")
        print(f"{args.task}: mean return of {args.num_envs} fresh episodes (deterministic policy)")
        print(f"{'policy':>28} " + " ".join(f"{'on ' + e:>12}" for e in engines))
        for path in sorted(out.glob("policy-*.npz")):
            policy = load_policy(path)
            row = [evaluate(make(e), policy, seed=20_000).mean() for e in engines]
            print(f"{path.stem:>28} " + " ".join(f"{r:12.1f}" for r in row))
        return
    seeds = [int(x) for x in args.seeds.split(",")]
    runs: dict[str, list] = {}
    for seed in seeds:
        cfg = Config(total_steps=args.steps, seed=seed)
        for engine in args.engines.split(","):
            envs = make(engine)
            print(f"{engine}: {args.task}, {args.num_envs} environments, {args.steps} steps, seed {seed}")
            t0 = time.perf_counter()
            result = train(envs, cfg, log=lambda s: print(f"  {engine}: {s}", flush=True))
            wall = time.perf_counter() - t0
            # Fresh episodes on the engine it trained on (seeds it never saw).
            final = evaluate(envs, result.act, seed=10_000)
            print(f"{engine}: {wall:.0f} s, deterministic return on fresh episodes {final.mean():.1f} ± {final.std():.1f}")
            save_policy(result, out / f"policy-{engine}-seed{seed}.npz")
            runs.setdefault(engine, []).append(
                {"seed": seed, "wall_s": wall, "final_return": float(final.mean()), "curve": result.curve}
            )
    config = {**Config(total_steps=args.steps).__dict__, "num_envs": args.num_envs, "seeds": seeds}
    (out / "curves.json").write_text(json.dumps({"task": args.task, "config": config, "runs": runs}, indent=1))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"wrote {out / 'curves.json'} (matplotlib not installed: no plot)")
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    for (engine, engine_runs), color in zip(runs.items(), ["tab:blue", "tab:orange", "tab:green"]):
        for k, run in enumerate(engine_runs):
            curve = np.array(run["curve"])
            if len(curve):
                walls = ", ".join(f"{r['wall_s']:.0f}" for r in engine_runs)
                label = f"{engine} (seeds {args.seeds}: {walls} s)" if k == 0 else None
                ax.plot(curve[:, 0], curve[:, 2], color=color, alpha=0.8, label=label)
    ax.set_xlabel("environment steps")
    ax.set_ylabel("mean episode return (training)")
    ax.set_title(f"PPO on {args.task}, {args.num_envs} environments")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "curves.svg")
    print(f"wrote {out / 'curves.json'} and {out / 'curves.svg'}")


if __name__ == "__main__":
    _main()
