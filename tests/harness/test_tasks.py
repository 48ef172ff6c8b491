"""Background tasks stop when asked, even when a cancellation is lost on the way."""

from __future__ import annotations

import asyncio

import pytest

from harness._tasks import cancel_until_done
from tests.support.cancellation import LosesOneCancellation


async def _loses_its_first_cancellation(rounds: list[int]) -> None:
    """A loop that carries on after one cancellation, as one in a Redis command may on 3.11."""
    losing = LosesOneCancellation()
    while True:
        await losing.sleep(0.01)
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
        # One cancel() and a wait: 19 and 25 of 30 rounds ran on here. The loop gives the event
        # loop a turn between commands, as the project's loops do (they poll or sleep); one
        # that never does can lose every cancellation for seconds on a loaded machine
        # (measured: over 20 s at a load of 6 on 2 cores).
        while True:
            await client.publish("harness-test-tasks", "x")
            await asyncio.sleep(0)

    try:
        for _ in range(30):
            task = asyncio.create_task(publishing())
            await asyncio.sleep(0.005)
            await asyncio.wait_for(cancel_until_done(task), 5)
            assert task.cancelled()
    finally:
        await client.aclose()


async def test_a_task_cleaning_up_is_given_the_time_asked_for() -> None:
    cleaned: list[str] = []

    async def closes_when_cancelled() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            await asyncio.sleep(0.2)  # closing its connections
            cleaned.append("closed")
            raise

    hurried = asyncio.create_task(closes_when_cancelled())
    await asyncio.sleep(0.01)
    await asyncio.wait_for(cancel_until_done(hurried), 5)
    assert cleaned == []  # cancelled again after 50 ms, the clean-up was cut short

    patient = asyncio.create_task(closes_when_cancelled())
    await asyncio.sleep(0.01)
    await asyncio.wait_for(cancel_until_done(patient, again_after=1.0), 5)
    assert cleaned == ["closed"]
    assert patient.cancelled()
