"""Replays as suite results, so ``harness replay`` and ``harness regress`` write the same reports.

CI runs ``harness regress``; its ``report.json``, ``junit.xml`` and
``report.html`` must read like those of ``harness run``. Each replayed
fixture becomes one :class:`~harness.results.ScenarioResult`:

- ``same``, and ``changed`` (what a skew or the live policy allows), pass;
- ``failed`` fails with the invariants that failed again;
- ``diverged`` fails with a ``divergence`` violation per request the
  recording could not answer (led by its turn), or, when every request was
  answered but the conversation came out different, one per changed turn;
- ``error`` and ``incomplete`` (the fixture holds less than the agent
  asked for) are errors, with their explanation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from harness.replay.playback import ReplayResult
from harness.results import RunResult, ScenarioResult, ScenarioStatus, Violation

__all__ = ["replay_run", "replay_scenario_result"]

_TURN = re.compile(r"^turn (\d+): ")


def _divergence(text: str, rule: str) -> Violation:
    """A divergence or change line (``turn 3: system prompt differs``) as a violation."""
    match = _TURN.match(text)
    turn = int(match.group(1)) - 1 if match else None
    message = text[match.end() :] if match else text
    return Violation(kind="divergence", rule=rule, message=message, turn=turn)


def replay_scenario_result(result: ReplayResult) -> ScenarioResult:
    """One replayed fixture as the result of a scenario, for the reports."""
    status: ScenarioStatus
    violations: list[Violation] = list(result.violations)
    if result.status in ("same", "changed"):
        status = "passed"
    elif result.status in ("error", "incomplete"):
        status = "error"
    else:
        status = "failed"
    if result.status == "diverged":
        if result.divergences:
            found = [_divergence(line, "replay diverged") for line in result.divergences]
        else:
            found = [_divergence(line, "replay changed") for line in result.changes]
        violations = [*found, *violations]
    channel = result.conversation.channel if result.conversation is not None else ""
    return ScenarioResult(
        name=result.scenario or Path(result.fixture).name,
        path=result.fixture,
        channel=channel or "whatsapp",
        status=status,
        duration_s=result.duration_s,
        violations=tuple(violations),
        error=result.error if status == "error" else None,
        conversation=result.conversation,
        agent_errors=result.agent_errors,
    )


def replay_run(
    results: Sequence[ReplayResult],
    *,
    target: str = "",
    started_at: datetime | None = None,
    duration_s: float | None = None,
) -> RunResult:
    """Replays of many fixtures as one run (its time is the replays' own, unless given)."""
    scenarios = tuple(replay_scenario_result(result) for result in results)
    total = sum(s.duration_s for s in scenarios) if duration_s is None else duration_s
    channel = scenarios[0].channel if scenarios else "whatsapp"
    return RunResult(
        scenarios=scenarios,
        started_at=started_at,
        duration_s=round(total, 3),
        target=target,
        channel=channel,
    )
