#!/usr/bin/env python3
"""MuJoCo's numbers for the MJCF tests (tests/mjcf*.rs): what MuJoCo computes
from the same files that moreau loads, written as JSON next to this script.

Not run by CI: the JSON files are committed. To regenerate them:

    python3 -m venv /tmp/mjvenv
    /tmp/mjvenv/bin/pip install mujoco==4.0.0
    scripts/fetch-robot-files            # prints the site-packages directory
    /tmp/mjvenv/bin/python tests/data/mujoco/mujoco_reference.py SITE_PACKAGES

SITE_PACKAGES is the directory that `scripts/fetch-robot-files` prints (it
holds Gymnasium 1.4.0's MuJoCo assets under gymnasium/envs/mujoco/assets);
without it, the script reads $MOREAU_ROBOT_FILES. It also holds dm_control's
suite files and mjlab's robots (dm-control and mjlab, installed there by the
same script).

The committed files were produced by MuJoCo 4.0.0 (Python bindings, numpy
2.4.6) on Gymnasium 1.4.0's assets. Each file records the versions it was
made with. (MuJoCo 4.0.0 warns that one Gymnasium file's `settotalmass` is
deprecated, on stderr and in a MUJOCO_LOG.TXT it writes in the working
directory: delete that file.)

Outputs:

- gymnasium.json: for every MJCF file of Gymnasium's MuJoCo assets, from
  `mujoco.MjModel.from_xml_path` and `mj_forward` at `qpos0`: the sizes
  (nq, nv, nbody, nu), the total mass, the time step, each actuator's gear,
  joint, dof and whether its control is limited, whether some dof is damped,
  `qpos0`, every body's mass and world position (`xpos`), the diagonal of
  `mj_fullM` minus `dof_armature` on the dofs after the free joint (if any),
  those dofs' armature, and the limited joints' names and ranges (radians,
  metres; a ball joint's range is (0, max angle)).
- corpus.json: for every dm_control suite file (dm-control 1.0.50) and
  mjlab 1.6.0's Unitree G1 and Go1 (paths relative to SITE_PACKAGES): nq,
  nv, nu, nbody, the time step, qpos0, every body's mass, dof_armature,
  dof_damping, dof_frictionloss, each hinge or slide dof's joint stiffness
  (`springdamper` resolved), `mj_fullM` minus armature at qpos0, and the root body's (body 1) world
  position every 0.25 s of a 1 s passive settle (zero controls,
  semi-implicit Euler at the file's time step) from qpos0 with the joints
  that qpos0 puts beyond their ranges moved onto them (settle_qpos_start);
  then the same with MuJoCo's constraints made as stiff as it allows
  (settle_root_xpos_stiff: every row's solref 2·timestep, 1 and solimp
  0.99 0.999, the contacts' through `override` with margin 0, the joint
  limits', dry friction's, tendons' and equalities' through their own
  solref and solimp, `stiffen_rows`: `override` concerns contacts alone).
  Written by MuJoCo 4.0.1 (alone: `--only corpus SITE_PACKAGES`; until
  2026-12-08 by 4.0.0 with the contacts alone stiffened).
- manipulation.json: the same as corpus.json for robosuite 1.5.2's robots
  (`robosuite/models/assets/robots/*/robot.xml`) and Meta-World 3.1.1's
  Sawyer scenes (`metaworld/assets/sawyer_xyz/*.xml`), both installed by
  `scripts/fetch-robot-files`, and every body's `xpos` every 0.25 s of both
  settles (`settle_xpos`, `settle_xpos_stiff`: (time, positions)) and, at
  those times, the largest distance between one body's positions in the two
  runs at any step so far (`settle_spread`: (time, metres)); written by
  MuJoCo 4.0.1 (alone: `--only manipulation SITE_PACKAGES`).
- inertia.json: for inertia.xml (shell inertias of primitives, an L-shaped
  mesh under each `<mesh inertia>` mode, a flat mesh's shell inertia), every
  body's mass, centre of mass and inertia about it in the body frame. Last
  written by MuJoCo 4.0.1 (the flat mesh added; the other bodies' numbers
  as 4.0.0 wrote them).
- constraints.json: for constraints.xml (dry joint friction, a polynomial
  joint equality, a fixed tendon's range, a tendon spring with a dead band,
  a tendon equality and a position servo on a tendon), `qpos` every 0.25 s of 1 s under the constant
  controls CONSTRAINT_CTRL from qpos0, with MuJoCo's defaults and with its
  constraints made as stiff as it allows (every equality, dry-friction and
  limit row's solref 2·timestep, 1; solimp 0.99 0.999).
- actuators.json: for actuators.xml (one actuator per activation dynamics
  moreau maps — filter, filterexact through position's timeconst and on a
  tendon with an activation range, intvelocity's integrator with its
  range, cylinder, an `actearly` filter — among stateless ones), `qpos`
  and `act` every 0.05 s of 1 s under two phases of constant controls
  (ACTUATOR_CTRL).
- loops.json: for loops.xml (a four-bar linkage closed by `connect`, a
  weight welded to a hinged arm by `weld` with `relpose`, a pendulum on a
  spatial tendon's spring), as constraints.json with no control.
- wrapping.json: for wrapping.xml (spatial tendons over a sphere, around a
  cylinder with a side site, over a pulley, through a ring; a motor and a
  servo on two of them): at WRAP_CONFIGURATIONS random states (qpos, qvel
  uniform in [-1.2, 1.2], controls in [-3, 3], seed 0), `ten_length`,
  the dense `ten_J`, `ten_wrapnum`, `qfrc_passive` and `qfrc_actuator`;
  then `qpos` every 0.1 s of 1 s from qpos0 under WRAP_CTRL, with how many
  of the steps found each tendon wrapped (`ten_wrapnum` 4) or not (2);
  and WRAP_PROBES paths between random points around a sphere and a
  cylinder (radius 0.1, at the origin, the cylinder's axis z) with and
  without a random side site (mocap bodies carry the three sites):
  `ten_length` and `ten_wrapnum`, the geometry alone.
  This file alone: `... mujoco_reference.py --only wrapping`.
- mocap.json: for mocap.xml (a free box welded to mocap body `target`, an
  arm's tip held on mocap body `pointer` by a connect), the mocap bodies
  moved at t = 0 to MOCAP_POSES, then `qpos` every 0.25 s of 1 s, default
  and stiff as constraints.json. This file alone: `... mujoco_reference.py
  --only mocap` (MuJoCo 4.0.1).
- torsional.json: for torsional.xml (condim 4 and 6 in the elliptic
  cone: a sphere spinning on the floor, a ball rolling on it, a cube
  pinched about its pinch axis by a motor at 0.75 then 1.25 of the
  torsional bound), `qpos` and `qvel` every 0.05 s of 1 s from
  TORSIONAL_QVEL under TORSIONAL_CTRL. This file alone: `...
  mujoco_reference.py --only torsional` (MuJoCo 4.0.1).
- dampratio.json: for dampratio.xml (servos given `dampratio`), each
  actuator's `gainprm[0]` and `biasprm[0:3]` (kv is −biasprm[2]), then
  `qpos` every 0.1 s of 1 s under the constant controls DAMPRATIO_CTRL.
  This file alone: `... mujoco_reference.py --only dampratio`.
- hfield.json: for hfield.xml (an `elevation` height field, moved and
  turned), the surface's world height (mj_ray straight down) at points on
  its cells' edges along x.
- features.json and frames.json: for the hand-written models features.xml
  and frames.xml, the sizes and total mass, then at each pose (qpos0 and
  one other configuration) every body's `xpos`, `xquat` (w x y z) and the
  whole `mj_fullM` minus armature.
"""

import json
import os
import sys
from pathlib import Path

import mujoco
import numpy as np

HERE = Path(__file__).resolve().parent
GYMNASIUM_VERSION = "1.4.0"


def versions():
    return {
        "mujoco": mujoco.__version__,
        "numpy": np.__version__,
        "generated_by": "tests/data/mujoco/mujoco_reference.py",
    }


def floats(a):
    return [float(x) for x in np.asarray(a).ravel()]


def rows(a):
    return [floats(r) for r in np.asarray(a)]


def name(m, kind, i):
    return mujoco.mj_id2name(m, kind, i) or ""


def mass_matrix_without_armature(m, d):
    full = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, full)
    return full - np.diag(m.dof_armature)


def limits(m):
    out = []
    for j in range(m.njnt):
        if m.jnt_limited[j]:
            lo, hi = m.jnt_range[j]
            out.append([name(m, mujoco.mjtObj.mjOBJ_JOINT, j), float(lo), float(hi)])
    return out


def gymnasium_reference(path):
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    first = 6 if m.njnt > 0 and m.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE else 0
    full = mass_matrix_without_armature(m, d)
    joints = [int(m.actuator_trnid[a, 0]) for a in range(m.nu)]
    return {
        "file": path.name,
        "nq": m.nq,
        "nv": m.nv,
        "nbody": m.nbody,
        "nu": m.nu,
        "mass": float(sum(m.body_mass)),
        "timestep": float(m.opt.timestep),
        "gears": [float(m.actuator_gear[a, 0]) for a in range(m.nu)],
        "actuated_joints": [name(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in joints],
        "actuator_dofs": [int(m.jnt_dofadr[j]) for j in joints],
        "ctrl_limited": [bool(m.actuator_ctrllimited[a]) for a in range(m.nu)],
        "damped": bool(np.any(m.dof_damping != 0)),
        "qpos0": floats(m.qpos0),
        "body_mass": floats(m.body_mass),
        "xpos": rows(d.xpos),
        "first_hinge_dof": first,
        "mass_matrix_diag": [float(full[i, i]) for i in range(first, m.nv)],
        "armature": floats(m.dof_armature[first:]),
        "limits": limits(m),
    }


def poses_reference(xml, configurations):
    m = mujoco.MjModel.from_xml_path(str(xml))
    d = mujoco.MjData(m)
    poses = []
    for qpos in configurations:
        d.qpos[:] = qpos
        mujoco.mj_forward(m, d)
        poses.append(
            {
                "qpos": floats(d.qpos),
                "xpos": rows(d.xpos),
                "xquat": rows(d.xquat),
                "mass_matrix": rows(mass_matrix_without_armature(m, d)),
            }
        )
    return {
        "versions": versions(),
        "file": xml.name,
        "nq": m.nq,
        "nv": m.nv,
        "nbody": m.nbody,
        "mass": float(sum(m.body_mass)),
        "poses": poses,
    }


# The corpus: every dm_control suite file and mjlab's Unitree robots, read
# from the installed packages (paths relative to site-packages).
DM_CONTROL_VERSION = "1.0.50"
MJLAB_VERSION = "1.6.0"
CORPUS_EXTRA = [
    "mjlab/asset_zoo/robots/unitree_g1/xmls/g1.xml",
    "mjlab/asset_zoo/robots/unitree_go1/xmls/go1.xml",
]
# The manipulation files (robosuite's robots, Meta-World's Sawyer scenes),
# from the same site-packages directory.
ROBOSUITE_VERSION = "1.5.2"
METAWORLD_VERSION = "3.1.1"
# Seconds of passive settling, and how often the root body is recorded.
SETTLE_SECONDS = 1.0
SETTLE_EVERY = 0.25


def corpus_files(site):
    suite = sorted((site / "dm_control" / "suite").glob("*.xml"))
    return [str(f.relative_to(site)) for f in suite] + CORPUS_EXTRA


def manipulation_files(site):
    robots = sorted((site / "robosuite" / "models" / "assets" / "robots").glob("*/robot.xml"))
    scenes = sorted((site / "metaworld" / "assets" / "sawyer_xyz").glob("*.xml"))
    return [str(f.relative_to(site)) for f in robots + scenes]


def corpus(site):
    return {
        "versions": dict(versions(), dm_control=DM_CONTROL_VERSION, mjlab=MJLAB_VERSION),
        "settle_seconds": SETTLE_SECONDS,
        "models": [corpus_reference(site, rel) for rel in corpus_files(site)],
    }


def manipulation(site):
    return {
        "versions": dict(versions(), robosuite=ROBOSUITE_VERSION, metaworld=METAWORLD_VERSION),
        "settle_seconds": SETTLE_SECONDS,
        "models": [corpus_reference(site, rel, all_bodies=True) for rel in manipulation_files(site)],
    }


def settle(m, start):
    """(time, x, y, z) of body 1 every SETTLE_EVERY seconds of a passive
    settle from `start`, zero controls; the contacts at its end; every
    body's position (xpos) at those times after the start, to 1 µm; and
    every body's position at every step (an array, steps + 1 × nbody × 3)."""
    d = mujoco.MjData(m)
    d.qpos[:] = start
    mujoco.mj_forward(m, d)
    steps = int(round(SETTLE_SECONDS / m.opt.timestep))
    every = max(1, int(round(SETTLE_EVERY / m.opt.timestep)))
    root, bodies, trail = [], [], []
    for k in range(steps + 1):
        # After mj_step, xpos is still that of the state before the
        # step's integration: the positions of the current qpos.
        mujoco.mj_kinematics(m, d)
        trail.append(d.xpos.copy())
        if k % every == 0 or k == steps:
            root.append([float(d.time)] + floats(d.xpos[1] if m.nbody > 1 else np.zeros(3)))
            if k > 0:
                bodies.append([float(d.time), [[round(float(x), 6) for x in p] for p in d.xpos]])
        if k < steps:
            mujoco.mj_step(m, d)
    return root, int(d.ncon), bodies, np.array(trail)


def spread(trail, trail_stiff, times, timestep):
    """At each of `times`: the largest distance between one body's
    positions in the two runs at any step so far."""
    apart = np.maximum.accumulate(np.linalg.norm(trail - trail_stiff, axis=2).max(axis=1))
    return [[t, float(apart[int(round(t / timestep))])] for t in times]


def corpus_reference(site, rel, all_bodies=False):
    """Sizes, masses, the mass matrix at qpos0 and a passive settle of 1 s
    from qpos0 with zero controls, with the semi-implicit Euler integrator
    at the file's time step (whatever integrator the file names)."""
    m = mujoco.MjModel.from_xml_path(str(site / rel))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    full = mass_matrix_without_armature(m, d)
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_EULER
    # The settle starts at qpos0 with every limited hinge or slide that
    # qpos0 puts beyond its range moved onto the nearest end of it: from
    # beyond a range, MuJoCo's soft limit and a rigid stop push back
    # differently, and the first motions are not comparable.
    start = m.qpos0.copy()
    for j in range(m.njnt):
        hinge_or_slide = int(m.jnt_type[j]) in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
        if m.jnt_limited[j] and hinge_or_slide:
            a = m.jnt_qposadr[j]
            start[a] = min(max(start[a], m.jnt_range[j, 0]), m.jnt_range[j, 1])
    root, ncon, bodies, trail = settle(m, start)
    # The same with MuJoCo's constraints as stiff as it allows (time constant
    # 2 dt, critically damped, impedance 0.99 to 0.999, no margin): MuJoCo's
    # own approach to rigid contacts and limits.
    # Every row: the contacts (`override`, which concerns contacts alone),
    # the joint limits, dry friction, tendons and equalities (stiffen_rows).
    m.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_OVERRIDE
    m.opt.o_solref[:] = [2 * m.opt.timestep, 1.0]
    m.opt.o_solimp[:] = STIFF_SOLIMP
    m.opt.o_margin = 0.0
    stiffen_rows(m)
    stiff, _, bodies_stiff, trail_stiff = settle(m, start)
    out = {
        "file": rel,
        "nq": m.nq,
        "nv": m.nv,
        "nu": m.nu,
        "nbody": m.nbody,
        "timestep": float(m.opt.timestep),
        "qpos0": floats(m.qpos0),
        "body_mass": floats(m.body_mass),
        "armature": floats(m.dof_armature),
        "dof_damping": floats(m.dof_damping),
        "dof_frictionloss": floats(m.dof_frictionloss),
        # Each hinge or slide dof's joint stiffness (0 on other dofs).
        "dof_stiffness": [
            float(m.jnt_stiffness[m.dof_jntid[i]])
            if int(m.jnt_type[m.dof_jntid[i]]) in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
            else 0.0
            for i in range(m.nv)
        ],
        "mass_matrix": rows(full),
        "settle_qpos_start": floats(start),
        "settle_root_xpos": root,
        "settle_root_xpos_stiff": stiff,
        "settle_ncon": ncon,
    }
    if all_bodies:
        out["settle_xpos"] = bodies
        out["settle_xpos_stiff"] = bodies_stiff
        out["settle_spread"] = spread(trail, trail_stiff, [t for t, _ in bodies], m.opt.timestep)
    return out


def inertia_reference(xml):
    """Each body's mass, centre of mass and inertia about it, in the body frame."""
    m = mujoco.MjModel.from_xml_path(str(xml))
    bodies = []
    for b in range(1, m.nbody):
        r = np.zeros(9)
        mujoco.mju_quat2Mat(r, m.body_iquat[b])
        r = r.reshape(3, 3)
        bodies.append(
            {
                "name": name(m, mujoco.mjtObj.mjOBJ_BODY, b),
                "mass": float(m.body_mass[b]),
                "com": floats(m.body_ipos[b]),
                "inertia": rows(r @ np.diag(m.body_inertia[b]) @ r.T),
            }
        )
    return {"versions": versions(), "file": xml.name, "bodies": bodies}


CONSTRAINT_CTRL = [2.9, 5.0, 0.05, 0.3, 0.1, 0.02, 0.4]


# The mocap bodies' poses from t = 0: position, quaternion (w x y z).
MOCAP_POSES = [
    [0.1, -0.05, 1.3, 0.9238795325112867, 0.0, 0.3826834323650898, 0.0],
    [1.35, 0.2, 0.75, 1.0, 0.0, 0.0, 0.0],
]


STIFF_SOLIMP = [0.99, 0.999, 0.001, 0.5, 2.0]


def stiffen_rows(m):
    """Every equality, dry-friction, joint-limit and tendon row as stiff as
    MuJoCo allows (time constant 2 dt, critically damped, impedance 0.99 to
    0.999). The `override` flag concerns contacts only: each kind of
    constraint row has its own solref and solimp."""
    for ref, imp in [
        (m.eq_solref, m.eq_solimp),
        (m.dof_solref, m.dof_solimp),
        (m.jnt_solref, m.jnt_solimp),
        (m.tendon_solref_lim, m.tendon_solimp_lim),
        (m.tendon_solref_fri, m.tendon_solimp_fri),
    ]:
        ref[:] = [2 * m.opt.timestep, 1.0]
        imp[:] = STIFF_SOLIMP


def constraints_reference(xml, ctrl=CONSTRAINT_CTRL, mocap=None):
    """qpos every 0.25 s of 1 s under `ctrl` (and the mocap bodies at
    `mocap`'s poses), default and stiff."""
    out = {"versions": versions(), "ctrl": ctrl}
    if mocap is not None:
        out["mocap"] = mocap
    for key, stiff in [("qpos", False), ("qpos_stiff", True)]:
        m = mujoco.MjModel.from_xml_path(str(xml))
        if stiff:
            stiffen_rows(m)
        d = mujoco.MjData(m)
        d.ctrl[:] = ctrl
        for i, pose in enumerate(mocap or []):
            d.mocap_pos[i], d.mocap_quat[i] = pose[:3], pose[3:]
        steps = int(round(1.0 / m.opt.timestep))
        every = int(round(0.25 / m.opt.timestep))
        rows_out = []
        for k in range(steps + 1):
            if k % every == 0:
                rows_out.append([float(d.time)] + floats(d.qpos))
            if k < steps:
                mujoco.mj_step(m, d)
        out[key] = rows_out
    return out


# Two phases of constant controls (the second reverses most of them).
ACTUATOR_CTRL = [[3.0, 0.7, 0.8, 2.0, 40.0, 1.5, 1.4], [-0.5, -1.0, -0.3, -4.0, 5.0, -1.0, -2.0]]
ACTUATOR_SWITCH = 0.4


def actuators_reference(xml):
    """(time, qpos…, act…) every 0.05 s of 1 s: ACTUATOR_CTRL[0] until
    ACTUATOR_SWITCH s, then ACTUATOR_CTRL[1]."""
    m = mujoco.MjModel.from_xml_path(str(xml))
    d = mujoco.MjData(m)
    steps = int(round(1.0 / m.opt.timestep))
    every = int(round(0.05 / m.opt.timestep))
    switch = int(round(ACTUATOR_SWITCH / m.opt.timestep))
    rows_out = []
    for k in range(steps + 1):
        if k % every == 0:
            rows_out.append([float(d.time)] + floats(d.qpos) + floats(d.act))
        if k < steps:
            d.ctrl[:] = ACTUATOR_CTRL[0 if k < switch else 1]
            mujoco.mj_step(m, d)
    return {
        "versions": versions(),
        "ctrl": ACTUATOR_CTRL,
        "switch_steps": switch,
        "na": int(m.na),
        "rows": rows_out,
    }


DAMPRATIO_CTRL = [0.5, 0.2, -0.3, 0.8, 1.6, -0.4]


def dampratio_reference(xml):
    """The servos' gains as compiled, then a 1 s run."""
    m = mujoco.MjModel.from_xml_path(str(xml))
    d = mujoco.MjData(m)
    d.ctrl[:] = DAMPRATIO_CTRL
    steps = int(round(1.0 / m.opt.timestep))
    every = int(round(0.1 / m.opt.timestep))
    trajectory = []
    for k in range(steps + 1):
        if k % every == 0:
            trajectory.append([float(d.time)] + floats(d.qpos))
        if k < steps:
            mujoco.mj_step(m, d)
    return {
        "versions": versions(),
        "actuators": [name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, i) for i in range(m.nu)],
        "gain": floats(m.actuator_gainprm[:, 0]),
        "bias": rows(m.actuator_biasprm[:, :3]),
        "ctrl": DAMPRATIO_CTRL,
        "trajectory": trajectory,
    }


WRAP_CONFIGURATIONS = 40


def tendon_jacobian(m, d):
    """`ten_J` as a dense (ntendon, nv) matrix (MuJoCo 4 stores it sparse,
    its pattern in the model)."""
    out = np.zeros((m.ntendon, m.nv))
    for t in range(m.ntendon):
        adr, nnz = m.ten_J_rowadr[t], m.ten_J_rownnz[t]
        out[t, m.ten_J_colind[adr : adr + nnz]] = d.ten_J[adr : adr + nnz]
    return out
WRAP_CTRL = [2.0, 0.45]
WRAP_PROBES = 500

PROBE_XML = """
<mujoco>
  <worldbody>
    <geom name="sphere" type="sphere" size="0.1" contype="0" conaffinity="0"/>
    <geom name="cylinder" type="cylinder" size="0.1 0.2" contype="0" conaffinity="0"/>
    <body name="a" mocap="true"><site name="a"/></body>
    <body name="b" mocap="true"><site name="b"/></body>
    <body name="s" mocap="true"><site name="s"/></body>
  </worldbody>
  <tendon>
    <spatial><site site="a"/><geom geom="sphere"/><site site="b"/></spatial>
    <spatial><site site="a"/><geom geom="sphere" sidesite="s"/><site site="b"/></spatial>
    <spatial><site site="a"/><geom geom="cylinder"/><site site="b"/></spatial>
    <spatial><site site="a"/><geom geom="cylinder" sidesite="s"/><site site="b"/></spatial>
  </tendon>
</mujoco>
"""


def wrap_probes():
    """Tendon lengths around a sphere and a cylinder between random points."""
    m = mujoco.MjModel.from_xml_string(PROBE_XML)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(1)
    out = []
    for _ in range(WRAP_PROBES):
        # Half the probes in a plane through the axis's normal (z = 0),
        # where the cylinder's and the sphere's circles are the same.
        pts = rng.uniform(-0.3, 0.3, (3, 3))
        if rng.uniform() < 0.5:
            pts[:, 2] = 0.0
        d.mocap_pos[:] = pts
        mujoco.mj_forward(m, d)
        out.append(
            {
                "points": rows(pts),
                "ten_length": floats(d.ten_length),
                "ten_wrapnum": [int(x) for x in d.ten_wrapnum],
            }
        )
    return out


def wrapping_reference(xml):
    """Tendon lengths, Jacobians and forces at random states, then a 1 s run."""
    m = mujoco.MjModel.from_xml_path(str(xml))
    d = mujoco.MjData(m)
    rng = np.random.default_rng(0)
    states = []
    for _ in range(WRAP_CONFIGURATIONS):
        d.qpos[:] = rng.uniform(-1.2, 1.2, m.nq)
        d.qvel[:] = rng.uniform(-1.2, 1.2, m.nv)
        d.ctrl[:] = rng.uniform(-3.0, 3.0, m.nu)
        mujoco.mj_forward(m, d)
        states.append(
            {
                "qpos": floats(d.qpos),
                "qvel": floats(d.qvel),
                "ctrl": floats(d.ctrl),
                "ten_length": floats(d.ten_length),
                "ten_J": rows(tendon_jacobian(m, d)),
                "ten_wrapnum": [int(x) for x in d.ten_wrapnum],
                "qfrc_passive": floats(d.qfrc_passive),
                "qfrc_actuator": floats(d.qfrc_actuator),
            }
        )
    d = mujoco.MjData(m)
    d.ctrl[:] = WRAP_CTRL
    steps = int(round(1.0 / m.opt.timestep))
    every = int(round(0.1 / m.opt.timestep))
    trajectory = []
    points = np.zeros((m.ntendon, 6), dtype=int)
    for k in range(steps + 1):
        if k % every == 0:
            trajectory.append([float(d.time)] + floats(d.qpos))
        if k < steps:
            mujoco.mj_step(m, d)
            for t in range(m.ntendon):
                points[t, d.ten_wrapnum[t]] += 1
    return {
        "versions": versions(),
        "tendons": [name(m, mujoco.mjtObj.mjOBJ_TENDON, t) for t in range(m.ntendon)],
        "states": states,
        "ctrl": WRAP_CTRL,
        "trajectory": trajectory,
        "steps_by_path_points": [[int(x) for x in r] for r in points],
        "probe_radius": 0.1,
        "probes": wrap_probes(),
    }


def hfield_reference(xml):
    """Heights of the height field (MuJoCo's mj_ray straight down) at
    points on its cells' edges along x, where any triangulation of the
    cells agrees: world (x, y, z)."""
    m = mujoco.MjModel.from_xml_path(str(xml))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    rx, ry = m.hfield_size[0][:2]
    nrow, ncol = int(m.hfield_nrow[0]), int(m.hfield_ncol[0])
    rot = d.geom_xmat[0].reshape(3, 3)
    points = []
    for r in range(nrow):
        for c in range(ncol - 1):
            for frac in (0.25, 0.5):
                local = np.array(
                    [-rx + 2 * rx * (c + frac) / (ncol - 1), -ry + 2 * ry * r / (nrow - 1), 0.0]
                )
                # (The outer rows, moved a hair inside.)
                local[1] = np.clip(local[1], -ry + 1e-9, ry - 1e-9)
                world = d.geom_xpos[0] + rot @ local
                start = np.array([world[0], world[1], 10.0])
                geomid = np.array([-1], dtype=np.int32)
                dist = mujoco.mj_ray(m, d, start, np.array([0.0, 0.0, -1.0]), None, 1, -1, geomid)
                points.append([float(world[0]), float(world[1]), float(10.0 - dist)])
    return {"versions": versions(), "points": points}


# torsional.xml: the spinner's and the roller's initial velocities (qvel:
# the free joints' linear velocity in world axes, angular in the body's:
# both moreau's at the identity orientation), the pinch's two phases of
# controls (turn, push) and when the second starts.
TORSIONAL_QVEL = {"spinner": [0, 0, 0, 0, 0, 5.0], "roller": [0.5, 0, 0, 0, 1.0, 0]}
TORSIONAL_CTRL = [[0.15, -10.0], [0.25, -10.0]]
TORSIONAL_SWITCH = 0.5


def torsional_reference(xml):
    """qpos and qvel every 0.05 s of 1 s from the initial velocities, under
    the pinch's controls. (MuJoCo's contacts at their defaults: its
    override to the stiffest solref weakens the elliptic cone's friction
    rows here, the roller then barely slowing.)"""
    m = mujoco.MjModel.from_xml_path(str(xml))
    d = mujoco.MjData(m)
    for name, qvel in TORSIONAL_QVEL.items():
        adr = m.jnt_dofadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)]
        d.qvel[adr : adr + 6] = qvel
    steps = int(round(1.0 / m.opt.timestep))
    every = int(round(0.05 / m.opt.timestep))
    switch = int(round(TORSIONAL_SWITCH / m.opt.timestep))
    samples = []
    for k in range(steps + 1):
        if k % every == 0:
            samples.append({"t": float(d.time), "qpos": floats(d.qpos), "qvel": floats(d.qvel)})
        if k < steps:
            d.ctrl[:] = TORSIONAL_CTRL[0 if k < switch else 1]
            mujoco.mj_step(m, d)
    return {
        "versions": versions(),
        "qvel0": TORSIONAL_QVEL,
        "ctrl": TORSIONAL_CTRL,
        "switch": TORSIONAL_SWITCH,
        "samples": samples,
    }


def write(path, value):
    path.write_text(json.dumps(value, indent=1) + "\n")
    print(f"wrote {path.relative_to(HERE.parent.parent.parent)}")


def gymnasium_assets(usage):
    """Gymnasium's MuJoCo assets from argv[1] or $MOREAU_ROBOT_FILES (a
    site-packages directory); exits with `usage` without one. Notes a MuJoCo
    other than the committed files' 4.0.0."""
    if mujoco.__version__ != "4.0.0":
        print(
            f"note: MuJoCo {mujoco.__version__}; the committed files are MuJoCo 4.0.0's",
            file=sys.stderr,
        )
    site = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MOREAU_ROBOT_FILES")
    if not site:
        sys.exit(usage)
    return Path(site) / "gymnasium" / "envs" / "mujoco" / "assets"


def main():
    if sys.argv[1:3] == ["--only", "wrapping"]:
        write(HERE / "wrapping.json", wrapping_reference(HERE / "wrapping.xml"))
        return
    if sys.argv[1:3] == ["--only", "dampratio"]:
        write(HERE / "dampratio.json", dampratio_reference(HERE / "dampratio.xml"))
        return
    if sys.argv[1:3] == ["--only", "torsional"]:
        write(HERE / "torsional.json", torsional_reference(HERE / "torsional.xml"))
        return
    if sys.argv[1:3] == ["--only", "mocap"]:
        write(HERE / "mocap.json", constraints_reference(HERE / "mocap.xml", ctrl=[], mocap=MOCAP_POSES))
        return
    if sys.argv[1:3] == ["--only", "manipulation"]:
        write(HERE / "manipulation.json", manipulation(Path(sys.argv[3])))
        return
    if sys.argv[1:3] == ["--only", "corpus"]:
        write(HERE / "corpus.json", corpus(Path(sys.argv[3])))
        return
    assets = gymnasium_assets(__doc__)
    site = assets.parent.parent.parent.parent
    write(HERE / "corpus.json", corpus(site))
    files = sorted(assets.glob("*.xml"))
    if not files:
        sys.exit(f"no MJCF files in {assets}")
    write(
        HERE / "gymnasium.json",
        {
            "versions": dict(versions(), gymnasium=GYMNASIUM_VERSION),
            "models": [gymnasium_reference(f) for f in files],
        },
    )

    # qpos0, then the hinges and slides moved and the ball joint turned
    # (quaternion w x y z ∝ (4, 1, -1.5, 2)).
    features = mujoco.MjModel.from_xml_path(str(HERE / "features.xml"))
    ball = np.array([4.0, 1.0, -1.5, 2.0])
    moved = np.concatenate([[0.1, 0.4, -0.3, 0.5], ball / np.linalg.norm(ball)])
    write(
        HERE / "features.json",
        poses_reference(HERE / "features.xml", [features.qpos0.copy(), moved]),
    )
    if (site / "robosuite").is_dir() and (site / "metaworld").is_dir():
        write(HERE / "manipulation.json", manipulation(site))
    write(HERE / "inertia.json", inertia_reference(HERE / "inertia.xml"))
    write(HERE / "constraints.json", constraints_reference(HERE / "constraints.xml"))
    write(HERE / "actuators.json", actuators_reference(HERE / "actuators.xml"))
    write(HERE / "hfield.json", hfield_reference(HERE / "hfield.xml"))
    write(HERE / "loops.json", constraints_reference(HERE / "loops.xml", ctrl=[]))
    write(HERE / "mocap.json", constraints_reference(HERE / "mocap.xml", ctrl=[], mocap=MOCAP_POSES))
    write(HERE / "torsional.json", torsional_reference(HERE / "torsional.xml"))
    write(HERE / "wrapping.json", wrapping_reference(HERE / "wrapping.xml"))
    write(HERE / "dampratio.json", dampratio_reference(HERE / "dampratio.xml"))
    write(
        HERE / "frames.json",
        poses_reference(HERE / "frames.xml", [np.zeros(2), np.array([0.7, -0.3])]),
    )


if __name__ == "__main__":
    main()
