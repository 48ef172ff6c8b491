"""What every message send carries besides its content: product, addressee, quote, callback.

:class:`MessageSend` is the top level of a message body. It refuses keys it
does not know (Graph answers those with 100), and it holds the addressee
rules: an individual is reached by phone number (``to``, normalized to a
wa_id) or by business-scoped user id (``recipient``), ``to`` winning when
both are given; a group is reached by its id in ``to``. Each content model
(``TextSend``, ``ImageSend`` ...) adds ``type`` and its own object.

:class:`SendSummary` is what a validated send tells the simulator and the
trace: the addressee, the text shown, the media, the template.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final, Literal, Self, TypedDict

from pydantic import (
    ConfigDict,
    ModelWrapValidatorHandler,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import SchemaValidator, core_schema

from channels.whatsapp.ids import BSUID_PATTERN
from channels.whatsapp.sends.fields import (
    Matches,
    Maybe,
    NonEmpty,
    Problem,
    SendModel,
    checked_first,
    send_problem,
)
from channels.whatsapp.sends.limits import Limit

__all__ = [
    "GROUP_ID_MAX",
    "WA_NUMBER_PATTERN",
    "MessageSend",
    "ReplyContext",
    "SendAction",
    "SendSummary",
    "normalize_wa_id",
]

WA_NUMBER_PATTERN: Final = r"^\s*[ ()-]*\+?[ ()-]*(?:[0-9][ ()-]*){5,15}\s*$"
"""A phone number as bots write it: 5 to 15 digits, a leading ``+``, spaces, dashes and
parentheses (``+1 (631) 555-1000``), the forms Meta takes in a send."""
GROUP_ID_MAX: Final = 256
"""The longest group id ``to`` may hold."""

# Matched by pydantic-core's regular-expression engine, the one the schema's
# validators use, so they agree; it runs in linear time, as Python's would not
# on this pattern (a long run of spaces backtracks cubically).
_WA_NUMBER: Final = SchemaValidator(core_schema.str_schema(pattern=WA_NUMBER_PATTERN))
_NOT_DIGIT: Final = re.compile(r"[^0-9]")

SendAction = Literal["message", "mark_read", "typing"]
"""What a send asks for: a message, a read receipt, or a read receipt with a typing indicator."""


def normalize_wa_id(value: str) -> str | None:
    """The wa_id for a phone number as bots write it (``+55 11 98765-4321``), or ``None``.

    Surrounding whitespace, one leading ``+``, spaces, dashes and parentheses are dropped;
    what is left must be 5 to 15 digits (:data:`WA_NUMBER_PATTERN`).
    """
    if not _WA_NUMBER.isinstance_python(value):
        return None
    return _NOT_DIGIT.sub("", value)


class SendSummary(TypedDict, total=False):
    """The parts of a valid send the simulator and the trace use (see ``ValidatedSend``)."""

    type: str
    recipient_type: Literal["individual", "group"]
    input: str
    to: str
    recipient: str
    group_id: str
    text: str | None
    context_id: str
    message_id: str
    interactive_type: str
    template_name: str
    template_language: str
    media_id: str
    media_link: str
    biz_opaque_callback_data: str


class ReplyContext(SendModel):
    """``context``: the message this one quotes."""

    message_id: NonEmpty


# What JSON Schema can say of the addressee rules that span fields; the
# validators below enforce the same.
_ADDRESSEE_SCHEMA: Final[dict[str, Any]] = {
    "if": {"properties": {"recipient_type": {"const": "group"}}, "required": ["recipient_type"]},
    "then": {"properties": {"to": {"maxLength": GROUP_ID_MAX}}, "required": ["to"]},
    "else": {
        "properties": {"to": {"pattern": WA_NUMBER_PATTERN}},
        "anyOf": [{"required": ["to"]}, {"required": ["recipient"]}],
    },
}


def _missing_addressee(data: Any) -> Problem | None:
    """What is wrong when a body names nobody to send to, or ``None``."""
    if not isinstance(data, dict) or "to" in data:
        return None
    addressed = data.get("recipient_type", "individual")
    if addressed == "group":
        return ("send_missing", "required parameter is missing", ("to",))
    if addressed == "individual" and "recipient" not in data:
        return ("send_missing", "required parameter is missing (or give recipient)", ("to",))
    return None  # an invalid recipient_type is reported on its own


class MessageSend(SendModel):
    """The top level of a message body, shared by every message type."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_ADDRESSEE_SCHEMA)

    messaging_product: Literal["whatsapp"]
    recipient_type: Literal["individual", "group"] = "individual"
    type: str
    to: Maybe[NonEmpty] = None
    recipient: Maybe[
        Annotated[str, Matches(f"^{BSUID_PATTERN.pattern}$", "is not a business-scoped user id")]
    ] = None
    context: Maybe[ReplyContext] = None
    biz_opaque_callback_data: Maybe[Annotated[str, Limit("callback_data")]] = None

    @field_validator("to")
    @classmethod
    def _check_to(cls, value: str, info: ValidationInfo) -> str:
        addressed = info.data.get("recipient_type")  # absent when it was invalid itself
        if addressed == "group" and len(value) > GROUP_ID_MAX:
            text = f"must be at most {GROUP_ID_MAX} characters, got {len(value)}"
            send_problem("send_invalid", text, value=value)
        if addressed == "individual" and normalize_wa_id(value) is None:
            text = f"{value!r} is not a phone number (5 to 15 digits)"
            send_problem("send_invalid", text, value=value)
        return value

    @model_validator(mode="wrap")
    @classmethod
    def _check_addressee(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        # Checked on the body as sent, so a missing addressee is reported
        # before the content's problems, as Meta reads the addressee first.
        return checked_first(_missing_addressee(data), data, handler)

    @property
    def action(self) -> SendAction:
        """What the send asks for: a message."""
        return "message"

    def summary(self) -> SendSummary:
        """What the simulator needs of this send: addressee, quote, callback and content."""
        found: SendSummary = {
            "type": self.type,
            "recipient_type": self.recipient_type,
        }
        if self.recipient_type == "group" and self.to is not None:
            found["input"] = found["group_id"] = self.to
        elif self.to is not None:
            found["input"] = self.to
            found["to"] = normalize_wa_id(self.to) or self.to
        elif self.recipient is not None:
            found["input"] = found["recipient"] = self.recipient
        if self.context is not None:
            found["context_id"] = self.context.message_id
        if self.biz_opaque_callback_data is not None:
            found["biz_opaque_callback_data"] = self.biz_opaque_callback_data
        found.update(self.content())
        return found

    def content(self) -> SendSummary:
        """What the content object contributes to :meth:`summary` (each type overrides it)."""
        return {}
