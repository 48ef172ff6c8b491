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
    (to find the steps of a violation known only by its turn). Such a
    violation may have happened in any step of its turn, not only the one
    that began it (a send after a ``wait``, the answer to a ``redeliver``),
    so the prefix keeps every step until the next turn begins. Only the
    invariants that were violated are kept.
    """
    if not violations:
        return scenario.to_yaml()
    first = violations[0]
    last_step = len(scenario.steps) - 1
    if first.step is not None:
        last_step = first.step
    elif first.turn is not None:
        began = next((i for i, turns in enumerate(turns_after) if turns > first.turn), None)
        if began is not None:
            last_step = began
            while last_step + 1 < len(turns_after) and turns_after[last_step + 1] <= first.turn + 1:
                last_step += 1  # still the violation's turn: a wait, a redelivery
    steps = scenario.steps[: last_step + 1]
    rules = {v.rule for v in violations if v.kind == "invariant"}
    # A rule is the invariant's registered name, which a file may have written as an import path.
    invariants = tuple(ref for ref in scenario.invariants if bind(ref).name in rules)
    trimmed = scenario.model_copy(update={"steps": steps, "invariants": invariants})
    return trimmed.to_yaml()
