"""A ``faults:`` step changes the channel's faults mid-scenario; a bad one names its line.

This is the step ``harness explore`` writes a turn's channel faults as, so a
failing schedule is a plain scenario file.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harness.exceptions import ScenarioError
from harness.results import ScenarioResult
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import parse_scenario
from harness.suites.steps import FaultsStep
from harness.trace import DeliveryAttempt, InboundMessage


def _run(text: str, channel: str = "whatsapp", path: Path | None = None) -> ScenarioResult:
    scenario = parse_scenario(text, path=path)
    return asyncio.run(Runner(RunOptions(concurrency=1, channel=channel)).run_scenario(scenario))


def _deliveries(result: ScenarioResult) -> dict[str, int]:
    assert result.conversation is not None
    counts: dict[str, int] = {}
    for event in result.conversation.events:
        if isinstance(event, InboundMessage) and event.text is not None:
            counts[event.text] = counts.get(event.text, 0) + 1
    return counts


def test_faults_change_from_the_step_on_and_stop_at_the_next_one() -> None:
    result = _run(
        """
steps:
  - say: before
  - faults: {duplicate: 1}
  - say: during
  - faults: null
  - say: after
"""
    )
    assert result.status == "passed", result.error
    assert _deliveries(result) == {"before": 1, "during": 2, "after": 1}


def test_a_faults_step_may_name_a_preset_and_go_back_to_the_scenarios_own() -> None:
    result = _run(
        """
faults: duplicates
steps:
  - say: one
  - faults: none
  - say: two
  - faults: duplicates
  - say: three
"""
    )
    assert _deliveries(result) == {"one": 2, "two": 1, "three": 2}


def test_a_lost_answer_is_a_500_meta_retries_and_the_agent_gets_the_message_twice() -> None:
    result = _run(
        """
steps:
  - faults: {answer_lost: 1}
  - say: lost
  - faults: null
  - say: kept
"""
    )
    assert result.conversation is not None
    attempts = [
        (e.status_code, e.attempt, e.faults)
        for e in result.conversation.events
        if isinstance(e, DeliveryAttempt) and e.user is not None and e.items
    ]
    assert attempts[:2] == [(500, 1, ("answer_lost",)), (200, 2, ("retry",))]
    assert _deliveries(result) == {"lost": 2, "kept": 1}


def test_a_faults_step_writes_back_as_it_was_read() -> None:
    text = "steps:\n- faults: {status_missing: 1}\n- say: hi\n- faults: null\n"
    scenario = parse_scenario(text)
    assert isinstance(scenario.steps[0], FaultsStep)
    assert scenario.to_yaml() == "name: scenario\n" + text


@pytest.mark.parametrize(
    ("faults", "message"),
    [
        (
            "{duplicat: 1}",
            "x.yaml:3: steps[1].faults.duplicat: unknown fault setting (did you mean 'duplicate'?)",
        ),
        ("{duplicate: 2}", "x.yaml:3: steps[1].faults.duplicate: input should be less than or"),
        ("flakey", "x.yaml:3: steps[1].faults: unknown preset 'flakey' (did you mean 'flaky'?)"),
        ("[1]", "x.yaml:3: steps[1].faults: expected a preset name, a mapping of fault settings"),
    ],
)
def test_a_bad_faults_step_is_one_line_naming_the_file_line_and_field(
    faults: str, message: str, tmp_path: Path
) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(f"steps:\n  - say: hi\n  - faults: {faults}\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as caught:
        _run(path.read_text(encoding="utf-8"), path=path)
    line = str(caught.value)
    assert "\n" not in line
    assert line.startswith(str(tmp_path / message) if "/" not in message else message)


def test_the_direct_channel_skips_a_faults_step_and_says_why() -> None:
    result = _run("steps:\n  - faults: duplicates\n  - say: hi\n", channel="direct")
    assert result.status == "passed"
    assert [(s.what, s.reason) for s in result.skipped] == [
        ("faults", "the direct channel has no channel faults")
    ]


BURST_THEN_A_DAY = """
users:
  - {name: Lucia, wa_id: "5511987654321"}
steps:
  - say: ["Hi! Do you have", "a table on Friday at 8pm?"]
  - wait: 25h
invariants:
  - %s
"""


def test_a_follow_up_a_day_after_a_burst_is_not_a_second_reply_to_it() -> None:
    # The booking agent answers the burst once, then sends its template follow-up 25 hours
    # later, in the same turn: that is not a second answer to the burst.
    result = _run(BURST_THEN_A_DAY % "one_reply_per_burst")
    assert result.status == "passed", [v.message for v in result.violations]
    counted = _run(BURST_THEN_A_DAY % "one_reply_per_burst: {within: 2d}")
    assert [v.message for v in counted.violations] == [
        "a burst of 2 messages got 2 separate replies, more than 1"
    ]
