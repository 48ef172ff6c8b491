"""A model endpoint any agent can point its SDK at: Anthropic Messages and OpenAI Chat Completions.

An agent that uses the ``anthropic`` or ``openai`` SDK directly (or a
framework on top of one, or another language's SDK) is recorded and
replayed with no code change: its ``ANTHROPIC_BASE_URL`` or
``OPENAI_BASE_URL`` points at a harness server, which serves
``POST /v1/messages`` and ``POST /v1/chat/completions`` (streamed or not,
tool calls included) in the mode of the run's
:class:`~harness.recording.Recording`:

- ``record``: the request goes on to the real provider (or a configured
  upstream), and the exchange is kept under the key the in-process recorder
  gives it, for the fixture;
- ``replay``: the answer comes from the recording, streamed when the request
  asked for a stream; a request never recorded is answered with the
  provider's error shape (400, not to be retried) and noted in the run as a
  divergence that says which part of the request changed;
- ``passthrough``: the request goes on, and nothing is kept.

The upstream is always asked without streaming; the endpoint streams the
answer itself, so a recorded chat and its replay answer alike. API keys and
other credentials travel on to the upstream in their headers and are never
written: a record holds the request body and the answer only. Replay needs
no idea which scenario a call belongs to: the key is the request. A server
that plays several scenarios at once gives the endpoint a ``seat`` function
that finds the recording a request belongs to.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from harness.acting import _ACTING
from harness.canonical import canonical_bytes, canonical_key
from harness.endpoints.anthropic_wire import (
    anthropic_error,
    anthropic_events,
    anthropic_message,
    check_anthropic_request,
    parse_anthropic_message,
)
from harness.endpoints.openai_wire import (
    check_openai_request,
    openai_chunks,
    openai_completion,
    openai_error,
    parse_openai_completion,
)
from harness.endpoints.upstreams import ANTHROPIC_UPSTREAM, OPENAI_UPSTREAM
from harness.exceptions import Divergence, LLMError
from harness.llm import LLMResponse, SystemPrompt
from harness.llm_recorder import VOLATILE_PARAMS, RecordingLLMClient
from harness.providers import ANTHROPIC, NOT_RECORDED, OPENAI
from harness.recording import Recording
from harness.tape import Sink
from harness.tool_results import answered_calls
from harness.trace import LLMExchange, ToolCall

__all__ = [
    "ANTHROPIC_PATH",
    "OPENAI_PATH",
    "ModelEndpoint",
    "Seat",
    "Seating",
    "request_key",
]

#: Where the endpoint serves each API (the SDKs' paths under their base URL).
ANTHROPIC_PATH: Final = "/v1/messages"
OPENAI_PATH: Final = "/v1/chat/completions"

#: The recording a request belongs to, and the sink its trace events go to.
Seat = tuple[Recording, Sink | None]
#: Finds a request's seat from its body and headers.
Seating = Callable[[Mapping[str, Any], Mapping[str, str]], Seat]

# Headers that go on to the upstream: credentials and API versions, never written anywhere.
_FORWARDED: Final = frozenset(
    {
        "x-api-key",
        "authorization",
        "anthropic-version",
        "anthropic-beta",
        "openai-organization",
        "openai-project",
        "openai-beta",
    }
)
_RELAYED: Final = frozenset({"content-type", "retry-after", "x-should-retry", "request-id"})
# Asking for a stream changes how the answer travels, not what it is.
_UNKEYED: Final = frozenset({"stream", "stream_options"})


def request_key(body: Mapping[str, Any], volatile: frozenset[str] = VOLATILE_PARAMS) -> str:
    """The key a request body is recorded under (as :meth:`ModelEndpoint` computes it)."""
    return canonical_key({k: v for k, v in body.items() if k not in volatile | _UNKEYED})


@dataclass(frozen=True)
class _Dialect:
    """What differs between the two APIs: paths, checks, and how answers are written."""

    name: str
    provider: str  # who answers at the API's own address
    default_upstream: str
    upstream_path: str
    check: Callable[[object], str | None]
    parse: Callable[[Mapping[str, Any]], LLMResponse]
    render: Callable[[LLMResponse], dict[str, Any]]
    stream: Callable[[LLMResponse, Mapping[str, Any]], Iterator[bytes]]
    error: Callable[[int, str], dict[str, Any]]


def _openai_stream(response: LLMResponse, body: Mapping[str, Any]) -> Iterator[bytes]:
    options = body.get("stream_options")
    include = isinstance(options, Mapping) and bool(options.get("include_usage"))
    return openai_chunks(response, include_usage=include)


_ANTHROPIC = _Dialect(
    "Anthropic",
    ANTHROPIC,
    ANTHROPIC_UPSTREAM,
    "/v1/messages",
    check_anthropic_request,
    parse_anthropic_message,
    anthropic_message,
    lambda response, _body: anthropic_events(response),
    anthropic_error,
)
_OPENAI = _Dialect(
    "OpenAI",
    OPENAI,
    OPENAI_UPSTREAM,
    "/chat/completions",
    check_openai_request,
    parse_openai_completion,
    openai_completion,
    _openai_stream,
    lambda status, message: openai_error(status, message, "harness_replay_miss"),
)


_JSON: Final = {"content-type": "application/json"}


def _credential(headers: Mapping[str, str]) -> str:
    """A digest of the request's API key (its header's value), never the key itself."""
    key = headers.get("x-api-key") or headers.get("authorization") or ""
    return hashlib.sha256(key.encode()).hexdigest()


class _UpstreamAnswer(Exception):
    """The upstream refused the request: its answer goes back to the agent unchanged."""

    def __init__(self, status: int, content: bytes, headers: Mapping[str, str]) -> None:
        super().__init__(f"upstream answered {status}")
        self.status = status
        self.content = content
        self.headers = dict(headers)


class _NoInner:
    """The endpoint's recorder calls the upstream itself, per request; nothing calls this."""

    async def create(
        self,
        *,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        max_tokens: int,
        system: SystemPrompt | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **params: Any,
    ) -> LLMResponse:
        raise LLMError("the model endpoint answers through its recorder's exchange()")


def _failure(result: Any) -> str:
    """What a failed tool said, as one text."""
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


class ModelEndpoint:
    """The two model APIs as Starlette routes, recording into or replaying from a recording.

    ``seat`` is the run's :class:`~harness.recording.Recording`, or a
    function from a request's body and headers to the recording (and sink)
    it belongs to.
    ``sink`` receives an :class:`~harness.trace.LLMExchange` per call (with a
    plain recording); ``clock`` stamps them. ``anthropic_upstream`` and
    ``openai_upstream`` are where record and passthrough send requests
    (OpenAI's with its ``/v1``, as in ``OPENAI_BASE_URL``); ``http`` is the
    client to send them with (made, and closed by :meth:`aclose`, otherwise).
    With ``pin_credentials`` (a server others can reach, such as the
    recording proxy), the first API key the provider accepts is the only one
    forwarded afterwards, per API: a stranger with a key of their own can
    neither use the server as a relay nor add calls to the recording. Only a
    digest of the key is kept, in memory. With ``derive_tools``, each tool
    result a request carries back to the model for the first time is a
    :class:`~harness.trace.ToolCall` in the sink (the agent ran that tool;
    :func:`~harness.tool_results.answered_calls`), side-effecting when its
    name is in ``side_effects``; it goes to ``tool_sink`` when given, else to
    the request's sink.
    """

    def __init__(
        self,
        seat: Recording | Seating,
        *,
        sink: Sink | None = None,
        clock: Any = None,
        anthropic_upstream: str = ANTHROPIC_UPSTREAM,
        openai_upstream: str = OPENAI_UPSTREAM,
        http: httpx.AsyncClient | None = None,
        timeout: float = 600.0,
        pin_credentials: bool = False,
        derive_tools: bool = False,
        side_effects: Collection[str] = (),
        tool_sink: Sink | None = None,
    ) -> None:
        if isinstance(seat, Recording):
            fixed: Seat = (seat, sink)
            self._seat: Seating = lambda _body, _headers: fixed
        else:
            self._seat = seat
        self._clock = clock
        self._upstreams = {
            _ANTHROPIC.name: anthropic_upstream.rstrip("/"),
            _OPENAI.name: openai_upstream.rstrip("/"),
        }
        self._owns_http = http is None
        self._http = http or httpx.AsyncClient(timeout=timeout)
        self._clients: dict[int, RecordingLLMClient] = {}
        self._answered = 0
        self._pin = pin_credentials
        self._pinned: dict[str, str] = {}  # API -> sha256 of the accepted key
        self._derive_tools = derive_tools
        self._tool_sink = tool_sink
        self._side_effects = frozenset(side_effects)
        self._tool_ids: dict[int, set[str]] = {}  # per recording: the tool calls already seen

    def answered(self) -> bool:
        """Whether the endpoint has answered any call yet, a replay's refusal too (an agent is
        using it)."""
        return self._answered > 0

    def routes(self) -> list[BaseRoute]:
        """``POST /v1/messages`` and ``POST /v1/chat/completions``, for a server to mount."""
        return [
            Route(ANTHROPIC_PATH, self.anthropic, methods=["POST"]),
            Route(OPENAI_PATH, self.openai, methods=["POST"]),
        ]

    async def aclose(self) -> None:
        """Close the HTTP client to the upstreams, if the endpoint made it."""
        if self._owns_http:
            await self._http.aclose()

    async def anthropic(self, request: Request) -> Response:
        """Answer a Messages API request."""
        return await self._answer(request, _ANTHROPIC)

    async def openai(self, request: Request) -> Response:
        """Answer a Chat Completions request."""
        return await self._answer(request, _OPENAI)

    def _client(self, recording: Recording, sink: Sink | None) -> RecordingLLMClient:
        client = self._clients.get(id(recording))
        if client is None:
            client = recording.llm(_NoInner(), sink=sink, clock=self._clock)
            self._clients[id(recording)] = client
        return client

    async def _answer(self, request: Request, dialect: _Dialect) -> Response:
        try:
            body = json.loads(await request.body())
        except ValueError:
            body = None
        problem = dialect.check(body)
        if problem is not None:
            return JSONResponse(dialect.error(400, problem), status_code=400)
        assert isinstance(body, dict)  # dialect.check refuses anything else
        recording, sink = self._seat(body, request.headers)
        tools = self._tool_sink or sink
        if self._derive_tools and tools is not None:
            self._ran_tools(body, self._tool_ids.setdefault(id(recording), set()), tools)
        client = self._client(recording, sink)
        keyed = {k: v for k, v in body.items() if k not in client.volatile and k not in _UNKEYED}
        headers = {k: v for k, v in request.headers.items() if k.lower() in _FORWARDED}

        async def call() -> LLMResponse:
            credential = _credential(headers)
            pinned = self._pinned.get(dialect.name)
            if self._pin and pinned is not None and credential != pinned:
                refusal = dialect.error(403, "this harness server forwards one agent's calls only")
                raise _UpstreamAnswer(403, json.dumps(refusal).encode(), _JSON)
            response = await self._forward(dialect, body, headers)
            if self._pin:
                self._pinned.setdefault(dialect.name, credential)
            return response

        try:
            response = await client.exchange(keyed, call, provider=self._provider(dialect))
        except Divergence as exc:
            self._answered += 1  # refused, but the agent's calls come here: its spans count twice
            self._unanswered(sink, body, dialect, NOT_RECORDED, refused=True)
            return JSONResponse(
                dialect.error(400, f"harness replay has no recording of this request: {exc}"),
                status_code=400,
                headers={"x-should-retry": "false"},
            )
        except _UpstreamAnswer as exc:
            upstream = self._upstreams[dialect.name]
            self._unanswered(sink, body, dialect, f"{exc.status} from {upstream}")
            return Response(exc.content, status_code=exc.status, headers=exc.headers)
        except (httpx.HTTPError, ValueError) as exc:
            upstream = self._upstreams[dialect.name]
            message = f"the harness could not get an answer from {upstream}: {exc}"
            self._unanswered(sink, body, dialect, f"502: {message}")
            return JSONResponse(dialect.error(502, message), status_code=502)
        self._answered += 1
        if body.get("stream"):
            return StreamingResponse(dialect.stream(response, body), media_type="text/event-stream")
        return JSONResponse(dialect.render(response))

    def _ran_tools(self, body: Mapping[str, Any], seen: set[str], sink: Sink) -> None:
        """The tool calls whose results ``body`` carries back for the first time, into ``sink``."""
        at = self._clock.now() if self._clock is not None else datetime.now(UTC)
        for call in answered_calls(body, skip=seen):
            seen.add(call.id)
            sink(
                ToolCall(
                    at=at,
                    user=_ACTING.get(),
                    name=call.name,
                    args=call.args,
                    result=call.result,
                    error=_failure(call.result) if call.failed else None,
                    side_effect=call.name in self._side_effects,
                )
            )

    def _unanswered(
        self,
        sink: Sink | None,
        body: Mapping[str, Any],
        dialect: _Dialect,
        why: str,
        *,
        refused: bool = False,
    ) -> None:
        """Put a call the provider did not answer in the trace, saying why (the run reports it).

        A call ``refused`` by a replay never reached a provider: none is named.
        """
        if sink is None:
            return
        at = self._clock.now() if self._clock is not None else datetime.now(UTC)
        sink(
            LLMExchange(
                at=at,
                user=_ACTING.get(),
                key="unanswered:" + hashlib.sha256(canonical_bytes(body)).hexdigest(),
                model=str(body.get("model") or ""),
                provider=None if refused else self._provider(dialect),
                error=why,
            )
        )

    def _provider(self, dialect: _Dialect) -> str | None:
        """Who answers what the endpoint forwards: the API's provider, None for another upstream."""
        upstream = self._upstreams[dialect.name]
        return dialect.provider if upstream == dialect.default_upstream.rstrip("/") else None

    async def _forward(
        self, dialect: _Dialect, body: Mapping[str, Any], headers: Mapping[str, str]
    ) -> LLMResponse:
        url = self._upstreams[dialect.name] + dialect.upstream_path
        sent = {k: v for k, v in body.items() if k not in _UNKEYED}
        answer = await self._http.post(url, json=sent, headers=dict(headers))
        if answer.status_code != 200:
            relayed = {k: v for k, v in answer.headers.items() if k.lower() in _RELAYED}
            raise _UpstreamAnswer(answer.status_code, answer.content, relayed)
        data = answer.json()
        if not isinstance(data, dict):
            raise ValueError(f"{dialect.name} answered with JSON that is not an object")
        return dialect.parse(data)
