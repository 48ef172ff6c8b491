"""The booking agent's webhook: a Starlette app Meta (or the harness) talks to.

``GET /webhook`` answers Meta's verification handshake with the challenge
when the verify token matches (403 otherwise). ``POST /webhook`` checks
X-Hub-Signature-256 against the app secret (missing: 401, wrong: 403),
answers 200 at once and hands the body to a background task the agent owns
(:meth:`~agents.booking.core.BookingAgent.spawn`): Meta wants a fast answer
and retries anything else. The same routes are served at ``/`` too, and
``GET /healthz`` says the process is up.

Every boundary comes in through :func:`create_app`: the store, the clock,
the LLM client, the HTTP client for the Graph API and the tool recorder.
The harness passes its virtual clock, an HTTP client that reaches its fake
Graph API in-process, and recorders; production gets the defaults.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Final

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from agents.booking.core import BookingAgent
from agents.booking.front import WhatsAppFront
from agents.booking.graph import GraphClient
from agents.booking.scripted import ScriptedModel
from agents.booking.settings import BookingSettings
from harness.clock import Clock, SystemClock
from harness.exceptions import ConfigError, SignatureError
from harness.llm import AnthropicClient, LLMClient
from harness.remote import HarnessLink, ScenarioScope
from harness.store import Store, open_store
from harness.tool_recorder import ToolRecorder

__all__ = ["MissingSignature", "build_llm", "create_app", "sign", "verify_signature"]

_log = logging.getLogger(__name__)
# Meta's webhooks are about six levels deep; far deeper is not a webhook.
_MAX_DEPTH: Final = 32


class MissingSignature(SignatureError):
    """A webhook POST without an X-Hub-Signature-256 header."""


def sign(app_secret: str, body: bytes) -> str:
    """The X-Hub-Signature-256 value for ``body``: ``sha256=`` and the HMAC's hex digest."""
    return "sha256=" + hmac.new(app_secret.encode(), body, hashlib.sha256).hexdigest()


def verify_signature(app_secret: str, body: bytes, header: str | None) -> None:
    """Check a webhook body against its signature header, in constant time.

    Raises :class:`MissingSignature` without a header and
    :class:`~harness.exceptions.SignatureError` for a malformed or wrong one.
    """
    if header is None or not header.strip():
        raise MissingSignature("the webhook POST has no X-Hub-Signature-256 header")
    if not header.startswith("sha256="):
        raise SignatureError("X-Hub-Signature-256 must start with 'sha256='")
    if not hmac.compare_digest(sign(app_secret, body).encode(), header.strip().encode()):
        raise SignatureError("X-Hub-Signature-256 does not match the body")


class _HideVerifyToken(logging.Filter):
    """Masks the verify token in the request lines a server logs (uvicorn's access log)."""

    _TOKEN = re.compile(r"(hub\.verify_token=)[^&\s\"]*")

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                self._TOKEN.sub(r"\1[REDACTED]", arg) if isinstance(arg, str) else arg
                for arg in record.args
            )
        return True


def _hide_verify_token(logger: logging.Logger) -> None:
    """Keep the handshake's verify token out of ``logger``'s lines (once per logger)."""
    if not any(isinstance(f, _HideVerifyToken) for f in logger.filters):
        logger.addFilter(_HideVerifyToken())


def _readable(value: Any, depth: int = 0) -> Any:
    """``value`` (parsed JSON) with lone surrogates made U+FFFD, so it can be stored and sent.

    JSON may escape half of a UTF-16 pair (``"\\udfff"``); such a string can't
    be encoded as UTF-8, and would fail the message only after it was marked
    as seen. Webhooks are a few levels deep: past ``_MAX_DEPTH`` is refused.
    """
    if depth > _MAX_DEPTH:
        raise ValueError(f"nested more than {_MAX_DEPTH} levels deep")
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            value.encode("utf-8")  # fails on a lone surrogate, and only on one
        except UnicodeEncodeError:
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return value
    if isinstance(value, list):
        return [_readable(item, depth + 1) for item in value]
    if isinstance(value, dict):
        return {_readable(k, depth + 1): _readable(v, depth + 1) for k, v in value.items()}
    return value


def build_llm(settings: BookingSettings) -> LLMClient:
    """The LLM client the settings ask for: the ScriptedModel, or Anthropic's API."""
    if settings.llm == "scripted":
        return ScriptedModel()
    if settings.anthropic_api_key is None:
        raise ConfigError("BOOKING_LLM=anthropic needs ANTHROPIC_API_KEY to be set")
    return AnthropicClient(api_key=settings.anthropic_api_key.get_secret_value())


def create_app(
    settings: BookingSettings,
    *,
    store: Store | None = None,
    clock: Clock | None = None,
    llm: LLMClient | None = None,
    http_client: httpx.AsyncClient | None = None,
    tools: ToolRecorder | None = None,
    link: HarnessLink | None = None,
) -> Starlette:
    """The webhook app; ``app.state.agent`` is its :class:`BookingAgent`, ``app.state.front`` its
    :class:`~agents.booking.front.WhatsAppFront`.

    Defaults: the memory store (or Redis when ``settings.redis_url`` is set),
    real time, the LLM ``settings.llm`` names, and a fresh HTTP client. An
    injected store gets the agent's namespace added, so two apps given the
    same store share users, bookings and locks. With a ``link`` (the agent
    joined to harness runs, see :mod:`harness.remote`) each webhook runs in
    the scenario its ``X-Harness-Scenario`` header names: the store is kept
    apart per scenario, the link's clock and recorders are used unless others
    are given, and the agent announces itself when it starts. Raises
    :class:`~harness.exceptions.ConfigError` when a required setting is missing.
    """
    missing = settings.missing_for_webhook()
    if missing:
        raise ConfigError(f"the booking webhook needs {', '.join(missing)} to be set")
    if clock is None:
        clock = link.clock if link is not None else SystemClock()
    owned_store = store is None
    base = open_store(settings.redis_url, clock=clock) if store is None else store
    agent_store: Store = base.with_namespace(settings.store_namespace)
    if link is not None:
        agent_store = link.scoped(agent_store)
    owned_http = http_client is None
    hooks = {"request": [link.before_request]} if link is not None else {}
    http = http_client or httpx.AsyncClient(timeout=10.0, event_hooks=hooks)
    agent = BookingAgent(
        settings,
        store=agent_store,
        clock=clock,
        llm=llm if llm is not None else build_llm(settings),
        tools=tools,
        working=link.working if link is not None else None,
    )
    graph = GraphClient(
        http,
        clock,
        access_token=settings.access_token.get_secret_value(),
        phone_number_id=settings.phone_number_id,
        graph_url=settings.graph_url,
        api_version=settings.api_version,
        retries=settings.send_retries,
        retry_base=settings.retry_base_seconds,
    )
    front = WhatsAppFront(agent, graph, settings=settings, store=agent_store, clock=clock)
    # The handshake's GET carries the verify token in its query: uvicorn would log it.
    _hide_verify_token(logging.getLogger("uvicorn.access"))
    secret = settings.app_secret.get_secret_value()
    verify_token = settings.verify_token.get_secret_value()

    async def handshake(request: Request) -> Response:
        params = request.query_params
        if (
            params.get("hub.mode") == "subscribe"
            and params.get("hub.verify_token") is not None
            and hmac.compare_digest(params["hub.verify_token"].encode(), verify_token.encode())
        ):
            return PlainTextResponse(params.get("hub.challenge", ""))
        return PlainTextResponse("verification failed", status_code=403)

    async def receive(request: Request) -> Response:
        body = await request.body()
        try:
            verify_signature(secret, body, request.headers.get("x-hub-signature-256"))
        except MissingSignature as exc:
            return PlainTextResponse(str(exc), status_code=401)
        except SignatureError as exc:
            return PlainTextResponse(str(exc), status_code=403)
        try:
            payload: Any = _readable(json.loads(body))
        except RecursionError:
            return PlainTextResponse("the body is nested too deeply", status_code=400)
        except ValueError as exc:
            return PlainTextResponse(f"the body is not readable JSON: {exc}", status_code=400)
        if not isinstance(payload, dict):
            return PlainTextResponse("the body is not a JSON object", status_code=400)
        agent.spawn(front.handle_payload(payload))
        return PlainTextResponse("EVENT_RECEIVED")

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True, "idle": agent.idle, "timers": agent.timers})

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if link is not None:
            await link.announce(settings.phone_number_id)
        yield
        await agent.aclose()
        if link is not None:
            await link.aclose()
        if owned_http:
            await http.aclose()
        if owned_store:
            await base.close()

    app = Starlette(
        routes=[
            Route("/webhook", handshake, methods=["GET"]),
            Route("/webhook", receive, methods=["POST"]),
            Route("/", handshake, methods=["GET"]),
            Route("/", receive, methods=["POST"]),
            Route("/healthz", health, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    if link is not None:
        app.add_middleware(ScenarioScope, link=link)
    app.state.agent = agent
    app.state.front = front
    app.state.settings = settings
    return app
