"""The pytest tutorial, as written: a fresh project records once, then replays."""

from __future__ import annotations

import pytest

from tests.harness.pytest_plugin.conftest import ROOT

pytest_plugins = ["pytester"]

TUTORIALS = ROOT / "docs" / "tutorials"
# Where each file of the project is written: the bot and its scenario come from the first
# tutorial, the pytest files from the pytest one.
FILES = {
    "mybot.py": "own-bot.md",
    "scenarios/echo.yaml": "own-bot.md",
    "conftest.py": "pytest.md",
    "test_echo.py": "pytest.md",
    "pytest.ini": "pytest.md",
}


def _block(page: str, first_line: str) -> str:
    """The code block of the page that starts with ``first_line``."""
    start = page.index(f"{first_line}\n")
    return page[start : page.index("```", start)]


def test_the_tutorial_project_records_once_then_replays(pytester: pytest.Pytester) -> None:
    for name, tutorial in FILES.items():
        page = (TUTORIALS / tutorial).read_text(encoding="utf-8")
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_block(page, f"# {name}"), encoding="utf-8")
    recorded = pytester.runpytest("-p", "no:cacheprovider", "--harness-record-mode", "once")
    recorded.assert_outcomes(passed=2)
    assert (pytester.path / "recordings" / "test_echo").is_dir()
    assert (pytester.path / "scenarios" / "fixtures" / "echo" / "meta.json").is_file()
    replayed = pytester.runpytest("-p", "no:cacheprovider")
    replayed.assert_outcomes(passed=2)
    replayed.stdout.fnmatch_lines(["scenarios/echo.yaml .*", "test_echo.py .*"])
