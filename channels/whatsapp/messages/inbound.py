"""Any inbound message (:data:`InboundMessage`), told apart by ``type``, and :func:`parse_message`.

A message whose ``type`` is not modelled, or that lacks its type's object,
parses as :class:`~channels.whatsapp.messages.unreadable.UnknownMessage`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, TypeAlias

from pydantic import BaseModel, Discriminator, Tag, TypeAdapter

from channels.whatsapp.messages.base import MessageBase
from channels.whatsapp.messages.contacts import ContactsMessage
from channels.whatsapp.messages.interactive import ButtonMessage, InteractiveMessage
from channels.whatsapp.messages.locations import LocationMessage
from channels.whatsapp.messages.media import (
    AudioMessage,
    DocumentMessage,
    ImageMessage,
    StickerMessage,
    VideoMessage,
)
from channels.whatsapp.messages.reactions import ReactionMessage
from channels.whatsapp.messages.text import TextMessage
from channels.whatsapp.messages.unreadable import UnknownMessage, UnsupportedMessage
from channels.whatsapp.payloads import validate

__all__ = ["InboundMessage", "parse_message"]

_TAGGED: dict[str, tuple[type[MessageBase], str | None]] = {
    "text": (TextMessage, "text"),
    "interactive": (InteractiveMessage, "interactive"),
    "button": (ButtonMessage, "button"),
    "image": (ImageMessage, "image"),
    "audio": (AudioMessage, "audio"),
    "video": (VideoMessage, "video"),
    "document": (DocumentMessage, "document"),
    "sticker": (StickerMessage, "sticker"),
    "location": (LocationMessage, "location"),
    "contacts": (ContactsMessage, "contacts"),
    "reaction": (ReactionMessage, "reaction"),
    "unsupported": (UnsupportedMessage, None),
}
_TAG_OF_CLASS: dict[type[BaseModel], str] = {cls: f"<{kind}>" for kind, (cls, _) in _TAGGED.items()}


def _message_tag(value: Any) -> str:
    # Tags are written <type> so that an error location can tell them from JSON keys.
    if isinstance(value, BaseModel):
        return _TAG_OF_CLASS.get(type(value), "<other>")
    if isinstance(value, Mapping):
        kind = value.get("type")
        if isinstance(kind, str) and kind in _TAGGED:
            key = _TAGGED[kind][1]
            if key is None or key in value:
                return f"<{kind}>"
    return "<other>"


InboundMessage: TypeAlias = Annotated[
    Annotated[TextMessage, Tag("<text>")]
    | Annotated[InteractiveMessage, Tag("<interactive>")]
    | Annotated[ButtonMessage, Tag("<button>")]
    | Annotated[ImageMessage, Tag("<image>")]
    | Annotated[AudioMessage, Tag("<audio>")]
    | Annotated[VideoMessage, Tag("<video>")]
    | Annotated[DocumentMessage, Tag("<document>")]
    | Annotated[StickerMessage, Tag("<sticker>")]
    | Annotated[LocationMessage, Tag("<location>")]
    | Annotated[ContactsMessage, Tag("<contacts>")]
    | Annotated[ReactionMessage, Tag("<reaction>")]
    | Annotated[UnsupportedMessage, Tag("<unsupported>")]
    | Annotated[UnknownMessage, Tag("<other>")],
    Discriminator(_message_tag),
]
"""Any inbound message, told apart by ``type``."""

_MESSAGE = TypeAdapter[InboundMessage](InboundMessage)


def parse_message(data: Mapping[str, Any]) -> InboundMessage:
    """Parse one item of ``value.messages``; raises ``PayloadError`` naming the bad field."""
    return validate(_MESSAGE, data, what="message")
