"""Meta's send-rate limits, as pure token buckets on an injected clock.

Two limits guard the send API. The *pair rate* caps how fast one business
number may message the same user: one message per 6 seconds on average, with
bursts of up to 45 that borrow future quota (131056). The *throughput* caps
how many messages per second one business number sends in all (80 by
default, 130429). Both are token buckets: a bucket holds at most ``burst``
tokens, refills at a steady rate, and each accepted message spends one. A
rejected message spends nothing, so a bot that backs off recovers.

The buckets read time only from the clock they are given, so on a
:class:`~harness.clock.VirtualClock` the same sends at the same virtual times
always meet the same answers. Arithmetic is exact (whole numbers of a unit
that one microsecond of refill is a whole number of), so "one message per
6 s" means exactly that at the edge, and a check costs a few integer
operations: a load run makes one for every send.
Either limiter can be turned off (``enabled=False``) for scenarios that are
not about rate limits. The simulator core calls :meth:`check`; nothing here
knows about HTTP.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime, timedelta
from fractions import Fraction

from channels.whatsapp.errors import PairRateLimited, ThroughputLimited
from harness.clock import Clock
from harness.exceptions import ConfigError

__all__ = ["PairRateLimiter", "ThroughputLimiter", "TokenBucketLimiter"]

_MICROS = 1_000_000
_ONE_MICRO = timedelta(microseconds=1)
# Buckets that have refilled completely carry no information; past this many
# keys the full ones are dropped so a long run with many users stays small. When
# most buckets are still in use, the next sweep waits until their count doubles:
# a sweep on every send, each over every key, would make sends cost O(users).
_PRUNE_AT = 10_000


@dataclass
class _Bucket:
    units: int  # tokens, in units of 1 / (interval numerator x 1e6) of a token
    updated: datetime


class TokenBucketLimiter(ABC):
    """A token bucket per key: ``burst`` tokens at most, one more every ``interval`` seconds.

    :meth:`check` spends a token for ``key`` or raises the error made by
    :meth:`_error`; :meth:`peek` and :meth:`retry_after` look without
    spending. Subclasses name the limit and the error.
    """

    def __init__(
        self, clock: Clock, *, interval: float | Fraction, burst: int, enabled: bool = True
    ) -> None:
        interval = Fraction(interval)
        if interval <= 0:
            raise ConfigError(f"the refill interval must be positive, got {float(interval)} s")
        if burst < 1:
            raise ConfigError(f"the burst must be at least 1, got {burst}")
        self.clock = clock
        self.interval = interval
        self.burst = burst
        self.enabled = enabled
        self._buckets: dict[str, _Bucket] = {}
        self._prune_at = _PRUNE_AT
        # With the interval p/q seconds, a token is p x 1e6 units and a microsecond refills q.
        self._token = interval.numerator * _MICROS
        self._per_micro = interval.denominator
        self._full = burst * self._token

    def _refilled(self, key: str) -> _Bucket:
        now = self.clock.now()
        bucket = self._buckets.get(key)
        if bucket is None:
            return _Bucket(self._full, now)
        # A clock that went backwards refills nothing rather than draining.
        elapsed = max((now - bucket.updated) // _ONE_MICRO, 0)
        return _Bucket(min(bucket.units + elapsed * self._per_micro, self._full), now)

    def _wait(self, units: int) -> float:
        """Seconds until a bucket holding ``units`` has a whole token."""
        return float(Fraction(max(self._token - units, 0), self._per_micro * _MICROS))

    def peek(self, key: str) -> float:
        """How many messages ``key`` could send right now (fractions are partial refills)."""
        return float(Fraction(self._refilled(key).units, self._token))

    def retry_after(self, key: str) -> float:
        """Seconds until ``key`` may send again; 0 when it may send now (or the limit is off)."""
        if not self.enabled:
            return 0.0
        return self._wait(self._refilled(key).units)

    def check(self, key: str) -> None:
        """Spend one token for ``key``, or raise the limit's error and spend nothing."""
        if not self.enabled:
            return
        bucket = self._refilled(key)
        if bucket.units < self._token:
            raise self._error(key, self._wait(bucket.units))
        bucket.units -= self._token
        self._buckets[key] = bucket
        if len(self._buckets) > self._prune_at:
            self._prune()
            self._prune_at = max(_PRUNE_AT, 2 * len(self._buckets))

    def refusal(self, key: str, wait: float) -> Exception:
        """The error a send for ``key`` gets when over the limit, ``wait`` seconds to go."""
        return self._error(key, wait)

    def reset(self, key: str | None = None) -> None:
        """Forget the history of ``key`` (or of every key): its bucket is full again."""
        if key is None:
            self._buckets.clear()
        else:
            self._buckets.pop(key, None)

    def _prune(self) -> None:
        for key in list(self._buckets):
            if self._refilled(key).units >= self._full:
                del self._buckets[key]

    @abstractmethod
    def _error(self, key: str, wait: float) -> Exception:
        """The exception raised when ``key`` is over the limit; ``wait`` is the seconds to go."""


class PairRateLimiter(TokenBucketLimiter):
    """Meta's pair rate: messages from one business number to the same user (131056).

    One message per ``per_seconds`` (6) on average, bursts of up to ``burst``
    (45) borrowing future quota. Key it by user (wa_id or BSUID), or by
    ``f"{phone_number_id}:{user}"`` when several business numbers share it.
    """

    def __init__(
        self, clock: Clock, per_seconds: float = 6, burst: int = 45, *, enabled: bool = True
    ) -> None:
        super().__init__(clock, interval=Fraction(per_seconds), burst=burst, enabled=enabled)

    def _error(self, key: str, wait: float) -> Exception:
        return PairRateLimited(
            details=(
                "Message failed to send because there were too many messages sent from this"
                f" phone number to the same phone number ({key}) in a short period of time;"
                f" the next message is allowed in {wait:g} s."
            )
        )


class ThroughputLimiter(TokenBucketLimiter):
    """Meta's throughput: messages per second one business number sends in all (130429).

    ``mps`` (80 by default; Meta upgrades busy numbers to 1000) tokens at
    most, refilling at ``mps`` per second. Key it by phone_number_id.
    """

    def __init__(self, clock: Clock, mps: int = 80, *, enabled: bool = True) -> None:
        if mps < 1:
            raise ConfigError(f"the throughput must be at least 1 message per second, got {mps}")
        super().__init__(clock, interval=Fraction(1, mps), burst=mps, enabled=enabled)
        self.mps = mps

    def _error(self, key: str, wait: float) -> Exception:
        return ThroughputLimited(
            details=(
                f"Message failed to send because phone number {key} reached its throughput"
                f" limit of {self.mps} messages per second; retry in {wait:g} s."
            )
        )
