"""Who answered a run's model calls, as every report says it (see :mod:`harness.providers`).

A run against the bundled agent without an API key is answered by an
offline stand-in, not by the model its requests name; a replay by a
recording. The console, ``report.json`` and ``report.html`` each say so in
one line per kind of answer: ``57 model calls: the offline stand-in (no
model), asked for claude-sonnet-4-6``.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.providers import ModelCount, model_counts
from harness.results import RunResult, ScenarioResult

__all__ = ["run_models"]


def run_models(run: RunResult | Iterable[ScenarioResult]) -> list[ModelCount]:
    """The model calls of every scenario's conversation, counted by who answered them."""
    scenarios = run.scenarios if isinstance(run, RunResult) else run
    return model_counts(
        exchange
        for scenario in scenarios
        if scenario.conversation is not None
        for exchange in scenario.conversation.llm_exchanges()
    )
