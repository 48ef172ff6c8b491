"""The messages steps send and name: ``send`` objects, labels, references to messages.

A ``send`` step holds a media type (``send: image``) or a message object in
Meta's shape; :func:`check_send` checks what the loader can (a type, no
field the channel sets, the content under its type's key) and leaves the
rest to the channel, which knows Meta's shapes.

A step may carry a ``label``; a later step names the message it stands for
where a user's message needs one's id (``reaction.message_id``,
``context.id``, or a step's ``reply_to``):

- a ``say``, ``tap`` or ``send`` step's label names the message it sent (the
  last one, for a burst);
- an ``expect`` step's label names the agent's last reply among those the
  step checked (since the user's last step).

Beside labels, a reference may be ``last_reply`` or ``reply N``
(:mod:`harness.references`). The file is checked when it is loaded (each
reference's shape here; that each label is unique and set on an earlier
step, in :mod:`harness.suites.scenario`); what a reference names is found as
the steps are played, by :class:`MessageLabels`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Final, TypeAlias

from pydantic import AfterValidator, Field
from pydantic.json_schema import JsonSchemaValue

from harness.exceptions import StepError
from harness.references import MessageRef, agent_replies, message_ids, refer
from harness.suites.yamlpos import LocatedError, describe
from harness.trace import Conversation

__all__ = [
    "LABEL_PATTERN",
    "MEDIA_TYPES",
    "SEND_SCHEMA",
    "Label",
    "MessageLabels",
    "Reference",
    "check_send",
    "references",
]

#: Media types that ``send: image`` may name; the channel generates their bytes.
MEDIA_TYPES: Final = ("audio", "document", "image", "sticker", "video")
#: What a label looks like: a word, as in ``label: offer``.
LABEL_PATTERN: Final = r"^[A-Za-z_][A-Za-z0-9_-]*$"

_CHANNEL_FIELDS: Final = ("id", "from", "from_user_id", "timestamp")
# Message types whose content lives under a key named after the type.
_TYPED_CONTENT: Final = frozenset(
    {"text", "location", "contacts", "reaction", "interactive", "button", "order", *MEDIA_TYPES}
)


def _reference(text: str) -> str:
    MessageRef.parse(text)
    return text


#: A label a step carries, for later steps to name its message.
Label: TypeAlias = Annotated[
    str,
    AfterValidator(MessageRef.check_label),
    Field(json_schema_extra={"pattern": LABEL_PATTERN}),
]
#: A message named in a step: ``last_reply``, ``reply N`` or a step's label.
Reference: TypeAlias = Annotated[str, AfterValidator(_reference), Field(min_length=1)]


def check_send(value: object) -> object:
    """Check a ``send`` step's value: a media type, or a message object with its references."""
    if isinstance(value, str):
        if value not in MEDIA_TYPES:
            raise ValueError(
                f"'{value}' is not a media type ({', '.join(MEDIA_TYPES)}); other messages "
                "are written as an object, e.g. {type: location, location: {...}}"
            )
        return value
    if not isinstance(value, dict):
        raise ValueError(
            f"expected a media type or a message object with a type, got {describe(value)}"
        )
    if "type" not in value:
        raise ValueError("a message object needs a type, e.g. {type: location, location: {...}}")
    kind = value["type"]
    if not isinstance(kind, str) or not kind:
        raise LocatedError(
            f"expected a message type such as location, got {describe(kind)}", ("type",)
        )
    for key in _CHANNEL_FIELDS:
        if key in value:
            raise LocatedError("set by the channel: leave it out", (key,))
    if kind in _TYPED_CONTENT and kind not in value:
        raise LocatedError(f"a '{kind}' message carries its content under '{kind}'", ())
    for field, ref in message_ids(value):
        loc = tuple(field.split("."))
        if not isinstance(ref, str):
            raise LocatedError(
                f"expected a message reference such as last_reply, got {describe(ref)}", loc
            )
        try:
            MessageRef.parse(ref)
        except ValueError as exc:
            raise LocatedError(str(exc), loc) from None
    return value


#: The JSON Schema of a ``send`` step's value.
SEND_SCHEMA: Final[JsonSchemaValue] = {
    "anyOf": [
        {"enum": list(MEDIA_TYPES)},
        {
            "type": "object",
            "required": ["type"],
            "properties": {
                "type": {"type": "string", "minLength": 1},
                **dict.fromkeys(_CHANNEL_FIELDS, False),
            },
        },
    ],
    "description": "A media type (image, ...) or a Meta message object without id/from/timestamp.",
}


def references(message: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Each ``(field, label)`` of a message object that names a step's label."""
    found = []
    for field, value in message_ids(message):
        if isinstance(value, str):
            ref = MessageRef.parse(value)
            if ref.label is not None:
                found.append((field, ref.label))
    return found


class MessageLabels:
    """The message each label names, recorded as the steps are played, and references resolved.

    A label whose step produced no message (an ``expect`` with no reply
    before it) names nothing: naming it later is a :class:`StepError`.
    """

    def __init__(self) -> None:
        self._ids: dict[str, str | None] = {}

    def user_step(self, label: str, conversation: Conversation, user: str, before: int) -> None:
        """Label the last message ``user`` sent after the first ``before`` of theirs."""
        sent = conversation.inbound(user)[before:]
        self._ids[label] = sent[-1].wamid if sent else None

    def expect_step(self, label: str, conversation: Conversation, user: str, since: int) -> None:
        """Label the agent's last reply to ``user`` after event ``since``."""
        replies = agent_replies(conversation.events[since:], user)
        self._ids[label] = replies[-1] if replies else None

    def refer(
        self,
        message: Mapping[str, Any],
        conversation: Conversation,
        user: str,
        field: Callable[[str], str],
    ) -> dict[str, Any]:
        """``message`` with its references replaced by message ids in ``user``'s chat.

        ``field`` names a message field (``reaction.message_id``) as the file
        writes it, for the :class:`StepError` raised when the conversation
        holds no such message.
        """

        def one(name: str, text: str) -> str:
            try:
                return MessageRef.parse(text).resolve(conversation.events, user, self._ids)
            except StepError as exc:
                raise StepError(f"{field(name)}: {exc}") from None

        return refer(message, one)
