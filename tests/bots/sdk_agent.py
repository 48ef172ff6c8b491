"""A booking bot written on the official ``anthropic`` SDK and OpenTelemetry, and nothing else.

It knows nothing of the harness: its model is whatever ``ANTHROPIC_BASE_URL``
and ``ANTHROPIC_API_KEY`` point at, and its spans go wherever the standard
``OTEL_EXPORTER_OTLP_ENDPOINT`` says, named by the GenAI conventions
(``gen_ai.operation.name = execute_tool``, tool name, arguments, result,
``user.id``). Each text message is one turn: the user's words go to the model
with the ``book_appointment`` tool; the tool runs when the model asks
(without asking the user to confirm: the bug a harness invariant catches);
the model's last text is the reply (an apology when the model call fails),
sent once the turn's spans are exported.
Answers inside the webhook handler.
Bookings are readable at ``GET /bookings``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anthropic
import httpx
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

__all__ = ["MODEL", "TOOLS", "create_app"]

MODEL = "claude-test-1"
SYSTEM = "You book appointments at a hair salon."
TOOLS: list[Any] = [
    {
        "name": "book_appointment",
        "description": "Book a slot.",
        "input_schema": {
            "type": "object",
            "properties": {"day": {"type": "string"}, "time": {"type": "string"}},
        },
    }
]


def create_app(settings: Mapping[str, str], *, spans: bool = True) -> Starlette:
    """The bot's app, serving ``/webhook`` and ``/bookings``; ``spans`` False exports none."""
    secret = settings["WHATSAPP_APP_SECRET"].encode()
    verify_token = settings["WHATSAPP_VERIFY_TOKEN"]
    phone_id = settings["WHATSAPP_PHONE_NUMBER_ID"]
    graph = settings["WHATSAPP_GRAPH_URL"].rstrip("/")
    messages_url = f"{graph}/v25.0/{phone_id}/messages"
    auth = {"Authorization": f"Bearer {settings['WHATSAPP_ACCESS_TOKEN']}"}
    http = httpx.AsyncClient(timeout=10)
    llm = anthropic.AsyncAnthropic()  # ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY
    provider = TracerProvider(resource=Resource.create({"service.name": "sdk-agent"}))
    if spans:
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # OTEL_* settings
    tracer = provider.get_tracer("sdk-agent")
    history: dict[str, list[Any]] = {}
    bookings: list[dict[str, Any]] = []

    def book(user: str, day: str, time: str) -> dict[str, str]:
        bookings.append({"user": user, "day": day, "time": time})
        return {"booking": f"B-{len(bookings)}"}

    def run_tool(user: str, use: Any) -> dict[str, str]:
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": use.name,
            "gen_ai.tool.call.id": use.id,
            "gen_ai.tool.call.arguments": json.dumps(use.input),
            "user.id": user,
        }
        with tracer.start_as_current_span(f"execute_tool {use.name}", attributes=attributes) as s:
            result = book(user, **use.input)
            s.set_attribute("gen_ai.tool.call.result", json.dumps(result))
        return result

    async def turn(user: str, text: str) -> str:
        said = history.setdefault(user, [])
        said.append({"role": "user", "content": text})
        while True:
            reply = await llm.messages.create(
                model=MODEL, max_tokens=256, system=SYSTEM, messages=said, tools=TOOLS
            )
            said.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
            uses = [block for block in reply.content if block.type == "tool_use"]
            if not uses:
                return "".join(block.text for block in reply.content if block.type == "text")
            results = [
                {
                    "type": "tool_result",
                    "tool_use_id": u.id,
                    "content": json.dumps(run_tool(user, u)),
                }
                for u in uses
            ]
            said.append({"role": "user", "content": results})

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
        update = json.loads(raw)
        for entry in update.get("entry", []):
            for change in entry.get("changes", []):
                for message in change.get("value", {}).get("messages", []):
                    if message.get("type") != "text":
                        continue
                    try:
                        answer = await turn(message["from"], message["text"]["body"])
                    except anthropic.APIError:
                        answer = "Sorry, I can't book right now."
                    # The turn's spans go out before its reply, as a serverless agent's must.
                    await asyncio.to_thread(provider.force_flush)
                    body = {
                        "messaging_product": "whatsapp",
                        "to": message["from"],
                        "type": "text",
                        "text": {"body": answer},
                    }
                    await http.post(messages_url, json=body, headers=auth)
        return PlainTextResponse("ok")

    async def list_bookings(request: Request) -> Response:
        return JSONResponse({"bookings": bookings})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await http.aclose()
        await llm.close()
        await asyncio.to_thread(provider.shutdown)  # the exporter's last posts block

    app = Starlette(
        routes=[
            Route("/webhook", webhook, methods=["GET", "POST"]),
            Route("/bookings", list_bookings),
        ],
        lifespan=lifespan,
    )
    app.state.bookings = bookings
    return app
