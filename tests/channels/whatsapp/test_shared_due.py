"""The Lua scripts behind shared due webhooks and shared age limits, run in a real Redis.

Claims (:data:`~channels.whatsapp._shared_scripts.CLAIM`) hand each due job
to one holder, and a claim whose lease runs out goes to the next; trimming
by age (:data:`~channels.whatsapp._shared_scripts.TRIM`) keeps a log's
absolute indices and an active turn.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from channels.whatsapp._shared_scripts import AGAIN, APPEND, CLAIM, DONE, RELEASE, TRIM

pytestmark = pytest.mark.redis

NOW = 1_800_000_000_000_000  # virtual microseconds


@pytest.fixture
async def client(redis_url: str, namespace: str) -> AsyncIterator[aioredis.Redis]:
    redis = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        yield redis
    finally:
        keys = [key async for key in redis.scan_iter(match=f"{namespace}:*")]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()


def _keys(namespace: str) -> list[str]:
    return [f"{namespace}:{name}" for name in ("due", "jobs", "leases", "holders")]


async def _add(client: aioredis.Redis, namespace: str, job_id: str, due: int) -> None:
    due_key, jobs_key, _, _ = _keys(namespace)
    await client.hset(jobs_key, job_id, json.dumps({"id": job_id, "due": str(due)}))
    await client.zadd(due_key, {job_id: due})


async def test_a_due_job_goes_to_one_holder_and_to_another_once_its_lease_runs_out(
    client: aioredis.Redis, namespace: str
) -> None:
    claim, done = client.register_script(CLAIM), client.register_script(DONE)
    keys = _keys(namespace)
    await _add(client, namespace, "later", NOW + 5_000_000)
    await _add(client, namespace, "now", NOW)
    first = await claim(keys=keys, args=[NOW, 200, "a", 10, ""])
    again = await claim(keys=keys, args=[NOW, 200, "b", 10, ""])
    await asyncio.sleep(0.3)  # a's lease (200 ms) runs out: a stopped mid-delivery
    taken = await claim(keys=keys, args=[NOW, 200, "b", 10, ""])
    stale = await done(keys=keys[1:], args=["now", "a"])
    over = await done(keys=keys[1:], args=["now", "b"])
    left = await client.zrange(keys[0], 0, -1)
    assert [json.loads(first[0])["id"], first[1]] == ["now", ""]
    assert again == []  # claimed already, and not yet "later"
    assert [json.loads(taken[0])["id"], taken[1]] == ["now", "!"]  # a may have sent it
    assert (stale, over) == (0, 1)  # a no longer holds it; b's delivery ends it
    assert left == ["later"]
    assert await client.hkeys(keys[1]) == ["later"]


async def test_a_retry_is_due_again_and_a_stopping_holder_hands_its_claims_back(
    client: aioredis.Redis, namespace: str
) -> None:
    claim, again = client.register_script(CLAIM), client.register_script(AGAIN)
    release = client.register_script(RELEASE)
    keys = _keys(namespace)
    await _add(client, namespace, "one", NOW)
    await _add(client, namespace, "two", NOW)
    await claim(keys=keys, args=[NOW, 60_000, "a", 10, "one"])  # that job only
    retry = json.dumps({"id": "one", "due": str(NOW + 10_000_000), "attempt": 1})
    refused = await again(keys=keys, args=["one", "b", NOW + 10_000_000, retry])
    moved = await again(keys=keys, args=["one", "a", NOW + 10_000_000, retry])
    await claim(keys=keys, args=[NOW, 60_000, "a", 10, "two"])
    handed = await release(keys=keys, args=["a"])
    due = await client.zrange(keys[0], 0, -1, withscores=True)
    assert (refused, moved, handed) == (0, 1, 1)
    assert due == [("two", float(NOW)), ("one", float(NOW + 10_000_000))]
    kept = await client.hget(keys[1], "one")
    assert kept is not None
    assert json.loads(kept)["attempt"] == 1
    assert await client.zcard(keys[2]) == 0


async def test_trimming_by_age_keeps_the_indices_absolute_and_an_active_turn_whole(
    client: aioredis.Redis, namespace: str
) -> None:
    append, trim = client.register_script(APPEND), client.register_script(TRIM)
    keys = [f"{namespace}:{name}" for name in ("events", "events:first", "events:at")]
    entries = [f"e{i}" for i in range(10)]
    times = [NOW + i * 60_000_000 for i in range(10)]  # one a minute
    await append(keys=keys, args=[0, 10, *entries, *times])
    # Nothing is old, but the log holds no more than twice its count of 3.
    bounded = await trim(keys=keys, args=[times[0], 3, -1])
    # Older than minute 8, but a turn still active began at minute 6: kept from there.
    kept_turn = await trim(keys=keys, args=[times[8], 0, times[6]])
    # The turn is over: older than minute 8 goes.
    aged = await trim(keys=keys, args=[times[8], 0, -1])
    assert bounded == [4, 6]
    assert kept_turn == [6, 4]
    assert aged == [8, 2]
    assert await client.lrange(keys[0], 0, -1) == ["e8", "e9"]
    assert await client.lrange(keys[2], 0, -1) == [str(t) for t in times[8:]]
    assert await client.get(keys[1]) == "8"
