"""The queue a distributed run and its workers share: saq, on Redis.

A run puts one job per scenario on the queue named :data:`QUEUE_NAME` in
the broker's Redis; ``harness worker`` processes, on any machine that
reaches that Redis, take them one at a time. saq was chosen over arq,
taskiq, dramatiq and Celery (see docs/explanation/distributed-design.md):
it is asyncio-native, keeps each job's result in Redis, and retries a job
whose worker stopped beating its heart, however long the scenario runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit

from harness.exceptions import ConfigError, StoreUnavailable
from harness.store import REDIS_SCHEMES

if TYPE_CHECKING:
    from saq.queue.redis import RedisQueue

__all__ = [
    "ATTEMPTS",
    "DEFAULT_HEARTBEAT",
    "QUEUE_NAME",
    "check_broker_url",
    "open_queue",
    "safe_broker_url",
]

#: The queue's name in the broker (saq's keys start ``saq:harness-scenarios:``).
QUEUE_NAME: Final = "harness-scenarios"

#: Seconds a job may go without its worker's heartbeat before another worker retries it.
DEFAULT_HEARTBEAT: Final = 10.0

#: How many times a scenario is handed out before its run records an error for it.
ATTEMPTS: Final = 3


def safe_broker_url(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def check_broker_url(url: str, option: str) -> str:
    """``url`` if it names a Redis for the queue; else a one-line error naming ``option``."""
    scheme = urlsplit(url.strip()).scheme.lower()
    if scheme not in REDIS_SCHEMES:
        raise ConfigError(
            f"{option} {safe_broker_url(url)!r}: the broker is a Redis URL "
            "(redis://host:6379/0, rediss://..., unix:///path/to/redis.sock)"
        )
    return url.strip()


async def open_queue(url: str, option: str = "--broker") -> RedisQueue:
    """The run's queue in the Redis ``url`` names, connected; one line if it does not answer."""
    from redis.asyncio import Redis
    from redis.exceptions import RedisError

    from harness.suites._patient_queue import PatientQueue

    redis: Redis = Redis.from_url(check_broker_url(url, option), socket_connect_timeout=5)
    try:
        await redis.ping()
    except (RedisError, OSError) as exc:
        await redis.aclose()
        raise StoreUnavailable(
            f"{option}: the broker at {safe_broker_url(url)} did not answer ({exc})"
        ) from None
    queue = PatientQueue(redis, name=QUEUE_NAME)
    await queue.connect()
    return queue
