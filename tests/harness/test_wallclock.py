"""The process's wall clock following a virtual clock, and put back afterwards."""

from __future__ import annotations

import asyncio
import datetime as datetime_module
import time
from datetime import UTC, date, datetime, timedelta

import pytest

from harness.clock import DEFAULT_START, OffsetClock, SystemClock, VirtualClock
from harness.exceptions import ClockError
from harness.wallclock import wall_clock_from

T0 = DEFAULT_START
HOUR = timedelta(hours=1)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


async def test_wall_clock_follows_the_virtual_clock_while_the_loop_keeps_real_time() -> None:
    real_datetime = datetime_module.datetime
    real_before = time.time()
    clock = VirtualClock()
    with wall_clock_from(clock):
        assert time.time() == T0.timestamp()
        assert datetime.now(UTC) == T0
        clock.advance(timedelta(hours=25))
        later = T0 + timedelta(hours=25)
        assert time.time() == later.timestamp()
        assert datetime.now(UTC) == later
        assert datetime.utcnow() == later.replace(tzinfo=None)
        assert date.today() == later.date()
        loop = asyncio.get_running_loop()
        started = loop.time()
        await asyncio.wait_for(asyncio.sleep(0.01), timeout=2)
        assert loop.time() - started >= 0.009  # the loop's clock is real
        assert time.time() == later.timestamp()  # and wall time did not tick
    assert datetime_module.datetime is real_datetime
    assert real_before <= time.time() < real_before + 60
    assert abs(datetime.now(UTC).timestamp() - time.time()) < 5


def test_wall_clock_is_restored_after_an_exception() -> None:
    real_time = time.time
    real_before = time.time()
    clock = VirtualClock()
    seen: list[float] = []

    def crash() -> None:
        with wall_clock_from(clock):
            seen.append(time.time())
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        crash()
    assert seen == [T0.timestamp()]
    assert time.time is real_time
    assert real_before <= time.time() < real_before + 60
    clock.advance(10)  # the listener is gone: nothing is patched again
    assert time.time is real_time


def test_wall_clock_can_follow_an_agents_skewed_clock() -> None:
    channel = VirtualClock()
    with wall_clock_from(OffsetClock(channel, "-5m")):
        assert time.time() == (T0 - timedelta(minutes=5)).timestamp()
        channel.advance(HOUR)
        assert datetime.now(UTC) == T0 + HOUR - timedelta(minutes=5)


def test_wall_clock_nests_for_one_clock_and_refuses_a_second() -> None:
    real_time = time.time
    clock = VirtualClock()
    with wall_clock_from(clock):
        with wall_clock_from(clock):
            clock.advance(10)
        assert time.time() == at(10).timestamp()  # the outer one still holds
        with pytest.raises(ClockError, match="already follows"), wall_clock_from(VirtualClock()):
            pass
        clock.advance(10)
        assert time.time() == at(20).timestamp()
    assert time.time is real_time


def test_wall_clock_needs_a_clock_that_reports_jumps() -> None:
    real_time = time.time
    with (
        pytest.raises(ClockError, match="does not report"),
        wall_clock_from(OffsetClock(SystemClock(), 0)),
    ):
        pass
    assert time.time is real_time
