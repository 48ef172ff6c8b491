"""A fixture replayed again in one process reads its scenario once, and a changed one afresh."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import harness.replay.playback as playback
from harness.fixture import load_fixture
from harness.replay.playback import replay_fixture
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import Scenario, parse_scenario

FIXTURE = Path(__file__).resolve().parents[3] / "scenarios" / "booking" / "fixtures"


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The descriptions of the scenarios replays read from YAML, in order."""
    seen: list[str] = []

    def counting(text: str, *, path: Path | str | None = None) -> Scenario:
        scenario = parse_scenario(text, path=path)
        seen.append(scenario.description)
        return scenario

    monkeypatch.setattr(playback, "parse_scenario", counting)
    return seen


async def test_a_fixture_replayed_again_reads_its_scenario_once(
    tmp_path: Path, parses: list[str]
) -> None:
    copy = shutil.copytree(FIXTURE / "happy_confirm_button", tmp_path / "happy")
    runner = Runner(RunOptions())
    first = await replay_fixture(runner, load_fixture(copy))
    again = await replay_fixture(runner, load_fixture(copy))
    assert (first.status, again.status) == ("same", "same")
    assert len(parses) == 1


async def test_a_changed_scenario_is_read_again(tmp_path: Path, parses: list[str]) -> None:
    copy = shutil.copytree(FIXTURE / "happy_confirm_button", tmp_path / "happy")
    runner = Runner(RunOptions())
    await replay_fixture(runner, load_fixture(copy))
    meta: dict[str, Any] = json.loads((copy / "meta.json").read_text(encoding="utf-8"))
    meta["scenario_yaml"] = meta["scenario_yaml"].replace(
        "description: A guest", "description: Edited. A guest"
    )
    (copy / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    result = await replay_fixture(runner, load_fixture(copy))
    assert result.status == "same"
    assert len(parses) == 2
    assert parses[1].startswith("Edited. A guest")
