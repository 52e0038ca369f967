"""moreau.gym against Gymnasium's own v5 tasks (MuJoCo): spaces, the
environment checker and the reset noise with the same seeds on every task;
100 steps of the same actions on the contact-free InvertedPendulum and
Swimmer; NEXT_STEP autoreset, reproducible seeds, bad input."""

import gymnasium as gym
import mujoco
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.vector import AutoresetMode

import moreau
import moreau.gym as mg

TASK = "InvertedPendulum-v5"
TASKS = [
    "Ant-v5",
    "Humanoid-v5",
    "InvertedPendulum-v5",
    "InvertedDoublePendulum-v5",
    "Reacher-v5",
    "Swimmer-v5",
    "HalfCheetah-v5",
    "Hopper-v5",
    "Walker2d-v5",
]


@pytest.mark.parametrize("task", TASKS)
def test_every_task_has_gymnasiums_spaces_noise_and_passes_its_checker(task):
    ours, theirs = mg.make_vec(task, 3), gym.make(task)
    for a, b in [
        (ours.single_observation_space, theirs.observation_space),
        (ours.single_action_space, theirs.action_space),
    ]:
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(a.low, b.low)
        np.testing.assert_array_equal(a.high, b.high)
    assert ours.dt == pytest.approx(theirs.unwrapped.dt)
    obs, info = ours.reset(seed=5)
    for i in range(3):
        # The same draws; Reacher's fingertip − target goes through the
        # kinematics (rounding).
        their_obs, their_info = theirs.reset(seed=5 + i)
        np.testing.assert_allclose(obs[i], their_obs, rtol=0, atol=1e-14)
        # The reset info key by key (the humanoid's tendons included),
        # each with Gymnasium's vector mask.
        keys = set(their_info)
        assert keys == {k for k in info if not k.startswith("_")}, (keys, info.keys())
        for k in keys:
            assert info["_" + k][i]
            np.testing.assert_allclose(info[k][i], their_info[k], rtol=0, atol=1e-14, err_msg=k)
    check_env(mg.make(task), skip_render_check=True)


@pytest.mark.parametrize("task", TASKS)
def test_step_info_has_gymnasiums_keys(task):
    ours, theirs = mg.make(task), gym.make(task)
    ours.reset(seed=1)
    theirs.reset(seed=1)
    a = np.full(ours.action_space.shape, 0.1, np.float32)
    mine, *_, info = ours.step(a)
    _, *_, their_info = theirs.step(a)
    keys = set(their_info)
    assert set(info) == keys, (sorted(info), sorted(keys))
    if task == "Humanoid-v5":
        # The tendons at the state the last physics step started from:
        # MuJoCo's at that state (the two physics' states differ).
        vec = ours._vec
        qpos, qvel = vec.model.to_mujoco(vec._kinematics_q, vec._kinematics_v)
        m, d = theirs.unwrapped.model, theirs.unwrapped.data
        d.qpos[:], d.qvel[:] = qpos[0], qvel[0]
        mujoco.mj_forward(m, d)
        np.testing.assert_allclose(info["tendon_length"], d.ten_length, rtol=0, atol=1e-14)
        np.testing.assert_allclose(info["tendon_velocity"], d.ten_velocity, rtol=0, atol=1e-13)
    if task in ("Swimmer-v5", "InvertedPendulum-v5", "InvertedDoublePendulum-v5", "Reacher-v5"):
        # Contact-free: the values too, to what one step of two integrators
        # allows (MuJoCo's RK4 on Swimmer against moreau's semi-implicit
        # Euler; a velocity here is a difference of positions over dt:
        # Swimmer's y_velocity 0.108 against MuJoCo's 0.099). A wrong
        # index or sign is far outside.
        for k in keys:
            np.testing.assert_allclose(info[k], their_info[k], rtol=0.1, atol=1e-3, err_msg=k)


# Each task with keyword arguments other than Gymnasium's defaults.
TASK_KWARGS = {
    "Ant-v5": dict(
        ctrl_cost_weight=0.2,
        contact_cost_weight=1e-3,
        healthy_z_range=(0.3, 1.2),
        reset_noise_scale=0.05,
        exclude_current_positions_from_observation=False,
        include_cfrc_ext_in_observation=False,
        main_body="torso",
    ),
    "Humanoid-v5": dict(
        forward_reward_weight=2.0,
        healthy_reward=1.0,
        healthy_z_range=(1.5, 2.0),
        include_cinert_in_observation=False,
        include_cvel_in_observation=False,
        exclude_current_positions_from_observation=False,
        reset_noise_scale=0.02,
    ),
    "Hopper-v5": dict(
        healthy_z_range=(1.3, 2.0),
        ctrl_cost_weight=0.01,
        exclude_current_positions_from_observation=False,
        frame_skip=2,
    ),
    "Walker2d-v5": dict(xml_file="walker2d.xml", terminate_when_unhealthy=False, healthy_reward=3.0),
    "HalfCheetah-v5": dict(
        forward_reward_weight=0.5,
        ctrl_cost_weight=0.2,
        reset_noise_scale=0.2,
        exclude_current_positions_from_observation=False,
    ),
    "Swimmer-v5": dict(ctrl_cost_weight=1e-2, exclude_current_positions_from_observation=False, frame_skip=2),
    "Reacher-v5": dict(reward_dist_weight=2.0, reward_control_weight=0.5),
    "InvertedPendulum-v5": dict(reset_noise_scale=0.05),
    "InvertedDoublePendulum-v5": dict(healthy_reward=5.0, reset_noise_scale=0.05),
}


@pytest.mark.parametrize("task", TASKS)
def test_task_keyword_arguments_act_as_gymnasiums(task):
    """Gymnasium's keyword arguments, other than their defaults: the same
    spaces, dt and first observations with the same seeds; after a step
    of the same actions the same info keys, control costs, survival
    rewards and terminations (the states differ by the two physics)."""
    kwargs = TASK_KWARGS[task]
    ours, theirs = mg.make(task, **kwargs), gym.make(task, **kwargs)
    assert ours.observation_space.shape == theirs.observation_space.shape
    assert ours.dt == pytest.approx(theirs.unwrapped.dt)
    obs, _ = ours.reset(seed=3)
    their_obs, _ = theirs.reset(seed=3)
    np.testing.assert_allclose(obs, their_obs, rtol=0, atol=1e-14)
    a = np.full(ours.action_space.shape, 0.3, np.float32)
    _, reward, terminated, _, info = ours.step(a)
    _, their_reward, their_terminated, _, their_info = theirs.step(a)
    assert set(info) == set(their_info)
    assert terminated == their_terminated
    for k in ("reward_ctrl", "reward_survive"):
        if k in info:
            np.testing.assert_allclose(info[k], their_info[k], rtol=1e-6, atol=0, err_msg=k)
    if task in ("Swimmer-v5", "InvertedPendulum-v5", "InvertedDoublePendulum-v5", "Reacher-v5"):
        assert reward == pytest.approx(their_reward, rel=0.1, abs=1e-3)
    # Through Gymnasium's registry too.
    registered = gym.make(f"moreau/{task}", **kwargs)
    np.testing.assert_array_equal(registered.reset(seed=3)[0], obs)
    vector = gym.make_vec(f"moreau/{task}", num_envs=2, **kwargs)
    assert vector.params == ours._vec.params


def test_bad_task_keyword_arguments_raise_naming_them():
    with pytest.raises(TypeError, match="ctrl_cost_weigth.*ctrl_cost_weight"):
        mg.make_vec("Hopper-v5", 2, ctrl_cost_weigth=0.1)
    with pytest.raises(ValueError, match="renders 'rgb_array'"):
        mg.make_vec(TASK, 2, render_mode="human")
    with pytest.raises(ValueError, match="camera_id and camera_name: give one"):
        mg.make_vec(TASK, 2, render_mode="rgb_array", camera_id=0, camera_name="track")
    with pytest.raises(ValueError, match="camera_name 'nowhere': not one of the file's cameras"):
        mg.make_vec("Ant-v5", 1, render_mode="rgb_array", camera_name="nowhere")
    with pytest.raises(ValueError, match="camera_id 1: the file has 1 camera"):
        mg.make_vec("Ant-v5", 1, render_mode="rgb_array", camera_id=1)
    with pytest.raises(ValueError, match="frame_skip"):
        mg.make_vec(TASK, 2, frame_skip=0)
    with pytest.raises(OSError, match="does not exist"):
        mg.make_vec(TASK, 2, xml_file="no_such_file.xml")
    with pytest.raises(ValueError, match="main_body 0"):
        mg.make_vec("Ant-v5", 2, main_body=0)



def test_rgb_array_rendering_as_gymnasium_expects():
    """render_mode="rgb_array": render() after step() gives (height, width,
    3) uint8 frames (the vector env: one per environment), of the world as
    it stands; the size and camera options are Gymnasium's; without a
    render_mode, None."""
    env = gym.make("moreau/Ant-v5", render_mode="rgb_array", width=96, height=64)
    assert env.metadata["render_fps"] == gym.make("Ant-v5").metadata["render_fps"] == 20
    env.reset(seed=0)
    first = env.render()
    assert first.shape == (64, 96, 3) and first.dtype == np.uint8 and first.std() > 10
    for _ in range(5):
        env.step(env.action_space.sample())
    assert not np.array_equal(env.render(), first)
    vector = mg.make_vec("Ant-v5", 3, render_mode="rgb_array", width=32, height=32)
    vector.reset(seed=[1, 1, 2])
    frames = vector.render()
    assert len(frames) == 3 and all(f.shape == (32, 32, 3) for f in frames)
    # Equal worlds, equal frames; the third started elsewhere.
    assert np.array_equal(frames[0], frames[1]) and not np.array_equal(frames[0], frames[2])
    # The camera options move the camera.
    near = mg.make_vec("Ant-v5", 1, render_mode="rgb_array", width=32, height=32,
                       default_camera_config={"distance": 2.0})
    near.reset(seed=1)
    assert not np.array_equal(near.render()[0], frames[0])
    assert mg.make_vec(TASK, 1).render() is None


def test_the_files_cameras_and_the_tracking_free_camera():
    """camera_name and camera_id draw through the file's camera (MuJoCo's
    ids); Gymnasium's trackbodyid keeps the body in view as it moves."""
    by_name = mg.make_vec("Ant-v5", 1, render_mode="rgb_array", width=48, height=48, camera_name="track")
    by_id = mg.make_vec("Ant-v5", 1, render_mode="rgb_array", width=48, height=48, camera_id=0)
    free = mg.make_vec("Ant-v5", 1, render_mode="rgb_array", width=48, height=48)
    for env in (by_name, by_id, free):
        env.reset(seed=4)
    assert np.array_equal(by_name.render()[0], by_id.render()[0])
    assert not np.array_equal(by_name.render()[0], free.render()[0])
    # Hopper's camera follows MuJoCo's body 2 (the thigh): slid 4 m along
    # x (a whole number of the ground's 1 m checker periods), the hopper
    # looks the same; a camera fixed at Gymnasium's lookat sees it leave.
    def slid_frames(**options):
        env = mg.make_vec("Hopper-v5", 1, render_mode="rgb_array", width=64, height=64, **options)
        env.reset(seed=0)
        before = env.render()[0]
        q = env.batch.q.copy()
        q[0, 0] += 4.0
        env.batch.set_states(q, env.batch.v)
        return before, env.render()[0]

    def changed(a, b):
        return np.mean(np.any(a != b, axis=-1))

    assert changed(*slid_frames()) < 0.005
    fixed = {"trackbodyid": -1, "distance": 3.0, "lookat": np.array((0.0, 0.0, 1.15)), "elevation": -20.0}
    assert changed(*slid_frames(default_camera_config=fixed)) > 0.015


def test_record_video_writes_a_playable_video_of_the_ant(tmp_path):
    """Gymnasium's RecordVideo wrapper on moreau's Ant-v5: an MP4 whose
    frames are the env's own (decoded within the codec's loss)."""
    import imageio.v3 as iio
    from gymnasium.wrappers import RecordVideo

    env = RecordVideo(
        mg.make("Ant-v5", render_mode="rgb_array", width=128, height=96),
        video_folder=str(tmp_path),
        episode_trigger=lambda episode: True,
        disable_logger=True,
    )
    env.reset(seed=0)
    frames = [env.render()]
    for _ in range(24):
        env.step(env.action_space.sample())
        frames.append(env.render())
    env.close()
    (video,) = list(tmp_path.glob("*.mp4"))
    decoded = np.stack(list(iio.imiter(video)))
    assert decoded.shape == (25, 96, 128, 3)
    error = np.abs(decoded.astype(float) - np.stack(frames).astype(float)).mean()
    assert error < 6.0, error
    assert decoded[0].std() > 10 and not np.array_equal(decoded[0], decoded[-1])


def test_every_gymnasium_parameter_is_implemented_and_a_new_one_is_refused(monkeypatch):
    """Each of today's Gymnasium task parameters is read by moreau's task;
    one it does not read (a later Gymnasium's) keeps its default and is
    refused with any other value, never ignored."""
    for task in TASKS:
        assert set(mg.gymnasium_parameters(task)) <= mg.IMPLEMENTED, task
    real = mg.gymnasium_parameters
    monkeypatch.setattr(mg, "gymnasium_parameters", lambda t: {**real(t), "wind_speed": 0.0})
    mg.make_vec(TASK, 2, wind_speed=0.0)
    with pytest.raises(ValueError, match="does not implement Gymnasium's parameter 'wind_speed'"):
        mg.make_vec(TASK, 2, wind_speed=3.0)


def test_swimmer_same_actions_same_observations_as_mujoco_for_100_steps():
    """A gait within the joints' ranges (MuJoCo's limits are soft, moreau's
    rigid), MuJoCo's model on its Euler integrator: observations within
    1e-9 and rewards within 1e-9 for 100 steps (measured 5e-15)."""
    ours, theirs = mg.make("Swimmer-v5"), gym.make("Swimmer-v5")
    theirs.unwrapped.model.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    o1, _ = ours.reset(seed=1)
    o2, _ = theirs.reset(seed=1)
    for t in range(100):
        a = (0.3 * np.sin(0.3 * t + np.array([0.0, 1.5]))).astype(np.float32)
        o1, r1, *_ = ours.step(a)
        o2, r2, *_ = theirs.step(a)
        np.testing.assert_allclose(o1, o2, rtol=0, atol=1e-9)
        assert r1 == pytest.approx(r2, abs=1e-9)


def test_reacher_same_actions_same_observations_as_mujoco_for_100_steps():
    """Gentle actions (the arm stays off its elbow's stops), MuJoCo on its
    Euler integrator: observations (fingertip − target included, read as
    Gymnasium reads MuJoCo's xpos) and rewards within 1e-9 for 100 steps
    (measured 2e-16)."""
    ours, theirs = mg.make("Reacher-v5"), gym.make("Reacher-v5")
    theirs.unwrapped.model.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    o1, _ = ours.reset(seed=1)
    o2, _ = theirs.reset(seed=1)
    for t in range(100):
        a = (0.05 * np.sin(0.2 * t + np.array([0.0, 1.0]))).astype(np.float32)
        o1, r1, *_ = ours.step(a)
        o2, r2, *_ = theirs.step(a)
        np.testing.assert_allclose(o1, o2, rtol=0, atol=1e-9)
        assert r1 == pytest.approx(r2, abs=1e-9)


def test_double_pendulum_same_actions_same_observations_as_mujoco_for_100_steps():
    """The tip site's height (termination, distance penalty) and the cart's
    constraint force in the observation, MuJoCo on its Euler integrator:
    observations, rewards and terminations within 1e-9 for 100 steps
    (measured 2e-11; the pendulum falls, the episode terminates at step 10
    in both, the physics goes on)."""
    task = "InvertedDoublePendulum-v5"
    ours, theirs = mg.make(task), gym.make(task)
    theirs.unwrapped.model.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    o1, _ = ours.reset(seed=1)
    o2, _ = theirs.reset(seed=1)
    for t in range(100):
        a = np.array([0.1 * np.sin(0.3 * t)], np.float32)
        o1, r1, term1, *_ = ours.step(a)
        o2, r2, term2, *_ = theirs.step(a)
        np.testing.assert_allclose(o1, o2, rtol=0, atol=1e-9)
        assert r1 == pytest.approx(r2, abs=1e-9) and term1 == term2


@pytest.mark.parametrize("task,xml", [("Ant-v5", "ant.xml"), ("Humanoid-v5", "humanoid.xml")])
def test_body_quantities_are_mujocos_at_the_same_state(task, xml):
    """MuJoCo's cinert, cvel, qfrc_actuator, the centre of mass and the
    qpos/qvel conventions, from moreau's model at MuJoCo's state after a few
    random steps (a free joint, welded and unnamed bodies, bodies with three
    hinges): equal within 1e-12 (measured 2e-15)."""
    env = gym.make(task)
    env.reset(seed=3)
    for _ in range(4):
        env.step(env.action_space.sample())
    m, d = env.unwrapped.model, env.unwrapped.data
    mujoco.mj_forward(m, d)
    model = moreau.load(str(mg.gymnasium_assets() / xml))
    assert model.body_frame_names[0] == m.body(1).name and len(model.body_frame_names) == m.nbody - 1
    q, v = model.from_mujoco(d.qpos[None], d.qvel[None])
    qpos, qvel = model.to_mujoco(q, v)
    np.testing.assert_allclose(qpos[0], d.qpos, rtol=0, atol=1e-12)
    np.testing.assert_allclose(qvel[0], d.qvel, rtol=0, atol=1e-12)
    batch = moreau.BatchSim(model, 1)
    batch.set_state(0, q[0], v[0])
    np.testing.assert_allclose(batch.com_inertias()[0], d.cinert[1:], rtol=0, atol=1e-12)
    np.testing.assert_allclose(batch.com_velocities()[0], d.cvel[1:], rtol=0, atol=1e-12)
    np.testing.assert_allclose(batch.actuator_forces(d.ctrl[None].copy())[0], d.qfrc_actuator, rtol=0, atol=1e-12)
    center = m.body_mass @ d.xipos / m.body_mass.sum()
    np.testing.assert_allclose(batch.centers_of_mass()[0], center, rtol=0, atol=1e-12)


def test_free_flying_humanoid_converges_to_mujocos_euler():
    """Humanoid thrown in the air (joints mid-range, springs, damping and
    armature acting), 30 ms against MuJoCo's Euler integrator at three time
    steps: the difference shrinks with dt as two first-order integrators of
    one ODE do (moreau steps a free joint's body-frame twist, MuJoCo its
    world-frame linear velocity); measured 7.4e-4, 7.3e-5, 7.3e-6 in qvel."""
    xml = str(mg.gymnasium_assets() / "humanoid.xml")
    m = mujoco.MjModel.from_xml_path(xml)
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    model = moreau.load(xml)
    errors = []
    for dt in [3e-3, 3e-4]:
        m.opt.timestep = dt
        d = mujoco.MjData(m)
        qpos = m.qpos0.copy()
        qpos[2] += 1.0
        for j in range(m.njnt):
            if m.jnt_limited[j] and m.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE:
                qpos[m.jnt_qposadr[j]] = m.jnt_range[j].mean()
        qvel = np.zeros(m.nv)
        qvel[:6] = [0.5, 0.2, 0.1, 1.0, -0.5, 0.3]
        d.qpos[:], d.qvel[:] = qpos, qvel
        batch = moreau.BatchSim(model, 1, dt=dt)
        q, v = model.from_mujoco(qpos[None], qvel[None])
        batch.set_state(0, q[0], v[0])
        ctrl = 0.2 * np.ones((1, model.nu))
        d.ctrl[:] = ctrl[0]
        for _ in range(int(round(0.03 / dt))):
            mujoco.mj_step(m, d)
            batch.step_controls(ctrl)
        qp, qv = model.to_mujoco(batch.q, batch.v)
        errors.append(max(np.abs(qp[0] - d.qpos).max(), np.abs(qv[0] - d.qvel).max()))
    assert errors[0] < 2e-3
    assert 7 < errors[0] / errors[1] < 13


def test_a_standing_ant_carries_its_weight_in_cfrc_ext():
    """Ant-v5 at rest on its four feet after 300 steps without actions: its
    contact wrenches (MuJoCo's cfrc_ext, the unclipped ones the observation
    clips) sum to its weight, and their torques about its centre of mass to
    zero; so does MuJoCo's on its own run."""
    ours = mg.make_vec("Ant-v5", 1)
    ours.reset(seed=0)
    theirs = gym.make("Ant-v5")
    theirs.reset(seed=0)
    zero = np.zeros((1, 8), np.float32)
    for _ in range(300):
        ours.step(zero)
        theirs.step(zero[0])
    m, d = theirs.unwrapped.model, theirs.unwrapped.data
    weight = 9.81 * m.body_mass.sum()
    for wrench in [ours.com_external_forces()[0], d.cfrc_ext[1:]]:
        total = wrench.sum(axis=0)
        assert total[5] == pytest.approx(weight, rel=1e-3)
        np.testing.assert_allclose(total[[0, 1, 3, 4]], 0.0, atol=1e-3 * weight)
    assert ours.com_external_forces()[0][:, 5].astype(bool).sum() == 4, "one foot per leg carries it"


def test_spaces_equal_gymnasiums():
    ours, theirs = mg.make_vec(TASK, 3), gym.make(TASK)
    for a, b in [
        (ours.single_observation_space, theirs.observation_space),
        (ours.single_action_space, theirs.action_space),
    ]:
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(a.low, b.low)
        np.testing.assert_array_equal(a.high, b.high)
    assert ours.observation_space.shape == (3, 4) and ours.action_space.shape == (3, 1)
    assert ours.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    assert ours.dt == pytest.approx(theirs.unwrapped.dt)
    assert ours.max_episode_steps == theirs.spec.max_episode_steps == 1000


def test_gymnasiums_environment_checker_passes():
    check_env(mg.make(TASK), skip_render_check=True)


def test_initial_observations_are_gymnasiums_with_the_same_seeds():
    """Environment i is seeded with seed + i, as Gymnasium's SyncVectorEnv,
    and draws its noise as Gymnasium's task does: the same numbers."""
    obs, _ = mg.make_vec(TASK, 5).reset(seed=7)
    for i in range(5):
        expected, _ = gym.make(TASK).reset(seed=7 + i)
        np.testing.assert_array_equal(obs[i], expected)
    assert 0 < np.abs(obs).max() <= 0.01


def test_same_actions_same_observations_as_mujoco_for_100_steps():
    """Under a balancing feedback computed from moreau's observations, the
    same actions in MuJoCo's environment set to its Euler integrator (the
    integrator moreau's step is; the file asks for RK4): the observations
    agree within 1e-9 for 100 steps (measured 7.4e-12)."""
    ours = mg.make(TASK)
    theirs = gym.make(TASK)
    theirs.unwrapped.model.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    o1, _ = ours.reset(seed=3)
    o2, _ = theirs.reset(seed=3)
    total = 0.0
    for _ in range(100):
        a = np.clip(np.array([3.0 * o1[1] + 0.5 * o1[3] + 0.3 * o1[0] + 0.3 * o1[2]], np.float32), -3, 3)
        o1, r1, term1, _, _ = ours.step(a)
        o2, r2, term2, _, _ = theirs.step(a)
        np.testing.assert_allclose(o1, o2, rtol=0, atol=1e-9)
        assert (r1, term1) == (r2, term2)
        total += r1
    assert total == 100.0


def test_next_step_autoreset_and_reproducible_seeds():
    def run(seed):
        env = mg.make_vec(TASK, 4)
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(0)
        history = [obs]
        ended_then_reset = 0
        done = np.zeros(4, bool)
        for _ in range(120):
            obs, reward, terminated, truncated, info = env.step(
                rng.uniform(-3, 3, size=(4, 1)).astype(np.float32)
            )
            # The step after an ending resets that environment: reward 0,
            # not terminated, a fresh observation within the reset noise.
            for i in np.flatnonzero(done):
                assert reward[i] == 0 and not terminated[i] and not truncated[i]
                assert np.abs(obs[i]).max() <= 0.01
                ended_then_reset += 1
            np.testing.assert_array_equal(info["reward_survive"][~done], reward[~done])
            # Gymnasium's masks: a key's values hold where the step had an
            # outcome, not where the environment was reset.
            np.testing.assert_array_equal(info["_reward_survive"], ~done)
            done = terminated | truncated
            history.append(obs)
        return np.array(history), ended_then_reset

    a, resets = run(11)
    b, _ = run(11)
    assert resets > 0, "random actions end some episodes within 120 steps"
    np.testing.assert_array_equal(a, b)
    c, _ = run(12)
    assert np.abs(a - c).max() > 0


@pytest.mark.parametrize("task", ["InvertedDoublePendulum-v5", "Ant-v5"])
def test_reset_mask_resets_only_the_masked_environments(task):
    n = 6
    env, fresh = mg.make_vec(task, n), mg.make_vec(task, n)
    env.reset(seed=3)
    first, _ = fresh.reset(seed=3)
    rng = np.random.default_rng(1)
    for _ in range(5):
        obs, *_ = env.step(rng.uniform(-0.5, 0.5, env.action_space.shape))
    q, v = env.batch.q, env.batch.v
    mask = np.array([True, False, True, False, False, True])
    after, info = env.reset(seed=3, options={"reset_mask": mask})
    for key in [k for k in info if not k.startswith("_")]:
        np.testing.assert_array_equal(info["_" + key], mask)
    # The masked environments are as a fresh reset with the same seeds
    # leaves them; the others keep their state and their last observation.
    np.testing.assert_array_equal(after[mask], first[mask])
    np.testing.assert_array_equal(after[~mask], obs[~mask])
    np.testing.assert_array_equal(env.batch.q[~mask], q[~mask])
    np.testing.assert_array_equal(env.batch.v[~mask], v[~mask])
    assert np.abs(env.batch.q[mask] - q[mask]).max() > 0
    # And step on as such: the same actions give the fresh batch's
    # observations where they were reset.
    a = rng.uniform(-0.5, 0.5, env.action_space.shape)
    mine, *_ = env.step(a)
    theirs, *_ = fresh.step(a)
    np.testing.assert_allclose(mine[mask], theirs[mask], rtol=0, atol=1e-12)
    for bad in [np.ones(n, dtype=int), np.ones(n + 1, dtype=bool), np.ones((n, 1), dtype=bool)]:
        with pytest.raises(ValueError, match="reset_mask must be a boolean array"):
            env.reset(options={"reset_mask": bad})


def test_an_autoreset_reports_the_reset_info_in_its_step():
    env = mg.make_vec("Ant-v5", 2)
    env.reset(seed=0)
    q, v = env.batch.q, env.batch.v
    q[1, 2] = 3.0  # above the healthy heights: the episode ends
    env.batch.set_state(1, q[1], v[1])
    zero = np.zeros(env.action_space.shape)
    _, _, terminated, _, _ = env.step(zero)
    assert terminated[1] and not terminated[0]
    _, reward, _, _, info = env.step(zero)
    assert reward[1] == 0.0
    # Environment 1 reset: its reset's info, no step outcome.
    np.testing.assert_array_equal(info["_reward_forward"], [True, False])
    # (Ant's step info has the reset's keys too: both environments hold one.)
    np.testing.assert_array_equal(info["_x_position"], [True, True])
    np.testing.assert_array_equal(info["_distance_from_origin"], [True, True])
    x = env.batch.q[1, 0]
    assert info["x_position"][1] == x
    assert info["distance_from_origin"][1] == pytest.approx(np.hypot(x, env.batch.q[1, 1]))


def test_tasks_are_registered_with_gymnasium():
    env = gym.make("moreau/InvertedPendulum-v5")
    assert isinstance(env.unwrapped, mg.MoreauEnv)
    obs, _ = env.reset(seed=3)
    np.testing.assert_array_equal(obs, mg.make(TASK).reset(seed=3)[0])
    env.step(env.action_space.sample())
    envs = gym.make_vec("moreau/InvertedPendulum-v5", num_envs=4)
    assert isinstance(envs, mg.MoreauVectorEnv) and envs.num_envs == 4
    assert envs.max_episode_steps == gym.spec(TASK).max_episode_steps
    obs, _ = envs.reset(seed=3)
    np.testing.assert_array_equal(obs, mg.make_vec(TASK, 4).reset(seed=3)[0])
    envs.step(envs.action_space.sample())
    short = gym.make_vec("moreau/InvertedPendulum-v5", num_envs=2, max_episode_steps=3)
    short.reset(seed=0)
    for _ in range(3):
        *_, truncated, _ = short.step(np.zeros((2, 1)))
    assert truncated.all()


def test_bad_input_raises():
    with pytest.raises(ValueError, match="unknown task 'Nope-v5'"):
        mg.make_vec("Nope-v5", 2)
    env = mg.make_vec(TASK, 2)
    with pytest.raises(gym.error.ResetNeeded, match="reset"):
        env.step(np.zeros((2, 1)))
    with pytest.raises(gym.error.ResetNeeded):
        mg.make(TASK).step(np.zeros(1))
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"expected \(2, 1\)"):
        env.step(np.zeros((3, 1)))
    with pytest.raises(ValueError, match="finite"):
        env.step(np.array([[0.0], [np.nan]]))
    with pytest.raises(ValueError, match="num_envs"):
        mg.make_vec(TASK, 0)


@pytest.mark.parametrize("task", TASKS)
def test_the_librarys_defaults_are_the_installed_gymnasiums(task):
    """The library's task (moreau._moreau.Gym) given no keyword arguments
    takes Gymnasium 1.2's defaults (GymParams::gymnasium): the same
    outputs over 20 random steps as given the installed Gymnasium's
    own (what moreau.gym passes)."""
    env = mg.make_vec(task, 3)
    env.reset(seed=0)
    params = dict(env.params)
    if "main_body" in params:
        params["main_body"] = mg._main_body(task, params["main_body"], env.model)
    skip = params["frame_skip"]
    # A parameter each task reads, changed: the outputs must change (the
    # names are read, not ignored). (Reacher's reset draws its own noise.)
    changed = {
        "Ant-v5": {"contact_force_range": (-0.5, 0.5)},
        "Humanoid-v5": {"include_cvel_in_observation": False},
        "InvertedDoublePendulum-v5": {"healthy_reward": 3.0},
        "Reacher-v5": {"reward_dist_weight": 2.0},
        "Swimmer-v5": {"forward_reward_weight": 3.0},
        "HalfCheetah-v5": {"ctrl_cost_weight": 1.0},
        "InvertedPendulum-v5": {"reset_noise_scale": 0.02},
        "Hopper-v5": {"exclude_current_positions_from_observation": False},
        "Walker2d-v5": {"healthy_reward": 0.5},
    }.get(task)
    outputs = []
    for given in (params, {}, {**params, **changed}):
        batch = moreau.BatchSim(env.model, 3)
        g = moreau._moreau.Gym(batch, task, given, env._qpos0, env._qvel0, skip)
        # Philox resets: the same draws with the same noise scale.
        g.seed(np.ones(3, dtype=bool), [11, 12, 13])
        g.reset_worlds(batch, np.ones(3, dtype=bool))
        g.observe(batch, np.ones(3, dtype=bool))
        rng = np.random.default_rng(1)
        run = []
        for _ in range(20):
            ctrl = rng.uniform(-0.5, 0.5, size=(3, env.model.nu))
            out = g.step(batch, ctrl, np.sum(ctrl**2, axis=1), np.zeros(3, dtype=bool))
            run.append(np.concatenate([out[0].ravel(), out[1], out[3].ravel()]))
        outputs.append(np.concatenate(run))
    np.testing.assert_array_equal(outputs[0], outputs[1])
    assert len(outputs[2]) != len(outputs[0]) or (outputs[2] != outputs[0]).any(), changed


@pytest.mark.parametrize("task", TASKS)
def test_philox_resets_are_the_same_on_every_backend_and_drawn_as_gymnasiums(task):
    """reset_rng="philox": the same seed gives the same resets on "cpu",
    "cpu1" and "gpu" (the states set bit for bit on the CPU backends; on
    "gpu" drawn on the device in f32 (every task's there), so within
    f32; the GPU's first observation
    within f32), episodes ending and resetting the same way
    on the two CPU backends over 60 random steps; the noise has
    Gymnasium's support and scale (uniform within ±reset_noise_scale of
    qpos0, or its normal's spread); another seed, other resets; the
    environment checker passes."""
    n = 64
    envs = {b: mg.make_vec(task, n, backend=b, reset_rng="philox") for b in ("cpu", "cpu1", "gpu")}
    first = {b: e.reset(seed=9)[0] for b, e in envs.items()}
    np.testing.assert_array_equal(first["cpu"], first["cpu1"])
    np.testing.assert_allclose(envs["gpu"].batch.q, envs["cpu"].batch.q, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(envs["gpu"].batch.v, envs["cpu"].batch.v, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(first["gpu"], first["cpu"], rtol=0, atol=1e-5)
    other, _ = mg.make_vec(task, n, reset_rng="philox").reset(seed=10)
    assert (other != first["cpu"]).any()
    env = envs["cpu"]
    qpos, qvel = env.model.to_mujoco(env.batch.q, env.batch.v)
    scale = env.params.get("reset_noise_scale")
    if task != "Reacher-v5":
        noise = qpos - env._qpos0
        assert np.abs(noise).max() <= scale and np.abs(noise).max() > 0.8 * scale
        spread = (qvel - env._qvel0).std()
        expected = scale if TASK_NOISE.get(task) == "normal" else scale / np.sqrt(3)
        assert 0.8 * expected < spread < 1.2 * expected, (spread, expected)
    else:
        assert (np.hypot(qpos[:, -2], qpos[:, -1]) < 0.2).all()
        np.testing.assert_array_equal(qvel[:, -2:], 0.0)
    rng = np.random.default_rng(0)
    runs = []
    for backend in ("cpu", "cpu1"):
        e = envs[backend]
        run = []
        rng = np.random.default_rng(0)
        for _ in range(60):
            out = e.step(rng.uniform(-1, 1, size=e.action_space.shape).astype(np.float32))
            run.append(np.concatenate([out[0].ravel(), out[1], out[2], out[3]]))
        runs.append(np.array(run))
    np.testing.assert_array_equal(runs[0], runs[1])
    check_env(mg.make(task, reset_rng="philox"), skip_render_check=True)


# The tasks whose velocity noise is normal (the others' is uniform).
TASK_NOISE = {"Ant-v5": "normal", "InvertedDoublePendulum-v5": "normal", "HalfCheetah-v5": "normal"}


@pytest.mark.parametrize("task", TASKS)
def test_the_librarys_registrations_are_gymnasiums(task):
    """moreau bench env runs each task by the library's record of its
    registration: Gymnasium's file, frame skip and episode length."""
    spec = gym.spec(task)
    params = mg.gymnasium_parameters(task)
    assert moreau._moreau.Gym.registration(task) == (
        params["xml_file"],
        params["frame_skip"],
        spec.max_episode_steps,
    )


def test_the_library_task_refuses_bad_input_by_name():
    env = mg.make_vec("Ant-v5", 2)
    g = env._gym
    with pytest.raises(ValueError, match="reset has 3 entries for 2 worlds"):
        g.observe(env.batch, np.ones(3, dtype=bool))
    with pytest.raises(ValueError, match="ctrl has shape"):
        g.step(env.batch, np.zeros((2, 3)), np.zeros(2), np.zeros(2, dtype=bool))
    with pytest.raises(ValueError, match="healthy_z_range"):
        moreau._moreau.Gym(env.batch, "Ant-v5", {"healthy_z_range": "high"}, env._qpos0, env._qvel0, 5)
    with pytest.raises(ValueError, match="unknown Gymnasium task"):
        moreau._moreau.Gym(env.batch, "Ant-v9", {}, env._qpos0, env._qvel0, 5)
    with pytest.raises(ValueError, match="main_body"):
        mg.make_vec("Ant-v5", 2, main_body=99)
    with pytest.raises(ValueError, match='"thorax"'):
        mg.make_vec("Ant-v5", 2, main_body="thorax")


def test_set_states_of_some_worlds():
    model = moreau.load(str(mg.gymnasium_assets() / "inverted_pendulum.xml"))
    batch = moreau.BatchSim(model, 4)
    q = np.array([[0.1, 0.2], [0.3, 0.4]])
    batch.set_states(q, -q, worlds=[3, 1])
    np.testing.assert_array_equal(batch.q[[3, 1]], q)
    np.testing.assert_array_equal(batch.v[[3, 1]], -q)
    np.testing.assert_array_equal(batch.q[[0, 2]], 0.0)
    np.testing.assert_array_equal(batch.q_view[[3, 1]], q)
    for worlds, message in (([1, 1], "listed twice"), ([0, 4], "world 4 of a batch of 4")):
        with pytest.raises(ValueError, match=message):
            batch.set_states(np.ones((2, 2)), np.ones((2, 2)), worlds=worlds)
    with pytest.raises(ValueError, match=r"q has shape \(2, 2\), expected \(3, 2\)"):
        batch.set_states(q, q, worlds=[0, 1, 2])
    np.testing.assert_array_equal(batch.q[[3, 1]], q)


def test_the_benchmark_runs_and_prints_a_ratio(capsys):
    """`python -m moreau.bench` on a tiny batch: it runs both sides and
    prints a row per size (its speed is measured, not asserted)."""
    from moreau import bench

    bench.main(["--task", TASK, "--num-envs", "1,2", "--steps", "3"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[1].split()[0] == "num_envs"
    rows = [line.split() for line in lines[2:]]
    assert [r[0] for r in rows] == ["1", "2"] and all(float(r[3]) > 0 for r in rows)


@pytest.mark.parametrize("task", ["Ant-v5", "Humanoid-v5"])
def test_contact_tasks_run_on_the_gpu_backend_like_on_the_cpu(task):
    """The GPU backend (lavapipe in CI; a missing adapter fails there,
    MOREAU_REQUIRE_GPU=1) keeps the robots on the device, contacts
    included: the same spaces as the CPU backend and its first
    observations (within f32: the task is computed on the device), then 20
    steps of the same actions whose observations and rewards
    (contact costs included) follow the CPU's, with contact forces
    (cfrc_ext) read back from the device wherever the CPU has them."""
    import os

    try:
        gpu = mg.make_vec(task, 4, backend="gpu")
    except ValueError as e:
        if os.environ.get("MOREAU_REQUIRE_GPU") == "1" or "adapter" not in str(e).lower():
            raise
        pytest.skip(f"no GPU adapter: {e}")
    cpu = mg.make_vec(task, 4, backend="cpu")
    assert gpu.single_observation_space == cpu.single_observation_space
    o_gpu, _ = gpu.reset(seed=3)
    o_cpu, _ = cpu.reset(seed=3)
    np.testing.assert_allclose(o_gpu, o_cpu, rtol=1e-5, atol=1e-6)
    assert gpu.batch.resident, gpu.batch.notice
    rng = np.random.default_rng(0)
    touched = 0
    together = np.ones(4, dtype=bool)
    for _ in range(20):
        actions = rng.uniform(-0.4, 0.4, gpu.action_space.shape).astype(np.float32)
        obs, reward, terminated, truncated, info = gpu.step(actions)
        oc, rc, _, _, ic = cpu.step(actions)
        assert np.isfinite(obs).all() and np.isfinite(reward).all()
        assert "failure" not in info
        fg, fc = gpu.com_external_forces(), cpu.com_external_forces()
        # f32 against f64: compared while a world's observations agree
        # (a humanoid's impact parts them within a few steps).
        for w in np.flatnonzero(together):
            np.testing.assert_allclose(reward[w], rc[w], rtol=1e-2, atol=1e-2)
            if ic["reward_contact"][w] != 0.0 or np.abs(fc[w]).max() > 1e-3:
                touched += 1
                # Of the same size, not zero (the last of the frame's
                # physics steps, whose contacts an f32 world may start or
                # end a step apart: no closer comparison per body).
                big_g, big_c = np.abs(fg[w]).max(), np.abs(fc[w]).max()
                assert 0.5 * big_c < big_g < 2.0 * big_c, (big_g, big_c)
        together &= np.abs(obs - oc).max(axis=1) < 1e-2
    assert touched > 0, "contact forces were compared on the ground"


@pytest.mark.parametrize(
    "task", ["InvertedPendulum-v5", "InvertedDoublePendulum-v5", "Reacher-v5", "Swimmer-v5"]
)
def test_contact_free_tasks_live_on_the_gpu_and_match_the_cpu(task):
    """backend="gpu" runs the contact-free tasks resident (the whole step
    on the device, f32): 50 steps of random actions (episodes ending and
    resetting) give the CPU backend's observations, rewards and ends to
    f32 accuracy, the cart's constraint force of the double pendulum
    included."""
    import os

    try:
        gpu = mg.make_vec(task, 64, backend="gpu")
    except ValueError as e:
        if os.environ.get("MOREAU_REQUIRE_GPU") == "1" or "adapter" not in str(e).lower():
            raise
        pytest.skip(f"no GPU adapter: {e}")
    assert gpu.batch.resident and gpu.batch.notice is None
    with pytest.raises(ValueError, match="repeats"):
        gpu.batch.step_controls(np.zeros((64, gpu.model.nu)), 0)
    cpu = mg.make_vec(task, 64, backend="cpu")
    o_gpu, _ = gpu.reset(seed=5)
    o_cpu, _ = cpu.reset(seed=5)
    # The same states, observed on the device in f32.
    np.testing.assert_allclose(o_gpu, o_cpu, rtol=1e-6, atol=1e-7)
    rng = np.random.default_rng(1)
    ended, stops = 0, 0.0
    for _ in range(50):
        a = rng.uniform(cpu.action_space.low, cpu.action_space.high).astype(np.float32)
        og, rg, tg, ug, _ = gpu.step(a)
        oc, rc, tc, uc, _ = cpu.step(a)
        np.testing.assert_allclose(og, oc, atol=2e-3)
        np.testing.assert_allclose(rg, rc, atol=2e-3)
        np.testing.assert_array_equal(tg, tc)
        np.testing.assert_array_equal(ug, uc)
        np.testing.assert_allclose(
            gpu.constraint_forces(), cpu.constraint_forces(), rtol=1e-2, atol=2e-2
        )
        ended += int(tc.sum())
        stops = max(stops, np.abs(cpu.constraint_forces()).max())
    if task.startswith("Inverted"):
        assert ended > 0, "episodes ended and reset"
    if task in ("InvertedDoublePendulum-v5", "Swimmer-v5"):
        assert stops > 1.0, "a joint hit its stop"
