"""Several workers, one user: state, bookings, bursts and locks shared through the store."""

from __future__ import annotations

import pytest
import redis.asyncio as aioredis

from harness.clock import VirtualClock
from harness.store import MemoryStore, RedisStore
from tests.agents.booking.support import USER, FakeGraph, Harness, button_payload, text_payload


async def test_two_workers_sharing_a_store_hold_one_conversation() -> None:
    clock = VirtualClock()
    store = MemoryStore(clock=clock)
    graph = FakeGraph()
    one = Harness(store=store, clock=clock, graph=graph)
    two = Harness(store=store, clock=clock, graph=graph)
    try:
        await one.post(text_payload("wamid.1", "I'm vegan, a table on friday please"))
        await one.run()
        await two.post(text_payload("wamid.2", "8pm"))
        await two.run()
        proposal = graph.messages[-1]["interactive"]["body"]["text"]
        assert "Friday 2 January at 20:00" in proposal  # worker two knew the day
        assert "vegan" in proposal  # and the need
        await one.post(button_payload("wamid.3", "confirm", "Confirm", context="wamid.OUT2"))
        await one.run()
        [booking] = await two.agent.calendar.bookings_of(USER)
        assert booking["notes"] == "vegan"
    finally:
        await one.aclose()
        await two.aclose()


async def test_a_burst_split_across_workers_is_answered_once() -> None:
    clock = VirtualClock()
    store = MemoryStore(clock=clock)
    graph = FakeGraph()
    one = Harness(store=store, clock=clock, graph=graph)
    two = Harness(store=store, clock=clock, graph=graph)
    try:
        await one.post(text_payload("wamid.1", "hi"))
        await one.run(0.5)
        await two.post(text_payload("wamid.2", "table on friday"))
        await two.run(0.5)
        await one.post(text_payload("wamid.3", "at 8pm"))
        await one.run(10)
        [answer] = graph.messages
        assert answer["type"] == "interactive"
    finally:
        await one.aclose()
        await two.aclose()


async def test_a_redelivery_to_another_worker_is_still_a_duplicate() -> None:
    clock = VirtualClock()
    store = MemoryStore(clock=clock)
    graph = FakeGraph()
    one = Harness(store=store, clock=clock, graph=graph)
    two = Harness(store=store, clock=clock, graph=graph)
    try:
        await one.post(text_payload("wamid.1", "hello"))
        await two.post(text_payload("wamid.1", "hello"))
        await one.run()
        await two.run()
        assert len(graph.messages) == 1
    finally:
        await one.aclose()
        await two.aclose()


@pytest.mark.redis
async def test_two_workers_share_state_through_redis(redis_url: str, namespace: str) -> None:
    clock = VirtualClock()
    graph = FakeGraph()
    store_one = RedisStore.from_url(redis_url, namespace=namespace)
    store_two = RedisStore.from_url(redis_url, namespace=namespace)
    one = Harness(store=store_one, clock=clock, graph=graph)
    two = Harness(store=store_two, clock=clock, graph=graph)
    try:
        await one.post(text_payload("wamid.1", "I use a wheelchair; friday please"))
        await one.run(io_step=0.5)
        await two.post(text_payload("wamid.1", "I use a wheelchair; friday please"))  # redelivered
        await two.post(text_payload("wamid.2", "8pm"))
        await two.run(io_step=0.5)
        assert len(graph.messages) == 2
        proposal = graph.messages[-1]["interactive"]["body"]["text"]
        assert "20:00" in proposal
        assert "wheelchair user" in proposal
        await one.post(button_payload("wamid.3", "confirm", "Confirm", context="wamid.OUT2"))
        await one.run(io_step=0.5)
        [booking] = await two.agent.calendar.bookings_of(USER)
        assert booking["step_free"] is True
        state = await two.agent.states.load(USER)
        assert state.bookings == [booking["booking_id"]]
    finally:
        await one.aclose()
        await two.aclose()
        await store_one.close()
        await store_two.close()
        await _drop_namespace(redis_url, namespace)


async def _drop_namespace(url: str, namespace: str) -> None:
    client = aioredis.Redis.from_url(url)
    try:
        keys = [key async for key in client.scan_iter(match=f"{namespace}:*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()
