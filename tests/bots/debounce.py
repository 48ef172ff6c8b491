"""A bot that waits for the user to stop typing, then answers the whole burst once.

People type a thought in several quick messages. This bot collects each user's
messages and replies once, after the user has been quiet for
``BOT_DEBOUNCE_SECONDS`` (real seconds, default 0.5), with one reply that
quotes every fragment. Each new message restarts the user's timer. Only the
standard library, httpx, starlette and uvicorn; nothing from this project.

Run it with ``python -m tests.bots.debounce --port 8003`` and the
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
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

__all__ = ["create_app", "main"]

log = logging.getLogger("debounce_bot")


def create_app(
    settings: Mapping[str, str], *, client: httpx.AsyncClient | None = None
) -> Starlette:
    """The bot's app, serving ``/webhook``; ``client`` (if given) carries its Graph API calls."""
    secret = settings["WHATSAPP_APP_SECRET"].encode()
    verify_token = settings["WHATSAPP_VERIFY_TOKEN"]
    phone_id = settings["WHATSAPP_PHONE_NUMBER_ID"]
    graph = settings.get("WHATSAPP_GRAPH_URL", "https://graph.facebook.com").rstrip("/")
    version = settings.get("WHATSAPP_API_VERSION", "v25.0")
    quiet = float(settings.get("BOT_DEBOUNCE_SECONDS", "0.5"))
    messages_url = f"{graph}/{version}/{phone_id}/messages"
    auth = {"Authorization": f"Bearer {settings['WHATSAPP_ACCESS_TOKEN']}"}
    http = client or httpx.AsyncClient(timeout=10)
    fragments: dict[str, list[str]] = {}  # user -> what they typed since the last reply
    timers: dict[str, asyncio.Task[None]] = {}  # user -> the wait that has not fired yet
    running: set[asyncio.Task[None]] = set()

    async def answer_when_quiet(user: str) -> None:
        await asyncio.sleep(quiet)
        # From here on a new message starts a new burst instead of cancelling this reply.
        del timers[user]
        burst = fragments.pop(user)
        body = {
            "messaging_product": "whatsapp",
            "to": user,
            "type": "text",
            "text": {"body": "You said: " + " / ".join(burst)},
        }
        response = await http.post(messages_url, json=body, headers=auth)
        if response.status_code != 200:
            log.warning("send failed: %s %s", response.status_code, response.text)

    def heard(message: dict[str, Any]) -> None:
        user = message["from"]
        text = message["text"]["body"] if message.get("type") == "text" else f"[{message['type']}]"
        fragments.setdefault(user, []).append(text)
        if user in timers:
            timers[user].cancel()
        task = asyncio.create_task(answer_when_quiet(user))
        timers[user] = task
        running.add(task)
        task.add_done_callback(running.discard)

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
                if value.get("metadata", {}).get("phone_number_id") == phone_id:
                    for message in value.get("messages", []):  # statuses are ignored
                        heard(message)
        return PlainTextResponse("ok")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        for task in running:  # bursts still waiting for quiet go unanswered
            task.cancel()
        if client is None:
            await http.aclose()

    return Starlette(
        routes=[Route("/webhook", webhook, methods=["GET", "POST"])], lifespan=lifespan
    )


def main() -> None:
    """Serve the bot on 127.0.0.1, configured from the environment."""
    parser = argparse.ArgumentParser(description="A bot that answers each burst once.")
    parser.add_argument("--port", type=int, default=8003)
    args = parser.parse_args()
    uvicorn.run(create_app(os.environ), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
