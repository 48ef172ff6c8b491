"""Recording a live WhatsApp chat: a proxy between Meta, the agent and the Graph API.

The proxy has two faces on one port. Meta-facing, ``/webhook`` takes Meta's
verification handshake (forwarded to the agent, its answer relayed) and
Meta's webhook POSTs: the signature is checked first (a missing or wrong one
answers 403, and nothing is recorded or forwarded), then each update is
recorded with its receive time, the identical bytes and signature go to the
agent, and the agent's status code goes back to Meta, so Meta's retries keep
their meaning. Graph-facing, the Graph API's routes are forwarded to the
upstream Graph API and its answer returned unchanged (other paths get 404,
and a call whose token the Graph API refuses is answered but not recorded);
sends are recorded as trace events, and every exchange (status, body,
latency) as a span. The one change
made to an answer: the download URL in a media object points at the proxy,
so the download comes through it too (and the file lands in the fixture).

The fixture is the one ``harness record`` writes, built as the chat goes:
each event is appended and flushed as it happens, so a crash keeps
everything up to the event in flight; ``conversation.json`` is written at
shutdown. Secrets never land in it: the app secret, the verify token, every
access token the Graph API accepted from the agent and ``Authorization``
headers are redacted at write time. With a pseudonym key, users' numbers, ids and names are replaced
in everything written (:mod:`channels.whatsapp.pseudonyms`); what the agent
receives is never changed.

An agent whose model SDK points at the proxy (``ANTHROPIC_BASE_URL``, or
``OPENAI_BASE_URL`` with ``/v1``) has its model calls recorded into the
fixture on their way to the provider, and one that exports its OpenTelemetry
spans to the proxy's ``/v1/traces`` has its tool calls recorded as events
(:mod:`harness.endpoints`). An agent that records its model and tool calls into a
:class:`~harness.store.Store` under a fixture id (see
:meth:`harness.recording.Recording.in_store`) has them collected into the
same fixture (:class:`RecordingCollector`), so the chat replays fully offline.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import re
import secrets
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Final
from urllib.parse import urlsplit

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from channels.whatsapp.errors import ServiceUnavailable
from channels.whatsapp.proxy_collector import RecordingCollector
from channels.whatsapp.proxy_exchange import GraphExchange, parse_json_or_none
from channels.whatsapp.proxy_record import ProxyRecorder
from channels.whatsapp.proxy_settings import ProxySettings
from channels.whatsapp.signing import SIGNATURE_HEADER, verify
from harness._tasks import cancel_until_done
from harness.endpoints import Endpoints
from harness.exceptions import SignatureError
from harness.recording import Recording
from harness.tape import RecordMode

__all__ = [
    "WEBHOOK_PATH",
    "create_proxy_app",
]

_log = logging.getLogger(__name__)

#: Where the real Graph API lives.
#: The Meta-facing path: the callback URL to give Meta ends with it.
WEBHOOK_PATH: Final = "/webhook"
_FOREIGN_MEDIA: Final = "/_proxy/media"
_MEDIA_OBJECT: Final = re.compile(r"/v[0-9]+\.[0-9]+/([0-9]+)")
# The Graph API routes an agent uses: /{version}/{id} (a media object) and
# /{version}/{id}/{edge} (messages, media, a profile, templates). Nothing else
# is forwarded, so the proxy is no open relay and nothing else enters a recording.
_GRAPH_ROUTE: Final = re.compile(r"/v[0-9]+\.[0-9]+/[A-Za-z0-9_.\-]+(?:/[a-z_]+)?")
# Meta's answer to a token it does not accept.
_INVALID_TOKEN: Final = 190
_HOP_BY_HOP: Final = frozenset(
    {
        "connection",
        "content-encoding",
        "content-length",
        "host",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "accept-encoding",
    }
)


# -- the app -----------------------------------------------------------------------------------


def _forward_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() not in _HOP_BY_HOP}


def _relay(content: bytes, status: int, headers: httpx.Headers) -> Response:
    response = Response(content=content, status_code=status)
    response.raw_headers = [
        *(h for h in response.raw_headers if h[0] == b"content-length"),
        *(
            (k.lower().encode("latin-1"), v.encode("latin-1"))
            for k, v in headers.multi_items()
            if k.lower() not in _HOP_BY_HOP
        ),
    ]
    return response


def _token_of(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").strip().partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return request.query_params.get("access_token")


def _refused_token(status: int, content: bytes) -> bool:
    """Whether the Graph API answered that the call's access token is not valid."""
    if status != 401:
        return False
    data = parse_json_or_none(content)
    error = data.get("error") if isinstance(data, dict) else None
    return not isinstance(error, dict) or error.get("code") in (_INVALID_TOKEN, None)


def _unavailable(problem: str, status: int) -> tuple[bytes, int]:
    error = ServiceUnavailable(details=f"The proxy could not reach the Graph API: {problem}")
    return json.dumps(error.to_envelope()).encode(), status


class _Proxy:
    """The endpoints, sharing the settings, the recorder and the HTTP clients."""

    def __init__(
        self,
        settings: ProxySettings,
        recorder: ProxyRecorder,
        agent: httpx.AsyncClient,
        upstream: httpx.AsyncClient,
        collector: RecordingCollector | None,
    ) -> None:
        self.settings = settings
        self.recorder = recorder
        self.agent = agent
        self.upstream = upstream
        self.collector = collector
        self.base = settings.upstream_graph.rstrip("/")
        self._origin = urlsplit(self.base)[:2]
        self._downloads: dict[str, str] = {}  # upstream download path -> media id
        self._foreign: dict[str, tuple[str, str]] = {}  # token -> (download URL, media id)

    async def drain(self) -> None:
        if self.collector is not None:
            await self.collector.drain(self.recorder)

    # -- Meta-facing ---------------------------------------------------------------------------

    async def handshake(self, request: Request) -> Response:
        """``GET /webhook``: Meta's verification, answered by the agent."""
        token = request.query_params.get("hub.verify_token", "")
        if not hmac.compare_digest(token.encode(), self.settings.verify_token.encode()):
            return PlainTextResponse("verification failed", status_code=403)
        separator = "&" if "?" in self.settings.agent_url else "?"
        try:
            answer = await self.agent.get(
                f"{self.settings.agent_url}{separator}{request.url.query}"
            )
        except httpx.HTTPError as exc:
            return PlainTextResponse(f"the agent could not be reached: {exc}", status_code=502)
        return _relay(answer.content, answer.status_code, answer.headers)

    async def webhook(self, request: Request) -> Response:
        """``POST /webhook``: verify, record, forward the same bytes, answer the agent's code."""
        at = self.recorder.clock.now()
        body = await request.body()
        try:
            verify(body, request.headers.get(SIGNATURE_HEADER), self.settings.app_secret)
        except SignatureError as exc:
            return PlainTextResponse(f"refused: {exc}", status_code=403)
        await self.drain()
        delivery = self.recorder.webhook(body, at)
        started = time.perf_counter()
        try:
            answer = await self.agent.post(
                self.settings.agent_url, content=body, headers=_forward_headers(request.headers)
            )
        except httpx.TimeoutException:
            self.recorder.delivered(delivery, None, "timeout", _ms(started))
            return PlainTextResponse("the agent did not answer in time", status_code=504)
        except httpx.HTTPError as exc:
            problem = f"{type(exc).__name__}: {exc}"
            self.recorder.delivered(delivery, None, problem, _ms(started))
            return PlainTextResponse(f"the agent could not be reached: {problem}", status_code=502)
        self.recorder.delivered(delivery, answer.status_code, None, _ms(started))
        return _relay(answer.content, answer.status_code, answer.headers)

    # -- Graph-facing ------------------------------------------------------------------------------

    async def graph(self, request: Request) -> Response:
        """Any other path: forwarded upstream, recorded, answered as the upstream answered."""
        path = request.url.path
        media_id = self._downloads.get(path)
        if media_id is None and not _GRAPH_ROUTE.fullmatch(path):
            return PlainTextResponse(f"{path} is not a Graph API route", status_code=404)
        query = f"?{request.url.query}" if request.url.query else ""
        return await self._forward(request, f"{self.base}{path}{query}", media_id)

    async def foreign_media(self, request: Request) -> Response:
        """A media download URL on another host than the Graph API (Meta's CDN)."""
        found = self._foreign.get(request.path_params["token"])
        if found is None:
            return PlainTextResponse("no such media download", status_code=404)
        return await self._forward(request, found[0], found[1])

    async def _forward(self, request: Request, url: str, media_id: str | None) -> Response:
        at = self.recorder.clock.now()
        body = await request.body()
        token = _token_of(request)
        await self.drain()  # the agent's model and tool calls come before what it sends
        started = time.perf_counter()
        status: int | None = None
        error: str | None = None
        headers = httpx.Headers({"content-type": "application/json"})
        try:
            answer = await self.upstream.request(
                request.method, url, content=body, headers=_forward_headers(request.headers)
            )
        except httpx.TimeoutException:
            error = "timeout"
            content, answered = _unavailable("no answer in time", 504)
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"
            content, answered = _unavailable(error, 502)
        else:
            status = answered = answer.status_code
            content, headers = answer.content, answer.headers
        latency = _ms(started)
        if (
            status is not None
            and _refused_token(status, content)
            and not (token and self.recorder.knows_token(token))
        ):
            # A caller whose token the Graph API never accepted is not the agent (the agent's
            # own token expiring mid-chat is still recorded). Answered, never recorded, and its
            # token is not learned as a secret (it could be any short string).
            _log.warning("a Graph API call with a token never accepted was not recorded")
            return _relay(content, answered, headers)
        if token:
            self.recorder.learn_token(token)
        path = request.url.path
        match = _MEDIA_OBJECT.fullmatch(path)
        if request.method == "GET" and match and answered == 200:
            content = self._rewrite_media(content, request, match.group(1))
        if media_id is not None and answered == 200:
            self.recorder.media(media_id, content, headers.get("content-type", ""))
        self.recorder.graph(
            GraphExchange(
                method=request.method,
                path=path,
                at=at,
                latency_ms=latency,
                request_body=body,
                request_type=request.headers.get("content-type", ""),
                status_code=status,
                response_body=content,
                response_type=headers.get("content-type", ""),
                answered=answered,
                error=error,
            )
        )
        return _relay(content, answered, headers)

    def _rewrite_media(self, content: bytes, request: Request, media_id: str) -> bytes:
        """Point a media object's download URL at the proxy."""
        data = parse_json_or_none(content)
        url = data.get("url") if isinstance(data, dict) else None
        if not isinstance(url, str) or not isinstance(data, dict):
            return content
        base = (self.settings.public_url or f"{request.url.scheme}://{request.url.netloc}").rstrip(
            "/"
        )
        parts = urlsplit(url)
        if (parts.scheme, parts.netloc) == self._origin:
            self._downloads[parts.path] = media_id
            data["url"] = f"{base}{parts.path}" + (f"?{parts.query}" if parts.query else "")
        else:
            token = secrets.token_urlsafe(16)
            self._foreign[token] = (url, media_id)
            data["url"] = f"{base}{_FOREIGN_MEDIA}/{token}"
        return json.dumps(data, separators=(",", ":")).encode()


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 3)


_ANY_METHOD: Final[list[str]] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def create_proxy_app(
    settings: ProxySettings,
    recorder: ProxyRecorder,
    *,
    agent_client: httpx.AsyncClient | None = None,
    upstream_client: httpx.AsyncClient | None = None,
    collector: RecordingCollector | None = None,
    collect_every: float = 0.25,
    model_client: httpx.AsyncClient | None = None,
) -> Starlette:
    """The proxy as a Starlette app: ``/webhook`` for Meta, every other path for the agent.

    The HTTP clients to the agent and to the upstream Graph API can be
    injected (they are created, and closed at shutdown, otherwise). With a
    ``collector``, the agent's published recordings are collected every
    ``collect_every`` seconds, before each recorded event and at shutdown.
    ``model_client`` is the HTTP client the model endpoint calls the
    providers with. The caller owns ``recorder`` and closes it after the app
    stopped.
    """
    agent = agent_client or httpx.AsyncClient(timeout=settings.agent_timeout)
    upstream = upstream_client or httpx.AsyncClient(timeout=settings.upstream_timeout)
    proxy = _Proxy(settings, recorder, agent, upstream, collector)
    endpoints = Endpoints.for_recording(
        Recording(mode=RecordMode.RECORD, on_llm_record=recorder.add_llm),
        recorder.add_event,
        clock=recorder.clock,
        anthropic_upstream=settings.anthropic_upstream,
        openai_upstream=settings.openai_upstream,
        side_effects=settings.side_effect_tools,
        http=model_client,
        model_events=False,  # add_llm writes each exchange's event with its record
        pin_credentials=True,  # Meta's callback URL is public: only the agent's calls count
        derive_tools=True,  # the tool results the agent gives back to its model
        tool_sink=recorder.add_seen_tool,
    )

    async def collect() -> None:
        while True:
            await asyncio.sleep(collect_every)
            try:
                await proxy.drain()
            except Exception as exc:  # the store is down: try again later
                _log.warning("could not collect the agent's recordings: %s", exc)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if collector is not None:
            try:
                await collector.start()
            except Exception as exc:  # the store is down: everything there will be collected
                _log.warning("could not read the agent's recordings yet: %s", exc)
        task = asyncio.get_running_loop().create_task(collect()) if collector else None
        try:
            yield
        finally:
            if task is not None:
                # A cancellation that lands as a Redis read completes can be lost (see
                # harness._tasks); a drain cut short reads the same records again next time.
                await cancel_until_done(task)
                with contextlib.suppress(Exception):
                    await proxy.drain()
            if agent_client is None:
                await agent.aclose()
            if upstream_client is None:
                await upstream.aclose()
            await endpoints.aclose()

    app = Starlette(
        routes=[
            Route(WEBHOOK_PATH, proxy.handshake, methods=["GET"]),
            Route(WEBHOOK_PATH, proxy.webhook, methods=["POST"]),
            Route(f"{_FOREIGN_MEDIA}/{{token}}", proxy.foreign_media, methods=["GET", "HEAD"]),
            *endpoints.routes(),
            Route("/{path:path}", proxy.graph, methods=_ANY_METHOD),
        ],
        lifespan=lifespan,
    )
    app.state.proxy = proxy
    app.state.recorder = recorder
    return app
