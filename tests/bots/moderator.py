"""A bot that echoes what users write, and blocks a user who insults it.

Written as a third party would: httpx, starlette and Meta's documented wire
format (the send API and the Block Users API), nothing of the harness. A text
holding an insult (:data:`INSULTS`) gets "Goodbye." and then a ``POST
/{phone_number_id}/block_users`` naming the sender; with ``BOT_NO_BLOCK`` set
the bot says goodbye and never blocks (a bot whose moderation broke).

Run it with ``python -m tests.bots.moderator --port 8001`` and the
``WHATSAPP_*`` variables set.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any, Final

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

__all__ = ["INSULTS", "create_app", "main"]

INSULTS: Final = ("idiot", "stupid")
"""Words that get a user blocked."""

log = logging.getLogger("moderator_bot")


def create_app(
    settings: Mapping[str, str], *, client: httpx.AsyncClient | None = None
) -> Starlette:
    """The bot's app, serving ``/webhook``; ``client`` (if given) carries its Graph API calls."""
    phone_id = settings["WHATSAPP_PHONE_NUMBER_ID"]
    graph = settings.get("WHATSAPP_GRAPH_URL", "https://graph.facebook.com").rstrip("/")
    version = settings.get("WHATSAPP_API_VERSION", "v25.0")
    auth = {"Authorization": f"Bearer {settings['WHATSAPP_ACCESS_TOKEN']}"}
    blocks = not settings.get("BOT_NO_BLOCK")
    http = client or httpx.AsyncClient(timeout=10)

    async def call(path: str, body: dict[str, Any]) -> None:
        response = await http.post(f"{graph}/{version}/{phone_id}/{path}", json=body, headers=auth)
        if response.status_code != 200:
            log.warning("%s failed: %s %s", path, response.status_code, response.text)

    async def answer(sender: str, text: str) -> None:
        insulted = any(word in text.lower() for word in INSULTS)
        reply = "Goodbye." if insulted else f"You said: {text}"
        await call(
            "messages",
            {
                "messaging_product": "whatsapp",
                "to": sender,
                "type": "text",
                "text": {"body": reply},
            },
        )
        if insulted and blocks:
            await call(
                "block_users",
                {"messaging_product": "whatsapp", "block_users": [{"user": sender}]},
            )

    async def webhook(request: Request) -> Response:
        if request.method == "GET":
            return PlainTextResponse(request.query_params.get("hub.challenge", ""))
        update: dict[str, Any] = json.loads(await request.body())
        for entry in update.get("entry", []):
            for change in entry.get("changes", []):
                for message in change.get("value", {}).get("messages", []):
                    if message.get("type") == "text":
                        await answer(message["from"], message["text"]["body"])
        return PlainTextResponse("ok")

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
    parser = argparse.ArgumentParser(description="An echo bot that blocks users who insult it.")
    parser.add_argument("--port", type=int, default=8001)
    args = parser.parse_args()
    uvicorn.run(create_app(os.environ), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
