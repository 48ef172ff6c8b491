"""The shortest scenario that still shows a failure, printed with a failing result."""

from __future__ import annotations

from collections.abc import Sequence

from harness.results import Violation
from harness.suites.invariants import bind
from harness.suites.scenario import Scenario

__all__ = ["shortest_reproduction"]


def shortest_reproduction(
    scenario: Scenario, violations: Sequence[Violation], turns_after: Sequence[int]
) -> str:
    """The shortest prefix of ``scenario`` that still shows the first violation, as YAML.

    ``turns_after[i]`` is how many turns the conversation had after step ``i``
    (to find the step of a violation known only by its turn). Only the
    invariants that were violated are kept.
    """
    if not violations:
        return scenario.to_yaml()
    first = violations[0]
    last_step = len(scenario.steps) - 1
    if first.step is not None:
        last_step = first.step
    elif first.turn is not None:
        for index, turns in enumerate(turns_after):
            if turns > first.turn:
                last_step = index
                break
    steps = scenario.steps[: last_step + 1]
    rules = {v.rule for v in violations if v.kind == "invariant"}
    # A rule is the invariant's registered name, which a file may have written as an import path.
    invariants = tuple(ref for ref in scenario.invariants if bind(ref).name in rules)
    trimmed = scenario.model_copy(update={"steps": steps, "invariants": invariants})
    return trimmed.to_yaml()
