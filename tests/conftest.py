"""Shared test fixtures: a clean environment for every test, and a real Redis."""

from __future__ import annotations

import os
import uuid

import pytest

# Read once, before any test clears the environment.
TEST_REDIS_URL = os.environ.get("HARNESS_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
_REQUIRE_REDIS = bool(os.environ.get("CI")) or bool(os.environ.get("HARNESS_REQUIRE_REDIS"))

_CLEARED_PREFIXES = ("ANTHROPIC_", "OPENAI_", "OTEL_", "HARNESS_", "BOOKING_", "WHATSAPP_")
_CLEARED_NAMES = ("REDIS_URL",)


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
