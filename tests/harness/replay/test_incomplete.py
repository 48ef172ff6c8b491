"""A fixture that holds less than its conversation: incomplete, never a divergence of the agent.

A recording killed before its end, or a chat that ``harness proxy``
recorded without the agent's model calls, can't answer everything the agent
asks when it is replayed. That is the fixture's gap, said in one line (exit
2), not a change of the agent (exit 3), and nothing after it is judged.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness.cli.replaying import REPLAY_EXIT
from harness.fixture import load_fixture
from harness.prompts import override
from harness.replay.outcome import replay_scenario_result
from harness.replay.playback import replay_fixture
from harness.suites.runner import Runner, RunOptions

FIXTURE = Path(__file__).resolve().parents[3] / "scenarios/booking/fixtures/happy_confirm_button"


def _copy(tmp_path: Path) -> Path:
    copy = tmp_path / "fixture"
    shutil.copytree(FIXTURE, copy)
    return copy


def _keep_lines(path: Path, count: int) -> None:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:count]), encoding="utf-8")


def _cut_after_the_first_turn(tmp_path: Path) -> Path:
    """What a kill leaves when the model's answers of turn 2 were not written yet."""
    copy = _copy(tmp_path)
    (copy / "conversation.json").unlink()
    _keep_lines(copy / "llm.jsonl", 3)  # turn 1: three model calls, one tool call
    _keep_lines(copy / "tools.jsonl", 1)
    return copy


async def test_a_replay_that_runs_past_a_recording_cut_short_is_incomplete(
    tmp_path: Path,
) -> None:
    cut = _cut_after_the_first_turn(tmp_path)
    result = await replay_fixture(Runner(RunOptions()), load_fixture(cut))
    assert result.status == "incomplete"
    assert result.error == (
        f"{cut}: the recording was cut short (it has no conversation.json), and the agent "
        "asked for more than it holds in turn 2: record it again to replay it whole"
    )
    assert (result.divergences, result.changes, result.violations) == ((), (), ())
    assert REPLAY_EXIT[result.status] == 2
    report = replay_scenario_result(result)
    assert (report.status, report.error) == ("error", result.error)


async def test_a_changed_agent_still_diverges_on_a_recording_cut_short(tmp_path: Path) -> None:
    cut = _cut_after_the_first_turn(tmp_path)
    with override({"system": "You are a rude assistant."}):
        result = await replay_fixture(Runner(RunOptions()), load_fixture(cut))
    # Recorded answers were left unasked: the agent changed before the cut.
    assert result.status == "diverged"
    assert "system prompt differs" in result.divergences[0]


async def test_a_whole_recording_missing_an_answer_diverges(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    _keep_lines(copy / "llm.jsonl", 2)  # conversation.json says the recording ended well
    result = await replay_fixture(Runner(RunOptions()), load_fixture(copy))
    assert result.status == "diverged"


async def test_a_proxy_recording_without_the_agents_calls_is_incomplete(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    meta = json.loads((copy / "meta.json").read_text(encoding="utf-8"))
    meta.update(recorded_by="harness proxy", scenario_yaml=None)
    (copy / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    (copy / "llm.jsonl").write_text("", encoding="utf-8")
    (copy / "tools.jsonl").write_text("", encoding="utf-8")
    result = await replay_fixture(Runner(RunOptions()), load_fixture(copy))
    assert result.status == "incomplete"
    assert result.error is not None
    assert result.error.startswith(
        f"{copy}: harness proxy recorded the channel only, none of the agent's model or tool "
        "calls, and the agent asked for more than it holds in turn 1: record them too"
    )
    assert result.changes == ()  # the turns the agent could not answer are not "changes"
