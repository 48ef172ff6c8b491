"""What the simulated user's phone shows of the agent's sends, from the outbox's requests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from harness.suites.phone_view import Choice, phone_view
from harness.trace import ErrorInfo, Event, InboundMessage, OutboundSend

AT = datetime(2026, 1, 1, tzinfo=UTC)
USER = "15557654321"


def send(kind: str, request: dict[str, Any], text: str | None = None, **extra: Any) -> OutboundSend:
    return OutboundSend(at=AT, user=USER, type=kind, text=text, request=request, **extra)


BUTTONS = send(
    "interactive",
    {
        "type": "interactive",
        "interactive": {
            "type": "button",
            "header": {"type": "text", "text": "Casa Lucia"},
            "body": {"text": "Friday at 20:00? Shall I confirm it?"},
            "footer": {"text": "reply below"},
            "action": {
                "buttons": [
                    {"type": "reply", "reply": {"id": "confirm", "title": "Confirm"}},
                    {"type": "reply", "reply": {"id": "change", "title": "Change"}},
                ]
            },
        },
    },
    text="Friday at 20:00? Shall I confirm it?",
)
LIST = send(
    "interactive",
    {
        "interactive": {
            "type": "list",
            "body": {"text": "Pick a time"},
            "action": {
                "button": "Times",
                "sections": [
                    {"title": "Evening", "rows": [{"id": "t19", "title": "19:00"}]},
                    {"title": "Late", "rows": [{"id": "t21", "title": "21:00"}]},
                ],
            },
        }
    },
)


def test_buttons_are_shown_with_their_text_and_can_be_tapped_by_id_or_title() -> None:
    view = phone_view([BUTTONS], USER, 0)
    assert view.items == (
        {
            "text": "Friday at 20:00? Shall I confirm it?",
            "header": "Casa Lucia",
            "footer": "reply below",
            "buttons": ["Confirm", "Change"],
        },
    )
    assert view.choices == (Choice("confirm", "Confirm"), Choice("change", "Change"))
    assert view.choice("confirm") == view.choice(" CONFIRM ") == Choice("confirm", "Confirm")
    assert view.choice("Cancel") is None


def test_a_list_offers_every_row_of_every_section() -> None:
    view = phone_view([LIST], USER, 0)
    assert view.items == ({"text": "Pick a time", "list": ["19:00", "21:00"]},)
    assert [c.id for c in view.choices] == ["t19", "t21"]


def test_templates_media_captions_reactions_typing_and_read_receipts() -> None:
    events: list[Event] = [
        send("mark_read", {"status": "read", "message_id": "wamid.1"}),
        send("typing", {"status": "read", "typing_indicator": {"type": "text"}}),
        send("template", {"template": {"name": "booking_reminder"}}, text="Still want Friday?"),
        send("image", {"image": {"link": "https://x/menu.jpg", "caption": "our menu"}}),
        send("reaction", {"reaction": {"message_id": "wamid.1", "emoji": "👍"}}),
    ]
    view = phone_view(events, USER, 0)
    assert view.read
    assert view.typing
    assert view.items == (
        {"template": "booking_reminder", "text": "Still want Friday?"},
        {"media": "image", "caption": "our menu"},
        {"reaction": "👍"},
    )
    assert view.choices == ()
    assert view.as_data()["agent_read_your_messages"] is True


def test_what_the_phone_never_got_or_saw_before_is_not_shown() -> None:
    refused = send(
        "text", {"text": {"body": "late"}}, text="late", error=ErrorInfo(code=131047, title="x")
    )
    other = OutboundSend(at=AT, user="15550000000", type="text", text="not yours", request={})
    older = send("text", {"text": {"body": "older"}}, text="older")
    mine = InboundMessage(at=AT, user=USER, wamid="wamid.in", type="text", text="hi")
    newer = send("text", {"text": {"body": "newer"}}, text="newer")
    view = phone_view([older, mine, refused, other, newer], USER, 2)
    assert view.items == ({"text": "newer"},)
    assert not view.read


def test_buttons_that_scrolled_away_before_the_new_messages_cannot_be_tapped() -> None:
    text = send("text", {"text": {"body": "Booked!"}}, text="Booked!")
    assert phone_view([BUTTONS, text], USER, 1).choices == ()
    assert phone_view([BUTTONS, text], USER, 0).choices != ()


def test_the_direct_channels_choices_are_buttons_too() -> None:
    direct = send(
        "interactive",
        {"text": "Shall I?", "options": [{"id": "confirm", "title": "Confirm"}]},
        text="Shall I?",
    )
    view = phone_view([direct], USER, 0)
    assert view.items == ({"text": "Shall I?", "buttons": ["Confirm"]},)
    assert view.choices == (Choice("confirm", "Confirm"),)
