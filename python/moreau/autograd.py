"""Gradients through batched moreau steps in PyTorch.

``step(batch, q, v, tau)`` steps every world of a :class:`moreau.BatchSim`
from the states ``(q, v)`` (CPU tensors (nworlds, nq), (nworlds, nv))
under joint torques ``tau`` (nworlds, nv) and returns ``(q⁺, v⁺)`` as
tensors on the autograd graph. The forward step records each world's step
(``BatchSim.step_for_vjp``) and the backward applies its transpose to the
adjoints, all worlds at once (``BatchSim.vjp``: reverse mode, in parallel
on "cpu"; on "gpu" the impulses are the f32 kernel's and the contact
stages' transposed solves run in one GPU dispatch), so a loss over a
rollout of many steps and worlds back-propagates to the torques, the
initial state and, through them, to a policy's parameters::

    import torch, moreau
    from moreau.autograd import step

    batch = moreau.BatchSim(model, 64)
    q, v = torch.tensor(batch.q), torch.tensor(batch.v)
    taus = torch.zeros(10, 64, model.nv, dtype=torch.float64, requires_grad=True)
    for t in range(10):
        q, v = step(batch, q, v, taus[t])
    (v ** 2).sum().backward()          # taus.grad

Configurations with quaternions are handled through the coordinate charts
(``Model.configuration_charts``): the gradient with respect to ``q`` is
that of its coordinates along the configuration manifold (a change of a
quaternion's norm has none). Where a world's step has no derivative with
respect to ``q`` (``wrt_q`` false: contact features without written
derivatives), backward raises rather than return a wrong gradient. The
computation is in float64 (but for the GPU backend's f32 solves); the
returned tensors are float64 on the CPU. A tape holds each step's
contact problem and derivatives (a few nv × nv and m × m matrices per world
and step) until the graph is freed.
"""

from __future__ import annotations

import numpy as np

try:
    import torch
except ImportError as e:  # pragma: no cover - a clear message without torch
    raise ImportError("moreau.autograd needs PyTorch: pip install torch") from e


def _transpose_apply(a: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Each world's ``aᵀ g``: a (n, r, c), g (n, r) -> (n, c)."""
    return np.einsum("nrc,nr->nc", a, g)


def _array(x: torch.Tensor) -> np.ndarray:
    """A tensor as a C-contiguous float64 array (what BatchSim takes)."""
    return np.ascontiguousarray(x.detach().cpu().numpy(), dtype=np.float64)


def _raise_on_failure(batch) -> None:
    if batch.failures:
        world, why = batch.failures[0]
        raise RuntimeError(f"world {world}'s step failed: {why}")


class _Step(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, v, tau, batch, model):
        qn, vn, tn = _array(q), _array(v), _array(tau)
        batch.set_states(qn, vn)
        tape = batch.step_for_vjp(tn)
        _raise_on_failure(batch)
        q1, v1 = batch.q, batch.v
        _, d_in = model.configuration_charts(qn)
        c_out, _ = model.configuration_charts(q1)
        ctx.batch, ctx.tape, ctx.d_in, ctx.c_out = batch, tape, d_in, c_out
        return torch.from_numpy(q1), torch.from_numpy(v1)

    @staticmethod
    def backward(ctx, gq, gv):
        gq = gq.detach().cpu().numpy().astype(np.float64)
        gv = np.ascontiguousarray(gv.detach().cpu().numpy(), dtype=np.float64)
        # q⁺'s coordinates -> its tangent space.
        gq_t = np.ascontiguousarray(_transpose_apply(ctx.c_out, gq))
        # Reverse mode through the recorded step, all worlds at once (the
        # contact stages' transposed solves in one GPU dispatch on "gpu").
        out = ctx.batch.vjp(ctx.tape, gv, gq_t)
        g_q = None
        if ctx.needs_input_grad[0]:
            nonzero = (np.abs(gq_t).max(axis=1) > 0) | (np.abs(gv).max(axis=1) > 0)
            missing = np.flatnonzero(~out["wrt_q"] & nonzero)
            if len(missing):
                raise RuntimeError(
                    f"world {missing[0]}'s step has no derivative with respect to q "
                    "(a contact whose features have no written derivatives)"
                )
            g_q = torch.from_numpy(_transpose_apply(ctx.d_in, np.nan_to_num(out["q"])))
        return g_q, torch.from_numpy(out["v"]), torch.from_numpy(out["tau"]), None, None


def step(batch, q: torch.Tensor, v: torch.Tensor, tau: torch.Tensor, model=None):
    """One differentiable step of every world of ``batch`` (a
    :class:`moreau.BatchSim` of ``model``, any backend) from ``(q, v)`` under joint
    torques ``tau``: returns ``(q⁺, v⁺)`` (float64 tensors). The batch's
    worlds are left in the new states."""
    if model is None:
        model = batch.model
    if torch.is_grad_enabled() and any(x.requires_grad for x in (q, v, tau)):
        return _Step.apply(q, v, tau, batch, model)
    # Nothing to differentiate: a plain step, without the Jacobians.
    batch.set_states(_array(q), _array(v))
    batch.step(_array(tau))
    _raise_on_failure(batch)
    return torch.from_numpy(batch.q), torch.from_numpy(batch.v)


__all__ = ["step"]
