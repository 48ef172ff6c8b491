"""Durations as scenarios write them: parsing, formatting and their round trip."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.durations import format_duration, parse_duration
from harness.exceptions import ConfigError


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


def test_the_hint_for_a_bad_duration_offers_a_negative_one_only_where_one_is_accepted() -> None:
    with pytest.raises(ConfigError) as unsigned:
        parse_duration("soon")
    assert str(unsigned.value) == (
        "bad duration 'soon': expected a number with a unit (d, h, m, s, ms), "
        "e.g. 90s, 5m, 1d2h or 1.5h"
    )
    with pytest.raises(ConfigError) as signed:
        parse_duration("soon", signed=True)
    assert "e.g. 90s, 5m, 1d2h, -5m or 1.5h" in str(signed.value)
    assert parse_duration("-5m") == timedelta(minutes=-5)  # read all the same
