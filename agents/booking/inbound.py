"""Reading Meta's webhooks: the agent's own small, tolerant parser.

:func:`parse_webhook` walks a Cloud API webhook body (every entry, change
and item, so a batched POST is read whole), keeps only updates for the
agent's own phone number, and turns each message into an :class:`Inbound`
and each status into a :class:`StatusEvent`. Unknown fields are ignored and
malformed items are skipped, never fatal: Meta adds fields without notice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict

__all__ = ["REPLY_KINDS", "Inbound", "StatusEvent", "WebhookUpdates", "parse_webhook"]

#: Message kinds the agent understands; the rest get a polite "I can't read that".
REPLY_KINDS = frozenset({"text", "reply"})


class Inbound(BaseModel):
    """One message from a user, whatever channel it came through.

    ``kind`` is ``text`` for typed text, ``reply`` for a tapped reply button,
    list row or template quick reply (``reply_id`` says which, ``text`` holds
    its title), and Meta's message type for anything else (``image``,
    ``location``, ``unsupported``...). ``user`` is the wa_id, or the
    business-scoped user id for a user without one.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    user: str
    kind: str = "text"
    text: str | None = None
    reply_id: str | None = None
    wamid: str | None = None
    context_id: str | None = None
    timestamp: AwareDatetime | None = None
    name: str = ""

    @property
    def understood(self) -> bool:
        """True for text and taps, the kinds the agent can answer."""
        return self.kind in REPLY_KINDS and bool(self.text or self.reply_id)


class StatusEvent(BaseModel):
    """A delivery status for a message the agent sent (sent, delivered, read, failed...)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    wamid: str
    status: str
    user: str | None = None
    timestamp: AwareDatetime | None = None
    errors: tuple[tuple[int | None, str, str], ...] = ()
    """``(code, title, details)`` of each error a failed status carries."""


@dataclass
class WebhookUpdates:
    """Everything one webhook POST carried for this phone number."""

    messages: list[Inbound] = field(default_factory=list)
    statuses: list[StatusEvent] = field(default_factory=list)
    #: Changes ignored because they were for another phone number.
    foreign: int = 0


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _time(value: Any) -> datetime | None:
    try:
        return datetime.fromtimestamp(int(str(value)), tz=UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def _code(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def parse_webhook(payload: Any, phone_number_id: str) -> WebhookUpdates:
    """The messages and statuses in ``payload`` addressed to ``phone_number_id``."""
    updates = WebhookUpdates()
    for entry in _list(_dict(payload).get("entry")):
        for change in _list(_dict(entry).get("changes")):
            value = _dict(_dict(change).get("value"))
            if not value:
                continue
            metadata = _dict(value.get("metadata"))
            if phone_number_id and metadata.get("phone_number_id") != phone_number_id:
                updates.foreign += 1
                continue
            names: dict[str, str] = {}
            for contact in _list(value.get("contacts")):
                contact = _dict(contact)
                name = _str(_dict(contact.get("profile")).get("name")) or ""
                for key in ("wa_id", "user_id"):
                    ident = _str(contact.get(key))
                    if ident:
                        names[ident] = name
            for item in _list(value.get("messages")):
                message = _message(_dict(item), names)
                if message is not None:
                    updates.messages.append(message)
            for item in _list(value.get("statuses")):
                status = _status(_dict(item))
                if status is not None:
                    updates.statuses.append(status)
    return updates


def _message(item: Mapping[str, Any], names: Mapping[str, str]) -> Inbound | None:
    user = _str(item.get("from")) or _str(item.get("from_user_id"))
    wamid = _str(item.get("id"))
    if user is None or wamid is None:
        return None
    kind = _str(item.get("type")) or "unknown"
    text: str | None = None
    reply_id: str | None = None
    if kind == "text":
        text = _str(_dict(item.get("text")).get("body"))
    elif kind == "interactive":
        interactive = _dict(item.get("interactive"))
        reply = _dict(interactive.get("button_reply")) or _dict(interactive.get("list_reply"))
        if reply:
            kind = "reply"
            reply_id = _str(reply.get("id"))
            text = _str(reply.get("title"))
    elif kind == "button":
        button = _dict(item.get("button"))
        kind = "reply"
        reply_id = _str(button.get("payload"))
        text = _str(button.get("text"))
    return Inbound(
        user=user,
        kind=kind,
        text=text,
        reply_id=reply_id,
        wamid=wamid,
        context_id=_str(_dict(item.get("context")).get("id")),
        timestamp=_time(item.get("timestamp")),
        name=names.get(user, "") or names.get(_str(item.get("from_user_id")) or "", ""),
    )


def _status(item: Mapping[str, Any]) -> StatusEvent | None:
    wamid = _str(item.get("id"))
    status = _str(item.get("status"))
    if wamid is None or status is None:
        return None
    errors = tuple(
        (
            _code(_dict(error).get("code")),
            str(_dict(error).get("title") or _dict(error).get("message") or ""),
            str(_dict(_dict(error).get("error_data")).get("details") or ""),
        )
        for error in _list(item.get("errors"))
    )
    return StatusEvent(
        wamid=wamid,
        status=status,
        user=_str(item.get("recipient_id")) or _str(item.get("recipient_user_id")),
        timestamp=_time(item.get("timestamp")),
        errors=errors,
    )
