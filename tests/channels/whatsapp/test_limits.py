"""Pair-rate and throughput limits, at their edges, on a virtual clock."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from channels.whatsapp.errors import PairRateLimited, ThroughputLimited
from channels.whatsapp.limits import PairRateLimiter, ThroughputLimiter
from harness.clock import VirtualClock
from harness.exceptions import ConfigError


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


def test_pair_rate_allows_a_burst_of_45_then_refuses(clock: VirtualClock) -> None:
    limiter = PairRateLimiter(clock)
    for _ in range(45):
        limiter.check("5511987654321")
    with pytest.raises(PairRateLimited) as info:
        limiter.check("5511987654321")
    assert info.value.code == 131056
    assert info.value.http_status == 400
    assert "6 s" in info.value.details


def test_pair_rate_refills_one_message_per_6_seconds(clock: VirtualClock) -> None:
    limiter = PairRateLimiter(clock)
    for _ in range(45):
        limiter.check("u")
    clock.advance(5.999999)
    with pytest.raises(PairRateLimited):
        limiter.check("u")
    clock.advance(0.000001)
    limiter.check("u")
    with pytest.raises(PairRateLimited):
        limiter.check("u")
    assert limiter.retry_after("u") == pytest.approx(6.0)


def test_pair_rate_is_per_user(clock: VirtualClock) -> None:
    limiter = PairRateLimiter(clock, burst=1)
    limiter.check("a")
    limiter.check("b")
    with pytest.raises(PairRateLimited):
        limiter.check("a")


def test_a_refused_message_spends_nothing(clock: VirtualClock) -> None:
    limiter = PairRateLimiter(clock, burst=1)
    limiter.check("u")
    clock.advance(3)
    with pytest.raises(PairRateLimited):
        limiter.check("u")
    assert limiter.peek("u") == pytest.approx(0.5)
    clock.advance(3)
    limiter.check("u")


def test_steady_sender_at_one_per_6_seconds_is_never_limited(clock: VirtualClock) -> None:
    limiter = PairRateLimiter(clock, burst=1)
    for _ in range(100):
        limiter.check("u")
        clock.advance(6)


def test_bucket_refills_to_its_burst_only(clock: VirtualClock) -> None:
    limiter = PairRateLimiter(clock, per_seconds=6, burst=3)
    limiter.check("u")
    clock.advance(3600)
    assert limiter.peek("u") == 3
    for _ in range(3):
        limiter.check("u")
    with pytest.raises(PairRateLimited):
        limiter.check("u")


def test_throughput_80_per_second(clock: VirtualClock) -> None:
    limiter = ThroughputLimiter(clock)
    for _ in range(80):
        limiter.check("100200300400500")
    with pytest.raises(ThroughputLimited) as info:
        limiter.check("100200300400500")
    assert info.value.code == 130429
    assert info.value.http_status == 400
    clock.advance(1 / 80)
    limiter.check("100200300400500")
    with pytest.raises(ThroughputLimited):
        limiter.check("100200300400500")
    limiter.check("another number")


def test_throughput_is_configurable(clock: VirtualClock) -> None:
    limiter = ThroughputLimiter(clock, mps=1000)
    for _ in range(1000):
        limiter.check("n")
    with pytest.raises(ThroughputLimited):
        limiter.check("n")
    clock.advance(1)
    for _ in range(1000):
        limiter.check("n")


def test_limits_can_be_disabled(clock: VirtualClock) -> None:
    pair = PairRateLimiter(clock, enabled=False)
    throughput = ThroughputLimiter(clock, mps=1, enabled=False)
    for _ in range(500):
        pair.check("u")
        throughput.check("n")
    assert pair.retry_after("u") == 0.0


def test_reset_forgets_history(clock: VirtualClock) -> None:
    limiter = PairRateLimiter(clock, burst=1)
    limiter.check("a")
    limiter.check("b")
    limiter.reset("a")
    limiter.check("a")
    limiter.reset()
    limiter.check("b")


def test_same_sends_at_same_times_meet_same_answers() -> None:
    def run() -> list[bool]:
        clock = VirtualClock()
        limiter = PairRateLimiter(clock, burst=5)
        answers = []
        for step in range(60):
            try:
                limiter.check("u")
                answers.append(True)
            except PairRateLimited:
                answers.append(False)
            clock.advance(step % 7 * 0.9)
        return answers

    first = run()
    assert first == run()
    assert True in first
    assert False in first


@pytest.mark.parametrize(
    "make",
    [
        lambda c: PairRateLimiter(c, per_seconds=0),
        lambda c: PairRateLimiter(c, burst=0),
        lambda c: ThroughputLimiter(c, mps=0),
    ],
)
def test_bad_settings_are_refused(
    clock: VirtualClock, make: Callable[[VirtualClock], object]
) -> None:
    with pytest.raises(ConfigError):
        make(clock)


def test_many_users_still_in_their_buckets_are_swept_once_not_on_every_send(
    clock: VirtualClock,
) -> None:
    # A load run with more users than the sweep threshold (10,000): each bucket is still in
    # use (44 of 45 left), so a sweep drops none; sweeping again on every send would cost a
    # pass over every user per send. The next sweep waits until the count has doubled.
    sweeps = 0

    class Counting(PairRateLimiter):
        def _prune(self) -> None:
            nonlocal sweeps
            sweeps += 1
            super()._prune()

    limiter = Counting(clock)
    for n in range(10_300):
        limiter.check(f"user{n}")
    assert sweeps == 1
    clock.advance(6 * 45)  # every bucket so far has refilled: the next sweep drops them all
    for n in range(10_300, 20_100):
        limiter.check(f"user{n}")
    assert sweeps == 2
    assert len(limiter._buckets) < 10_000
    limiter.check("user0")  # dropped, so full again: a burst of 45 ahead
    assert limiter.peek("user0") == 44
