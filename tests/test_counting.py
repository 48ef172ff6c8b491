"""The counted run behind RELIABILITY.md draws the same examples whatever the project's code holds.

Hypothesis also tries literal constants it finds in the project's modules; the
counted run (``reliability/counting.py``) leaves them out, so an edit to the
code under test does not move the counts CI compares.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PROJECT_MODULE = "MAGIC = 987654321\n"
TEST_MODULE = """\
from hypothesis import given, settings, strategies as st

import magic_numbers  # a module of the project: Hypothesis reads its constants


@settings(max_examples=1000)
@given(st.integers())
def test_never_the_constant(x):
    assert x != 987654321
"""


def _pytest(folder: Path, *options: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(ROOT), str(folder)))}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options]
    return subprocess.run(
        [*command, "test_constant.py"], cwd=folder, env=env, capture_output=True, text=True
    )


@pytest.mark.slow
def test_the_counted_run_never_draws_a_constant_of_the_project(tmp_path: Path) -> None:
    (tmp_path / "magic_numbers.py").write_text(PROJECT_MODULE, encoding="utf-8")
    (tmp_path / "test_constant.py").write_text(TEST_MODULE, encoding="utf-8")
    # Hypothesis on its own finds the project's constant among a thousand integers ...
    plain = _pytest(tmp_path, "--hypothesis-seed=0")
    assert plain.returncode == 1, plain.stdout
    assert "987654321" in plain.stdout
    # ... the counted run never tries it, and counts every example it did try.
    out = tmp_path / "counts.jsonl"
    counted = _pytest(tmp_path, "-p", "reliability.counting", "--counts-out", str(out))
    assert counted.returncode == 0, counted.stdout
    (line,) = out.read_text(encoding="utf-8").splitlines()
    assert json.loads(line) | {"recorded": {}} == {
        "test": "test_constant.py::test_never_the_constant",
        "name": "test_never_the_constant",
        "outcome": "passed",
        "examples": 1000,
        "failed": 0,
        "recorded": {},
    }
