"""Each replay status becomes the suite result the reports expect."""

from __future__ import annotations

import pytest

from harness.replay.outcome import replay_run, replay_scenario_result
from harness.replay.playback import ReplayResult, ReplayStatus
from harness.results import Violation

FAILED_AGAIN = Violation(rule="one_reply_per_burst", message="two replies", turn=1)


@pytest.mark.parametrize(
    ("status", "expected"),
    [("same", "passed"), ("changed", "passed"), ("failed", "failed"), ("error", "error")],
)
def test_each_replay_status_maps_to_a_scenario_status(status: ReplayStatus, expected: str) -> None:
    result = ReplayResult(fixture="fixtures/happy", status=status, scenario="happy", error="boom")
    scenario = replay_scenario_result(result)
    assert (scenario.name, scenario.path, scenario.status) == ("happy", "fixtures/happy", expected)
    assert scenario.error == ("boom" if expected == "error" else None)


def test_a_divergence_is_a_failure_naming_its_turn_before_the_invariants() -> None:
    result = ReplayResult(
        fixture="fixtures/happy",
        status="diverged",
        divergences=("turn 3: replay diverged: system prompt differs",),
        violations=(FAILED_AGAIN,),
    )
    scenario = replay_scenario_result(result)
    assert scenario.status == "failed"
    assert scenario.name == "happy"  # without a recorded name, the fixture's folder
    first, second = scenario.violations
    assert (first.kind, first.rule, first.turn) == ("divergence", "replay diverged", 2)
    assert first.message == "replay diverged: system prompt differs"
    assert first.headline() == "replay diverged at turn 3: replay diverged: system prompt differs"
    assert second == FAILED_AGAIN


def test_a_pinned_replay_that_changed_without_a_miss_lists_each_change() -> None:
    result = ReplayResult(
        fixture="f",
        status="diverged",
        changes=("turn 2: reply 1 differs", "the conversation has 4 turns, recorded 5"),
    )
    violations = replay_scenario_result(result).violations
    assert [(v.rule, v.turn) for v in violations] == [
        ("replay changed", 1),
        ("replay changed", None),
    ]


def test_a_run_of_replays_counts_and_times_them() -> None:
    results = [
        ReplayResult(fixture="a", status="same", duration_s=0.5),
        ReplayResult(fixture="b", status="diverged", divergences=("x",), duration_s=0.25),
    ]
    run = replay_run(results, target="pkg.mod:factory")
    assert (run.passed, run.failed, run.duration_s, run.target) == (1, 1, 0.75, "pkg.mod:factory")
    assert not run.ok
