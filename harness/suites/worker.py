"""``harness worker``'s side of a distributed run: take scenarios off the queue, run, answer.

A worker plays each scenario exactly as a local run's worker thread does: a
:class:`~harness.suites.runner.Runner` built from the run's options (once
per run), the scenario parsed from its file's text, its own event loop on a
thread of its own (a virtual clock moves only when its loop is idle, and the
worker's loop is busy with the queue), its own store connection and the
run's namespace for it. While it plays, the worker touches the job every
quarter of ``heartbeat``; if the process dies, the heartbeat stops, and the
sweep of any worker hands the scenario to another.

A scenario against an agent at a URL waits on the agent rather than
computes, so it plays on the worker's own loop, beside the others, with the
Graph API this worker serves (:class:`GraphPlace`): the worker writes its
scenarios' users in the run's store with the address it is reached at, so
whichever Graph API the agent sends to (``harness serve --routes``, another
worker's) passes their sends on to it (:mod:`channels.whatsapp.forwarding`).
Each attempt of such a scenario has users of its own: an agent that heard
from a dead worker's attempt keeps nothing of it for the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import socket
import threading
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from harness.exceptions import HarnessError
from harness.results import ScenarioResult
from harness.store import open_store
from harness.suites.distributed import RESULT_TTL
from harness.suites.jobs import (
    JOB_FUNCTION,
    NOT_PLAYED,
    ScenarioJob,
    decode_options,
    encode_options,
    parse_job_key,
    result_key,
    stopped_key,
)
from harness.suites.queue import DEFAULT_HEARTBEAT, open_queue, safe_broker_url
from harness.suites.runner import Runner, RunOptions

if TYPE_CHECKING:
    from saq.job import Job
    from saq.types import Context

__all__ = ["GraphPlace", "run_worker", "worker_name"]

# Runners of the runs this worker has served, by their options (a run's are all the same).
_RUNNERS: dict[str, Runner] = {}
_KEPT_RUNNERS = 8
_RUNNERS_LOCK = threading.Lock()
# Seconds a finished scenario waits for its heartbeat's last touch of the job.
_BEAT_STOP = 5.0
# Seconds a --burst worker waits on an empty queue before it stops.
_BURST_IDLE = 2.0


@dataclasses.dataclass(frozen=True)
class GraphPlace:
    """Where a worker serves the Graph API of its URL scenarios, and the address others use."""

    host: str = "127.0.0.1"
    port: int = 0
    advertise: str | None = None

    def settled(self) -> GraphPlace:
        """This place with a port picked (0: a free one) and an address to advertise."""
        port = self.port or _free_port(self.host)
        host = self.host
        if host in ("0.0.0.0", "::", ""):  # every interface: others find it by name
            host = socket.gethostname()
        advertise = self.advertise or f"http://{host}:{port}"
        return GraphPlace(self.host, port, advertise.rstrip("/"))

    @property
    def url(self) -> str:
        """Where the Graph API listens."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


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
    graph: GraphPlace | None = None,
) -> None:
    """Serve the queue at ``broker_url`` until stopped (SIGINT, SIGTERM), or empty with ``burst``.

    ``concurrency`` scenarios run at once, each on a thread of its own (an
    in-process agent is CPU-bound: run one worker per core rather than many
    scenarios per worker). ``say`` hears a line as each scenario starts and ends.
    ``graph`` is where the Graph API of scenarios against an agent at a URL is served.
    """
    from saq.types import PartialTimersDict
    from saq.worker import Worker

    # saq warns of its own shutdown, which cancels a worker's idle wait for a job.
    logging.getLogger("saq").setLevel(logging.ERROR)
    queue = await open_queue(broker_url)
    me = worker_name()
    host = _GraphHost((graph or GraphPlace()).settled())

    async def run_scenario(ctx: Context, **kwargs: Any) -> dict[str, Any]:
        job = ctx["job"]
        if await queue.redis.exists(stopped_key(parse_job_key(job.key)[0])):
            say(f"not played {job.key}: its run stopped before it started")
            return {NOT_PLAYED: "its run stopped before it started"}
        played = asyncio.Event()
        beat = asyncio.create_task(_beat(job, heartbeat, played))
        try:
            scenario_job = ScenarioJob.from_kwargs(kwargs)
            say(f"started {job.key} (attempt {job.attempts})")
            if scenario_job.options.get("target_url"):
                result = await _play_here(scenario_job, me, host, job.attempts)
            else:
                result = await asyncio.to_thread(_play, scenario_job, me)
        finally:
            # Told, not cancelled: redis-py can swallow a cancellation that lands in the
            # middle of a command, and a heartbeat that went on would hold the job forever.
            played.set()
            await asyncio.wait([beat], timeout=_BEAT_STOP)
        say(f"{result.status} {job.key} {result.name} ({result.duration_s:.2f}s)")
        data = result.model_dump(mode="json")
        # The first attempt to finish keeps its result, whatever the queue did with the job.
        await queue.redis.set(result_key(job.key), json.dumps(data), nx=True, ex=RESULT_TTL)
        return data

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
        try:
            await host.aclose()
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
        return _unplayable(job, me, exc)

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


async def _play_here(job: ScenarioJob, me: str, host: _GraphHost, attempt: int) -> ScenarioResult:
    """Play a scenario against an agent at a URL on this loop, with this worker's Graph API."""
    try:
        options = decode_options(job.options)
        scenario = job.scenario()
    except HarnessError as exc:
        return _unplayable(job, me, exc)
    namespace = f"{job.key}:{attempt}"
    async with contextlib.AsyncExitStack() as stack:
        try:
            runner, shared = await stack.enter_async_context(host.serving(options))
        except HarnessError as exc:  # the agent at the URL can't be reached as configured
            return _unplayable(job, me, exc)
        store = open_store(options.store_url)
        try:
            return await runner.run_scenario(
                scenario, store=store, namespace=namespace, shared=shared
            )
        finally:
            await store.close()
            if shared is not None:
                # Late sends are answered for a quiet window, then the scenario is let go:
                # a worker's Graph API lives on, and keeps no ended scenario for good.
                asyncio.get_running_loop().call_later(options.quiet, shared.forget, namespace)


def _unplayable(job: ScenarioJob, me: str, exc: HarnessError) -> ScenarioResult:
    return ScenarioResult(
        name=f"scenario {job.index}",
        path=job.path,
        status="error",
        error=f"worker {me} could not run it: {exc}",
    )


class _GraphHost:
    """The Graph API this worker serves for URL scenarios: one run's at a time, kept open.

    A run's scenarios share it (its options are the same for all of them);
    a scenario of another run waits until the last one of the run before has
    ended, then the Graph API is served anew with that run's settings.
    """

    def __init__(self, place: GraphPlace) -> None:
        self.place = place
        self._key: str | None = None
        self._runner: Runner | None = None
        self._shared: Any = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._active = 0
        self._turn = asyncio.Condition()

    @contextlib.asynccontextmanager
    async def serving(self, options: RunOptions) -> AsyncIterator[tuple[Runner, Any]]:
        """The runner and the shared Graph API for a scenario of the run with ``options``."""
        here = dataclasses.replace(
            options,
            channel_options={
                **options.channel_options,
                "graph_url": self.place.url,
                "graph_advertise": self.place.advertise,
                "serve_graph": True,
                **({"graph_routes": options.store_url} if options.store_url else {}),
            },
        )
        key = json.dumps(encode_options(here), sort_keys=True)
        async with self._turn:
            await self._turn.wait_for(lambda: self._key == key or self._active == 0)
            if self._key != key:
                await self._close()
                fresh = Runner(here)
                stack = contextlib.AsyncExitStack()
                self._shared = await stack.enter_async_context(fresh.run_context())
                self._runner, self._stack, self._key = fresh, stack, key
            self._active += 1
            runner, shared = self._runner, self._shared
        assert runner is not None
        try:
            yield runner, shared
        finally:
            async with self._turn:
                self._active -= 1
                self._turn.notify_all()

    async def aclose(self) -> None:
        """Stop serving."""
        async with self._turn:
            await self._close()

    async def _close(self) -> None:
        stack, self._stack = self._stack, None
        self._key = self._runner = self._shared = None
        if stack is not None:
            await stack.aclose()
