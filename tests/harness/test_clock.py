"""Clocks: virtual time that jumps, deterministic wake order, skew, and the patched wall clock."""

from __future__ import annotations

import asyncio
import datetime as datetime_module
import time
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta, timezone
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.clock import (
    DEFAULT_START,
    Clock,
    ObservableClock,
    OffsetClock,
    SystemClock,
    VirtualClock,
    hold,
)
from harness.durations import format_duration, parse_duration
from harness.exceptions import ClockError, ConfigError
from harness.skew import AgentOffset, Scale, Shift, Skew, parse_skew
from harness.trace import ClockJump
from harness.wallclock import wall_clock_from

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


def test_hold_on_a_real_clock_is_a_no_op() -> None:
    with hold(SystemClock()):
        pass


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


# -- durations -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("25h", timedelta(hours=25)),
        ("90s", timedelta(seconds=90)),
        ("5m", timedelta(minutes=5)),
        ("1d2h", timedelta(days=1, hours=2)),
        ("-5m", timedelta(minutes=-5)),
        ("+25h", timedelta(hours=25)),
        ("1.5h", timedelta(hours=1, minutes=30)),
        ("1h30m15s", timedelta(hours=1, minutes=30, seconds=15)),
        ("250ms", timedelta(milliseconds=250)),
        ("2s500ms", timedelta(seconds=2.5)),
        (" 10s ", timedelta(seconds=10)),
        ("0", timedelta(0)),
        (".5s", timedelta(seconds=0.5)),
        (90, timedelta(seconds=90)),
        (1.5, timedelta(seconds=1.5)),
        (timedelta(days=3), timedelta(days=3)),
    ],
)
def test_parse_duration_reads_what_scenarios_write(
    text: str | float | timedelta, expected: timedelta
) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "5",
        "h",
        "5x",
        "1h1h",
        "5m1h",
        "--5m",
        "1 h",
        "5min",
        "1.h",
        "nan",
        "1e3s",
        "9999999999d",
    ],
)
def test_parse_duration_names_bad_input(bad: str) -> None:
    with pytest.raises(ConfigError, match="bad duration") as caught:
        parse_duration(bad)
    assert repr(bad) in str(caught.value)


@pytest.mark.parametrize("bad", [True, float("nan"), float("inf"), 1e20])
def test_parse_duration_refuses_odd_numbers(bad: float) -> None:
    with pytest.raises(ConfigError, match="bad duration"):
        parse_duration(bad)


def test_format_duration_writes_compact_durations() -> None:
    assert format_duration(timedelta(hours=25)) == "1d1h"
    assert format_duration(timedelta(minutes=-5)) == "-5m"
    assert format_duration(timedelta(minutes=5), plus=True) == "+5m"
    assert format_duration(timedelta(seconds=1.5)) == "1.5s"
    assert format_duration(timedelta(0)) == "0s"


@given(
    st.timedeltas(min_value=timedelta(days=-99_999), max_value=timedelta(days=99_999)),
    st.booleans(),
)
def test_format_and_parse_duration_round_trip(delta: timedelta, plus: bool) -> None:
    assert parse_duration(format_duration(delta, plus=plus)) == delta


@given(
    st.integers(0, 400),
    st.integers(0, 23),
    st.integers(0, 59),
    st.integers(0, 59),
    st.sampled_from(["", "-", "+"]),
)
def test_parse_duration_adds_up_its_parts(d: int, h: int, m: int, s: int, sign: str) -> None:
    text = sign + f"{d}d{h}h{m}m{s}s"
    total = timedelta(days=d, hours=h, minutes=m, seconds=s)
    assert parse_duration(text) == (-total if sign == "-" else total)


# -- skew ----------------------------------------------------------------------------

# Six instants in three turns of two: 0s, 10s | 60s, 70s | 120s, 130s.
TIMELINE = [at(s) for s in (0, 10, 60, 70, 120, 130)]
TURNS = [0, 2, 4]


def test_parse_skew_reads_the_documented_example() -> None:
    skew = parse_skew("shift=+25h@turn3,scale=10,agent-offset=-5m")
    assert skew.transforms == (
        Shift(timedelta(hours=25), turn=3),
        Scale(10),
        AgentOffset(timedelta(minutes=-5)),
    )
    assert skew.scale == 10
    assert skew.agent_offset == timedelta(minutes=-5)
    assert parse_skew(str(skew)) == skew


def test_parse_skew_combines_repeated_parts() -> None:
    skew = parse_skew(" scale=2 , scale=1.5, agent_offset=1m,agent-offset=-3m, shift=1h@index2 ")
    assert skew.scale == 3
    assert skew.agent_offset == timedelta(minutes=-2)
    assert skew.shifts == (Shift(HOUR, from_index=2),)
    assert parse_skew(str(skew)) == skew
    assert parse_skew("") == Skew()
    assert Skew().is_identity
    assert not skew.is_identity
    assert parse_skew("scale=2") + parse_skew("shift=1h") == parse_skew("scale=2,shift=1h")


@pytest.mark.parametrize(
    ("spec", "part"),
    [
        ("shift=+25x@turn3", "shift=+25x@turn3"),
        ("scale=10,scale=abc", "scale=abc"),
        ("scale=0", "scale=0"),
        ("scale=-2", "scale=-2"),
        ("scale=inf", "scale=inf"),
        ("warp=2", "warp=2"),
        ("shift=1h@turnX", "shift=1h@turnX"),
        ("shift=1h@turn0", "shift=1h@turn0"),
        ("agent-offset=", "agent-offset="),
        ("shift", "shift"),
        ("scale=2,", ""),
    ],
)
def test_parse_skew_names_the_bad_part(spec: str, part: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_skew(spec)
    assert f"bad skew part {part!r}" in str(caught.value)


def test_a_shift_before_a_turn_adds_a_pause_there() -> None:
    shifted = parse_skew("shift=+25h@turn3").apply(TIMELINE, TURNS)
    assert shifted == TIMELINE[:4] + [t + timedelta(hours=25) for t in TIMELINE[4:]]


def test_a_shift_by_index_or_of_everything() -> None:
    assert Shift(HOUR, from_index=5).apply(TIMELINE) == [*TIMELINE[:5], TIMELINE[5] + HOUR]
    assert Shift(-HOUR).apply(TIMELINE) == [t - HOUR for t in TIMELINE]


def test_scale_multiplies_every_gap_from_the_first_instant() -> None:
    assert Scale(10).apply(TIMELINE) == [at(s) for s in (0, 100, 600, 700, 1200, 1300)]
    assert Scale(0.5).apply(TIMELINE) == [at(s) for s in (0, 5, 30, 35, 60, 65)]


def test_scale_comes_first_so_a_shift_stays_exact() -> None:
    for spec in ("shift=+25h@turn3,scale=10", "scale=10,shift=+25h@turn3"):
        skewed = parse_skew(spec).apply(TIMELINE, TURNS)
        assert skewed[4] - skewed[3] == timedelta(seconds=500) + timedelta(hours=25), spec
        assert skewed[1] - skewed[0] == timedelta(seconds=100), spec


def test_a_negative_shift_keeps_the_timeline_in_order() -> None:
    skewed = parse_skew("shift=-55s@turn2").apply(TIMELINE, TURNS)
    assert skewed == [at(s) for s in (0, 10, 10, 15, 65, 75)]
    skewed = parse_skew("shift=-2h@turn2").apply(TIMELINE, TURNS)
    assert skewed == [at(s) for s in (0, 10, 10, 10, 10, 10)]


def test_agent_offset_moves_the_agents_clock_not_the_channels() -> None:
    skew = parse_skew("agent-offset=-5m")
    assert skew.apply(TIMELINE, TURNS) == TIMELINE
    channel = VirtualClock()
    agent = skew.agent_clock(channel)
    assert agent.now() == T0 - timedelta(minutes=5)
    assert parse_skew("scale=2").agent_clock(channel) is channel
    assert AgentOffset(HOUR).clock(channel).now() == T0 + HOUR


def test_skew_apply_reports_what_it_cannot_do() -> None:
    with pytest.raises(ConfigError, match="no turns"):
        parse_skew("shift=1h@turn2").apply(TIMELINE)
    with pytest.raises(ConfigError, match="only 3 turns"):
        parse_skew("shift=1h@turn4").apply(TIMELINE, TURNS)
    with pytest.raises(ConfigError, match="only 6 instants"):
        Shift(HOUR, from_index=6).apply(TIMELINE)
    with pytest.raises(ClockError, match="backwards"):
        Skew().apply([at(10), at(5)])
    with pytest.raises(ConfigError):
        Shift(HOUR, from_index=-1)
    with pytest.raises(ConfigError):
        Shift(HOUR, from_index=2, turn=1)
    assert parse_skew("shift=1h@turn2,scale=3").apply([], []) == []


@given(
    st.lists(st.integers(0, 10**6), max_size=12),
    st.floats(0.01, 100),
    st.integers(-(10**6), 10**6),
    st.integers(0, 11),
)
def test_skew_keeps_any_timeline_in_order(
    offsets: list[int], factor: float, shift_seconds: int, index: int
) -> None:
    timeline = [at(s) for s in sorted(offsets)]
    skew = Skew((Scale(factor), Shift(timedelta(seconds=shift_seconds), from_index=index)))
    if index >= len(timeline) and timeline:
        with pytest.raises(ConfigError):
            skew.apply(timeline)
        return
    skewed = skew.apply(timeline)
    assert len(skewed) == len(timeline)
    assert all(a <= b for a, b in pairwise(skewed))


# -- the process's wall clock --------------------------------------------------------


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
