"""The simulator's control API, under ``/_harness/``, for driving it from outside.

``harness serve`` mounts these beside the fake Graph API so a test written in
any language (or curl) can play the users and read what the agent did:

- ``POST /_harness/users``: register a user (``wa_id``, ``name``, ``user_id``, ``on_whatsapp``);
- ``POST /_harness/inbound``: a user sends a message of any type (``text``
  for short, or Meta's message object in ``message``, checked against what
  Meta sends and completed as Meta would, its message ids written as a wamid
  or as ``last_reply``/``reply N``); answers the wamid;
- ``POST /_harness/media``: upload the file a user sends (the raw bytes, with
  their ``Content-Type``; ``?filename=`` for a document); answers its ``id``
  for an image, audio, video, document or sticker message. A file over
  WhatsApp's limit for its type answers 413, before more of it is read;
- ``POST /_harness/tap``: a user taps a button or list row of the last
  interactive message (``choice``: its id or title);
- ``POST /_harness/redeliver``: Meta delivers a message again, byte for byte;
- ``POST /_harness/advance``: virtual time jumps (``duration`` like ``25h``);
- ``GET /_harness/clock``, ``/_harness/outbox``, ``/_harness/events`` and
  ``/_harness/conversation``: what happened so far, as JSON (as much of it as
  the server keeps: :mod:`channels.whatsapp.retention`). The outbox and the
  event log read from ``?since=N`` (the ``next`` of the previous read; indices
  are absolute, so a read goes on across what was dropped), for one
  ``?user=`` if given, and with ``?wait=S`` wait up to S seconds for
  something new instead of answering with nothing. The conversation is
  everyone's, or with ``?user=`` (a wa_id or BSUID the server knows) that
  user's alone. A read takes no parameter its OpenAPI operation does not list;
- ``GET /_harness/export``: everything kept, as JSON lines; ``POST
  /_harness/clear``: drop it (before given indices, so an export then a
  clear loses nothing).

A call that plays a user (inbound, tap, redeliver) answers once *that user's*
conversation is quiet: on ``harness serve``, once the agent has answered and
gone silent for a few milliseconds, or has stayed silent for 0.3 s; a
``quiet`` given in the body is the silence that ends the call, answered or
not (for an agent that sends a holding message, then thinks). Other users'
conversations and statuses due later don't hold it. ``"wait": false``
answers at once, the message on its way.

Each request body is a model in :mod:`~channels.whatsapp.control.bodies`; it
checks the body and describes it in ``/openapi.json``. Errors answer
``{"error": {"message": ...}}`` with 400 (bad input), 409 (the simulator
can't do it now, e.g. no webhook is configured) or 413 (a JSON body over
1 MiB, a file over WhatsApp's limit). Bodies are read as the fake Graph API
reads them (:mod:`~channels.whatsapp._request_body`): strict UTF-8 JSON,
never a string that can't be written out again, so one bad request can't
break what later ones read.

Given a ``token``, every control endpoint wants ``Authorization: Bearer
<token>`` and answers 401 without it; the fake Graph API keeps its own
access tokens, and ``/openapi.json`` stays open.
"""

from __future__ import annotations

import asyncio
import difflib
import hmac
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp

from channels.whatsapp._request_body import (
    JSON_BODY_LIMIT,
    BadBody,
    BodyTooLarge,
    decode_json,
    nul_in,
    read_limited,
)
from channels.whatsapp.control._shared_reads import (
    conversation_of,
    events_of,
    sends_of,
    shared_clear,
    shared_conversation,
    shared_read,
    shared_snapshot,
)
from channels.whatsapp.control.bodies import (
    CONTROL_ENDPOINTS,
    CONTROL_OPENAPI_PATHS,
    CONTROL_OPENAPI_SCHEMAS,
    Advance,
    Clear,
    ControlErrorBody,
    Inbound,
    Kept,
    NewUser,
    Now,
    Outbox,
    Played,
    Redeliver,
    RegisteredUser,
    Tap,
    UploadedMedia,
    Wamid,
    config_error,
    is_wa_id,
)
from channels.whatsapp.media import (
    MEDIA_KINDS,
    largest_size,
    media_id_in,
    media_kind,
    size_limit,
)
from channels.whatsapp.payloads import PayloadError
from channels.whatsapp.retention import Retention, Snapshot, Window
from channels.whatsapp.shared import LogWindow
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.exceptions import ConfigError, HarnessError, StepError, StoreUnavailable
from harness.trace import EVENT_ADAPTER, Event

__all__ = ["control_app", "control_routes"]

Handler = Callable[[Request], Awaitable[Response]]
_INDEX_DIGITS = 18
# How far virtual time may go: short of the last date, so that what falls due later
# (retries over 7 days, a message's 30-day lifetime) still has a date.
_LATEST = datetime(9000, 1, 1, tzinfo=UTC)
_Body = TypeVar("_Body", bound=BaseModel)
_Item = TypeVar("_Item")
_Where = TypeVar("_Where")
# The longest a read may wait for something new (?wait=).
_LONGEST_WAIT = 60.0
# The query parameters each read takes, as the document describes them.
_QUERY: dict[str, tuple[str, ...]] = {
    path: tuple(p["name"] for p in CONTROL_OPENAPI_PATHS[path]["get"]["parameters"])
    for path in ("/_harness/outbox", "/_harness/events", "/_harness/conversation")
}
# Longer values are cut short in error messages.
_SHOWN = 40


def _shown(value: str) -> str:
    return repr(value if len(value) <= _SHOWN else value[:_SHOWN] + "...")


def _error(status: int, message: str) -> JSONResponse:
    return _answer(ControlErrorBody.saying(message), status)


def _answer(body: BaseModel, status: int = 200) -> JSONResponse:
    return JSONResponse(body.model_dump(mode="json"), status_code=status)


class _TooLarge(HarnessError):
    """A body over its limit: answered 413."""


async def _read(request: Request, model: type[_Body]) -> _Body:
    """The request's body as ``model``, or a :class:`ConfigError` naming what is wrong."""
    try:
        raw = await read_limited(request, JSON_BODY_LIMIT)
    except BodyTooLarge as exc:
        raise _TooLarge(f"the body is over the limit of {exc.limit} bytes") from None
    try:
        data = decode_json(raw or b"{}")
    except BadBody as exc:
        raise ConfigError(f"the body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError("the body must be a JSON object")
    nul = nul_in(data)
    if nul is not None:
        raise ConfigError(f"field {nul!r} holds a NUL character (U+0000), which no message carries")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise config_error(exc) from None


async def _upload(request: Request, sim: WhatsAppSimulator) -> Response:
    """Store the raw body as a user's file, refusing it once it outgrows its type's limit."""
    content_type = request.headers.get("content-type", "")
    kind = media_kind(content_type)
    if kind is None:
        known = ", ".join(sorted(mime for kinds in MEDIA_KINDS.values() for mime in kinds))
        shown = repr(content_type) if content_type else "missing"
        raise ConfigError(f"header 'Content-Type' is {shown}; a user's file is one of: {known}")
    limit = largest_size(kind)
    try:
        data = await read_limited(request, limit)
    except BodyTooLarge:
        return _too_large(kind, limit)
    if not data:
        raise ConfigError("the body is empty: send the file's bytes")
    exact = size_limit(kind, data)
    if len(data) > exact:
        return _too_large(kind, exact, "a static sticker")
    filename = request.query_params.get("filename") or None
    media_id = sim.media.add(data, content_type, filename=filename)
    stored = sim.media.get(media_id)
    assert stored is not None  # just added
    answer = UploadedMedia(
        id=media_id,
        mime_type=stored.mime_type,
        sha256=stored.sha256_base64,
        file_size=stored.file_size,
    )
    return _answer(answer, 201)


def _too_large(kind: str, limit: int, what: str = "") -> JSONResponse:
    message = f"the file is over WhatsApp's limit of {limit} bytes for {what or kind + ' media'}"
    return _error(413, message)


def _reading(request: Request, sim: WhatsAppSimulator) -> tuple[int, float, set[str] | None]:
    """A read's ``since`` (an index), ``wait`` (seconds) and ``user`` (the ids that name them)."""
    params = request.query_params
    since = params.get("since", "0")
    if not (since.isascii() and since.isdigit()):
        raise ConfigError("query parameter 'since' must be a non-negative integer")
    # An index past the end reads nothing; int() refuses numbers of thousands of digits.
    start = int(since) if len(since) <= _INDEX_DIGITS else sys.maxsize
    try:
        wait = float(params.get("wait", "0"))
    except ValueError:
        wait = -1.0
    if not 0 <= wait <= _LONGEST_WAIT:  # NaN fails too
        raise ConfigError(
            f"query parameter 'wait' must be a number of seconds from 0 to {_LONGEST_WAIT:g}"
        )
    key = params.get("user")
    if key is None:
        return start, wait, None
    try:
        user = sim.user(key)
    except ConfigError:
        if is_wa_id(key):  # a number that has not written yet: nothing so far, maybe later
            return start, wait, {key}
        raise ConfigError(f"query parameter 'user': no simulated user {_shown(key)}") from None
    return start, wait, {i for i in (user.wa_id, user.user_id) if i is not None}


def _takes_only(request: Request, path: str) -> None:
    """Refuse a query parameter the read at ``path`` does not take, naming it and those it takes.

    A misspelt ``?sinse=`` would otherwise read everything, as if none were given.
    """
    takes = _QUERY[path]
    for name in request.query_params:
        if name not in takes:
            close = difflib.get_close_matches(name, takes, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            listed = ", ".join(repr(n) for n in takes)
            raise ConfigError(
                f"query parameter {_shown(name)} is not one {path} takes{hint}; it takes {listed}"
            )


async def _conversation_reading(request: Request, sim: WhatsAppSimulator) -> set[str] | None:
    """The ids of the user whose conversation is asked for (everyone's: ``None``).

    The user is given as every reader takes it, a wa_id or a BSUID; one the
    server does not know, or a parameter the read does not take, is refused.
    """
    _takes_only(request, "/_harness/conversation")
    params = request.query_params
    given = params.getlist("user")
    if not given:
        return None
    if len(given) > 1:
        raise ConfigError(f"query parameter 'user' is given {len(given)} times: give one user")
    [key] = given
    if sim.shared is not None and key:  # a user another process may have registered
        await sim.shared.fetch_user(key)
    try:
        user = sim.user(key)
    except ConfigError:
        raise ConfigError(
            f"query parameter 'user': no simulated user {_shown(key)} (a wa_id or BSUID"
            " registered with POST /_harness/users, or that has written in)"
        ) from None
    return {i for i in (user.wa_id, user.user_id) if i is not None}


async def _waiting(
    sim: WhatsAppSimulator, wait: float, chosen: Callable[[], tuple[list[_Item], _Where]]
) -> tuple[list[_Item], _Where]:
    """What ``chosen`` picks now, or, if nothing, at the first event that brings some."""
    found, after = chosen()
    loop = asyncio.get_running_loop()
    end = loop.time() + wait
    while not found and (left := end - loop.time()) > 0:
        await sim.activity.next_change(left)
        found, after = chosen()
    return found, after


async def _shared_reading(
    request: Request, sim: WhatsAppSimulator, path: str
) -> tuple[int, float, set[str] | None]:
    """:func:`_reading` of the read at ``path``, refusing a parameter it does not take.

    The user another process may have registered is known first.
    """
    _takes_only(request, path)
    key = request.query_params.get("user")
    if sim.shared is not None and key:
        await sim.shared.fetch_user(key)
    return _reading(request, sim)


def control_app(sim: WhatsAppSimulator, *, token: str | None = None) -> ASGIApp:
    """The simulator's fake Graph API with the control endpoints and their OpenAPI paths.

    With a ``token``, the control endpoints answer only requests bearing it.
    """
    return sim.build_graph_app(
        control_routes(sim, token=token),
        openapi_paths=CONTROL_OPENAPI_PATHS,
        openapi_schemas=CONTROL_OPENAPI_SCHEMAS,
    )


def control_routes(sim: WhatsAppSimulator, *, token: str | None = None) -> list[Route]:
    """The control endpoints, bound to one simulator (and, given one, to a token)."""
    expected = None if token is None else f"Bearer {token}".encode()

    def guarded(handler: Handler) -> Handler:
        async def endpoint(request: Request) -> Response:
            if expected is not None:
                given = request.headers.get("authorization", "").strip().encode("latin-1")
                if not hmac.compare_digest(given, expected):
                    answer = _error(
                        401,
                        "this server has a control token: send it as "
                        "'Authorization: Bearer <token>'",
                    )
                    answer.headers["WWW-Authenticate"] = 'Bearer realm="harness control"'
                    return answer
            try:
                if sim.shared is None:
                    return await handler(request)
                handled = await handler(request)
                await sim.shared.flush()  # what the call changed is shared before it answers
                return handled
            except ConfigError as exc:
                return _error(400, str(exc))
            except StoreUnavailable as exc:  # the shared state's Redis is away: no answer
                return _error(503, str(exc))
            except _TooLarge as exc:
                return _error(413, str(exc))
            except HarnessError as exc:
                return _error(409, str(exc))

        return endpoint

    async def user_of(key: str) -> str:
        if sim.shared is not None:  # what other processes did a moment ago counts here too
            await sim.shared.caught_up()
            await sim.shared.fetch_user(key)
        try:
            sim.user(key)
        except ConfigError:
            if not is_wa_id(key):
                raise ConfigError(
                    f"no simulated user {_shown(key)}: register it with POST /_harness/users,"
                    " or write as a new phone number (5 to 15 digits)"
                ) from None
            sim.add_user(key)  # a new phone number writes in: Meta would deliver it too
        return key

    async def users(request: Request) -> Response:
        body = await _read(request, NewUser)
        user = sim.add_user(
            body.wa_id, body.name, user_id=body.user_id, on_whatsapp=body.on_whatsapp
        )
        registered = RegisteredUser(
            wa_id=user.wa_id, user_id=user.user_id, name=user.name, on_whatsapp=user.on_whatsapp
        )
        return _answer(registered, 201)

    async def settled(body: Played, key: str | None) -> None:
        """Wait, unless told not to, until the user's conversation is quiet (all, without one)."""
        if not body.wait:
            return
        if key is None:
            await sim.settle()
        else:
            await sim.settle_user(sim.user(key).key, quiet=body.quiet)

    async def inbound(request: Request) -> Response:
        body = await _read(request, Inbound)
        user = await user_of(body.user)
        message = body.message or {"type": "text", "text": {"body": body.text}}
        await sim.media.load(media_id_in(message))  # a file uploaded through another process
        try:
            wamid = await sim.receive(user, message)
        except (PayloadError, StepError) as exc:  # the message, not the simulator, is wrong
            raise ConfigError(str(exc)) from None
        await settled(body, user)
        return _answer(Wamid(wamid=wamid))

    async def media(request: Request) -> Response:
        return await _upload(request, sim)

    async def tap(request: Request) -> Response:
        body = await _read(request, Tap)
        wamid = await sim.tap(await user_of(body.user), body.choice)
        await settled(body, body.user)
        return _answer(Wamid(wamid=wamid))

    async def redeliver(request: Request) -> Response:
        body = await _read(request, Redeliver)
        user = None if body.user is None else await user_of(body.user)
        resent = await sim.redeliver(body.wamid, user=user)
        await settled(body, user or sim.sender_of(resent))
        return _answer(Wamid(wamid=resent))

    async def advance(request: Request) -> Response:
        body = await _read(request, Advance)
        if sim.shared is not None:  # from where another process may have moved it just now
            await sim.shared.sync_clock()
        if body.delta() > _LATEST - sim.clock.now():
            raise ConfigError(
                f"field 'duration': {body.duration} would take the clock past {_LATEST.year},"
                " further than a date can go"
            )
        previous = sim.clock.now()
        await sim.advance(body.delta(), reason=f"advance {body.duration}")
        if sim.shared is not None:
            await sim.shared.advanced(previous)
        return _answer(Now(now=sim.clock.now().isoformat()))

    async def clock(request: Request) -> Response:
        if sim.shared is not None:  # another process may have moved it just now
            await sim.shared.sync_clock()
        return _answer(Now(now=sim.clock.now().isoformat()))

    async def outbox(request: Request) -> Response:
        since, wait, keys = await _shared_reading(request, sim, "/_harness/outbox")
        if sim.shared is not None:
            sends, shared = await shared_read(
                sim, sim.shared, "outbox", since, wait, lambda w: sends_of(w, keys)
            )
            return _answer(
                Outbox(messages=sends, first=shared.first, next=shared.next, dropped=shared.dropped)
            )
        sim.retention.sweep()

        def chosen() -> tuple[list[dict[str, Any]], Window[dict[str, Any]]]:
            window = sim.retention.outbox_since(since)
            sent = list(window.items)
            if keys is not None:
                sent = [m for m in sent if m.get("to") in keys or m.get("recipient") in keys]
            return sent, window

        found, window = await _waiting(sim, wait, chosen)
        answer = Outbox(
            messages=found, first=window.first, next=window.next, dropped=window.dropped
        )
        return _answer(answer)

    async def events(request: Request) -> Response:
        since, wait, keys = await _shared_reading(request, sim, "/_harness/events")
        window: Window[Event] | LogWindow
        if sim.shared is not None:
            found, window = await shared_read(
                sim, sim.shared, "events", since, wait, lambda w: events_of(w, keys)
            )
        else:
            sim.retention.sweep()

            def chosen() -> tuple[list[Event], Window[Event]]:
                window = sim.retention.events_since(since)
                logged = list(window.items)
                if keys is not None:
                    logged = [e for e in logged if e.user in keys]
                return logged, window

            found, window = await _waiting(sim, wait, chosen)
        where = f'"first":{window.first},"next":{window.next},"dropped":{window.dropped}'
        return Response(
            b'{"events":['
            + b",".join(EVENT_ADAPTER.dump_json(e) for e in found)
            + f"],{where}}}".encode(),
            media_type="application/json",
        )

    async def export(request: Request) -> Response:
        if sim.shared is not None:
            kept = await shared_snapshot(sim, sim.shared)
        else:
            kept = sim.retention.snapshot()
        return StreamingResponse(_json_lines(kept), media_type="application/x-ndjson")

    async def clear(request: Request) -> Response:
        body = await _read(request, Clear)
        if sim.shared is not None:
            events, sends = await shared_clear(
                sim,
                sim.shared,
                events_before=body.events_before,
                outbox_before=body.outbox_before,
                messages=body.messages,
            )
            kept = Kept(
                events_first=events[0],
                events_next=events[1],
                outbox_first=sends[0],
                outbox_next=sends[1],
                messages_forgotten=sim.retention.messages_forgotten,
            )
            return _answer(kept)
        sim.retention.clear(
            events_before=body.events_before,
            outbox_before=body.outbox_before,
            messages=body.messages,
        )
        return _answer(_kept(sim.retention))

    async def conversation(request: Request) -> Response:
        keys = await _conversation_reading(request, sim)
        if sim.shared is not None:
            found = await shared_conversation(sim, sim.shared, keys)
        else:
            found = conversation_of(sim.events, sim.users, keys)
        return Response(found.model_dump_json(), media_type="application/json")

    handlers: dict[str, Handler] = {
        "/_harness/users": users,
        "/_harness/inbound": inbound,
        "/_harness/tap": tap,
        "/_harness/redeliver": redeliver,
        "/_harness/media": media,
        "/_harness/advance": advance,
        "/_harness/clock": clock,
        "/_harness/outbox": outbox,
        "/_harness/events": events,
        "/_harness/conversation": conversation,
        "/_harness/export": export,
        "/_harness/clear": clear,
    }
    return [
        Route(endpoint.path, guarded(handlers[endpoint.path]), methods=[endpoint.method])
        for endpoint in CONTROL_ENDPOINTS
    ]


def _kept(retention: Retention) -> Kept:
    return Kept(
        events_first=retention.events_first,
        events_next=retention.events_next,
        outbox_first=retention.outbox_first,
        outbox_next=retention.outbox_next,
        messages_forgotten=retention.messages_forgotten,
    )


# Lines sent in one piece of an export.
_LINES_AT_ONCE = 200


async def _json_lines(kept: Snapshot) -> AsyncIterator[bytes]:
    """An export: a header line, then one line per event and per send, each with its index."""
    header = {
        "export": {
            "at": kept.at.isoformat(),
            "events": {"first": kept.events_first, "next": kept.events_first + len(kept.events)},
            "outbox": {"first": kept.outbox_first, "next": kept.outbox_first + len(kept.outbox)},
        }
    }
    yield _line(header)
    chunk: list[bytes] = []
    for offset, event in enumerate(kept.events):
        index = kept.events_first + offset
        chunk.append(b'{"index":%d,"event":%s}\n' % (index, EVENT_ADAPTER.dump_json(event)))
        if len(chunk) >= _LINES_AT_ONCE:
            yield b"".join(chunk)
            chunk = []
    for offset, body in enumerate(kept.outbox):
        chunk.append(_line({"index": kept.outbox_first + offset, "send": body}))
        if len(chunk) >= _LINES_AT_ONCE:
            yield b"".join(chunk)
            chunk = []
    if chunk:
        yield b"".join(chunk)


def _line(record: object) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
