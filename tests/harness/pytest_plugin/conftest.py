"""Projects for the plugin's tests: a pytest ini, scenario files and bots, in pytester's folder."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ROOT / "scenarios" / "booking"

INI = """\
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
{extra}
"""

WRONG_DAY = """\
name: the wrong day is expected
steps:
  - say: A table on friday at 8pm please
  - expect: {reply_contains: Saturday}
invariants: [every_inbound_answered]
"""


def write_ini(pytester: pytest.Pytester, **settings: str) -> None:
    """A pytest.ini with pytest-asyncio in auto mode and the ``harness_*`` settings given."""
    extra = "\n".join(f"{key} = {value}" for key, value in settings.items())
    pytester.makefile(".ini", pytest=INI.format(extra=extra))


def bundled(pytester: pytest.Pytester, *stems: str, folder: str = "scenarios") -> Path:
    """Copy bundled scenarios (and their recorded fixtures) into the project."""
    target = pytester.path / folder
    (target / "fixtures").mkdir(parents=True, exist_ok=True)
    for stem in stems:
        (target / f"{stem}.yaml").write_bytes((SCENARIOS / f"{stem}.yaml").read_bytes())
        fixture = SCENARIOS / "fixtures" / stem
        for file in fixture.rglob("*"):
            if file.is_file():
                copy = target / "fixtures" / stem / file.relative_to(fixture)
                copy.parent.mkdir(parents=True, exist_ok=True)
                copy.write_bytes(file.read_bytes())
    return target


@pytest.fixture
def echo_bot() -> str:
    """The echo bot of the first tutorial, as written there."""
    tutorial = (ROOT / "docs" / "tutorials" / "own-bot.md").read_text(encoding="utf-8")
    start = tutorial.index("# mybot.py\n")
    return tutorial[start : tutorial.index("```", start)]
