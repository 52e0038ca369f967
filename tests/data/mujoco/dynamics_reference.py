#!/usr/bin/env python3
"""MuJoCo's dynamics on Gymnasium's MuJoCo models, for moreau's dynamics tests
(joint limits, armature, implicit joint damping, springs, actuators, fluid
forces, contacts): what MuJoCo computes from the same files that moreau
loads, written as JSON (dynamics.json) next to this script.

Not run by CI: the JSON file is committed. To regenerate it:

    python3 -m venv /tmp/mjvenv
    /tmp/mjvenv/bin/pip install mujoco==4.0.0
    scripts/fetch-robot-files            # prints the site-packages directory
    /tmp/mjvenv/bin/python tests/data/mujoco/dynamics_reference.py SITE_PACKAGES

SITE_PACKAGES is the directory that `scripts/fetch-robot-files` prints (it
holds Gymnasium 1.4.0's MuJoCo assets under gymnasium/envs/mujoco/assets);
without it, the script reads $MOREAU_ROBOT_FILES. Everything here is
deterministic (no random numbers): the same MuJoCo gives the same file.

The committed file was produced by MuJoCo 4.0.0 (Python bindings) on
Gymnasium 1.4.0's assets; it records the versions it was made with. (MuJoCo
4.0.0 warns that one Gymnasium file's `settotalmass` is deprecated, on
stderr and in a MUJOCO_LOG.TXT it writes in the working directory: delete
that file.)

None of the files used in "mass_matrix" and "trajectories" has a free or
ball joint: every joint is a scalar hinge or slide, so qpos is moreau's q
and nq == nv. Joint index i below is MuJoCo's joint (= dof) order.

Output, dynamics.json:

- "versions": MuJoCo, numpy, Gymnasium.
- "mass_matrix": per file (inverted_pendulum, inverted_double_pendulum,
  reacher, swimmer, half_cheetah, hopper, walker2d_v5), the joints' names,
  types, limits and ranges, the dofs' armature, damping and frictionloss,
  the joints' stiffness and spring reference (`qpos_spring`, which is the
  joint's `springref`, not its `ref`: hopper's rootz has ref 1.25 so qpos0
  is 1.25 but qpos_spring is 0), and the poses [qpos0, qpos0 +
  0.1*sin(1.7*i + 0.3)], each with "qpos" and the whole `mj_fullM` after
  `mj_forward` (armature included on the diagonal).
- "trajectories": per file (inverted_pendulum, inverted_double_pendulum,
  reacher, swimmer), with the integrator switched to Euler
  (`mjINT_EULER`: semi-implicit Euler, joint damping integrated
  implicitly) and the file's own time step: the initial state qpos_init =
  qpos0 + s_i*0.05*sin(0.9*i + 0.2) (s_i = 1 unless that leaves joint i's
  range, then halved until it does not), qvel_init = 0.1*cos(1.3*i);
  controls ctrl[t][a] = clip(mid_a + amplitude*half_a*sin(0.05*t*(a+1) +
  0.4*a), ctrlrange_a) (mid/half: the middle and half-width of the control
  range; for an actuator without a control limit, mid 0 and half 1, and
  amplitude 0.5), t = 0 .. steps-1; then `steps` calls of mj_step, each
  with d.ctrl = ctrl[t], recording qpos and qvel after each step. Also: the
  options (gravity, wind, density, viscosity, ...), the integrator named in
  the file, "ncon" (the most contacts at any step), "limit_active_steps"
  (how many steps had a joint-limit constraint row, `mjCNSTR_LIMIT_JOINT`,
  in the step's constraint set), "first_limit_step" (the first such step,
  or null), each actuator's parameters (gainprm[:3], biasprm[:3], gear[0],
  ctrlrange, ctrllimited, forcerange, forcelimited, dyntype, gaintype,
  biastype, as MuJoCo's integers), and at the initial state after
  mj_forward with ctrl[0]: qfrc_passive (springs, dampers and, for
  swimmer, the inertia-box fluid forces; geom_fluid is all zero in these
  files, so MuJoCo uses the inertia-box model), qfrc_bias, qfrc_actuator
  and qacc.
  Steps and amplitudes: STEPS and AMPLITUDE below (300 steps and 0.8 for
  reacher and swimmer). The inverted pendulums are unstable: no open-loop
  control keeps the pole up, and any difference between two simulators
  grows exponentially (the double pendulum, falling, is chaotic). Their
  runs are cut short (45 and 130 steps, amplitude 0.1) before a joint
  reaches its limit, so "limit_active_steps" is 0 for them.
- "limit_trajectories": the same records for the two pendulums with 300
  steps and amplitude 0.8, which do hit the cart's and the pole's limits.
- "settle": per file (ant, hopper, walker2d_v5, half_cheetah, humanoid),
  from qpos0 with qvel 0 and ctrl 0, 3 s of simulation, twice: with the
  file's own integrator ("file") and with Euler ("euler"). Each records the
  time step, the integrator, body 1's (the torso's) world height
  `d.xpos[1][2]` sampled about every 0.05 s ("height_times" are the sample
  times, d.time after the step closest to k*0.05 s, starting with 0 before
  any step; heights are those of the state at that time, from
  mj_kinematics after the step), the final torso height and the min and max of the torso height
  over the last 0.5 s (every step with d.time >= 2.5 s - 1e-9), the final
  ncon and contacts (geom name pairs; an unnamed geom is "geom<id>"), the
  final qpos, and "max_limit_violation": the most any limited hinge or slide
  joint's qpos went outside its jnt_range at the end of any step (0 if
  never), and "initial_limit_violation", the same at qpos0 (not 0 for ant,
  whose ankle joints' ranges are 30..70 degrees or -70..-30, and humanoid,
  whose knees' are -160..-2, while qpos0 is 0). A third run,
  "euler_perturbed", starts from qpos0 with every hinge and slide moved by
  PERTURBATION*sin(2.1*j + 0.7) (j the joint index; its "qpos_init" is
  recorded), like Gymnasium's reset noise. For the half-cheetah, a fourth,
  "euler_frictionless", from qpos0 with every geom's sliding friction 0.
"""

import math
import sys

import mujoco
import numpy as np

# The helpers shared with the other reference script, beside this one.
from mujoco_reference import GYMNASIUM_VERSION, HERE, floats, gymnasium_assets, name, rows, write

MASS_MATRIX_FILES = [
    "inverted_pendulum.xml",
    "inverted_double_pendulum.xml",
    "reacher.xml",
    "swimmer.xml",
    "half_cheetah.xml",
    "hopper.xml",
    "walker2d_v5.xml",
]
TRAJECTORY_FILES = [
    "inverted_pendulum.xml",
    "inverted_double_pendulum.xml",
    "reacher.xml",
    "swimmer.xml",
]
SETTLE_FILES = [
    "ant.xml",
    "hopper.xml",
    "walker2d_v5.xml",
    "half_cheetah.xml",
    "humanoid.xml",
]

# Trajectory length and control amplitude (fraction of the control range's
# half-width) per file. The pendulums fall whatever the open-loop control;
# their runs stop before any joint reaches a limit (the pole's hinge at
# +-90 degrees, the cart's slide at +-1 m), which with these amplitudes
# happens at step 53 (inverted_pendulum) and 144 (inverted_double_pendulum).
# reacher (its free-sliding target) and swimmer do reach limits.
STEPS = {
    "inverted_pendulum.xml": 45,
    "inverted_double_pendulum.xml": 130,
    "reacher.xml": 300,
    "swimmer.xml": 300,
}
AMPLITUDE = {
    "inverted_pendulum.xml": 0.1,
    "inverted_double_pendulum.xml": 0.1,
    "reacher.xml": 0.8,
    "swimmer.xml": 0.8,
}
# The pendulums again, long and hard enough to hit their limits.
LIMIT_TRAJECTORIES = [
    ("inverted_pendulum.xml", 300, 0.8),
    ("inverted_double_pendulum.xml", 300, 0.8),
]
UNLIMITED_AMPLITUDE = 0.5
SETTLE_SECONDS = 3.0
SAMPLE_SECONDS = 0.05
LAST_SECONDS = 0.5


def versions():
    return {
        "mujoco": mujoco.__version__,
        "numpy": np.__version__,
        "gymnasium": GYMNASIUM_VERSION,
        "generated_by": "tests/data/mujoco/dynamics_reference.py",
    }


def ints(a):
    return [int(x) for x in np.asarray(a).ravel()]


def geom_name(m, g):
    return name(m, mujoco.mjtObj.mjOBJ_GEOM, g) or f"geom{g}"


def integrator_name(value):
    return mujoco.mjtIntegrator(int(value)).name


def load(assets, file):
    return mujoco.MjModel.from_xml_path(str(assets / file))


def scalar(m, j):
    return int(m.jnt_type[j]) in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))


def scalar_joints_only(m, file):
    bad = [j for j in range(m.njnt) if not scalar(m, j)]
    if bad or m.nq != m.nv:
        sys.exit(f"{file}: expected only hinge and slide joints")


def joints(m):
    return {
        "joint_names": [name(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(m.njnt)],
        "jnt_type": [mujoco.mjtJoint(int(t)).name for t in m.jnt_type],
        "jnt_limited": [bool(x) for x in m.jnt_limited],
        "jnt_range": rows(m.jnt_range),
    }


def full_mass_matrix(m, d):
    full = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, full)
    return full


def mass_matrix_reference(assets, file):
    m = load(assets, file)
    scalar_joints_only(m, file)
    d = mujoco.MjData(m)
    i = np.arange(m.nq)
    poses = []
    for qpos in [m.qpos0.copy(), m.qpos0 + 0.1 * np.sin(1.7 * i + 0.3)]:
        mujoco.mj_resetData(m, d)
        d.qpos[:] = qpos
        mujoco.mj_forward(m, d)
        poses.append({"qpos": floats(d.qpos), "mass_matrix": rows(full_mass_matrix(m, d))})
    return {
        "file": file,
        "nq": m.nq,
        "nv": m.nv,
        **joints(m),
        "qpos0": floats(m.qpos0),
        "dof_armature": floats(m.dof_armature),
        "dof_damping": floats(m.dof_damping),
        "jnt_stiffness": floats(m.jnt_stiffness),
        "qpos_spring": floats(m.qpos_spring),
        "dof_frictionloss": floats(m.dof_frictionloss),
        "poses": poses,
    }


def actuators(m):
    return [
        {
            "name": name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a),
            "joint": name(m, mujoco.mjtObj.mjOBJ_JOINT, int(m.actuator_trnid[a, 0])),
            "gainprm": floats(m.actuator_gainprm[a, :3]),
            "biasprm": floats(m.actuator_biasprm[a, :3]),
            "gear": float(m.actuator_gear[a, 0]),
            "ctrlrange": floats(m.actuator_ctrlrange[a]),
            "ctrllimited": bool(m.actuator_ctrllimited[a]),
            "forcerange": floats(m.actuator_forcerange[a]),
            "forcelimited": bool(m.actuator_forcelimited[a]),
            "dyntype": int(m.actuator_dyntype[a]),
            "gaintype": int(m.actuator_gaintype[a]),
            "biastype": int(m.actuator_biastype[a]),
        }
        for a in range(m.nu)
    ]


def options(m):
    o = m.opt
    return {
        "timestep": float(o.timestep),
        "gravity": floats(o.gravity),
        "wind": floats(o.wind),
        "magnetic": floats(o.magnetic),
        "density": float(o.density),
        "viscosity": float(o.viscosity),
        "cone": mujoco.mjtCone(int(o.cone)).name,
        "solver": mujoco.mjtSolver(int(o.solver)).name,
        "iterations": int(o.iterations),
        "tolerance": float(o.tolerance),
        "disableflags": int(o.disableflags),
        "enableflags": int(o.enableflags),
    }


def initial_state(m):
    """qpos0 + 0.05*sin(0.9*i + 0.2), each term halved until inside the
    joint's range; qvel 0.1*cos(1.3*i)."""
    qpos = m.qpos0.copy()
    for j in range(m.njnt):
        k = int(m.jnt_qposadr[j])
        step = 0.05 * math.sin(0.9 * j + 0.2)
        if m.jnt_limited[j]:
            lo, hi = m.jnt_range[j]
            while not (lo <= m.qpos0[k] + step <= hi):
                step *= 0.5
        qpos[k] = m.qpos0[k] + step
    qvel = 0.1 * np.cos(1.3 * np.arange(m.nv))
    return qpos, qvel


def controls(m, steps, amplitude):
    u = np.zeros((steps, m.nu))
    for a in range(m.nu):
        if m.actuator_ctrllimited[a]:
            lo, hi = m.actuator_ctrlrange[a]
            mid, half, amp = 0.5 * (lo + hi), 0.5 * (hi - lo), amplitude
        else:
            lo, hi, mid, half, amp = -np.inf, np.inf, 0.0, 1.0, UNLIMITED_AMPLITUDE
        for t in range(steps):
            u[t, a] = np.clip(mid + amp * half * math.sin(0.05 * t * (a + 1) + 0.4 * a), lo, hi)
    return u


def limit_rows(d):
    return int(np.sum(d.efc_type[: d.nefc] == mujoco.mjtConstraint.mjCNSTR_LIMIT_JOINT))


def trajectory_reference(assets, file, steps=None, amplitude=None):
    steps = STEPS[file] if steps is None else steps
    amplitude = AMPLITUDE[file] if amplitude is None else amplitude
    m = load(assets, file)
    scalar_joints_only(m, file)
    in_file = integrator_name(m.opt.integrator)
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    d = mujoco.MjData(m)
    qpos_init, qvel_init = initial_state(m)
    u = controls(m, steps, amplitude)

    d.qpos[:] = qpos_init
    d.qvel[:] = qvel_init
    if m.nu:
        d.ctrl[:] = u[0]
    mujoco.mj_forward(m, d)
    at_init = {
        "qfrc_passive": floats(d.qfrc_passive),
        "qfrc_bias": floats(d.qfrc_bias),
        "qfrc_actuator": floats(d.qfrc_actuator),
        "qacc": floats(d.qacc),
    }

    mujoco.mj_resetData(m, d)
    d.qpos[:] = qpos_init
    d.qvel[:] = qvel_init
    qpos, qvel = [], []
    ncon = 0
    limit_steps = 0
    first_limit = None
    for t in range(steps):
        if m.nu:
            d.ctrl[:] = u[t]
        mujoco.mj_step(m, d)
        qpos.append(floats(d.qpos))
        qvel.append(floats(d.qvel))
        ncon = max(ncon, int(d.ncon))
        if limit_rows(d):
            limit_steps += 1
            if first_limit is None:
                first_limit = t
    return {
        "file": file,
        "nq": m.nq,
        "nv": m.nv,
        "nu": m.nu,
        **joints(m),
        "timestep": float(m.opt.timestep),
        "integrator": integrator_name(m.opt.integrator),
        "integrator_in_file": in_file,
        "opt": options(m),
        "steps": steps,
        "amplitude": amplitude,
        "actuators": actuators(m),
        "qpos0": floats(m.qpos0),
        "qpos_init": floats(qpos_init),
        "qvel_init": floats(qvel_init),
        "at_init": at_init,
        "qfrc_passive": at_init["qfrc_passive"],
        "ctrl": rows(u) if m.nu else [[] for _ in range(steps)],
        "qpos": qpos,
        "qvel": qvel,
        "ncon": ncon,
        "limit_active_steps": limit_steps,
        "first_limit_step": first_limit,
    }


def limit_violation(m, d):
    worst = 0.0
    for j in range(m.njnt):
        if not m.jnt_limited[j] or not scalar(m, j):
            continue
        q = d.qpos[m.jnt_qposadr[j]]
        lo, hi = m.jnt_range[j]
        worst = max(worst, lo - q, q - hi)
    return float(worst)


def perturbed_qpos(m, scale):
    """qpos0 with each hinge and slide moved by scale*sin(2.1*j + 0.7) (j the
    joint index): a deterministic stand-in for Gymnasium's reset noise."""
    q = np.array(m.qpos0, dtype=float)
    for j in range(m.njnt):
        if int(m.jnt_type[j]) in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
            q[m.jnt_qposadr[j]] += scale * np.sin(2.1 * j + 0.7)
    return q


def settle_run(assets, file, euler, perturbation=0.0, friction=True):
    m = load(assets, file)
    if euler:
        m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    if not friction:
        m.geom_friction[:, 0] = 0.0
    d = mujoco.MjData(m)
    d.qpos[:] = perturbed_qpos(m, perturbation)
    qpos_init = floats(d.qpos)
    mujoco.mj_forward(m, d)
    dt = float(m.opt.timestep)
    steps = int(round(SETTLE_SECONDS / dt))
    sample_steps = {int(round(k * SAMPLE_SECONDS / dt))
                    for k in range(1, int(round(SETTLE_SECONDS / SAMPLE_SECONDS)) + 1)}
    times, heights = [float(d.time)], [float(d.xpos[1][2])]
    last = []
    initial = limit_violation(m, d)
    worst = 0.0
    for t in range(1, steps + 1):
        mujoco.mj_step(m, d)
        # After mj_step, xpos is that of the state before the step: redo the
        # kinematics of the new state (this changes nothing in the state).
        mujoco.mj_kinematics(m, d)
        worst = max(worst, limit_violation(m, d))
        if t in sample_steps:
            times.append(float(d.time))
            heights.append(float(d.xpos[1][2]))
        if d.time >= SETTLE_SECONDS - LAST_SECONDS - 1e-9:
            last.append(float(d.xpos[1][2]))
    # The contacts of the final state.
    mujoco.mj_forward(m, d)
    contacts = [[geom_name(m, int(c.geom1)), geom_name(m, int(c.geom2))]
                for c in d.contact[: d.ncon]]
    return {
        "timestep": dt,
        "integrator": integrator_name(m.opt.integrator),
        "perturbation": perturbation,
        "qpos_init": qpos_init,
        "steps": steps,
        "height_times": times,
        "torso_height": heights,
        "torso_height_final": float(d.xpos[1][2]),
        "torso_height_last_min": float(min(last)),
        "torso_height_last_max": float(max(last)),
        "ncon": int(d.ncon),
        "contacts": contacts,
        "qpos": floats(d.qpos),
        "initial_limit_violation": initial,
        "max_limit_violation": worst,
    }


# The hinges and slides of the "euler_perturbed" settle runs are moved by up
# to this much from qpos0 (rad or m), as Gymnasium's reset noise (scale
# 5e-3) does: from the exact qpos0, the hopper balances on an unstable
# equilibrium that only MuJoCo's soft contacts and limits break.
PERTURBATION = 5e-3
# Settled again without friction ("euler_frictionless"): with friction, a
# robot standing on two feet has many equilibria (where the feet landed,
# held by static friction), and MuJoCo's soft friction creeps where rigid
# Coulomb friction holds; without friction the equilibrium is unique.
FRICTIONLESS_FILES = {"half_cheetah.xml"}


def settle_reference(assets, file):
    m = load(assets, file)
    return {
        "file": file,
        "torso": name(m, mujoco.mjtObj.mjOBJ_BODY, 1),
        "integrator_in_file": integrator_name(m.opt.integrator),
        "file_integrator": settle_run(assets, file, euler=False),
        "euler": settle_run(assets, file, euler=True),
        "euler_perturbed": settle_run(assets, file, euler=True, perturbation=PERTURBATION),
        "euler_frictionless": settle_run(assets, file, euler=True, friction=False)
        if file in FRICTIONLESS_FILES
        else None,
    }


def main():
    assets = gymnasium_assets(__doc__)
    if not (assets / "hopper.xml").exists():
        sys.exit(f"no Gymnasium MJCF files in {assets}")

    mass = [mass_matrix_reference(assets, f) for f in MASS_MATRIX_FILES]
    trajectories = [trajectory_reference(assets, f) for f in TRAJECTORY_FILES]
    limit_trajectories = [
        trajectory_reference(assets, f, steps, amplitude)
        for f, steps, amplitude in LIMIT_TRAJECTORIES
    ]
    settle = [settle_reference(assets, f) for f in SETTLE_FILES]
    write(
        HERE / "dynamics.json",
        {
            "versions": versions(),
            "mass_matrix": mass,
            "trajectories": trajectories,
            "limit_trajectories": limit_trajectories,
            "settle": settle,
        },
    )

    print("trajectories (Euler):")
    for t in trajectories + limit_trajectories:
        print(
            f"  {t['file']:30} steps {t['steps']:3} amplitude {t['amplitude']:.2f}"
            f" limit_active_steps {t['limit_active_steps']:3}"
            f" first_limit_step {t['first_limit_step']} max ncon {t['ncon']}"
        )
    print("settle (3 s from qpos0, ctrl 0): torso height final [min, max over last 0.5 s], ncon")
    for s in settle:
        for key in ("file_integrator", "euler", "euler_perturbed", "euler_frictionless"):
            r = s[key]
            if r is None:
                continue
            print(
                f"  {s['file']:18} {r['integrator']:16} dt {r['timestep']:.3f}"
                f" height {r['torso_height_final']:.4f}"
                f" [{r['torso_height_last_min']:.4f}, {r['torso_height_last_max']:.4f}]"
                f" ncon {r['ncon']} max_limit_violation {r['max_limit_violation']:.4f}"
                f" (at qpos0 {r['initial_limit_violation']:.4f})"
            )


if __name__ == "__main__":
    main()
