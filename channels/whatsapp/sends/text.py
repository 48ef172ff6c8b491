"""Text messages: ``{"type": "text", "text": {"body": ..., "preview_url": ...}}``.

A body without ``type`` is a text message, as in Meta's reference.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from channels.whatsapp.sends.common import MessageSend, SendSummary
from channels.whatsapp.sends.fields import Maybe, SendModel
from channels.whatsapp.sends.limits import Limit

__all__ = ["TextContent", "TextSend"]


class TextContent(SendModel):
    """``text``: the message, and whether to preview the first http(s) URL in it."""

    preview_url: Maybe[bool] = None
    body: Annotated[str, Field(min_length=1), Limit("text_body")]


class TextSend(MessageSend):
    """A text message."""

    type: Literal["text"] = "text"
    text: TextContent

    def content(self) -> SendSummary:
        """The text shown."""
        return {"text": self.text.body}
