"""Shared test fixtures: a clean environment for every test, and a real Redis."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.bots.loopback import free_port
from tests.support.redis_server import RedisServer, redis_binary

# Read once, before any test clears the environment.
TEST_REDIS_URL = os.environ.get("HARNESS_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
_REQUIRE_REDIS = bool(os.environ.get("CI")) or bool(os.environ.get("HARNESS_REQUIRE_REDIS"))

_CLEARED_PREFIXES = ("ANTHROPIC_", "OPENAI_", "OTEL_", "HARNESS_", "BOOKING_", "WHATSAPP_")
# PYTEST_ADDOPTS too: CI spreads the tests with it (-n), and a test that starts pytest
# itself wants that run to have its own options only.
_CLEARED_NAMES = ("REDIS_URL", "PYTEST_ADDOPTS")


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees an API key, a Redis URL or the harness's own settings by accident."""
    for name in list(os.environ):
        if name.startswith(_CLEARED_PREFIXES) or name in _CLEARED_NAMES:
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def redis_url() -> str:
    """The URL of a live Redis server; skips (fails under CI) when none answers."""
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(TEST_REDIS_URL)
    try:
        await client.ping()
    except Exception as exc:  # any failure to reach the server means "no server here"
        await client.aclose()
        message = f"no Redis server answers at {TEST_REDIS_URL}: {exc}"
        if _REQUIRE_REDIS:
            pytest.fail(message + " (CI must start one)")
        pytest.skip(message)
    await client.aclose()
    return TEST_REDIS_URL


@pytest.fixture
def namespace() -> str:
    """A key prefix unique to one test, so tests sharing a Redis never collide."""
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def redis_program() -> str:
    """The redis-server program, for tests that start servers of their own.

    Skips without it (fails under CI, which must have it).
    """
    binary = redis_binary()
    if binary is None:
        message = "redis-server is not installed, so Redis restarts and pauses can't be tested"
        if _REQUIRE_REDIS:
            pytest.fail(message + " (CI must provide it)")
        pytest.skip(message)
    return binary


@pytest.fixture
async def redis_server(redis_program: str, tmp_path: Path) -> AsyncIterator[RedisServer]:
    """A redis-server of the test's own on a free port, to kill, restart or pause."""
    server = RedisServer(redis_program, free_port(), tmp_path)
    await server.start()
    try:
        yield server
    finally:
        if server.process is not None and server.process.returncode is None:
            server.resume()  # a test that failed mid-pause
        await server.kill()
