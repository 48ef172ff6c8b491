"""A bot that greets a number it has never heard from, and ignores a message id it has seen.

Two habits of production bots, which only a harness that gives every
conversation its own numbers and message ids can test reliably:

- it dedupes webhooks by the message's id (the wamid), as Meta advises,
  since Meta redelivers: a message whose id it has seen is not answered
  again;
- it remembers its users for its whole life: the first text from a number
  is answered "Nice to meet you! You said: ...", every later one "Welcome
  back! You said: ...".

Written as a third party would: the standard library, httpx, starlette and
uvicorn, and Meta's documented wire format, nothing else. Run it with
``python -m tests.bots.greeter --port 8006`` and the ``WHATSAPP_*``
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
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

__all__ = ["FIRST", "LATER", "create_app", "main"]

log = logging.getLogger("greeter_bot")

#: How the bot answers a number's first text, and every later one.
FIRST = "Nice to meet you!"
LATER = "Welcome back!"


def create_app(
    settings: Mapping[str, str], *, client: httpx.AsyncClient | None = None
) -> Starlette:
    """The bot's app, serving ``/webhook``; ``client`` (if given) carries its Graph API calls."""
    secret = settings["WHATSAPP_APP_SECRET"].encode()
    verify_token = settings["WHATSAPP_VERIFY_TOKEN"]
    phone_id = settings["WHATSAPP_PHONE_NUMBER_ID"]
    graph = settings.get("WHATSAPP_GRAPH_URL", "https://graph.facebook.com").rstrip("/")
    version = settings.get("WHATSAPP_API_VERSION", "v25.0")
    messages_url = f"{graph}/{version}/{phone_id}/messages"
    auth = {"Authorization": f"Bearer {settings['WHATSAPP_ACCESS_TOKEN']}"}
    http = client or httpx.AsyncClient(timeout=10)
    seen_ids: set[str] = set()
    known_users: set[str] = set()

    async def reply(to: str, text: str) -> None:
        body = {"messaging_product": "whatsapp", "to": to, "type": "text", "text": {"body": text}}
        response = await http.post(messages_url, json=body, headers=auth)
        if response.status_code != 200:
            log.warning("send failed: %s %s", response.status_code, response.text)

    async def answer(texts: list[tuple[str, str]]) -> None:
        for sender, text in texts:
            greeting = LATER if sender in known_users else FIRST
            known_users.add(sender)
            await reply(sender, f"{greeting} You said: {text}")

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
        texts: list[tuple[str, str]] = []
        for entry in update.get("entry", []):
            for change in entry.get("changes", []):
                value = change.get("value", {})
                if value.get("metadata", {}).get("phone_number_id") != phone_id:
                    continue  # another number's update
                for message in value.get("messages", []):  # statuses are ignored
                    if message["id"] in seen_ids:
                        continue  # a redelivery: answered already
                    seen_ids.add(message["id"])
                    if message.get("type") == "text":
                        texts.append((message["from"], message["text"]["body"]))
        return PlainTextResponse("ok", background=BackgroundTask(answer, texts))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        if client is None:
            await http.aclose()

    return Starlette(
        routes=[Route("/webhook", webhook, methods=["GET", "POST"])], lifespan=lifespan
    )


def main() -> None:
    """Serve the bot on 127.0.0.1, configured from the environment."""
    parser = argparse.ArgumentParser(description="A bot that remembers its users.")
    parser.add_argument("--port", type=int, default=8006)
    args = parser.parse_args()
    uvicorn.run(create_app(os.environ), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
