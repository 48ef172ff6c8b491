"""The "Reproduce with" scenario: a prefix of the run that fails the same way."""

from __future__ import annotations

import asyncio

from harness.results import ScenarioResult, Violation
from harness.suites.reproduce import shortest_reproduction
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import parse_scenario

# The agent answers a redelivered copy (no_dedupe) with free text, window or not (ignore_window):
# the answer after `wait: 25h` is a free-form send outside the window, in turn 1's steps.
LATE_ANSWER = """\
name: late answer
agent: {regressions: [no_dedupe, ignore_window]}
invariants: [no_freeform_outside_window, every_inbound_answered]
steps:
  - say: hello
  - wait: 25h
  - redeliver: last
  - say: a table on friday at 8pm
  - wait: 1m
"""


def _run(text: str) -> ScenarioResult:
    scenario = parse_scenario(text)
    return asyncio.run(Runner(RunOptions(concurrency=1)).run_scenario(scenario))


def _kinds(text: str) -> list[str]:
    return [type(step).__name__ for step in parse_scenario(text).steps]


def test_a_violation_after_a_wait_is_reproduced_with_the_wait_and_what_followed() -> None:
    result = _run(LATE_ANSWER)
    assert result.status == "failed"
    first = result.violations[0]
    assert (first.rule, first.turn) == ("no_freeform_outside_window", 0)
    # Every step of the violation's turn, up to the next message: the wait and the redelivery.
    assert _kinds(result.reproduce) == _kinds(LATE_ANSWER)[:3]
    again = _run(result.reproduce)
    assert again.status == "failed"
    assert [v.rule for v in again.violations] == ["no_freeform_outside_window"]


def _scenario(steps: int) -> str:
    return "steps:\n" + "".join(f"  - say: message {n}\n" for n in range(steps))


def test_the_prefix_ends_where_the_next_turn_begins() -> None:
    scenario = parse_scenario(_scenario(5))
    violation = Violation(rule="some_rule", message="broken", turn=1)

    def cut(turns_after: list[int]) -> int:
        return len(parse_scenario(shortest_reproduction(scenario, [violation], turns_after)).steps)

    assert cut([1, 2, 3, 4, 5]) == 2  # one turn a step: the turn's own step
    assert cut([1, 2, 2, 2, 3]) == 4  # steps 2 and 3 began no turn: turn 1 went on through them
    assert cut([2, 2, 2, 3, 3]) == 3  # turns 0 and 1 began in step 0, turn 2 in step 3
    assert cut([1, 1, 1, 1, 1]) == 5  # turn 1 never began: the whole scenario
    explicit = Violation(rule="expect", message="no", kind="expectation", turn=1, step=1)
    assert len(parse_scenario(shortest_reproduction(scenario, [explicit], [1] * 5)).steps) == 2
