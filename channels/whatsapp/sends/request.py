"""The whole body of ``POST /{version}/{phone_number_id}/messages``, and its JSON Schema.

:data:`SEND_REQUEST` takes any decoded JSON and validates it as the one
model it is meant as: a :class:`ReadReceipt` when it has ``status``, else
the message model its ``type`` names (``text`` when it has none). A body
whose ``type`` no model takes is checked for the request-wide rules first
(``messaging_product``, unknown keys), as Graph checks those before the
WhatsApp layer, then answers 131051.

:func:`send_schemas` turns the same models into the JSON Schemas of the
OpenAPI document, with any :class:`SendLimits` applied.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Annotated, Any, Final, TypeAlias, get_args

import orjson
from pydantic import ConfigDict, PlainValidator, TypeAdapter, ValidationInfo, create_model

from channels.whatsapp.sends.common import MessageSend
from channels.whatsapp.sends.contacts import ContactsSend
from channels.whatsapp.sends.fields import SendJsonSchema, json_kind, literal_values, send_problem
from channels.whatsapp.sends.interactive import InteractiveSend
from channels.whatsapp.sends.limits import DEFAULT_LIMITS, SendLimits, apply_limits
from channels.whatsapp.sends.location import LocationSend
from channels.whatsapp.sends.media import AudioSend, DocumentSend, ImageSend, StickerSend, VideoSend
from channels.whatsapp.sends.reaction import ReactionSend
from channels.whatsapp.sends.read import ReadReceipt
from channels.whatsapp.sends.template import TemplateSend
from channels.whatsapp.sends.text import TextSend

__all__ = [
    "MESSAGE_KEYS",
    "MESSAGE_MODELS",
    "MESSAGE_TYPES",
    "SEND_REQUEST",
    "SendBody",
    "send_schemas",
]

_Body: TypeAlias = (
    AudioSend
    | ContactsSend
    | DocumentSend
    | ImageSend
    | InteractiveSend
    | LocationSend
    | ReactionSend
    | StickerSend
    | TemplateSend
    | TextSend
    | VideoSend
    | ReadReceipt
)
_MESSAGES: Final[tuple[type[MessageSend], ...]] = tuple(
    model for model in get_args(_Body) if issubclass(model, MessageSend)
)
MESSAGE_MODELS: Final[Mapping[str, type[MessageSend]]] = {
    literal_values(model, "type")[0]: model for model in _MESSAGES
}
"""The model of each message ``type`` the send API accepts."""
MESSAGE_TYPES: Final = frozenset(MESSAGE_MODELS)
"""The values of ``type`` the send API accepts; any other answers 131051."""

MESSAGE_KEYS: Final = frozenset(name for model in _MESSAGES for name in model.model_fields)
"""Every top-level key some message type takes."""

# What a body of an unknown type is held to before its type is refused: the
# request-wide rules and the recipient type, as the message models have them;
# any other message key is taken as it is.
_CHECKED_FIRST: Final = ("messaging_product", "recipient_type")
_ANY_MESSAGE: Final = create_model(
    "_AnyMessage",
    __config__=ConfigDict(extra="forbid", strict=True),
    **{  # type: ignore[call-overload]  # create_model's field kwargs are dynamic by design
        name: (
            (MessageSend.model_fields[name].annotation, MessageSend.model_fields[name])
            if name in _CHECKED_FIRST
            else (Any, None)
        )
        for name in MESSAGE_KEYS
    },
)


def _validate(value: Any, info: ValidationInfo) -> MessageSend | ReadReceipt:
    if not isinstance(value, dict):
        text = f"the request body must be a JSON object, not {json_kind(value)}"
        send_problem("send_request", text, value=value)
    if "status" in value:
        return ReadReceipt.model_validate(value, context=info.context)
    kind = value.get("type", "text")
    model = MESSAGE_MODELS.get(kind) if isinstance(kind, str) else None
    if model is None:
        _ANY_MESSAGE.model_validate(value)
        if not isinstance(kind, str):
            send_problem(
                "send_invalid", f"must be a string, not {json_kind(kind)}", "type", value=kind
            )
        send_problem("send_type", f"message type {kind!r} is not supported", "type", value=kind)
    return model.model_validate(value, context=info.context)


SendBody = Annotated[_Body, PlainValidator(_validate, json_schema_input_type=_Body)]
"""A message of any type, or a read receipt."""


SEND_REQUEST: Final = TypeAdapter(SendBody)
"""Validates a send body: ``SEND_REQUEST.validate_python(body, context=SendContext(...))``."""


def send_schemas(
    limits: SendLimits = DEFAULT_LIMITS, *, ref_template: str = "#/components/schemas/{model}"
) -> dict[str, Any]:
    """The JSON Schema of a send body (``SendRequest``) and of every model it uses, by name.

    ``ref_template`` says where the schemas will live, as in OpenAPI's
    ``components/schemas`` (the default). Each call returns a fresh copy.
    """
    # Generating them takes longer than the rest of a simulator's set-up, and every
    # simulator describes its Graph API: they are generated once per limits, kept as JSON.
    schemas: dict[str, Any] = orjson.loads(_send_schemas_json(limits, ref_template))
    return schemas


@functools.lru_cache(maxsize=16)
def _send_schemas_json(limits: SendLimits, ref_template: str) -> bytes:
    by_key, top = TypeAdapter.json_schemas(
        [("SendRequest", "validation", SEND_REQUEST)],
        ref_template=ref_template,
        schema_generator=SendJsonSchema,
    )
    request = {
        "title": "SendRequest",
        "description": "A message of any type, a read receipt, or a typing indicator.",
        **by_key["SendRequest", "validation"],
    }
    return orjson.dumps(apply_limits({**top["$defs"], "SendRequest": request}, limits))
