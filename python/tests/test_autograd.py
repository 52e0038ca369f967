"""moreau.autograd: gradients of a loss over a batched rollout, through
PyTorch's autograd and moreau's reverse mode (BatchSim.step_for_vjp,
BatchSim.vjp), against central finite differences of the same rollout: contact-free (the cart-pole) and with
sticking contacts (a cube pushed gently on the ground; its configuration
has a quaternion, so its q gradient goes through the coordinate charts);
and the GPU backend's gradients against the CPU's."""

import numpy as np
import pytest
import torch

import moreau
from moreau.autograd import step


def rollout_loss(batch, q0, v0, taus, weights):
    q, v = q0, v0
    loss = torch.zeros((), dtype=torch.float64)
    for t in range(len(taus)):
        q, v = step(batch, q, v, taus[t])
        loss = loss + (weights[0] * q**2).sum() + (weights[1] * v**2).sum()
    return loss


def check_gradients(model, q0, v0, taus, weights, q_direction, tolerance):
    """Directional derivatives along random directions (of τ, v0 and, along
    the manifold, q0) against central differences; returns the worst
    relative error."""
    n = q0.shape[0]
    batch = moreau.BatchSim(model, n, solver="ncp-admm", tolerance=1e-12)
    q = torch.tensor(q0, requires_grad=True)
    v = torch.tensor(v0, requires_grad=True)
    tau = torch.tensor(taus, requires_grad=True)
    loss = rollout_loss(batch, q, v, tau, weights)
    loss.backward()
    rng = np.random.default_rng(0)
    worst = 0.0

    def value(qq, vv, tt):
        with torch.no_grad():
            return rollout_loss(batch, torch.tensor(qq), torch.tensor(vv), torch.tensor(tt), weights).item()

    for which in ["tau", "v", "q"]:
        for _ in range(2):
            if which == "tau":
                d = rng.standard_normal(taus.shape)
                eps = 1e-4 * np.abs(taus).max() / np.abs(d).max() + 1e-9
                plus, minus = (q0, v0, taus + eps * d), (q0, v0, taus - eps * d)
                analytic = (tau.grad.numpy() * d).sum()
            elif which == "v":
                d = rng.standard_normal(v0.shape)
                eps = 1e-6
                plus, minus = (q0, v0 + eps * d, taus), (q0, v0 - eps * d, taus)
                analytic = (v.grad.numpy() * d).sum()
            else:
                d = q_direction(rng)
                eps = 1e-7
                plus, minus = (q0 + eps * d, v0, taus), (q0 - eps * d, v0, taus)
                analytic = (q.grad.numpy() * d).sum()
            fd = (value(*plus) - value(*minus)) / (2 * eps)
            err = abs(fd - analytic) / max(abs(fd), 1e-12)
            worst = max(worst, err)
            assert err <= tolerance, f"{which}: autograd {analytic:.10e}, differences {fd:.10e}"
    return worst


def test_contact_free_cartpole_gradients_equal_finite_differences():
    model = moreau.scene("cartpole")
    n, horizon = 4, 15
    rng = np.random.default_rng(1)
    q0 = model.q0 + 0.2 * rng.standard_normal((n, model.nq))
    v0 = 0.5 * rng.standard_normal((n, model.nv))
    taus = rng.standard_normal((horizon, n, model.nv))
    worst = check_gradients(
        model, q0, v0, taus, (1.0, 0.1), lambda r: r.standard_normal((n, model.nq)), tolerance=1e-6
    )
    print(f"cart-pole, {n} worlds, {horizon} steps: worst relative error {worst:.1e}")


def test_sticking_cube_gradients_equal_finite_differences():
    """The cube rests 0.1 mm into the ground (off the stabilization's kink
    at contact; the rollout is too short to reach it) and is pushed with
    forces well inside its friction cone: its four contacts stick through
    the rollout. (Torques that tilt it lift a corner within a step: the
    contact set changes and the loss has a kink there.)"""
    model = moreau.scene("cube-resting")
    n, horizon = 3, 10
    q0 = np.tile(model.q0, (n, 1))
    q0[:, 2] -= 1e-4
    v0 = np.zeros((n, model.nv))
    rng = np.random.default_rng(2)
    # Horizontal pushes (a fraction of μ m g), a downward press, small
    # torques about the vertical: no corner lifts, none slides.
    taus = np.zeros((horizon, n, model.nv))
    taus[..., :2] = 0.3 * rng.standard_normal((horizon, n, 2))
    taus[..., 2] = -1.0 + 0.1 * rng.standard_normal((horizon, n))
    taus[..., 5] = 0.02 * rng.standard_normal((horizon, n))
    c, _ = model.configuration_charts(q0)

    def along_manifold(r):
        return np.einsum("nij,nj->ni", c, r.standard_normal((n, model.nv)))

    worst = check_gradients(model, q0, v0, taus, (1.0, 1.0), along_manifold, tolerance=1e-5)
    print(f"sticking cube, {n} worlds, {horizon} steps: worst relative error {worst:.1e}")


def test_bad_inputs_and_failed_worlds_raise():
    model = moreau.scene("cartpole")
    batch = moreau.BatchSim(model, 2)
    q = torch.zeros(2, model.nq, dtype=torch.float64)
    v = torch.zeros(2, model.nv, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"tau has shape \(3, 2\)"):
        step(batch, q, v, torch.zeros(3, model.nv, dtype=torch.float64))
    bad = v.clone()
    bad[1, 0] = float("nan")
    with pytest.raises(ValueError, match="not finite"):
        step(batch, q, bad, torch.zeros(2, model.nv, dtype=torch.float64))


def gpu_batch(model, n):
    """A GPU-backend batch, or a skip (a failure with MOREAU_REQUIRE_GPU=1)."""
    import os

    try:
        return moreau.BatchSim(model, n, backend="gpu", solver="ncp-pgs", tolerance=1e-6)
    except ValueError as e:
        if os.environ.get("MOREAU_REQUIRE_GPU") == "1":
            raise
        pytest.skip(f"no GPU adapter: {e}")


def test_gpu_backend_gradients_equal_the_cpus_within_f32_tolerance():
    """The rollout loss of a cube sliding at 1 m/s and pushed about (8
    worlds, 10 steps; its four contacts slide) on the GPU backend (f32
    impulses, the contact stages' transposed solves in the GPU's VJP
    kernel) and on "cpu" (f64): its gradients with respect to the torques,
    the initial velocities and the configurations agree within 1e-3
    (relative, max norm; printed). (A sticking cube would not do: its
    velocity does not depend on the torques, a zero gradient that f32
    leaves at 1e-8.)"""
    model = moreau.scene("cube-sliding")
    n, horizon = 8, 10
    q0 = np.tile(model.q0, (n, 1))
    q0[:, 2] -= 1e-4
    v0 = np.tile(model.v0, (n, 1))
    rng = np.random.default_rng(3)
    taus = np.zeros((horizon, n, model.nv))
    taus[..., :2] = 0.3 * rng.standard_normal((horizon, n, 2))
    taus[..., 2] = -1.0 + 0.1 * rng.standard_normal((horizon, n))
    taus[..., 5] = 0.02 * rng.standard_normal((horizon, n))
    grads = []
    for batch in [gpu_batch(model, n), moreau.BatchSim(model, n, solver="ncp-pgs", tolerance=1e-12)]:
        q = torch.tensor(q0, requires_grad=True)
        v = torch.tensor(v0, requires_grad=True)
        tau = torch.tensor(taus, requires_grad=True)
        rollout_loss(batch, q, v, tau, (1.0, 1.0)).backward()
        grads.append({"tau": tau.grad.numpy(), "v": v.grad.numpy(), "q": q.grad.numpy()})
    for name in ["tau", "v", "q"]:
        gpu, cpu = grads[0][name], grads[1][name]
        err = np.abs(gpu - cpu).max() / np.abs(cpu).max()
        print(f"{name}: |gpu - cpu| / |cpu| = {err:.1e}")
        assert err <= 1e-3, name


def test_steps_with_and_without_gradients_agree():
    """Without a tensor needing a gradient, step takes the plain path (no
    Jacobians): the same states, bit for bit."""
    model = moreau.scene("cube-resting")
    q0 = np.tile(model.q0, (2, 1))
    q0[:, 2] -= 1e-4
    tau = torch.tensor(np.tile([0.1, 0.0, -1.0, 0.0, 0.0, 0.01], (2, 1)))
    out = []
    for grad in [True, False]:
        batch = moreau.BatchSim(model, 2)
        q, v = torch.tensor(q0), torch.zeros(2, model.nv, dtype=torch.float64, requires_grad=grad)
        for _ in range(5):
            q, v = step(batch, q, v, tau)
        out.append((q.detach().numpy(), v.detach().numpy(), v.requires_grad))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])
    assert out[0][2] and not out[1][2]


def test_halfcheetah_window_gradients_equal_finite_differences():
    """Gymnasium's HalfCheetah on moreau (capsules on the ground, sliding,
    impacts; python/examples/shac.py's differentiable reward): the
    gradient of a 5-step window's reward (25 physics steps, 4 worlds) with
    respect to its actions equals central differences within 1e-5."""
    import importlib.util
    import pathlib
    import sys

    spec = importlib.util.spec_from_file_location(
        "shac", pathlib.Path(__file__).resolve().parents[1] / "examples" / "shac.py"
    )
    shac = importlib.util.module_from_spec(spec)
    sys.modules["shac"] = shac
    spec.loader.exec_module(shac)
    for h, norm, analytic, fd in shac.window_gradients(shac.GymLocomotion(4), [1, 5]):
        print(f"horizon {h}: |g| {norm:.3e}, autograd {analytic:.9e}, differences {fd:.9e}")
        assert abs(analytic - fd) <= 1e-5 * abs(fd)


def _quadruped_states(task, n, rng):
    """Resets of ``task`` with disturbed velocities and base orientations,
    the quaternions off unit norm (the derivatives go through their
    normalization)."""
    q, v, _ = task.reset(n, 0)
    v = v + rng.uniform(-1, 1, v.shape)
    if task.model.nq == 19:
        q[:, 3:7] += rng.uniform(-0.3, 0.3, (n, 4))
        q[:, 3:7] *= rng.uniform(0.9, 1.1, (n, 1)) / np.linalg.norm(q[:, 3:7], axis=1, keepdims=True)
    return q, v


@pytest.mark.parametrize("name", ["cartpole-swingup", "quadruped-walk", "quadruped-stand-up"])
def test_task_functions_differentiate_as_their_central_differences(name):
    """moreau.Task's observation, torques and reward on the autograd graph
    (moreau.autograd.observe, torques, reward: the library's written
    derivatives) against torch's central differences (gradcheck), at
    random states and actions of 3 worlds."""
    from moreau.autograd import observe, reward, torques

    task = moreau.Task(name)
    rng = np.random.default_rng(1)
    q0, v0 = _quadruped_states(task, 3, rng)
    q1, v1 = _quadruped_states(task, 3, rng)
    a = rng.uniform(-1, 1, (3, task.action_dim))
    t = rng.uniform(0, 2, 3)
    energy = rng.uniform(0, 2, 3)
    T = lambda x: torch.tensor(x, dtype=torch.float64, requires_grad=True)  # noqa: E731
    # The observation is float32: differences of step 1e-3, tolerance to match.
    assert torch.autograd.gradcheck(
        lambda q, v: observe(task, q, v, t), (T(q0), T(v0)), eps=1e-3, atol=2e-4, rtol=1e-3
    )
    assert torch.autograd.gradcheck(lambda q, v, a: torques(task, q, v, a), (T(q0), T(v0), T(a)), eps=1e-6, atol=1e-7)
    assert torch.autograd.gradcheck(
        lambda *x: reward(task, *x), (T(q0), T(v0), T(q1), T(v1), T(a), T(energy)), eps=1e-6, atol=1e-7
    )


def test_task_values_are_the_documented_ones_and_bad_input_is_refused():
    """The cart-pole's reward, observation and torques against the formulas
    of its documentation (src/envs/cartpole.rs), the physics step a
    parameter; unknown tasks and parameters, a task without derivatives
    and wrong shapes raise ValueError naming the culprit."""
    task = moreau.Task("cartpole-swingup", dt=0.02, substeps=1, force_max=5.0)
    assert task.dt == 0.02 and task.control_dt == 0.02 and task.model.dt == 0.02
    assert task.parameters["force_max"] == 5.0 and task.obs_dim == 5 and task.action_dim == 1
    rng = np.random.default_rng(2)
    q, v = rng.uniform(-2, 2, (4, 2)), rng.uniform(-2, 2, (4, 2))
    a = rng.uniform(-1, 1, (4, 1))
    r = task.reward(q, v, q, v, a, np.zeros(4))
    np.testing.assert_allclose(r, 0.5 * (1 + np.cos(q[:, 1])) - 0.01 * a[:, 0] ** 2 - 0.01 * q[:, 0] ** 2, rtol=1e-14)
    obs = task.observe(q, v)
    assert obs.dtype == np.float32
    np.testing.assert_allclose(obs, np.stack([q[:, 0], np.cos(q[:, 1]), np.sin(q[:, 1]), v[:, 0], v[:, 1]], 1), rtol=1e-6)
    np.testing.assert_array_equal(task.torques(q, v, a), np.concatenate([5.0 * a, np.zeros((4, 1))], 1))
    # Resets: one stream per world, the same for the same seed.
    q0, v0, _ = task.reset(3, 7)
    np.testing.assert_array_equal(q0, task.reset(3, 7)[0])
    assert not np.array_equal(q0[0], q0[1])
    assert np.all(np.abs(q0[:, 1] - np.pi) <= 0.1)

    with pytest.raises(ValueError, match="no such task"):
        moreau.Task("cart-pole")
    with pytest.raises(ValueError, match="no parameter `mass`"):
        moreau.Task("cartpole-swingup", mass=1.0)
    with pytest.raises(ValueError, match="must be a whole number"):
        moreau.Task("quadruped-walk", substeps=0)
    push = moreau.Task("box-push")
    qp, vp, goal = push.reset(2, 0)
    with pytest.raises(ValueError, match="no written derivatives of its observe"):
        push.observe_vjp(qp, vp, np.ones((2, 9)), episode=goal)
    with pytest.raises(ValueError, match=r"q has shape \(4, 3\), expected \(4, 2\)"):
        task.observe(np.zeros((4, 3)), v)
    with pytest.raises(ValueError, match="not finite"):
        task.torques(q, v, np.full((4, 1), np.nan))


def test_step_jacobians_say_which_side_of_a_kink_each_q_column_is():
    """A cube settled on the floor (its four corners at distance ≈ 0):
    step_with_jacobians' ``q_side`` says, per column of ``dv_dq``, which
    perturbations it is the derivative for (issue 37: no silent wrong
    number): sliding or turning about the vertical moves no corner's
    distance (0: both sides), lifting keeps the gap's slope (+1: from
    above; from below the corners sink and the stabilization's slope
    changes), tilting about x or y lifts two corners and sinks two (2: a
    kink, both sides change). Each claim is checked against one-sided
    differences (steps of 1e-7, within 1e-6 of the matrix's scale; the
    wrong sides differ by more than 1e-2). BatchSim gives the same codes."""
    model = moreau.scene("cube-resting")
    sim = moreau.Simulator(model, tolerance=1e-12)
    for _ in range(500):
        sim.step(tau=np.zeros(model.nv))
    q0, v0 = sim.q.copy(), sim.v.copy()
    jac = sim.step_with_jacobians(np.zeros(model.nv))
    side = jac["q_side"]
    assert side.dtype == np.int8
    np.testing.assert_array_equal(side, [0, 0, 1, 2, 2, 0])
    scale = max(np.abs(jac["dv_dq"]).max(), 1.0 / model.dt)

    def v_after(q):
        s = moreau.Simulator(model, tolerance=1e-12)
        s.q, s.v = q, v0
        s.step(tau=np.zeros(model.nv))
        return s.v

    def moved(k, h):
        q = q0.copy()
        if k < 3:
            q[k] += h  # (the cube is not turned: its frame is the world's)
        else:  # a turn by h about axis k − 3: quaternion (x, y, z, w)
            q[3 + k - 3] += np.sin(h / 2)
            q[3:7] /= np.linalg.norm(q[3:7])
        return q

    base = v_after(q0)
    h = 1e-7
    for k in range(6):
        column = jac["dv_dq"][:, k]
        error = {sign: np.abs(column - (v_after(moved(k, sign * h)) - base) / (sign * h)).max() / scale for sign in (1, -1)}
        if side[k] == 0:
            assert max(error.values()) < 1e-6, (k, error)
        elif side[k] == 2:
            assert min(error.values()) > 1e-2, (k, error)
        else:
            assert error[side[k]] < 1e-6 and error[-side[k]] > 1e-2, (k, error)
    batch = moreau.BatchSim(model, 2, solver="ncp-admm", tolerance=1e-12)
    batch.set_states(np.tile(q0, (2, 1)), np.tile(v0, (2, 1)))
    np.testing.assert_array_equal(batch.step_with_jacobians(np.zeros((2, model.nv)))["q_side"], np.tile(side, (2, 1)))


def test_step_jacobians_say_which_side_of_a_kink_each_v_and_tau_column_is():
    """The settled cube held up by a force equal to its weight: its four
    contacts carry nothing and close nothing, on the boundary between
    pressed and lifting. ``v_side`` and ``tau_side`` say so per column of
    ``dv_dv`` and ``dv_dtau``: moving up keeps them open (+1: from above;
    from below they press), sliding or turning about the vertical moves no
    contact (0), tilting presses two corners and lifts two (2: a kink).
    Each claim against one-sided differences (1e-7 m/s, 1e-7/dt N), as for
    ``q_side`` (within 1e-6 of the column's scale, the wrong sides off by
    more than 1e-2); under half or 1.2 times its weight every column is 0.
    BatchSim gives the same codes."""
    model = moreau.scene("cube-resting")
    sim = moreau.Simulator(model, tolerance=1e-12)
    for _ in range(500):
        sim.step(tau=np.zeros(model.nv))
    q0, v0 = sim.q.copy(), sim.v.copy()
    weight = sum(model.body_mass) * -model.gravity[2]

    def run(tau, v=v0, jacobians=False):
        s = moreau.Simulator(model, tolerance=1e-12)
        s.q, s.v = q0, v
        if jacobians:
            return s.step_with_jacobians(tau)
        s.step(tau=tau)
        return s.v

    for share in (0.5, 1.2):
        jac = run(np.array([0, 0, share * weight, 0, 0, 0.0]), jacobians=True)
        assert not jac["v_side"].any() and not jac["tau_side"].any(), share
    tau0 = np.array([0, 0, weight, 0, 0, 0.0])
    jac = run(tau0, jacobians=True)
    assert jac["v_side"].dtype == np.int8
    np.testing.assert_array_equal(jac["v_side"], [0, 0, 1, 2, 2, 0])
    np.testing.assert_array_equal(jac["tau_side"], [0, 0, 1, 2, 2, 0])
    base = run(tau0)
    h = 1e-7
    # (Each column relative to its largest entry, at least its free-flight
    # scale: 1 for v, dt/m for tau.)
    for name, step, floor in (("v", h, 1.0), ("tau", h / model.dt, model.dt / sum(model.body_mass))):
        matrix, side = jac["dv_d" + name], jac[name + "_side"]
        for k in range(model.nv):
            scale = max(np.abs(matrix[:, k]).max(), floor)
            error = {}
            for sign in (1, -1):
                e = np.zeros(model.nv)
                e[k] = sign * step
                moved = run(tau0, v=v0 + e) if name == "v" else run(tau0 + e)
                error[sign] = np.abs(matrix[:, k] - (moved - base) / (sign * step)).max() / scale
            if side[k] == 0:
                assert max(error.values()) < 1e-6, (name, k, error)
            elif side[k] == 2:
                assert min(error.values()) > 1e-2, (name, k, error)
            else:
                assert error[side[k]] < 1e-6 and error[-side[k]] > 1e-2, (name, k, error)
    batch = moreau.BatchSim(model, 2, solver="ncp-admm", tolerance=1e-12)
    batch.set_states(np.tile(q0, (2, 1)), np.tile(v0, (2, 1)))
    out = batch.step_with_jacobians(np.tile(tau0, (2, 1)))
    for name in ("v_side", "tau_side"):
        np.testing.assert_array_equal(out[name], np.tile(jac[name], (2, 1)))


def test_a_gradient_through_a_kink_says_so():
    """moreau.autograd.step warns (KinkWarning) when a gradient with respect
    to q goes through a kink of a step (a cube settled on its four corners,
    tilted either way, lifts two and sinks two), and not for a cube in the
    air; as an error under warnings.simplefilter("error")."""
    import warnings

    from moreau.autograd import KinkWarning

    model = moreau.scene("cube-resting")
    sim = moreau.Simulator(model, tolerance=1e-12)
    for _ in range(500):
        sim.step(tau=np.zeros(model.nv))
    batch = moreau.BatchSim(model, 2, solver="ncp-admm", tolerance=1e-12)
    settled = np.tile(sim.q, (2, 1)), np.tile(sim.v, (2, 1))
    air = settled[0].copy(), settled[1].copy()
    air[0][:, 2] += 0.5

    def loss(q0, v0):
        q = torch.tensor(q0, requires_grad=True)
        q1, v1 = step(batch, q, torch.tensor(v0), torch.zeros(2, model.nv, dtype=torch.float64))
        (v1**2).sum().backward()
        return q.grad

    with pytest.warns(KinkWarning, match="world 0 .*components \\[3, 4\\]"):
        loss(*settled)
    with warnings.catch_warnings():
        warnings.simplefilter("error", KinkWarning)
        assert torch.isfinite(loss(*air)).all()
        with pytest.raises(KinkWarning):
            loss(*settled)
