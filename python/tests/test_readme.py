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
