"""An echo bot that shows "typing..." while it thinks, as most LLM bots on WhatsApp do.

For each text message, after its 200: optionally a holding message first
(``BOT_HOLDING``, e.g. "One moment..."), then the message marked read with
the typing indicator, then a pause that stands for a model call taking real
time (``BOT_THINK_SECONDS``, default 1), then the answer. Meta takes the
indicator down when the answer arrives, or after 25 s. ``BOT_THINK_IN=thread``
thinks in a thread instead (``asyncio.to_thread``), as a bot calling a
synchronous model SDK does; the event loop is idle meanwhile. Only the standard
library, httpx, starlette and uvicorn; nothing from this project.

Run it with ``python -m tests.bots.thinking --port 8004`` and the
``WHATSAPP_*`` variables set.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

__all__ = ["create_app", "main"]

log = logging.getLogger("thinking_bot")


def create_app(
    settings: Mapping[str, str], *, client: httpx.AsyncClient | None = None
) -> Starlette:
    """The bot's app, serving ``/webhook``; ``client`` (if given) carries its Graph API calls."""
    secret = settings["WHATSAPP_APP_SECRET"].encode()
    verify_token = settings["WHATSAPP_VERIFY_TOKEN"]
    phone_id = settings["WHATSAPP_PHONE_NUMBER_ID"]
    graph = settings.get("WHATSAPP_GRAPH_URL", "https://graph.facebook.com").rstrip("/")
    version = settings.get("WHATSAPP_API_VERSION", "v25.0")
    think = float(settings.get("BOT_THINK_SECONDS", "1"))
    holding = settings.get("BOT_HOLDING", "")
    think_in = settings.get("BOT_THINK_IN", "loop")
    if think_in not in ("loop", "thread"):
        raise ValueError(f"BOT_THINK_IN must be loop or thread, not {think_in!r}")
    messages_url = f"{graph}/{version}/{phone_id}/messages"
    auth = {"Authorization": f"Bearer {settings['WHATSAPP_ACCESS_TOKEN']}"}
    http = client or httpx.AsyncClient(timeout=10)
    running: set[asyncio.Task[None]] = set()  # strong references, or the loop may drop them

    async def post(body: dict[str, Any]) -> None:
        body = {"messaging_product": "whatsapp", **body}
        response = await http.post(messages_url, json=body, headers=auth)
        if response.status_code != 200:
            log.warning("send failed: %s %s", response.status_code, response.text)

    async def text(to: str, words: str) -> None:
        await post({"to": to, "type": "text", "text": {"body": words}})

    async def answer(message: dict[str, Any]) -> None:
        user = message["from"]
        if holding:
            await text(user, holding)
        await post(
            {"status": "read", "message_id": message["id"], "typing_indicator": {"type": "text"}}
        )
        if think_in == "thread":  # a synchronous model SDK, called off the event loop
            await asyncio.to_thread(time.sleep, think)
        else:
            await asyncio.sleep(think)  # the model, taking real time
        await text(user, f"You said: {message['text']['body']}")

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
                    if message.get("type") != "text":
                        continue
                    task = asyncio.create_task(answer(message))
                    running.add(task)
                    task.add_done_callback(running.discard)
        return PlainTextResponse("ok")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        if running:
            await asyncio.wait(running, timeout=10)
        if client is None:
            await http.aclose()

    return Starlette(
        routes=[Route("/webhook", webhook, methods=["GET", "POST"])], lifespan=lifespan
    )


def main() -> None:
    """Serve the bot on 127.0.0.1, configured from the environment."""
    parser = argparse.ArgumentParser(description="An echo bot that shows typing while it thinks.")
    parser.add_argument("--port", type=int, default=8004)
    args = parser.parse_args()
    uvicorn.run(create_app(os.environ), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
