"""What a WhatsApp user's phone shows of the agent's messages: the simulated user reads this.

The agent's sends to one user, as the channel's outbox keeps them (each
:class:`~harness.trace.OutboundSend` holds the Graph API request as sent; the
direct channel's, the reply's text and options),
become the items a person sees in the chat: texts, reply buttons and list
rows they can tap, templates, media with their captions, reactions, the
"typing..." indicator and the blue ticks of a read receipt. A send the
channel refused never reached the phone, so it is not shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from harness.trace import Event, OutboundSend

__all__ = ["Choice", "PhoneView", "phone_view"]

_MEDIA = ("image", "video", "document", "audio", "sticker")


@dataclass(frozen=True, slots=True)
class Choice:
    """A reply button or list row the user can tap: its id and the title they see."""

    id: str
    title: str

    def matches(self, text: str) -> bool:
        """True when ``text`` names this choice by id or title (case and spaces aside)."""
        wanted = " ".join(text.split()).casefold()
        return wanted in (self.id.casefold(), " ".join(self.title.split()).casefold())


@dataclass(frozen=True, slots=True)
class PhoneView:
    """What is new on the user's phone since they last acted, and what they can tap now."""

    items: tuple[dict[str, JsonValue], ...]
    choices: tuple[Choice, ...]
    read: bool
    typing: bool

    def as_data(self) -> dict[str, JsonValue]:
        """The view as the simulated user's model reads it (JSON)."""
        return {
            "new_messages": list(self.items),
            "you_can_tap": [{"id": c.id, "title": c.title} for c in self.choices],
            "agent_read_your_messages": self.read,
            "agent_was_typing": self.typing,
        }

    def choice(self, text: str) -> Choice | None:
        """The tappable choice ``text`` names, if any."""
        return next((c for c in self.choices if c.matches(text)), None)


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _section(interactive: Mapping[str, Any], name: str) -> str:
    part = interactive.get(name)
    return _text(part.get("text")) if isinstance(part, Mapping) else ""


def _choices(interactive: Mapping[str, Any]) -> list[Choice]:
    action = interactive.get("action")
    if not isinstance(action, Mapping):
        return []
    found: list[Choice] = []
    for button in action.get("buttons") or ():
        reply = button.get("reply") if isinstance(button, Mapping) else None
        if isinstance(reply, Mapping):
            found.append(Choice(_text(reply.get("id")), _text(reply.get("title"))))
    for section in action.get("sections") or ():
        rows = section.get("rows") if isinstance(section, Mapping) else None
        for row in rows or ():
            if isinstance(row, Mapping):
                found.append(Choice(_text(row.get("id")), _text(row.get("title"))))
    return found


def _item(send: OutboundSend) -> tuple[dict[str, JsonValue], list[Choice]]:
    """One message as the phone shows it, and the choices it offers."""
    request: Mapping[str, Any] = send.request
    options = request.get("options")
    if isinstance(options, list) and options:  # the direct channel's choices, not Meta's shape
        offered = [
            Choice(_text(o.get("id")), _text(o.get("title")))
            for o in options
            if isinstance(o, Mapping)
        ]
        return {"text": send.text or "", "buttons": [c.title for c in offered]}, offered
    if send.type == "interactive" and isinstance(request.get("interactive"), Mapping):
        interactive = request["interactive"]
        choices = _choices(interactive)
        item: dict[str, JsonValue] = {"text": _section(interactive, "body") or (send.text or "")}
        header = _section(interactive, "header")
        footer = _section(interactive, "footer")
        if header:
            item["header"] = header
        if footer:
            item["footer"] = footer
        kind = "buttons" if interactive.get("type") == "button" else "list"
        item[kind] = [c.title for c in choices]
        return item, choices
    if send.type == "template":
        template = request.get("template")
        name = template.get("name") if isinstance(template, Mapping) else None
        return {"template": _text(name), "text": send.text or ""}, []
    if send.type in _MEDIA:
        media = request.get(send.type)
        caption = _text(media.get("caption")) if isinstance(media, Mapping) else ""
        item = {"media": send.type}
        if caption:
            item["caption"] = caption
        return item, []
    if send.type == "reaction":
        reaction = request.get("reaction")
        emoji = _text(reaction.get("emoji")) if isinstance(reaction, Mapping) else ""
        return {"reaction": emoji}, []
    if send.type == "text":
        return {"text": send.text or ""}, []
    return {"message": send.type, "text": send.text or ""}, []


def phone_view(events: Sequence[Event], user: str, since: int) -> PhoneView:
    """What the agent sent ``user`` from event ``since`` on, as their phone shows it.

    The choices are those of the agent's latest message with buttons or a
    list, if it came in this stretch of new messages (older ones scroll away).
    """
    items: list[dict[str, JsonValue]] = []
    choices: list[Choice] = []
    read = typing = False
    for event in events[since:]:
        if not isinstance(event, OutboundSend) or event.user not in (user, None) or not event.ok:
            continue
        if event.type == "mark_read":
            read = True
            continue
        if event.type == "typing":
            read = typing = True  # WhatsApp's typing indicator marks the message read too
            continue
        item, offered = _item(event)
        items.append(item)
        if offered:
            choices = offered
    return PhoneView(tuple(items), tuple(choices), read, typing)
