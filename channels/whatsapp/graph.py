"""The fake Graph API: the WhatsApp Cloud API endpoints a bot calls, as a Starlette app.

``create_graph_app`` serves, for any version written ``v<major>.<minor>``:

- ``POST /{version}/{phone_number_id}/messages``: messages, read receipts
  and typing indicators, validated by :class:`SendValidator`, then handed to
  the :class:`SendHandler` (the simulator core decides window, rate limits
  and delivery), answered in Meta's success shape;
- ``POST /{version}/{phone_number_id}/media``, ``GET`` and ``DELETE
  /{version}/{media_id}`` and the download URLs ``GET /_media/{token}``;
- what a bot reads of its business, the users it blocks and where its webhooks
  go (:mod:`~channels.whatsapp.account`, :mod:`~channels.whatsapp.blocking`,
  :mod:`~channels.whatsapp.subscriptions`);
- ``GET /openapi.json``, the document describing all of it (no token needed).

Every Graph endpoint wants an access token, as ``Authorization: Bearer`` or
the ``access_token`` query parameter. Every failure answers Meta's error
envelope with a fresh ``fbtrace_id``; a bad request never answers 500. Only a
bug in the simulator does: code 131000, logged with its traceback.

Any version written ``v<major>.<minor>`` is served, as Meta does: a call to
a version past its two years is served by the oldest version still live, so
a bot or library that names an old one (v14.0 and v15.0 are still common)
works on. A path without a version whose first segment is an id
(``/{phone_number_id}/messages``) is served at the simulator's version, as
Graph serves an unversioned call at the app's. A path Graph can't place
answers as Graph does (third-party reports; Meta documents neither): an id
that names nothing the token may use (a wrong ``phone_number_id``, say), or
a method its endpoint does not take, answers 400 ``GraphMethodException``,
code 100, subcode 33 ("Unsupported post request. Object with ID '...' does
not exist ..."); more than an object and one edge, or a first segment that
is not a version written ``v<major>.<minor>`` (``v25``, ``3.0``,
``latest``) with more than one after it, answers 400, code 2500 ("Unknown
path components: /..."). The simulator's own paths (``/_harness/``,
``/_media/``, ``/openapi.json``) answer 404 and 405 as HTTP has them.

Bodies are read as Graph reads them: a send is JSON
(``application/json``) or form fields (``application/x-www-form-urlencoded``
or ``multipart/form-data``, an object's value written as JSON; in a JSON
body too, a message object may be given as its JSON text); any other
``Content-Type`` is refused with code 100. An upload's file type is its
part's ``Content-Type``, or a ``type`` field where given. A body over its
limit (1 MiB for a send, 101 MiB for an upload: the largest file WhatsApp
takes, plus room for the form) answers 413, refused by its
``Content-Length`` or as soon as it outgrows the limit, before it is read
whole (see :mod:`~channels.whatsapp._request_body`). A NUL character in a
send answers 131009 naming the field.
"""

from __future__ import annotations

import functools
import json
import logging
import random
import re
import sys
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Protocol

from starlette.applications import Starlette
from starlette.datastructures import Headers, UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartParser
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from channels.whatsapp._defaults import API_VERSION, WABA_ID
from channels.whatsapp._graph_app import ANY_METHOD, GraphApp, SuccessJSON
from channels.whatsapp._registration import not_registered
from channels.whatsapp._request_body import (
    FORM_TYPES,
    JSON_BODY_LIMIT,
    BadBody,
    BodyTooLarge,
    as_seen,
    form_fields,
    limited_stream,
    media_type,
    nul_in,
    objects_written_as_text,
    read_limited,
    upload_type,
)
from channels.whatsapp._routing_errors import (
    graph_path,
    unknown_path,
    unplaced,
    unsupported_method,
)
from channels.whatsapp._tokens import authenticate
from channels.whatsapp.account import AccountAPI, BusinessAccount, unknown_object
from channels.whatsapp.blocking import Blocklist
from channels.whatsapp.errors import (
    GenericError,
    GraphAPIError,
    InvalidParameter,
    MediaUploadError,
    NoSuchObject,
    ParameterInvalid,
    ServiceUnavailable,
)
from channels.whatsapp.ids import new_fbtrace_id, new_wamid
from channels.whatsapp.media import MediaStore, largest_size, media_id_in
from channels.whatsapp.openapi import VERSION_PATTERN, build_openapi
from channels.whatsapp.sends.problems import request_error
from channels.whatsapp.subscriptions import CallbackHook, SubscriptionsAPI, business_routes
from channels.whatsapp.templates import TemplateRegistry
from channels.whatsapp.validation import (
    DEFAULT_LIMITS,
    MESSAGE_TYPES,
    SendLimits,
    SendValidator,
    ValidatedSend,
    parse_json_body,
)
from harness.clock import Clock
from harness.exceptions import StoreUnavailable

__all__ = [
    "AcceptAll",
    "RefusalHandler",
    "SendHandler",
    "SendOutcome",
    "create_graph_app",
    "success_body",
]

_log = logging.getLogger(__name__)
_VERSION: Final = re.compile(VERSION_PATTERN)
# The largest upload read: the largest file WhatsApp takes (a document) and room for the form.
_UPLOAD_LIMIT: Final = largest_size("document") + 1024 * 1024


@dataclass(frozen=True, slots=True)
class SendOutcome:
    """What the simulator made of an accepted send.

    ``wamid`` is the new message's id (``None`` for read receipts and typing
    indicators). ``wa_id`` replaces the normalized number echoed in
    ``contacts[0].wa_id`` (Meta echoes the user's canonical id), and ``user_id``
    the BSUID echoed for a send by ``recipient``. ``message_status`` is echoed
    on ``messages[0]``; templates get ``"accepted"`` when it is unset.
    """

    wamid: str | None = None
    wa_id: str | None = None
    user_id: str | None = None
    message_status: str | None = None


class SendHandler(Protocol):
    """Decides what happens to a valid send: returns its outcome or raises a ``GraphAPIError``."""

    async def __call__(self, send: ValidatedSend) -> SendOutcome:
        """Accept ``send`` (window, rate limits, delivery) or raise Meta's error for it."""
        ...


@dataclass
class AcceptAll:
    """A handler that accepts every send, records it, and gives messages fresh wamids."""

    rng: random.Random = field(default_factory=lambda: random.Random(0))
    sends: list[ValidatedSend] = field(default_factory=list)

    async def __call__(self, send: ValidatedSend) -> SendOutcome:
        """Record ``send``; a message gets a new wamid, a read receipt none."""
        self.sends.append(send)
        if send.action != "message":
            return SendOutcome()
        return SendOutcome(wamid=new_wamid(self.rng, send.to or "", outbound=True))


def success_body(send: ValidatedSend, outcome: SendOutcome) -> dict[str, Any]:
    """Meta's HTTP 200 body for an accepted send.

    A message answers ``contacts`` (the input as sent, with the ``wa_id``, or
    ``user_id`` for a BSUID send) and ``messages`` with the wamid; a read
    receipt or typing indicator answers ``{"success": true}``.
    """
    if send.action != "message":
        return {"success": True}
    if outcome.wamid is None:
        raise ValueError("the send handler accepted a message without giving it a wamid")
    contact: dict[str, Any] = {"input": send.input}
    if send.recipient is not None:
        contact["user_id"] = outcome.user_id or send.recipient
    elif send.to is not None:
        contact["wa_id"] = outcome.wa_id or send.to
    message: dict[str, Any] = {"id": outcome.wamid}
    status = outcome.message_status or ("accepted" if send.type == "template" else None)
    if status is not None:
        message["message_status"] = status
    if send.group_id is not None:
        message["group_id"] = send.group_id
    return {"messaging_product": "whatsapp", "contacts": [contact], "messages": [message]}


#: Told about every send the API refused: the phone_number_id of its path, the
#: body as sent (``{"raw": text}`` when it was not a JSON object) and the error.
RefusalHandler = Callable[[str, Mapping[str, Any], GraphAPIError], None]


class _GraphAPI:
    """The endpoints, sharing the configuration ``create_graph_app`` was given."""

    def __init__(
        self,
        *,
        tokens: Mapping[str, datetime | None],
        phone_numbers: Mapping[str, str],
        on_send: SendHandler,
        media: MediaStore,
        clock: Clock,
        validator: SendValidator,
        rng: random.Random,
        openapi: Callable[[], dict[str, Any]],
        account: BusinessAccount,
        subscriptions: tuple[str | None, CallbackHook | None],
        on_refuse: RefusalHandler | None = None,
    ) -> None:
        self.account = AccountAPI(account, self.check)
        app_secret, on_callback = subscriptions
        self.subscriptions = (
            None
            if app_secret is None
            else SubscriptionsAPI(account, app_secret, self.check, self.check_version, on_callback)
        )
        self.on_refuse = on_refuse
        self.tokens = tokens
        self.phone_numbers = phone_numbers
        self.on_send = on_send
        self.store = media
        self.clock = clock
        self.validator = validator
        self.rng = rng
        self._build_openapi = openapi
        self._openapi: dict[str, Any] | None = None

    # -- rendering --------------------------------------------------------------

    def error(self, exc: GraphAPIError, headers: Mapping[str, str] | None = None) -> JSONResponse:
        """Meta's error envelope for ``exc``, at its HTTP status."""
        body = exc.to_envelope()
        trace = exc.fbtrace_id or new_fbtrace_id(self.rng)
        body["error"]["fbtrace_id"] = trace
        extra = {"x-fb-trace-id": trace, **(headers or {})}
        if exc.http_status == 401:
            extra.setdefault("WWW-Authenticate", 'OAuth "Facebook Platform" "invalid_token"')
        elif isinstance(exc, NoSuchObject):  # Graph repeats its words in the header
            quoted = json.dumps(exc.message)  # ASCII, quoted, escaped: a header's quoted text
            challenge = f'OAuth "Facebook Platform" "invalid_request" {quoted}'
            extra.setdefault("WWW-Authenticate", challenge)
        return JSONResponse(body, status_code=exc.http_status, headers=extra)

    def guarded(
        self, endpoint: Callable[[Request], Awaitable[Response]]
    ) -> Callable[[Request], Awaitable[Response]]:
        """Wrap an endpoint so every failure answers Meta's envelope (500 only for bugs)."""

        async def run(request: Request) -> Response:
            try:
                return await endpoint(request)
            except GraphAPIError as exc:
                return self.error(exc)
            except StoreUnavailable as exc:  # the shared state's Redis (serve --redis) is away
                return self.error(ServiceUnavailable(details=str(exc)))
            except Exception:
                _log.exception("the fake Graph API failed on %s %s", request.method, request.url)
                return self.error(GenericError(details="The simulator failed on this request."))

        return run

    async def http_error(self, request: Request, exc: Exception) -> Response:
        """Routing errors (no such path, wrong method) in Meta's envelope."""
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        headers = dict(exc.headers or {}) if isinstance(exc, HTTPException) else {}
        if status in (404, 405) and graph_path(request.url.path):
            return self.error(unplaced(request, wrong_method=status == 405))
        if status == 405:
            return self.error(unsupported_method(request), headers)
        if status == 404:
            return self.error(unknown_path(request.url.path))
        details = f"The request could not be handled ({status})."
        error = InvalidParameter(message=f"(#100) {details}", details=details, http_status=status)
        return self.error(error, headers)

    async def internal_error(self, request: Request, exc: Exception) -> Response:
        """Whatever escaped the endpoints: 131000, logged (Starlette also re-raises it)."""
        return self.error(GenericError(details="The simulator failed on this request."))

    # -- checks shared by the endpoints -----------------------------------------

    def check_version(self, request: Request) -> None:
        """Refuse a path whose first segment is not a version such as ``v25.0``.

        Graph reads such a segment as an object's id, and what follows it as
        path components it can't place (2500).
        """
        version = request.path_params["version"]
        if _VERSION.fullmatch(version) is None:
            raise unplaced(request)

    def check(self, request: Request) -> None:
        """The checks every endpoint makes first: the path's version, then the access token."""
        self.check_version(request)
        self.authenticate(request)

    def authenticate(self, request: Request) -> None:
        """Require a known, unexpired access token (header first, then query parameter)."""
        authenticate(request, self.tokens, self.clock.now())

    def phone_number(self, request: Request) -> str:
        """The path's phone_number_id, which must be one of the business's numbers."""
        phone_number_id: str = request.path_params["phone_number_id"]
        if phone_number_id not in self.phone_numbers:
            raise unknown_object(request.method, phone_number_id)
        return sys.intern(phone_number_id)  # one of a few: one string each, for every send

    # -- endpoints --------------------------------------------------------------

    async def send(self, request: Request) -> Response:
        """``POST /{version}/{phone_number_id}/messages``."""
        self.check_version(request)
        try:
            self.authenticate(request)
            phone_number_id = self.phone_number(request)
        except GraphAPIError as exc:
            # A wrong token or number is the most common misconfiguration: the refusal goes
            # in the trace too, or the agent would only seem to have said nothing.
            if self.on_refuse is not None:
                number = request.path_params["phone_number_id"]
                self.on_refuse(number, await as_seen(request), exc)
            raise
        content_type = media_type(request.headers)
        if content_type != "application/json" and content_type not in FORM_TYPES:
            shown = repr(content_type) if content_type else "missing"
            raise request_error(
                "",
                f"the Content-Type is {shown}: a send is application/json,"
                " or form fields (application/x-www-form-urlencoded, multipart/form-data)",
            )
        try:
            raw = await read_limited(request, JSON_BODY_LIMIT)
        except BodyTooLarge as exc:
            raise _too_large_send(exc.limit) from None
        body: object = None
        try:
            if content_type == "application/json":
                body = objects_written_as_text(parse_json_body(raw), _STRUCTURED)
            else:
                body = await _form(raw, request.headers)
            if phone_number_id in self.account.account.deregistered:  # refused, and in the trace
                raise not_registered()
            await self.store.load(media_id_in(body))  # uploaded through another process, maybe
            # One string for every send through a version, not one each (each send is kept).
            version = sys.intern(request.path_params["version"])
            send = self.validator.validate(phone_number_id, body, api_version=version)
            nul = nul_in(body)
            if nul is not None:
                problem = "must not hold the NUL character (U+0000)"
                raise ParameterInvalid(details=f"{nul}: {problem}" if nul else problem)
            outcome = await self.on_send(send)
        except GraphAPIError as exc:
            if self.on_refuse is not None:
                seen = body if isinstance(body, dict) else {"raw": raw.decode("utf-8", "replace")}
                self.on_refuse(phone_number_id, seen, exc)
            raise
        return SuccessJSON(success_body(send, outcome))

    async def upload(self, request: Request) -> Response:
        """``POST /{version}/{phone_number_id}/media`` (multipart form)."""
        self.check_version(request)
        self.authenticate(request)
        phone_number_id = self.phone_number(request)
        if media_type(request.headers) != "multipart/form-data":
            raise request_error("", "media uploads are multipart/form-data")
        try:
            async with aclosing(limited_stream(request, _UPLOAD_LIMIT)) as stream:
                form = await MultiPartParser(
                    request.headers, stream, max_files=1, max_fields=16
                ).parse()
        except BodyTooLarge as exc:
            raise MediaUploadError(
                details=f"file: the upload is over {exc.limit} bytes; WhatsApp takes documents"
                f" up to {largest_size('document')} bytes and smaller files of other kinds",
                http_status=413,
            ) from None
        except Exception as exc:  # python-multipart raises several kinds on bad bodies
            raise request_error("", f"the multipart body can't be read ({exc})") from None
        try:
            # Graph reads a parameter from the query string as from the body.
            product = form.get("messaging_product", request.query_params.get("messaging_product"))
            if product != "whatsapp":
                raise request_error("messaging_product", 'required, and must be "whatsapp"')
            upload = form.get("file")
            if not isinstance(upload, UploadFile):
                raise request_error("file", "required: the file to upload, as a file part")
            mime_type = upload_type(form.get("type"), upload)
            data = await upload.read()
            media_id = self.store.upload(
                data, mime_type, filename=upload.filename, phone_number_id=phone_number_id
            )
        finally:
            await form.close()
        await self.store.published()  # the id works through every process once answered
        return JSONResponse({"id": media_id})

    async def media(self, request: Request) -> Response:
        """``GET /{version}/{media_id}`` (metadata and a fresh download URL) and ``DELETE``."""
        self.check_version(request)
        self.authenticate(request)
        media_id: str = request.path_params["media_id"]
        if request.method == "GET" and (node := self.account.node(request, media_id)) is not None:
            return node  # the number or the account
        if request.method == "POST":  # the number's settings: its webhook URL
            if media_id not in self.phone_numbers or self.subscriptions is None:
                raise unknown_object("POST", media_id)
            return await self.subscriptions.phone_settings(request, media_id)
        await self.store.load(media_id)
        found = self.store.get(media_id)
        owner = request.query_params.get("phone_number_id")
        if found is None and request.method == "GET":
            template = self.account.template_node(request, media_id)
            if template is not None:
                return template
        if found is None or (owner is not None and found.phone_number_id not in (None, owner)):
            raise unknown_object(request.method, media_id)
        if request.method == "DELETE":
            self.store.delete(media_id)
            await self.store.published()
            return JSONResponse({"success": True})
        described = self.store.describe(found)
        await self.store.published()  # the download URL works through every process
        return JSONResponse(described)

    def method_not_allowed(self, request: Request, allowed: str) -> Response | None:
        """Refuse a method ``allowed`` leaves out, for a route that takes every method.

        Such a route takes them all so that ``/{version}/{media_id}`` never
        does. A Graph path answers as Graph does (400, subcode 33), the
        simulator's own a 405.
        """
        if request.method in allowed.split(", "):
            return None
        if graph_path(request.url.path):
            return self.error(unplaced(request, wrong_method=True))
        return self.error(unsupported_method(request), {"Allow": allowed})

    async def download(self, request: Request) -> Response:
        """``GET /_media/{token}``: the file behind a download URL, while it is valid."""
        refused = self.method_not_allowed(request, "GET, HEAD")
        if refused is not None:
            return refused
        self.authenticate(request)
        await self.store.load_link(request.path_params["token"])
        media = self.store.download(request.path_params["token"])
        if media is None:
            details = "This media URL does not exist or has expired; ask the media id again."
            raise InvalidParameter(message=f"(#100) {details}", details=details, http_status=404)
        return Response(media.data, media_type=media.mime_type)

    async def versionless(self, request: Request) -> Response:
        """Paths whose first segment is neither a version nor an id: Graph can't place them."""
        raise unplaced(request)

    async def document(self, request: Request) -> Response:
        """``GET /openapi.json``."""
        return self.method_not_allowed(request, "GET, HEAD") or JSONResponse(self.openapi)

    @property
    def openapi(self) -> dict[str, Any]:
        """The OpenAPI document, built when first asked for: most simulators never serve it."""
        if self._openapi is None:
            self._openapi = self._build_openapi()
        return self._openapi


# The fields of a send that hold an object or array: the message's own, and its context.
_STRUCTURED: Final = frozenset({*MESSAGE_TYPES, "context"})


def _too_large_send(limit: int) -> GraphAPIError:
    details = f"the request body is over the limit of {limit} bytes for a send"
    return InvalidParameter(message=f"(#100) {details}", details=details, http_status=413)


async def _form(raw: bytes, headers: Headers) -> dict[str, object]:
    try:
        return await form_fields(raw, headers)
    except BadBody as exc:
        raise request_error("", str(exc)) from None


def create_graph_app(
    *,
    access_tokens: Collection[str] | Mapping[str, datetime | None],
    phone_numbers: Mapping[str, str],
    on_send: SendHandler,
    media: MediaStore,
    clock: Clock,
    templates: TemplateRegistry | None = None,
    public_url: str = "http://graph.local",
    limits: SendLimits = DEFAULT_LIMITS,
    rng: random.Random | None = None,
    routes: Sequence[BaseRoute] = (),
    openapi_paths: Mapping[str, Mapping[str, Any]] | None = None,
    openapi_schemas: Mapping[str, Mapping[str, Any]] | None = None,
    on_refuse: RefusalHandler | None = None,
    payments: bool = False,
    account: BusinessAccount | None = None,
    api_version: str = API_VERSION,
    app_secret: str | None = None,
    on_callback: CallbackHook | None = None,
    blocklist: Blocklist | None = None,
) -> Starlette:
    """Build the fake Graph API.

    ``access_tokens`` are the tokens it accepts; given as a mapping, each
    token's value is the instant (on ``clock``) it expires, after which it
    answers 190 with subcode 463 (``None``: never). ``phone_numbers`` maps each
    business phone_number_id to its display number. ``routes`` (the
    harness's control endpoints) are matched before the Graph routes, and
    ``openapi_paths`` / ``openapi_schemas`` describe them in ``/openapi.json``.
    ``rng`` draws the ``fbtrace_id`` of error bodies (seeded with 0 if unset).
    ``on_refuse`` hears of every send refused: for its token or number, for its
    body, for Meta's limits, or by the handler itself.
    ``payments`` says whether the business may send ``order_details`` and
    ``order_status`` messages (see :class:`SendValidator`). ``account`` is the
    business the read endpoints describe (:mod:`~channels.whatsapp.account`;
    by default one holding ``phone_numbers`` and ``templates``). A call without
    a version (``/{phone_number_id}/messages``) is served at ``api_version``,
    as Graph serves one at the app's version. Given ``app_secret``, a bot can
    register its webhook URL (:mod:`~channels.whatsapp.subscriptions`), and
    ``on_callback`` is told. ``blocklist`` keeps the users the business blocks.
    """
    tokens = (
        dict(access_tokens)
        if isinstance(access_tokens, Mapping)
        else dict.fromkeys(access_tokens, None)
    )
    if account is None:
        account = BusinessAccount(
            WABA_ID, dict(phone_numbers), templates or TemplateRegistry.default()
        )
    api = _GraphAPI(
        tokens=tokens,
        phone_numbers=dict(phone_numbers),
        on_send=on_send,
        media=media,
        clock=clock,
        validator=SendValidator(
            templates=templates, media_exists=media.exists, limits=limits, payments=payments
        ),
        rng=random.Random(0) if rng is None else rng,
        openapi=functools.partial(
            build_openapi,
            extra_paths=openapi_paths,
            extra_schemas=openapi_schemas,
            limits=limits,
            server_url=public_url,
        ),
        on_refuse=on_refuse,
        account=account,
        subscriptions=(app_secret, on_callback),
    )
    send = api.guarded(api.send)
    graph_routes = [
        Route("/openapi.json", api.guarded(api.document), methods=ANY_METHOD),
        Route("/_media/{token}", api.guarded(api.download), methods=ANY_METHOD),
        Route("/{version}/{phone_number_id}/messages", send, methods=["POST"]),
        Route("/{version}/{phone_number_id}/media", api.guarded(api.upload), methods=["POST"]),
        *business_routes(
            api.guarded, api.account, api.subscriptions, api.method_not_allowed, blocklist
        ),
        Route("/{version}/{media_id}", api.guarded(api.media), methods=["GET", "POST", "DELETE"]),
        *(
            Route(path, api.guarded(api.versionless), methods=ANY_METHOD)
            for path in ("/{phone_number_id}/messages", "/{phone_number_id}/media", "/{object_id}")
        ),
    ]
    app = GraphApp(
        send=send,
        routes=[*routes, *graph_routes],
        extra=routes,
        exception_handlers={HTTPException: api.http_error, Exception: api.internal_error},
        version=api_version,
    )
    app.state.validator = api.validator
    app.state.media = media
    return app
