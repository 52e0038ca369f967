"""The README's Python blocks run as written (each in a fresh namespace,
in a scratch folder)."""

import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_the_readme_has_python_blocks():
    assert len(blocks()) >= 2


def test_every_readme_python_block_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for code in blocks():
        namespace = {"__name__": "__readme__"}
        exec(compile(code, str(README), "exec"), namespace)


def test_the_readme_gallery_command_draws_every_robot(tmp_path):
    """`scripts/gallery.py`, which the README's picture comes from, draws
    Gymnasium's 11 robots and the 9 built-in scenes, none of them blank."""
    import subprocess
    import sys

    import numpy as np
    from PIL import Image

    root = README.parent
    assert "scripts/gallery.py" in README.read_text(encoding="utf-8")
    out = tmp_path / "gallery.png"
    subprocess.run([sys.executable, str(root / "scripts/gallery.py"), "--out", str(out)], check=True)
    sheet = np.asarray(Image.open(out).convert("RGB"))
    assert sheet.shape == (4 * (240 + 26), 5 * 240, 3)
    for k in range(20):
        y, x = (k // 5) * 266 + 26, (k % 5) * 240
        tile = sheet[y : y + 240, x : x + 240]
        assert tile.std() > 10, f"tile {k} is blank"
