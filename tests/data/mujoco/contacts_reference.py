#!/usr/bin/env python3
"""MuJoCo's collision detection and Delassus matrices on Gymnasium's ant and
humanoid, for moreau's stage tests (tests/mujoco_contacts.rs): what MuJoCo
finds and computes from the same files that moreau loads, written as JSON
(contacts.json) next to this script.

Not run by CI: the JSON file is committed. To regenerate it:

    python3 -m venv /tmp/mjvenv
    /tmp/mjvenv/bin/pip install mujoco==4.0.0
    scripts/fetch-robot-files            # prints the site-packages directory
    /tmp/mjvenv/bin/python tests/data/mujoco/contacts_reference.py SITE_PACKAGES

SITE_PACKAGES is the directory that `scripts/fetch-robot-files` prints
(Gymnasium 1.4.0's assets under gymnasium/envs/mujoco/assets); without it,
the script reads $MOREAU_ROBOT_FILES. Deterministic: no random numbers.

The poses: for pose k = 0 .. 3, qpos0 with each hinge joint i moved by
0.15 sin(1.3 i + 0.7 k + 0.5) (clipped to its range), the free joint's
quaternion turned by ANGLES[k] rad about AXES[k] (normalized; the
world-frame rotation applied after qpos0's): nearly upright (0.05, 0.1
rad), leaning (1.5 rad about (1, 2, 0.5)), lying on its side (π/2 about
x), and the root lowered or raised so that the deepest
geometry against the floor (`mj_geomDistance`) is 2 cm deep: several
geometries touch the floor or are within MuJoCo's margin of it.

Output, contacts.json: "versions", and per file ("ant.xml",
"humanoid.xml") and pose:
- "qpos": MuJoCo's coordinates (free joint quaternion w x y z);
- "contacts": `d.contact[:d.ncon]` after `mj_forward`, each with the two
  geometries' names (`geom1`, `geom2`), `dist`, `pos` (midway between the
  surfaces), `frame` (three rows: the normal, from geom1 to geom2, then
  two tangents) and the pair's `margin` (`includemargin`: MuJoCo keeps
  a contact whose `dist` is below it);
- "delassus": `G = J M⁻¹ Jᵀ` (3·ncon square, row-major), with for contact
  c the rows `J[3c + r] = frame[(r + 1) % 3] · (jacp(geom2's body, pos) −
  jacp(geom1's body, pos))`, r = 0, 1, 2 (the two tangents, then the
  normal: moreau's order), `jacp` MuJoCo's `mj_jac` translational Jacobian
  at the world point `pos`, and `M` MuJoCo's `mj_fullM` (armature
  included). G maps impulses at the contacts to changes of the contacts'
  relative velocities, whatever the generalized coordinates.
"""

import json
import os
import sys
from pathlib import Path

import mujoco
import numpy as np

HERE = Path(__file__).resolve().parent
FILES = ["ant.xml", "humanoid.xml"]
DEPTH = 0.02
ANGLES = [0.05, 0.1, 1.5, 1.5708]
AXES = [[1.0, 2.0, 0.5]] * 3 + [[1.0, 0.0, 0.0]]


def floats(a):
    return [float(x) for x in np.asarray(a).ravel()]


def name(m, kind, i):
    return mujoco.mj_id2name(m, kind, i) or ""


def quat_mul(a, b):
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array(
        [
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
        ]
    )


def deepest_floor_distance(m, d, floor):
    fromto = np.zeros(6)
    best = np.inf
    for g in range(m.ngeom):
        if g == floor or m.geom_bodyid[g] == 0:
            continue
        best = min(best, mujoco.mj_geomDistance(m, d, g, floor, 10.0, fromto))
    return best


def pose(m, k):
    q = m.qpos0.copy()
    for j in range(m.njnt):
        if m.jnt_type[j] != mujoco.mjtJoint.mjJNT_HINGE:
            continue
        a = m.jnt_qposadr[j]
        q[a] += 0.15 * np.sin(1.3 * j + 0.7 * k + 0.5)
        if m.jnt_limited[j]:
            lo, hi = m.jnt_range[j]
            q[a] = np.clip(q[a], lo, hi)
    axis = np.array(AXES[k])
    axis /= np.linalg.norm(axis)
    angle = ANGLES[k]
    turn = np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis])
    q[3:7] = quat_mul(turn, q[3:7])
    return q


def delassus(m, d):
    nc = d.ncon
    jac = np.zeros((3 * nc, m.nv))
    jp1, jp2 = np.zeros((3, m.nv)), np.zeros((3, m.nv))
    for c in range(nc):
        con = d.contact[c]
        b1, b2 = m.geom_bodyid[con.geom1], m.geom_bodyid[con.geom2]
        mujoco.mj_jac(m, d, jp1, None, con.pos, b1)
        mujoco.mj_jac(m, d, jp2, None, con.pos, b2)
        frame = con.frame.reshape(3, 3)
        for r in range(3):
            jac[3 * c + r] = frame[(r + 1) % 3] @ (jp2 - jp1)
    full = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, full)
    return jac @ np.linalg.solve(full, jac.T)


def main():
    site = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MOREAU_ROBOT_FILES")
    if not site:
        sys.exit("usage: contacts_reference.py SITE_PACKAGES (or set MOREAU_ROBOT_FILES)")
    assets = Path(site) / "gymnasium/envs/mujoco/assets"
    out = {
        "versions": {
            "mujoco": mujoco.__version__,
            "numpy": np.__version__,
            "generated_by": "tests/data/mujoco/contacts_reference.py",
        },
        "files": [],
    }
    for file in FILES:
        m = mujoco.MjModel.from_xml_path(str(assets / file))
        d = mujoco.MjData(m)
        floor = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "floor")
        poses = []
        for k in range(len(ANGLES)):
            d.qpos[:] = pose(m, k)
            d.qvel[:] = 0.0
            mujoco.mj_forward(m, d)
            d.qpos[2] -= deepest_floor_distance(m, d, floor) + DEPTH
            mujoco.mj_forward(m, d)
            contacts = []
            for c in range(d.ncon):
                con = d.contact[c]
                contacts.append(
                    {
                        "geom1": name(m, mujoco.mjtObj.mjOBJ_GEOM, con.geom1),
                        "geom2": name(m, mujoco.mjtObj.mjOBJ_GEOM, con.geom2),
                        "dist": float(con.dist),
                        "pos": floats(con.pos),
                        "frame": floats(con.frame),
                        "margin": float(con.includemargin),
                    }
                )
            poses.append(
                {
                    "qpos": floats(d.qpos),
                    "contacts": contacts,
                    "delassus": floats(delassus(m, d)),
                }
            )
        out["files"].append({"file": file, "poses": poses})
        print(file, [len(p["contacts"]) for p in poses])
    (HERE / "contacts.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
