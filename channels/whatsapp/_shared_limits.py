"""Meta's rate limits for one Meta across processes: one token bucket in Redis per limit.

Before each send, :func:`spend_tokens` runs one Lua script
(:data:`~channels.whatsapp._shared_scripts.BEFORE_SEND`) that reads the shared
clock's offset and spends a throughput token and a pair-rate one, so two
processes can't both spend a bucket's last token. The buckets are the
limiters' own (burst, interval, clock), kept in exact integers: credit in
units of 1/q microseconds for an interval of p/q seconds, so one token costs
p * 10^6 units.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final

from channels.whatsapp.limits import TokenBucketLimiter

if TYPE_CHECKING:
    from redis.commands.core import AsyncScript

    from channels.whatsapp._shared_state import SharedRedis, Shares

__all__ = ["MICROS", "spend_tokens"]

MICROS: Final = 1_000_000
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


async def spend_tokens(
    shared: SharedRedis, sim: Shares, user: str | None, script: AsyncScript
) -> tuple[int, int, int, list[tuple[TokenBucketLimiter, str]]]:
    """Spend a token of each enabled bucket of this send, in one step in Redis.

    Answers the bucket that refused (1-based, 0 for none), the credit it
    missed, the shared clock's offset (microseconds), and the buckets tried
    (each limiter with the name its refusal gives).
    """
    number = sim.config.phone_number_id
    buckets: list[tuple[TokenBucketLimiter, str, str]] = [
        (sim.throughput, f"limit:throughput:{number}", number)
    ]
    if user is not None:
        buckets.append((sim.pair_limit, f"limit:pair:{user}", user))
    buckets = [bucket for bucket in buckets if bucket[0].enabled]
    now = (sim.throughput.clock.now() - _EPOCH) // timedelta(microseconds=1)
    keys = [shared.key("clock")] + [shared.key(key) for _, key, _ in buckets]
    args = [now]
    for limiter, _, _ in buckets:
        interval = limiter.interval
        cost = interval.numerator * MICROS
        args += [cost, limiter.burst * cost, interval.denominator]
    refused, missing, offset = await shared.store_call(
        "limits",
        lambda c: script(keys=keys, args=args, client=c),
        changes=True,
    )
    tried = [(limiter, name) for limiter, _, name in buckets]
    return int(refused), int(missing), int(offset), tried
