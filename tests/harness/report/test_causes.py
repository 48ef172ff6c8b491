"""One cause, one headline: violations grouped under the one that names their cause."""

from __future__ import annotations

import asyncio
from pathlib import Path

from harness.report import causes, load_json, result_line, scenario_causes, write_json
from harness.results import Violation, ViolationKind
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


def test_a_redelivered_confirm_under_no_dedupe_leads_with_the_repeated_booking() -> None:
    scenario = load_scenario(SUITE / "redelivered_confirm_books_once.yaml")
    options = RunOptions(
        target="agents.booking:agent_factory", agent_settings={"BOOKING_REGRESSIONS": "no_dedupe"}
    )
    result = asyncio.run(Runner(options).run_scenario(scenario))
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


def test_report_json_keeps_every_violation_in_the_order_found(tmp_path: Path) -> None:
    scenario = load_scenario(SUITE / "redelivered_confirm_books_once.yaml")
    options = RunOptions(
        target="agents.booking:agent_factory", agent_settings={"BOOKING_REGRESSIONS": "no_dedupe"}
    )
    runner = Runner(options)
    run = asyncio.run(runner.run([scenario]))
    loaded = load_json(write_json(run, tmp_path / "report.json"))
    assert loaded.scenarios[0].violations == run.scenarios[0].violations
    assert loaded.scenarios[0].violations[0].rule == "expect"  # not reordered by cause
