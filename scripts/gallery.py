"""Every Gymnasium v5 robot and every built-in scene, drawn by moreau's
renderer, in one picture (docs/gallery.png, shown in the README).

The Gymnasium tasks moreau serves are drawn as `moreau.gym.make(task,
render_mode="rgb_array")` draws them after `reset(seed=0)` (Gymnasium's
camera options); the files of the others (HumanoidStandup, Pusher) and the
built-in scenes at their initial states, from the default camera. Needs the Python package with its `gym` extra (Pillow
comes with moviepy), as `scripts/test` installs it:

    target/python-venv/bin/python scripts/gallery.py [--out docs/gallery.png]
"""
import argparse
import time
import warnings

import numpy as np
from PIL import Image, ImageDraw, ImageFont

import moreau
import moreau.gym

# Gymnasium's v5 MuJoCo tasks and their files: those moreau.gym serves are
# drawn through it, the others (None) from their file.
TASKS = {
    "Ant-v5": "ant.xml",
    "HalfCheetah-v5": "half_cheetah.xml",
    "Hopper-v5": "hopper.xml",
    "Walker2d-v5": "walker2d_v5.xml",
    "Humanoid-v5": "humanoid.xml",
    "HumanoidStandup-v5": "humanoidstandup.xml",
    "Swimmer-v5": "swimmer.xml",
    "Reacher-v5": "reacher.xml",
    "Pusher-v5": "pusher_v5.xml",
    "InvertedPendulum-v5": "inverted_pendulum.xml",
    "InvertedDoublePendulum-v5": "inverted_double_pendulum.xml",
}
SIZE = 240


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/gallery.png")
    args = parser.parse_args()
    warnings.simplefilter("ignore", UserWarning)
    start = time.perf_counter()
    tiles = []
    for task, file in TASKS.items():
        if task in moreau.gym.TASKS:
            env = moreau.gym.make(task, render_mode="rgb_array", width=SIZE, height=SIZE)
            env.reset(seed=0)
            tiles.append((task, env.render()))
            env.close()
        else:
            sim = moreau.Simulator(moreau.load(str(moreau.gym.gymnasium_assets() / file)))
            tiles.append((f"{file} (file)", sim.render(width=SIZE, height=SIZE)))
    for name in moreau.scene_names():
        sim = moreau.Simulator(moreau.scene(name))
        tiles.append((name, sim.render(width=SIZE, height=SIZE)))
    drawn = time.perf_counter() - start
    cols, label = 5, 26
    rows = -(-len(tiles) // cols)
    sheet = Image.new("RGB", (cols * SIZE, rows * (SIZE + label)), "white")
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default(size=16)
    for k, (name, image) in enumerate(tiles):
        x, y = (k % cols) * SIZE, (k // cols) * (SIZE + label)
        sheet.paste(Image.fromarray(np.asarray(image)), (x, y + label))
        width = draw.textlength(name, font=font)
        draw.text((x + (SIZE - width) / 2, y + 4), name, fill="black", font=font)
    sheet.save(args.out, optimize=True)
    print(f"wrote {args.out}: {len(tiles)} images of {SIZE} x {SIZE}, drawn in {drawn:.1f} s")


if __name__ == "__main__":
    main()
