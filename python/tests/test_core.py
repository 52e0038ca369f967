"""The Python bindings end to end: models, one world, many worlds, and bad
input raising exceptions that name the culprit (never a crash)."""

import math
import os
import pathlib
import pickle
import time

import numpy as np
import pytest

import moreau


def gymnasium_asset(name):
    """Gymnasium's MJCF file `name` from the robot files (scripts/fetch-robot-files)."""
    root = os.environ.get("MOREAU_ROBOT_FILES")
    path = pathlib.Path(root or "/nonexistent") / "gymnasium/envs/mujoco/assets" / name
    if not path.exists():
        if os.environ.get("MOREAU_REQUIRE_ROBOT_FILES") == "1":
            pytest.fail(f"MOREAU_REQUIRE_ROBOT_FILES=1 and {path} is missing")
        pytest.skip("robot files not found")
    return str(path)


def test_scenes_have_their_sizes():
    assert "quadruped" in moreau.scene_names()
    m = moreau.scene("quadruped")
    assert (m.nq, m.nv, m.nu) == (19, 18, 0)
    assert m.q0.shape == (19,) and m.q0.dtype == np.float64
    assert m.body_names[0] == "world"


def test_free_fall_is_symplectic_euler():
    """A cube in the air: v_n = -g n dt, z_n = z_0 - g dt^2 n(n+1)/2."""
    m = moreau.scene("cube-resting")
    sim = moreau.Simulator(m)
    q = m.q0.copy()
    q[2] = 2.0
    sim.q = q
    g, dt, n = 9.81, m.dt, 100
    for _ in range(n):
        report = sim.step()
        assert report["nc"] == 0
    assert sim.v[2] == pytest.approx(-g * dt * n, rel=1e-12)
    assert sim.q[2] == pytest.approx(2.0 - g * dt * dt * n * (n + 1) / 2, rel=1e-12)
    assert sim.t == pytest.approx(n * dt)


def test_a_resting_cube_stays_put():
    sim = moreau.Simulator(moreau.scene("cube-resting"))
    z0 = sim.q[2]
    for _ in range(200):
        report = sim.step()
    assert report["nc"] == 4 and report["converged"]
    assert abs(sim.q[2] - z0) < 1e-4
    contacts = sim.contacts()
    assert len(contacts) == 4 and contacts[0]["normal"] == pytest.approx([0, 0, 1])


def test_batch_worlds_match_a_single_world():
    m = moreau.scene("quadruped")
    batch = moreau.BatchSim(m, 3, backend="cpu1", tolerance=1e-10)
    single = moreau.Simulator(m, tolerance=1e-10)
    q = m.q0.copy()
    q[0] = 0.5
    batch.set_state(1, q, m.v0)
    tau = np.zeros((3, m.nv))
    for _ in range(50):
        batch.step(tau)
        single.step(np.zeros(m.nv))
    assert batch.q.shape == (3, m.nq) and batch.v.shape == (3, m.nv)
    np.testing.assert_allclose(batch.q[0], single.q, atol=1e-9)
    np.testing.assert_allclose(batch.q[2], single.q, atol=1e-9)
    assert batch.q[1, 0] == pytest.approx(single.q[0] + 0.5, abs=1e-6)


def _gpu_batch(m, n, **options):
    """A host-prepared GPU batch (gpu-solve: the decompositions and layouts
    are its knobs) of `n` worlds of `m`, or a skip when there is no adapter
    (a failure with MOREAU_REQUIRE_GPU=1)."""
    try:
        return moreau.BatchSim(m, n, backend="gpu-solve", **options)
    except ValueError as e:
        if os.environ.get("MOREAU_REQUIRE_GPU") == "1":
            raise
        pytest.skip(f"no GPU adapter: {e}")


def _drop_and_step(batch, m, n, steps):
    """Drops world w of `n` from 0.01 w above the model's posture and steps
    them all `steps` times without torques."""
    for w in range(n):
        q = m.q0.copy()
        q[2] += 0.01 * w
        batch.set_state(w, q, m.v0)
    tau = np.zeros((n, m.nv))
    for _ in range(steps):
        batch.step(tau)


def test_gpu_admm_with_a_workgroup_per_problem_steps_worlds_alike():
    """ncp-admm (the default solver) with one workgroup per problem steps
    dropped quadrupeds as with one invocation per problem (the same
    per-row operations: the same bits on lavapipe), with G and the vectors
    interleaved or packed; it has no lane kernel (a ValueError naming it)."""
    m = moreau.scene("quadruped")
    runs = []
    for decomposition, layout in [("invocation", "packed"), ("workgroup", "interleaved")]:
        batch = _gpu_batch(
            m, 3, tolerance=1e-6, decomposition=decomposition, layout=layout,
        )
        _drop_and_step(batch, m, 3, 60)
        assert not batch.failures
        runs.append(batch.q.copy())
    np.testing.assert_allclose(runs[1], runs[0], atol=1e-6)
    with pytest.raises(ValueError, match="ncp-admm"):
        moreau.BatchSim(m, 1, backend="gpu", decomposition="lane")


def test_gpu_decompositions_and_layouts_step_worlds_alike():
    """The GPU backend's decompositions and layouts of G, chosen from
    Python, step dropped quadrupeds alike (f32 solves of the same sweeps);
    unknown names and an empty pipeline are ValueErrors naming them."""
    m = moreau.scene("quadruped")
    runs = []
    for decomposition, layout, pipeline in [
        ("invocation", "packed", 1),
        ("lane", "interleaved", 2),
        ("workgroup", "packed", 1),
    ]:
        batch = _gpu_batch(
            m, 4, solver="ncp-pgs", tolerance=1e-6,
            decomposition=decomposition, layout=layout, pipeline=pipeline,
        )
        _drop_and_step(batch, m, 4, 100)
        assert not batch.failures
        runs.append(batch.q.copy())
    for q in runs[1:]:
        np.testing.assert_allclose(q, runs[0], atol=1e-5)
    with pytest.raises(ValueError, match="decomposition `tile`"):
        moreau.BatchSim(m, 1, decomposition="tile")
    with pytest.raises(ValueError, match="layout `soa`"):
        moreau.BatchSim(m, 1, layout="soa")
    with pytest.raises(ValueError, match="pipeline"):
        moreau.BatchSim(m, 1, pipeline=0)


def test_gymnasium_ant_loads_and_steps_under_controls():
    m = moreau.load(gymnasium_asset("ant.xml"))
    assert (m.nq, m.nv, m.nu) == (15, 14, 8)
    assert m.dt == pytest.approx(0.01)
    sim = moreau.Simulator(m)
    for _ in range(100):
        sim.step(ctrl=np.full(m.nu, 0.3))
    assert np.all(np.isfinite(sim.q))
    batch = moreau.BatchSim(m, 4)
    batch.step_controls(np.zeros((4, m.nu)))
    assert batch.q.shape == (4, 15)


def test_bad_input_raises_and_leaves_state_untouched(tmp_path):
    m = moreau.scene("cube-resting")
    sim = moreau.Simulator(m)
    q_before = sim.q
    with pytest.raises(ValueError, match="tau has length 5, expected 6"):
        sim.step(np.zeros(5))
    with pytest.raises(ValueError, match=r"tau\[2\] is not finite"):
        sim.step(np.array([0, 0, math.nan, 0, 0, 0], dtype=np.float64))
    with pytest.raises(ValueError, match="tau or ctrl"):
        sim.step(np.zeros(6), np.zeros(0))
    bad_q = m.q0.copy()
    bad_q[3:7] = 0.0
    with pytest.raises(ValueError, match="quaternion"):
        sim.q = bad_q
    np.testing.assert_array_equal(sim.q, q_before)
    assert sim.t == 0.0
    with pytest.raises(ValueError, match="no-such-scene"):
        moreau.scene("no-such-scene")
    with pytest.raises(ValueError, match="no-such-solver"):
        moreau.Simulator(m, solver="no-such-solver")
    with pytest.raises(FileNotFoundError, match="missing.urdf"):
        moreau.load(str(tmp_path / "missing.urdf"))
    broken = tmp_path / "broken.xml"
    broken.write_text("<mujoco><worldbody><body></mujoco>")
    with pytest.raises(ValueError):
        moreau.load(str(broken))
    batch = moreau.BatchSim(m, 2)
    with pytest.raises(ValueError, match=r"expected \(2, 6\)"):
        batch.step(np.zeros((3, 6)))
    with pytest.raises(ValueError, match=r"tau\[1, 4\] is not finite"):
        t = np.zeros((2, 6))
        t[1, 4] = math.inf
        batch.step(t)
    with pytest.raises(ValueError, match="backend"):
        moreau.BatchSim(m, 2, backend="tpu")
    with pytest.raises(TypeError, match="complex128"):
        batch.step(np.zeros((2, 6), dtype=complex))
    with pytest.raises(TypeError, match="bool"):
        batch.step(np.zeros((2, 6), dtype=bool))
    with pytest.raises(ValueError, match=r"expected a 2-D array, got 1-D"):
        batch.step(np.zeros(12))
    with pytest.raises(ValueError, match=r"v\[3\] is not finite"):
        sim.v = np.array([0, 0, 0, math.nan, 0, 0], dtype=np.float64)
    assert np.all(sim.v == 0.0)


def test_arrays_in_any_memory_order_are_read_as_numpy_indexes_them():
    # A Fortran-ordered or strided array holds the same values as its
    # C-ordered copy; it must drive the same worlds and actuators.
    m = moreau.load(gymnasium_asset("ant.xml"))
    n = 3
    ctrl = np.zeros((n, m.nu))
    ctrl[1, 0] = 1.0
    ctrl[2, m.nu - 1] = -0.5
    wide = np.zeros((n, 2 * m.nu))
    wide[:, ::2] = ctrl
    tau = np.zeros((n, m.nv))
    tau[2, 7] = 3.0
    results = []
    for c, t in [
        (ctrl, tau),
        (np.asfortranarray(ctrl), np.asfortranarray(tau)),
        (wide[:, ::2], np.asfortranarray(tau)[:, :]),
    ]:
        batch = moreau.BatchSim(m, n)
        batch.step_controls(c)
        batch.step(t)
        forces = batch.actuator_forces(c)
        results.append((batch.q, batch.v, forces))
    for q, v, f in results[1:]:
        np.testing.assert_array_equal(q, results[0][0])
        np.testing.assert_array_equal(v, results[0][1])
        np.testing.assert_array_equal(f, results[0][2])
    # The actuator of world 1 moved world 1, not world 0.
    assert np.any(results[0][2][1] != 0.0) and np.all(results[0][2][0] == 0.0)
    sim = moreau.Simulator(m)
    sim.step(tau[2, ::-1][::-1])
    ref = moreau.Simulator(m)
    ref.step(np.ascontiguousarray(tau[2]))
    np.testing.assert_array_equal(sim.q, ref.q)


def test_float32_integer_list_and_tensor_arguments_read_as_float64():
    # What RL code passes (torch's float32 tensors, lists, integer arrays)
    # is converted, not refused: the same worlds as with float64 arrays
    # of the same values (each exactly representable in every dtype).
    import torch

    m = moreau.load(gymnasium_asset("ant.xml"))
    n = 3
    ctrl = np.zeros((n, m.nu))
    ctrl[1, 0] = 1.0
    ctrl[2, m.nu - 1] = -0.5
    tau = np.zeros((n, m.nv))
    tau[2, 7] = 3.0
    tau[0, 6] = -2.0
    states = moreau.BatchSim(m, n)
    q0, v0 = states.q, states.v
    v0[:, 6:] = np.arange(n * (m.nv - 6)).reshape(n, -1) % 3 - 1.0

    def run(convert):
        batch = moreau.BatchSim(m, n)
        batch.set_states(convert(q0), convert(v0))
        batch.step_controls(convert(ctrl))
        batch.step(convert(tau))
        return batch.q, batch.v, batch.actuator_forces(convert(ctrl)), batch.frame_positions("torso", convert(q0))

    reference = run(lambda a: a)
    kinds = {
        "float32": lambda a: a.astype(np.float32),
        "list": lambda a: a.tolist(),
        "torch float32": lambda a: torch.tensor(a, dtype=torch.float32),
        "torch float64, transposed twice": lambda a: torch.tensor(a.T).T,
        "Fortran float32": lambda a: np.asfortranarray(a, dtype=np.float32),
    }
    for name, convert in kinds.items():
        for got, want in zip(run(convert), reference):
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-7 if "32" in name else 0, err_msg=name)
    # Integer arrays: controls of whole numbers.
    batch = moreau.BatchSim(m, n)
    batch.set_states(q0, v0)
    batch.step_controls((ctrl * 2).astype(np.int32))
    ref = moreau.BatchSim(m, n)
    ref.set_states(q0, v0)
    ref.step_controls((ctrl * 2).astype(np.int32).astype(np.float64))
    np.testing.assert_array_equal(batch.q, ref.q)
    sim = moreau.Simulator(m)
    sim.step(torch.tensor(tau[2], dtype=torch.float32))
    sim_ref = moreau.Simulator(m)
    sim_ref.step(tau[2])
    np.testing.assert_array_equal(sim.q, sim_ref.q)
    with pytest.raises(TypeError, match="complex"):
        sim.step(np.zeros(m.nv, dtype=complex))
    # A tensor that requires grad is refused by torch itself, by name.
    with pytest.raises(RuntimeError, match="requires grad"):
        sim.step(torch.zeros(m.nv, requires_grad=True))


@pytest.mark.parametrize("backend", ["cpu", "gpu"])
def test_a_bounded_recovery_speed_per_world(backend):
    # Cubes started 5 cm into the ground, their contacts rigid: world 0's
    # recovery unbounded (beta phi / dt = 10 m/s at 1 ms), world 1's
    # bounded at 0.5 m/s.
    m = moreau.scene("cube-resting")
    batch = moreau.BatchSim(m, 2, backend=backend, dt=1e-3)
    q = np.array(batch.q)
    q[:, 2] -= 0.05
    batch.set_states(q, np.zeros((2, m.nv)))
    for w in range(2):
        batch.set_world_params(w, penetration_compliance=0.0)
    batch.set_world_params(1, max_recovery_speed=0.5)
    fastest = np.zeros(2)
    for _ in range(20):
        batch.step(np.zeros((2, m.nv)))
        fastest = np.maximum(fastest, batch.v[:, 2])
    assert fastest[0] == pytest.approx(10.0, rel=1e-3)
    assert fastest[1] == pytest.approx(0.5, rel=1e-4)
    if backend == "gpu":
        assert batch.resident, batch.notice
    for bad in [0.0, -1.0, float("nan")]:
        with pytest.raises(ValueError, match="max_recovery_speed"):
            batch.set_world_params(0, max_recovery_speed=bad)
    # math.inf: unbounded again.
    batch.set_world_params(1, max_recovery_speed=math.inf)
    batch.set_states(q, np.zeros((2, m.nv)))
    batch.step(np.zeros((2, m.nv)))
    assert batch.v[1, 2] == pytest.approx(batch.v[0, 2], rel=1e-6)


def test_open_contacts_set_aside_per_world():
    # Cubes at rest 3 mm above the ground (inside the 5 mm margin): world 0
    # sets their open contacts aside (the default), world 1 keeps them;
    # both fall alike.
    m = moreau.scene("cube-resting")
    batch = moreau.BatchSim(m, 2, backend="cpu", dt=1e-3)
    q = np.array(batch.q)
    q[:, 2] += 0.003
    batch.set_states(q, np.zeros((2, m.nv)))
    batch.set_world_params(1, screen_contacts=False)
    batch.step(np.zeros((2, m.nv)))
    worlds = batch.contacts()["world"]
    assert (np.sum(worlds == 0), np.sum(worlds == 1)) == (0, 4)
    np.testing.assert_allclose(batch.q[0], batch.q[1], atol=1e-12)
    np.testing.assert_allclose(batch.v[0], batch.v[1], atol=1e-12)


def test_equality_recovery_is_bounded_by_default_and_set_per_world():
    # mocap.xml's box welded to mocap body `target`, the target moved 15 cm:
    # world 0 closes the weld at the default 5 m/s, world 1 unbounded.
    path = pathlib.Path(__file__).resolve().parents[2] / "tests/data/mujoco/mocap.xml"
    m = moreau.load(str(path))
    batch = moreau.BatchSim(m, 2, backend="cpu")
    pos, quat = batch.mocap_poses()
    batch.set_mocap(pos + [[0.1, -0.05, 0.1], [0.0, 0.0, 0.0]], quat)
    batch.set_world_params(1, max_equality_recovery_speed=math.inf)
    start = batch.q[:, :3].copy()
    batch.step(np.zeros((2, m.nv)), 4)
    # In 4 ms: at most 5 m/s (the position error's recovery bounded in
    # norm), against 0.2 of the error closed a step unbounded (1 - 0.8^4
    # of the 15 cm).
    moved = np.linalg.norm(batch.q[:, :3] - start, axis=1)
    assert 0.015 < moved[0] <= 0.02 * 1.001 and moved[1] > 0.08, moved
    batch.step(np.zeros((2, m.nv)), 1500)
    np.testing.assert_allclose(batch.q[0], batch.q[1], atol=1e-6)
    for bad in [0.0, -1.0, float("nan")]:
        with pytest.raises(ValueError, match="max_equality_recovery_speed"):
            batch.set_world_params(0, max_equality_recovery_speed=bad)
    for bad in [-1.0, float("nan"), math.inf]:
        with pytest.raises(ValueError, match="mocap_compliance"):
            batch.set_world_params(0, mocap_compliance=bad)


def test_penetration_compliance_is_set_per_world():
    # Cubes started 2 cm into the ground (dt 1 ms: recovery asks 4 m/s):
    # world 1 rigid (the default), world 0 at alpha = 1, world 2 at 3. A
    # compliant normal row ends the step at (v_req + k v_free) / (1 + k),
    # v_free = -g dt, k proportional to alpha (k = R / G): world 0 gives k,
    # which must predict world 2.
    m = moreau.scene("cube-resting")
    batch = moreau.BatchSim(m, 3, backend="cpu", dt=1e-3)
    q = np.array(batch.q)
    q[:, 2] -= 0.02
    batch.set_states(q, np.zeros((3, m.nv)))
    batch.set_world_params(0, penetration_compliance=1.0)
    batch.set_world_params(2, penetration_compliance=3.0)
    batch.step(np.zeros((3, m.nv)))
    rigid, v_free = 0.2 * 0.02 / 1e-3, -9.81e-3
    v = batch.v[:, 2]
    assert abs(v[1] - rigid) < 1e-6 * rigid
    k = (rigid - v[0]) / (v[0] - v_free)
    assert 0.5 < k < 1.0, v
    predicted = (rigid + 3 * k * v_free) / (1 + 3 * k)
    assert abs(v[2] - predicted) < 1e-9 * rigid, (v, predicted)
    for bad in [-1.0, float("nan"), math.inf]:
        with pytest.raises(ValueError, match="penetration_compliance"):
            batch.set_world_params(0, penetration_compliance=bad)


@pytest.mark.parametrize("backend", ["cpu", "gpu"])
def test_domain_randomization_per_world(backend):
    # Without gravity or damping a step from rest is M Δv = τ dt: all the
    # masses and inertias doubled halve Δv, half the time step halves it.
    m = moreau.scene("cartpole")
    base = m.with_parameters(gravity=[0.0, 0.0, 0.0], dof_damping=np.zeros(m.nv))
    batch = moreau.BatchSim(base, 3, backend=backend)
    heavy = base.with_parameters(body_mass=2 * base.body_mass, body_inertia=2 * base.body_inertia)
    np.testing.assert_array_equal(heavy.body_mass, 2 * m.body_mass)
    batch.set_world_model(1, heavy)
    batch.set_world_params(2, dt=base.dt / 2)
    tau = np.zeros((3, m.nv))
    tau[:, 0] = 1.0
    batch.step(tau)
    dv = batch.v
    assert np.abs(dv[0]).max() > 1e-4
    rtol = 1e-5 if backend == "gpu" else 1e-12
    np.testing.assert_allclose(dv[1], dv[0] / 2, rtol=rtol, atol=0)
    np.testing.assert_allclose(dv[2], dv[0] / 2, rtol=rtol, atol=0)
    if backend == "gpu":
        assert batch.resident, batch.notice
    # Bad values are refused, naming them, and nothing changes.
    with pytest.raises(ValueError, match="mass"):
        base.with_parameters(body_mass=-base.body_mass)
    with pytest.raises(ValueError, match=r"dof_damping\[1\] is negative"):
        base.with_parameters(dof_damping=[0.0, -1.0])
    with pytest.raises(ValueError, match="expected 3"):
        base.with_parameters(gravity=[0.0, 0.0])
    with pytest.raises(ValueError, match="dt"):
        batch.set_world_params(0, dt=-1.0)
    with pytest.raises(ValueError):
        batch.set_world_model(0, moreau.scene("quadruped"))
    # World 0 steps on as a fresh world of the base model does.
    batch.step(tau)
    fresh = moreau.BatchSim(base, 1, backend=backend)
    fresh.step(tau[:1])
    fresh.step(tau[:1])
    np.testing.assert_allclose(batch.v[0], fresh.v[0], rtol=rtol, atol=0)


@pytest.mark.parametrize("file", ["ant.xml", "humanoid.xml", "swimmer.xml"])
def test_joint_index_maps_are_mujocos(file):
    mujoco = pytest.importorskip("mujoco")
    path = gymnasium_asset(file)
    ours, theirs = moreau.load(path), mujoco.MjModel.from_xml_path(path)
    assert ours.joint_names[0] == "" and ours.joint_qpos_address[0] == -1
    types = {0: "free", 1: "ball", 2: "slide", 3: "hinge"}
    for j in range(theirs.njnt):
        name = mujoco.mj_id2name(theirs, mujoco.mjtObj.mjOBJ_JOINT, j)
        k = ours.joint_names.index(name)
        assert ours.joint_types[k] == types[int(theirs.jnt_type[j])], name
        assert ours.joint_qpos_address[k] == theirs.jnt_qposadr[j], name
        assert ours.joint_dof_address[k] == theirs.jnt_dofadr[j], name


def test_step_jacobians_and_vjp_from_python():
    """The sliding cube: dv+/dtau against central differences of steps
    through Python, and the VJP against w^T J."""
    m = moreau.scene("cube-sliding")
    sim = moreau.Simulator(m, tolerance=1e-12)
    for _ in range(50):
        sim.step()
    q, v = sim.q, sim.v
    tau = np.linspace(-0.2, 0.2, m.nv)
    # Every step from a fresh simulator: the same solve (a resting robot's
    # impulses are not unique, and the modes read off them decide the
    # derivative). Differences of 1e-4 m/s: the contacts slide.
    s2 = moreau.Simulator(m, tolerance=1e-12)
    s2.q, s2.v = q, v
    jac = s2.step_with_jacobians(tau)
    assert jac["dv_dtau"].shape == (m.nv, m.nv) and jac["dq_dq"].shape == (m.nv, m.nv)
    eps = 1e-4 / m.dt

    def v_next(t):
        s = moreau.Simulator(m, tolerance=1e-12)
        s.q, s.v = q, v
        s.step(t)
        return s.v

    fd = np.column_stack(
        [(v_next(tau + eps * e) - v_next(tau - eps * e)) / (2 * eps) for e in np.eye(m.nv)]
    )
    assert np.abs(fd - jac["dv_dtau"]).max() < 1e-5 * np.abs(fd).max()
    s3 = moreau.Simulator(m, tolerance=1e-12)
    s3.q, s3.v = q, v
    w_v, w_q = np.ones(m.nv), np.linspace(0, 1, m.nv)
    vjp = s3.step_with_vjp(tau, w_v, w_q)
    assert vjp["wrt_q"] == jac["wrt_q"]
    for x in ["q", "v", "tau"] if jac["wrt_q"] else ["v", "tau"]:
        expected = jac[f"dv_d{x}"].T @ w_v + jac[f"dq_d{x}"].T @ w_q
        np.testing.assert_allclose(vjp[x], expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())
    with pytest.raises(ValueError, match="w_q has length"):
        s3.step_with_vjp(tau, w_v, np.ones(3))


def test_solve_one_contact_against_the_analytic_answers():
    """G = I, one contact pressed with g_N = -1, μ = 0.5: a tangential g of
    0.3 sticks (λ = (-0.3, 0, 1)), one of 2 slides at the cone's edge
    (λ_T = -0.5, c_T = 1.5); every solver of the catalog that handles cones."""
    G = np.eye(3)
    mu = np.array([0.5])
    for solver in ["ncp-admm", "ncp-pgs"]:
        stick = moreau.solve(G, np.array([0.3, 0.0, -1.0]), mu, solver=solver, tolerance=1e-10)
        assert stick["converged"]
        np.testing.assert_allclose(stick["lambda"], [-0.3, 0.0, 1.0], atol=1e-8)
        slide = moreau.solve(G, np.array([2.0, 0.0, -1.0]), mu, solver=solver, tolerance=1e-10)
        np.testing.assert_allclose(slide["lambda"], [-0.5, 0.0, 1.0], atol=1e-8)
        np.testing.assert_allclose(slide["c"][:2], [1.5, 0.0], atol=1e-8)
    with pytest.raises(ValueError, match=r"expected \(3, 3\)"):
        moreau.solve(np.eye(2), np.zeros(3), mu)
    bad = np.eye(3)
    bad[0, 1] = 1.0
    with pytest.raises(ValueError):
        moreau.solve(bad, np.zeros(3), mu)
    with pytest.raises(ValueError):
        moreau.solve(G, np.zeros(3), np.array([-1.0]))
    with pytest.raises(ValueError, match="no-such"):
        moreau.solve(G, np.zeros(3), mu, solver="no-such")


def test_a_failing_world_is_reported_and_keeps_its_state():
    """A world driven to overflow (v = 1e300 into the ground) fails its
    step (its contact solve returns a non-finite impulse): listed in
    `failures` with why, its state kept; the others step on."""
    m = moreau.scene("cube-resting")
    batch = moreau.BatchSim(m, 2)
    v = m.v0.copy()
    v[0] = 1e300
    batch.set_state(1, m.q0, v)
    q_before = batch.q
    batch.step(np.zeros((2, m.nv)))
    failures = batch.failures
    assert [w for w, _ in failures] == [1], failures
    assert "non-finite impulse" in failures[0][1]
    np.testing.assert_array_equal(batch.q[1], q_before[1])
    batch.step(np.zeros((2, m.nv)))
    assert batch.failures[0][0] == 1


def test_body_quantities_refuse_bad_states():
    model = moreau.scene("quadruped")
    batch = moreau.BatchSim(model, 2)
    with pytest.raises(ValueError, match=r"q has shape \(1, "):
        batch.com_inertias(np.zeros((1, model.nq)))
    v = np.zeros((2, model.nv))
    v[1, 0] = np.nan
    with pytest.raises(ValueError, match=r"v\[1, 0\] is not finite"):
        batch.com_velocities(None, v)
    with pytest.raises(ValueError, match="ctrl has shape"):
        batch.actuator_forces(np.zeros((2, model.nu + 1)))
    with pytest.raises(ValueError, match="qvel has shape"):
        model.from_mujoco(np.zeros((2, model.nq)), np.zeros((2, model.nv + 1)))
    # A scene's model has no file bodies: empty per-body arrays.
    assert batch.com_inertias().shape == (2, 0, 10)


def _random_problems(batch, nc, seed):
    """Coupled, well-conditioned problems: G = AAᵀ/m + 0.1 I, normal
    velocities mostly approaching, μ in [0.2, 1]."""
    rng = np.random.default_rng(seed)
    m = 3 * nc
    a = rng.standard_normal((batch, m, m))
    G = a @ a.transpose(0, 2, 1) / m + 0.1 * np.eye(m)
    g = rng.standard_normal((batch, m))
    g[:, 2::3] -= 1.0
    return G, g, rng.uniform(0.2, 1.0, (batch, nc))


def test_solve_a_batch_on_the_cpu_equals_solving_each():
    G, g, mu = _random_problems(32, 4, seed=1)
    batch = moreau.solve(G, g, mu, solver="ncp-admm", tolerance=1e-8)
    assert batch["lambda"].shape == (32, 12) and batch["converged"].shape == (32,)
    assert batch["converged"].all()
    for k in [0, 7, 31]:
        one = moreau.solve(G[k], g[k], mu[k], solver="ncp-admm", tolerance=1e-8)
        np.testing.assert_array_equal(batch["lambda"][k], one["lambda"])
        np.testing.assert_array_equal(batch["c"][k], one["c"])
    # A bad problem in a batch is named.
    bad = g.copy()
    bad[5, 2] = np.nan
    with pytest.raises(ValueError, match="problem 5"):
        moreau.solve(G, bad, mu)
    with pytest.raises(ValueError, match="for a batch"):
        moreau.solve(G, g[0], mu)
    with pytest.raises(ValueError, match="unknown device"):
        moreau.solve(G, g, mu, device="tpu")


def test_solve_a_batch_on_the_gpu_against_the_cpu():
    """All the problems in one kernel (f32; lavapipe in CI): PGS's answers
    within 1e-3 of the f64 CPU solver's (relative to the largest impulse),
    every problem converged; ADMM's too, with its finishers (without the
    polish, the de Saxcé fixed point stalls on one of the 64): no more
    iterations than the CPU's, Newton's steps taken on both sides. No
    adapter: RuntimeError, a failure in CI (MOREAU_REQUIRE_GPU=1)."""
    G, g, mu = _random_problems(64, 4, seed=0)
    try:
        gpu = moreau.solve(G, g, mu, solver="ncp-pgs", tolerance=1e-5, max_iterations=2000, device="gpu")
    except RuntimeError as e:
        if os.environ.get("MOREAU_REQUIRE_GPU") == "1":
            raise
        pytest.skip(f"no GPU adapter: {e}")
    cpu = moreau.solve(G, g, mu, solver="ncp-pgs", tolerance=1e-8, max_iterations=5000)
    scale = np.abs(cpu["lambda"]).max()
    assert gpu["converged"].all()
    assert np.abs(gpu["lambda"] - cpu["lambda"]).max() <= 1e-3 * scale
    admm = moreau.solve(G, g, mu, solver="ncp-admm", tolerance=1e-5, max_iterations=2000, device="gpu")
    assert admm["converged"].all()
    assert np.abs(admm["lambda"] - cpu["lambda"]).max() <= 1e-3 * scale
    cpu_admm = moreau.solve(G, g, mu, solver="ncp-admm", tolerance=1e-5, max_iterations=2000)
    assert (admm["iterations"] <= cpu_admm["iterations"]).all()
    assert admm["newton_steps"].sum() > 0 and cpu_admm["newton_steps"].sum() > 0
    # A Delassus matrix that is not PSD is refused, naming the problem.
    bad = G.copy()
    bad[3, 0, 1] = bad[3, 1, 0] = 3.0 * max(bad[3, 0, 0], bad[3, 1, 1])
    with pytest.raises(ValueError, match="problem 3: flagged by the GPU solver: not-psd"):
        moreau.solve(bad, g, mu, solver="ncp-pgs", device="gpu")


def test_simulator_reports_its_stage_times_and_solver_stats():
    model = moreau.scene("cube-resting")
    sim = moreau.Simulator(model)
    start = time.perf_counter()
    for _ in range(20):
        report = sim.step()
    wall = time.perf_counter() - start
    assert report["nc"] > 0 and report["converged"] and report["eps_abs"] <= 1e-8
    assert set(report["times"]) == {"free_dynamics", "collision", "delassus", "solve", "velocity_update", "integrate"}
    times = sim.stage_times
    assert all(t > 0 for t in times.values()), times
    assert sum(times.values()) <= wall
    sim.reset_timers()
    assert sum(sim.stage_times.values()) == 0.0


def test_activation_dynamics_are_state(tmp_path):
    """A filter actuator (MJCF dyntype="filter", tau 0.1) under a unit step:
    act_k = 1 - (1 - dt/tau)^k in one world and in every world of a batch;
    set_states takes the activations (zero when not given) and refuses bad
    ones naming them, leaving the worlds as they were."""
    path = tmp_path / "filter.xml"
    path.write_text(
        """<mujoco><option timestep="0.01" gravity="0 0 0"/>
        <worldbody><body><joint name="x" type="slide" axis="1 0 0"/>
        <geom size=".1" mass="1"/></body></worldbody>
        <actuator><general joint="x" dyntype="filter" dynprm="0.1" gainprm="2"/>
        <motor joint="x"/></actuator></mujoco>"""
    )
    m = moreau.load(str(path))
    assert (m.nu, m.na) == (2, 1)
    sim = moreau.Simulator(m)
    assert sim.act.tolist() == [0.0]
    for k in range(1, 6):
        sim.step(ctrl=[1.0, 0.0])
        assert sim.act[0] == pytest.approx(1 - (1 - 0.01 / 0.1) ** k, abs=1e-14)
    with pytest.raises(ValueError, match="act"):
        sim.act = [0.1, 0.2]
    sim.act = [0.25]
    assert sim.act.tolist() == [0.25]

    batch = moreau.BatchSim(m, 3)
    batch.step_controls(np.tile([1.0, 0.0], (3, 1)), 4)
    assert batch.act.shape == (3, 1)
    assert batch.act[:, 0] == pytest.approx([1 - 0.9**4] * 3, abs=1e-14)
    q, v = batch.q, batch.v
    with pytest.raises(ValueError, match="act"):
        batch.set_states(q, v, np.full((3, 1), np.nan))
    assert batch.act[:, 0] == pytest.approx([1 - 0.9**4] * 3, abs=1e-14)
    batch.set_states(q, v, np.array([[0.1], [0.2], [0.3]]))
    assert batch.act[:, 0].tolist() == [0.1, 0.2, 0.3]
    batch.set_states(q, v)
    assert batch.act[:, 0].tolist() == [0.0, 0.0, 0.0]


# A world's full state (q, v, act, time and warm starts) taken and restored,
# models and batches pickled: restored worlds continue bit for bit.
def random_steps(batch, steps, seed):
    """`steps` steps of `batch` under uniform random torques in [-1, 1]
    drawn from `seed`; the states after each."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        batch.step(rng.uniform(-1.0, 1.0, (batch.nworlds, batch.model.nv)))
        out.append((batch.q, batch.v))
    return out


def assert_same(a, b):
    for (qa, va), (qb, vb) in zip(a, b):
        assert np.array_equal(qa, qb) and np.array_equal(va, vb)


@pytest.mark.parametrize("backend", ["cpu", "cpu1"])
def test_a_restored_batch_continues_bit_for_bit(backend):
    """The quadruped on its feet under random torques: 50 steps from a
    snapshot restored into a fresh batch equal the original's, bit for bit;
    from q and v alone (set_states) they do not (the warm starts are
    state)."""
    m = moreau.scene("quadruped")
    batch = moreau.BatchSim(m, 3, backend=backend)
    random_steps(batch, 300, seed=1)
    snapshot = batch.snapshot()
    q, v = batch.q, batch.v
    expected = random_steps(batch, 50, seed=2)

    fresh = moreau.BatchSim(m, 3, backend=backend)
    fresh.restore(snapshot)
    assert np.array_equal(fresh.q, q) and np.array_equal(fresh.v, v)
    assert_same(random_steps(fresh, 50, seed=2), expected)

    cold = moreau.BatchSim(m, 3, backend=backend)
    cold.set_states(q, v)
    gap = max(np.abs(a[0] - b[0]).max() for a, b in zip(random_steps(cold, 50, seed=2), expected))
    assert gap > 0.0


def test_pickled_models_and_batches_continue_bit_for_bit():
    """A file's model (Gymnasium's ant) and a batch with a randomized world
    (its own masses and friction scale) survive pickling: the unpickled
    batch continues as the original, bit for bit, world by world."""
    ant = moreau.load(gymnasium_asset("ant.xml"))
    back = pickle.loads(pickle.dumps(ant))
    assert (back.name, back.nq, back.nv, back.nu, back.dt) == (ant.name, ant.nq, ant.nv, ant.nu, ant.dt)
    assert np.array_equal(back.q0, ant.q0) and back.body_names == ant.body_names
    assert np.array_equal(back.ctrl_range, ant.ctrl_range)

    batch = moreau.BatchSim(ant, 3)
    heavy = ant.with_parameters(body_mass=2.0 * ant.body_mass)
    batch.set_world_model(1, heavy)
    batch.set_world_params(2, friction_scale=0.5)
    ctrl = np.random.default_rng(3).uniform(-1.0, 1.0, (3, ant.nu))
    batch.step_controls(ctrl, 200)
    clone = pickle.loads(pickle.dumps(batch))
    assert clone.nworlds == 3
    for _ in range(50):
        batch.step_controls(ctrl)
        clone.step_controls(ctrl)
    assert np.array_equal(batch.q, clone.q) and np.array_equal(batch.v, clone.v)
    # The randomized worlds kept their own dynamics: they moved apart.
    assert not np.array_equal(clone.q[0], clone.q[1])
    assert not np.array_equal(clone.q[0], clone.q[2])


def test_one_world_restores_bit_for_bit_and_takes_no_batch_snapshot():
    m = moreau.scene("pyramid")
    sim = moreau.Simulator(m)
    for _ in range(100):
        sim.step()
    snapshot = sim.snapshot()
    for _ in range(30):
        sim.step()
    q, v = sim.q, sim.v
    other = moreau.Simulator(m)
    other.restore(snapshot)
    for _ in range(30):
        other.step()
    assert np.array_equal(other.q, q) and np.array_equal(other.v, v)
    with pytest.raises(ValueError, match="3 worlds"):
        other.restore(moreau.BatchSim(m, 3).snapshot())


def test_bad_snapshots_are_refused_and_leave_the_worlds_untouched():
    m = moreau.scene("quadruped")
    batch = moreau.BatchSim(m, 2)
    random_steps(batch, 5, seed=4)
    q, v = batch.q, batch.v
    snapshot = batch.snapshot()
    with pytest.raises(ValueError, match="not a moreau snapshot"):
        batch.restore(b"not a snapshot")
    with pytest.raises(ValueError, match="not a moreau snapshot"):
        batch.restore(snapshot[: len(snapshot) // 2])
    with pytest.raises(ValueError, match="snapshot of 3 worlds for a batch of 2"):
        batch.restore(moreau.BatchSim(m, 3).snapshot())
    # Another model's snapshot: the first world fits nowhere.
    with pytest.raises(ValueError):
        batch.restore(moreau.BatchSim(moreau.scene("cartpole"), 2).snapshot())
    assert np.array_equal(batch.q, q) and np.array_equal(batch.v, v)
    # What a model unpickles from, damaged.
    reduce, (bytes_, q0, v0, dt) = m.__reduce__()
    with pytest.raises(ValueError, match="not a moreau model"):
        reduce(bytes_[:-40], q0, v0, dt)
    with pytest.raises(ValueError, match="do not fit"):
        reduce(bytes_, q0[:-1], v0, dt)
    batch.restore(snapshot)
    assert np.array_equal(batch.q, q)


def test_worlds_on_the_device_refuse_snapshots_by_name():
    """On "gpu" a contact-free model's worlds live on the device, with
    their warm starts: a snapshot (and so pickling) is refused, naming
    why."""
    m = moreau.scene("cartpole")
    try:
        batch = moreau.BatchSim(m, 2, backend="gpu")
    except ValueError as e:
        if "no GPU adapter" in str(e) and os.environ.get("MOREAU_REQUIRE_GPU") != "1":
            pytest.skip(str(e))
        raise
    assert batch.resident
    with pytest.raises(ValueError, match="living on the device"):
        batch.snapshot()
    with pytest.raises(ValueError, match="living on the device"):
        pickle.dumps(batch)


@pytest.mark.parametrize("backend", ["cpu", "cpu1", "gpu"])
def test_batch_contacts_land_in_their_worlds_and_carry_the_weight(backend):
    """Two cubes, one resting, one in the air: every contact is the resting
    world's, its normal impulses carry the cube's weight over the step
    (m g dt), and swapping the worlds' states swaps their contacts. On
    "gpu" the cube lives on the device and its contacts are read back."""
    m = moreau.scene("cube-resting")
    try:
        batch = moreau.BatchSim(m, 2, backend=backend)
    except ValueError as e:
        if "no GPU adapter" in str(e) and os.environ.get("MOREAU_REQUIRE_GPU") != "1":
            pytest.skip(str(e))
        raise
    assert batch.resident == (backend == "gpu")
    q0, v0 = m.q0, m.v0
    lifted = q0.copy()
    lifted[2] += 1.0
    mass = float(np.sum(m.body_mass))
    for resting in (0, 1):
        q = np.stack([q0, lifted] if resting == 0 else [lifted, q0])
        batch.set_states(q, np.stack([v0, v0]))
        for _ in range(3):
            batch.step(np.zeros((2, m.nv)))
        c = batch.contacts()
        k = len(c["world"])
        assert k >= 4 and (c["world"] == resting).all(), c["world"]
        assert c["geoms"].shape == (k, 2) and c["point"].shape == (k, 3)
        assert {m.body_names[b] for b in c["bodies"].ravel()} == {"world", "cube"}
        # The normal points from b to a; the impulse on a pushes it out.
        ground = c["bodies"][:, 1] == 0
        assert ground.all() or (~ground).all()
        sign = 1.0 if ground.all() else -1.0
        normal_impulse = sign * np.sum(c["impulse"] * c["normal"], axis=1)
        assert (normal_impulse >= -1e-9).all()
        np.testing.assert_allclose(normal_impulse.sum(), mass * 9.81 * m.dt, rtol=1e-3)
        np.testing.assert_allclose(np.abs(c["distance"]), 0.0, atol=1e-3)


def test_state_views_are_live_and_read_only(tmp_path):
    """BatchSim.q_view, v_view, act_view and t_view lend the batch's own
    memory: the same at every access, up to date after every call that
    changes a state (each tried here), never writable, and they keep the
    batch alive."""
    import gc

    path = tmp_path / "arm.xml"
    path.write_text(
        '<mujoco><worldbody><body name="b" pos="0 0 1"><freejoint/><geom size="0.1"/>'
        '<body name="arm"><joint name="j" type="hinge" axis="0 1 0"/>'
        '<geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02"/></body></body></worldbody>'
        '<actuator><general joint="j" dyntype="filter" dynprm="0.05"/></actuator></mujoco>'
    )
    m = moreau.load(str(path))
    n = 3
    batch = moreau.BatchSim(m, n, backend="cpu1")
    qv, vv, av, tv = batch.q_view, batch.v_view, batch.act_view, batch.t_view
    assert qv.shape == (n, m.nq) and av.shape == (n, 1) and tv.shape == (n,)
    assert np.shares_memory(qv, batch.q_view) and not np.shares_memory(qv, batch.q)

    def current():
        assert np.array_equal(qv, batch.q) and np.array_equal(vv, batch.v)
        assert np.array_equal(av, batch.act)

    current()
    batch.step(np.ones((n, m.nv)))
    current()
    assert tv == pytest.approx([m.dt] * n) and np.any(vv != 0)
    batch.step_controls(np.ones((n, m.nu)), repeats=2)
    current()
    assert np.all(av != 0) and tv == pytest.approx([3 * m.dt] * n)
    batch.step_with_jacobians(np.zeros((n, m.nv)))
    current()
    batch.step_for_vjp(np.zeros((n, m.nv)))
    current()
    snapshot, saved = batch.snapshot(), batch.q
    q = batch.q
    q[1, 2] += 0.25
    batch.set_states(q, batch.v)
    current()
    assert qv[1, 2] == q[1, 2]
    batch.set_state(2, m.q0, m.v0)
    current()
    batch.restore(snapshot)
    current()
    assert np.array_equal(qv, saved)
    # A refused call changes neither the worlds nor the views.
    before = qv.copy()
    with pytest.raises(ValueError):
        batch.set_states(np.full((n, m.nq), np.nan), batch.v)
    assert np.array_equal(qv, before)
    current()
    with pytest.raises(ValueError, match="read-only"):
        qv[0, 0] = 1.0
    # The views keep the batch alive.
    del batch
    gc.collect()
    assert np.array_equal(qv, before)


def test_worlds_render_to_images_of_their_own_state():
    """BatchSim.render and Simulator.render: uint8 RGB (and float32 depth)
    arrays of each world as it stands, drawn offscreen (lavapipe in CI); a
    world alone equals its row of the batch's; bad worlds are refused."""
    m = moreau.scene("cube-resting")
    try:
        batch = moreau.BatchSim(m, 3)
        rgb, depth = batch.render(width=48, height=32, depth=True)
    except ValueError as e:
        if "no GPU adapter" in str(e) and os.environ.get("MOREAU_REQUIRE_GPU") != "1":
            pytest.skip(str(e))
        raise
    assert rgb.shape == (3, 32, 48, 3) and rgb.dtype == np.uint8
    assert depth.shape == (3, 32, 48) and depth.dtype == np.float32
    assert np.array_equal(rgb[0], rgb[1]) and (depth > 0).any()
    q = batch.q
    q[1, 2] += 0.3
    batch.set_states(q, batch.v)
    moved = batch.render(width=48, height=32)
    assert np.array_equal(moved[0], rgb[0]) and not np.array_equal(moved[1], rgb[1])
    assert np.array_equal(batch.render(worlds=[1], width=48, height=32)[0], moved[1])
    # The camera's distance: the cube's nearest depth grows with it.
    far = batch.render(worlds=[0], width=48, height=32, distance=8.0, depth=True)[1][0]
    near = batch.render(worlds=[0], width=48, height=32, distance=3.0, depth=True)[1][0]
    assert far[far > 0].min() > near[near > 0].min()
    sim = moreau.Simulator(m)
    assert np.array_equal(sim.render(width=48, height=32), rgb[0])
    with pytest.raises(ValueError, match="world 3 of a batch of 3"):
        batch.render(worlds=[3])
    with pytest.raises(ValueError, match="image size"):
        batch.render(width=0)


def test_contacts_are_drawn_over_the_worlds_that_have_them():
    """render(contacts=True): the last step's contacts over each world's
    image (the resting world's, not the one in the air), its depth image
    the scene's; a file's camera and a tracked body by name."""
    m = moreau.scene("cube-resting")
    batch = moreau.BatchSim(m, 2)
    q = batch.q
    q[1, 2] += 1.0
    batch.set_states(q, batch.v)
    before = batch.render(width=64, height=48, contacts=True)
    assert np.array_equal(before, batch.render(width=64, height=48)), "no step, no contacts"
    batch.step(np.zeros((2, m.nv)))
    rgb, depth = batch.render(width=64, height=48, depth=True)
    marked, marked_depth = batch.render(width=64, height=48, depth=True, contacts=True)
    assert np.array_equal(marked_depth, depth)
    assert not np.array_equal(marked[0], rgb[0]) and np.array_equal(marked[1], rgb[1])
    # Red balls at the points, yellow arrows: the resting world's new pixels.
    changed = marked[0][np.any(marked[0] != rgb[0], axis=-1)].astype(int)
    assert len(changed) > 5 and (changed[:, 0] > changed[:, 2] + 60).mean() > 0.9
    sim = moreau.Simulator(m)
    sim.step()
    assert np.array_equal(sim.render(width=64, height=48, contacts=True), marked[0])
    with pytest.raises(ValueError, match="camera `eye`: not one of the model's cameras"):
        sim.render(camera="eye")
    with pytest.raises(ValueError, match="track `nowhere`: not a body or frame"):
        sim.render(track="nowhere")
    with pytest.raises(ValueError, match="a model camera takes none of"):
        moreau.Simulator(moreau.load(str(__import__("moreau.gym").gym.gymnasium_assets() / "ant.xml"))).render(camera="track", distance=2.0)


def test_a_batch_larger_than_one_submission_renders_in_chunks():
    """More worlds than one submission draws (64): each image is its own
    world's, as drawn alone."""
    m = moreau.scene("cube-resting")
    batch = moreau.BatchSim(m, 70)
    q = batch.q
    q[:, 0] += np.linspace(0.0, 0.3, 70)  # (not a whole checker period)
    batch.set_states(q, batch.v)
    frames = batch.render(width=16, height=12)
    assert frames.shape == (70, 12, 16, 3)
    for k in (0, 63, 64, 69):
        assert np.array_equal(frames[k], batch.render(worlds=[k], width=16, height=12)[0]), k
    assert not np.array_equal(frames[0], frames[69])


def test_mocap_bodies_are_set_per_world_and_kept_by_snapshots():
    """tests/data/mujoco/mocap.xml (a box welded to mocap body `target`, an
    arm's tip held on `pointer`): world 1's target moved and turned, the
    box follows it there only; the poses read back as set (MuJoCo's
    conventions); a pickled batch keeps them and continues bit for bit;
    bad poses raise and change nothing."""
    path = pathlib.Path(__file__).resolve().parents[2] / "tests/data/mujoco/mocap.xml"
    m = moreau.load(str(path))
    assert m.mocap_names == ["target", "pointer"]
    batch = moreau.BatchSim(m, 3)
    pos, quat = batch.mocap_poses()
    assert pos.shape == (3, 2, 3) and quat.shape == (3, 2, 4)
    np.testing.assert_allclose(pos[0], [[0, 0, 1.2], [1.5, 0, 0.5]], atol=1e-15)
    np.testing.assert_allclose(quat[0, 0], [np.cos(np.pi / 12), 0, 0, np.sin(np.pi / 12)], atol=1e-15)
    turned = np.array([[[0.92387953, 0.0, 0.38268343, 0.0], [1.0, 0.0, 0.0, 0.0]]])
    batch.set_mocap(pos[1:2] + [[0.1, -0.05, 0.1], [0.0, 0.0, 0.0]], 2.0 * turned, worlds=[1])
    got_pos, got_quat = batch.mocap_poses()
    np.testing.assert_allclose(got_pos[1, 0], [0.1, -0.05, 1.3], atol=1e-15)
    np.testing.assert_allclose(got_quat[1], turned[0], atol=1e-8)
    np.testing.assert_array_equal(got_pos[[0, 2]], pos[[0, 2]])
    # The mocap body's frames follow each world's pose: its site, 0 m
    # from its origin, is where the pose puts it.
    np.testing.assert_allclose(batch.frame_positions("pointer")[[0, 1]], pos[[0, 1], 1], atol=1e-15)
    np.testing.assert_allclose(batch.frame_positions("target")[1], [0.1, -0.05, 1.3], atol=1e-15)
    # (The weld's error, 0.77 at the jump, recovered at most 5 m/s
    # (rad/s) by default: closed well within 1.5 s.)
    batch.step(np.zeros((3, m.nv)), 1500)
    # MuJoCo's box (mocap.json, stiff) ends at (-0.0414, -0.05, 1.1586).
    np.testing.assert_allclose(batch.q[1, :3], [-0.0414, -0.05, 1.1586], atol=1e-3)
    np.testing.assert_allclose(batch.q[0, :3], [0.0, 0.0, 1.0], atol=1e-6)
    clone = pickle.loads(pickle.dumps(batch))
    np.testing.assert_array_equal(clone.mocap_poses()[0], batch.mocap_poses()[0])
    batch.step(np.zeros((3, m.nv)), 20)
    clone.step(np.zeros((3, m.nv)), 20)
    assert np.array_equal(batch.q, clone.q)
    before = batch.mocap_poses()
    for args, message in [
        ((np.zeros((3, 1, 3)),), r"pos has shape \[3, 1, 3\], expected \[3, 2, 3\]"),
        ((np.full((3, 2, 3), np.nan),), r"pos\[0, 0, 0\] is not finite"),
        ((np.zeros((3, 2, 3)), np.zeros((3, 2, 4))), r"quat\[0, 0\] is zero"),
    ]:
        with pytest.raises(ValueError, match=message):
            batch.set_mocap(*args)
    with pytest.raises(ValueError, match="world 3 of a batch of 3"):
        batch.set_mocap(np.zeros((1, 2, 3)), worlds=[3])
    with pytest.raises(ValueError, match="has no mocap bodies"):
        moreau.BatchSim(moreau.scene("quadruped"), 1).set_mocap(np.zeros((1, 0, 3)))
    after = batch.mocap_poses()
    assert all(np.array_equal(a, b) for a, b in zip(before, after))
    # One world: the same through Simulator, its snapshot keeping the poses.
    sim = moreau.Simulator(m)
    sim.set_mocap(got_pos[1], got_quat[1])
    for _ in range(500):
        sim.step()
    np.testing.assert_allclose(sim.q[:3], [-0.0414, -0.05, 1.1586], atol=1e-3)
    snap = sim.snapshot()
    fresh = moreau.Simulator(m)
    fresh.restore(snap)
    np.testing.assert_array_equal(fresh.mocap_poses()[0], got_pos[1])
    with pytest.raises(ValueError, match=r"pos has shape \[1, 3\], expected \[2, 3\]"):
        sim.set_mocap(np.zeros((1, 3)))
