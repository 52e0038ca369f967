#!/usr/bin/env python3
"""Reference derivatives of the rigid-body dynamics from Pinocchio, for
tests/dynamics_derivatives.rs: `computeABADerivatives` and
`computeRNEADerivatives` (at a = ABA's q̈) on example-robot-data's Solo-12
(free flyer), Talos (reduced, free flyer) and UR5 (fixed), at the state
`test_state` of tests/urdf_robots.rs builds (joint values 0.3 sin(k+1) and
velocities 0.5 cos(k+1), k the rank of the joint's name in sorted order;
the base at (0.1, -0.2, 0.3), quaternion ∝ (0.1, 0.2, 0.3, 0.9), twist
(0.1, 0.2, -0.3, 0.4, -0.5, 0.6)) and torques 2 sin(3k + 1) by the dof's
index in Pinocchio's order. Writes derivatives.json beside this script with
each joint's name and its q/v offsets, so the test maps Pinocchio's order
onto moreau's by name.

    python3 -m venv /tmp/pinvenv && /tmp/pinvenv/bin/pip install pin==4.1.0
    scripts/fetch-robot-files
    /tmp/pinvenv/bin/python tests/data/pinocchio/derivatives_reference.py SITE_PACKAGES
"""

import json
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin

ROBOTS = [
    ("solo_description/robots/solo12.urdf", True),
    ("talos_data/robots/talos_reduced.urdf", True),
    ("ur_description/urdf/ur5_robot.urdf", False),
]


def state(model, floating):
    q = pin.neutral(model)
    v = np.zeros(model.nv)
    names = sorted(
        (model.names[j], j) for j in range(1, model.njoints) if model.names[j] != "root_joint"
    )
    for k, (_, j) in enumerate(names):
        q[model.idx_qs[j]] = 0.3 * np.sin(k + 1)
        v[model.idx_vs[j]] = 0.5 * np.cos(k + 1)
    if floating:
        quat = np.array([0.1, 0.2, 0.3, 0.9])
        quat /= np.linalg.norm(quat)
        q[:7] = [0.1, -0.2, 0.3, *quat]
        v[:6] = [0.1, 0.2, -0.3, 0.4, -0.5, 0.6]
    tau = np.array([2.0 * np.sin(3 * k + 1) for k in range(model.nv)])
    return q, v, tau


def main():
    site = Path(sys.argv[1])
    root = site / "cmeel.prefix/share/example-robot-data/robots"
    out = []
    for file, floating in ROBOTS:
        path = str(root / file)
        model = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating
                 else pin.buildModelFromUrdf(path))
        data = model.createData()
        q, v, tau = state(model, floating)
        ddq_dq, ddq_dv, minv = (np.array(m) for m in pin.computeABADerivatives(model, data, q, v, tau))
        minv = np.triu(minv) + np.triu(minv, 1).T
        ddq = np.array(data.ddq)
        dtau_dq, dtau_dv, _ = (np.array(m) for m in pin.computeRNEADerivatives(model, data, q, v, ddq))
        out.append({
            "file": file,
            "floating": floating,
            "joints": [
                {"name": "root" if model.names[j] == "root_joint" else model.names[j],
                 "idx_q": model.idx_qs[j], "idx_v": model.idx_vs[j],
                 "nq": model.nqs[j], "nv": model.nvs[j]}
                for j in range(1, model.njoints)
            ],
            "q": q.tolist(), "v": v.tolist(), "tau": tau.tolist(), "ddq": ddq.tolist(),
            "ddq_dq": ddq_dq.tolist(), "ddq_dv": ddq_dv.tolist(), "ddq_dtau": minv.tolist(),
            "dtau_dq": dtau_dq.tolist(), "dtau_dv": dtau_dv.tolist(),
            "pinocchio": pin.__version__,
        })
    dest = Path(__file__).with_name("derivatives.json")
    dest.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
