"""Background tasks stop when asked, even when a cancellation is lost on the way."""

from __future__ import annotations

import asyncio

import pytest

from harness._tasks import cancel_until_done


async def _loses_its_first_cancellation(rounds: list[int]) -> None:
    """A loop that carries on after one cancellation, as one in a Redis command may on 3.11."""
    lost = False
    while True:
        try:
            await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            if lost:
                raise
            lost = True
        rounds.append(1)


async def test_a_task_that_lost_its_cancellation_is_cancelled_again() -> None:
    rounds: list[int] = []
    task = asyncio.create_task(_loses_its_first_cancellation(rounds))
    await asyncio.sleep(0.03)
    task.cancel()
    await asyncio.sleep(0.1)
    assert not task.done()  # one cancel() was not enough

    await asyncio.wait_for(cancel_until_done(task), 5)
    assert task.cancelled()


async def test_tasks_already_done_and_an_exception_a_task_ended_with() -> None:
    async def fails() -> None:
        raise ValueError("broken")

    failed = asyncio.create_task(fails())
    finished = asyncio.create_task(asyncio.sleep(0))
    await asyncio.sleep(0.01)
    running = asyncio.create_task(asyncio.sleep(60))
    with pytest.raises(ValueError, match="broken"):
        await cancel_until_done(finished, running, failed)
    assert running.cancelled()
    await cancel_until_done()  # nothing to stop


@pytest.mark.redis
async def test_a_loop_of_redis_commands_stops_every_time(redis_url: str) -> None:
    from redis.asyncio import Redis

    client: Redis = Redis.from_url(redis_url)

    async def publishing() -> None:
        while True:
            await client.publish("harness-test-tasks", "x")

    try:
        for _ in range(30):
            task = asyncio.create_task(publishing())
            await asyncio.sleep(0.005)
            await asyncio.wait_for(cancel_until_done(task), 5)
            assert task.cancelled()
    finally:
        await client.aclose()
