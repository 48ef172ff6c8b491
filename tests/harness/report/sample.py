"""A realistic run to report on: a passing, a failing and an errored scenario.

The conversations carry what the reports must draw: user and agent
messages, delivery statuses, interactive buttons, a template, tool calls
(one side-effecting, repeated), a duplicate webhook, a retried delivery, a
late status, a failed send and a 25-hour clock jump.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from harness.results import RunResult, ScenarioResult, Violation
from harness.trace import (
    ClockJump,
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

__all__ = [
    "DANGEROUS",
    "START",
    "USER",
    "at",
    "booking_run",
    "crashed",
    "double_booking",
    "happy_booking",
    "inbound",
    "reply",
    "statuses",
]

START = datetime(2025, 3, 1, 9, 59, 0, tzinfo=UTC)
USER = "5511987654321"
DANGEROUS = "<script>alert('pwned')</script> & \"quotes\""


def at(seconds: float) -> datetime:
    """A virtual instant, ``seconds`` after the start of every sample conversation."""
    return START + timedelta(seconds=seconds)


def inbound(
    t: float, wamid: str, text: str, delivery: str, *, duplicate: bool = False
) -> list[Event]:
    """A text message from the user and the webhook delivery that carried it."""
    return [
        DeliveryAttempt(at=at(t), user=USER, delivery=delivery, items=(wamid,), status_code=200),
        InboundMessage(
            at=at(t),
            user=USER,
            wamid=wamid,
            type="text",
            text=text,
            body={"from": USER, "id": wamid, "type": "text", "text": {"body": text}},
            delivery=delivery,
            duplicate=duplicate,
        ),
    ]


def reply(t: float, wamid: str, text: str) -> OutboundSend:
    """A text message from the agent that the Graph API accepted."""
    return OutboundSend(
        at=at(t),
        user=USER,
        type="text",
        text=text,
        request={
            "messaging_product": "whatsapp",
            "to": USER,
            "type": "text",
            "text": {"body": text},
        },
        wamid=wamid,
        in_window=True,
    )


def statuses(t: float, wamid: str, *names: str, prefix: str) -> list[Event]:
    """Status webhooks for a sent message, one second apart, each with its delivery."""
    events: list[Event] = []
    for i, name in enumerate(names):
        delivery = f"{prefix}{i}"
        events.append(
            DeliveryAttempt(
                at=at(t + i),
                user=USER,
                delivery=delivery,
                items=(f"{wamid}:{name}",),
                status_code=200,
            )
        )
        events.append(
            StatusUpdate(at=at(t + i), user=USER, wamid=wamid, status=name, delivery=delivery)
        )
    return events


def happy_booking() -> ScenarioResult:
    """A booking that goes right: buttons, a confirmed booking, a reminder a day later."""
    confirm = OutboundSend(
        at=at(4),
        user=USER,
        type="interactive",
        text="Table for 2 tomorrow at 20:00. Confirm?",
        request={
            "messaging_product": "whatsapp",
            "to": USER,
            "type": "interactive",
            "interactive": {
                "type": "button",
                "body": {"text": "Table for 2 tomorrow at 20:00. Confirm?"},
                "action": {
                    "buttons": [
                        {"type": "reply", "reply": {"id": "confirm", "title": "Confirm"}},
                        {"type": "reply", "reply": {"id": "change", "title": "Change time"}},
                    ]
                },
            },
        },
        wamid="wamid.OUT1",
        in_window=True,
    )
    tap = InboundMessage(
        at=at(30),
        user=USER,
        wamid="wamid.IN2",
        type="interactive",
        text="Confirm",
        reply_id="confirm",
        context_id="wamid.OUT1",
        body={
            "type": "interactive",
            "interactive": {
                "type": "button_reply",
                "button_reply": {"id": "confirm", "title": "Confirm"},
            },
        },
        delivery="h5",
    )
    reminder = OutboundSend(
        at=at(33 + 25 * 3600),
        user=USER,
        type="template",
        request={
            "messaging_product": "whatsapp",
            "to": USER,
            "type": "template",
            "template": {
                "name": "booking_reminder",
                "language": {"code": "en_US"},
                "components": [{"type": "body", "parameters": [{"type": "text", "text": "B-1"}]}],
            },
        },
        wamid="wamid.OUT3",
        in_window=False,
    )
    events: list[Event] = [
        *inbound(0, "wamid.IN1", "Hi! A table for 2 tomorrow at 8pm, please", "h1"),
        OutboundSend(at=at(1), user=USER, type="mark_read", request={"status": "read"}),
        LLMExchange(
            at=at(2), user=USER, key="k1", model="claude-x", input_tokens=812, output_tokens=64
        ),
        ToolCall(
            at=at(3),
            user=USER,
            name="check_availability",
            args={"date": "2025-03-02", "time": "20:00", "party": 2},
            result={"available": True},
        ),
        confirm,
        *statuses(5, "wamid.OUT1", "sent", "delivered", "read", prefix="h2"),
        DeliveryAttempt(at=at(30), user=USER, delivery="h5", items=("wamid.IN2",), status_code=200),
        tap,
        ToolCall(
            at=at(31),
            user=USER,
            name="book_table",
            args={"date": "2025-03-02", "time": "20:00", "party": 2},
            result={"booking_id": "B-1"},
            side_effect=True,
        ),
        reply(31, "wamid.OUT2", "Booked! Your reference is B-1."),
        *statuses(32, "wamid.OUT2", "sent", "delivered", prefix="h6"),
        ClockJump(at=at(33 + 25 * 3600), user=None, previous=at(33), reason="wait 25h"),
        reminder,
        *statuses(34 + 25 * 3600, "wamid.OUT3", "sent", prefix="h8"),
    ]
    conversation = Conversation.from_events(
        events,
        id="c-happy",
        scenario="happy booking",
        channel="whatsapp",
        participants=(Participant(id=USER, name="Ana", wa_id=USER),),
    )
    return ScenarioResult(
        name="happy booking",
        path="scenarios/booking/happy.yaml",
        seed=7,
        status="passed",
        duration_s=0.12,
        conversation=conversation,
    )


DOUBLE_BOOKING_YAML = """\
name: double booking
faults: {duplicate: 1.0}
steps:
  - say: book 2 people tomorrow 8pm
  - say: "yes"
invariants: [no_repeated_side_effects]
"""


def double_booking() -> ScenarioResult:
    """Meta redelivers "yes" and the agent books twice; a status for the second reply fails."""
    late = "late_status"
    events: list[Event] = [
        DeliveryAttempt(
            at=at(0),
            user=USER,
            delivery="d1",
            items=("wamid.A1",),
            status_code=None,
            error="timeout",
        ),
        DeliveryAttempt(
            at=at(10),
            user=USER,
            delivery="d1",
            attempt=2,
            items=("wamid.A1",),
            status_code=200,
            faults=("retry",),
        ),
        InboundMessage(
            at=at(10),
            user=USER,
            wamid="wamid.A1",
            type="text",
            text=DANGEROUS,
            body={"type": "text", "text": {"body": DANGEROUS}},
            delivery="d1",
        ),
        reply(11, "wamid.B1", "Shall I book 2 people for tomorrow at 20:00?"),
        *statuses(12, "wamid.B1", "sent", "delivered", "read", prefix="d2"),
        *inbound(40, "wamid.A2", "yes", "d5"),
        ToolCall(
            at=at(41),
            user=USER,
            name="book_table",
            args={"party": 2, "time": "20:00"},
            result={"booking_id": "B-1"},
            side_effect=True,
        ),
        reply(41, "wamid.B2", "Booked, reference B-1."),
        DeliveryAttempt(
            at=at(42),
            user=USER,
            delivery="d6",
            items=("wamid.A2",),
            status_code=200,
            faults=("duplicate",),
        ),
        InboundMessage(
            at=at(42),
            user=USER,
            wamid="wamid.A2",
            type="text",
            text="yes",
            body={"type": "text", "text": {"body": "yes"}},
            delivery="d6",
            duplicate=True,
        ),
        ToolCall(
            at=at(43),
            user=USER,
            name="book_table",
            args={"party": 2, "time": "20:00"},
            result={"booking_id": "B-2"},
            side_effect=True,
        ),
        reply(43, "wamid.B3", "Booked, reference B-2."),
        DeliveryAttempt(
            at=at(44),
            user=USER,
            delivery="d7",
            items=("wamid.B2:sent",),
            status_code=200,
            faults=(late,),
        ),
        StatusUpdate(at=at(44), user=USER, wamid="wamid.B2", status="sent", delivery="d7"),
        DeliveryAttempt(
            at=at(45), user=USER, delivery="d8", items=("wamid.B3:failed",), status_code=200
        ),
        StatusUpdate(
            at=at(45),
            user=USER,
            wamid="wamid.B3",
            status="failed",
            errors=(ErrorInfo(code=131026, title="Message undeliverable"),),
            delivery="d8",
        ),
    ]
    conversation = Conversation.from_events(
        events, id="c-double", scenario="double booking", channel="whatsapp"
    )
    second_booking = next(
        i
        for i, e in enumerate(events)
        if isinstance(e, ToolCall) and e.result == {"booking_id": "B-2"}
    )
    return ScenarioResult(
        name="double booking",
        path="scenarios/booking/double.yaml",
        seed=7,
        status="failed",
        duration_s=0.31,
        violations=(
            Violation(
                rule="no_repeated_side_effects",
                message="book_table ran 2 times for one message (wamid.A2)",
                turn=1,
                step=2,
                line=5,
                messages=(
                    "user 09:59:40: yes",
                    "tool 09:59:41: book_table {party: 2} -> B-1",
                    "tool 09:59:43: book_table {party: 2} -> B-2",
                ),
                events=(second_booking,),
            ),
            Violation(
                kind="expectation",
                rule="expect",
                message="expected exactly 1 booking, found 2",
                step=3,
            ),
        ),
        faults={"duplicate": 1.0, "status_late": 0.5},
        reproduce=DOUBLE_BOOKING_YAML,
        conversation=conversation,
    )


def crashed() -> ScenarioResult:
    """The agent crashed on the first message: no reply, an error instead."""
    conversation = Conversation.from_events(
        inbound(0, "wamid.C1", "hello?", "e1"), id="c-crash", channel="whatsapp"
    )
    return ScenarioResult(
        name="agent crash",
        path="scenarios/booking/crash.yaml",
        seed=7,
        status="error",
        duration_s=0.05,
        error="agent answered 500 to every delivery\nRuntimeError: boom",
        conversation=conversation,
    )


def booking_run() -> RunResult:
    """The three sample scenarios as one run."""
    return RunResult(
        scenarios=(happy_booking(), double_booking(), crashed()),
        started_at=datetime(2025, 3, 1, 10, 0, 0, tzinfo=UTC),
        duration_s=0.48,
        target="agents.booking:app",
        channel="whatsapp",
        seed=7,
    )
