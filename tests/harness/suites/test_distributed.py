"""A suite handed to workers through Redis gives what a local run gives, one result per scenario.

The worker runs here as a task of the test's own loop; the tests with worker
processes, one of them killed mid-scenario, are in test_distributed_processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness._tasks import cancel_until_done
from harness.exceptions import ConfigError, StoreUnavailable
from harness.results import RunResult, ScenarioResult
from harness.suites.distributed import _enqueue, run_distributed
from harness.suites.jobs import (
    NOT_PLAYED,
    ScenarioJob,
    job_key,
    parse_job_key,
    result_key,
    stopped_key,
)
from harness.suites.queue import open_queue
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import load_scenarios
from harness.suites.worker import run_worker
from tests.bots.loopback import free_port
from tests.support.bot_at_url import echo_bot_at_url
from tests.support.redis_server import RedisServer

SUITE = Path(__file__).resolve().parents[3] / "scenarios" / "booking"
# One planted bug, so that the verdicts compared are not all "passed".
OPTIONS = RunOptions(
    target="agents.booking:agent_factory",
    agent_settings={"BOOKING_REGRESSIONS": "no_dedupe"},
)
# How long a worker or a run stopped by a test may take to close its connections before it is
# cancelled again: on Python 3.11 a cancellation can be lost in a Redis command (harness._tasks).
_CLEAN_UP = 5.0

if TYPE_CHECKING:
    from saq.queue.redis import RedisQueue

pytestmark = [pytest.mark.redis]


def verdicts(run: RunResult) -> list[tuple[Any, ...]]:
    """What a run found of each scenario, in order, without its ids or timings."""
    return [
        (
            r.name,
            r.path,
            r.status,
            r.error,
            [(v.rule, v.kind, v.turn, v.step, v.line) for v in r.violations],
            r.reproduce,
            len(r.conversation.events) if r.conversation is not None else None,
        )
        for r in run.scenarios
    ]


async def _all_queued(queue: RedisQueue, count: int) -> bool:
    """Whether ``count`` jobs are waiting on ``queue`` within 5 s."""
    for _ in range(100):
        if await queue.count("queued") == count:
            return True
        await asyncio.sleep(0.05)
    return False


@pytest.fixture
async def worker(redis_server: RedisServer) -> AsyncIterator[list[str]]:
    """A worker serving the private Redis in this loop; yields the lines it says."""
    said: list[str] = []
    task = asyncio.create_task(run_worker(redis_server.url, heartbeat=2, say=said.append))
    try:
        yield said
    finally:
        await cancel_until_done(task, again_after=_CLEAN_UP)


async def test_a_distributed_run_finds_what_a_local_run_finds(
    redis_server: RedisServer, worker: list[str]
) -> None:
    scenarios = load_scenarios([SUITE])
    local = await Runner(OPTIONS).run(scenarios)
    heard: list[ScenarioResult] = []
    run = await asyncio.wait_for(
        run_distributed(Runner(OPTIONS), scenarios, redis_server.url, on_result=heard.append),
        60,
    )
    assert verdicts(run) == verdicts(local)
    assert {r.status for r in run.scenarios} == {"passed", "failed"}
    assert (run.target, run.channel, run.seed) == (local.target, local.channel, local.seed)
    # Progress heard each scenario once, as it came.
    assert sorted(r.name for r in heard) == sorted(s.name for s in scenarios)
    assert sum(line.startswith("started ") for line in worker) == len(scenarios)


async def test_a_worker_that_starts_with_jobs_waiting_plays_each_once(
    redis_server: RedisServer,
) -> None:
    # The worker's first sweep and its first jobs come at once: the sweep must not take a
    # job it is taking for a lost one (it did, and played it twice, every time).
    names = ["cancel_booking", "happy_confirm_button", "confirm_by_typing_yes"]
    scenarios = load_scenarios([SUITE / f"{name}.yaml" for name in names])
    run = asyncio.create_task(run_distributed(Runner(OPTIONS), scenarios, redis_server.url))
    queue = await open_queue(redis_server.url)
    try:
        assert await _all_queued(queue, len(scenarios))
    finally:
        await queue.disconnect()
    said: list[str] = []
    worker = asyncio.create_task(
        run_worker(redis_server.url, heartbeat=2, concurrency=2, say=said.append)
    )
    try:
        done = await asyncio.wait_for(run, 60)
        await asyncio.sleep(3)  # a job handed out twice would have started again by now
    finally:
        await cancel_until_done(worker, again_after=_CLEAN_UP)
    assert [r.status for r in done.scenarios] == ["passed"] * 3
    started = sorted(line.split()[1] for line in said if line.startswith("started "))
    assert started == [job_key(parse_job_key(started[0])[0], i) for i in range(3)], said


async def test_a_scenario_whose_job_runs_twice_keeps_its_first_result(
    redis_server: RedisServer,
) -> None:
    # A worker of the test's own: it takes both jobs, answers the first, answers it again
    # (as a job retried while its first worker was only slow would), then the second.
    from saq.job import Status

    scenarios = load_scenarios([SUITE / "happy_confirm_button.yaml", SUITE / "cancel_booking.yaml"])
    local = Runner(OPTIONS)
    heard: list[ScenarioResult] = []
    first_heard = asyncio.Event()

    def hear(result: ScenarioResult) -> None:
        heard.append(result)
        first_heard.set()

    run = asyncio.create_task(
        run_distributed(Runner(OPTIONS), scenarios, redis_server.url, on_result=hear)
    )
    queue = await open_queue(redis_server.url)
    try:
        first, second = await queue.dequeue(timeout=10), await queue.dequeue(timeout=10)
        assert first is not None
        assert second is not None
        answers = {}
        for job in (first, second):
            played = ScenarioJob.from_kwargs(job.kwargs or {})
            # On a loop of its own, as a worker plays it: a virtual clock moves when its
            # loop is idle, and this one is busy with the coordinator.
            answers[job.key] = await asyncio.to_thread(
                asyncio.run, local.run_scenario(played.scenario(), namespace=job.key)
            )
        await first.finish(Status.COMPLETE, result=answers[first.key].model_dump(mode="json"))
        await asyncio.wait_for(first_heard.wait(), 10)
        late = answers[first.key].model_copy(update={"status": "error", "error": "late"})
        await first.finish(Status.COMPLETE, result=late.model_dump(mode="json"))
        await asyncio.sleep(0.3)
        await second.finish(Status.COMPLETE, result=answers[second.key].model_dump(mode="json"))
        result = await asyncio.wait_for(run, 30)
    finally:
        await queue.disconnect()
    assert [r.name for r in result.scenarios] == [s.name for s in scenarios]
    assert [r.status for r in result.scenarios] == ["passed", "passed"]
    assert [r.name for r in heard] == [r.name for r in result.scenarios]


async def test_an_agent_at_a_url_without_a_store_is_refused_before_anything_is_queued(
    redis_server: RedisServer,
) -> None:
    # The workers' Graph APIs find each other's users through the run's store.
    runner = Runner(RunOptions(target_url="http://127.0.0.1:9/webhook"))
    with pytest.raises(ConfigError, match="--target-url needs --redis"):
        await run_distributed(runner, load_scenarios([SUITE]), redis_server.url)
    queue = await open_queue(redis_server.url)
    try:
        assert await queue.count("queued") == 0
    finally:
        await queue.disconnect()


async def test_a_broker_that_does_not_answer_is_one_line() -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    with pytest.raises(StoreUnavailable, match=rf"--distributed: the broker at {url} did not"):
        await run_distributed(Runner(OPTIONS), load_scenarios([SUITE]), url)


async def test_a_broker_url_that_is_not_redis_is_refused() -> None:
    with pytest.raises(ConfigError, match="the broker is a Redis URL"):
        await run_distributed(Runner(OPTIONS), load_scenarios([SUITE]), "amqp://guest@host/")


def test_job_keys_are_the_run_and_the_scenarios_index() -> None:
    assert job_key("run0-20260101", 12) == "run0-20260101:12"
    assert parse_job_key("run0-20260101:12") == ("run0-20260101", 12)


async def test_fail_fast_takes_the_scenarios_not_yet_started_off_the_queue(
    redis_server: RedisServer, worker: list[str]
) -> None:
    # The slow agent takes about a second a scenario: the failure of the first is heard
    # long before the worker could have taken all the others.
    failing = SUITE / "redelivered_confirm_books_once.yaml"
    others = [
        "cancel_booking",
        "change_proposed_time",
        "confirm_by_typing_yes",
        "happy_confirm_button",
    ]
    scenarios = load_scenarios([failing, *(SUITE / f"{name}.yaml" for name in others)])
    assert len(scenarios) == 5
    options = RunOptions(
        target="tests.harness.suites.slow_agent:slow_agent",
        agent_settings={"BOOKING_REGRESSIONS": "no_dedupe"},
        fail_fast=True,
    )
    run = await asyncio.wait_for(run_distributed(Runner(options), scenarios, redis_server.url), 60)
    assert run.scenarios[0].status == "failed"
    assert 1 <= len(run.scenarios) < len(scenarios)
    queue = await open_queue(redis_server.url)
    try:
        # The queue's sweep may queue again, seconds later, a job the worker was only
        # taking as the run stopped; the worker hands such a copy back unplayed.
        for _ in range(100):
            if await queue.count("queued") == 0 and await queue.count("active") == 0:
                break
            await asyncio.sleep(0.1)
        assert await queue.count("queued") == 0
    finally:
        await queue.disconnect()
    started = [line.split()[1] for line in worker if line.startswith("started ")]
    # The first scenario, and at most the one the worker had begun when it failed.
    assert len(started) == len(set(started)) <= 2
    assert all(key.endswith((":0", ":1")) for key in started), "\n".join(worker)


async def test_a_job_of_a_stopped_run_is_handed_back_unplayed(
    redis_server: RedisServer, worker: list[str]
) -> None:
    from saq.job import Status

    scenario = load_scenarios([SUITE / "cancel_booking.yaml"])[0]
    job = ScenarioJob.of("run0-stopped", 0, scenario, OPTIONS)
    queue = await open_queue(redis_server.url)
    try:
        await queue.redis.set(stopped_key("run0-stopped"), "1")
        await _enqueue(queue, job)
        for _ in range(100):
            found = (await queue.jobs([job.key]))[0]
            if found is not None and found.status == Status.COMPLETE:
                break
            await asyncio.sleep(0.1)
        assert found is not None
        assert found.status == Status.COMPLETE
        assert found.result == {NOT_PLAYED: "its run stopped before it started"}
        assert await queue.redis.get(result_key(job.key)) is None
    finally:
        await queue.disconnect()
    assert worker[1:] == [f"not played {job.key}: its run stopped before it started"]


async def test_a_stopped_run_does_not_wait_for_a_job_handed_back_unplayed(
    redis_server: RedisServer,
) -> None:
    # The test is the worker: it takes both jobs, fails the first (fail fast stops the
    # run), and answers the second as a worker does for a stopped run.
    from saq.job import Status

    scenarios = load_scenarios([SUITE / "happy_confirm_button.yaml", SUITE / "cancel_booking.yaml"])
    options = dataclasses.replace(OPTIONS, fail_fast=True)
    run = asyncio.create_task(run_distributed(Runner(options), scenarios, redis_server.url))
    queue = await open_queue(redis_server.url)
    try:
        first, second = await queue.dequeue(timeout=10), await queue.dequeue(timeout=10)
        assert first is not None
        assert second is not None
        for taken in (first, second):
            await taken.update(status=Status.ACTIVE)
        failed = ScenarioResult(
            name=scenarios[0].name, path="", channel="whatsapp", seed=0, status="failed"
        )
        await first.finish(Status.COMPLETE, result=failed.model_dump(mode="json"))
        for _ in range(100):  # the run has stopped
            if await queue.redis.exists(stopped_key(parse_job_key(first.key)[0])):
                break
            await asyncio.sleep(0.1)
        await second.finish(Status.COMPLETE, result={NOT_PLAYED: "its run stopped"})
        done = await asyncio.wait_for(run, 30)
    finally:
        run.cancel()
        await queue.disconnect()
    assert [r.status for r in done.scenarios] == ["failed"]


async def test_a_run_queues_its_scenarios_in_their_order(redis_server: RedisServer) -> None:
    # The test is the worker: it reads the queue's list as the run left it, then takes the
    # jobs one by one and passes them, so that the run ends as runs do.
    from saq.job import Status

    scenarios = load_scenarios(sorted(SUITE.glob("*.yaml")))
    assert len(scenarios) >= 10
    run = asyncio.create_task(run_distributed(Runner(OPTIONS), scenarios, redis_server.url))
    queue = await open_queue(redis_server.url)
    try:
        assert await _all_queued(queue, len(scenarios))
        ids = await queue.redis.lrange(queue.namespace("queued"), 0, -1)
        for scenario in scenarios:
            job = await queue.dequeue(timeout=10)
            assert job is not None
            await job.update(status=Status.ACTIVE)
            passed = ScenarioResult(name=scenario.name, path="", seed=0, status="passed")
            await job.finish(Status.COMPLETE, result=passed.model_dump(mode="json"))
        done = await asyncio.wait_for(run, 30)
    finally:
        await queue.disconnect()
    keys = [queue.job_key_from_id(i.decode() if isinstance(i, bytes) else i) for i in ids]
    assert keys == [job_key(parse_job_key(keys[0])[0], i) for i in range(len(scenarios))]
    assert [r.status for r in done.scenarios] == ["passed"] * len(scenarios)


async def test_a_run_that_hears_news_as_it_ends_leaves_no_connection_open(
    redis_server: RedisServer,
) -> None:
    # The test is the worker, and it keeps saying the job is active while it finishes
    # it: the run's listener is handed a message at the moment the run stops listening,
    # and must still close its connection (it once kept it, past the queue's close).
    from redis.asyncio import Redis
    from saq.job import Status

    admin: Redis = Redis.from_url(redis_server.url)
    before = len(await admin.client_list())
    scenarios = load_scenarios([SUITE / "cancel_booking.yaml"])
    run = asyncio.create_task(run_distributed(Runner(OPTIONS), scenarios, redis_server.url))
    queue = await open_queue(redis_server.url)
    quiet = asyncio.Event()
    chatter: asyncio.Task[None] | None = None
    try:
        job = await queue.dequeue(timeout=10)
        assert job is not None
        await job.update(status=Status.ACTIVE)

        async def chatter_on() -> None:
            while not quiet.is_set():  # not cancelled: redis-py may swallow that
                await admin.publish(job.id, "active")

        chatter = asyncio.create_task(chatter_on())
        passed = ScenarioResult(name=scenarios[0].name, path="", seed=0, status="passed")
        await job.finish(Status.COMPLETE, result=passed.model_dump(mode="json"))
        done = await asyncio.wait_for(run, 30)
    finally:
        quiet.set()
        if chatter is not None:
            await chatter
        run.cancel()
        await queue.disconnect()
    assert [r.status for r in done.scenarios] == ["passed"]
    for _ in range(50):  # the server notices a closed connection a moment later
        clients = await admin.client_list()
        if len(clients) == before:
            break
        await asyncio.sleep(0.05)
    await admin.aclose()
    assert len(clients) == before, [c.get("cmd") for c in clients]


async def test_a_job_aborted_by_the_sweep_with_attempts_left_waits_for_its_next_attempt(
    redis_server: RedisServer,
) -> None:
    # The queue's sweep may take a job just handed out for a lost one: it aborts it, then
    # hands it out again. The abort is not the scenario's result; the next attempt's is.
    from saq.job import Status

    scenarios = load_scenarios([SUITE / "cancel_booking.yaml"])
    run = asyncio.create_task(run_distributed(Runner(OPTIONS), scenarios, redis_server.url))
    queue = await open_queue(redis_server.url)
    try:
        job = await queue.dequeue(timeout=10)
        assert job is not None
        job.attempts = 1
        await job.finish(Status.ABORTED, error="swept")
        await asyncio.sleep(1.5)  # the coordinator has heard of it, and read it back
        assert not run.done()
        await queue.retry(job, "swept")
        again = await queue.dequeue(timeout=10)
        assert again is not None
        played = ScenarioJob.from_kwargs(again.kwargs or {})
        result = await asyncio.to_thread(
            asyncio.run, Runner(OPTIONS).run_scenario(played.scenario(), namespace=again.key)
        )
        await again.finish(Status.COMPLETE, result=result.model_dump(mode="json"))
        done = await asyncio.wait_for(run, 30)
    finally:
        await queue.disconnect()
    assert [r.status for r in done.scenarios] == ["passed"]


@pytest.mark.slow
async def test_a_job_aborted_and_never_handed_out_again_is_handed_out_by_the_run(
    redis_server: RedisServer,
) -> None:
    # A worker that cancels a copy of a job the queue handed out twice finishes it aborted,
    # with no reason and no retry: the run hands it out again rather than wait or give up.
    from saq.job import Status

    async with _one_scenario_run(redis_server.url) as (run, queue):
        job = await queue.dequeue(timeout=10)
        assert job is not None
        job.attempts = 1
        await job.update(status=Status.ACTIVE)
        await job.finish(Status.ABORTED, error=None)
        done = await _played_when_handed_out_again(run, queue, job.key, "not retried")
    assert [r.status for r in done.scenarios] == ["passed"]


async def _orphan(queue: Any, *, attempts: int) -> Any:
    """Take a job as a worker would, then lose it as a worker that dies mid-sweep does.

    The worker marks the job active, with a one-second heartbeat it never beats
    again; a sweep took the job off the queue's list of active jobs (its abort)
    and died before it handed the job out again.
    """
    from saq.job import Status

    job = await queue.dequeue(timeout=10)
    assert job is not None
    job.attempts = attempts
    await job.update(status=Status.ACTIVE, heartbeat=1)
    await queue.redis.lrem(queue.namespace("active"), 0, job.id)
    return job


async def _played_when_handed_out_again(
    run: asyncio.Task[RunResult], queue: Any, key: str, why: str
) -> RunResult:
    """Wait for the run to hand job ``key`` out again (its error says ``why``), play it."""
    from saq.job import Status

    again = None
    for _ in range(30):  # the run hands it out again, after a wait
        again = await queue.dequeue(timeout=1)
        if again is not None:
            break
    assert again is not None
    assert again.key == key
    assert why in (again.error or "")
    played = ScenarioJob.from_kwargs(again.kwargs or {})
    result = await asyncio.to_thread(
        asyncio.run, Runner(OPTIONS).run_scenario(played.scenario(), namespace=again.key)
    )
    await again.finish(Status.COMPLETE, result=result.model_dump(mode="json"))
    return await asyncio.wait_for(run, 30)


@contextlib.asynccontextmanager
async def _one_scenario_run(url: str) -> AsyncIterator[tuple[asyncio.Task[RunResult], Any]]:
    """A run of one scenario against the broker at ``url``, and the queue, as a worker sees it."""
    scenarios = load_scenarios([SUITE / "cancel_booking.yaml"])
    run = asyncio.create_task(run_distributed(Runner(OPTIONS), scenarios, url))
    queue = await open_queue(url)
    try:
        yield run, queue
    finally:
        run.cancel()
        await queue.disconnect()


@pytest.mark.slow
async def test_a_job_its_dead_worker_left_where_no_sweep_sees_it_is_handed_out_again(
    redis_server: RedisServer,
) -> None:

    async with _one_scenario_run(redis_server.url) as (run, queue):
        lost = await _orphan(queue, attempts=1)
        done = await _played_when_handed_out_again(run, queue, lost.key, "lost sight of its job")
    assert [r.status for r in done.scenarios] == ["passed"]


@pytest.mark.slow
async def test_a_lost_job_with_no_attempt_left_is_an_error_not_a_wait(
    redis_server: RedisServer,
) -> None:
    from harness.suites.queue import ATTEMPTS

    async with _one_scenario_run(redis_server.url) as (run, queue):
        await _orphan(queue, attempts=ATTEMPTS)
        done = await asyncio.wait_for(run, 30)
    assert [r.status for r in done.scenarios] == ["error"]
    assert "lost sight of its job" in (done.scenarios[0].error or "")


@pytest.mark.slow
async def test_a_run_that_no_worker_serves_says_so_once(redis_server: RedisServer) -> None:
    said: list[float] = []
    told = asyncio.Event()

    def idle(seconds: float) -> None:
        said.append(seconds)
        told.set()

    run = asyncio.create_task(
        run_distributed(
            Runner(OPTIONS),
            load_scenarios([SUITE / "cancel_booking.yaml"]),
            redis_server.url,
            on_idle=idle,
        )
    )
    try:
        await asyncio.wait_for(told.wait(), 30)
        await asyncio.sleep(2)  # and only once
    finally:
        await cancel_until_done(run, again_after=_CLEAN_UP)
    assert said == [10.0]


@pytest.mark.network
def test_an_agent_at_a_url_that_fails_the_handshake_is_an_error_of_each_scenario_not_a_crash(
    redis_server: RedisServer,
) -> None:
    scenarios = load_scenarios([SUITE / "cancel_booking.yaml", SUITE / "happy_confirm_button.yaml"])
    said: list[str] = []

    async def distributed(url: str) -> RunResult:
        worker = asyncio.create_task(run_worker(redis_server.url, heartbeat=2, say=said.append))
        try:
            runner = Runner(RunOptions(target_url=url, store_url=redis_server.url))
            return await asyncio.wait_for(run_distributed(runner, scenarios, redis_server.url), 60)
        finally:
            await cancel_until_done(worker, again_after=_CLEAN_UP)

    # The bot answers on a loop of its own, as a bot in another process would.
    with echo_bot_at_url(verify_token="the-bots-own-token") as served:
        run = asyncio.run(distributed(served.webhook))
    assert [r.status for r in run.scenarios] == ["error", "error"]
    for result in run.scenarios:
        # The worker's result, not a crash of the worker's job (tried again, to no avail).
        assert re.fullmatch(
            rf"worker \S+ could not run it: webhook {re.escape(served.webhook)} failed the "
            r"verification handshake: it answered 403 .*",
            result.error or "",
        ), result.error
    assert sum(line.startswith("started ") for line in said) == 2, said
    assert served.bot.posts == 0
