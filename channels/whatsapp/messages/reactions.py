"""A reaction added to or removed from a message, and its builder."""

from __future__ import annotations

from typing import Literal

from channels.whatsapp.messages.base import MessageBase, _common
from channels.whatsapp.payloads import MetaModel, TimestampLike

__all__ = ["Reaction", "ReactionMessage", "reaction"]


class Reaction(MetaModel):
    """A reaction to ``message_id``; an empty or absent ``emoji`` removes it."""

    message_id: str
    emoji: str | None = None


class ReactionMessage(MessageBase):
    """A reaction added to (or removed from) a message."""

    type: Literal["reaction"] = "reaction"
    reaction: Reaction


def reaction(
    wamid: str,
    from_: str | None,
    timestamp: TimestampLike,
    message_id: str,
    emoji: str | None,
    *,
    from_user_id: str | None = None,
) -> ReactionMessage:
    """Build a reaction to ``message_id``; ``emoji`` ``""`` or ``None`` removes a reaction."""
    common = _common(wamid, from_, timestamp, None, from_user_id)
    return ReactionMessage(**common, reaction=Reaction(message_id=message_id, emoji=emoji))
