"""A sample booking conversation with knobs to turn, for the diff's tests and its views.

Each test turns one knob of :class:`Booking` and diffs the two conversations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import JsonValue

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


def two_users(order: list[tuple[str, str]]) -> Conversation:
    """A conversation of two users taking turns, ``(user, text)`` in order, each answered."""
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
