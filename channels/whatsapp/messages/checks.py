"""Whether a message a simulated user sends is one Meta would pass on, in Meta's shape.

:func:`~channels.whatsapp.messages.inbound.parse_message` reads whatever a
webhook holds, leniently, because Meta adds fields and kinds of message
without notice. What the simulator sends an agent must be stricter: a
third-party bot trusts that a list reply carries ``context``, that an
``interactive`` message holds its ``interactive`` object, that a media
message carries its id, MIME type and digest. :func:`check_inbound` holds
a message to what Meta always sends:

- its ``type`` is one Meta sends (:data:`INBOUND_TYPES`), with its content
  under the key of that name (``unsupported`` aside);
- every field Meta's models require is there, with its type;
- a reply button, list row, Flow answer or template button answers the
  message that held it: ``context`` with ``from`` and ``id``;
- a ``context`` that quotes a message has both ``from`` and ``id``;
- an ``unsupported`` message says why (``errors``);
- a text is not empty (nor only spaces), a contacts message shares at least one card, a
  location lies on the globe.

Unknown extra fields pass, as Meta's own do. Every refusal is a
:class:`~channels.whatsapp.payloads.PayloadError` whose ``path`` names the
field (``context.id``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from channels.whatsapp.messages.contacts import ContactsMessage
from channels.whatsapp.messages.inbound import InboundMessage, parse_message
from channels.whatsapp.messages.interactive import (
    ButtonMessage,
    InteractiveMessage,
    UnknownInteractive,
)
from channels.whatsapp.messages.locations import LocationMessage
from channels.whatsapp.messages.text import TextMessage
from channels.whatsapp.payloads import PayloadError

__all__ = ["INBOUND_TYPES", "REPLY_TYPES", "check_inbound", "refusal"]

#: The message types Meta sends a business (``order`` and ``system`` pass with their object;
#: ``request_welcome``, a user opening the chat for the first time, has none).
INBOUND_TYPES: Final = (
    "text",
    "interactive",
    "button",
    "image",
    "audio",
    "video",
    "document",
    "sticker",
    "location",
    "contacts",
    "reaction",
    "order",
    "system",
    "unsupported",
    "request_welcome",
)
# The types that carry no object of their own.
_BARE: Final = ("unsupported", "request_welcome")
#: The kinds of ``interactive`` answer Meta sends: a reply button, a list row, a Flow's answer.
REPLY_TYPES: Final = ("button_reply", "list_reply", "nfm_reply")


def refusal(path: str, problem: str) -> PayloadError:
    """The error for a message refused at ``path``, worded as the message parser words them."""
    where = f" at {path}" if path else ""
    return PayloadError(f"invalid message{where}: {problem}", path=path)


def check_inbound(item: Mapping[str, Any]) -> InboundMessage:
    """``item`` (one of ``value.messages``) parsed if Meta would send it, else ``PayloadError``."""
    kind = item.get("type")
    if not isinstance(kind, str) or kind not in INBOUND_TYPES:
        listed = ", ".join(INBOUND_TYPES)
        got = "none" if kind is None else repr(kind)
        raise refusal("type", f"expected a type Meta sends ({listed}), got {got}")
    shape, what = (list, "a list of cards") if kind == "contacts" else (Mapping, "an object")
    if kind not in _BARE and not isinstance(item.get(kind), shape):
        raise refusal(kind, f"a message of type '{kind}' carries {what} under '{kind}'")
    if kind == "unsupported" and not item.get("errors"):
        raise refusal("errors", "required: what Meta says about the message (131051)")
    message = parse_message(item)
    _check_context(item, message)
    if isinstance(message, InteractiveMessage):
        _check_interactive(item["interactive"], message)
    elif isinstance(message, TextMessage) and not message.text.body.strip():
        # The app's send button stays off until the text holds more than spaces.
        raise refusal("text.body", "empty; WhatsApp sends no empty message (nor one of spaces)")
    elif isinstance(message, ContactsMessage) and not message.contacts:
        raise refusal("contacts", "a contacts message shares at least one card")
    elif isinstance(message, LocationMessage):
        if not -90 <= message.location.latitude <= 90:
            raise refusal("location.latitude", "must lie between -90 and 90")
        if not -180 <= message.location.longitude <= 180:
            raise refusal("location.longitude", "must lie between -180 and 180")
    return message


def _check_context(item: Mapping[str, Any], message: InboundMessage) -> None:
    context = item.get("context")
    answers = isinstance(message, ButtonMessage | InteractiveMessage)
    if context is None:
        if answers:
            raise refusal(
                "context",
                "required: a tap answers the message that held the buttons or list "
                "(context.from and context.id)",
            )
        return
    quoted = [key for key in ("from", "id") if key in context]
    if (answers or quoted) and len(quoted) < 2:
        missing = "id" if "from" in context else "from"
        raise refusal(
            f"context.{missing}",
            "required: a message quoting another names its sender (from) and its id",
        )


def _check_interactive(raw: Mapping[str, Any], message: InteractiveMessage) -> None:
    kind = raw.get("type")
    if kind not in REPLY_TYPES:
        listed = ", ".join(REPLY_TYPES)
        raise refusal("interactive.type", f"expected one of {listed}, got {kind!r}")
    if isinstance(message.interactive, UnknownInteractive) and not isinstance(
        raw.get(kind), Mapping
    ):
        raise refusal(f"interactive.{kind}", f"required: the {kind} object")
