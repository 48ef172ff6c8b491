"""A table-booking bot whose tool spans come late, as a batching exporter's do.

Written on the OpenTelemetry SDK alone. With ``delay=None``, a
``BatchSpanProcessor`` that never exports on its own schedule, flushed when
the next message comes in (as a serverless function flushes at its next
start); with ``delay``, each span is exported that many seconds after it
ends (as a batch exported on a timer). Its words, with no model: the first
message gets a look at the tables and a proposal; one that says 8 has the
table booked at once (the bug: no one said yes to 8 pm), saying so; any other
gets a goodbye. So the span of the booking reaches the harness after the reply it
led to, and after the user's "yes" that followed it, or after the scenario
has gone quiet.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

__all__ = ["ANSWERS", "create_app"]

#: What the bot says to a user's first message, to one that says 8, and to any other.
ANSWERS = ("Shall I book a table for 2 at 7pm?", "Booked for 8pm.", "Great, see you then!")
_HOUR_MS = 3_600_000


class _Delayed(SpanProcessor):
    """Exports each span ``delay`` seconds after it ends, on a timer thread."""

    def __init__(self, exporter: SpanExporter, delay: float) -> None:
        self._exporter = exporter
        self._delay = delay
        self._timers: list[threading.Timer] = []

    def on_end(self, span: ReadableSpan) -> None:
        timer = threading.Timer(self._delay, self._exporter.export, args=([span],))
        timer.daemon = True
        self._timers.append(timer)
        timer.start()

    def shutdown(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def create_app(settings: dict[str, str], *, delay: float | None = None) -> Starlette:
    """The bot, its Graph API and its trace exporter where ``settings`` say."""
    secret = settings["WHATSAPP_APP_SECRET"].encode()
    verify_token = settings["WHATSAPP_VERIFY_TOKEN"]
    graph = settings["WHATSAPP_GRAPH_URL"].rstrip("/")
    messages_url = f"{graph}/v25.0/{settings['WHATSAPP_PHONE_NUMBER_ID']}/messages"
    auth = {"Authorization": f"Bearer {settings['WHATSAPP_ACCESS_TOKEN']}"}
    http = httpx.AsyncClient(timeout=10)
    provider = TracerProvider(resource=Resource.create({"service.name": "late-spans"}))
    exporter = OTLPSpanExporter(endpoint=settings["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"])
    if delay is None:
        provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=_HOUR_MS))
    else:
        provider.add_span_processor(_Delayed(exporter, delay))
    tracer = provider.get_tracer("late-spans")
    said: dict[str, int] = {}

    def tool(user: str, name: str, result: dict[str, Any]) -> None:
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.arguments": json.dumps({"people": 2, "time": "20:00"}),
            "gen_ai.tool.call.result": json.dumps(result),
            "user.id": user,
        }
        with tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes):
            pass

    async def answer(user: str, text: str) -> None:
        # The last turn's spans go out now, at the start of this one.
        await asyncio.to_thread(provider.force_flush)
        count = said[user] = said.get(user, 0) + 1
        if count == 1:
            tool(user, "check_tables", {"free": [19, 20]})
            answered = ANSWERS[0]
        elif "8" in text:
            tool(user, "book_table", {"table": 12})
            answered = ANSWERS[1]
        else:
            answered = ANSWERS[2]
        body = {
            "messaging_product": "whatsapp",
            "to": user,
            "type": "text",
            "text": {"body": answered},
        }
        await http.post(messages_url, json=body, headers=auth)

    async def webhook(request: Request) -> Response:
        if request.method == "GET":
            query = request.query_params
            if query.get("hub.verify_token") == verify_token:
                return PlainTextResponse(query.get("hub.challenge", ""))
            return PlainTextResponse("wrong verify token", status_code=403)
        raw = await request.body()
        expected = "sha256=" + hmac.new(secret, raw, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, request.headers.get("x-hub-signature-256", "")):
            return PlainTextResponse("bad signature", status_code=403)
        update: dict[str, Any] = json.loads(raw)
        for entry in update.get("entry", []):
            for change in entry.get("changes", []):
                for message in change.get("value", {}).get("messages", []):
                    if message.get("type") == "text":
                        await answer(message["from"], message["text"]["body"])
        return PlainTextResponse("ok")

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await http.aclose()
            await asyncio.to_thread(provider.shutdown)

    return Starlette(
        routes=[Route("/webhook", webhook, methods=["GET", "POST"])], lifespan=lifespan
    )
