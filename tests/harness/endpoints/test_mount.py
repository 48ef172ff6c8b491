"""A server behind the model endpoint and the OTLP receiver: who answers which request."""

from __future__ import annotations

from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import Message

from harness.endpoints import Endpoints
from harness.providers import NOT_RECORDED, model_counts
from harness.record_mode import RecordMode
from harness.recording import Recording
from harness.trace import Event, LLMExchange


async def _server(request: Request) -> Response:
    return PlainTextResponse(f"server: {request.method} {request.url.path}")


SERVER = Starlette(routes=[Route("/{path:path}", _server, methods=["GET", "POST", "DELETE"])])


def _endpoints() -> Endpoints:
    events: list[Event] = []
    recording = Recording(mode=RecordMode.REPLAY, llm_records=[])
    return Endpoints.for_recording(recording, events.append)


async def _ask(app: Any, method: str, path: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://serve") as client:
        return await client.request(method, path, content=b"{}")


async def test_the_endpoints_answer_their_posts_and_the_server_everything_else() -> None:
    endpoints = _endpoints()
    app = endpoints.around(SERVER)
    try:
        for path in ("/v1/messages", "/v1/chat/completions", "/v1/traces"):
            answer = await _ask(app, "POST", path)
            assert not answer.text.startswith("server:"), f"POST {path} reached the server"
        for method, path in [
            ("POST", "/v25.0/100200300400500/messages"),
            ("GET", "/_harness/clock"),
            ("DELETE", "/v25.0/4469980719646669"),
            ("GET", "/v1.0/100200300400500"),  # a Graph version, not a model API's
        ]:
            assert (await _ask(app, method, path)).text == f"server: {method} {path}"
    finally:
        await endpoints.aclose()


async def test_a_model_call_not_played_here_says_what_is() -> None:
    # A model client calling another of its API's endpoints (OpenAI's legacy completions,
    # its responses, a GET on a played path) is told so in its API's error shape, not
    # answered by the Graph API behind.
    endpoints = _endpoints()
    app = endpoints.around(SERVER)
    try:
        for method, path in [
            ("POST", "/v1/engines/text-davinci-003/completions"),
            ("POST", "/v1/responses"),
            ("GET", "/v1/messages"),
            ("POST", "/v1/messages/"),
        ]:
            answer = await _ask(app, method, path)
            assert answer.status_code == 404, (method, path)
            message = answer.json()["error"]["message"]
            assert message.startswith(f"{method} {path} is not played here: this server answers")
            assert "POST /v1/chat/completions, POST /v1/messages, POST /v1/traces" in message
    finally:
        await endpoints.aclose()


async def test_the_servers_lifespan_is_answered() -> None:
    endpoints = _endpoints()
    app = endpoints.around(SERVER)
    sent: list[Message] = []
    incoming = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])

    async def receive() -> Message:
        return next(incoming)

    async def send(message: Message) -> None:
        sent.append(message)

    await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send)
    await endpoints.aclose()
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


async def test_calls_a_replay_refused_are_counted_as_refused_and_their_spans_not_again() -> None:
    events: list[Event] = []
    recording = Recording(mode=RecordMode.REPLAY, llm_records=[])
    endpoints = Endpoints.for_recording(recording, events.append)
    chat_span = {
        "name": "chat claude-sonnet-4-5",
        "startTimeUnixNano": "1767225600000000000",
        "status": {"code": 2, "message": "400 Bad Request"},
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.request.model", "value": {"stringValue": "claude-sonnet-4-5"}},
        ],
    }
    ask = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "One pizza, please"}],
    }
    transport = httpx.ASGITransport(app=endpoints.around(SERVER))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://serve") as client:
            for _ in range(3):
                refused = await client.post("/v1/messages", json=ask)
                assert refused.status_code == 400
                export = {"resourceSpans": [{"scopeSpans": [{"spans": [chat_span]}]}]}
                assert (await client.post("/v1/traces", json=export)).status_code == 200
    finally:
        await endpoints.aclose()
    exchanges = [e for e in events if isinstance(e, LLMExchange)]
    assert [(e.provider, e.error) for e in exchanges] == [(None, NOT_RECORDED)] * 3
    assert [c.label for c in model_counts(exchanges)] == [
        "3 model calls refused: not in the recording (asked for claude-sonnet-4-5)"
    ]
