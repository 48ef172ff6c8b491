"""A store failing under a scenario: noted whoever catches the error, a change never sent twice."""

from __future__ import annotations

import asyncio
import time

import pytest

from harness.exceptions import StoreUnavailable
from harness.outages import collect_outages, had_outage, note_outage
from harness.store import MemoryStore, RedisStore
from harness.suites.store_watch import watch_outages
from tests.bots.loopback import free_port
from tests.support.redis_server import RedisServer


def test_an_outage_is_noted_once_for_the_block_that_met_it() -> None:
    assert not note_outage("nobody is watching")  # outside a scenario: dropped
    with collect_outages() as outages:
        assert not had_outage()
        assert note_outage("Redis at redis://h:1/0 is unavailable")
        note_outage("Redis at redis://h:1/0 is unavailable")
        assert had_outage()
    assert outages.messages == ["Redis at redis://h:1/0 is unavailable"]
    assert not had_outage()


async def test_tasks_started_in_the_block_note_their_outages_there() -> None:
    async def background() -> None:
        note_outage("the agent's background task met it")

    with collect_outages() as outages:
        await asyncio.create_task(background())
    assert outages.messages == ["the agent's background task met it"]


async def test_a_dead_server_is_an_outage_even_when_the_caller_swallows_the_error() -> None:
    store = RedisStore.from_url(f"redis://127.0.0.1:{free_port()}/0", retries=0)
    try:
        async with watch_outages(store) as outages:
            caught: list[StoreUnavailable] = []
            try:
                await store.set_if_absent("seen:wamid.1", "1")
            except StoreUnavailable as exc:  # an agent that catches it and carries on
                caught.append(exc)
    finally:
        await store.close()
    assert [exc.noted for exc in caught] == [True]  # the terminal need not print it again
    assert len(outages.messages) == 1
    assert outages.messages[0].startswith("Redis at redis://127.0.0.1:")


async def test_after_an_outage_the_scenarios_store_gives_up_at_once() -> None:
    store = RedisStore.from_url(f"redis://127.0.0.1:{free_port()}/0")  # six retries
    try:
        with collect_outages():
            note_outage("the store failed already")
            started = time.monotonic()
            with pytest.raises(StoreUnavailable):
                await store.get("k")
            assert time.monotonic() - started < 0.5  # no backoff: the verdict is lost anyway
    finally:
        await store.close()


async def test_a_memory_store_never_has_an_outage() -> None:
    store = MemoryStore()
    async with watch_outages(store) as outages:
        await store.set("k", "v")
    async with watch_outages(None) as none:
        pass
    assert not outages
    assert not none


@pytest.mark.redis
async def test_a_restart_under_a_watched_scenario_is_an_outage(redis_server: RedisServer) -> None:
    store = RedisStore.from_url(redis_server.url)
    try:
        async with watch_outages(store) as outages:
            await store.set("window:ana", "open")
            await redis_server.restart()
            assert await store.get("window:ana") is None  # every command answered ...
        async with watch_outages(store) as after:
            await store.set("window:ana", "open")
    finally:
        await store.close()
    assert outages.messages == [  # ... yet the scenario's keys are gone
        f"Redis at {redis_server.url} restarted while the scenario ran, "
        "and the keys the scenario had written are gone"
    ]
    assert not after  # the next scenario starts on the new server: nothing lost


@pytest.mark.redis
async def test_a_change_whose_reply_is_overdue_is_not_sent_twice(
    redis_server: RedisServer,
) -> None:
    store = RedisStore.from_url(redis_server.url, timeout=0.3)
    try:
        await store.ping()
        with collect_outages() as outages:
            redis_server.pause()
            claim = asyncio.create_task(store.set_if_absent("seen:wamid.1", "1"))
            await asyncio.sleep(0.8)  # past the reply timeout: the first try is in doubt
            redis_server.resume()
            # Sent again, it would find its own first try and answer False: "seen before".
            with pytest.raises(StoreUnavailable, match="may or may not have been made"):
                await asyncio.wait_for(claim, timeout=10)
        assert await store.get("seen:wamid.1") == b"1"  # the first try did land
    finally:
        await store.close()
    assert len(outages.messages) == 1


@pytest.mark.redis
async def test_a_read_whose_reply_is_overdue_is_asked_again(redis_server: RedisServer) -> None:
    store = RedisStore.from_url(redis_server.url, timeout=0.3)
    try:
        await store.set("k", "v")
        with collect_outages() as outages:
            redis_server.pause()
            read = asyncio.create_task(store.get("k"))
            await asyncio.sleep(0.5)
            redis_server.resume()
            assert await asyncio.wait_for(read, timeout=10) == b"v"
    finally:
        await store.close()
    assert not outages
