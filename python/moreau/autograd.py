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
derivatives), backward raises rather than return a wrong gradient. At a
robot settled on its feet the step is piecewise smooth in ``q``: a
component of ``q`` whose step derivative holds for one sign of
perturbation only gets that one-sided derivative (``q_side`` ±1), and a
gradient through a component where neither side's holds (a kink,
``q_side`` 2) raises a :class:`KinkWarning` naming the world. The
computation is in float64 (but for the GPU backend's f32 solves); the
returned tensors are float64 on the CPU. A tape holds each step's
contact problem and derivatives (a few nv × nv and m × m matrices per world
and step) until the graph is freed.

``observe``, ``torques`` and ``reward`` are the functions of a
:class:`moreau.Task` (the library's RL tasks, defined once in Rust) on the
graph, differentiated through the task's written derivatives: with
``step``, a rollout's reward differentiates end to end (as
``python/examples/shac.py`` does).
"""

from __future__ import annotations

import warnings

import numpy as np

try:
    import torch
except ImportError as e:  # pragma: no cover - a clear message without torch
    raise ImportError("moreau.autograd needs PyTorch: pip install torch") from e


class KinkWarning(UserWarning):
    """A gradient with respect to ``q`` went through a kink of a step: a
    component of ``q`` along which the step changes a contact's or a joint
    stop's mode (or its stabilization's slope) for perturbations of either
    sign (``q_side`` 2, see ``Simulator.step_with_jacobians``), as at a
    robot settled on its feet. That component of the gradient is a
    generalized derivative, no side's. Turn it into an error with
    ``warnings.simplefilter("error", moreau.autograd.KinkWarning)``."""


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
            kinks = (out["q_side"] == 2) & (out["q"] != 0) & out["wrt_q"][:, None]
            if kinks.any():
                world = int(np.flatnonzero(kinks.any(axis=1))[0])
                warnings.warn(
                    KinkWarning(
                        f"the gradient with respect to q of world {world} (of {int(kinks.any(axis=1).sum())} "
                        f"worlds) goes through a kink of its step in components "
                        f"{np.flatnonzero(kinks[world]).tolist()}: a generalized derivative there"
                    ),
                    stacklevel=2,
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


def _optional(x):
    """An optional array argument (a tensor, an array or None) as numpy."""
    if x is None:
        return None
    if isinstance(x, torch.Tensor):
        return _array(x)
    return np.ascontiguousarray(x, dtype=np.float64)


class _Observe(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, v, task, t, episode):
        qn, vn = _array(q), _array(v)
        ctx.task, ctx.saved = task, (qn, vn, t, episode)
        return torch.from_numpy(task.observe(qn, vn, t, episode).astype(np.float64))

    @staticmethod
    def backward(ctx, g):
        qn, vn, t, episode = ctx.saved
        gq, gv = ctx.task.observe_vjp(qn, vn, _array(g), t, episode)
        return torch.from_numpy(gq), torch.from_numpy(gv), None, None, None


class _Torques(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, v, a, task, episode):
        qn, vn, an = _array(q), _array(v), _array(a)
        ctx.task, ctx.saved = task, (qn, vn, an, episode)
        return torch.from_numpy(task.torques(qn, vn, an, episode))

    @staticmethod
    def backward(ctx, g):
        qn, vn, an, episode = ctx.saved
        gq, gv, ga = ctx.task.torques_vjp(qn, vn, an, _array(g), episode)
        return torch.from_numpy(gq), torch.from_numpy(gv), torch.from_numpy(ga), None, None


class _Reward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q_prev, v_prev, q, v, a, energy, task, episode):
        args = tuple(_array(x) for x in (q_prev, v_prev, q, v, a, energy))
        ctx.task, ctx.saved = task, (args, episode)
        return torch.from_numpy(task.reward(*args, episode))

    @staticmethod
    def backward(ctx, g):
        args, episode = ctx.saved
        d = ctx.task.reward_vjp(*args, _array(g), episode)
        grads = [torch.from_numpy(d[k]) for k in ("q_prev", "v_prev", "q", "v", "action", "energy")]
        return (*grads, None, None)


def observe(task, q: torch.Tensor, v: torch.Tensor, t=None, episode=None) -> torch.Tensor:
    """The observations (n, obs_dim) of :class:`moreau.Task` ``task`` at the
    worlds' states ``(q, v)`` (times ``t``, episode parameters
    ``episode``), float64 (of the task's float32 values), differentiable
    in ``q`` and ``v`` through the task's written derivatives."""
    return _Observe.apply(q, v, task, _optional(t), _optional(episode))


def torques(task, q: torch.Tensor, v: torch.Tensor, a: torch.Tensor, episode=None) -> torch.Tensor:
    """The joint torques (n, nv) of ``task`` for actions ``a`` at ``(q,
    v)``, differentiable in ``q``, ``v`` and ``a`` (0 where a torque
    saturates)."""
    return _Torques.apply(q, v, a, task, _optional(episode))


def reward(task, q_prev, v_prev, q, v, a, energy, episode=None) -> torch.Tensor:
    """The rewards (n,) of ``task`` for one environment step from ``(q_prev,
    v_prev)`` to ``(q, v)`` under ``a`` with mechanical work ``energy``
    (n,; ``Σ |τ v| dt`` over the step's physics steps), differentiable in
    all six."""
    return _Reward.apply(q_prev, v_prev, q, v, a, energy, task, _optional(episode))


__all__ = ["KinkWarning", "observe", "reward", "step", "torques"]
