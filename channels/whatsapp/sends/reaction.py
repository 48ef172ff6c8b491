"""Reactions: an emoji on a message the user sent (an empty emoji takes it back)."""

from __future__ import annotations

from typing import Annotated, Literal

from channels.whatsapp.sends.common import MessageSend, SendSummary
from channels.whatsapp.sends.fields import NonEmpty, Refused, SendModel

__all__ = ["ReactionContent", "ReactionSend"]


class ReactionContent(SendModel):
    """``reaction``: the message reacted to, and the emoji (``""`` removes the reaction)."""

    message_id: NonEmpty
    emoji: str


class ReactionSend(MessageSend):
    """A reaction message; it can't quote another message."""

    context: Annotated[None, Refused("a reaction can't quote a message")] = None
    type: Literal["reaction"]
    reaction: ReactionContent

    def content(self) -> SendSummary:
        """The message reacted to, and the emoji as the text shown."""
        return {"message_id": self.reaction.message_id, "text": self.reaction.emoji}
