"""What the control API under ``/_harness/`` takes and answers, as Pydantic models.

Each request body is a model that both checks the body (a bad one answers
400 naming the field, as :func:`config_error` words it) and describes it in
the OpenAPI document: :data:`CONTROL_ENDPOINTS` lists the endpoints with
their models, and :data:`CONTROL_OPENAPI_PATHS` and
:data:`CONTROL_OPENAPI_SCHEMAS` are generated from it. The answers are
models too, so what the document promises is what the handlers send.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any, Final, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.json_schema import models_json_schema

from channels.whatsapp.ids import BSUID_PATTERN
from channels.whatsapp.media import MEDIA_KINDS
from channels.whatsapp.sends.fields import Maybe, SendJsonSchema
from harness.durations import parse_duration
from harness.exceptions import ConfigError

__all__ = [
    "CONTROL_ENDPOINTS",
    "CONTROL_OPENAPI_PATHS",
    "CONTROL_OPENAPI_SCHEMAS",
    "WA_ID_PATTERN",
    "Advance",
    "Clear",
    "ControlBody",
    "ControlEndpoint",
    "ControlErrorBody",
    "ControlErrorMessage",
    "EventsPage",
    "Inbound",
    "Kept",
    "NewUser",
    "Now",
    "Outbox",
    "Played",
    "Redeliver",
    "RegisteredUser",
    "Tap",
    "UploadedMedia",
    "Wamid",
    "config_error",
    "is_wa_id",
]

_TYPE_NAMES: Final = {"string_type": "str", "dict_type": "dict", "model_type": "dict"}
WA_ID_PATTERN: Final = r"^[0-9]{5,15}$"
"""A user's phone number as Meta writes it in ``wa_id``: 5 to 15 digits."""
_BSUID: Final = rf"^{BSUID_PATTERN.pattern}$"
# Longer values are cut short in error messages.
_SHOWN: Final = 40


def is_wa_id(value: str) -> bool:
    """Tell whether ``value`` is a wa_id: 5 to 15 ASCII digits."""
    return re.fullmatch(WA_ID_PATTERN, value) is not None


def _shown(value: str) -> str:
    return repr(value if len(value) <= _SHOWN else value[:_SHOWN] + "...")


class ControlBody(BaseModel):
    """Base of the control API's bodies: strict types, unknown keys ignored."""

    model_config = ConfigDict(strict=True, extra="ignore")


class NewUser(ControlBody):
    """``POST /_harness/users``: a simulated user, by phone number, BSUID or both.

    A ``wa_id`` is a phone number as Meta writes it, 5 to 15 digits (as a
    send's ``to`` must be, so the agent can answer); a ``user_id`` looks like
    ``US.13491208655302741918``.
    """

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"required": [key], "properties": {key: {"type": "string"}}}
                for key in ("wa_id", "user_id")
            ]
        }
    )

    wa_id: str | None = Field(default=None, json_schema_extra={"pattern": WA_ID_PATTERN})
    user_id: str | None = Field(default=None, json_schema_extra={"pattern": _BSUID})
    name: str = ""
    #: False: a number with no WhatsApp account (what is sent to it fails with 131026).
    on_whatsapp: bool = True

    @field_validator("wa_id")
    @classmethod
    def _check_wa_id(cls, value: str | None) -> str | None:
        if value is not None and not is_wa_id(value):
            raise ValueError(f"field 'wa_id' must be 5 to 15 digits, got {_shown(value)}")
        return value

    @field_validator("user_id")
    @classmethod
    def _check_user_id(cls, value: str | None) -> str | None:
        if value is not None and re.fullmatch(_BSUID, value) is None:
            raise ValueError(
                "field 'user_id' must be a BSUID: two capital letters, a dot and digits"
                f" (US.13491208655302741918), got {_shown(value)}"
            )
        return value

    @model_validator(mode="after")
    def _check_some_id(self) -> Self:
        if self.wa_id is None and self.user_id is None:
            raise ValueError("give wa_id, user_id (BSUID) or both")
        if not self.on_whatsapp and self.wa_id is None:
            raise ValueError("on_whatsapp: a user who is not on WhatsApp needs a wa_id")
        return self


class Played(ControlBody):
    """What every call that plays a user may say about waiting for the agent.

    By default the call answers once that user's conversation is quiet (the
    agent has answered, or stayed silent for 0.3 s); a ``quiet`` given is the
    silence that ends it, answered or not. ``wait`` false answers at once,
    with the message only on its way.
    """

    wait: bool = Field(
        default=True,
        description="false: answer at once, without waiting for the agent's answer.",
    )
    quiet: Maybe[Annotated[float, Field(gt=0, le=60)]] = Field(
        default=None,
        description=(
            "Seconds of silence in this user's conversation after which the call answers,"
            " whether or not the agent has answered: for an agent that sends a holding"
            " message, then thinks. Without it: 0.3 s, or a few milliseconds once the agent"
            " has answered."
        ),
    )


class Inbound(Played):
    """``POST /_harness/inbound``: a user's message, as text or as Meta's message object.

    ``message`` is checked against what Meta sends and completed as Meta
    would: ``reaction.message_id`` and ``context.id`` may name the agent's
    messages (``last_reply``, ``reply 2``) instead of giving a wamid, a
    reaction without one reacts to the agent's last reply, a button or list
    reply answers the agent's last buttons or list, and a media message names
    a file uploaded with ``POST /_harness/media`` by its ``id``.
    """

    model_config = ConfigDict(
        json_schema_extra={"anyOf": [{"required": ["text"]}, {"required": ["message"]}]}
    )

    user: str
    text: Maybe[str] = None
    message: Maybe[dict[str, Any]] = Field(
        default=None,
        description=(
            "Meta's message object without id, from and timestamp; "
            "message ids may be written last_reply or reply N."
        ),
    )

    @model_validator(mode="after")
    def _check_content(self) -> Self:
        if self.text is None and self.message is None:
            raise ValueError("field 'text' is required")
        return self


class Tap(Played):
    """``POST /_harness/tap``: a user taps a button or list row (its id or title)."""

    user: str
    choice: str


class Redeliver(Played):
    """``POST /_harness/redeliver``: a message to deliver again, or a user's last one."""

    wamid: Maybe[str] = None
    user: Maybe[str] = None


class Advance(ControlBody):
    """``POST /_harness/advance``: how far virtual time jumps (``25h``, ``90s``, ``1d2h``)."""

    duration: str

    @field_validator("duration")
    @classmethod
    def _check_duration(cls, value: str) -> str:
        if parse_duration(value) < timedelta(0):
            raise ValueError("field 'duration' can't be negative")
        return value

    def delta(self) -> timedelta:
        """The jump, parsed."""
        return parse_duration(self.duration)


class Clear(ControlBody):
    """``POST /_harness/clear``: drop the events and sends before these indices (all if omitted).

    The indices are absolute, as ``/_harness/events`` and an export give
    them: export first, then clear before the export's ``next``, and nothing
    recorded meanwhile is lost. ``messages`` also forgets every message, so
    their ids answer as unknown ones.
    """

    events_before: Maybe[Annotated[int, Field(ge=0)]] = None
    outbox_before: Maybe[Annotated[int, Field(ge=0)]] = None
    messages: bool = False


class RegisteredUser(BaseModel):
    """The user registered, with the BSUID made up when none was given."""

    wa_id: str | None
    user_id: str
    name: str
    on_whatsapp: bool = True


class Wamid(BaseModel):
    """The id of the message delivered."""

    wamid: str


class UploadedMedia(BaseModel):
    """A file a user can send: its ``id`` goes in an image, audio, video, document or sticker."""

    id: str
    mime_type: str
    sha256: str = Field(description="The file's SHA-256 in base64, as webhooks carry it.")
    file_size: int


class Now(BaseModel):
    """The simulator's virtual time, in ISO 8601."""

    now: str


class Outbox(BaseModel):
    """The sends the agent made, as it sent them, from absolute index ``since`` on.

    Send ``i`` is the ``i``-th the server ever took; ``next`` reads on (``?since=next``).
    """

    messages: list[dict[str, Any]]
    first: int = Field(default=0, description="The index of the first send the server still keeps.")
    next: int = Field(description="Where the next read starts (?since=next).")
    dropped: int = Field(
        default=0,
        description="How many of the sends asked for are no longer kept (the answer starts"
        " at the first kept one).",
    )


class EventsPage(BaseModel):
    """Trace events from an absolute index: event ``i`` is the ``i``-th ever recorded."""

    events: list[dict[str, Any]]
    first: int = Field(description="The index of the first event the server still keeps.")
    next: int = Field(description="Where the next read starts (?since=next).")
    dropped: int = Field(
        description="How many of the events asked for are no longer kept (the answer starts"
        " at the first kept one)."
    )


class Kept(BaseModel):
    """What the server keeps now, as ranges of absolute indices."""

    events_first: int
    events_next: int
    outbox_first: int
    outbox_next: int
    messages_forgotten: int = Field(description="How many messages' ids now answer as unknown.")


class ControlErrorMessage(BaseModel):
    """What went wrong, in one line."""

    message: str


class ControlErrorBody(BaseModel):
    """The body of a control API error (400: bad input; 409: not possible now)."""

    error: ControlErrorMessage

    @classmethod
    def saying(cls, message: str) -> ControlErrorBody:
        """The error body carrying ``message``."""
        return cls(error=ControlErrorMessage(message=message))


def config_error(exc: ValidationError) -> ConfigError:
    """The first problem Pydantic found in a control body, worded as the API answers it."""
    error = exc.errors(include_url=False)[0]
    name = ".".join(str(step) for step in error["loc"])
    if error["type"] == "missing":
        return ConfigError(f"field {name!r} is required")
    if error["type"] in _TYPE_NAMES:
        return ConfigError(f"field {name!r} must be a {_TYPE_NAMES[error['type']]}")
    cause = (error.get("ctx") or {}).get("error")
    return ConfigError(str(cause) if cause is not None else f"field {name!r}: {error['msg']}")


@dataclass(frozen=True, slots=True)
class ControlEndpoint:
    """One control endpoint: where it is, what it takes and what it answers."""

    path: str
    method: Literal["GET", "POST"]
    summary: str
    answer: type[BaseModel] | None
    body: type[ControlBody] | None = None
    status: int = 200
    #: The content types taken as a raw body (a file's bytes) instead of a JSON ``body``.
    raw: tuple[str, ...] = ()
    #: The content type of the answer, when it is not one JSON document.
    answer_type: str = "application/json"


CONTROL_ENDPOINTS: Final = (
    ControlEndpoint(
        "/_harness/users", "POST", "Register a simulated user", RegisteredUser, NewUser, 201
    ),
    ControlEndpoint(
        "/_harness/inbound",
        "POST",
        "A user sends a message (text, or any Meta message object)",
        Wamid,
        Inbound,
    ),
    ControlEndpoint(
        "/_harness/tap",
        "POST",
        "A user taps a button or list row of the last interactive message",
        Wamid,
        Tap,
    ),
    ControlEndpoint(
        "/_harness/redeliver",
        "POST",
        "Deliver a user's message again, with identical bytes",
        Wamid,
        Redeliver,
    ),
    ControlEndpoint(
        "/_harness/media",
        "POST",
        "Upload a file a user sends (the raw bytes, with their Content-Type)",
        UploadedMedia,
        status=201,
        raw=tuple(sorted(mime for kind in MEDIA_KINDS.values() for mime in kind)),
    ),
    ControlEndpoint("/_harness/advance", "POST", "Move virtual time forward", Now, Advance),
    ControlEndpoint("/_harness/clock", "GET", "The simulator's current virtual time", Now),
    ControlEndpoint(
        "/_harness/outbox", "GET", "The sends the agent made, as sent (from ?since=N)", Outbox
    ),
    ControlEndpoint(
        "/_harness/events", "GET", "The trace event log (from index ?since=N)", EventsPage
    ),
    ControlEndpoint(
        "/_harness/conversation",
        "GET",
        "The conversation so far, with its turns: everyone's, or one user's (?user=)",
        None,
    ),
    ControlEndpoint(
        "/_harness/export",
        "GET",
        "Everything kept, as JSON lines: a header, then each event and each send with its index",
        None,
        answer_type="application/x-ndjson",
    ),
    ControlEndpoint(
        "/_harness/clear",
        "POST",
        "Drop the events and sends kept (before given indices)",
        Kept,
        Clear,
    ),
)
"""The control endpoints, with the models of their bodies and answers."""

_REF = "#/components/schemas/{model}"
_ERROR = {"$ref": _REF.format(model=ControlErrorBody.__name__)}
_SINCE = {
    "name": "since",
    "in": "query",
    "required": False,
    "description": "Only what came from this absolute index on (from the first kept, if later).",
    "schema": {"type": "integer", "minimum": 0},
}
_WAIT = {
    "name": "wait",
    "in": "query",
    "required": False,
    "description": "Seconds to wait (at most 60) for something new from ?since= on,"
    " before answering with nothing.",
    "schema": {"type": "number", "minimum": 0, "maximum": 60},
}
_USER = {
    "name": "user",
    "in": "query",
    "required": False,
    "description": "Only what concerns this user (wa_id or BSUID).",
    "schema": {"type": "string"},
}
_CONVERSATION_USER = {
    "name": "user",
    "in": "query",
    "required": False,
    "description": "Only this user's conversation (wa_id or BSUID): their messages, the"
    " agent's sends to them and their statuses. A user the server does not know answers 400.",
    "schema": {"type": "string"},
}
_FILENAME = {
    "name": "filename",
    "in": "query",
    "required": False,
    "description": "The file's name, which a document message carries.",
    "schema": {"type": "string"},
}


# What one answer lets a client do next, as OpenAPI links (which clients and fuzzers follow).
_LINKS: Final[dict[str, dict[str, Any]]] = {
    "/_harness/users": {
        "WritesIn": {
            "operationId": "harnessInbound",
            "description": "The user registered sends a message.",
            "requestBody": {"user": "$response.body#/user_id", "text": "hi"},
        }
    },
    "/_harness/inbound": {
        "Redelivered": {
            "operationId": "harnessRedeliver",
            "description": "Meta delivers the message again.",
            "requestBody": {"wamid": "$response.body#/wamid"},
        },
        "Taps": {
            "operationId": "harnessTap",
            "description": "The same user taps a button or row of the agent's answer.",
            "requestBody": {"user": "$request.body#/user"},
        },
    },
    "/_harness/media": {
        "SentAsAnImage": {
            "operationId": "harnessInbound",
            "description": "A user sends the file uploaded (as an image: a photo's type).",
            "requestBody": {"message": {"type": "image", "image": {"id": "$response.body#/id"}}},
        }
    },
}


def _operation_id(path: str) -> str:
    """``/_harness/inbound`` -> ``harnessInbound``."""
    return "harness" + path.removeprefix("/_harness/").title().replace("/", "")


def _json(
    description: str, schema: dict[str, Any], media_type: str = "application/json"
) -> dict[str, Any]:
    return {"description": description, "content": {media_type: {"schema": schema}}}


def _operation(endpoint: ControlEndpoint) -> dict[str, Any]:
    answer = (
        {"type": "object"}
        if endpoint.answer is None
        else {"$ref": _REF.format(model=endpoint.answer.__name__)}
    )
    if endpoint.answer_type != "application/json":
        answer = {"type": "string"}
    operation: dict[str, Any] = {
        "operationId": _operation_id(endpoint.path),
        "summary": endpoint.summary,
        "tags": ["control"],
        # No token, unless the server was given one (harness serve --control-token).
        "security": [{}, {"bearer": []}],
        "responses": {
            str(endpoint.status): _json("Done", answer, endpoint.answer_type),
            "400": _json("Bad input", _ERROR),
            "401": _json("The server has a control token, and it was not given", _ERROR),
        },
    }
    if endpoint.body is not None:
        schema = {"$ref": _REF.format(model=endpoint.body.__name__)}
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": schema}},
        }
        operation["responses"]["409"] = _json("Not possible now", _ERROR)
        operation["responses"]["413"] = _json("The body is over 1 MiB", _ERROR)
    if endpoint.raw:
        binary = {"schema": {"type": "string", "format": "binary"}}
        operation["requestBody"] = {
            "required": True,
            "content": dict.fromkeys(endpoint.raw, binary),
        }
        operation["parameters"] = [_FILENAME]
        operation["responses"]["413"] = _json("Over WhatsApp's size limit for the type", _ERROR)
    if endpoint.path in ("/_harness/events", "/_harness/outbox"):
        operation["parameters"] = [_SINCE, _WAIT, _USER]
    if endpoint.path == "/_harness/conversation":
        operation["parameters"] = [_CONVERSATION_USER]
    if endpoint.path in _LINKS:
        operation["responses"][str(endpoint.status)]["links"] = _LINKS[endpoint.path]
    return {endpoint.method.lower(): operation}


def _schemas() -> dict[str, Any]:
    models = {ControlErrorBody} | {
        model for e in CONTROL_ENDPOINTS for model in (e.body, e.answer) if model is not None
    }
    _, top = models_json_schema(
        [(model, "validation") for model in sorted(models, key=lambda m: m.__name__)],
        ref_template=_REF,
        schema_generator=SendJsonSchema,
    )
    schemas: dict[str, Any] = top["$defs"]
    return schemas


CONTROL_OPENAPI_PATHS: Final[dict[str, dict[str, Any]]] = {
    endpoint.path: _operation(endpoint) for endpoint in CONTROL_ENDPOINTS
}
"""OpenAPI path items describing the control endpoints."""
CONTROL_OPENAPI_SCHEMAS: Final[dict[str, dict[str, Any]]] = _schemas()
"""The schemas the control endpoints' path items refer to."""
