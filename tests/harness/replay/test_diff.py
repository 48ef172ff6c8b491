"""Comparing conversations: the turn-by-turn diff, loading its inputs, the terminal and the page."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import JsonValue, ValidationError
from rich.console import Console

from harness.cli.diff import diff_command, load_conversation, print_diff
from harness.exceptions import ConfigError, FixtureFormatError, FixtureNotFound, SchemaVersionError
from harness.fixture import FixtureMeta, FixtureWriter
from harness.replay.diff import ConversationDiff, TurnDiff, diff_conversations
from harness.report import render_diff_html, write_json
from harness.results import RunResult, ScenarioResult
from harness.trace import (
    Conversation,
    DeliveryAttempt,
    ErrorInfo,
    Event,
    InboundMessage,
    LLMExchange,
    OutboundSend,
    Participant,
    StatusUpdate,
    ToolCall,
)
from tests.harness.report.dom import Element, parse

START = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)
USER = "5511987654321"
OTHER = "5511900000002"
DANGEROUS = "<script>alert('pwned')</script> & \"quotes\""


@dataclass
class Booking:
    """The knobs of the sample booking conversation; each test turns one."""

    slot: str = "20:00"
    booked: str = "Booked for 8pm"
    options: tuple[tuple[str, str], ...] = (("confirm", "Confirm"), ("change", "Change time"))
    tap: tuple[str, str] = ("confirm", "Confirm")
    first: str = "A table for 2 tomorrow at 8pm"
    last_status: str = "read"
    failure: ErrorInfo | None = None
    refused: ErrorInfo | None = None
    template: str = "booking_reminder"
    template_params: tuple[str, ...] = ("B-1",)
    extra_reply: str | None = None
    thanks: bool = True
    redelivered: bool = False
    tool_error: str | None = None
    # volatile: none of these may matter
    ids: str = "A"
    shift: float = 0.0
    latency: float = 12.0
    tokens: int = 800
    extra: dict[str, Any] = field(default_factory=dict)


def booking(knobs: Booking | None = None, **changes: Any) -> Conversation:
    """Three turns: ask (a tool, buttons), confirm by a tap (a booking), thanks (a template)."""
    k = knobs or Booking(**changes)

    def at(seconds: float) -> datetime:
        return START + timedelta(seconds=seconds + k.shift)

    def wamid(name: str) -> str:
        return f"wamid.{k.ids}{name}"

    def delivery(t: float, name: str, *items: str) -> DeliveryAttempt:
        return DeliveryAttempt(
            at=at(t),
            user=USER,
            delivery=f"{k.ids}-{name}",
            items=items,
            status_code=200,
            latency_ms=k.latency,
        )

    def said(t: float, name: str, text: str, *, duplicate: bool = False) -> list[Event]:
        return [
            delivery(t, name, wamid(name)),
            InboundMessage(
                at=at(t),
                user=USER,
                wamid=wamid(name),
                type="text",
                text=text,
                body={"id": wamid(name), "type": "text", "text": {"body": text}},
                delivery=f"{k.ids}-{name}",
                duplicate=duplicate,
            ),
        ]

    def text(t: float, name: str, body: str) -> OutboundSend:
        return OutboundSend(
            at=at(t),
            user=USER,
            type="text",
            text=body,
            request={"to": USER, "type": "text", "text": {"body": body}},
            wamid=wamid(name),
            in_window=True,
        )

    def statuses(t: float, name: str, *names: str) -> list[Event]:
        return [
            StatusUpdate(
                at=at(t + i),
                user=USER,
                wamid=wamid(name),
                status=status,
                delivery=f"{k.ids}-{name}-{status}",
                errors=(k.failure,) if status == "failed" and k.failure else (),
            )
            for i, status in enumerate(names)
        ]

    buttons: list[JsonValue] = [
        {"type": "reply", "reply": {"id": ident, "title": title}} for ident, title in k.options
    ]
    question = "Table for 2 tomorrow at 20:00. Confirm?"
    confirm = OutboundSend(
        at=at(4),
        user=USER,
        type="interactive",
        text=question,
        request={
            "to": USER,
            "type": "interactive",
            "interactive": {
                "type": "button",
                "body": {"text": question},
                "action": {"buttons": buttons},
            },
        },
        wamid=None if k.refused else wamid("OUT1"),
        error=k.refused,
        in_window=True,
    )
    progress = ("sent", "delivered", k.last_status) if k.last_status != "sent" else ("sent",)
    tap_id, tap_title = k.tap
    events: list[Event] = [
        *said(0, "IN1", k.first),
        OutboundSend(at=at(1), user=USER, type="mark_read", request={"status": "read"}),
        LLMExchange(at=at(2), user=USER, key=f"key-{k.ids}", model="m", input_tokens=k.tokens),
        ToolCall(
            at=at(3),
            user=USER,
            name="check_availability",
            args={"date": "2025-03-02", "slot": k.slot, "party": 2},
            result={"available": True},
        ),
        confirm,
        *([] if k.refused else statuses(5, "OUT1", *progress)),
        delivery(30, "IN2", wamid("IN2")),
        InboundMessage(
            at=at(30),
            user=USER,
            wamid=wamid("IN2"),
            type="interactive",
            text=tap_title,
            reply_id=tap_id,
            context_id=wamid("OUT1"),
            body={
                "id": wamid("IN2"),
                "type": "interactive",
                "interactive": {
                    "type": "button_reply",
                    "button_reply": {"id": tap_id, "title": tap_title},
                },
            },
            delivery=f"{k.ids}-IN2",
        ),
        ToolCall(
            at=at(31),
            user=USER,
            name="book_appointment",
            args={"slot": k.slot, "party": 2, "message": wamid("IN2")},
            result={"booking_id": f"B-{k.ids}"},
            error=k.tool_error,
            side_effect=True,
        ),
        text(32, "OUT2", k.booked),
        *statuses(33, "OUT2", "sent", "delivered"),
    ]
    if k.extra_reply is not None:
        events.append(text(34, "OUT2b", k.extra_reply))
    if k.redelivered:
        events += said(35, "IN2", tap_title, duplicate=True)
    if k.thanks:
        events += [
            *said(60, "IN3", "thanks!"),
            OutboundSend(
                at=at(61),
                user=USER,
                type="template",
                request={
                    "to": USER,
                    "type": "template",
                    "template": {
                        "name": k.template,
                        "language": {"code": "en_US"},
                        "components": [
                            {
                                "type": "body",
                                "parameters": [
                                    {"type": "text", "text": p} for p in k.template_params
                                ],
                            }
                        ],
                    },
                },
                wamid=wamid("OUT3"),
            ),
        ]
    return Conversation.from_events(
        events,
        id=f"c-{k.ids}",
        scenario="booking",
        channel="whatsapp",
        participants=(Participant(id=USER, name="Ana", wa_id=USER),),
        **k.extra,
    )


def changes_of(diff: ConversationDiff, number: int) -> tuple[str, ...]:
    """The change lines of the turn numbered ``number`` (from 1)."""
    return next(t for t in diff.turns if t.number == number).changes


def only_change(a: Conversation, b: Conversation, number: int) -> tuple[str, ...]:
    """The changes of one turn, checking that no other turn changed."""
    diff = diff_conversations(a, b)
    assert [t.number for t in diff.differences] == [number]
    return changes_of(diff, number)


# -- the comparison ---------------------------------------------------------------------


def test_identical_conversations_are_the_same() -> None:
    diff = diff_conversations(booking(), booking())
    assert diff.same
    assert [(t.index, t.status, t.user_a, t.user_b) for t in diff.turns] == [
        (0, "same", USER, USER),
        (1, "same", USER, USER),
        (2, "same", USER, USER),
    ]
    assert all(t.changes == () for t in diff.turns)
    assert diff.first_difference is None
    assert diff.differences == ()
    assert diff.lines() == []
    assert diff.summary() == "no differences in 3 turns (times not compared)"


def test_volatile_fields_are_ignored() -> None:
    recorded = booking(ids="REC", shift=0, latency=3.0, tokens=100)
    replayed = booking(ids="REPLAY", shift=7.5, latency=950.0, tokens=4000)
    assert recorded != replayed
    assert diff_conversations(recorded, replayed).same


def test_times_count_when_asked() -> None:
    diff = diff_conversations(booking(), booking(shift=5), compare_times=True)
    assert not diff.same
    assert diff.compare_times
    assert changes_of(diff, 1) == (
        "user message 1 time differs: 10:00:00 -> 10:00:05",
        "tool check_availability time differs: 10:00:03 -> 10:00:08",
        "reply 1 time differs: 10:00:04 -> 10:00:09",
    )
    late = diff_conversations(booking(), booking(shift=86400), compare_times=True)
    assert changes_of(late, 3)[0] == (
        "user message 1 time differs: 2025-03-01 10:01:00 -> 2025-03-02 10:01:00"
    )


def test_a_reply_text_change_is_one_line_in_its_turn() -> None:
    diff = diff_conversations(booking(), booking(booked="Booked for 9pm"))
    assert not diff.same
    assert [t.status for t in diff.turns] == ["same", "changed", "same"]
    first = diff.first_difference
    assert first is not None
    assert (first.index, first.number, first.label()) == (1, 2, "turn 2")
    assert first.changes == ("reply 1 text differs: 'Booked for 8pm' -> 'Booked for 9pm'",)
    assert diff.summary() == (
        "1 of 3 turns differ (1 changed); first at turn 2: "
        "reply 1 text differs: 'Booked for 8pm' -> 'Booked for 9pm'"
    )
    assert diff.lines() == ["turn 2: reply 1 text differs: 'Booked for 8pm' -> 'Booked for 9pm'"]


def test_tool_arguments_are_compared_by_field() -> None:
    diff = diff_conversations(booking(), booking(slot="21:00"))
    assert changes_of(diff, 1) == ("tool check_availability args differ: slot '20:00' -> '21:00'",)
    assert changes_of(diff, 2) == ("tool book_appointment args differ: slot '20:00' -> '21:00'",)


def test_message_ids_in_tool_arguments_are_volatile() -> None:
    a, b = booking(ids="X"), booking(ids="Y")
    assert a.tool_calls("book_appointment")[0].args != b.tool_calls("book_appointment")[0].args
    assert diff_conversations(a, b).same


def test_a_missing_reply_is_counted_and_named() -> None:
    a = booking(extra_reply="Anything else?")
    assert only_change(a, booking(), 2) == (
        "a: 2 replies, b: 1",
        "reply 2 only in a: text 'Anything else?'",
    )
    assert only_change(booking(), a, 2) == (
        "a: 1 reply, b: 2",
        "reply 2 only in b: text 'Anything else?'",
    )


def test_user_message_changes() -> None:
    assert only_change(booking(), booking(first="A table for 3"), 1) == (
        "user message 1 text differs: 'A table for 2 tomorrow at 8pm' -> 'A table for 3'",
    )
    assert only_change(booking(), booking(tap=("change", "Change time")), 2) == (
        "user message 1 text differs: 'Confirm' -> 'Change time'",
        "user message 1 reply id differs: 'confirm' -> 'change'",
    )


def test_user_message_type_and_count() -> None:
    a = booking()
    turn = a.turns[0]
    first = turn.messages[0]
    typed = first.model_copy(update={"type": "image", "text": None, "body": {"type": "image"}})
    second = first.model_copy(update={"wamid": "wamid.more", "text": "and a high chair"})
    b = Conversation.from_events(
        [typed if e is first else e for e in a.events[:2]] + [second, *a.events[2:]]
    )
    assert changes_of(diff_conversations(a, b), 1) == (
        "user message 1 type differs: 'text' -> 'image'",
        "user message 1 text differs: 'A table for 2 tomorrow at 8pm' -> (none)",
        "a: 1 user message, b: 2",
        "user message 2 only in b: 'and a high chair'",
    )


def test_content_without_text_is_compared_by_body() -> None:
    def place(latitude: float) -> Conversation:
        body: dict[str, JsonValue] = {
            "id": f"wamid.{latitude}",
            "timestamp": str(latitude),
            "type": "location",
            "location": {"latitude": latitude, "longitude": -46.6},
        }
        message = InboundMessage(
            at=START, user=USER, wamid=f"wamid.{latitude}", type="location", body=body
        )
        return Conversation.from_events([message])

    assert diff_conversations(place(-23.5), place(-23.5)).same
    assert changes_of(diff_conversations(place(-23.5), place(-22.9)), 1) == (
        "user message 1 content differs: location.latitude -23.5 -> -22.9",
    )


def test_interactive_options_are_compared() -> None:
    fewer = booking(options=(("confirm", "Confirm"),))
    assert only_change(booking(), fewer, 1) == (
        "reply 1 options differ: "
        '["Confirm [confirm]","Change time [change]"] -> ["Confirm [confirm]"]',
    )
    renamed = booking(options=(("confirm", "Yes"), ("change", "Change time")))
    assert only_change(booking(), renamed, 1)[0].startswith(
        'reply 1 options differ: ["Confirm [confirm]",'
    )


def test_templates_are_compared_by_name_and_parameters() -> None:
    assert only_change(booking(), booking(template="booking_cancel"), 3) == (
        "reply 1 template differs: 'booking_reminder (en_US)' -> 'booking_cancel (en_US)'",
    )
    assert only_change(booking(), booking(template_params=("B-2",)), 3) == (
        """reply 1 template parameters differ: ["B-1"] -> ["B-2"]""",
    )


def test_a_reply_of_another_type_is_one_line() -> None:
    a = booking()
    template = a.turns[2].replies[0]
    as_text = OutboundSend(
        at=template.at,
        user=USER,
        type="text",
        text="See you tomorrow",
        request={"type": "text", "text": {"body": "See you tomorrow"}},
        wamid=template.wamid,
    )
    b = Conversation.from_events([as_text if e is template else e for e in a.events])
    assert only_change(a, b, 3) == (
        "reply 1 type differs: template booking_reminder (en_US) -> text 'See you tomorrow'",
    )


def test_other_request_fields_are_named_when_nothing_else_differs() -> None:
    def photo(link: str, ident: str) -> Conversation:
        return Conversation.from_events(
            [
                InboundMessage(at=START, user=USER, wamid=f"wamid.{ident}", type="text", text="hi"),
                OutboundSend(
                    at=START,
                    user=USER,
                    type="image",
                    request={
                        "type": "image",
                        "image": {"link": link},
                        "context": {"message_id": f"wamid.{ident}"},
                    },
                    wamid=f"wamid.out{ident}",
                ),
            ]
        )

    assert diff_conversations(photo("a.jpg", "1"), photo("a.jpg", "2")).same
    assert changes_of(diff_conversations(photo("a.jpg", "1"), photo("b.jpg", "1")), 1) == (
        "reply 1 request differs: image.link 'a.jpg' -> 'b.jpg'",
    )


@pytest.mark.parametrize(
    ("knobs", "line"),
    [
        (Booking(last_status="delivered"), "reply 1 status differs: read -> delivered"),
        (Booking(last_status="sent"), "reply 1 status differs: read -> sent"),
        (
            Booking(last_status="failed", failure=ErrorInfo(code=131047, title="Re-engagement")),
            "reply 1 status differs: read -> failed 131047",
        ),
        (
            Booking(refused=ErrorInfo(code=131056, title="Pair rate limit")),
            "reply 1 status differs: read -> refused 131056",
        ),
    ],
)
def test_reply_statuses_are_compared(knobs: Booking, line: str) -> None:
    assert only_change(booking(), booking(knobs), 1) == (line,)


def test_failure_codes_are_compared() -> None:
    a = booking(last_status="failed", failure=ErrorInfo(code=131047))
    b = booking(last_status="failed", failure=ErrorInfo(code=131026))
    assert only_change(a, b, 1) == ("reply 1 status differs: failed 131047 -> failed 131026",)


def test_tool_calls_only_on_one_side_and_failures() -> None:
    a = booking()
    check = a.tool_calls("check_availability")[0]
    without = Conversation.from_events([e for e in a.events if e is not check])
    assert only_change(a, without, 1) == (
        "a: 1 tool call, b: 0",
        'tool check_availability only in a: args {"date":"2025-03-02","party":2,"slot":"20:00"}',
    )
    assert only_change(booking(), booking(tool_error="slot taken"), 2) == (
        "tool book_appointment failed in b: 'slot taken'",
    )
    assert only_change(booking(tool_error="x"), booking(tool_error="y"), 2) == (
        "tool book_appointment error differs: 'x' -> 'y'",
    )


def test_a_repeated_tool_is_numbered() -> None:
    a = booking()
    book = a.tool_calls("book_appointment")[0]
    again = book.model_copy(update={"args": {**book.args, "party": 3}})
    events = list(a.events)
    events.insert(events.index(book) + 1, again)
    b = Conversation.from_events(events)
    assert only_change(a, b, 2) == (
        "a: 1 tool call, b: 2",
        "tool book_appointment #2 only in b: args "
        '{"message":"wamid.AIN2","party":3,"slot":"20:00"}',
    )


def test_redelivered_copies_are_counted() -> None:
    assert only_change(booking(), booking(redelivered=True), 2) == (
        "a: 0 redelivered copies, b: 1",
    )


def test_an_extra_turn_is_only_in_one_side() -> None:
    short = booking(thanks=False)
    diff = diff_conversations(short, booking())
    assert [t.status for t in diff.turns] == ["same", "same", "only_b"]
    extra = diff.turns[2]
    assert (extra.index, extra.index_a, extra.index_b, extra.user_a, extra.user_b) == (
        2,
        None,
        2,
        None,
        USER,
    )
    assert extra.changes == ("only in b: user 'thanks!'; 1 reply; 0 tool calls",)
    assert diff.summary() == (
        "1 of 3 turns differ (1 only in b); first at turn 3: "
        "only in b: user 'thanks!'; 1 reply; 0 tool calls"
    )
    missing = diff_conversations(booking(), short)
    assert [t.status for t in missing.turns] == ["same", "same", "only_a"]
    assert missing.turns[2].changes == ("only in a: user 'thanks!'; 1 reply; 0 tool calls",)


def test_empty_conversations() -> None:
    assert (
        diff_conversations(Conversation(), Conversation()).summary()
        == "no differences in 0 turns (times not compared)"
    )
    diff = diff_conversations(Conversation(), booking())
    assert [t.status for t in diff.turns] == ["only_b"] * 3


def _two_users(order: list[tuple[str, str]]) -> Conversation:
    events: list[Event] = []
    for i, (user, text) in enumerate(order):
        events.append(
            InboundMessage(at=START, user=user, wamid=f"wamid.{i}", type="text", text=text)
        )
        events.append(
            OutboundSend(
                at=START,
                user=user,
                type="text",
                text=f"re: {text}",
                request={"type": "text", "text": {"body": f"re: {text}"}},
                wamid=f"wamid.out{i}",
            )
        )
    return Conversation.from_events(events)


def test_turns_of_several_users_pair_by_user() -> None:
    a = _two_users([(USER, "hi"), (OTHER, "hello"), (USER, "book"), (OTHER, "cancel")])
    b = _two_users([(OTHER, "hello"), (USER, "hi"), (USER, "book"), (OTHER, "cancel")])
    diff = diff_conversations(a, b)
    assert diff.same
    assert [(t.index_a, t.index_b) for t in diff.turns] == [(0, 1), (1, 0), (2, 2), (3, 3)]
    assert diff.turns[0].label() == "turn 1 (turn 2 in b)"


def test_an_extra_turn_of_one_user_keeps_b_in_order() -> None:
    a = _two_users([(USER, "hi"), (OTHER, "hello")])
    b = _two_users([(USER, "hi"), (USER, "still there?"), (OTHER, "hello")])
    diff = diff_conversations(a, b)
    assert [(t.status, t.index_a, t.index_b) for t in diff.turns] == [
        ("same", 0, 0),
        ("only_b", None, 1),
        ("same", 1, 2),
    ]


def test_other_users_pair_by_index() -> None:
    a = _two_users([(USER, "hi")])
    b = _two_users([(OTHER, "hi")])
    assert only_change(a, b, 1) == (f"user differs: '{USER}' -> '{OTHER}'",)


def test_long_texts_show_where_they_differ() -> None:
    base = "Your table is booked. " * 6
    a = booking(booked=base + "See you at 8pm. Reply STOP to stop.")
    b = booking(booked=base + "See you at 9pm. Reply STOP to stop.")
    (line,) = only_change(a, b, 2)
    # twenty characters either side of the difference
    assert line == (
        "reply 1 text differs: …' booked. See you at 8pm. Reply STOP to st'… -> "
        "…' booked. See you at 9pm. Reply STOP to st'…"
    )
    start = only_change(booking(booked="8pm. " + base), booking(booked="9pm. " + base), 2)
    assert start == (
        f"reply 1 text differs: {('8pm. ' + base)[:21]!r}… -> {('9pm. ' + base)[:21]!r}…",
    )


def test_a_conversation_saved_without_turns_is_split_into_turns() -> None:
    full = booking()
    bare = Conversation(events=full.events)
    assert bare.turns == ()
    assert diff_conversations(full, bare).same


def test_the_diff_is_deterministic_and_round_trips() -> None:
    a, b = booking(), booking(slot="21:00", extra_reply="x", thanks=False)
    diff = diff_conversations(a, b)
    assert diff == diff_conversations(a, b)
    assert ConversationDiff.model_validate_json(diff.model_dump_json()) == diff
    with pytest.raises(ValidationError, match="same=True"):
        ConversationDiff(turns=diff.turns, same=True)
    with pytest.raises(ValidationError):
        diff.turns[0].status = "same"  # type: ignore[misc]  # frozen, on purpose
    assert TurnDiff(index=0, status="only_a").status_word == "only in a"


# -- loading ------------------------------------------------------------------------------


def _fixture(path: Path, conversation: Conversation, *, assembled: bool = True) -> Path:
    meta = FixtureMeta(scenario="booking", channel="whatsapp", recorded_at=START)
    with FixtureWriter(path, meta) as writer:
        for event in conversation.events:
            writer.append("events", event)
        if assembled:
            writer.write_conversation(conversation)
    return path


def _report(path: Path, *scenarios: ScenarioResult) -> Path:
    return write_json(RunResult(scenarios=scenarios), path)


def _scenario(name: str, conversation: Conversation | None, **extra: Any) -> ScenarioResult:
    return ScenarioResult(
        name=name,
        path=f"scenarios/{name}.yaml",
        status="passed",
        conversation=conversation,
        **extra,
    )


def test_loading_a_fixture_directory(tmp_path: Path) -> None:
    conversation = booking()
    path = _fixture(tmp_path / "fx", conversation)
    assert load_conversation(path) == conversation
    assert load_conversation(str(path)) == conversation


def test_a_fixture_without_its_conversation_is_rebuilt_from_events(tmp_path: Path) -> None:
    conversation = booking()
    path = _fixture(tmp_path / "fx", conversation, assembled=False)
    loaded = load_conversation(path)
    assert (loaded.scenario, loaded.channel) == ("booking", "whatsapp")
    assert loaded.events == conversation.events
    assert diff_conversations(loaded, conversation).same


def test_loading_a_conversation_file(tmp_path: Path) -> None:
    conversation = booking()
    path = tmp_path / "conversation.json"
    path.write_text(conversation.model_dump_json(), encoding="utf-8")
    assert load_conversation(path) == conversation
    assert load_conversation(tmp_path) == conversation  # a folder holding just that file


def test_loading_from_a_report(tmp_path: Path) -> None:
    happy, changed = booking(), booking(slot="21:00")
    path = _report(tmp_path / "report.json", _scenario("happy", happy), _scenario("late", changed))
    assert load_conversation(path, "happy") == happy
    assert load_conversation(path, "late") == changed
    assert load_conversation(path, "scenarios/late.yaml") == changed
    single = _report(tmp_path / "one.json", _scenario("happy", happy))
    assert load_conversation(single) == happy


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        (
            None,
            "report.json: the report holds 2 scenarios; pick one with --scenario: 'happy', 'crash'",
        ),
        ("nope", "report.json: no scenario named 'nope'; it has 'happy', 'crash'"),
        ("crash", "report.json: scenario 'crash' recorded no conversation (agent answered 500)"),
    ],
)
def test_a_report_needs_the_right_scenario(
    tmp_path: Path, scenario: str | None, message: str
) -> None:
    crash = _scenario("crash", None, error="agent answered 500\nTraceback...")
    path = _report(tmp_path / "report.json", _scenario("happy", booking()), crash)
    with pytest.raises(ConfigError) as caught:
        load_conversation(path, scenario)
    assert str(caught.value) == f"{tmp_path}/{message}"


def test_an_empty_report(tmp_path: Path) -> None:
    path = _report(tmp_path / "report.json")
    with pytest.raises(ConfigError, match=r"report\.json: the report holds no scenarios$"):
        load_conversation(path)


@pytest.mark.parametrize(
    ("content", "error", "message"),
    [
        ("{not json", FixtureFormatError, r"bad\.json:1: invalid JSON: .* \(column 2\)$"),
        ("[1, 2]", ConfigError, r"bad\.json: neither a conversation nor a harness report"),
        ('{"hello": 1}', ConfigError, r"bad\.json: neither a conversation nor a harness report"),
        (
            '{"events": [{"kind": "inbound"}]}',
            FixtureFormatError,
            r"bad\.json: invalid conversation: events\.0\.inbound\.at: Field required \(and ",
        ),
        (
            '{"scenarios": [{"name": 3}]}',
            ConfigError,
            r"bad\.json: not a harness report: scenarios\.0\.name: ",
        ),
    ],
)
def test_bad_files_are_one_line_errors_naming_the_file(
    tmp_path: Path, content: str, error: type[Exception], message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(error, match=message) as caught:
        load_conversation(path)
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith(str(path))


def test_missing_and_unreadable_inputs(tmp_path: Path) -> None:
    with pytest.raises(FixtureNotFound, match=r"nowhere: not found$"):
        load_conversation(tmp_path / "nowhere")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FixtureNotFound, match=r"empty: not a fixture \(no meta\.json or "):
        load_conversation(empty)
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(FixtureFormatError, match=r"binary\.json: not UTF-8 text$"):
        load_conversation(binary)
    old = _fixture(tmp_path / "old", booking())
    meta = json.loads((old / "meta.json").read_text())
    (old / "meta.json").write_text(json.dumps({**meta, "schema_version": 99}))
    with pytest.raises(SchemaVersionError, match="schema version 99 is not supported"):
        load_conversation(old)


# -- the command line ---------------------------------------------------------------------


def _files(tmp_path: Path, a: Conversation, b: Conversation) -> tuple[str, str]:
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(a.model_dump_json(), encoding="utf-8")
    pb.write_text(b.model_dump_json(), encoding="utf-8")
    return str(pa), str(pb)


def test_the_command_exits_0_when_the_conversations_match(tmp_path: Path) -> None:
    a, b = _files(tmp_path, booking(ids="X"), booking(ids="Y", shift=3))
    result = CliRunner().invoke(diff_command, [a, b])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"A: {a} (3 turns)"
    assert lines[1] == f"B: {b} (3 turns)"
    assert "Turn 1  SAME  user 'A table for 2 tomorrow at 8pm' · 1 reply · 1 tool call" in lines
    assert lines[-1] == "SAME: no differences in 3 turns (times not compared)"


def test_the_command_exits_1_and_lists_what_differs(tmp_path: Path) -> None:
    a, b = _files(tmp_path, booking(), booking(booked="Booked for 9pm", thanks=False))
    result = CliRunner().invoke(diff_command, [a, b])
    assert result.exit_code == 1, result.output
    out = result.stdout
    assert "Turn 2  CHANGED" in out
    assert "  - reply 1 text differs: 'Booked for 8pm' -> 'Booked for 9pm'" in out
    assert "Turn 3  ONLY IN A" in out
    assert "(no turn here in B)" in out
    assert "Turn 1  SAME" in out
    assert out.splitlines()[-1].startswith(
        "DIFFERENT: 2 of 3 turns differ (1 changed, 1 only in a)"
    )
    quiet = CliRunner().invoke(diff_command, [a, b, "--changed-only"])
    assert quiet.exit_code == 1
    assert "Turn 1" not in quiet.stdout
    assert "1 unchanged turn not shown" in quiet.stdout


def test_the_command_compares_times_with_a_flag(tmp_path: Path) -> None:
    a, b = _files(tmp_path, booking(), booking(shift=2))
    assert CliRunner().invoke(diff_command, [a, b]).exit_code == 0
    result = CliRunner().invoke(diff_command, [a, b, "--times"])
    assert result.exit_code == 1
    assert "user message 1 time differs: 10:00:00 -> 10:00:02" in result.stdout


def test_the_command_reads_reports_and_fixtures(tmp_path: Path) -> None:
    report = _report(
        tmp_path / "report.json",
        _scenario("happy", booking()),
        _scenario("late", booking(slot="21:00")),
    )
    fixture = _fixture(tmp_path / "fx", booking(ids="REC"))
    same = CliRunner().invoke(diff_command, [str(fixture), str(report), "--scenario", "happy"])
    assert same.exit_code == 0, same.output
    assert f"B: {report} [happy] (3 turns)" in same.stdout
    late = CliRunner().invoke(diff_command, [str(fixture), str(report), "--scenario", "late"])
    assert late.exit_code == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{tmp}/nowhere", "{a}"], "error: {tmp}/nowhere: not found"),
        (
            ["{a}", "{b}", "--scenario", "x"],
            "error: --scenario picks a scenario from a report.json",
        ),
        (["{a}", "{report}"], "error: {report}: the report holds 2 scenarios"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    a, b = _files(tmp_path, booking(), booking())
    report = _report(
        tmp_path / "report.json", _scenario("one", booking()), _scenario("two", booking())
    )
    names = {"tmp": str(tmp_path), "a": a, "b": b, "report": str(report)}
    result = CliRunner().invoke(diff_command, [arg.format(**names) for arg in args])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(message.format(**names))
    assert len(result.stderr.splitlines()) == 1
    assert result.stdout == ""


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(diff_command, ["only-one"])
    assert result.exit_code == 2
    assert "Missing argument 'B'" in result.stderr


def test_the_command_writes_the_page(tmp_path: Path) -> None:
    a, b = _files(tmp_path, booking(), booking(slot="21:00"))
    out = tmp_path / "pages" / "diff.html"
    result = CliRunner().invoke(diff_command, [a, b, "--html", str(out)])
    assert result.exit_code == 1, result.output
    assert f"wrote {out}" in result.stdout
    page = parse(out.read_text(encoding="utf-8"))
    assert [r.attrs["data-status"] for r in page.find("div", "pane-a").find_all("section")] == [
        "changed",
        "changed",
        "same",
    ]
    assert page.find("div", "pane-head").text == f"A {a}"


def test_a_page_that_can_not_be_written_exits_2(tmp_path: Path) -> None:
    a, b = _files(tmp_path, booking(), booking())
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = CliRunner().invoke(diff_command, [a, b, "--html", str(blocker / "diff.html")])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {blocker / 'diff.html'}: can't be written")


# -- the terminal view ---------------------------------------------------------------------


def _printed(a: Conversation, b: Conversation, **options: Any) -> str:
    console = Console(file=StringIO(), record=True, color_system=None, width=160)
    diff = diff_conversations(a, b)
    print_diff(diff, a, b, console=console, title_a="recorded", title_b="replayed", **options)
    return console.export_text()


def test_the_terminal_view_puts_a_and_b_side_by_side() -> None:
    text = _printed(booking(), booking(booked="Booked for 9pm", extra_reply="Anything else?"))
    lines = text.splitlines()
    assert lines[:2] == ["A: recorded (3 turns)", "B: replayed (3 turns)"]
    header = next(line for line in lines if "A  recorded" in line)
    assert header.index("A  recorded") < header.index("B  replayed")
    row = next(line for line in lines if "agent: Booked for 8pm" in line)
    assert row.index("agent: Booked for 8pm") < row.index("agent: Booked for 9pm")
    assert "✓✓ delivered" in row
    assert any("agent: Anything else?" in line for line in lines)
    assert "  - a: 1 reply, b: 2" in lines
    assert any(line.startswith("Turn 3  SAME  user 'thanks!' · 1 reply") for line in lines)
    assert any(line.startswith("│ ⚙ book_appointment {") for line in lines)
    assert "(side effect)" in text
    assert "user: (tapped a button · reply) Confirm" in text


def test_the_terminal_view_draws_buttons_and_ticks() -> None:
    lines = _printed(booking(), booking(last_status="delivered", slot="21:00")).splitlines()
    taps = next(line for line in lines if "[Confirm] [Change time]" in line)
    assert taps.count("[Confirm] [Change time]") == 2  # both sides drew the buttons
    at = next(i for i, line in enumerate(lines) if "Confirm?" in line)
    assert lines[at].count("Confirm?  ✓✓") == 2
    assert lines[at + 1].split() == ["│", "read", "│", "delivered", "│"]  # wrapped at width 160
    assert "  - reply 1 status differs: read -> delivered" in lines


def test_the_terminal_view_prints_markup_as_text() -> None:
    text = _printed(booking(), booking(first="[bold]x[/bold] " + DANGEROUS))
    assert "user: [bold]x[/bold] <script>" in text
    assert "'[bold]x[/bold] <script>" in text


def test_the_terminal_view_can_hide_matching_turns() -> None:
    text = _printed(booking(), booking(slot="21:00"), changed_only=True)
    assert "Turn 3" not in text
    assert "1 unchanged turn not shown" in text
    assert text.splitlines()[-1].startswith("DIFFERENT: 2 of 3 turns differ")


# -- the page ------------------------------------------------------------------------------


def _page(a: Conversation, b: Conversation, **titles: str) -> Element:
    return parse(render_diff_html(diff_conversations(a, b), a, b, **titles))


def test_the_page_has_two_panes_of_aligned_turns() -> None:
    a = booking()
    b = booking(booked="Booked for 9pm", thanks=False, first=DANGEROUS)
    page = _page(a, b, title_a="recorded", title_b="replayed")
    pane_a, pane_b = page.find_all("div", "pane")
    assert (pane_a.attrs["data-side"], pane_b.attrs["data-side"]) == ("a", "b")
    rows_a, rows_b = pane_a.find_all("section", "row"), pane_b.find_all("section", "row")
    assert (
        [r.attrs["data-row"] for r in rows_a]
        == [r.attrs["data-row"] for r in rows_b]
        == [
            "1",
            "2",
            "3",
        ]
    )
    assert [r.attrs["data-status"] for r in rows_a] == ["changed", "changed", "only_a"]
    assert all("changed" in r.classes for r in rows_a + rows_b)
    assert [r.attrs["id"] for r in rows_a] == ["turn-1", "turn-2", "turn-3"]
    assert [r.attrs["id"] for r in rows_b] == ["turn-1-b", "turn-2-b", "turn-3-b"]
    # each side draws its own turn as chat bubbles
    assert rows_a[1].find("div", "msg-out").find("div", "text").text == "Booked for 8pm"
    assert rows_b[1].find("div", "msg-out").find("div", "text").text == "Booked for 9pm"
    assert rows_a[0].find("span", "ticks").attrs["data-tick"] == "read"
    assert rows_a[0].find("div", "tool").attrs["data-tool"] == "check_availability"
    assert rows_b[2].find("p", "absent").text == "Only in A: B has no turn here."
    assert rows_b[2].find_all("div", "msg") == []
    # the changes are listed once, in pane B
    assert [li.text for li in rows_b[1].find("ul", "changes").find_all("li")] == [
        "reply 1 text differs: 'Booked for 8pm' -> 'Booked for 9pm'"
    ]
    assert pane_a.find_all("ul", "changes") == []


def test_the_summary_links_to_each_changed_turn() -> None:
    page = _page(booking(), booking(booked="Booked for 9pm", extra_reply="?", thanks=False))
    verdict = page.find("p", "verdict")
    assert "verdict-different" in verdict.classes
    assert verdict.text.startswith("2 of 3 turns differ (1 changed, 1 only in a)")
    links = page.find("ol", "jumps").find_all("a")
    assert [a.attrs["href"] for a in links] == ["#turn-2", "#turn-3"]
    assert links[0].text == (
        "Turn 2 changed reply 1 text differs: 'Booked for 8pm' -> 'Booked for 9pm' (+2 more)"
    )
    ids = {e.attrs["id"] for e in page.iter() if "id" in e.attrs}
    assert {a.attrs["href"][1:] for a in links} <= ids
    assert links[1].find("span", "status").text == "only in a"
    assert page.find("body").attrs["data-same"] == "false"
    views = {a.attrs["data-view"]: a.attrs["href"] for a in page.find_all("a", "view")}
    assert views == {"all": "#all", "changed": "#changed"}


def test_a_page_without_differences() -> None:
    page = _page(booking(), booking(ids="B"))
    assert page.find("body").attrs["data-same"] == "true"
    assert "verdict-same" in page.find("p", "verdict").classes
    assert page.find_all("ol", "jumps") == []
    assert page.find_all("section", "changed") == []
    assert page.find("title").text.endswith(": same")


def test_the_page_scrolls_its_panes_together() -> None:
    page = _page(booking(), booking(slot="21:00"))
    (script,) = page.find_all("script")
    code = script.text
    assert 'a.addEventListener("scroll", follow(a, b))' in code
    assert 'b.addEventListener("scroll", follow(b, a))' in code
    assert "target.scrollTop = source.scrollTop" in code
    assert "minHeight" in code  # rows are given equal heights
    style = page.find("style").text
    assert ".pane { position: relative; overflow: auto;" in style
    assert ".bubble" in style  # the report's chat look, inlined


def test_the_page_escapes_everything_from_the_conversations() -> None:
    a = booking()
    b = booking(first=DANGEROUS, booked=DANGEROUS)
    evil = '"><img src=x onerror=alert(1)>'
    html = render_diff_html(diff_conversations(a, b), a, b, title_a=evil, title_b=DANGEROUS)
    assert "<script>alert" not in html
    assert "<img" not in html
    page = parse(html)
    assert len(page.find_all("script")) == 1
    texts = [d.text for d in page.find("div", "pane-b").find_all("div", "text")]
    assert DANGEROUS in texts
    assert page.find("div", "pane-head").text == f"A {evil}"
    change = page.find("ul", "changes").find("li").text
    assert change.startswith("user message 1 text differs: 'A table for 2 tomorrow at 8pm' -> ")


def test_the_page_names_turns_by_their_own_index_on_each_side() -> None:
    a = _two_users([(USER, "hi"), (OTHER, "hello")])
    b = _two_users([(OTHER, "hello"), (USER, "hi")])
    page = _page(a, b)
    first_a = page.find("div", "pane-a").find("section", "row")
    first_b = page.find("div", "pane-b").find("section", "row")
    assert first_a.find("a", "turn-label").text == "Turn 1"
    assert first_b.find("a", "turn-label").text == "Turn 2"
    assert first_a.find("div", "sender").text == "5511987654321"


def test_the_terminal_view_keeps_long_results_and_redeliveries_short() -> None:
    a = booking(redelivered=True)
    assert "Turn 2  SAME  user 'Confirm' · 1 reply · 1 tool call" in _printed(a, a)
    b = booking(booked="Booked for 9pm")
    book = b.tool_calls("book_appointment")[0]
    long = book.model_copy(update={"result": {"slots": ["12:00"] * 40}})
    b = Conversation.from_events([long if e is book else e for e in b.events])
    text = _printed(booking(), b)
    assert '{"slots": ["12:00"' in text
    assert 5 <= text.count('"12:00"') < 20  # results are shown cut short, not all forty
