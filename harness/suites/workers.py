"""Running a suite's scenarios in worker processes: each process builds its runner once.

A large in-process suite is CPU-bound, so the runner hands its scenarios to
a pool of processes; these are the functions those processes run, apart
from the runner so that a worker imports only what it needs.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from harness.results import ScenarioResult
from harness.store import open_store
from harness.suites.scenario import Scenario

if TYPE_CHECKING:
    from collections.abc import Callable

    from harness.suites.runner import Runner, RunOptions

__all__ = ["PROCESS_THRESHOLD", "finished", "run_elsewhere"]

#: Suites at least this large run in worker processes (smaller ones on threads).
PROCESS_THRESHOLD = 100

_WORKER_RUNNERS: dict[int, Runner] = {}


def run_elsewhere(options: RunOptions, scenario: Scenario, namespace: str) -> ScenarioResult:
    """Run one scenario in a worker process (its runner is built once per process)."""
    runner = _WORKER_RUNNERS.get(id(options))
    if runner is None:
        from harness.suites.runner import Runner  # the runner imports this module

        runner = _WORKER_RUNNERS[id(options)] = Runner(options)

    async def go() -> ScenarioResult:
        store = open_store(options.store_url)
        try:
            return await runner.run_scenario(scenario, store=store, namespace=namespace)
        finally:
            await store.close()

    return asyncio.run(go())


def finished(
    index: int,
    results: list[ScenarioResult | None],
    report: Callable[[ScenarioResult], None],
    done: asyncio.Future[ScenarioResult],
) -> None:
    """Keep a worker's result at ``index`` and ``report`` it (a failed future reports nothing)."""
    if done.cancelled() or done.exception() is not None:
        return
    results[index] = done.result()
    report(done.result())
