"""Dates relative to a scenario's start: ``${friday}``, ``${today+3d}``, ``${january 9:%A}``.

The start of an in-process run, 2026-01-01, is a Thursday: the table below
is read from a calendar. A property test checks that the expressions read
weekdays and dates the way the booking agent reads what guests type.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents.booking.language import find_date
from harness.exceptions import ScenarioError
from harness.suites.dates import check_dates, parse_date_expression, resolve_dates
from harness.suites.expectations import check_expectation, started_on, with_dates
from harness.suites.scenario import parse_scenario
from harness.suites.steps import ExpectStep
from harness.trace import ClockJump, Conversation, InboundMessage, OutboundSend, ToolCall

THURSDAY = date(2026, 1, 1)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("${today}", "2026-01-01"),
        ("${tomorrow}", "2026-01-02"),
        ("${yesterday}", "2025-12-31"),
        ("${today+3d}", "2026-01-04"),
        ("${today - 1w}", "2025-12-25"),
        ("${friday}", "2026-01-02"),
        ("${Fri}", "2026-01-02"),
        ("${thursday}", "2026-01-08"),  # strictly after the start: a week on
        ("${wednesday}", "2026-01-07"),
        ("${friday+1w}", "2026-01-09"),
        ("${january 9}", "2026-01-09"),
        ("${9 january}", "2026-01-09"),
        ("${jan 9th}", "2026-01-09"),
        ("${the 9th of january}", None),  # not a form the expressions know
        ("${january 1}", "2026-01-01"),  # on or after the start: the same day
        ("${december 31}", "2026-12-31"),
        ("${february 29}", "2028-02-29"),  # the next year that has one
        ("${friday:%A %-d %B}", "Friday 2 January"),
        ("${friday:%a %d %b %y}", "Fri 02 Jan 26"),
        ("${december 31:%j, %-m/%-d/%Y, 100%%}", "365, 12/31/2026, 100%"),
        ("on ${friday:%A} or ${saturday:%A}", "on Friday or Saturday"),
        ("costs $${price} on ${tomorrow}", "costs ${price} on 2026-01-02"),
        ("no dates at all: $5 {braces}", "no dates at all: $5 {braces}"),
    ],
)
def test_expressions_are_written_for_the_start_date(text: str, written: str | None) -> None:
    if written is None:
        with pytest.raises(ValueError, match="unknown date"):
            check_dates(text)
        return
    assert check_dates(text) == text
    assert resolve_dates(text, THURSDAY) == written


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("${fryday}", "${fryday}: unknown date 'fryday' (did you mean 'friday'?); a date is "),
        ("${tomorow+1d}", "unknown date 'tomorow' (did you mean 'tomorrow'?)"),
        ("${janury 9}", "${janury 9}: unknown month 'janury' (did you mean 'january'?)"),
        ("${february 30}", "${february 30}: there is no february 30"),
        ("${friday:%H:%M}", "unknown format directive '%H' (known: %Y %y %m %-m %d %-d %j"),
        ("${friday:%}", "unknown format directive '%'"),
        ("${friday:}", "${friday:}: the format after ':' is empty"),
        ("${}", "${}: no date; a date is today, tomorrow"),
        ("${+3d}", "${+3d}: no date"),
        ("on ${friday", "'${' without a closing '}' in 'on ${friday' (write $${ for a literal ${)"),
    ],
)
def test_a_bad_expression_says_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        check_dates(text)
    assert "\n" not in str(caught.value)


def test_a_date_in_a_pattern_is_written_escaped() -> None:
    assert resolve_dates("on ${friday:%d.%m.}", THURSDAY, escape=re.escape) == r"on 02\.01\."


@given(
    start=st.dates(min_value=date(2000, 1, 1), max_value=date(2099, 12, 31)),
    weekday=st.sampled_from(WEEKDAYS),
)
def test_a_weekday_is_the_next_such_day_as_the_booking_agent_reads_it(
    start: date, weekday: str
) -> None:
    written = date.fromisoformat(resolve_dates(f"${{{weekday}}}", start))
    assert 1 <= (written - start).days <= 7
    assert written.weekday() == WEEKDAYS.index(weekday)
    assert written == find_date(f"a table on {weekday} please", start)


@given(
    start=st.dates(min_value=date(2000, 1, 1), max_value=date(2099, 12, 31)),
    day=st.dates(min_value=date(2001, 1, 1), max_value=date(2001, 12, 31)),  # no 29 February
)
def test_a_month_and_day_is_the_next_such_date_as_the_booking_agent_reads_it(
    start: date, day: date
) -> None:
    month = day.strftime("%B").lower()
    written = date.fromisoformat(resolve_dates(f"${{{month} {day.day}}}", start))
    assert 0 <= (written - start).days < 366
    assert (written.month, written.day) == (day.month, day.day)
    assert written == find_date(f"dinner on {day.day} {month}", start)


def test_an_expression_parses_into_its_parts() -> None:
    parsed = parse_date_expression(" Friday + 2w : %A ")
    assert (parsed.weekday, parsed.offset, parsed.format) == (4, timedelta(days=14), " %A ")


# -- in scenario files ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expect", "where"),
    [
        ('{reply_contains: "${fryday}"}', "s.yaml:3: steps[1].expect.reply_contains: "),
        (
            '{reply_contains: [ok, "${friday:%Q}"]}',
            "s.yaml:3: steps[1].expect.reply_contains[1]: ",
        ),
        ('{reply_not_contains: "${fryday}"}', "s.yaml:3: steps[1].expect.reply_not_contains: "),
        ('{reply_matches: "on ${fryday}"}', "s.yaml:3: steps[1].expect.reply_matches: "),
        (
            '{tool_called: {name: search_slots, args: {date: "${fryday}"}}}',
            "s.yaml:3: steps[1].expect.tool_called.args.date: ",
        ),
        (
            '{tool_not_called: [a, {name: b, args: {when: {days: ["${today}", "${fryday}"]}}}]}',
            "s.yaml:3: steps[1].expect.tool_not_called[1].args.when.days[1]: ",
        ),
    ],
)
def test_a_bad_expression_in_a_file_names_the_file_line_and_field(expect: str, where: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(f"steps:\n  - say: hi\n  - expect: {expect}\n", path=Path("s.yaml"))
    message = str(caught.value)
    assert message.startswith(where), message
    assert "unknown" in message
    assert "\n" not in message


def test_a_pattern_with_an_expression_must_still_compile() -> None:
    with pytest.raises(ScenarioError, match=r"reply_matches: not a valid regular expression"):
        parse_scenario('steps:\n  - say: hi\n  - expect: {reply_matches: "(${friday}"}\n')


def test_a_scenario_keeps_its_expressions_when_written_back() -> None:
    text = (
        "steps:\n  - say: friday please\n  - expect:\n"
        '      reply_contains: "${friday:%A %-d %B}"\n'
        '      reply_matches: "on ${friday:%d/%m}"\n'
        '      tool_called: {name: search_slots, args: {date: "${friday}"}}\n'
    )
    scenario = parse_scenario(text)
    written = scenario.to_yaml()
    assert parse_scenario(written).to_data() == scenario.to_data()
    for expression in ("${friday:%A %-d %B}", "on ${friday:%d/%m}", "${friday}"):
        assert expression in written


# -- at check time ---------------------------------------------------------------------------


def _step(expect: str) -> ExpectStep:
    step = parse_scenario(f"steps:\n  - say: hi\n  - expect: {expect}\n").steps[1]
    assert isinstance(step, ExpectStep)
    return step


def _conversation(start: datetime, reply: str, **args: str) -> Conversation:
    user = "15550001111"
    return Conversation.from_events(
        [
            InboundMessage(at=start, user=user, wamid="w1", type="text", text="friday"),
            ToolCall(at=start, user=user, name="search_slots", args=dict(args)),
            OutboundSend(at=start, user=user, type="text", text=reply, wamid="w2"),
        ]
    )


STEP = (
    '{reply_contains: "${friday:%A %-d %B}", '
    'tool_called: {name: search_slots, args: {date: "${friday}"}}}'
)


def test_an_expectation_holds_whichever_day_the_conversation_started() -> None:
    step = _step(STEP)
    for start, friday in (
        (datetime(2026, 1, 1, 9, tzinfo=UTC), "Friday 2 January"),
        (datetime(2026, 3, 14, 23, 59, tzinfo=UTC), "Friday 20 March"),
    ):
        iso = datetime.strptime(f"{friday} {start.year}", "%A %d %B %Y").date().isoformat()
        conversation = _conversation(start, f"See you {friday}", date=iso)
        when = start.date()
        assert (
            check_expectation(step, conversation, since=0, user="15550001111", step_at=start) == []
        )
        assert (
            check_expectation(
                step, conversation, since=0, user="15550001111", step_at=start, start=when
            )
            == []
        )


def test_a_violation_shows_the_date_that_was_looked_for() -> None:
    start = datetime(2026, 1, 1, 9, tzinfo=UTC)
    conversation = _conversation(start, "See you Saturday", date="2026-01-03")
    found = check_expectation(_step(STEP), conversation, since=0, user="15550001111", step_at=start)
    assert [v.message for v in found] == [
        "no reply contains 'Friday 2 January'",
        "search_slots(date='2026-01-02') was not called (calls: search_slots)",
    ]


def test_the_given_start_wins_over_the_conversations_first_instant() -> None:
    start = datetime(2026, 1, 1, 9, tzinfo=UTC)
    conversation = _conversation(start + timedelta(days=7), "See you Friday 2 January")
    step = _step('{reply_contains: "${friday:%A %-d %B}"}')
    at = start + timedelta(days=7)
    assert check_expectation(step, conversation, since=0, user="15550001111", step_at=at) != []
    assert (
        check_expectation(
            step, conversation, since=0, user="15550001111", step_at=at, start=start.date()
        )
        == []
    )


def test_the_start_of_a_conversation_that_began_with_a_wait_is_before_the_wait() -> None:
    start = datetime(2026, 1, 1, 23, tzinfo=UTC)
    later = start + timedelta(hours=25)
    jump = ClockJump(at=later, previous=start, reason="wait 25h")
    assert started_on(Conversation.from_events([jump])) == date(2026, 1, 1)
    assert started_on(Conversation()) is None


def test_with_dates_writes_every_expression_of_a_step() -> None:
    step = _step(
        '{reply_contains: ["${tomorrow}", plain], reply_not_contains: "${today}", '
        'reply_matches: "${today:%d.%m}", tool_called: {name: t, args: {d: ["${friday}"]}}, '
        "tool_not_called: u}"
    )
    written = with_dates(step, THURSDAY).expect
    assert written.reply_contains == ("2026-01-02", "plain")
    assert written.reply_not_contains == ("2026-01-01",)
    assert written.reply_matches == r"01\.01"
    assert written.tool_called is not None
    assert written.tool_called[0].args == {"d": ["2026-01-02"]}
    assert written.tool_not_called is not None
    assert written.tool_not_called[0].args is None
