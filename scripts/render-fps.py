"""Frames per second of the batched renderer: 64 worlds of Gymnasium's ant
at 256 x 256 in one BatchSim.render call (best and median of 5, after a
first call that makes the renderer).

    MOREAU_ROBOT_FILES=target/robot-files/venv/lib/python3.11/site-packages \
        target/python-venv/bin/python scripts/render-fps.py
"""
import os
import pathlib
import time
import warnings

import numpy as np
import moreau

warnings.simplefilter("ignore")
root = pathlib.Path(os.environ["MOREAU_ROBOT_FILES"])
ant = moreau.load(str(root / "gymnasium/envs/mujoco/assets/ant.xml"))
batch = moreau.BatchSim(ant, 64)
batch.render(width=256, height=256)  # the renderer made, shaders compiled
times = []
for _ in range(5):
    t = time.perf_counter()
    frames = batch.render(width=256, height=256)
    times.append(time.perf_counter() - t)
best = min(times)
print(f"64 x 256x256: {frames.shape}, best of 5 {best*1e3:.0f} ms, {64/best:.0f} frames/s; median {np.median(times)*1e3:.0f} ms")
