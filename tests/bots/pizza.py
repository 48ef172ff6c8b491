"""A small pizza-ordering bot with a dialogue per user, kept in memory.

The dialogue: any message starts it and gets "what size?"; a size gets a
summary with two reply buttons, ``confirm`` and ``cancel``; only a tap on
``confirm`` places the order (appended to an in-memory list, readable as
``app.state.orders`` in-process and at ``GET /orders`` over HTTP). The bot
marks each message read before answering, and answers inside its webhook
handler.

A tap on ``confirm`` is honoured whenever the user has chosen a size, so a
redelivered "confirm" would place the order again: the bot remembers the
wamids it has handled and skips repeats. ``PIZZA_NO_DEDUPE=1`` switches that
off, the bug the harness's "no side effect repeated for a redelivered message"
check must catch. Only the standard library, httpx, starlette and uvicorn.

Run it with ``python -m tests.bots.pizza --port 8005`` and the ``WHATSAPP_*``
variables set.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import hmac
import json
import logging
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

__all__ = ["SIZES", "create_app", "main"]

log = logging.getLogger("pizza_bot")

SIZES = ("small", "medium", "large")
ASK_SIZE = "What size would you like: small, medium or large?"


def create_app(
    settings: Mapping[str, str], *, client: httpx.AsyncClient | None = None
) -> Starlette:
    """The bot's app, serving ``/webhook`` and ``/orders``; ``client`` carries Graph API calls."""
    secret = settings["WHATSAPP_APP_SECRET"].encode()
    verify_token = settings["WHATSAPP_VERIFY_TOKEN"]
    phone_id = settings["WHATSAPP_PHONE_NUMBER_ID"]
    graph = settings.get("WHATSAPP_GRAPH_URL", "https://graph.facebook.com").rstrip("/")
    version = settings.get("WHATSAPP_API_VERSION", "v25.0")
    dedupe = settings.get("PIZZA_NO_DEDUPE", "") != "1"
    messages_url = f"{graph}/{version}/{phone_id}/messages"
    auth = {"Authorization": f"Bearer {settings['WHATSAPP_ACCESS_TOKEN']}"}
    http = client or httpx.AsyncClient(timeout=10)
    orders: list[dict[str, Any]] = []
    steps: dict[str, str] = {}  # user -> "size" (asked for one) or "confirm" (buttons shown)
    sizes: dict[str, str] = {}  # user -> the size they chose last
    handled: set[str] = set()  # wamids already answered

    async def send(body: dict[str, Any]) -> None:
        body = {"messaging_product": "whatsapp", **body}
        response = await http.post(messages_url, json=body, headers=auth)
        if response.status_code != 200:
            log.warning("send failed: %s %s", response.status_code, response.text)

    async def say(user: str, text: str) -> None:
        await send({"to": user, "type": "text", "text": {"body": text}})

    async def ask_to_confirm(user: str) -> None:
        buttons = [
            {"type": "reply", "reply": {"id": "confirm", "title": "Confirm"}},
            {"type": "reply", "reply": {"id": "cancel", "title": "Cancel"}},
        ]
        interactive = {
            "type": "button",
            "body": {"text": f"One {sizes[user]} pizza. Shall I place the order?"},
            "action": {"buttons": buttons},
        }
        await send({"to": user, "type": "interactive", "interactive": interactive})

    async def answer(message: dict[str, Any]) -> None:
        user = message["from"]
        await send({"status": "read", "message_id": message["id"]})
        tapped = message.get("interactive", {}).get("button_reply", {}).get("id")
        text = message["text"]["body"].strip().lower() if message.get("type") == "text" else ""
        if tapped == "confirm" and user in sizes:
            orders.append({"id": len(orders) + 1, "user": user, "size": sizes[user]})
            steps.pop(user, None)
            await say(user, f"Order #{len(orders)} placed: one {sizes[user]} pizza.")
        elif tapped == "cancel":
            steps.pop(user, None)
            sizes.pop(user, None)
            await say(user, "Cancelled. Write again whenever you are hungry.")
        elif steps.get(user) == "size" and text in SIZES:
            sizes[user] = text
            steps[user] = "confirm"
            await ask_to_confirm(user)
        elif steps.get(user) == "confirm":
            await ask_to_confirm(user)
        else:
            steps[user] = "size"
            await say(user, ASK_SIZE)

    async def webhook(request: Request) -> Response:
        if request.method == "GET":
            query = request.query_params
            subscribing = query.get("hub.mode") == "subscribe"
            if subscribing and query.get("hub.verify_token") == verify_token:
                return PlainTextResponse(query.get("hub.challenge", ""))
            return PlainTextResponse("wrong verify token", status_code=403)
        raw = await request.body()
        expected = "sha256=" + hmac.new(secret, raw, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, request.headers.get("x-hub-signature-256", "")):
            return PlainTextResponse("bad signature", status_code=403)
        try:
            update: dict[str, Any] = json.loads(raw)
        except ValueError:
            return PlainTextResponse("not JSON", status_code=400)
        for entry in update.get("entry", []):
            for change in entry.get("changes", []):
                value = change.get("value", {})
                if value.get("metadata", {}).get("phone_number_id") != phone_id:
                    continue
                for message in value.get("messages", []):  # statuses are ignored
                    if dedupe and message["id"] in handled:
                        continue
                    handled.add(message["id"])
                    await answer(message)
        return PlainTextResponse("ok")

    async def list_orders(request: Request) -> Response:
        return JSONResponse({"orders": orders})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        if client is None:
            await http.aclose()

    app = Starlette(
        routes=[
            Route("/webhook", webhook, methods=["GET", "POST"]),
            Route("/orders", list_orders),
        ],
        lifespan=lifespan,
    )
    app.state.orders = orders
    return app


def main() -> None:
    """Serve the bot on 127.0.0.1, configured from the environment."""
    parser = argparse.ArgumentParser(description="A pizza-ordering bot.")
    parser.add_argument("--port", type=int, default=8005)
    args = parser.parse_args()
    uvicorn.run(create_app(os.environ), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
