"""The simulator's control API, under ``/_harness/``, for driving it from outside.

``harness serve`` mounts these beside the fake Graph API so a test written in
any language (or curl) can play the users and read what the agent did:

- ``POST /_harness/users``: register a user (``wa_id``, ``name``, ``user_id``);
- ``POST /_harness/inbound``: a user sends a message of any type (``text``
  for short, or Meta's message object in ``message``); answers the wamid;
- ``POST /_harness/tap``: a user taps a button or list row of the last
  interactive message (``choice``: its id or title);
- ``POST /_harness/redeliver``: Meta delivers a message again, byte for byte;
- ``POST /_harness/advance``: virtual time jumps (``duration`` like ``25h``);
- ``GET /_harness/clock``, ``/_harness/outbox``, ``/_harness/events`` and
  ``/_harness/conversation``: what happened so far, as JSON.

Errors answer ``{"error": {"message": ...}}`` with 400 (bad input) or 409
(the simulator can't do it now, e.g. no webhook is configured).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from channels.whatsapp.simulator import WhatsAppSimulator
from harness.durations import parse_duration
from harness.exceptions import ConfigError, HarnessError
from harness.trace import EVENT_ADAPTER

__all__ = ["CONTROL_OPENAPI_PATHS", "CONTROL_OPENAPI_SCHEMAS", "control_app", "control_routes"]

Handler = Callable[[Request], Awaitable[Response]]


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message}}, status_code=status)


async def _json_object(request: Request) -> dict[str, Any]:
    raw = await request.body()
    try:
        data = json.loads(raw or b"{}")
    except json.JSONDecodeError as exc:
        raise ConfigError(f"the body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError("the body must be a JSON object")
    return data


def _field(data: dict[str, Any], name: str, kind: type) -> Any:
    if name not in data:
        raise ConfigError(f"field {name!r} is required")
    value = data[name]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ConfigError(f"field {name!r} must be a {kind.__name__}")
    return value


def control_app(sim: WhatsAppSimulator) -> ASGIApp:
    """The simulator's fake Graph API with the control endpoints and their OpenAPI paths."""
    return sim.build_graph_app(
        control_routes(sim),
        openapi_paths=CONTROL_OPENAPI_PATHS,
        openapi_schemas=CONTROL_OPENAPI_SCHEMAS,
    )


def control_routes(sim: WhatsAppSimulator) -> list[Route]:
    """The control endpoints, bound to one simulator."""

    def guarded(handler: Handler) -> Handler:
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except ConfigError as exc:
                return _error(400, str(exc))
            except HarnessError as exc:
                return _error(409, str(exc))

        return endpoint

    def user_of(data: dict[str, Any]) -> str:
        key = str(_field(data, "user", str))
        try:
            sim.user(key)
        except ConfigError:
            if not key.isdigit():
                raise
            sim.add_user(key)  # a new phone number writes in: Meta would deliver it too
        return key

    async def users(request: Request) -> Response:
        data = await _json_object(request)
        wa_id = data.get("wa_id")
        user_id = data.get("user_id")
        if wa_id is None and user_id is None:
            raise ConfigError("give wa_id, user_id (BSUID) or both")
        user = sim.add_user(wa_id, str(data.get("name", "")), user_id=user_id)
        return JSONResponse(
            {"wa_id": user.wa_id, "user_id": user.user_id, "name": user.name}, status_code=201
        )

    async def inbound(request: Request) -> Response:
        data = await _json_object(request)
        user = user_of(data)
        if "message" in data:
            message = _field(data, "message", dict)
            wamid = await sim.receive(user, message)
        else:
            text = _field(data, "text", str)
            wamid = await sim.receive(user, {"type": "text", "text": {"body": text}})
        await sim.settle()
        return JSONResponse({"wamid": wamid})

    async def tap(request: Request) -> Response:
        data = await _json_object(request)
        wamid = await sim.tap(user_of(data), str(_field(data, "choice", str)))
        await sim.settle()
        return JSONResponse({"wamid": wamid})

    async def redeliver(request: Request) -> Response:
        data = await _json_object(request)
        wamid = data.get("wamid")
        if wamid is not None and not isinstance(wamid, str):
            raise ConfigError("field 'wamid' must be a str")
        user = user_of(data) if "user" in data else None
        resent = await sim.redeliver(wamid, user=user)
        await sim.settle()
        return JSONResponse({"wamid": resent})

    async def advance(request: Request) -> Response:
        data = await _json_object(request)
        duration = parse_duration(_field(data, "duration", str))
        if duration.total_seconds() < 0:
            raise ConfigError("field 'duration' can't be negative")
        await sim.advance(duration, reason=f"advance {data['duration']}")
        return JSONResponse({"now": sim.clock.now().isoformat()})

    async def clock(request: Request) -> Response:
        return JSONResponse({"now": sim.clock.now().isoformat()})

    async def outbox(request: Request) -> Response:
        return JSONResponse({"messages": sim.outbox})

    async def events(request: Request) -> Response:
        since = request.query_params.get("since", "0")
        if not since.isdigit():
            raise ConfigError("query parameter 'since' must be a non-negative integer")
        chosen = sim.events[int(since) :]
        return Response(
            b'{"events":['
            + b",".join(EVENT_ADAPTER.dump_json(e) for e in chosen)
            + b'],"next":'
            + str(len(sim.events)).encode()
            + b"}",
            media_type="application/json",
        )

    async def conversation(request: Request) -> Response:
        return Response(sim.conversation().model_dump_json(), media_type="application/json")

    table: list[tuple[str, Handler, str]] = [
        ("/_harness/users", users, "POST"),
        ("/_harness/inbound", inbound, "POST"),
        ("/_harness/tap", tap, "POST"),
        ("/_harness/redeliver", redeliver, "POST"),
        ("/_harness/advance", advance, "POST"),
        ("/_harness/clock", clock, "GET"),
        ("/_harness/outbox", outbox, "GET"),
        ("/_harness/events", events, "GET"),
        ("/_harness/conversation", conversation, "GET"),
    ]
    return [Route(path, guarded(fn), methods=[method]) for path, fn, method in table]


_ERROR = {"$ref": "#/components/schemas/ControlError"}
_JSON_OBJECT: dict[str, Any] = {"type": "object"}


def _answer(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _post(summary: str, body: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    return {
        "post": {
            "summary": summary,
            "tags": ["control"],
            "security": [],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": body}},
            },
            "responses": {
                "200": {"description": "Done", "content": {"application/json": {"schema": answer}}},
                "201": {"description": "Created"},
                "400": {
                    "description": "Bad input",
                    "content": {"application/json": {"schema": _ERROR}},
                },
                "409": {
                    "description": "Not possible now",
                    "content": {"application/json": {"schema": _ERROR}},
                },
            },
        }
    }


def _get(summary: str, answer: dict[str, Any]) -> dict[str, Any]:
    return {
        "get": {
            "summary": summary,
            "tags": ["control"],
            "security": [],
            "responses": {
                "200": {"description": "OK", "content": {"application/json": {"schema": answer}}},
                "400": {
                    "description": "Bad input",
                    "content": {"application/json": {"schema": _ERROR}},
                },
            },
        }
    }


_WAMID = {"type": "object", "properties": {"wamid": {"type": "string"}}}
_USER = {"type": "string", "description": "The user's wa_id or BSUID"}

#: OpenAPI path items describing the control endpoints.
CONTROL_OPENAPI_PATHS: dict[str, dict[str, Any]] = {
    "/_harness/users": _post(
        "Register a simulated user",
        {
            "type": "object",
            "properties": {
                "wa_id": {"type": "string"},
                "user_id": {"type": "string"},
                "name": {"type": "string"},
            },
        },
        _JSON_OBJECT,
    ),
    "/_harness/inbound": _post(
        "A user sends a message (text, or any Meta message object)",
        {
            "type": "object",
            "required": ["user"],
            "properties": {"user": _USER, "text": {"type": "string"}, "message": _JSON_OBJECT},
        },
        _WAMID,
    ),
    "/_harness/tap": _post(
        "A user taps a button or list row of the last interactive message",
        {
            "type": "object",
            "required": ["user", "choice"],
            "properties": {"user": _USER, "choice": {"type": "string"}},
        },
        _WAMID,
    ),
    "/_harness/redeliver": _post(
        "Deliver a user's message again, with identical bytes",
        {"type": "object", "properties": {"user": _USER, "wamid": {"type": "string"}}},
        _WAMID,
    ),
    "/_harness/advance": _post(
        "Move virtual time forward",
        {
            "type": "object",
            "required": ["duration"],
            "properties": {"duration": {"type": "string", "examples": ["25h", "90s"]}},
        },
        {"type": "object", "properties": {"now": {"type": "string"}}},
    ),
    "/_harness/clock": _get(
        "The simulator's current virtual time",
        {"type": "object", "properties": {"now": {"type": "string"}}},
    ),
    "/_harness/outbox": _get("Every send the agent made, as sent", _JSON_OBJECT),
    "/_harness/events": _get("The trace event log (from index ?since=N)", _JSON_OBJECT),
    "/_harness/conversation": _get("The conversation so far, with its turns", _JSON_OBJECT),
}

#: Schemas the control endpoints refer to.
CONTROL_OPENAPI_SCHEMAS: dict[str, dict[str, Any]] = {
    "ControlError": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["message"],
                "properties": {"message": {"type": "string"}},
            }
        },
    }
}
