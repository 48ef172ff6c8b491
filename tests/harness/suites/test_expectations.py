"""Expect steps: each expectation held and broken, the violation it gives, what a reply reads as.

Conversations are built event by event with the trace models; steps are read
from YAML as a scenario file writes them, or built in code.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import JsonValue

from harness.results import Violation
from harness.suites.expectations import check_expectation, reply_text
from harness.suites.scenario import parse_scenario
from harness.suites.steps import Expectation, ExpectStep, ToolExpectation
from harness.suites.transcript import render_event
from harness.trace import (
    BlockChange,
    Conversation,
    ErrorInfo,
    Event,
    InboundMessage,
    OutboundSend,
    StatusUpdate,
    ToolCall,
)

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
ANA = "15550001111"
BEN = "15550002222"
REFUSED = ErrorInfo(code=131047, title="Re-engagement message")


def _at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _inbound(text: str, *, s: float = 0.0, user: str = ANA, wamid: str = "wamid.in1") -> Event:
    return InboundMessage(at=_at(s), user=user, wamid=wamid, type="text", text=text)


def _send(
    text: str | None,
    *,
    s: float = 2.0,
    user: str | None = ANA,
    kind: str = "text",
    request: dict[str, JsonValue] | None = None,
    wamid: str | None = "wamid.out1",
    error: ErrorInfo | None = None,
) -> OutboundSend:
    return OutboundSend(
        at=_at(s),
        user=user,
        type=kind,
        text=text,
        request=request or {},
        wamid=None if error is not None else wamid,
        error=error,
    )


def _tool(name: str, *, s: float = 1.0, user: str = ANA, **args: JsonValue) -> Event:
    return ToolCall(at=_at(s), user=user, name=name, args=args)


def _status(wamid: str, status: str, *, s: float = 3.0) -> Event:
    return StatusUpdate(at=_at(s), user=ANA, wamid=wamid, status=status)


def _step(expect: str) -> ExpectStep:
    """The expect step of a two-step scenario file, written as a flow mapping."""
    scenario = parse_scenario(f"steps:\n  - say: hi\n  - expect: {expect}\n")
    step = scenario.steps[1]
    assert isinstance(step, ExpectStep)
    return step


def _check(
    step: ExpectStep,
    events: Sequence[Event],
    *,
    since: int = 0,
    user: str = ANA,
    step_at: datetime = T0,
) -> list[Violation]:
    conversation = Conversation.from_events(events)
    return check_expectation(step, conversation, since=since, user=user, step_at=step_at)


def _problems(step: ExpectStep, events: Sequence[Event], **kw: Any) -> list[str]:
    return [v.message for v in _check(step, events, **kw)]


# Graph API bodies of an interactive message with buttons, one with a list, a template.
BUTTONS: dict[str, JsonValue] = {
    "messaging_product": "whatsapp",
    "type": "interactive",
    "interactive": {
        "type": "button",
        "body": {"text": "Friday 20:00?"},
        "action": {
            "buttons": [
                {"type": "reply", "reply": {"id": "confirm", "title": "Confirm"}},
                {"type": "reply", "reply": {"id": "change", "title": "Change"}},
            ]
        },
    },
}
LIST: dict[str, JsonValue] = {
    "type": "interactive",
    "interactive": {
        "type": "list",
        "body": {"text": "Pick a time"},
        "action": {
            "button": "Times",
            "sections": [
                {"title": "Evening", "rows": [{"id": "t19", "title": "19:00"}]},
                {"title": "Late", "rows": [{"id": "t21", "title": "21:00", "description": "x"}]},
            ],
        },
    },
}
REMINDER: dict[str, JsonValue] = {
    "type": "template",
    "template": {
        "name": "appointment_reminder",
        "language": {"code": "en_US"},
        "components": [
            {"type": "header", "parameters": [{"type": "image", "image": {"id": "1"}}]},
            {
                "type": "body",
                "parameters": [
                    {"type": "text", "text": "Friday 2 January"},
                    {"type": "text", "text": "20:00"},
                ],
            },
        ],
    },
}


# A user asks, the agent searches and proposes.
PROPOSAL: list[Event] = [
    _inbound("a table on friday for 4"),
    _tool("search_slots", date="2026-01-09", party=4),
    _send("Friday 9:00 is free. Shall I book it?"),
]


@pytest.mark.parametrize(
    ("expect", "problems"),
    [
        pytest.param("{reply_contains: FRIDAY 9:00}", [], id="contains-ignores-case"),
        pytest.param("{reply_contains: [friday, shall i]}", [], id="contains-all"),
        pytest.param(
            "{reply_contains: [Friday, Saturday]}",
            ["no reply contains 'Saturday'"],
            id="contains-one-missing",
        ),
        pytest.param("{reply_matches: 'Fri(day)? [0-9]:00'}", [], id="matches"),
        pytest.param(
            "{reply_matches: 'friday'}", ["no reply matches /friday/"], id="matches-is-a-regex"
        ),
        pytest.param("{reply_matches: '(?i)friday'}", [], id="matches-with-flags"),
        pytest.param("{reply_not_contains: [sorry, error]}", [], id="not-contains"),
        pytest.param(
            "{reply_not_contains: [sorry, SHALL I]}",
            ["a reply contains 'SHALL I'"],
            id="not-contains-ignores-case",
        ),
        pytest.param("{tool_called: search_slots}", [], id="called"),
        pytest.param(
            "{tool_called: {name: search_slots, args: {date: '2026-01-09'}}}",
            [],
            id="called-args-subset",
        ),
        pytest.param(
            "{tool_called: {name: search_slots, args: {party: '4'}}}",
            [],
            id="called-args-equal-as-text",
        ),
        pytest.param(
            "{tool_called: {name: search_slots, args: {party: 2}}}",
            ["search_slots(party=2) was not called (calls: search_slots)"],
            id="called-other-args",
        ),
        pytest.param(
            "{tool_called: {name: search_slots, args: {room: terrace}}}",
            ["search_slots(room='terrace') was not called (calls: search_slots)"],
            id="called-without-that-arg",
        ),
        pytest.param(
            "{tool_called: [search_slots, book_appointment]}",
            ["book_appointment was not called (calls: search_slots)"],
            id="called-one-missing",
        ),
        pytest.param(
            "{tool_not_called: [book_appointment, {name: search_slots, args: {party: 6}}]}",
            [],
            id="not-called",
        ),
        pytest.param(
            "{tool_not_called: search_slots}", ["search_slots was called"], id="was-called"
        ),
        pytest.param(
            "{tool_not_called: {name: search_slots, args: {party: 4, date: '2026-01-09'}}}",
            ["search_slots(party=4, date='2026-01-09') was called"],
            id="was-called-with-args",
        ),
        pytest.param(
            "{tool_not_called: search_slot}",
            [
                "tool_not_called names 'search_slot', which the agent never called; "
                "it called 'search_slots': is the name misspelled?"
            ],
            id="not-called-misspelled",
        ),
        pytest.param("{tool_not_called: cancel_booking}", [], id="not-called-nothing-near"),
        pytest.param("{replies: 1}", [], id="replies"),
        pytest.param("{replies: 0}", ["expected 0 replies, got 1"], id="replies-too-many"),
        pytest.param("{template: false}", [], id="not-a-template"),
        pytest.param("{template: true}", ["the last reply was not a template"], id="no-template"),
        pytest.param(
            "{reply_contains: sorry, tool_called: cancel_booking, replies: 2}",
            [
                "no reply contains 'sorry'",
                "cancel_booking was not called (calls: search_slots)",
                "expected 2 replies, got 1",
            ],
            id="every-problem-reported",
        ),
    ],
)
def test_each_expectation_on_a_proposal(expect: str, problems: list[str]) -> None:
    assert _problems(_step(expect), PROPOSAL) == problems


def test_a_reply_contains_what_the_texts_say_together() -> None:
    events = [*PROPOSAL, _send("See you then!", s=3.0, wamid="wamid.out2")]
    assert _problems(_step("{reply_contains: [shall i, see you], replies: 2}"), events) == []


def test_without_tool_calls_the_message_says_none() -> None:
    events = [_inbound("hi"), _send("Hello!")]
    assert _problems(_step("{tool_called: search_slots}"), events) == [
        "search_slots was not called (calls: none)"
    ]


def test_only_what_happened_since_the_last_user_step_counts() -> None:
    earlier: list[Event] = [
        _inbound("saturday please", wamid="wamid.in0", s=-60),
        _tool("book_appointment", s=-59, date="2026-01-10"),
        _send("Saturday is booked.", s=-58, wamid="wamid.out0"),
    ]
    events = [*earlier, *PROPOSAL]
    step = _step("{reply_contains: saturday, tool_called: book_appointment, replies: 1}")
    assert _problems(step, events, since=0) == ["expected 1 reply, got 2"]
    assert _problems(step, events, since=len(earlier)) == [
        "no reply contains 'saturday'",
        "book_appointment was not called (calls: search_slots)",
    ]


def test_receipts_refusals_and_other_users_messages_are_not_replies() -> None:
    events = [
        _inbound("hi"),
        _send(None, kind="mark_read", wamid=None),
        _send(None, kind="typing", wamid=None),
        _send("refused hello", error=REFUSED),
        _send("hello Ben", user=BEN, wamid="wamid.ben"),
        _send("hello everyone", user=None, wamid="wamid.all"),
        _send("hello Ana", wamid="wamid.ana"),
    ]
    step = _step(
        "{replies: 2, reply_contains: [everyone, Ana], reply_not_contains: [Ben, refused]}"
    )
    assert _problems(step, events) == []
    # From Ben's side: his message and the one to everybody.
    step = _step("{replies: 2, reply_contains: Ben, reply_not_contains: Ana}")
    assert _problems(step, events, user=BEN) == []


@pytest.mark.parametrize(
    ("reply_after", "problems"),
    [
        (10.0, ["the agent replied within 30s (1 message)"]),
        (30.0, ["the agent replied within 30s (1 message)"]),
        (31.0, []),
    ],
)
def test_no_reply_within_counts_from_the_user_step(reply_after: float, problems: list[str]) -> None:
    step_at = _at(100)
    events = [_inbound("hmm", s=100), _send("Take your time.", s=100 + reply_after)]
    assert _problems(_step("{no_reply_within: 30s}"), events, step_at=step_at) == problems


def test_no_reply_within_counts_every_early_message() -> None:
    events = [_inbound("hmm"), _send("one", s=1), _send("two", s=5, wamid="wamid.out2")]
    assert _problems(_step("{no_reply_within: 1m}"), events) == [
        "the agent replied within 60s (2 messages)"
    ]


TEMPLATE: dict[str, JsonValue] = {
    "type": "template",
    "template": {"name": "appointment_reminder", "language": {"code": "en_US"}},
}


def test_template_looks_at_the_last_reply_only() -> None:
    reminder = _send(None, kind="template", request=TEMPLATE, s=90000, wamid="wamid.t")
    events = [*PROPOSAL, reminder]
    assert _problems(_step("{template: true}"), events) == []
    assert _problems(_step("{template: false}"), events) == ["the last reply was a template"]
    followed = [*events, _send("Still there?", s=90001, wamid="wamid.after")]
    assert _problems(_step("{template: true}"), followed) == ["the last reply was not a template"]


def test_template_without_any_reply() -> None:
    events = [_inbound("hi"), _send("refused", error=REFUSED)]
    assert _problems(_step("{template: false}"), events) == ["no reply to check for a template"]


def test_status_is_that_of_the_last_reply() -> None:
    events = [
        _inbound("hi"),
        _send("first", wamid="wamid.first"),
        _status("wamid.first", "sent"),
        _status("wamid.first", "read"),
        _send("second", s=4, wamid="wamid.second"),
        _status("wamid.second", "sent", s=5),
        _status("wamid.second", "delivered", s=6),
    ]
    assert _problems(_step("{status: delivered}"), events) == []
    assert _problems(_step("{status: sent}"), events) == []
    assert _problems(_step("{status: read}"), events) == [
        "the last reply never reached read (statuses: delivered, sent)"
    ]


def test_status_without_any_status_or_reply() -> None:
    no_status = [_inbound("hi"), _send("hello")]
    assert _problems(_step("{status: delivered}"), no_status) == [
        "the last reply never reached delivered (statuses: none)"
    ]
    unanswered = [_inbound("hi"), _send("pending", wamid=None)]
    assert _problems(_step("{status: failed}"), unanswered) == [
        "no reply whose status could be failed"
    ]
    assert _problems(_step("{status: read}"), [_inbound("hi")]) == [
        "no reply whose status could be read"
    ]


def test_a_violation_names_the_step_its_line_and_the_turn() -> None:
    earlier: list[Event] = [
        _inbound("hi", s=-60, wamid="wamid.in0"),
        _send("Hello!", s=-59, wamid="wamid.out0"),
    ]
    other = _send("hello Ben", user=BEN, s=3.0, wamid="wamid.ben")
    events = [*earlier, *PROPOSAL, other]
    step = _step("{reply_contains: Saturday, replies: 3}")
    found = _check(step, events, since=len(earlier))
    assert [v.message for v in found] == [
        "no reply contains 'Saturday'",
        "expected 3 replies, got 1",
    ]
    conversation = Conversation.from_events(events)
    # Ana's tool call and reply of the second turn; not her message, not Ben's reply.
    shown = tuple(render_event(e, 1) for e in PROPOSAL[1:])
    assert shown[0].startswith("[turn 2] tool search_slots(")
    for violation in found:
        assert violation.kind == "expectation"
        assert violation.rule == "expect"
        assert violation.step == 1
        assert violation.line == 3
        assert violation.turn == conversation.turns[-1].index == 1
        assert violation.messages == shown
        assert violation.events == (4,)  # Ana's reply: what fell short
    assert found[0].headline() == "expect at turn 2 (line 3): no reply contains 'Saturday'"


def test_an_unmet_expectation_points_at_the_events_that_broke_it() -> None:
    earlier: list[Event] = [_inbound("friday 8pm", wamid="wamid.in0", s=-60)]
    events = [
        *earlier,
        _inbound("Confirm", s=0),
        _tool("book_appointment", s=1, date="2026-01-02"),
        _send("Booked!", s=2, wamid="wamid.out1"),
        _tool("book_appointment", s=3, date="2026-01-02"),
    ]
    step = _step("{tool_not_called: book_appointment, replies: 0, reply_not_contains: Booked}")
    found = {v.message: v.events for v in _check(step, events, since=1)}
    assert found == {
        "book_appointment was called": (2, 4),  # both calls, not the user's message
        "expected 0 replies, got 1": (3,),
        "a reply contains 'Booked'": (3,),
    }
    # A missing reply points at what the agent tried to send, refused sends included.
    refused = [_inbound("hi"), _send("too long", error=REFUSED)]
    [missing] = _check(_step("{reply_contains: Hello}"), refused)
    assert missing.events == (1,)


def test_a_step_built_in_code_and_a_conversation_without_turns() -> None:
    step = ExpectStep(
        expect=Expectation(
            tool_called=(ToolExpectation(name="remind", args={"hours": 25}),),
            reply_not_contains=("reminder",),
        ),
        index=4,
    )
    remind = _tool("remind", hours="25")
    reminder = _send("Your reminder", s=5)
    conversation = Conversation.from_events([remind, reminder])
    [violation] = check_expectation(step, conversation, since=0, user=ANA, step_at=T0)
    assert violation.message == "a reply contains 'reminder'"
    assert (violation.step, violation.line, violation.turn) == (4, None, None)
    assert violation.messages == (render_event(remind, None), render_event(reminder, None))


def test_reply_contains_sees_button_titles() -> None:
    events = [_inbound("friday 8pm"), _send("Friday 20:00?", kind="interactive", request=BUTTONS)]
    assert _problems(_step("{reply_contains: [confirm, change]}"), events) == []
    assert _problems(_step("{reply_not_contains: Change}"), events) == ["a reply contains 'Change'"]


# -- what a reply reads as -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "request_body", "expected"),
    [
        pytest.param("Hello", {"type": "text", "text": {"body": "Hello"}}, "Hello", id="text"),
        pytest.param("Friday 20:00?", BUTTONS, "Friday 20:00? Confirm Change", id="buttons"),
        pytest.param("Pick a time", LIST, "Pick a time 19:00 21:00", id="list-rows"),
        pytest.param(
            "Shall I book it?",
            {
                "text": "Shall I book it?",
                "options": [
                    {"id": "confirm", "title": "Confirm"},
                    {"id": "change", "title": "Change"},
                ],
            },
            "Shall I book it? Confirm Change",
            id="direct-options",
        ),
        pytest.param(
            None,
            REMINDER,
            "[template appointment_reminder] Friday 2 January 20:00",
            id="whatsapp-template",
        ),
        pytest.param(
            "Friday | 20:00",
            {"text": "Friday | 20:00", "template": "appointment_reminder"},
            "Friday | 20:00 [template appointment_reminder]",
            id="direct-template",
        ),
        pytest.param(
            "Odd",
            {
                "interactive": {
                    "action": {
                        "buttons": ["x", {"reply": "no"}],
                        "sections": ["y", {"rows": ["z", {"id": "r"}]}],
                    }
                },
                "options": ["w"],
                "template": {
                    "name": "t",
                    "components": ["v", {"parameters": ["u", {"type": "x"}]}],
                },
            },
            "Odd [template t]",
            id="malformed-parts-skipped",
        ),
    ],
)
def test_reply_text(text: str | None, request_body: dict[str, JsonValue], expected: str) -> None:
    send = _send(text, kind=str(request_body.get("type", "text")), request=request_body)
    assert reply_text(send) == expected


def test_tool_calls_are_seen_from_the_acting_users_side() -> None:
    events = [
        _inbound("hi", user=BEN, wamid="wamid.ben"),
        _tool("book_appointment", user=ANA, date="2026-01-09"),
        _send("Booked, Ana!", user=ANA),
        _send("Hello Ben", user=BEN, wamid="wamid.out.ben"),
    ]
    [problem] = _problems(_step("{tool_called: book_appointment}"), events, user=BEN)
    assert problem.startswith("book_appointment was not called")


# -- blocked -------------------------------------------------------------------------------


def _block(blocked: bool = True, *, s: float = 2.0, user: str = ANA, **kw: Any) -> BlockChange:
    return BlockChange(at=_at(s), user=user, blocked=blocked, input=f"+{user}", **kw)


@pytest.mark.parametrize(
    ("events", "blocked"),
    [
        ([], False),
        ([_block()], True),
        ([_block(), _block(False, s=3)], False),
        ([_block(), _block(False, s=3, error=REFUSED)], True),  # a refused unblock changes nothing
        ([_block(error=REFUSED)], False),
        ([_block(user=BEN)], False),  # another user's block
    ],
)
def test_blocked_is_the_last_accepted_block_or_unblock_of_the_steps_user(
    events: list[Event], blocked: bool
) -> None:
    log = [_inbound("you idiot"), *events]
    assert _problems(_step(f"{{blocked: {str(blocked).lower()}}}"), log) == []
    assert _problems(_step(f"{{blocked: {str(not blocked).lower()}}}"), log) != []


def test_a_blocked_expectation_says_why_and_points_at_the_block() -> None:
    refused = [_inbound("you idiot"), _block(error=REFUSED)]
    [violation] = _check(_step("{blocked: true}"), refused)
    assert violation.message == "the agent's block of 15550001111 was refused (131047)"
    assert violation.events == (1,)
    unblocked = [_inbound("hi"), _block(), _block(False, s=3)]
    assert _problems(_step("{blocked: true}"), unblocked) == ["the agent unblocked 15550001111"]
    [blocked] = _check(_step("{blocked: false}"), [_inbound("hi"), _block()])
    assert (blocked.message, blocked.events) == ("the agent has blocked 15550001111", (1,))
    assert render_event(_block()) == "agent blocks 15550001111"
    assert render_event(_block(False, error=REFUSED)).startswith("agent unblocks 15550001111 ->")
