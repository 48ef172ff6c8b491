"""Two echo bots that break the factory contract the way production code often does.

A production process serves one app for its whole life, so its bot is often
written as module-level objects. Under a harness that builds an agent per
scenario, each on an event loop of its own, that goes wrong:

- ``shared_factory`` returns the app built once, at import time, after
  pointing its module-level settings and Graph API client at whichever
  scenario called last: every scenario shares one app and its state;
- ``queue_factory`` builds a fresh app on every call, but each app sends its
  replies through a queue made at import time, which asyncio binds to the
  first event loop that waits on it: on another scenario's loop the bot's
  sender task dies with "is bound to a different event loop".

Like the other bots, they import nothing from this project (the factories
read ``env.settings`` and ``env.http_client`` by name).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

__all__ = ["queue_factory", "shared_factory"]

# -- one app for the life of the process ---------------------------------------------

_settings: dict[str, str] = {}
_graph: dict[str, httpx.AsyncClient] = {}


def _messages_url(settings: dict[str, str]) -> str:
    graph = settings["WHATSAPP_GRAPH_URL"].rstrip("/")
    version = settings.get("WHATSAPP_API_VERSION", "v25.0")
    return f"{graph}/{version}/{settings['WHATSAPP_PHONE_NUMBER_ID']}/messages"


async def _send(client: httpx.AsyncClient, settings: dict[str, str], to: str, text: str) -> None:
    body = {"messaging_product": "whatsapp", "to": to, "type": "text", "text": {"body": text}}
    auth = {"Authorization": f"Bearer {settings['WHATSAPP_ACCESS_TOKEN']}"}
    await client.post(_messages_url(settings), json=body, headers=auth)


def _texts(update: dict[str, Any]) -> list[tuple[str, str]]:
    found = []
    for entry in update.get("entry", []):
        for change in entry.get("changes", []):
            for message in change.get("value", {}).get("messages", []):
                found.append((message["from"], message.get("text", {}).get("body", "")))
    return found


def _handshake(request: Request) -> Response:
    return PlainTextResponse(request.query_params.get("hub.challenge", ""))


async def _shared_webhook(request: Request) -> Response:
    if request.method == "GET":
        return _handshake(request)
    for user, text in _texts(await request.json()):
        await _send(_graph["client"], _settings, user, f"You said: {text}")
    return PlainTextResponse("ok")


#: Built once, when the module is imported: the mistake.
app = Starlette(routes=[Route("/webhook", _shared_webhook, methods=["GET", "POST"])])


def shared_factory(env: Any) -> Starlette:
    """Point the module's app at this scenario, and return it (the same app every time)."""
    _settings.update(env.settings)
    _graph["client"] = env.http_client
    return app


# -- a fresh app, but a queue for the life of the process ----------------------------

#: Made when the module is imported: the first loop that waits on it owns it.
_outbox: asyncio.Queue[tuple[str, str]] = asyncio.Queue()


def queue_factory(env: Any) -> Starlette:
    """A fresh app whose replies go through the module's queue, sent by a task of its own."""
    settings = dict(env.settings)
    client: httpx.AsyncClient = env.http_client
    sender: asyncio.Task[None] | None = None

    async def send_forever() -> None:
        while True:
            user, text = await _outbox.get()
            await _send(client, settings, user, text)

    async def webhook(request: Request) -> Response:
        nonlocal sender
        if request.method == "GET":
            return _handshake(request)
        if sender is None:
            sender = asyncio.get_running_loop().create_task(send_forever())
        for user, text in _texts(await request.json()):
            await _outbox.put((user, f"You said: {text}"))
        return PlainTextResponse("ok")

    return Starlette(routes=[Route("/webhook", webhook, methods=["GET", "POST"])])
