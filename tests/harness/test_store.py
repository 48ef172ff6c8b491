"""The store contract, run against memory and a real Redis, and Redis reconnection."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta

import pytest
import redis.asyncio as aioredis

from harness.clock import SystemClock, VirtualClock
from harness.exceptions import ConfigError, StoreError, StoreUnavailable
from harness.store import MemoryStore, RedisStore, Store, check_store, open_store
from tests.bots.loopback import free_port
from tests.support.redis_server import RedisServer

# Read at import, before the autouse fixture clears the environment.
_REQUIRE_REDIS = bool(os.environ.get("CI")) or bool(os.environ.get("HARNESS_REQUIRE_REDIS"))


@dataclass
class Backend:
    """A store under test, and how to let its TTLs run out."""

    name: str
    store: Store
    ttl: float
    wait_past_ttl: Callable[[], Awaitable[None]]

    async def gone(self, key: str) -> bool:
        """Whether ``key`` is missing once its TTL has passed (polling Redis up to 2 s)."""
        await self.wait_past_ttl()
        deadline = time.monotonic() + 2.0
        while await self.store.get(key) is not None:
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.05)
        return True


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def backend_url(request: pytest.FixtureRequest) -> str | None:
    """None for memory; the test Redis's URL (skipping or failing as conftest says) for Redis."""
    if request.param == "memory":
        return None
    url: str = request.getfixturevalue("redis_url")
    return url


async def _drop_namespace(url: str, namespace: str) -> None:
    client = aioredis.Redis.from_url(url)
    try:
        keys = [key async for key in client.scan_iter(match=f"{namespace}:*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


@pytest.fixture
async def backend(backend_url: str | None, namespace: str) -> AsyncIterator[Backend]:
    """Each contract test runs once on memory (virtual clock) and once on Redis (real TTLs)."""
    if backend_url is None:
        clock = VirtualClock()
        ttl = 24 * 3600.0

        async def advance() -> None:
            clock.advance(ttl)

        memory = MemoryStore(namespace=namespace, clock=clock)
        yield Backend("memory", memory, ttl, advance)
        await memory.close()
        return

    store = RedisStore.from_url(backend_url, namespace=namespace)

    async def wait() -> None:
        await asyncio.sleep(0.25)

    try:
        yield Backend("redis", store, 0.2, wait)
    finally:
        await store.close()
        await _drop_namespace(backend_url, namespace)


@pytest.fixture
def store(backend: Backend) -> Store:
    return backend.store


# -- the contract --------------------------------------------------------------------


async def test_values_go_in_as_bytes_or_text_and_come_out_as_bytes(store: Store) -> None:
    assert isinstance(store, Store)
    assert await store.get("missing") is None
    await store.set("raw", b"\x00\xff")
    await store.set("text", "héllo")
    assert await store.get("raw") == b"\x00\xff"
    assert await store.get("text") == "héllo".encode()
    await store.set("text", "again")
    assert await store.get("text") == b"again"


async def test_a_key_expires_after_its_ttl(backend: Backend) -> None:
    store = backend.store
    await store.set("short", "v", ttl=backend.ttl)
    await store.set("kept", "v")
    assert await store.get("short") == b"v"
    assert await backend.gone("short")
    assert await store.get("kept") == b"v"


async def test_setting_again_without_a_ttl_removes_it(backend: Backend) -> None:
    store = backend.store
    await store.set("k", "first", ttl=backend.ttl)
    await store.set("k", "second")
    await backend.wait_past_ttl()
    assert await store.get("k") == b"second"


async def test_set_if_absent_sets_once_and_honours_its_ttl(backend: Backend) -> None:
    store = backend.store
    assert await store.set_if_absent("lock", "a", ttl=backend.ttl) is True
    assert await store.set_if_absent("lock", "b") is False
    assert await store.get("lock") == b"a"
    assert await backend.gone("lock")
    assert await store.set_if_absent("lock", "c") is True
    assert await store.get("lock") == b"c"


async def test_set_if_absent_is_atomic_under_concurrency(store: Store) -> None:
    results = await asyncio.gather(
        *(store.set_if_absent("dedupe:wamid.1", f"worker-{i}") for i in range(50))
    )
    assert results.count(True) == 1
    winner = results.index(True)
    assert await store.get("dedupe:wamid.1") == f"worker-{winner}".encode()


@pytest.mark.parametrize("ttl", [0, -1, float("nan"), float("inf")])
async def test_a_ttl_must_be_a_positive_number(store: Store, ttl: float) -> None:
    with pytest.raises(ConfigError, match="ttl"):
        await store.set("k", "v", ttl=ttl)
    with pytest.raises(ConfigError, match="ttl"):
        await store.set_if_absent("k", "v", ttl=ttl)
    assert await store.get("k") is None


async def test_delete_removes_values_and_logs(store: Store) -> None:
    await store.set("value", "v")
    await store.append("log", "entry")
    await store.delete("value")
    await store.delete("log")
    await store.delete("never-there")
    assert await store.get("value") is None
    assert await store.read_log("log") == []


async def test_append_returns_the_new_length_and_keeps_order(store: Store) -> None:
    assert await store.read_log("outbox") == []
    for i in range(5):
        assert await store.append("outbox", f"m{i}") == i + 1
    assert await store.read_log("outbox") == [b"m0", b"m1", b"m2", b"m3", b"m4"]


_BOUNDS = [None, -7, -5, -2, -1, 0, 1, 2, 4, 5, 9]


async def test_read_log_slices_like_a_list(store: Store) -> None:
    entries = [f"e{i}".encode() for i in range(5)]
    for entry in entries:
        await store.append("log", entry)
    for start in (b for b in _BOUNDS if b is not None):
        for end in _BOUNDS:
            got = await store.read_log("log", start, end)
            assert got == entries[start:end], (start, end)


async def test_incr_counts_from_zero_and_reads_back_as_text(store: Store) -> None:
    assert await store.incr("count") == 1
    assert await store.incr("count", 5) == 6
    assert await store.incr("count", -10) == -4
    assert await store.get("count") == b"-4"
    await store.set("preset", "41")
    assert await store.incr("preset") == 42


async def test_incr_keeps_the_keys_ttl(backend: Backend) -> None:
    store = backend.store
    await store.set("rate", "1", ttl=backend.ttl)
    assert await store.incr("rate") == 2
    assert await backend.gone("rate")


async def test_incr_refuses_what_is_not_an_integer(store: Store) -> None:
    await store.set("word", "seven")
    with pytest.raises(StoreError):
        await store.incr("word")
    await store.set("big", str(2**63 - 1))
    with pytest.raises(StoreError):
        await store.incr("big")
    assert await store.get("word") == b"seven"


async def test_a_key_is_a_value_or_a_log_not_both(store: Store) -> None:
    await store.set("value", "v")
    await store.append("log", "e")
    with pytest.raises(StoreError):
        await store.append("value", "e")
    with pytest.raises(StoreError):
        await store.read_log("value")
    with pytest.raises(StoreError):
        await store.get("log")
    with pytest.raises(StoreError):
        await store.incr("log")
    await store.set("log", "now a value")  # set replaces whatever was there
    assert await store.get("log") == b"now a value"


async def test_namespaces_keep_stores_apart_and_views_share_data(store: Store) -> None:
    alice = store.with_namespace("alice")
    bob = store.with_namespace("bob")
    assert alice.namespace == f"{store.namespace}:alice"
    assert alice.with_namespace("inbox").namespace == f"{store.namespace}:alice:inbox"
    assert store.with_namespace("").namespace == store.namespace
    await alice.set("window", "open")
    await bob.set("window", "closed")
    await alice.with_namespace("inbox").append("log", "hi")
    assert await alice.get("window") == b"open"
    assert await bob.get("window") == b"closed"
    assert await store.get("alice:window") == b"open"
    assert await store.read_log("alice:inbox:log") == [b"hi"]
    assert await store.get("window") is None


async def test_a_closed_store_refuses_use(store: Store) -> None:
    view = store.with_namespace("view")
    await store.set("k", "v")
    await store.close()
    with pytest.raises(StoreError, match="closed"):
        await store.get("k")
    with pytest.raises(StoreError, match="closed"):
        await view.append("log", "e")
    await store.close()  # closing twice is fine


# -- memory only -----------------------------------------------------------------------


async def test_memory_expiry_follows_a_virtual_clock() -> None:
    clock = VirtualClock()
    store = MemoryStore(clock=clock)
    assert store.clock is clock
    await store.set("window:alice", "open", ttl=timedelta(hours=24).total_seconds())
    await store.set("day-and-a-bit", "v", ttl=26 * 3600)
    clock.advance(timedelta(hours=23, minutes=59))
    assert await store.get("window:alice") == b"open"
    clock.advance(timedelta(hours=1, minutes=1))
    assert await store.get("window:alice") is None
    assert await store.get("day-and-a-bit") == b"v"
    assert await store.set_if_absent("window:alice", "open again") is True


async def test_memory_store_defaults_to_real_time_and_no_namespace() -> None:
    async with MemoryStore() as store:
        assert isinstance(store.clock, SystemClock)
        assert store.namespace == ""
        await store.set("k", "v", ttl=60)
        assert await store.get("k") == b"v"


async def test_memory_store_forgets_expired_keys_nobody_reads() -> None:
    clock = VirtualClock()
    store = MemoryStore(clock=clock)
    for i in range(200):
        await store.set(f"k{i}", "v", ttl=10)
        await store.set("hot", "v", ttl=3600)  # re-set often with a long TTL
    clock.advance(11)
    await store.set("after", "v")
    assert await store.get("k0") is None
    assert await store.get("hot") == b"v"
    internals = store._data  # the point of this test is the memory held
    assert set(internals.entries) == {"hot", "after"}
    assert len(internals.expiries) <= 64


# -- open_store and URLs ---------------------------------------------------------------


async def test_open_store_picks_the_backend_from_the_url() -> None:
    clock = VirtualClock()
    memory = open_store(None, namespace="run1", clock=clock)
    assert isinstance(memory, MemoryStore)
    assert memory.namespace == "run1"
    assert memory.clock is clock
    assert isinstance(open_store("memory://"), MemoryStore)
    redis_store = open_store("redis://127.0.0.1:6379/15", namespace="run2")
    assert isinstance(redis_store, RedisStore)
    assert redis_store.namespace == "run2"
    await redis_store.close()  # it never connected; closing is still clean


@pytest.mark.parametrize(
    "url", ["postgres://u:hunter2@db/1", "http://127.0.0.1:6379", "memory://extra", "6379"]
)
def test_open_store_refuses_other_urls_without_leaking_passwords(url: str) -> None:
    with pytest.raises(ConfigError, match="unsupported") as caught:
        open_store(url)
    assert "hunter2" not in str(caught.value)


def test_redis_store_checks_its_settings() -> None:
    with pytest.raises(ConfigError, match="retries"):
        RedisStore.from_url("redis://127.0.0.1:6379/0", retries=-1)
    with pytest.raises(ConfigError, match="timeouts"):
        RedisStore.from_url("redis://127.0.0.1:6379/0", connect_timeout=0)


def test_redis_store_checks_its_url() -> None:
    with pytest.raises(ConfigError, match="unsupported Redis URL"):
        RedisStore.from_url("memory://")
    with pytest.raises(ConfigError, match="bad Redis URL") as caught:
        RedisStore.from_url("redis://:hunter2@127.0.0.1:notaport/0")
    assert "hunter2" not in str(caught.value)


async def test_a_dead_server_is_reported_within_bounded_time() -> None:
    port = free_port()  # nothing listens here
    store = RedisStore.from_url(f"redis://:hunter2@127.0.0.1:{port}/0?password=hunter2")
    started = time.monotonic()
    try:
        with pytest.raises(StoreUnavailable) as caught:
            async with asyncio.timeout(30):
                await store.get("k")
    finally:
        await store.close()
    assert time.monotonic() - started < 10
    message = str(caught.value)
    assert f"127.0.0.1:{port}" in message
    assert "hunter2" not in message
    assert isinstance(caught.value, ConnectionError)


# -- Redis restarts ----------------------------------------------------------------------


@pytest.mark.redis
async def test_the_same_store_works_again_after_redis_restarts(redis_server: RedisServer) -> None:
    store = RedisStore.from_url(redis_server.url, namespace="restart")
    try:
        await store.set("before", "v")
        assert await store.get("before") == b"v"
        await redis_server.kill()
        await redis_server.start()
        # The server kept nothing (--save ""), but the client found its way back.
        assert await store.get("before") is None
        await store.set("after", "v")
        assert await store.get("after") == b"v"
        assert await store.append("log", "e") == 1
    finally:
        await store.close()


@pytest.mark.redis
async def test_a_command_rides_out_a_short_outage(redis_server: RedisServer) -> None:
    store = RedisStore.from_url(redis_server.url)
    try:
        await store.ping()
        await redis_server.kill()
        pending = asyncio.create_task(store.set_if_absent("k", "v"))
        await asyncio.sleep(0.3)  # the command is retrying with backoff by now
        assert not pending.done()
        await redis_server.start()
        assert await asyncio.wait_for(pending, timeout=10) is True
        assert await store.get("k") == b"v"
    finally:
        await store.close()


@pytest.mark.redis
async def test_a_server_that_stays_down_gives_store_unavailable(
    redis_server: RedisServer,
) -> None:
    store = RedisStore.from_url(redis_server.url, retries=1)
    try:
        await store.set("k", "v")
        await redis_server.kill()
        with pytest.raises(StoreUnavailable, match=f"127.0.0.1:{redis_server.port}"):
            await asyncio.wait_for(store.get("k"), timeout=30)
    finally:
        await store.close()


@pytest.mark.redis
async def test_processes_sharing_a_redis_see_one_world(redis_url: str, namespace: str) -> None:
    first = RedisStore.from_url(redis_url, namespace=namespace)
    second = open_store(redis_url, namespace=namespace)
    try:
        await first.append("outbox", "hello")
        assert await second.read_log("outbox") == [b"hello"]
        assert await second.set_if_absent("seen", "1") is True
        assert await first.set_if_absent("seen", "1") is False
    finally:
        await first.close()
        await second.close()
        await _drop_namespace(redis_url, namespace)


async def test_check_store_passes_memory_and_reports_a_dead_server_at_once() -> None:
    await check_store(None)
    await check_store("memory://")
    started = time.monotonic()
    with pytest.raises(StoreUnavailable, match="unavailable"):
        await check_store(f"redis://127.0.0.1:{free_port()}/0")
    assert time.monotonic() - started < 2.0
    with pytest.raises(ConfigError, match="unsupported"):
        await check_store("http://127.0.0.1:6379")
