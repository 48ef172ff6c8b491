"""An echo bot that loses some messages and answers others twice, and says how many.

Every ``lose_every``-th text message it receives gets no reply at all; every
``duplicate_every``-th (of those it answers) gets the same reply sent twice,
as a bot that retries a send it thinks failed would; each reply can wait
``delay`` seconds first, as a slow model would. It counts what it did
(``app.state.lost``, ``app.state.duplicated``) so a test can hold a load
run's tally against the truth. It replies inside its handler, then answers
200. Written as a third party would: the standard library, httpx, starlette
and uvicorn, and Meta's documented wire format.

Run it with ``python -m tests.bots.unreliable --port 8001`` and the
``WHATSAPP_*`` variables set (``UNRELIABLE_LOSE_EVERY`` and
``UNRELIABLE_DUPLICATE_EVERY`` too, 0 turns either off; ``UNRELIABLE_DELAY`` in seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import hmac
import json
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

__all__ = ["create_app", "main"]


def create_app(settings: Mapping[str, str]) -> Starlette:
    """The bot's app, serving ``/webhook``; its counts are on ``app.state``."""
    secret = settings["WHATSAPP_APP_SECRET"].encode()
    graph = settings["WHATSAPP_GRAPH_URL"].rstrip("/")
    messages_url = f"{graph}/v25.0/{settings['WHATSAPP_PHONE_NUMBER_ID']}/messages"
    auth = {"Authorization": f"Bearer {settings['WHATSAPP_ACCESS_TOKEN']}"}
    lose_every = int(settings.get("UNRELIABLE_LOSE_EVERY", "0"))
    duplicate_every = int(settings.get("UNRELIABLE_DUPLICATE_EVERY", "0"))
    delay = float(settings.get("UNRELIABLE_DELAY", "0"))
    http = httpx.AsyncClient(timeout=10)
    seen = {"received": 0, "answered": 0}

    async def send(to: str, text: str) -> None:
        body = {"messaging_product": "whatsapp", "to": to, "type": "text", "text": {"body": text}}
        response = await http.post(messages_url, json=body, headers=auth)
        response.raise_for_status()

    async def webhook(request: Request) -> Response:
        if request.method == "GET":
            return PlainTextResponse(request.query_params.get("hub.challenge", ""))
        raw = await request.body()
        expected = "sha256=" + hmac.new(secret, raw, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, request.headers.get("x-hub-signature-256", "")):
            return PlainTextResponse("bad signature", status_code=403)
        update: dict[str, Any] = json.loads(raw)
        for entry in update.get("entry", []):
            for change in entry.get("changes", []):
                for message in change.get("value", {}).get("messages", []):
                    if message.get("type") != "text":
                        continue
                    seen["received"] += 1
                    if lose_every and seen["received"] % lose_every == 0:
                        app.state.lost += 1
                        continue
                    seen["answered"] += 1
                    if delay:
                        await asyncio.sleep(delay)
                    reply = f"You said: {message['text']['body']}"
                    await send(message["from"], reply)
                    if duplicate_every and seen["answered"] % duplicate_every == 0:
                        await send(message["from"], reply)
                        app.state.duplicated += 1
        return PlainTextResponse("ok")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await http.aclose()

    app = Starlette(routes=[Route("/webhook", webhook, methods=["GET", "POST"])], lifespan=lifespan)
    app.state.lost = 0
    app.state.duplicated = 0
    return app


def main() -> None:
    """Serve the bot on 127.0.0.1, configured from the environment."""
    parser = argparse.ArgumentParser(description="An echo bot that loses and repeats replies.")
    parser.add_argument("--port", type=int, default=8001)
    args = parser.parse_args()
    uvicorn.run(create_app(os.environ), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
