"""A large in-process suite spread over this process and worker processes.

In-process scenarios are CPU-bound, so a large suite runs on every core: this
process runs scenarios in its own event loop (its interpreter is warm, so it
starts at once), and one worker process per further core runs the rest. Each
takes the next scenario when it is done with one, so a worker still starting or
one given the long scenarios never leaves the others idle.

On Linux, when this process has no thread but its main one, the workers are
forked before this process plays its first scenario: they start with the harness
and the agent already imported, in a few milliseconds. Otherwise (another
thread is alive, which a fork would copy mid-step, or another platform) they are
spawned, and a fresh interpreter imports the harness and the agent first, about
half a second.

A worker is handed the run once, when it starts: the options, every scenario
(already checked here) and the run's id. It builds the runner and opens its
store and event loop once, and binds the invariants of the scenarios it runs; a
scenario costs the pipe its index one way and its result the other, four at a
time, and each worker keeps two such batches in hand so it never waits on the
pipe between them.
"""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing.util import Finalize
from typing import TYPE_CHECKING, Protocol

from harness.exceptions import ConfigError
from harness.store import Store, open_store
from harness.suites.preflight import bind_invariants

if TYPE_CHECKING:
    from harness.results import ScenarioResult
    from harness.suites.invariants import BoundInvariant
    from harness.suites.run_options import RunOptions
    from harness.suites.scenario import Scenario

__all__ = ["PROCESS_THRESHOLD", "START_VARIABLE", "ScenarioRunner", "spread", "start_method"]

#: Suites at least this large run in worker processes (smaller ones on threads): starting a
#: worker process costs about a second, which pays off on large suites only.
PROCESS_THRESHOLD = 100

#: Batches each worker process holds at once: one running, one waiting in its pipe.
_IN_HAND = 2
#: Scenarios handed to a worker process at a time. Each hand-over wakes two threads of this
#: process, which take the interpreter from the scenarios running here for a moment.
_CHUNK = 4


#: The environment variable that can make every worker process start fresh (``spawn``).
START_VARIABLE = "HARNESS_WORKER_START"

#: Scenarios handed to a worker process, and their results to come.
_Batch = tuple[tuple[int, ...], "asyncio.Future[list[ScenarioResult]]"]


def start_method() -> str:
    """How worker processes start here and now: ``"fork"`` when that is safe, else ``"spawn"``.

    A fork copies the process as it is, warm, but only the thread that forks:
    a lock another thread holds at that moment (a progress bar writing to the
    terminal, a logging handler) stays held forever in the copy. So only on
    Linux, and only while the main thread is the only one. It also shares
    whatever the agent's module opened when imported (a connection made at
    import time, against the factory's contract): ``HARNESS_WORKER_START=spawn``
    starts every worker fresh.
    """
    asked = os.environ.get(START_VARIABLE, "auto")
    if asked not in ("auto", "spawn"):
        raise ConfigError(
            f"{START_VARIABLE}={asked!r}: use auto (fork where that is safe) or spawn"
        )
    alone = threading.active_count() == 1 and threading.current_thread() is threading.main_thread()
    if asked == "auto" and sys.platform == "linux" and alone:
        return "fork"
    return "spawn"


def _take(next_index: Callable[[], int | None], count: int) -> tuple[int, ...]:
    """Up to ``count`` scenarios' indexes, fewer at the end of the run."""
    taken: list[int] = []
    while len(taken) < count and (index := next_index()) is not None:
        taken.append(index)
    return tuple(taken)


class ScenarioRunner(Protocol):
    """What a worker process needs of the runner: to play one scenario."""

    async def run_scenario(
        self,
        scenario: Scenario,
        invariants: Sequence[BoundInvariant] | None = None,
        *,
        store: Store | None = None,
        namespace: str = "",
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
    import), and ``finished`` hears of each scenario it ran. When anything
    fails, ``stop`` is set so no scenario starts after it, and what is still
    running is waited for before the failure is raised.
    """
    loop = asyncio.get_running_loop()
    context = multiprocessing.get_context(start_method())
    pool = ProcessPoolExecutor(
        max_workers=processes,
        mp_context=context,
        initializer=_start_worker,
        initargs=(make, options, tuple(scenarios), run_id, gc.get_threshold()),
    )

    def hand_over() -> _Batch | None:
        indexes = _take(next_index, _CHUNK)
        if not indexes:
            return None
        return indexes, loop.run_in_executor(pool, _run_in_worker, indexes)

    async def feed(batch: _Batch | None) -> None:
        while batch is not None:
            indexes, ran = batch
            for index, result in zip(indexes, await ran, strict=True):
                finished(index, result)
            batch = hand_over()

    # The first batches go out before this process plays anything: a forked worker is a
    # copy of this process as it is now, with no scenario half played and no other thread.
    firsts = [hand_over() for _ in range(processes * _IN_HAND)]
    tasks = [asyncio.ensure_future(feed(first)) for first in firsts]
    tasks.append(asyncio.ensure_future(here()))
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    finally:
        # Every result is in: the workers exit on their own, without the run waiting on them.
        pool.shutdown(wait=False, cancel_futures=True)


@dataclass
class _Worker:
    """What a worker process keeps for the run it serves."""

    runner: ScenarioRunner
    scenarios: tuple[Scenario, ...]
    run_id: str
    loop: asyncio.AbstractEventLoop
    store: Store

    def close(self) -> None:
        """Close the store and the event loop (when the process exits)."""
        self.loop.run_until_complete(self.store.close())
        self.loop.close()


#: The run this worker process serves, or why it could not be set up for it.
_worker: _Worker | Exception | None = None
#: Closes the worker's store and loop, once: as the process exits, or when it is set up again.
_closing: Finalize | None = None


def _start_worker(
    make: Callable[[RunOptions], ScenarioRunner],
    options: RunOptions,
    scenarios: tuple[Scenario, ...],
    run_id: str,
    collector: tuple[int, ...],
) -> None:
    """Set up a worker process for one run: its runner, event loop and store.

    The garbage collector runs at ``collector``'s thresholds, as it does in the
    process that started the run (the command sets its own).
    """
    global _worker, _closing
    gc.set_threshold(*collector)
    if multiprocessing.parent_process() is not None:
        # A forked worker inherits the run's handling of Ctrl-C (asyncio's, which would only
        # cancel the run's task, in the run's process); it takes Python's own, as a spawned one.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.set_wakeup_fd(-1)
    if _closing is not None:  # a process set up twice (a test): let the first go
        _closing()
        _closing = None
    try:
        runner = make(options)
    except Exception as exc:  # raised again with each scenario handed over, as it is
        _worker = exc
        return
    loop = asyncio.new_event_loop()
    _worker = _Worker(
        runner=runner,
        scenarios=scenarios,
        run_id=run_id,
        loop=loop,
        store=open_store(options.store_url),
    )
    # Run as the worker exits, however it started (a forked one skips the atexit hooks).
    _closing = Finalize(None, _worker.close, exitpriority=0)


def _run_in_worker(indexes: tuple[int, ...]) -> list[ScenarioResult]:
    """Run the run's scenarios ``indexes`` in this worker process, one after the other."""
    return [_run_one(index) for index in indexes]


def _run_one(index: int) -> ScenarioResult:
    """Run the run's scenario ``index`` in this worker process."""
    worker = _worker
    if worker is None:
        raise RuntimeError("this worker process was not started for a run")
    if isinstance(worker, Exception):
        raise worker
    scenario = worker.scenarios[index]
    return worker.loop.run_until_complete(
        worker.runner.run_scenario(
            scenario,
            bind_invariants(scenario),
            store=worker.store,
            namespace=f"{worker.run_id}:{index}",
        )
    )
