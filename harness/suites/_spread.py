"""A large in-process suite spread over this process and worker processes.

In-process scenarios are CPU-bound, so a large suite runs on every core: this
process runs scenarios on a thread of its own (its interpreter is warm, so it
starts at once), and one spawned worker process per further core runs the
rest. Each takes the next scenario when it is done with one, so a worker still
starting (a spawned interpreter imports the harness and the agent, about a
second) or one given the long scenarios never leaves the others idle. Each
worker process keeps two scenarios in hand, so it never waits on the pipe
between them.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TYPE_CHECKING, Protocol

from harness.store import Store, open_store

if TYPE_CHECKING:
    from harness.results import ScenarioResult
    from harness.suites.run_options import RunOptions
    from harness.suites.scenario import Scenario

__all__ = ["PROCESS_THRESHOLD", "ScenarioRunner", "spread"]

#: Suites at least this large run in worker processes (smaller ones on threads): starting a
#: worker process costs about a second, which pays off on large suites only.
PROCESS_THRESHOLD = 100

#: Scenarios each worker process holds at once: one running, one waiting in its pipe.
_IN_HAND = 2

#: The runner of each run a worker process serves, by the run's id. The options arrive as a
#: new object with every scenario (they are pickled), so they cannot be the key.
_WORKER_RUNNERS: dict[str, ScenarioRunner] = {}


class ScenarioRunner(Protocol):
    """What a worker process needs of the runner: to play one scenario."""

    async def run_scenario(
        self, scenario: Scenario, *, store: Store | None = None, namespace: str = ""
    ) -> ScenarioResult: ...


async def spread(
    here: Callable[[], Awaitable[None]],
    make: Callable[[RunOptions], ScenarioRunner],
    processes: int,
    options: RunOptions,
    scenarios: Sequence[Scenario],
    run_id: str,
    next_index: Callable[[], int | None],
    finished: Callable[[int, ScenarioResult], None],
    stop: threading.Event,
) -> None:
    """Run ``here()`` (this process's share) beside ``processes`` worker processes.

    ``next_index`` hands out the scenarios, to this process and the workers
    alike; a worker builds its runner with ``make`` (a class or function it can
    import) once per run, and ``finished`` hears of each scenario it ran. When
    anything fails, ``stop`` is set so no scenario starts after it, and what is
    still running is waited for before the failure is raised.
    """
    loop = asyncio.get_running_loop()
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=processes, mp_context=context) as pool:

        async def feed() -> None:
            while (index := next_index()) is not None:
                result = await loop.run_in_executor(
                    pool, _run_elsewhere, make, options, scenarios[index], run_id, index
                )
                finished(index, result)

        tasks = [
            asyncio.ensure_future(here()),
            *(asyncio.ensure_future(feed()) for _ in range(processes * _IN_HAND)),
        ]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise


def _run_elsewhere(
    make: Callable[[RunOptions], ScenarioRunner],
    options: RunOptions,
    scenario: Scenario,
    run_id: str,
    index: int,
) -> ScenarioResult:
    """Run one scenario in a worker process (its runner is built once per process and run)."""
    runner = _WORKER_RUNNERS.get(run_id)
    if runner is None:
        runner = _WORKER_RUNNERS[run_id] = make(options)

    async def go() -> ScenarioResult:
        store = open_store(options.store_url)
        try:
            return await runner.run_scenario(scenario, store=store, namespace=f"{run_id}:{index}")
        finally:
            await store.close()

    return asyncio.run(go())
