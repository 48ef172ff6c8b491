"""The 24-hour customer-service window, at its edges, in memory and in Redis.

The numbers are Meta's (24 hours from the user's last message), written here
as literals rather than read from the code under test.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from channels.whatsapp.window import SessionWindows
from harness.clock import VirtualClock
from harness.store import MemoryStore, RedisStore, Store

T0 = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
DAY = timedelta(hours=24)
MICROSECOND = timedelta(microseconds=1)


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def store_url(request: pytest.FixtureRequest) -> str | None:
    """None for memory; the test Redis's URL (skipping or failing as conftest says) for Redis."""
    if request.param == "memory":
        return None
    url: str = request.getfixturevalue("redis_url")
    return url


@pytest.fixture
async def store(store_url: str | None, namespace: str) -> AsyncIterator[Store]:
    opened: Store = MemoryStore() if store_url is None else RedisStore.from_url(store_url)
    yield opened.with_namespace(namespace)
    await opened.close()


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock(T0)


async def test_a_user_who_never_wrote_has_no_window(store: Store, clock: VirtualClock) -> None:
    windows = SessionWindows(store, clock)
    assert not await windows.is_open("5511987654321")
    assert await windows.closes_at("5511987654321") is None


async def test_the_window_is_open_until_just_before_24_hours_and_closed_at_24(
    store: Store, clock: VirtualClock
) -> None:
    windows = SessionWindows(store, clock)
    await windows.touch("5511987654321")
    assert await windows.closes_at("5511987654321") == T0 + DAY
    assert await windows.is_open("5511987654321", at=T0)
    assert await windows.is_open("5511987654321", at=T0 + DAY - MICROSECOND)
    assert not await windows.is_open("5511987654321", at=T0 + DAY)
    clock.advance(DAY - MICROSECOND)
    assert await windows.is_open("5511987654321")
    clock.advance(MICROSECOND)
    assert not await windows.is_open("5511987654321")


async def test_a_new_message_moves_the_window_on(store: Store, clock: VirtualClock) -> None:
    windows = SessionWindows(store, clock)
    await windows.touch("5511987654321")
    clock.advance(timedelta(hours=20))
    await windows.touch("5511987654321")
    assert await windows.closes_at("5511987654321") == T0 + timedelta(hours=44)
    assert await windows.is_open("5511987654321", at=T0 + timedelta(hours=30))


async def test_an_older_message_never_moves_the_window_back(
    store: Store, clock: VirtualClock
) -> None:
    windows = SessionWindows(store, clock)
    await windows.touch("5511987654321", at=T0 + timedelta(hours=5))
    # a late or reordered delivery of an earlier message
    await windows.touch("5511987654321", at=T0 + timedelta(hours=1))
    assert await windows.last_message("5511987654321") == T0 + timedelta(hours=5)
    assert await windows.is_open("5511987654321", at=T0 + timedelta(hours=28, minutes=59))


async def test_windows_are_per_user(store: Store, clock: VirtualClock) -> None:
    windows = SessionWindows(store, clock)
    await windows.touch("5511987654321")
    assert not await windows.is_open("4915112345678")
