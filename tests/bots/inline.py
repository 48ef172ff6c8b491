"""An echo bot that replies from inside its webhook handler, then answers 200.

The plainest shape a WhatsApp bot takes: the Graph API send is awaited before
the webhook returns, so Meta's delivery stays open while the bot talks to the
Graph API. Written as a third party would: the standard library, httpx,
starlette and uvicorn, and Meta's documented wire format, nothing else.

With ``BOT_REPLY_TO`` set it answers that number, whoever wrote, as bots
configured with a fixed recipient (a ``RECIPIENT_WAID``) do.

Run it with ``python -m tests.bots.inline --port 8001`` and the ``WHATSAPP_*``
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
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

__all__ = ["create_app", "main"]

log = logging.getLogger("inline_bot")


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
    reply_to = settings.get("BOT_REPLY_TO")
    http = client or httpx.AsyncClient(timeout=10)

    async def reply(sender: str, text: str) -> None:
        to = reply_to or sender
        body = {"messaging_product": "whatsapp", "to": to, "type": "text", "text": {"body": text}}
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
        for entry in update.get("entry", []):
            for change in entry.get("changes", []):
                value = change.get("value", {})
                if value.get("metadata", {}).get("phone_number_id") != phone_id:
                    continue  # another number's update
                for message in value.get("messages", []):  # statuses are ignored
                    if message.get("type") == "text":
                        await reply(message["from"], f"You said: {message['text']['body']}")
                    else:
                        await reply(message["from"], f"I can only read text, not {message['type']}")
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
    parser = argparse.ArgumentParser(description="An echo bot that replies inside its handler.")
    parser.add_argument("--port", type=int, default=8001)
    args = parser.parse_args()
    uvicorn.run(create_app(os.environ), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
