"""The CI gate: every committed fixture replays the same, and the commands say so by exit code.

``harness regress scenarios/booking/fixtures`` is what CI runs: exit 0 when
every recorded conversation replays unchanged with the pinned policy, 3 when a
candidate agent diverges. Bad input is exit 2 with one line; a fixture whose
log a crash tore still replays, with a warning.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.cli.main import EXIT_DIVERGED, EXIT_OK, EXIT_USAGE
from harness.fixture import FixtureWarning, load_fixture
from harness.replay.playback import replay_fixture
from harness.suites.runner import Runner, RunOptions
from tests.support.cli import harness as _harness

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios" / "booking"
FIXTURES = SCENARIOS / "fixtures"
COMMITTED = sorted(p.parent.name for p in FIXTURES.glob("*/meta.json"))


def test_every_bundled_scenario_has_a_committed_fixture() -> None:
    assert sorted(p.stem for p in SCENARIOS.glob("*.yaml")) == COMMITTED
    assert len(COMMITTED) >= 10


@pytest.mark.parametrize("name", COMMITTED)
async def test_a_committed_fixture_replays_the_same(name: str) -> None:
    fixture = load_fixture(FIXTURES / name)
    result = await replay_fixture(Runner(RunOptions()), fixture, policy="pinned")
    assert result.status == "same", (result.divergences, result.changes, result.error)
    assert (result.divergences, result.changes, result.violations) == ((), (), ())
    assert result.unused == 0


def test_regress_over_the_committed_fixtures_exits_0(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)  # the path exactly as CI passes it
    assert _harness("regress", "scenarios/booking/fixtures") == EXIT_OK
    out = capsys.readouterr().out
    count = len(COMMITTED)
    assert f"{count} fixtures: {count} same, 0 not" in out


def test_regress_with_a_candidate_that_drops_dedupe_exits_3(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = _harness("regress", str(FIXTURES), "--candidate", "BOOKING_REGRESSIONS=no_dedupe")
    assert code == EXIT_DIVERGED
    out = capsys.readouterr().out
    assert "DIVERGED" in out
    assert "redelivered_confirm_books_once" in out
    assert "system prompt differs" in out
    assert f"{len(COMMITTED)} fixtures:" in out


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert captured.err.startswith("error: ")
    assert captured.err.count("\n") == 1
    assert "Traceback" not in captured.err + captured.out
    return captured.err


def test_replay_of_a_missing_directory_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-fixture"
    assert _harness("replay", str(missing)) == EXIT_USAGE
    assert str(missing) in _one_line_error(capsys)


@pytest.mark.parametrize("contents", [{}, {"notes.txt": "not a fixture\n"}], ids=["empty", "stray"])
def test_replay_of_a_directory_that_is_no_fixture_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], contents: dict[str, str]
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    for name, text in contents.items():
        (folder / name).write_text(text, encoding="utf-8")
    assert _harness("replay", str(folder)) == EXIT_USAGE
    assert str(folder) in _one_line_error(capsys)


def test_replay_of_a_directory_of_several_fixtures_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _harness("replay", str(FIXTURES)) == EXIT_USAGE
    _one_line_error(capsys)


def _torn_copy(tmp_path: Path, name: str) -> Path:
    """A copy of a committed fixture whose events.jsonl ends half-way through its last line."""
    copy = tmp_path / name
    shutil.copytree(FIXTURES / name, copy)
    log = copy / "events.jsonl"
    data = log.read_bytes()
    assert data.endswith(b"\n")
    start = data.rstrip(b"\n").rfind(b"\n") + 1
    last = data[start:].rstrip(b"\n")
    log.write_bytes(data[:start] + last[: len(last) // 2])
    return copy


async def test_a_fixture_with_a_torn_last_line_still_replays(tmp_path: Path) -> None:
    torn = _torn_copy(tmp_path, "happy_confirm_button")
    lines = (FIXTURES / "happy_confirm_button" / "events.jsonl").read_bytes().count(b"\n")
    with pytest.warns(FixtureWarning, match=rf"events\.jsonl:{lines}: torn last line dropped"):
        fixture = load_fixture(torn)
    assert len(fixture.events) == lines - 1
    result = await replay_fixture(Runner(RunOptions()), fixture)
    assert result.status == "same"
    assert result.unused == 0


def test_harness_replay_of_a_torn_fixture_warns_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    torn = _torn_copy(tmp_path, "happy_confirm_button")
    with pytest.warns(FixtureWarning, match="torn last line dropped"):
        assert _harness("replay", str(torn)) == EXIT_OK
    assert capsys.readouterr().out.startswith("SAME ")
