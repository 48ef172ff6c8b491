"""A minimal, independent WhatsApp bot, written as a third party would write one.

It imports nothing from this project: only the standard library, httpx and
starlette, and Meta's documented wire format. The interop tests drive it
through the simulator to show that a bot built to Meta's documentation works
against the simulator unchanged, with only its Graph API address swapped.

What it does: answers the verification handshake; checks X-Hub-Signature-256
on every POST (401 when missing, 403 when wrong); ignores updates for other
phone numbers; dedupes redeliveries by the raw body; answers 200 at once and
works in a background task; marks each message read, then replies:
``menu`` gets reply buttons, ``template`` gets a template, a tapped button
gets its title back, media is downloaded through the Graph API and its size
echoed, anything else is echoed.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

__all__ = ["BotConfig", "EchoBot"]


@dataclass
class BotConfig:
    """The bot's settings, as a real bot would read them from its environment."""

    app_secret: str
    verify_token: str
    access_token: str
    phone_number_id: str
    graph_url: str = "https://graph.facebook.com"
    api_version: str = "v25.0"
    #: Answer the first N webhook POSTs with 500 (to exercise Meta's retries).
    fail_first: int = 0


@dataclass
class EchoBot:
    """The bot: a Starlette app plus what it has seen, for the tests to inspect."""

    config: BotConfig
    client: httpx.AsyncClient
    raw_bodies: list[bytes] = field(default_factory=list)
    signatures: list[str] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    send_results: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    downloads: list[bytes] = field(default_factory=list)
    seen_bodies: set[str] = field(default_factory=set)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    posts: int = 0

    def app(self) -> Starlette:
        """The webhook endpoint, at ``/webhook``."""
        return Starlette(routes=[Route("/webhook", self.webhook, methods=["GET", "POST"])])

    async def webhook(self, request: Request) -> Response:
        """Handle the handshake (GET) and updates (POST)."""
        if request.method == "GET":
            params = request.query_params
            if (
                params.get("hub.mode") == "subscribe"
                and params.get("hub.verify_token") == self.config.verify_token
            ):
                return PlainTextResponse(params.get("hub.challenge", ""))
            return PlainTextResponse("forbidden", status_code=403)
        body = await request.body()
        header = request.headers.get("x-hub-signature-256")
        if header is None:
            return PlainTextResponse("missing signature", status_code=401)
        expected = (
            "sha256=" + hmac.new(self.config.app_secret.encode(), body, hashlib.sha256).hexdigest()
        )
        if not hmac.compare_digest(expected, header):
            return PlainTextResponse("bad signature", status_code=403)
        self.posts += 1
        self.raw_bodies.append(body)
        self.signatures.append(header)
        if self.posts <= self.config.fail_first:
            return PlainTextResponse("try again", status_code=500)
        digest = hashlib.sha256(body).hexdigest()
        if digest in self.seen_bodies:
            return PlainTextResponse("ok")
        self.seen_bodies.add(digest)
        task = asyncio.get_running_loop().create_task(self._handle(json.loads(body)))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return PlainTextResponse("ok")

    async def _handle(self, payload: dict[str, Any]) -> None:
        for entry in payload.get("entry", []):
            for change in entry.get("changes", []):
                value = change.get("value", {})
                if value.get("metadata", {}).get("phone_number_id") != self.config.phone_number_id:
                    continue
                self.statuses.extend(value.get("statuses", []))
                for message in value.get("messages", []):
                    self.messages.append(message)
                    await self._answer(message)

    async def _answer(self, message: dict[str, Any]) -> None:
        await self.send(
            {"messaging_product": "whatsapp", "status": "read", "message_id": message["id"]}
        )
        to = message.get("from")
        kind = message.get("type")
        if kind == "text":
            text = message["text"]["body"]
            if text == "menu":
                await self.send(_buttons(to))
            elif text == "template":
                await self.send(
                    {
                        "messaging_product": "whatsapp",
                        "to": to,
                        "type": "template",
                        "template": {"name": "hello_world", "language": {"code": "en_US"}},
                    }
                )
            else:
                await self.send(_text(to, f"echo: {text}"))
        elif kind == "interactive":
            reply = message["interactive"].get("button_reply") or message["interactive"].get(
                "list_reply"
            )
            await self.send(_text(to, f"you chose {reply['title']}"))
        elif kind in {"image", "audio", "video", "document", "sticker"}:
            data = await self.download(message[kind]["id"])
            await self.send(_text(to, f"got {len(data)} bytes"))
        else:
            await self.send(_text(to, f"can't handle {kind}"))

    def _url(self, path: str) -> str:
        return f"{self.config.graph_url}/{self.config.api_version}/{path}"

    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.config.access_token}"}

    async def send(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """POST a send body to the Graph API and remember the answer."""
        response = await self.client.post(
            self._url(f"{self.config.phone_number_id}/messages"), json=body, headers=self._auth()
        )
        result = (response.status_code, response.json())
        self.send_results.append(result)
        return result

    async def download(self, media_id: str) -> bytes:
        """Fetch a media object's URL, then its bytes, as Meta documents."""
        meta = await self.client.get(self._url(media_id), headers=self._auth())
        meta.raise_for_status()
        data = await self.client.get(meta.json()["url"], headers=self._auth())
        data.raise_for_status()
        self.downloads.append(data.content)
        return data.content

    async def idle(self) -> None:
        """Wait for the background work in flight."""
        while self.tasks:
            await asyncio.gather(*list(self.tasks))


def _text(to: str | None, body: str) -> dict[str, Any]:
    return {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": to,
        "type": "text",
        "text": {"preview_url": False, "body": body},
    }


def _buttons(to: str | None) -> dict[str, Any]:
    return {
        "messaging_product": "whatsapp",
        "to": to,
        "type": "interactive",
        "interactive": {
            "type": "button",
            "body": {"text": "Keep 9am?"},
            "action": {
                "buttons": [
                    {"type": "reply", "reply": {"id": "keep", "title": "Keep"}},
                    {"type": "reply", "reply": {"id": "move", "title": "Move"}},
                ]
            },
        },
    }
