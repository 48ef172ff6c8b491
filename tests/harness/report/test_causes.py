"""One cause, one headline: violations grouped under the one that names their cause."""

from __future__ import annotations

import asyncio
import xml.etree.ElementTree as ET
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from harness.report import (
    causes,
    junit_xml,
    load_json,
    print_summary,
    result_line,
    scenario_causes,
    write_json,
)
from harness.results import RunResult, Violation, ViolationKind
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import load_scenario
from harness.trace import Conversation, Event, ToolCall
from tests.harness.report.sample import USER, at, inbound, reply

SUITE = Path(__file__).resolve().parents[3] / "scenarios" / "booking"


def _book(t: float) -> ToolCall:
    return ToolCall(at=at(t), user=USER, name="book", args={"slot": "20:00"}, side_effect=True)


def _redelivered_confirm() -> Conversation:
    """Events 1 "Book 8pm", 2 proposal, 4 "Confirm", 5 book, 6 "Booked", 8 copy, 9 book, 10 reply"""
    events: list[Event] = [
        *inbound(0, "wamid.1", "Book 8pm", "d1"),
        reply(1, "wamid.o1", "Shall I book 20:00?"),
        *inbound(10, "wamid.2", "Confirm", "d2"),
        _book(11),
        reply(12, "wamid.o2", "Booked!"),
        *inbound(20, "wamid.2", "Confirm", "d3", duplicate=True),
        _book(21),
        reply(22, "wamid.o3", "Booked!"),
    ]
    return Conversation.from_events(events)


def _v(rule: str, events: tuple[int, ...], kind: ViolationKind = "invariant") -> Violation:
    return Violation(kind=kind, rule=rule, message=f"{rule} broke", turn=1, events=events)


def test_the_violation_that_shows_the_redelivered_copy_leads_the_others_follow() -> None:
    found = [
        _v("expect", (9,), "expectation"),
        _v("expect", (10,), "expectation"),
        _v("action_only_after_confirmation", (5, 9)),
        _v("no_repeated_side_effects", (4, 5, 8, 9)),
    ]
    [cause] = causes(found, _redelivered_confirm())
    assert cause.lead is found[3]
    assert cause.follows == (found[0], found[1], found[2])  # in the order they were found
    assert cause.violations == (found[3], found[0], found[1], found[2])


def test_without_a_violation_naming_the_message_only_the_same_action_is_grouped() -> None:
    found = [
        _v("expect", (9,), "expectation"),
        _v("sends_valid", (10,)),
        _v("action_only_after_confirmation", (9,)),
    ]
    grouped = causes(found, _redelivered_confirm())
    # The rule leads the expectation about the same booking; the reply stands apart.
    assert [(c.lead.rule, [f.rule for f in c.follows]) for c in grouped] == [
        ("action_only_after_confirmation", ["expect"]),
        ("sends_valid", []),
    ]


def test_violations_about_no_action_and_causes_of_other_messages_stand_alone() -> None:
    found = [
        _v("expect", (), "expectation"),  # about nothing the agent did
        _v("first", (1, 2)),  # the proposal, answering "Book 8pm"
        _v("second", (8, 9)),  # the second booking, answering the copy
    ]
    grouped = causes(found, _redelivered_confirm())
    assert [c.violations for c in grouped] == [(found[0],), (found[1],), (found[2],)]
    assert [c.lead for c in causes(found, None)] == found  # no conversation: nothing to group


@pytest.fixture(scope="module")
def no_dedupe() -> RunResult:
    """The bundled redelivered-Confirm scenario against the agent with no_dedupe planted."""
    scenario = load_scenario(SUITE / "redelivered_confirm_books_once.yaml")
    options = RunOptions(
        target="agents.booking:agent_factory", agent_settings={"BOOKING_REGRESSIONS": "no_dedupe"}
    )
    return asyncio.run(Runner(options).run([scenario]))


def test_a_redelivered_confirm_under_no_dedupe_leads_with_the_repeated_booking(
    no_dedupe: RunResult,
) -> None:
    [result] = no_dedupe.scenarios
    assert len(result.violations) == 4  # one bug, four broken rules
    [cause] = scenario_causes(result)
    assert cause.lead.rule == "no_repeated_side_effects"
    assert "redelivered message 'Confirm'" in cause.lead.message
    assert sorted(v.rule for v in cause.follows) == [
        "action_only_after_confirmation",
        "expect",
        "expect",
    ]
    assert result_line(result).endswith("(first in turn 2) (+3 from the same cause)")
    assert "proposed anything" not in " ".join(v.message for v in result.violations)


def test_the_console_shows_one_headline_and_what_followed_under_it(no_dedupe: RunResult) -> None:
    console = Console(record=True, width=400, color_system=None, file=StringIO())
    print_summary(no_dedupe, console)
    lines = console.export_text().splitlines()
    headlines = [line for line in lines if line.startswith("  ✗ ")]
    assert len(headlines) == 1
    assert headlines[0].startswith("  ✗ no_repeated_side_effects at turn 2")
    start = lines.index("    3 more from the same cause:")
    assert lines[start + 1].startswith("      - expect at turn 2 (line 12): ")
    assert lines[start + 3].startswith("      - action_only_after_confirmation at turn 2")


def test_junit_names_the_cause_and_keeps_every_violation(no_dedupe: RunResult) -> None:
    root = ET.fromstring(junit_xml(no_dedupe).split("\n", 1)[1])
    failure = root.find("testsuite/testcase/failure")
    assert failure is not None
    assert failure.get("type") == "no_repeated_side_effects"
    assert (failure.get("message") or "").startswith("no_repeated_side_effects at turn 2")
    body = failure.text or ""
    assert body.startswith("1. [invariant] no_repeated_side_effects\n")
    assert "4. [invariant] action_only_after_confirmation (from the same cause as 1)" in body


def test_report_json_keeps_every_violation_in_the_order_found(
    no_dedupe: RunResult, tmp_path: Path
) -> None:
    loaded = load_json(write_json(no_dedupe, tmp_path / "report.json"))
    assert loaded.scenarios[0].violations == no_dedupe.scenarios[0].violations
    assert loaded.scenarios[0].violations[0].rule == "expect"  # not reordered by cause
