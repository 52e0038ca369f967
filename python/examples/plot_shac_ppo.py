"""SHAC against PPO on one task, on moreau: the training curves of
``shac.py --out`` runs and of ``ppo.py``'s moreau runs (its curves.json),
as return against environment steps and against wall-clock, in one SVG::

    python python/examples/plot_shac_ppo.py --ppo docs/learning/ppo-halfcheetah-v5.json \\
        --shac docs/learning/shac-halfcheetah-v5-seed0.json,... --out docs/learning/shac-ppo-halfcheetah-v5.svg

SHAC's curve is its windows' mean reward per step (with its exploration
noise) times the episode's length; PPO's is the mean return of the
episodes that ended in each rollout.
"""

import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ppo", required=True)
    p.add_argument("--shac", required=True, help="comma-separated shac.py --out files")
    p.add_argument("--episode-steps", type=int, default=1000)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    ppo = json.load(open(args.ppo))
    fig, (by_steps, by_wall) = plt.subplots(1, 2, figsize=(11, 4))
    for k, run in enumerate(ppo["runs"]["moreau"]):
        c = np.array(run["curve"])
        label = "PPO" if k == 0 else None
        by_steps.plot(c[:, 0], c[:, 2], color="tab:blue", alpha=0.8, label=label)
        by_wall.plot(c[:, 1], c[:, 2], color="tab:blue", alpha=0.8, label=label)
    for k, path in enumerate(args.shac.split(",")):
        run = json.load(open(path))
        c = np.array(run["curve"])[::5]  # (every 5th window: a lighter file)
        ret = c[:, 3] * args.episode_steps
        label = f"SHAC (horizon {run['config']['horizon']})" if k == 0 else None
        by_steps.plot(c[:, 1], ret, color="tab:red", alpha=0.8, label=label)
        by_wall.plot(c[:, 2], ret, color="tab:red", alpha=0.8, label=label)
    by_steps.set_xlabel("environment steps")
    by_wall.set_xlabel("wall-clock (s)")
    for ax in (by_steps, by_wall):
        ax.set_ylabel("training return")
        ax.legend()
    fig.suptitle(f"{ppo['task']} on moreau: SHAC (first order) against PPO")
    fig.tight_layout()
    fig.savefig(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
