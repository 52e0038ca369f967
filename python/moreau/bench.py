"""Throughput of moreau's Gymnasium vector environments against Gymnasium's
own ``make_vec(..., vectorization_mode="sync")`` of the MuJoCo task, on
the same machine in the same process: environment steps per second
(``num_envs`` × vector steps / wall time) under uniform random actions,
and the ratio.

    python -m moreau.bench [--task HalfCheetah-v5] [--num-envs 1,16,256]
                           [--steps 200] [--backend cpu]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _rate(env, steps: int, seed: int) -> float:
    env.reset(seed=seed)
    env.action_space.seed(seed)
    actions = [env.action_space.sample() for _ in range(steps)]
    start = time.perf_counter()
    for a in actions:
        env.step(a)
    elapsed = time.perf_counter() - start
    return env.num_envs * steps / elapsed


def main(argv=None) -> None:
    import gymnasium as gym

    import moreau.gym as mg

    p = argparse.ArgumentParser(prog="python -m moreau.bench", description=__doc__.splitlines()[0])
    p.add_argument("--task", default="HalfCheetah-v5", choices=sorted(mg.TASKS))
    p.add_argument("--num-envs", default="1,16,256", help="comma-separated batch sizes")
    p.add_argument("--steps", type=int, default=200, help="vector steps per measurement")
    p.add_argument("--backend", default="cpu", help="moreau's backend: cpu, cpu1 or gpu")
    args = p.parse_args(argv)
    sizes = [int(n) for n in args.num_envs.split(",")]
    print(f"{args.task}: environment steps per second, {args.steps} vector steps, random actions")
    print(f"{'num_envs':>9} {'moreau (' + args.backend + ')':>16} {'gymnasium sync':>16} {'ratio':>7}")
    for n in sizes:
        ours = mg.make_vec(args.task, n, backend=args.backend)
        theirs = gym.make_vec(args.task, num_envs=n, vectorization_mode="sync")
        a, b = _rate(ours, args.steps, 0), _rate(theirs, args.steps, 0)
        theirs.close()
        print(f"{n:>9} {a:>16.0f} {b:>16.0f} {a / b:>7.2f}")


if __name__ == "__main__":
    main()
