"""What every inbound message has, whatever its type: sender, id, timestamp, context.

Also the part every builder fills the same way: ``from_`` is the user's
wa_id, or ``None`` for a username-only user known by BSUID alone
(``from_user_id``); ``timestamp`` is anything ``format_timestamp`` takes.
"""

from __future__ import annotations

from typing import TypedDict

from pydantic import Field

from channels.whatsapp.errors import ErrorObject
from channels.whatsapp.payloads import MetaModel, Timestamp, TimestampLike, format_timestamp

__all__ = ["Context", "MessageBase"]


class Context(MetaModel):
    """What an inbound message refers to: the quoted message, or that it was forwarded.

    A reply (or a button or list reply) carries ``from`` (the business number)
    and ``id`` (the wamid it answers); a forwarded message carries
    ``forwarded`` or ``frequently_forwarded`` (forwarded more than five times).
    """

    from_: str | None = Field(default=None, alias="from")
    id: str | None = None
    forwarded: bool | None = None
    frequently_forwarded: bool | None = None


class MessageBase(MetaModel):
    """The fields every inbound message has, whatever its type."""

    context: Context | None = None
    from_: str | None = Field(default=None, alias="from")
    from_user_id: str | None = None
    id: str
    timestamp: Timestamp
    type: str
    errors: list[ErrorObject] | None = None

    @property
    def unix_time(self) -> int:
        """``timestamp`` as an int of unix seconds."""
        return int(self.timestamp)


# What every builder fills the same way. Builders make what a simulated user sends, in
# Meta's exact shape; ``envelope.build_webhook`` wraps it for sending.


class _Common(TypedDict):
    context: Context | None
    from_: str | None
    from_user_id: str | None
    id: str
    timestamp: str


def _common(
    wamid: str,
    from_: str | None,
    timestamp: TimestampLike,
    context: Context | None,
    from_user_id: str | None,
) -> _Common:
    if from_ is None and from_user_id is None:
        raise ValueError("a message needs a sender: from_ (wa_id), from_user_id (BSUID) or both")
    return _Common(
        context=context,
        from_=from_,
        from_user_id=from_user_id,
        id=wamid,
        timestamp=format_timestamp(timestamp),
    )
