"""Skew: shifts, scaling and the agent's offset applied to a recorded timeline."""

from __future__ import annotations

from datetime import datetime, timedelta
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.clock import DEFAULT_START, VirtualClock
from harness.exceptions import ClockError, ConfigError
from harness.skew import AgentOffset, Scale, Shift, Skew, parse_skew

T0 = DEFAULT_START
HOUR = timedelta(hours=1)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


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


def test_a_bad_offset_is_told_that_a_negative_one_is_accepted() -> None:
    with pytest.raises(ConfigError, match=r"e\.g\. 90s, 5m, 1d2h, -5m or 1\.5h$"):
        parse_skew("agent-offset=soon")
