"""SHAC on several processes under ``torch.distributed``: one
:class:`moreau.BatchSim` per rank, one policy replicated on every rank,
gradients all-reduced. Launched by ``torchrun``::

    torchrun --nproc_per_node=2 python/examples/distributed.py --task cartpole-swingup --windows 400
    # several machines: the same command on each, with
    #   --nnodes=N --node_rank=K --rdzv_backend=c10d --rdzv_endpoint=HOST:29500

Each rank runs ``shac.py``'s training (:func:`shac.train`) on its own
``--num-envs`` worlds with a :class:`Sync`:

- **replicas**: rank 0's initial parameters (and normalizer statistics) are
  broadcast, so every rank starts from the same policy and critic;
- **gradients**: after each backward pass (the actor's window loss, each
  critic iteration) every parameter's gradient is averaged over the ranks
  (``all_reduce``), before clipping and the optimizer's step, so the
  replicas take the same steps and stay equal: one policy trained on
  ``nranks × num_envs`` worlds;
- **seeds**: rank ``r`` draws its initial states and exploration noise
  from ``SeedSequence([seed, r])``: distinct per rank, the same on a rerun;
- **cores and devices**: the CPU backends step on ``cores / ranks on this
  node`` threads each (``moreau.set_num_threads``), so ranks sharing a
  machine do not oversubscribe it; with ``--backend gpu`` rank ``r`` of a
  node takes the node's ``r``-th GPU (``MOREAU_ADAPTER=#r``, unless set);
- **logs**: each window's mean reward is averaged over the ranks and
  printed by rank 0 alone, which also evaluates the policy at the end.

Communication runs on ``gloo`` (the policy's tensors live on the CPU, where
``moreau.autograd`` hands them over).

``--check DIR`` (the test's): each rank writes its first window's local and
averaged actor gradients and its final parameters to ``DIR/rank{r}.npz``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import pathlib
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

import moreau

_spec = importlib.util.spec_from_file_location("shac", pathlib.Path(__file__).resolve().parent / "shac.py")
shac = importlib.util.module_from_spec(_spec)
sys.modules["shac"] = shac
_spec.loader.exec_module(shac)


class Sync:
    """What :func:`shac.train` asks of the process group (see the module's
    docstring)."""

    def __init__(self, check: str | None = None):
        self.rank, self.world_size = dist.get_rank(), dist.get_world_size()
        self.check = check
        self.first_local: list[np.ndarray] | None = None
        self.first_averaged: list[np.ndarray] | None = None

    def replicate(self, *modules: torch.nn.Module) -> None:
        for module in modules:
            for tensor in list(module.parameters()) + list(module.buffers()):
                dist.broadcast(tensor.data, src=0)

    def seed(self, seed: int) -> int:
        return int(np.random.SeedSequence([seed, self.rank]).generate_state(1, np.uint32)[0])

    def average_gradients(self, module: torch.nn.Module) -> None:
        grads = [p.grad for p in module.parameters() if p.grad is not None]
        record = self.check is not None and self.first_local is None
        if record:
            self.first_local = [g.numpy().copy() for g in grads]
        # One flat all-reduce per backward pass.
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        flat /= self.world_size
        offset = 0
        for g in grads:
            g.copy_(flat[offset : offset + g.numel()].view_as(g))
            offset += g.numel()
        if record:
            self.first_averaged = [g.numpy().copy() for g in grads]

    def combine_moments(self, n: int, mean: torch.Tensor, var: torch.Tensor):
        """The count, mean and (population) variance of every rank's rows."""
        moments = torch.cat([torch.tensor([float(n)], dtype=torch.float64), n * mean, n * (var + mean**2)])
        dist.all_reduce(moments, op=dist.ReduceOp.SUM)
        total = moments[0]
        mean = moments[1 : 1 + len(mean)] / total
        return int(total), mean, moments[1 + len(mean) :] / total - mean**2

    def mean(self, x: float) -> float:
        t = torch.tensor([x], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return float(t[0]) / self.world_size


def _main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="cartpole-swingup", choices=sorted(shac.TASKS))
    p.add_argument("--windows", type=int, default=400)
    p.add_argument("--num-envs", type=int, default=64, help="worlds per rank")
    p.add_argument("--horizon", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backend", default="cpu", choices=["cpu", "cpu1", "gpu"])
    p.add_argument("--normalize-observations", action="store_true")
    p.add_argument("--check", default=None, help="write each rank's gradients and parameters here (tests)")
    args = p.parse_args()
    if "RANK" not in os.environ:
        raise SystemExit("run under torchrun: torchrun --nproc_per_node=N python/examples/distributed.py …")
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    local_size = int(os.environ.get("LOCAL_WORLD_SIZE", 1))
    if args.backend == "gpu":
        os.environ.setdefault("MOREAU_ADAPTER", f"#{local_rank}")
    threads = max(1, (os.cpu_count() or 1) // local_size)
    moreau.set_num_threads(threads)
    torch.set_num_threads(threads)
    dist.init_process_group(backend="gloo")
    sync = Sync(args.check)
    rank0 = sync.rank == 0
    cfg = shac.Config(
        task=args.task,
        windows=args.windows,
        num_envs=args.num_envs,
        horizon=args.horizon,
        seed=args.seed,
        backend=args.backend,
        normalize_observations=args.normalize_observations,
    )
    if rank0:
        print(
            f"{sync.world_size} ranks × {cfg.num_envs} worlds of {cfg.task} ({cfg.backend}, "
            f"{threads} threads per rank)",
            flush=True,
        )
    t0 = time.perf_counter()
    result = shac.train(cfg, log=(lambda line: print(line, flush=True)) if rank0 else None, sync=sync)
    wall = time.perf_counter() - t0
    if args.check is not None:
        out = pathlib.Path(args.check)
        out.mkdir(parents=True, exist_ok=True)
        arrays = {f"local{i}": g for i, g in enumerate(sync.first_local)}
        arrays |= {f"averaged{i}": g for i, g in enumerate(sync.first_averaged)}
        arrays |= {f"param{i}": p.detach().numpy() for i, p in enumerate(result.actor.parameters())}
        np.savez(out / f"rank{sync.rank}.npz", **arrays)
    if rank0:
        steps = result.curve[-1][1]
        after = shac.evaluate(result.actor, cfg, seed=1000)
        print(f"{cfg.task}: {steps} environment steps on {sync.world_size} ranks in {wall:.1f} s; "
              f"return on fresh episodes {after:.1f}", flush=True)
    # Every rank here before any leaves: a rank that tore its group down
    # while rank 0 still evaluated was aborted by gloo's threads ("terminate
    # called without an active exception", exit code -6; seen once in CI).
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    _main()
