"""``harness worker``'s side of a distributed run: take scenarios off the queue, run, answer.

A worker plays each scenario exactly as a local run's worker thread does: a
:class:`~harness.suites.runner.Runner` built from the run's options (once
per run), the scenario parsed from its file's text, its own event loop on a
thread of its own (a virtual clock moves only when its loop is idle, and the
worker's loop is busy with the queue), its own store connection and the
run's namespace for it. While it plays, the worker touches the job every
quarter of ``heartbeat``; if the process dies, the heartbeat stops, and the
sweep of any worker hands the scenario to another.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harness.exceptions import HarnessError
from harness.results import ScenarioResult
from harness.store import open_store
from harness.suites.jobs import JOB_FUNCTION, ScenarioJob, decode_options
from harness.suites.queue import DEFAULT_HEARTBEAT, open_queue, safe_broker_url
from harness.suites.runner import Runner, RunOptions

if TYPE_CHECKING:
    from saq.job import Job
    from saq.types import Context

__all__ = ["run_worker", "worker_name"]

# Runners of the runs this worker has served, by their options (a run's are all the same).
_RUNNERS: dict[str, Runner] = {}
_KEPT_RUNNERS = 8
_RUNNERS_LOCK = threading.Lock()
# Seconds a finished scenario waits for its heartbeat's last touch of the job.
_BEAT_STOP = 5.0
# Seconds a --burst worker waits on an empty queue before it stops.
_BURST_IDLE = 2.0


def worker_name() -> str:
    """How this worker names itself in its results' errors and its log: host and process."""
    return f"{socket.gethostname()}:{os.getpid()}"


async def run_worker(
    broker_url: str,
    *,
    concurrency: int = 1,
    heartbeat: float = DEFAULT_HEARTBEAT,
    burst: bool = False,
    say: Callable[[str], None] = print,
) -> None:
    """Serve the queue at ``broker_url`` until stopped (SIGINT, SIGTERM), or empty with ``burst``.

    ``concurrency`` scenarios run at once, each on a thread of its own (an
    in-process agent is CPU-bound: run one worker per core rather than many
    scenarios per worker). ``say`` hears a line as each scenario starts and ends.
    """
    from saq.types import PartialTimersDict
    from saq.worker import Worker

    # saq warns of its own shutdown, which cancels a worker's idle wait for a job.
    logging.getLogger("saq").setLevel(logging.ERROR)
    queue = await open_queue(broker_url)
    me = worker_name()

    async def run_scenario(ctx: Context, **kwargs: Any) -> dict[str, Any]:
        job = ctx["job"]
        played = asyncio.Event()
        beat = asyncio.create_task(_beat(job, heartbeat, played))
        try:
            scenario_job = ScenarioJob.from_kwargs(kwargs)
            say(f"started {job.key} (attempt {job.attempts})")
            result = await asyncio.to_thread(_play, scenario_job, me)
        finally:
            # Told, not cancelled: redis-py can swallow a cancellation that lands in the
            # middle of a command, and a heartbeat that went on would hold the job forever.
            played.set()
            await asyncio.wait([beat], timeout=_BEAT_STOP)
        say(f"{result.status} {job.key} {result.name} ({result.duration_s:.2f}s)")
        return result.model_dump(mode="json")

    worker = Worker(
        queue,
        functions=[(JOB_FUNCTION, run_scenario)],
        concurrency=concurrency,
        # Each worker looks for jobs whose heartbeat stopped, about twice a heartbeat.
        timers=PartialTimersDict(
            sweep=max(1, round(heartbeat / 2)), schedule=1, abort=1, worker_info=10
        ),
        burst=burst,
        # With --burst, a worker that finds the queue empty this long stops.
        dequeue_timeout=_BURST_IDLE if burst else 0,
    )
    say(
        f"worker {me} on {safe_broker_url(broker_url)}: {concurrency} scenario"
        f"{'' if concurrency == 1 else 's'} at a time, heartbeat {heartbeat:g}s"
    )
    try:
        await worker.start()
    finally:
        await queue.disconnect()


async def _beat(job: Job, heartbeat: float, played: asyncio.Event) -> None:
    """Keep ``job`` alive in the queue's eyes until its scenario has been ``played``."""
    await job.update(heartbeat=max(1, round(heartbeat)))
    while not played.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(played.wait(), heartbeat / 4)
        if not played.is_set():
            await job.update()


def _play(job: ScenarioJob, me: str) -> ScenarioResult:
    """Run one scenario as a local run's worker thread would, on an event loop of its own."""
    try:
        options = decode_options(job.options)
        runner = _runner(options, json.dumps(job.options, sort_keys=True))
        scenario = job.scenario()
    except HarnessError as exc:  # this worker can't run it: an error result, not a crash
        return ScenarioResult(
            name=f"scenario {job.index}",
            path=job.path,
            status="error",
            error=f"worker {me} could not run it: {exc}",
        )

    async def go() -> ScenarioResult:
        store = open_store(options.store_url)
        try:
            return await runner.run_scenario(scenario, store=store, namespace=job.key)
        finally:
            await store.close()

    return asyncio.run(go())


def _runner(options: RunOptions, key: str) -> Runner:
    with _RUNNERS_LOCK:
        runner = _RUNNERS.get(key)
        if runner is None:
            if len(_RUNNERS) >= _KEPT_RUNNERS:
                _RUNNERS.pop(next(iter(_RUNNERS)))
            runner = _RUNNERS[key] = Runner(options)
        return runner
