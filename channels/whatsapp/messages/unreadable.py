"""Messages that can't be read: one Meta doesn't pass on, and one of a type not modelled here.

:class:`UnknownMessage` keeps every field, so a new kind of message never breaks a parse.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from channels.whatsapp.errors import ErrorObject, error_object
from channels.whatsapp.messages.base import MessageBase, _common
from channels.whatsapp.payloads import MetaModel, TimestampLike

__all__ = ["UnknownMessage", "Unsupported", "UnsupportedMessage", "unsupported"]


class Unsupported(MetaModel):
    """What Meta says about a message it can't pass on (``type``: ``poll``, ...)."""

    type: str | None = None


class UnsupportedMessage(MessageBase):
    """A message Meta does not pass on; ``errors`` holds 131051."""

    type: Literal["unsupported"] = "unsupported"
    unsupported: Unsupported | None = None


class UnknownMessage(MessageBase):
    """A message of a type not modelled here, or missing its type's object; keeps all fields."""


def unsupported(
    wamid: str,
    from_: str | None,
    timestamp: TimestampLike,
    unsupported_type: str | None = None,
    *,
    errors: Sequence[ErrorObject] | None = None,
    from_user_id: str | None = None,
) -> UnsupportedMessage:
    """Build a message Meta can't pass on (a poll...), with its 131051 error by default."""
    common = _common(wamid, from_, timestamp, None, from_user_id)
    if errors is None:
        errors = [error_object(131051)]
    info = None if unsupported_type is None else Unsupported(type=unsupported_type)
    return UnsupportedMessage(**common, errors=list(errors), unsupported=info)
