"""The README's pytest section, as written: a fresh project records once, then replays."""

from __future__ import annotations

import pytest

from tests.harness.pytest_plugin.conftest import ROOT

pytest_plugins = ["pytester"]


def _block(readme: str, first_line: str) -> str:
    """The code block of the README that starts with ``first_line``."""
    start = readme.index(f"{first_line}\n")
    return readme[start : readme.index("```", start)]


def test_the_readme_project_records_once_then_replays(pytester: pytest.Pytester) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in ("mybot.py", "conftest.py", "test_echo.py", "pytest.ini", "scenarios/echo.yaml"):
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_block(readme, f"# {name}"), encoding="utf-8")
    recorded = pytester.runpytest("-p", "no:cacheprovider", "--harness-record-mode", "once")
    recorded.assert_outcomes(passed=2)
    assert (pytester.path / "recordings" / "test_echo").is_dir()
    assert (pytester.path / "scenarios" / "fixtures" / "echo" / "meta.json").is_file()
    replayed = pytester.runpytest("-p", "no:cacheprovider")
    replayed.assert_outcomes(passed=2)
    replayed.stdout.fnmatch_lines(["scenarios/echo.yaml .*", "test_echo.py .*"])
