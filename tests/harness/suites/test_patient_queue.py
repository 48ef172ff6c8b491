"""The distributed run's sweep: a job being taken is left to its worker, a lost one is not."""

from __future__ import annotations

import asyncio
import time

import pytest
from saq.job import Job, Status
from saq.queue.redis import RedisQueue

from harness.suites._patient_queue import TAKING_GRACE
from harness.suites.queue import open_queue
from tests.support.redis_server import RedisServer

pytestmark = [pytest.mark.redis]


async def _sweep(queue: RedisQueue) -> list[str]:
    """One sweep, as a worker's upkeep makes it (the lock of the last one let go first)."""
    await queue.redis.delete(queue.namespace("sweep"))
    return await queue.sweep(lock=60, abort=0.1)


async def test_a_job_taken_but_not_yet_marked_active_is_not_swept_until_the_grace_ends(
    redis_server: RedisServer,
) -> None:
    queue = await open_queue(redis_server.url)
    try:
        await queue.enqueue(Job(function="f", key="being-taken", retries=3))
        taken = await queue.dequeue(timeout=5)  # on the active list, still marked queued
        assert taken is not None
        assert taken.status == Status.QUEUED
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
    finally:
        await queue.disconnect()


async def test_a_job_marked_active_in_time_is_left_to_its_worker(
    redis_server: RedisServer,
) -> None:
    queue = await open_queue(redis_server.url)
    try:
        await queue.enqueue(Job(function="f", key="marked", retries=3, heartbeat=30))
        taken = await queue.dequeue(timeout=5)
        assert taken is not None
        assert await _sweep(queue) == []
        taken.started = int(time.time() * 1000)  # as a worker marks it, in milliseconds
        await taken.update(status=Status.ACTIVE)
        await asyncio.sleep(TAKING_GRACE + 0.2)
        assert await _sweep(queue) == []
        assert await queue.count("active") == 1
        assert await queue.redis.hlen(queue.namespace("taking")) == 0  # nothing left behind
    finally:
        await queue.disconnect()


async def test_a_job_whose_heartbeat_stopped_is_swept_and_one_with_no_attempt_left_ends(
    redis_server: RedisServer,
) -> None:
    queue = await open_queue(redis_server.url)
    try:
        await queue.enqueue(Job(function="f", key="again", retries=3, heartbeat=1))
        await queue.enqueue(Job(function="f", key="last", retries=1, heartbeat=1))
        for _ in range(2):
            taken = await queue.dequeue(timeout=5)
            assert taken is not None
            taken.attempts = 1
            taken.started = int(time.time() * 1000)
            await taken.update(status=Status.ACTIVE)
        await asyncio.sleep(1.5)  # both hearts stopped
        assert sorted(await _sweep(queue)) == sorted([queue.job_id("again"), queue.job_id("last")])
        again, last = await queue.job("again"), await queue.job("last")
        assert again is not None
        assert last is not None
        assert again.status == Status.QUEUED
        assert last.status == Status.ABORTED
        assert await queue.count("active") == 0
    finally:
        await queue.disconnect()


async def test_a_job_whose_record_is_gone_leaves_the_active_list(
    redis_server: RedisServer,
) -> None:
    queue = await open_queue(redis_server.url)
    try:
        await queue.enqueue(Job(function="f", key="gone", retries=3))
        taken = await queue.dequeue(timeout=5)
        assert taken is not None
        await queue.redis.delete(taken.id)
        assert await _sweep(queue) == [taken.id]
        assert await queue.count("active") == 0
    finally:
        await queue.disconnect()


async def test_only_one_sweep_runs_while_its_lock_holds(redis_server: RedisServer) -> None:
    queue = await open_queue(redis_server.url)
    try:
        await queue.enqueue(Job(function="f", key="gone", retries=3))
        taken = await queue.dequeue(timeout=5)
        assert taken is not None
        await queue.redis.delete(taken.id)
        await queue.redis.set(queue.namespace("sweep"), 1, ex=60)  # another worker's round
        assert await queue.sweep(lock=60) == []
        assert await queue.count("active") == 1
    finally:
        await queue.disconnect()
