"""Reading dates, times and intents the way customers type them."""

from __future__ import annotations

from datetime import date

import pytest

from agents.booking.language import (
    find_date,
    find_time,
    format_day,
    is_cancel_request,
    is_confirmation,
    is_policy_question,
    is_rejection,
)

THURSDAY = date(2026, 1, 1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a table on friday please", date(2026, 1, 2)),
        ("Friday", date(2026, 1, 2)),
        ("this fri", date(2026, 1, 2)),
        ("thursday", date(2026, 1, 8)),  # today is Thursday: the next one
        ("tomorrow at 8", date(2026, 1, 2)),
        ("the day after tomorrow", date(2026, 1, 3)),
        ("today", THURSDAY),
        ("tonight", THURSDAY),
        ("2026-01-09", date(2026, 1, 9)),
        ("next monday", date(2026, 1, 5)),
        ("next friday", date(2026, 1, 9)),  # friday is tomorrow, so "next" is a week on
        ("9 january", date(2026, 1, 9)),
        ("jan 9th", date(2026, 1, 9)),
        ("the 3rd of March", date(2026, 3, 3)),
        ("december 31", date(2026, 12, 31)),
        ("friday, no wait, saturday", date(2026, 1, 3)),
    ],
)
def test_dates(text: str, expected: date) -> None:
    assert find_date(text, THURSDAY) == expected


@pytest.mark.parametrize("text", ["hello", "a table for 4", "2026-02-30", "31 february", "sunny"])
def test_no_date(text: str) -> None:
    assert find_date(text, THURSDAY) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("9am", "09:00"),
        ("at 9 am", "09:00"),
        ("10:30", "10:30"),
        ("19:00", "19:00"),
        ("7pm", "19:00"),
        ("7.30pm", "19:30"),
        ("7:30", "19:30"),
        ("09:30", "09:30"),
        ("12pm", "12:00"),
        ("12am", "00:00"),
        ("noon", "12:00"),
        ("half past 7", "19:30"),
        ("at 8", "20:00"),
        ("friday at 1", "13:00"),
        ("2026-01-09 at 8pm", "20:00"),
        ("8pm, no, 9pm", "21:00"),
    ],
)
def test_times(text: str, expected: str) -> None:
    assert find_time(text) == expected


@pytest.mark.parametrize("text", ["a table for 4", "friday", "2026-01-09", "9 january", "hi"])
def test_no_time(text: str) -> None:
    assert find_time(text) is None


@pytest.mark.parametrize("text", ["yes", "Yes please!", "confirm", "ok", "book it", "👍", "sure"])
def test_confirmations(text: str) -> None:
    assert is_confirmation(text)
    assert not is_rejection(text)


@pytest.mark.parametrize("text", ["no", "Change", "nope, another day", "something else please"])
def test_rejections(text: str) -> None:
    assert is_rejection(text)
    assert not is_confirmation(text)


def test_intents() -> None:
    assert is_cancel_request("please cancel my booking")
    assert is_cancel_request("I can't make it on friday")
    assert not is_cancel_request("what's your cancellation policy?")
    assert is_policy_question("what's your cancellation policy?")
    assert is_policy_question("do you take a deposit?")
    assert not is_policy_question("table for friday")


def test_format_day() -> None:
    assert format_day(date(2026, 1, 2)) == "Friday 2 January"
