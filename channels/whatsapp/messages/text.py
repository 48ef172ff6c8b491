"""A text message, and its builder."""

from __future__ import annotations

from typing import Literal

from channels.whatsapp.messages.base import Context, MessageBase, _common
from channels.whatsapp.payloads import MetaModel, TimestampLike

__all__ = ["Text", "TextMessage", "text_message"]


class Text(MetaModel):
    """The ``text`` object of a text message."""

    body: str


class TextMessage(MessageBase):
    """A plain text message."""

    type: Literal["text"] = "text"
    text: Text


def text_message(
    wamid: str,
    from_: str | None,
    timestamp: TimestampLike,
    body: str,
    *,
    context: Context | None = None,
    from_user_id: str | None = None,
) -> TextMessage:
    """Build a text message."""
    common = _common(wamid, from_, timestamp, context, from_user_id)
    return TextMessage(**common, text=Text(body=body))
