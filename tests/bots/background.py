"""An echo bot that answers 200 at once and replies from a background task.

Meta asks webhooks to acknowledge fast and work afterwards; this is that bot.
``BOT_BACKGROUND`` picks how: ``starlette`` (the default) attaches a Starlette
``BackgroundTask`` to the response, which runs after the response is sent but
inside the same ASGI call; ``asyncio`` detaches the work with
``asyncio.create_task``, so the ASGI call ends before the reply is sent.
``BOT_REPLY_DELAY_SECONDS`` (default 0) makes the work take real time first;
``BOT_MARK_READ=1`` marks each message read, with "typing...", as it comes,
before that work (as many bots do).
Only the standard library, httpx, starlette and uvicorn; nothing from this
project.

Run it with ``python -m tests.bots.background --port 8002`` and the
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
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

__all__ = ["create_app", "main"]

log = logging.getLogger("background_bot")


def create_app(
    settings: Mapping[str, str], *, client: httpx.AsyncClient | None = None
) -> Starlette:
    """The bot's app, serving ``/webhook``; ``client`` (if given) carries its Graph API calls."""
    secret = settings["WHATSAPP_APP_SECRET"].encode()
    verify_token = settings["WHATSAPP_VERIFY_TOKEN"]
    phone_id = settings["WHATSAPP_PHONE_NUMBER_ID"]
    graph = settings.get("WHATSAPP_GRAPH_URL", "https://graph.facebook.com").rstrip("/")
    version = settings.get("WHATSAPP_API_VERSION", "v25.0")
    mode = settings.get("BOT_BACKGROUND", "starlette")
    if mode not in ("starlette", "asyncio"):
        raise ValueError(f"BOT_BACKGROUND must be starlette or asyncio, not {mode!r}")
    work_time = float(settings.get("BOT_REPLY_DELAY_SECONDS", "0"))
    mark_read = settings.get("BOT_MARK_READ", "") == "1"
    messages_url = f"{graph}/{version}/{phone_id}/messages"
    auth = {"Authorization": f"Bearer {settings['WHATSAPP_ACCESS_TOKEN']}"}
    http = client or httpx.AsyncClient(timeout=10)
    running: set[asyncio.Task[None]] = set()  # strong references, or the loop may drop them

    async def answer(messages: list[dict[str, Any]]) -> None:
        if mark_read:
            for message in messages:
                receipt = {
                    "messaging_product": "whatsapp",
                    "status": "read",
                    "message_id": message["id"],
                    "typing_indicator": {"type": "text"},
                }
                await http.post(messages_url, json=receipt, headers=auth)
        await asyncio.sleep(work_time)
        for message in messages:
            text = message["text"]["body"] if message.get("type") == "text" else message["type"]
            body = {
                "messaging_product": "whatsapp",
                "to": message["from"],
                "type": "text",
                "text": {"body": f"You said: {text}"},
            }
            response = await http.post(messages_url, json=body, headers=auth)
            if response.status_code != 200:
                log.warning("send failed: %s %s", response.status_code, response.text)

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
        messages = [
            message
            for entry in update.get("entry", [])
            for change in entry.get("changes", [])
            if change.get("value", {}).get("metadata", {}).get("phone_number_id") == phone_id
            for message in change["value"].get("messages", [])  # statuses are ignored
        ]
        if not messages:
            return PlainTextResponse("ok")
        if mode == "starlette":
            return PlainTextResponse("ok", background=BackgroundTask(answer, messages))
        task = asyncio.create_task(answer(messages))
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
    parser = argparse.ArgumentParser(description="An echo bot that replies after its 200.")
    parser.add_argument("--port", type=int, default=8002)
    args = parser.parse_args()
    uvicorn.run(create_app(os.environ), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
