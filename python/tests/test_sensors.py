"""MJCF sensors and cameras against MuJoCo's own: the same file, the same state.

Position and velocity sensors are compared with MuJoCo's after
``mj_forward`` at the state moreau reads; acceleration and force sensors
with MuJoCo's after ``mj_inverse`` at the state a moreau step started from,
with the step's acceleration (in the air: no contact forces to differ);
touch and the contact part of force sensors against the analytic answer of
a box resting on the floor."""

import os
import pathlib
import warnings

import numpy as np
import pytest

import moreau

mujoco = pytest.importorskip("mujoco")

# Every supported sensor type on a free body with a hinge and a slide below
# it, sites of each zone shape, a welded child, frames read relative to
# others.
SCENE = """
<mujoco>
  <option timestep="0.002"/>
  <default>
    <site type="box" size="0.05 0.05 0.05"/>
    <default class="touchy"><site type="capsule" size="0.06 0.1"/></default>
  </default>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <body name="torso" pos="0 0 1">
      <freejoint/>
      <geom name="torso_box" type="box" size="0.2 0.1 0.05" mass="3"/>
      <site name="imu" pos="0.05 -0.02 0.03" euler="10 20 30"/>
      <site name="bottom" pos="0 0 -0.05" size="0.25 0.15 0.02"/>
      <site name="top" pos="0 0 0.05" size="0.25 0.15 0.02"/>
      <body name="cap" pos="0 0 0.08">
        <geom name="cap_geom" type="sphere" size="0.03" mass="0.2"/>
        <site name="cap_site" type="sphere" size="0.01" euler="0 30 0"/>
      </body>
      <body name="arm" pos="0.2 0 0" euler="0 0 20">
        <joint name="shoulder" type="hinge" axis="0 1 0" range="-5 5"/>
        <geom name="arm_geom" type="capsule" fromto="0 0 0 0.3 0 0.1" size="0.03" mass="0.7"/>
        <site name="arm_site" pos="0.1 0 0.02" euler="30 0 -15"/>
        <site name="arm_zone" class="touchy" fromto="0 0 0 0.3 0 0.1"/>
        <body name="hand" pos="0.3 0 0.1">
          <joint name="wrist" type="slide" axis="1 0 0.2" range="-0.05 0.05"/>
          <geom name="hand_geom" type="ellipsoid" size="0.05 0.04 0.03" mass="0.3"/>
          <site name="hand_site" type="ellipsoid" size="0.06 0.05 0.04" euler="0 0 45"/>
        </body>
      </body>
    </body>
  </worldbody>
  <sensor>
    <accelerometer name="acc" site="imu"/>
    <velocimeter name="vel" site="imu"/>
    <gyro name="gyro" site="imu"/>
    <force name="arm_force" site="arm_site"/>
    <torque name="arm_torque" site="arm_site"/>
    <force name="cap_force" site="cap_site"/>
    <torque name="cap_torque" site="cap_site"/>
    <force name="root_force" site="imu"/>
    <accelerometer name="hand_acc" site="hand_site"/>
    <touch name="touch_bottom" site="bottom"/>
    <touch name="touch_top" site="top"/>
    <framepos name="hand_pos" objtype="site" objname="hand_site"/>
    <framepos name="hand_in_torso" objtype="site" objname="hand_site" reftype="xbody" refname="torso"/>
    <framepos name="hand_com" objtype="body" objname="hand"/>
    <framequat name="arm_quat" objtype="xbody" objname="arm"/>
    <framequat name="hand_quat_rel" objtype="site" objname="hand_site" reftype="site" refname="imu"/>
    <framexaxis name="arm_x" objtype="geom" objname="arm_geom"/>
    <frameyaxis name="hand_y" objtype="site" objname="hand_site" reftype="xbody" refname="arm"/>
    <framezaxis name="imu_z" objtype="site" objname="imu"/>
    <framelinvel name="hand_linvel" objtype="site" objname="hand_site"/>
    <framelinvel name="hand_linvel_rel" objtype="site" objname="hand_site" reftype="site" refname="imu"/>
    <framelinvel name="hand_com_vel" objtype="body" objname="hand"/>
    <frameangvel name="hand_angvel" objtype="xbody" objname="hand"/>
    <frameangvel name="arm_angvel_rel" objtype="xbody" objname="arm" reftype="site" refname="imu"/>
    <subtreecom name="torso_com" body="torso"/>
    <subtreecom name="arm_com" body="arm"/>
    <subtreelinvel name="torso_subtreelinvel" body="torso"/>
    <subtreelinvel name="arm_subtreelinvel" body="arm"/>
    <subtreeangmom name="torso_angmom" body="torso"/>
    <subtreeangmom name="arm_angmom" body="arm"/>
    <jointpos joint="shoulder"/>
    <jointvel name="wrist_vel" joint="wrist"/>
    <jointpos name="wrist_pos" joint="wrist"/>
  </sensor>
</mujoco>
"""

STEP_TYPES = {"touch", "accelerometer", "force", "torque"}


def dm_control_file(name):
    return robot_file("dm_control/suite/" + name)


def robot_file(relative):
    root = os.environ.get("MOREAU_ROBOT_FILES")
    path = pathlib.Path(root or "/nonexistent") / relative
    if not path.exists():
        if os.environ.get("MOREAU_REQUIRE_ROBOT_FILES") == "1":
            pytest.fail(f"MOREAU_REQUIRE_ROBOT_FILES=1 and {path} is missing")
        pytest.skip("robot files not found")
    return str(path)


@pytest.fixture
def scene_file(tmp_path):
    path = tmp_path / "sensors.xml"
    path.write_text(SCENE)
    return str(path)


def mujoco_values(mj, data, name):
    try:
        s = mj.sensor(name)
    except KeyError:  # moreau names an unnamed sensor by its index
        s = mj.sensor(int(name.removeprefix("sensor")))
    return np.array(data.sensordata[s.adr[0] : s.adr[0] + s.dim[0]])


def moreau_values(model, values, name):
    k = model.sensor_names.index(name)
    a = model.sensor_address[k]
    return values[..., a : a + model.sensor_dims[k]]


def random_states(model, n, rng, height=None):
    """n states near q0: joints moved, the free body turned, random velocities."""
    q = np.tile(model.q0, (n, 1))
    q += rng.normal(scale=0.3, size=q.shape)
    mj_q, _ = model.to_mujoco(q, np.zeros((n, model.nv)))
    types = model.joint_types
    qpos_adr = model.joint_qpos_address
    for j, t in enumerate(types):
        if t in ("free", "ball"):
            k = qpos_adr[j] + (3 if t == "free" else 0)
            mj_q[:, k : k + 4] /= np.linalg.norm(mj_q[:, k : k + 4], axis=1, keepdims=True)
            if t == "free" and height is not None:
                mj_q[:, qpos_adr[j] + 2] = height
    v = rng.normal(size=(n, model.nv))
    q, _ = model.from_mujoco(mj_q, np.zeros((n, model.nv)))
    return q, v


def compare_state_sensors(path, n=5, seed=0, skip=()):
    # (Sensors at a state do not depend on the contacts' dimension: the
    # dog's and the quadruped's condim 6 are taken as 3.)
    model = moreau.load(path, sliding_friction_only=True)
    mj = mujoco.MjModel.from_xml_path(path)
    data = mujoco.MjData(mj)
    rng = np.random.default_rng(seed)
    q, v = random_states(model, n, rng)
    batch = moreau.BatchSim(model, n, backend="cpu1")
    batch.set_states(q, v)
    values = batch.sensors()
    assert values.shape == (n, sum(model.sensor_dims))
    qpos, qvel = model.to_mujoco(q, v)
    compared = 0
    for w in range(n):
        data.qpos[:] = qpos[w]
        data.qvel[:] = qvel[w]
        mujoco.mj_forward(mj, data)
        for name, kind in zip(model.sensor_names, model.sensor_types):
            ours = moreau_values(model, values[w], name)
            if kind in STEP_TYPES:
                # No step led to this state: MuJoCo's after mj_resetData.
                assert np.all(ours == 0.0), name
                continue
            if name in skip:
                continue
            theirs = mujoco_values(mj, data, name)
            if kind == "framequat" and np.dot(ours, theirs) < 0:
                theirs = -theirs
            assert ours == pytest.approx(theirs, abs=1e-9, rel=1e-9), (name, kind, w)
            compared += 1
    return model, compared


def test_every_state_sensor_matches_mujoco(scene_file):
    model, compared = compare_state_sensors(scene_file)
    assert "sensor30" in model.sensor_names  # the unnamed jointpos, by its index
    assert compared == 5 * 24


@pytest.mark.parametrize(
    "name",
    [
        "dm_control/suite/humanoid.xml",
        "dm_control/suite/quadruped.xml",
        "dm_control/suite/swimmer.xml",
        "dm_control/suite/finger.xml",
        "dm_control/locomotion/walkers/assets/dog_v2/dog.xml",
        "mjlab/asset_zoo/robots/unitree_go1/xmls/go1.xml",
    ],
)
def test_robot_files_state_sensors_match_mujoco(name):
    model, compared = compare_state_sensors(robot_file(name), n=3)
    assert compared > 0


def test_torsional_and_rolling_friction_load_or_are_taken_as_sliding():
    """dm_control's quadruped has a ball with condim 6: simulated (no
    warning), stepped on the CPU backends, on the GPU's with ADMM
    (host-prepared) and refused there with PGS, by name; taken as condim 3
    on request, with a warning."""
    path = robot_file("dm_control/suite/quadruped.xml")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = moreau.load(path)
    assert model.nv == mujoco.MjModel.from_xml_path(path).nv
    batch = moreau.BatchSim(model, 2, backend="cpu1")
    batch.step_controls(np.zeros((2, model.nu)), repeats=5)
    assert np.isfinite(batch.q).all()
    with pytest.raises(Exception, match="condim 4 or 6"):
        moreau.BatchSim(model, 2, backend="gpu", solver="ncp-pgs")
    with pytest.warns(UserWarning, match="condim 4 and 6 taken as 3"):
        model = moreau.load(path, sliding_friction_only=True)
    moreau.BatchSim(model, 2, backend="cpu1")


def step_sensors_against_inverse(path, n=3, seed=1, height=5.0):
    """Steps worlds in the air and compares the step sensors with MuJoCo's
    mj_inverse at the step's start and acceleration."""
    model = moreau.load(path)
    mj = mujoco.MjModel.from_xml_path(path)
    data = mujoco.MjData(mj)
    rng = np.random.default_rng(seed)
    q, v = random_states(model, n, rng, height=height)
    batch = moreau.BatchSim(model, n, backend="cpu1", tolerance=1e-12)
    batch.set_states(q, v)
    batch.step(np.zeros((n, model.nv)))
    assert len(batch.contacts()["world"]) == 0, "the worlds must be in the air"
    values = batch.sensors()
    a = (batch.v - v) / model.dt
    qpos, qvel = model.to_mujoco(q, v)
    compared = 0
    for w in range(n):
        data.qpos[:] = qpos[w]
        data.qvel[:] = qvel[w]
        data.qacc[:] = mujoco_acceleration(model, q[w], v[w], a[w])
        mujoco.mj_inverse(mj, data)
        for name, kind in zip(model.sensor_names, model.sensor_types):
            if kind not in STEP_TYPES:
                continue
            ours = moreau_values(model, values[w], name)
            theirs = mujoco_values(mj, data, name)
            assert ours == pytest.approx(theirs, abs=1e-7, rel=1e-7), (name, w)
            compared += 1
    return compared


def mujoco_acceleration(model, q, v, a):
    """MuJoCo's qacc of moreau's acceleration a at (q, v): a free joint's
    linear velocity is in the world frame there, in the body frame here, so
    its derivative gains R (a_lin + w x v_lin)."""
    _, qacc = model.to_mujoco(q[None], a[None])
    qacc = qacc[0]
    for j, t in enumerate(model.joint_types):
        if t != "free":
            continue
        k, i = model.joint_qpos_address[j], model.joint_dof_address[j]
        x, y, z, qw = q[k + 3 : k + 7]
        r = quaternion_matrix(qw, x, y, z)
        lin, ang = v[i : i + 3], v[i + 3 : i + 6]
        qacc[i : i + 3] = r @ (a[i : i + 3] + np.cross(ang, lin))
    return qacc


def quaternion_matrix(w, x, y, z):
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def test_step_sensors_match_mujoco_in_the_air(scene_file):
    # 2 accelerometers, 5 forces and torques, 2 touches (in the air: 0).
    assert step_sensors_against_inverse(scene_file) == 3 * 9


def test_dm_control_humanoid_step_sensors_match_mujoco():
    assert step_sensors_against_inverse(dm_control_file("humanoid.xml"), n=2) > 0


def test_resting_box_touch_force_and_accelerometer(scene_file):
    """At rest on the floor: the bottom touch sensor carries the whole weight,
    the top one nothing (the arm rests on its joint's stop, above the floor);
    the accelerometer reads -g; the root's interaction
    force is 0 (the floor holds it, not a joint); the welded cap's is its
    weight; a state set by hand has no step to read (0)."""
    model = moreau.load(scene_file)
    sim = moreau.Simulator(model, tolerance=1e-12)
    q = model.q0.copy()
    q[2] = 0.05  # the box's bottom on the floor
    sim.q = q
    for _ in range(600):
        sim.step()
    values = sim.sensors()
    g = 9.81
    total = 3.0 + 0.2 + 0.7 + 0.3
    assert moreau_values(model, values, "touch_bottom")[0] == pytest.approx(total * g, rel=1e-5)
    assert moreau_values(model, values, "touch_top")[0] == 0.0
    acc = moreau_values(model, values, "acc")
    assert np.linalg.norm(acc) == pytest.approx(g, rel=1e-5)
    # In the site frame: the world's up axis seen from the turned site.
    mj = mujoco.MjModel.from_xml_path(scene_file)
    data = mujoco.MjData(mj)
    qpos, qvel = model.to_mujoco(sim.q[None], sim.v[None])
    data.qpos[:], data.qvel[:] = qpos[0], qvel[0]
    mujoco.mj_forward(mj, data)
    site_up = data.site("imu").xmat.reshape(3, 3).T @ np.array([0, 0, g])
    assert acc == pytest.approx(site_up, abs=1e-4)
    assert np.linalg.norm(moreau_values(model, values, "root_force")) < 1e-4 * total * g
    cap_up = data.site("cap_site").xmat.reshape(3, 3).T @ np.array([0, 0, 0.2 * g])
    assert moreau_values(model, values, "cap_force") == pytest.approx(cap_up, abs=1e-6)
    # A state set by hand (here a velocity nudged by 1e-9) has no step to
    # read; the same numbers set again would still be the step's state.
    v = sim.v
    v[0] += 1e-9
    sim.v = v
    again = sim.sensors()
    assert moreau_values(model, again, "touch_bottom")[0] == 0.0
    assert np.all(moreau_values(model, again, "acc") == 0.0)


def test_sensor_files_refused_or_warned(tmp_path):
    def load(sensors):
        path = tmp_path / "bad.xml"
        path.write_text(
            '<mujoco><worldbody><body name="b"><freejoint name="root"/><geom size="0.1"/>'
            '<site name="s"/></body></worldbody><sensor>' + sensors + "</sensor></mujoco>"
        )
        return moreau.load(str(path))

    with pytest.raises(ValueError, match="no site named `nope`"):
        load('<gyro site="nope"/>')
    with pytest.raises(ValueError, match="unknown sensor type `gyroscope`"):
        load('<gyroscope site="s"/>')
    with pytest.raises(ValueError, match="duplicate sensor name"):
        load('<gyro name="a" site="s"/><velocimeter name="a" site="s"/>')
    with pytest.raises(ValueError, match="is not a hinge or a slide"):
        load('<jointpos joint="root"/>')
    with pytest.warns(UserWarning, match="sensor type `magnetometer` is not supported"):
        model = load('<magnetometer name="mag" site="s"/><gyro name="g" site="s"/>')
    assert model.sensor_names == ["g"]


def test_worlds_on_the_device_refuse_sensors(tmp_path):
    """A contact-free model's worlds live on the device on "gpu", their last
    step with them: sensors are refused, naming why."""
    path = tmp_path / "pendulum.xml"
    path.write_text(
        '<mujoco><worldbody><body name="b"><joint type="hinge" axis="0 1 0"/>'
        '<geom type="capsule" fromto="0 0 0 0 0 -1" size="0.05" contype="0" conaffinity="0"/>'
        '<site name="s"/></body></worldbody><sensor><gyro site="s"/></sensor></mujoco>'
    )
    model = moreau.load(str(path))
    try:
        batch = moreau.BatchSim(model, 2, backend="gpu")
    except ValueError as e:
        if "no GPU adapter" in str(e) and os.environ.get("MOREAU_REQUIRE_GPU") != "1":
            pytest.skip(str(e))
        raise
    assert batch.resident
    with pytest.raises(ValueError, match="living on the device"):
        batch.sensors()
    # The same worlds on the CPU read them.
    assert moreau.BatchSim(model, 2).sensors().shape == (2, 3)


def test_randomized_masses_reach_the_subtree_sensors(scene_file):
    """A body's mass and centre of mass changed by with_parameters are what
    the subtree sensors, the frame sensors of a body's centre of mass and
    com_inertias read (MuJoCo's with the same change); of a body that
    carries several of the file's bodies welded together, the one with the
    joint takes the change."""
    model = moreau.load(scene_file)
    names = model.body_names
    arm = names.index("arm")
    mass = model.body_mass.copy()
    mass[arm] *= 3.0
    heavy = model.with_parameters(body_mass=mass)
    mj = mujoco.MjModel.from_xml_path(scene_file)
    mj.body_mass[mj.body("arm").id] *= 3.0
    data = mujoco.MjData(mj)
    q, v = random_states(model, 1, np.random.default_rng(3))
    qpos, qvel = model.to_mujoco(q, v)
    data.qpos[:], data.qvel[:] = qpos[0], qvel[0]
    # (Its centre of mass moved too: the frame sensors of objtype body follow.)
    com = heavy.body_com.copy()
    com[names.index("hand")] += [0.01, -0.02, 0.03]
    heavy = heavy.with_parameters(body_com=com)
    mj.body_ipos[mj.body("hand").id] += [0.01, -0.02, 0.03]
    mujoco.mj_setConst(mj, data)  # (which leaves data at qpos0)
    data.qpos[:], data.qvel[:] = qpos[0], qvel[0]
    batch = moreau.BatchSim(heavy, 1)
    batch.set_states(q, v)
    values = batch.sensors()[0]
    mujoco.mj_forward(mj, data)
    checked = ["torso_com", "arm_com", "torso_subtreelinvel", "torso_angmom", "arm_angmom"]
    for name in checked + ["hand_com", "hand_com_vel"]:
        assert moreau_values(heavy, values, name) == pytest.approx(
            mujoco_values(mj, data, name), abs=1e-9, rel=1e-9
        ), name
    cinert = batch.com_inertias()[0]
    row = heavy.body_frame_names.index("arm")
    assert cinert[row, 9] == pytest.approx(mj.body_mass[mj.body("arm").id])
    # The torso carries the welded cap: the torso, with the joint, takes
    # the change, the cap keeps its mass; a change that leaves the torso
    # less than nothing is refused, naming both.
    mass = model.body_mass.copy()
    mass[names.index("torso")] *= 2.0
    welded = model.with_parameters(body_mass=mass)
    rows = [welded.body_frame_names.index(b) for b in ("torso", "cap")]
    cinert = moreau.BatchSim(welded, 1).com_inertias()[0]
    assert cinert[rows, 9] == pytest.approx([2 * 3.2 - 0.2, 0.2], rel=1e-12)
    mass[names.index("torso")] = 0.1
    with pytest.raises(ValueError, match="torso, cap welded together, and `torso` takes the change"):
        model.with_parameters(body_mass=mass)
    with pytest.raises(ValueError, match="world"):
        model.with_parameters(body_mass=model.body_mass + 1.0)


# The file's cameras: every mode, on a free body with welded and jointed
# children, inside <frame>s, with class defaults.
CAMERAS = """
<mujoco>
  <default>
    <camera fovy="60"/>
    <default class="wide"><camera fovy="90"/></default>
  </default>
  <worldbody>
    <camera name="world_fixed" pos="0 -3 1" xyaxes="1 0 0 0 0.3 1"/>
    <camera name="world_target" mode="targetbodycom" target="torso" pos="2 2 2"/>
    <body name="torso" pos="0 0 1">
      <freejoint/>
      <geom type="box" size="0.2 0.1 0.05" mass="3"/>
      <camera name="ego" class="wide" pos="0.2 0 0.1" xyaxes="0 -1 0 0.4 0 1"/>
      <camera name="follow" mode="track" pos="0 -2 0.5" euler="70 0 0"/>
      <camera name="follow_com" mode="trackcom" pos="-1 -2 1" zaxis="-1 -2 1"/>
      <body name="cap" pos="0.1 0 0.08">
        <geom type="sphere" size="0.03" mass="0.2"/>
        <frame pos="0.01 0 0" euler="0 0 30">
          <camera name="cap_track" mode="track" pos="0 -1 0.2" quat="0.9 0.3 0.1 0"/>
        </frame>
      </body>
      <body name="arm" pos="0.2 0 0" euler="0 0 20">
        <joint name="shoulder" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0.1" size="0.03" mass="0.7"/>
        <camera name="arm_fixed" pos="0.1 0 0.05" axisangle="0 0 1 40"/>
        <camera name="arm_com" mode="trackcom" pos="0 -1 0"/>
        <camera name="arm_looks" mode="targetbody" target="cap" pos="0.3 0 0.3"/>
        <camera pos="0 0 0.2"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def compare_cameras(path, n=4, seed=2):
    model = moreau.load(path, sliding_friction_only=True)
    mj = mujoco.MjModel.from_xml_path(path)
    data = mujoco.MjData(mj)
    assert len(model.camera_names) == mj.ncam
    q, v = random_states(model, n, np.random.default_rng(seed))
    qpos, _ = model.to_mujoco(q, v)
    for w in range(n):
        sim = moreau.Simulator(model)
        sim.q, sim.v = q[w], v[w]
        pos, mat = sim.camera_poses()
        data.qpos[:] = qpos[w]
        mujoco.mj_forward(mj, data)
        for k, name in enumerate(model.camera_names):
            if mj.cam(k).name:
                assert mj.cam(k).name == name
            assert pos[k] == pytest.approx(data.cam_xpos[k], abs=1e-9), (name, w)
            assert mat[k].ravel() == pytest.approx(data.cam_xmat[k], abs=1e-9), (name, w)
            assert mj.cam_fovy[k] == pytest.approx(model.camera_fovy[k])
    return model


def test_cameras_match_mujoco(tmp_path):
    path = tmp_path / "cameras.xml"
    path.write_text(CAMERAS)
    model = compare_cameras(str(path))
    assert model.camera_names[-1] == "camera9"  # the unnamed one, by its index


@pytest.mark.parametrize(
    "name",
    [
        "dm_control/suite/cartpole.xml",
        "dm_control/suite/fish.xml",
        "dm_control/suite/humanoid.xml",
        "dm_control/suite/quadruped.xml",
        "dm_control/suite/manipulator.xml",
        "dm_control/suite/acrobot.xml",
        "dm_control/locomotion/walkers/assets/dog_v2/dog.xml",
    ],
)
def test_robot_files_cameras_match_mujoco(name):
    model = compare_cameras(robot_file(name), n=2)
    assert len(model.camera_names) > 0


def test_bad_cameras_are_refused(tmp_path):
    bad = {
        'mode="orbit"': "camera mode `orbit`",
        'mode="targetbody"': "needs a `target` body",
        'mode="targetbody" target="nowhere"': "unknown target body `nowhere`",
        'fovy="0"': "fovy 0 is not in",
    }
    for attrs, message in bad.items():
        path = tmp_path / "bad.xml"
        path.write_text(
            f'<mujoco><worldbody><body name="b"><freejoint/><geom size="0.1"/>'
            f'<camera name="c" {attrs}/></body></worldbody></mujoco>'
        )
        with pytest.raises(ValueError, match=message):
            moreau.load(str(path))


def u_mesh():
    """Two boxes side by side in one mesh (a U seen from above): a ray
    down the notch between them meets nothing of it, as MuJoCo's meets
    its triangles, not its hull."""
    verts, faces = [], []
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    for x0, x1 in ((-0.3, -0.1), (0.1, 0.3)):
        o = len(verts)
        verts += [(x, y, z) for x in (x0, x1) for y in (-0.1, 0.1) for z in (0.0, 0.2)]
        for a, b, c, d in quads:
            faces += [(o + a, o + b, o + c), (o + a, o + c, o + d)]
    v = " ".join("%g %g %g" % p for p in verts)
    f = " ".join("%d %d %d" % t for t in faces)
    return f'<mesh name="u" vertex="{v}" face="{f}"/>'


RANGEFINDERS = f"""
<mujoco>
  <asset>{u_mesh()}</asset>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <geom name="post" type="box" size="0.1 0.1 0.5" pos="1 0 0.5" group="3"/>
    <geom name="ghost" type="sphere" size="0.2" pos="-1 0 0.5" contype="0" conaffinity="0"/>
    <geom name="glass" type="box" size="0.1 0.5 0.5" pos="0 1 0.5" rgba="1 1 1 0"/>
    <geom name="u" type="mesh" mesh="u" pos="0 -0.8 0"/>
    <geom name="egg" type="ellipsoid" size="0.3 0.15 0.2" pos="0.6 0.6 0.3" euler="10 20 30"/>
    <geom name="can" type="cylinder" size="0.15 0.3" pos="-0.6 0.6 0.3"/>
    <geom name="pill" type="capsule" size="0.1 0.3" pos="-0.6 -0.6 0.3" euler="90 0 0"/>
    <site name="above" pos="0 0 2" zaxis="0.1 0 -1"/>
    <body name="probe" pos="0 0 1">
      <freejoint/>
      <geom name="shell" type="sphere" size="0.05"/>
      <site name="down" zaxis="0 0 -1"/>
      <site name="px" zaxis="1 0 0"/>
      <site name="mx" zaxis="-1 0 0"/>
      <site name="py" zaxis="0 1 0"/>
      <site name="my" zaxis="0 -1 0"/>
      <site name="up" zaxis="0 0 1"/>
      <site name="oblique" pos="0.02 0 0" zaxis="1 1 -1"/>
      <body name="tail" pos="0 0 -0.3">
        <joint name="swing" type="hinge" axis="1 0 0"/>
        <geom name="tail_geom" type="sphere" size="0.04"/>
      </body>
    </body>
  </worldbody>
  <sensor>
    <rangefinder name="above" site="above"/>
    <rangefinder name="down" site="down"/>
    <rangefinder name="px" site="px"/>
    <rangefinder name="mx" site="mx"/>
    <rangefinder name="py" site="py"/>
    <rangefinder name="my" site="my"/>
    <rangefinder name="up" site="up"/>
    <rangefinder name="oblique" site="oblique"/>
    <rangefinder name="short" site="px" cutoff="0.5"/>
  </sensor>
</mujoco>
"""


def test_rangefinders_match_mujoco(tmp_path):
    """Rangefinders from a free body turned and placed at random, and from
    a site of the world, against MuJoCo's: they see every opaque geom of
    another body (a hidden group, a visual-only one), not a transparent
    one, a mesh by its triangles, a plane from above within its size, and
    read −1 where they meet nothing."""
    path = tmp_path / "rangefinders.xml"
    path.write_text(RANGEFINDERS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing left out
        model = moreau.load(str(path))
    mj = mujoco.MjModel.from_xml_path(str(path))
    data = mujoco.MjData(mj)
    rng = np.random.default_rng(3)
    n = 200
    qpos = np.zeros((n, mj.nq))
    qpos[:, 0:2] = rng.uniform(-1.2, 1.2, size=(n, 2))
    qpos[:, 2] = rng.uniform(0.1, 1.2, size=n)
    quat = rng.normal(size=(n, 4))
    qpos[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    qpos[:, 7] = rng.uniform(-3, 3, size=n)
    q, v = model.from_mujoco(qpos, np.zeros((n, mj.nv)))
    batch = moreau.BatchSim(model, n, backend="cpu1")
    batch.set_states(q, v)
    values = batch.sensors()
    kinds = {"miss": 0, "hit": 0}
    worst = 0.0
    for w in range(n):
        data.qpos[:] = qpos[w]
        mujoco.mj_forward(mj, data)
        for name in model.sensor_names:
            ours = moreau_values(model, values[w], name)[0]
            theirs = mujoco_values(mj, data, name)[0]
            kinds["miss" if theirs < 0 else "hit"] += 1
            assert ours == pytest.approx(theirs, abs=1e-6), (name, w, qpos[w])
            worst = max(worst, abs(ours - theirs))
    # Both outcomes seen often, and the cutoff applied.
    assert kinds["miss"] > 100 and kinds["hit"] > 600, kinds
    print(f"rangefinders: {kinds}, worst difference {worst:.1e} m")


PRINCIPAL = """
<mujoco>
  <worldbody>
    <body name="torso" euler="10 20 30">
      <freejoint/>
      <inertial pos="0.1 0 0.2" euler="40 -30 70" mass="2" diaginertia="3 2 1.5"/>
      <geom type="box" size="0.2 0.1 0.05" contype="0" conaffinity="0"/>
      <site name="imu" pos="0.05 0.02 0" euler="0 90 0"/>
      <body name="arm" pos="0.2 0 0">
        <joint name="shoulder" type="hinge" axis="0 1 0"/>
        <frame euler="0 0 45">
          <inertial pos="0.1 0 0" quat="0.9 0.1 0.3 0.2" mass="0.5" diaginertia="0.01 0.02 0.015"/>
        </frame>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" contype="0" conaffinity="0"/>
      </body>
      <body name="hand" pos="0 0.3 0">
        <joint name="wrist" type="hinge" axis="1 0 0"/>
        <geom type="box" size="0.05 0.03 0.02" euler="0 0 30" contype="0" conaffinity="0"/>
      </body>
    </body>
  </worldbody>
  <sensor>
    <framequat name="torso_principal" objtype="body" objname="torso"/>
    <framexaxis name="arm_principal_x" objtype="body" objname="arm"/>
    <framezaxis name="up_in_imu" objtype="body" objname="world" reftype="site" refname="imu"/>
    <framequat name="arm_in_torso" objtype="body" objname="arm" reftype="body" refname="torso"/>
    <framepos name="arm_com" objtype="body" objname="arm"/>
    <framequat name="hand_principal" objtype="body" objname="hand"/>
  </sensor>
</mujoco>
"""


def test_frame_sensors_read_an_inertials_principal_axes_as_mujoco(tmp_path):
    """objtype "body" with the orientation read: an <inertial>'s frame
    (diaginertia with an orientation, inside a <frame> too) is MuJoCo's
    principal axes; the world's is the world frame; a body whose inertia
    comes from its geoms is warned about by name and left out."""
    path = tmp_path / "principal.xml"
    path.write_text(PRINCIPAL)
    with pytest.warns(UserWarning, match="`hand`, whose principal axes come from its geoms"):
        model = moreau.load(str(path))
    assert "hand_principal" not in model.sensor_names
    model_, compared = compare_state_sensors(str(path), n=6, seed=4)
    assert compared == 6 * 5
