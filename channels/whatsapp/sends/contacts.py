"""Contact messages: one or more contact cards, each with at least a formatted name."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from channels.whatsapp.sends.common import MessageSend
from channels.whatsapp.sends.fields import Maybe, NonEmpty, SendModel

__all__ = ["ContactEntry", "ContactEntryName", "ContactsSend"]


class ContactEntryName(SendModel):
    """A card's name; ``formatted_name`` is what the user sees."""

    formatted_name: NonEmpty


class ContactEntry(SendModel):
    """One contact card (addresses, emails, org and urls pass through unchecked)."""

    name: ContactEntryName
    phones: Maybe[list[dict[str, Any]]] = None


class ContactsSend(MessageSend):
    """A message sharing contact cards."""

    type: Literal["contacts"]
    contacts: Annotated[list[ContactEntry], Field(min_length=1)]
