"""The virtual clock: time that jumps, deterministic wake order, holds, offsets and jumps."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, timezone

import pytest

from harness.clock import (
    DEFAULT_START,
    Clock,
    ObservableClock,
    OffsetClock,
    SystemClock,
    VirtualClock,
    hold,
)
from harness.exceptions import ClockError
from harness.trace import ClockJump

T0 = DEFAULT_START
HOUR = timedelta(hours=1)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


# -- SystemClock -----------------------------------------------------------------


async def test_system_clock_reads_and_waits_in_real_time() -> None:
    clock = SystemClock()
    before = datetime.now(UTC)
    assert clock.now().tzinfo is UTC
    assert abs(clock.now() - before) < timedelta(seconds=5)
    started = time.monotonic()
    await clock.sleep(0.02)
    assert time.monotonic() - started >= 0.015
    await clock.sleep(-1)  # like asyncio.sleep, a negative wait is no wait
    assert isinstance(clock, Clock)


async def test_system_clock_refuses_a_nan_sleep() -> None:
    with pytest.raises(ClockError, match="finite"):
        await SystemClock().sleep(float("nan"))


# -- VirtualClock basics ---------------------------------------------------------


def test_virtual_clock_starts_at_a_fixed_documented_instant() -> None:
    assert VirtualClock().now() == datetime(2026, 1, 1, tzinfo=UTC)
    assert isinstance(VirtualClock(), ObservableClock)


def test_virtual_clock_start_is_normalised_to_utc_and_must_be_aware() -> None:
    plus_two = timezone(timedelta(hours=2))
    clock = VirtualClock(datetime(2026, 3, 1, 12, tzinfo=plus_two))
    assert clock.now() == datetime(2026, 3, 1, 10, tzinfo=UTC)
    assert clock.now().utcoffset() == timedelta(0)
    with pytest.raises(ClockError, match="timezone-aware"):
        VirtualClock(datetime(2026, 1, 1))


def test_advance_and_set_move_forward_only() -> None:
    clock = VirtualClock()
    assert clock.advance(90) == at(90)
    assert clock.advance(timedelta(minutes=1)) == at(150)
    clock.set(at(200))
    assert clock.now() == at(200)
    clock.set(at(200))  # standing still is allowed
    with pytest.raises(ClockError, match="back"):
        clock.set(at(199))
    with pytest.raises(ClockError, match="negative"):
        clock.advance(-1)
    with pytest.raises(ClockError, match="timezone-aware"):
        clock.set(datetime(2030, 1, 1))
    with pytest.raises(ClockError):
        clock.advance(float("inf"))
    assert clock.now() == at(200)


def test_a_long_run_keeps_its_latest_jumps_and_tells_every_listener_of_every_one() -> None:
    heard: list[ClockJump] = []
    clock = VirtualClock(on_jump=heard.append)
    for second in range(1, 1001):
        clock.advance(1, reason=f"step {second}")
    assert len(heard) == 1000
    assert 100 <= len(clock.jumps) <= 200  # not a thousand: a long run jumps every turn
    assert clock.jumps == heard[-len(clock.jumps) :]  # the latest, oldest first, none skipped
    assert clock.jumps[-1].at == at(1000)
    with pytest.raises(ClockError, match="before anything"):
        clock.restart(T0)  # trimmed or not, the clock knows it has moved


async def test_a_26_hour_sleep_returns_at_once_in_real_time() -> None:
    clock = VirtualClock(auto_advance=True)
    started = time.monotonic()
    await clock.sleep(26 * 3600)
    assert time.monotonic() - started < 1.0
    assert clock.now() == T0 + timedelta(hours=26)


async def test_sleep_zero_or_negative_yields_without_moving_time() -> None:
    clock = VirtualClock()  # nobody advances it: a real wait would hang
    ran: list[str] = []

    async def other() -> None:
        ran.append("other")

    for seconds in (0, -5, 1e-9):
        ran.clear()
        task = asyncio.create_task(other())
        await asyncio.wait_for(clock.sleep(seconds), timeout=1)
        assert ran == ["other"], seconds  # the sleep let the other task run
        await task
    assert clock.now() == T0
    assert clock.jumps == []
    assert clock.sleeping == 0


async def test_sleep_refuses_non_finite_durations() -> None:
    clock = VirtualClock()
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ClockError):
            await clock.sleep(bad)
    assert clock.sleeping == 0


async def test_sleep_past_the_end_of_time_is_a_clock_error() -> None:
    clock = VirtualClock(datetime(9999, 12, 31, tzinfo=UTC))
    with pytest.raises(ClockError, match="end of time"):
        await clock.sleep(10 * 86400)


# -- manual advance --------------------------------------------------------------


async def _sleep_and_log(clock: VirtualClock, name: str, seconds: float, log: list[str]) -> None:
    await clock.sleep(seconds)
    log.append(name)


async def test_advance_wakes_only_the_sleepers_that_are_due() -> None:
    clock = VirtualClock()
    woke: list[str] = []
    tasks = [
        asyncio.create_task(_sleep_and_log(clock, name, seconds, woke))
        for name, seconds in (("ten", 10), ("twenty", 20), ("thirty", 30))
    ]
    await asyncio.sleep(0)
    assert clock.sleeping == 3
    assert clock.next_deadline == at(10)

    clock.advance(15)
    await asyncio.sleep(0)
    assert woke == ["ten"]
    assert clock.sleeping == 2
    assert clock.next_deadline == at(20)

    clock.advance(5)  # exactly at a deadline counts as due
    await asyncio.sleep(0)
    assert woke == ["ten", "twenty"]
    assert not tasks[2].done()

    clock.set(at(100))
    await asyncio.gather(*tasks)
    assert woke == ["ten", "twenty", "thirty"]
    assert clock.next_deadline is None


async def test_one_big_advance_wakes_in_deadline_then_call_order() -> None:
    clock = VirtualClock()
    woke: list[str] = []
    plan = [("c", 30), ("a", 10), ("b1", 20), ("b2", 20), ("a2", 10)]
    tasks = [asyncio.create_task(_sleep_and_log(clock, n, s, woke)) for n, s in plan]
    await asyncio.sleep(0)
    clock.advance(60)
    await asyncio.gather(*tasks)
    assert woke == ["a", "a2", "b1", "b2", "c"]
    assert clock.now() == at(60)


async def test_cancelling_a_sleeper_removes_its_deadline() -> None:
    clock = VirtualClock()
    task = asyncio.create_task(clock.sleep(10))
    await asyncio.sleep(0)
    assert clock.sleeping == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert clock.sleeping == 0
    assert clock.next_deadline is None
    clock.advance(20)  # nothing left to wake, nothing breaks
    assert clock.now() == at(20)


async def test_a_cancelled_sleeper_is_not_jumped_to_in_auto_mode() -> None:
    clock = VirtualClock(auto_advance=True)
    doomed = asyncio.create_task(clock.sleep(10))
    await asyncio.sleep(0)
    doomed.cancel()
    await clock.sleep(20)
    assert [jump.at for jump in clock.jumps] == [at(20)]
    assert doomed.cancelled()


# -- deterministic order ---------------------------------------------------------

# (name, delay) in the order the sleeps are called; equal delays on purpose.
PLAN: Sequence[tuple[str, float]] = (
    ("e", 5.0),
    ("a", 1.0),
    ("d", 3.0),
    ("b", 1.0),
    ("f", 26 * 3600.0),
    ("c", 3.0),
    ("g", 5.0),
    ("h", 0.5),
)
EXPECTED = [
    (name, at(delay))
    for _, (name, delay) in sorted(enumerate(PLAN), key=lambda item: (item[1][1], item[0]))
]


async def _wake_order(clock: VirtualClock) -> list[tuple[str, datetime]]:
    woke: list[tuple[str, datetime]] = []

    async def sleeper(name: str, delay: float) -> None:
        await clock.sleep(delay)
        woke.append((name, clock.now()))

    await asyncio.gather(*(sleeper(name, delay) for name, delay in PLAN))
    return woke


def test_the_expected_order_is_by_deadline_then_call_order() -> None:
    assert [name for name, _ in EXPECTED] == ["h", "a", "b", "d", "c", "e", "g", "f"]


async def test_auto_advance_wakes_each_sleeper_at_its_own_deadline_in_a_fixed_order() -> None:
    runs = [await _wake_order(VirtualClock(auto_advance=True)) for _ in range(20)]
    assert all(run == EXPECTED for run in runs)


async def test_run_until_wakes_each_sleeper_at_its_own_deadline_in_a_fixed_order() -> None:
    for _ in range(20):
        clock = VirtualClock()
        task = asyncio.create_task(_wake_order(clock))
        await asyncio.sleep(0)
        assert await clock.run_until(T0 + timedelta(days=2)) == T0 + timedelta(days=2)
        assert await task == EXPECTED


async def test_run_until_honours_sleeps_scheduled_by_woken_tasks() -> None:
    clock = VirtualClock()
    seen: list[datetime] = []

    async def chain() -> None:
        for _ in range(3):
            await clock.sleep(10)
            seen.append(clock.now())

    task = asyncio.create_task(chain())
    await clock.advance_async(25)
    assert seen == [at(10), at(20)]
    assert clock.now() == at(25)
    await clock.advance_async(5)
    await task
    assert seen == [at(10), at(20), at(30)]
    with pytest.raises(ClockError, match="back"):
        await clock.run_until(at(0))
    with pytest.raises(ClockError, match="negative"):
        await clock.advance_async(-1)


async def test_auto_advance_waits_for_ready_tasks_before_jumping() -> None:
    clock = VirtualClock(auto_advance=True)
    seen: list[datetime] = []
    queue: asyncio.Queue[int] = asyncio.Queue()

    async def producer() -> None:
        for i in range(50):
            await queue.put(i)
            await asyncio.sleep(0)

    async def consumer() -> None:
        for _ in range(50):
            await queue.get()
            seen.append(clock.now())

    sleeper = asyncio.create_task(clock.sleep(3600))
    await asyncio.gather(producer(), consumer())
    assert seen == [T0] * 50  # no jump while other tasks could still run
    await sleeper
    assert clock.now() == at(3600)


async def test_hold_keeps_auto_advance_from_jumping() -> None:
    clock = VirtualClock(auto_advance=True)
    sleeper = asyncio.create_task(clock.sleep(60))
    with clock.hold(), hold(OffsetClock(clock, 0)):
        await asyncio.sleep(0.05)  # real time, as a remote call would take
        assert clock.now() == T0
        assert not sleeper.done()
    await asyncio.wait_for(sleeper, timeout=1)
    assert clock.now() == at(60)


def test_hold_on_a_real_clock_leaves_time_running() -> None:
    clock = SystemClock()
    with hold(clock, "a model call"):
        before = clock.now()
        time.sleep(0.002)
        assert clock.now() > before


# -- jumps ---------------------------------------------------------------------------


async def test_every_jump_is_recorded_and_reported() -> None:
    reported: list[ClockJump] = []
    clock = VirtualClock(on_jump=reported.append)
    also: list[ClockJump] = []
    remove = clock.add_listener(also.append)

    clock.advance(0)  # no movement, no jump
    clock.advance(30)
    clock.set(at(90), reason="turn 2")
    remove()
    remove()  # removing twice is harmless
    clock.advance(HOUR, reason="window")

    expected = [
        ClockJump(at=at(30), previous=at(0), reason="advance"),
        ClockJump(at=at(90), previous=at(30), reason="turn 2"),
        ClockJump(at=at(3690), previous=at(90), reason="window"),
    ]
    assert clock.jumps == expected
    assert reported == expected
    assert also == expected[:2]


async def test_auto_advance_jumps_are_labelled() -> None:
    clock = VirtualClock(auto_advance=True)
    await clock.sleep(5)
    assert clock.jumps == [ClockJump(at=at(5), previous=at(0), reason="auto-advance")]


# -- OffsetClock ---------------------------------------------------------------------


async def test_offset_clock_reads_the_base_plus_an_offset_and_sleeps_on_the_base() -> None:
    base = VirtualClock(auto_advance=True)
    agent = OffsetClock(base, "-5m")
    assert agent.offset == timedelta(minutes=-5)
    assert agent.now() == T0 - timedelta(minutes=5)
    await agent.sleep(60)
    assert base.now() == at(60)
    assert agent.now() == at(60) - timedelta(minutes=5)


def test_offset_clock_reports_its_base_jumps_shifted() -> None:
    base = VirtualClock()
    agent = OffsetClock(base, timedelta(hours=1))
    seen: list[ClockJump] = []
    remove = agent.add_listener(seen.append)
    base.advance(10)
    remove()
    base.advance(10)
    assert seen == [ClockJump(at=at(10) + HOUR, previous=T0 + HOUR, reason="advance")]
    with pytest.raises(ClockError, match="does not report"):
        OffsetClock(SystemClock(), 0).add_listener(seen.append)


async def test_run_until_after_a_settled_return_moves_without_waiting_for_idleness_first() -> None:
    # The loop was idle when the caller's last run_until returned and it has awaited nothing
    # since: run_until(settled=True) moves at once. Without it, run_until first lets anything
    # already queued run, at the old time.
    for settled, seen_at in ((False, T0), (True, T0 + timedelta(seconds=1))):
        clock = VirtualClock()
        seen: list[datetime] = []

        async def sleeper(clock: VirtualClock = clock) -> None:
            await clock.sleep(1)

        task = asyncio.ensure_future(sleeper())
        await clock.run_until(clock.now())  # the sleeper is asleep; the loop is idle

        def note(clock: VirtualClock = clock, seen: list[datetime] = seen) -> None:
            seen.append(clock.now())

        asyncio.get_running_loop().call_soon(note)
        await clock.run_until(T0 + timedelta(seconds=2), settled=settled)
        assert seen == [seen_at]
        assert task.done()
        assert clock.now() == T0 + timedelta(seconds=2)


async def test_a_timer_fires_at_its_deadline_in_turn_with_sleepers() -> None:
    clock = VirtualClock()
    order: list[tuple[str, datetime]] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        order.append((name, clock.now()))

    first = asyncio.ensure_future(sleeper("sleeper 1", 1))
    await asyncio.sleep(0)  # asleep now: it went to sleep before the timers were set
    clock.call_later(1, lambda: order.append(("timer 1", clock.now())))
    clock.call_later(0.5, lambda: order.append(("timer 0.5", clock.now())))
    second = asyncio.ensure_future(sleeper("sleeper 2", 1))
    await asyncio.sleep(0)
    assert clock.sleeping == 4
    assert clock.next_deadline == T0 + timedelta(seconds=0.5)
    await clock.run_until(T0 + timedelta(seconds=2))
    # A timer is called where a sleeper's wake-up would be queued: deadline, then order set.
    one = T0 + timedelta(seconds=1)
    assert order == [
        ("timer 0.5", T0 + timedelta(seconds=0.5)),
        ("timer 1", one),
        ("sleeper 1", one),
        ("sleeper 2", one),
    ]
    assert first.done()
    assert second.done()
    assert clock.sleeping == 0


async def test_a_cancelled_timer_never_fires_and_holds_no_deadline() -> None:
    clock = VirtualClock()
    fired: list[datetime] = []
    cancel = clock.call_later(3, lambda: fired.append(clock.now()))
    clock.call_later(5, lambda: fired.append(clock.now()))
    assert clock.next_deadline == T0 + timedelta(seconds=3)
    cancel()
    cancel()  # twice is once
    assert clock.next_deadline == T0 + timedelta(seconds=5)
    await clock.run_until(T0 + timedelta(seconds=10))
    assert fired == [T0 + timedelta(seconds=5)]
    cancel()  # after the others fired: still nothing


async def test_an_auto_advancing_clock_runs_to_a_timer_by_itself() -> None:
    clock = VirtualClock(auto_advance=True)
    fired = asyncio.get_running_loop().create_future()
    clock.call_later(3600, lambda: fired.set_result(clock.now()))
    assert await asyncio.wait_for(fired, 5) == T0 + timedelta(hours=1)
