"""A suite run handed out to ``harness worker`` processes: the coordinator's side.

``harness run --distributed URL`` checks the scenarios as a local run does
(bad input stops it before any job is queued), puts one job per scenario
on the queue in the broker's Redis (:mod:`harness.suites.queue`), and
collects the workers' results as they come, for the same progress,
reports and exit code as a local run. Each scenario runs on a worker
exactly as :class:`~harness.suites.runner.Runner` runs it locally, with the
same store namespace (``run id:index``) and seed. Against an agent at a URL,
each worker serves a Graph API of its own and writes its scenarios' users
in the run's store, so the agent's sends reach the right worker from any
Graph API of the harness (:mod:`harness.suites.worker`).

Exactly one result per scenario: a job is keyed by the run id and the
scenario's index, so queuing it twice queues it once, and when a job runs
twice (its worker was presumed dead, then answered after all) the first
result that arrives is the scenario's. A worker that dies mid-scenario
stops beating its heart; another worker's sweep hands the scenario out
again, up to :data:`~harness.suites.queue.ATTEMPTS` times, after which the
scenario is an ``error`` naming what happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

from harness.exceptions import ConfigError
from harness.results import RunResult, ScenarioResult
from harness.store import check_store
from harness.suites.jobs import (
    JOB_FUNCTION,
    NOT_PLAYED,
    ScenarioJob,
    job_key,
    parse_job_key,
    result_from_json,
    result_key,
    stopped_key,
)
from harness.suites.preflight import bind_invariants
from harness.suites.queue import ATTEMPTS, DEFAULT_HEARTBEAT, open_queue
from harness.suites.runner import Runner
from harness.suites.scenario import Scenario

if TYPE_CHECKING:
    from saq.job import Job
    from saq.queue.redis import RedisQueue

__all__ = ["JOB_TIMEOUT", "RESULT_TTL", "run_distributed"]

#: Seconds the broker keeps a finished job and its result (a coordinator that lost its
#: connection can still read them back within a day).
RESULT_TTL: Final = 24 * 3600

#: Seconds a scenario may run on a worker before the queue hands it out again.
JOB_TIMEOUT: Final = 600

# How often every unfinished job is read back, in case a notification was missed.
_POLL: Final = 1.0
# The longest the run's listener waits for a message before it looks whether to stop.
_LISTEN_STEP: Final = 0.25
# Seconds an aborted job that has attempts left may wait to be handed out again (the
# sweep that aborted it waits up to 5 s for the job to answer, then queues it); after
# that, the run hands it out itself.
_RETRY_WAIT: Final = 15.0
# Seconds without a job taken after which the run says that no worker may be running.
_IDLE: Final = 10.0
# A job whose worker stopped beating its heart and that no sweep can see any more (off the
# queue's list of active jobs) is handed out again by the run after this many seconds: a
# sweep aborts a job, waits up to 5 s for it, then hands it out, and a worker that dies in
# between, or takes the job back a moment after the abort, leaves it there for good.
_ORPHAN_GRACE: Final = 10.0
# How often the run looks for such jobs among those it waits for.
_ORPHAN_CHECK: Final = 2.0


async def run_distributed(
    runner: Runner,
    scenarios: Sequence[Scenario],
    broker_url: str,
    *,
    on_result: Callable[[ScenarioResult], None] | None = None,
    on_queued: Callable[[int], None] | None = None,
    on_idle: Callable[[float], None] | None = None,
) -> RunResult:
    """Run ``scenarios`` on the workers that serve ``broker_url``; results in the scenarios' order.

    ``on_idle`` hears, once, that no worker has taken a job for that many seconds
    after they were queued (none may be running). ``on_queued`` hears how many
    jobs were queued, once they are; ``on_result``
    hears each scenario's result as it arrives.
    """
    options = runner.options
    if options.target_url is not None and options.store_url is None:
        raise ConfigError(
            "--distributed with --target-url needs --redis: each worker plays its scenarios "
            "with a Graph API of its own, and the agent's sends find it through the run's store"
        )
    await check_store(options.store_url)  # a dead store stops the run at once, as locally
    for scenario in scenarios:
        bind_invariants(scenario)
    runner.check(scenarios)
    started_at = datetime.now(UTC)
    started = time.perf_counter()
    run_id = f"run{options.seed}-{started_at.strftime('%Y%m%d%H%M%S%f')}"
    jobs = [ScenarioJob.of(run_id, i, s, options) for i, s in enumerate(scenarios)]
    queue = await open_queue(broker_url, "--distributed")
    try:
        collector = _Collector(runner, scenarios, run_id, queue, on_result)
        async with collector.listening():
            # One at a time, so that the queue holds them in the scenarios' order and a
            # worker plays them so, as a local run does (at once, they land in any order).
            for job in jobs:
                await _enqueue(queue, job)
            if on_queued is not None:
                on_queued(len(jobs))
            await collector.collect(on_idle)
    finally:
        await queue.disconnect()
    return RunResult(
        scenarios=tuple(r for r in collector.results if r is not None),
        started_at=started_at,
        duration_s=round(time.perf_counter() - started, 3),
        target=runner.target,
        channel=options.channel,
        seed=options.seed,
    )


async def _enqueue(queue: RedisQueue, job: ScenarioJob) -> None:
    from saq.job import Job

    await queue.enqueue(
        Job(
            function=JOB_FUNCTION,
            key=job.key,
            kwargs=job.to_kwargs(),
            # A heartbeat notices a dead worker; this bounds a scenario stuck on a live one.
            timeout=JOB_TIMEOUT,
            heartbeat=int(DEFAULT_HEARTBEAT),
            retries=ATTEMPTS,
            ttl=RESULT_TTL,
        )
    )


class _Collector:
    """Waits for each scenario's job to finish and keeps its first result."""

    def __init__(
        self,
        runner: Runner,
        scenarios: Sequence[Scenario],
        run_id: str,
        queue: RedisQueue,
        on_result: Callable[[ScenarioResult], None] | None,
    ) -> None:
        self.runner = runner
        self.scenarios = scenarios
        self.run_id = run_id
        self.queue = queue
        self.on_result = on_result
        self.results: list[ScenarioResult | None] = [None] * len(scenarios)
        self.pending = set(range(len(scenarios)))
        self.heard: asyncio.Queue[str] = asyncio.Queue()
        self.stopping = False
        self.aborted_since: dict[int, float] = {}
        self.orphaned_since: dict[int, float] = {}
        self.checked = time.monotonic()

    @contextlib.asynccontextmanager
    async def listening(self) -> AsyncIterator[None]:
        """Hear the jobs' status changes while the block runs (a missed one is polled)."""
        stop = asyncio.Event()
        listener = asyncio.create_task(self._listen(stop))
        try:
            yield
        finally:
            # Stopped by a flag it reads between messages, not by cancellation: Python
            # 3.11's wait_for can swallow a cancellation (redis-py waits with it), and a
            # listener that missed one kept its connection open past the queue's close.
            stop.set()
            await listener

    async def _listen(self, stop: asyncio.Event) -> None:
        """Put on :attr:`heard` the key of each job of the run said to be done, until ``stop``."""
        from redis.exceptions import RedisError
        from saq.job import Status

        done = {s.value for s in (Status.COMPLETE, Status.FAILED, Status.ABORTED)}
        ids = self.queue.job_id("")  # a job's channel is its id: this, then its key
        pubsub = self.queue.redis.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.psubscribe(f"{ids}{self.run_id}:*")
            while not stop.is_set():
                message = await pubsub.get_message(timeout=_LISTEN_STEP)
                if message is None or message["type"] != "pmessage":
                    continue
                if message["data"].decode() in done:
                    self.heard.put_nowait(message["channel"].decode().removeprefix(ids))
        except (RedisError, OSError):
            pass  # the broker went away: the run's polls find the jobs, or its outage
        finally:
            with contextlib.suppress(RedisError, OSError):
                await pubsub.aclose()

    async def collect(self, on_idle: Callable[[float], None] | None = None) -> None:
        """Until every scenario has its result (or, stopped early, every running one)."""
        from saq.job import Status

        queued = time.monotonic()
        taken = False
        while self.pending:
            try:
                keys = [await asyncio.wait_for(self.heard.get(), _POLL)]
                while not self.heard.empty():
                    keys.append(self.heard.get_nowait())
            except TimeoutError:
                keys = [job_key(self.run_id, i) for i in sorted(self.pending)]
            await self._kept_results()
            jobs = await self.queue.jobs(keys)
            taken = taken or any(j is not None and j.status != Status.QUEUED for j in jobs)
            if not taken and on_idle is not None and time.monotonic() - queued > _IDLE:
                on_idle(_IDLE)
                on_idle = None
            for job in jobs:
                if job is not None:
                    await self._finished(job)
            if self.pending and time.monotonic() - self.checked >= _ORPHAN_CHECK:
                self.checked = time.monotonic()
                if len(keys) < len(self.pending):  # only what was heard of: read the rest too
                    jobs = await self.queue.jobs(
                        [job_key(self.run_id, i) for i in sorted(self.pending)]
                    )
                await self._hand_out_orphans(jobs)

    async def _hand_out_orphans(self, jobs: Sequence[Job | None]) -> None:
        """Hand out again the jobs of dead workers that the queue's sweep no longer sees.

        The sweep looks only at the queue's list of active jobs; a job taken off
        it (a sweep's abort) whose worker then dies before it is handed out again
        would wait for ever, and the run with it.
        """
        from saq.job import Status

        stuck = {
            parse_job_key(job.key)[1]: job
            for job in jobs
            if job is not None and job.status in (Status.ACTIVE, Status.ABORTING) and job.stuck
        }
        for index in [i for i in self.orphaned_since if i not in stuck]:
            del self.orphaned_since[index]
        if not stuck:
            return
        listed = set(await self.queue.redis.lrange(self.queue.namespace("active"), 0, -1))
        for index, job in stuck.items():
            if job.id.encode() in listed:
                self.orphaned_since.pop(index, None)  # the sweep sees it: the sweep's to retry
                continue
            if not _waited(self.orphaned_since, index, _ORPHAN_GRACE):
                continue
            lost = "its worker stopped, and the queue lost sight of its job"
            if job.retryable:
                await self.queue.retry(job, lost)
            elif index in self.pending:
                await self._settle(index, self._error(index, lost))

    async def _kept_results(self) -> None:
        """The results the workers kept for scenarios still pending (see :func:`result_key`)."""
        pending = sorted(self.pending)
        if not pending:
            return
        kept = await self.queue.redis.mget([result_key(job_key(self.run_id, i)) for i in pending])
        for index, data in zip(pending, kept, strict=True):
            if data is not None and index in self.pending:
                await self._settle(index, result_from_json(json.loads(data)))

    async def _finished(self, job: Job) -> None:
        from saq.job import Status

        index = parse_job_key(job.key)[1]
        if index not in self.pending:
            return  # a second run of the same scenario: the first result stands
        if job.status == Status.COMPLETE:
            if isinstance(job.result, dict) and NOT_PLAYED in job.result:
                self.pending.discard(index)  # handed back unplayed: the run has stopped
                return
            result = result_from_json(job.result)
        elif job.status == Status.FAILED:
            result = self._error(index, f"its worker failed: {_last_line(job.error)}")
        elif job.status == Status.ABORTED:
            if self.stopping:  # taken off the queue by -x or an outage: not run
                self.pending.discard(index)
                return
            if job.retryable:
                # The queue's sweep aborts a job it takes for lost, then hands it out again
                # (it may take a job just handed out for one): wait for the next attempt.
                if not _waited(self.aborted_since, index, _RETRY_WAIT):
                    return
                # Aborted, and no one handed it out again: a worker's abort of a copy the
                # queue had handed out twice ends so. Hand it out, as for a lost job.
                await self.queue.retry(job, f"aborted ({_last_line(job.error)}), not retried")
                return
            result = self._error(index, f"its job was aborted: {_last_line(job.error)}")
        else:
            return
        await self._settle(index, result)

    async def _settle(self, index: int, result: ScenarioResult) -> None:
        """Scenario ``index`` has its one result."""
        self.pending.discard(index)
        self.results[index] = result
        if self.on_result is not None:
            self.on_result(result)
        if self._stops_after(result) and not self.stopping:
            await self._stop()

    def _stops_after(self, result: ScenarioResult) -> bool:
        failed = self.runner.options.fail_fast and result.status in ("failed", "error")
        return failed or result.outage

    async def _stop(self) -> None:
        """Take every scenario not yet started off the queue; those running finish."""
        from saq.job import Status

        self.stopping = True
        # First, so that a job the sweep queues again after this is not played either.
        await self.queue.redis.set(stopped_key(self.run_id), "1", ex=RESULT_TTL)
        # Every job of the run: one whose result is kept may be queued again by the sweep.
        keys = [job_key(self.run_id, i) for i in range(len(self.scenarios))]
        for job in await self.queue.jobs(keys):
            if job is not None and job.status == Status.QUEUED:
                await self.queue.abort(job, "the run stopped before this scenario started")
                self.pending.discard(parse_job_key(job.key)[1])

    def _error(self, index: int, message: str) -> ScenarioResult:
        scenario = self.scenarios[index]
        seed = scenario.seed if scenario.seed is not None else self.runner.options.seed
        return ScenarioResult(
            name=scenario.name,
            path=str(scenario.path or ""),
            channel=self.runner.options.channel,
            seed=seed,
            status="error",
            error=message,
        )


def _waited(since: dict[int, float], index: int, grace: float) -> bool:
    """Whether scenario ``index`` has been as it is for ``grace`` s since ``since`` first saw it.

    If so, it is forgotten, so that a later wait starts afresh.
    """
    now = time.monotonic()
    if now - since.setdefault(index, now) < grace:
        return False
    del since[index]
    return True


def _last_line(text: str | None) -> str:
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no reason given"
