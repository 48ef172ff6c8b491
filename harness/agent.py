"""What an agent offers the harness besides its webhook: a direct entry point.

An agent whose core (brain, tools, state) can be called without HTTP
implements :class:`DirectAgent`: a user id and a burst of messages in, the
agent's replies and tool calls out. The direct channel drives it, so the same
scenario runs through the WhatsApp simulator and straight into the agent,
which tells a bug in the agent's reasoning from a bug in its channel code.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from harness.trace import ToolCall

__all__ = ["DirectAgent", "DirectMessage", "DirectOption", "DirectReply", "DirectTurn"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DirectMessage(_Model):
    """One message from the user, independent of any channel.

    ``type`` is ``text`` for typed text and ``reply`` for a tapped button or
    list row (``reply_id`` says which, ``text`` holds its title); other types
    (``image``, ``location`` ...) carry their details in ``body``.
    """

    type: str = "text"
    text: str | None = None
    reply_id: str | None = None
    at: datetime | None = None
    body: dict[str, JsonValue] = Field(default_factory=dict)


class DirectOption(_Model):
    """A choice the agent offers (a reply button or a list row)."""

    id: str
    title: str
    description: str | None = None


class DirectReply(_Model):
    """One message from the agent: text, text with choices, or a template."""

    type: str = "text"
    text: str = ""
    options: tuple[DirectOption, ...] = ()
    template: str | None = None


class DirectTurn(_Model):
    """What the agent did about one burst: its replies and its tool calls, in order."""

    replies: tuple[DirectReply, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()


@runtime_checkable
class DirectAgent(Protocol):
    """An agent the harness can call in-process, without a channel."""

    async def handle_burst(
        self, user: str, messages: Sequence[DirectMessage], *, now: datetime
    ) -> DirectTurn:
        """Answer a burst of messages from ``user`` received by ``now``."""
        ...
