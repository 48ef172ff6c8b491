"""The distributed run's sweep: a job being taken is left to its worker, a lost one is not."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from saq.job import Job, Status
from saq.queue.redis import RedisQueue

from harness.suites._patient_queue import TAKING_GRACE
from harness.suites.queue import open_queue
from tests.support.redis_server import RedisServer

pytestmark = [pytest.mark.redis]


@pytest.fixture
async def queue(redis_server: RedisServer) -> AsyncIterator[RedisQueue]:
    """The queue a run opens, on the private Redis."""
    opened = await open_queue(redis_server.url)
    try:
        yield opened
    finally:
        await opened.disconnect()


async def _sweep(queue: RedisQueue) -> list[str]:
    """One sweep, as a worker's upkeep makes it (the lock of the last one let go first)."""
    await queue.redis.delete(queue.namespace("sweep"))
    return await queue.sweep(lock=60, abort=0.1)


async def _taken(queue: RedisQueue, key: str, *, active: bool, **fields: Any) -> Job:
    """Job ``key``, queued and taken as a worker takes it; marked ``active`` or not yet."""
    await queue.enqueue(Job(function="f", key=key, **fields))
    taken = await queue.dequeue(timeout=5)
    assert taken is not None
    assert taken.key == key
    if active:
        taken.attempts = 1
        taken.started = int(time.time() * 1000)  # as a worker marks it, in milliseconds
        await taken.update(status=Status.ACTIVE)
    return taken


async def test_a_job_taken_but_not_yet_marked_active_is_not_swept_until_the_grace_ends(
    queue: RedisQueue,
) -> None:
    taken = await _taken(queue, "being-taken", active=False, retries=3)
    assert taken.status == Status.QUEUED  # on the active list, not marked yet
    assert await _sweep(queue) == []
    assert await queue.count("active") == 1
    # Its worker died before it marked the job: after the grace the job is lost, and
    # handed out again.
    await asyncio.sleep(TAKING_GRACE + 0.2)
    assert await _sweep(queue) == [taken.id]
    assert await queue.count("queued") == 1
    assert await queue.count("active") == 0
    again = await queue.job("being-taken")
    assert again is not None
    assert again.status == Status.QUEUED
    assert again.error == "swept"


async def test_a_job_marked_active_in_time_is_left_to_its_worker(queue: RedisQueue) -> None:
    await _taken(queue, "marked", active=False, retries=3, heartbeat=30)
    assert await _sweep(queue) == []
    taken = await queue.job("marked")
    assert taken is not None
    taken.started = int(time.time() * 1000)
    await taken.update(status=Status.ACTIVE)
    await asyncio.sleep(TAKING_GRACE + 0.2)
    assert await _sweep(queue) == []
    assert await queue.count("active") == 1
    assert await queue.redis.hlen(queue.namespace("taking")) == 0  # nothing left behind


async def test_a_job_whose_heartbeat_stopped_is_swept_and_one_with_no_attempt_left_ends(
    queue: RedisQueue,
) -> None:
    again = await _taken(queue, "again", active=True, retries=3, heartbeat=1)
    last = await _taken(queue, "last", active=True, retries=1, heartbeat=1)
    await asyncio.sleep(1.5)  # both hearts stopped
    assert sorted(await _sweep(queue)) == sorted([again.id, last.id])
    after = {key: await queue.job(key) for key in ("again", "last")}
    assert {key: job.status if job else None for key, job in after.items()} == {
        "again": Status.QUEUED,
        "last": Status.ABORTED,
    }
    assert await queue.count("active") == 0


async def test_a_job_whose_record_is_gone_leaves_the_active_list(queue: RedisQueue) -> None:
    taken = await _taken(queue, "gone", active=False, retries=3)
    await queue.redis.delete(taken.id)
    assert await _sweep(queue) == [taken.id]
    assert await queue.count("active") == 0


async def test_only_one_sweep_runs_while_its_lock_holds(queue: RedisQueue) -> None:
    taken = await _taken(queue, "gone", active=False, retries=3)
    await queue.redis.delete(taken.id)
    await queue.redis.set(queue.namespace("sweep"), 1, ex=60)  # another worker's round
    assert await queue.sweep(lock=60) == []
    assert await queue.count("active") == 1
