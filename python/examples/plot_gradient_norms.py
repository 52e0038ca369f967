"""The gradient of a window's reward with respect to its actions, per
contact model, against the window's length: the norm by moreau's reverse
mode, and how far its directional derivative is from central differences
of the same model's rollout. Reads ``shac.py --gradient-norms --out``
files (one per task) and writes one SVG::

    python python/examples/plot_gradient_norms.py \\
        docs/learning/gradient-norms-halfcheetah-v5.json docs/learning/gradient-norms-ant-v5.json \\
        --out docs/learning/gradient-norms.svg
"""

import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    runs = [json.load(open(f)) for f in args.files]
    fig, axes = plt.subplots(2, len(runs), figsize=(5.5 * len(runs), 7), squeeze=False)
    for k, run in enumerate(runs):
        norm_ax, diff_ax = axes[0][k], axes[1][k]
        for solver in dict.fromkeys(r["solver"] for r in run["rows"]):
            rows = [r for r in run["rows"] if r["solver"] == solver]
            h = [r["horizon"] for r in rows]
            norm_ax.plot(h, [r["norm"] for r in rows], marker="o", label=solver)
            diff_ax.plot(h, [max(r["relative"], 1e-12) for r in rows], marker="o", label=solver)
        norm_ax.set_title(f"{run['task']}: |∂ reward / ∂ actions|")
        diff_ax.set_title("autograd against the model's differences (relative)")
        for ax in (norm_ax, diff_ax):
            ax.set_yscale("log")
            ax.set_xlabel("window (environment steps)")
            ax.legend()
    fig.tight_layout()
    fig.savefig(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
