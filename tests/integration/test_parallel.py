"""A large suite runs on every core, with the same results as one at a time."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from harness.results import ScenarioResult
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import load_scenarios

SUITE = Path(__file__).resolve().parents[2] / "scenarios" / "booking"


def _outcome(result: ScenarioResult) -> tuple[str, str, tuple[str, ...], int]:
    turns = len(result.conversation.turns) if result.conversation else -1
    return result.name, result.status, tuple(v.rule for v in result.violations), turns


@pytest.mark.slow
async def test_worker_processes_give_the_results_of_a_sequential_run() -> None:
    suite = load_scenarios([SUITE])
    scenarios = [suite[i % len(suite)] for i in range(112)]  # over the process threshold
    regression = {"BOOKING_REGRESSIONS": "no_dedupe"}
    reported: list[str] = []
    workers: list[int] = []

    def seen(result: ScenarioResult) -> None:
        reported.append(result.name)
        workers.append(len(multiprocessing.active_children()))

    parallel = await Runner(RunOptions(concurrency=4, agent_settings=regression)).run(
        scenarios, on_result=seen
    )
    sequential = await Runner(RunOptions(concurrency=1, agent_settings=regression)).run(scenarios)
    assert [_outcome(r) for r in parallel.scenarios] == [_outcome(r) for r in sequential.scenarios]
    assert sorted(reported) == sorted(s.name for s in scenarios)
    assert parallel.failed == sequential.failed > 0  # the regression is caught either way
    # This process ran some, and one worker process per further core (up to 4) the others.
    assert max(workers) >= min(4, os.cpu_count() or 1) - 1
