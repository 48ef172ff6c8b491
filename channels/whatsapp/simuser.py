"""A simulated WhatsApp user, and what the simulator remembers of each message either side sent."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from channels.whatsapp.validation import ValidatedSend
from harness.trace import Participant

__all__ = ["ReceivedMessage", "SentMessage", "SimUser"]


@dataclass(frozen=True, slots=True)
class SimUser:
    """A simulated WhatsApp user: a phone number (wa_id), a business-scoped id, a name.

    ``wa_id`` may be None for a username-only user, who is known by BSUID alone.
    ``on_whatsapp`` False makes the number one that has no WhatsApp account:
    it writes nothing, and what the business sends it fails with 131026.
    """

    wa_id: str | None
    user_id: str
    name: str = ""
    on_whatsapp: bool = True

    @property
    def key(self) -> str:
        """How the trace names this user: the wa_id, else the BSUID."""
        return self.wa_id if self.wa_id is not None else self.user_id

    def participant(self) -> Participant:
        """The user as a trace participant."""
        return Participant(id=self.key, name=self.name, wa_id=self.wa_id, user_id=self.user_id)


@dataclass(slots=True)
class SentMessage:
    """A message the agent sent, as the simulator remembers it."""

    wamid: str
    user: SimUser | None
    send: ValidatedSend
    at: datetime


@dataclass(frozen=True, slots=True)
class ReceivedMessage:
    """A message a user sent, as the simulator remembers it: who sent it, and the message.

    ``item`` is the message object of its webhook (``entry[0].changes[0].value.messages[0]``),
    the same dict the trace's event holds as its body; what went around it is in the trace's
    envelope and, byte for byte, in the signed body kept for a redelivery.
    """

    user: SimUser
    item: dict[str, Any]

    @classmethod
    def of(cls, user: SimUser, payload: Mapping[str, Any]) -> ReceivedMessage:
        """The message ``user``'s webhook ``payload`` carries, remembered."""
        return cls(user, cls.item_of(payload))

    @staticmethod
    def item_of(payload: Mapping[str, Any]) -> dict[str, Any]:
        """The message a user's webhook carries (``entry[0].changes[0].value.messages[0]``)."""
        item: dict[str, Any] = payload["entry"][0]["changes"][0]["value"]["messages"][0]
        return item
