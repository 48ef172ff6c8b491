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

It reads webhooks the way bot frameworks do: every field Meta always sends is
read by subscript (``value["contacts"][0]["user_id"]``), so a webhook that
lacks one raises, as it would in such a framework; only fields Meta documents
as optional are read with ``get``. A webhook it can't read is answered 200,
as frameworks do, and the error is kept in ``errors`` for the tests to see.
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

__all__ = ["BotConfig", "EchoBot", "Inbound", "Outcome", "Read", "read_webhook"]

_MEDIA = {"image", "audio", "video", "document", "sticker"}
# What Meta always sends on each kind of media besides id, mime_type and sha256.
_MEDIA_FLAG = {"audio": "voice", "document": "filename", "sticker": "animated"}


@dataclass(frozen=True)
class Inbound:
    """A user's message as the bot read it: the item, who sent it, and the fields it used."""

    message: dict[str, Any]
    user_id: str
    wa_id: str | None
    """``None`` for a username-only user, known by BSUID alone."""
    fields: dict[str, Any]


@dataclass(frozen=True)
class Outcome:
    """A status of one of the bot's messages as the bot read it: the item and the fields it used."""

    status: dict[str, Any]
    fields: dict[str, Any]


@dataclass
class Read:
    """What one webhook told the bot: messages and statuses."""

    messages: list[Inbound] = field(default_factory=list)
    statuses: list[Outcome] = field(default_factory=list)


def read_webhook(payload: dict[str, Any], phone_number_id: str) -> Read:
    """Read a webhook body as bot frameworks do: a missing required key raises.

    Changes for another phone number are skipped: the bot answers for its own.
    """
    read = Read()
    for entry in payload["entry"]:
        for change in entry["changes"]:
            value = change["value"]
            if change["field"] != "messages":
                continue
            if value["metadata"]["phone_number_id"] != phone_number_id:
                continue
            for message in value.get("messages", []):
                read.messages.append(_read_message(value, message))
            for status in value.get("statuses", []):
                read.statuses.append(_read_status(value, status))
    return read


def _read_message(value: dict[str, Any], message: dict[str, Any]) -> Inbound:
    kind = message["type"]
    fields: dict[str, Any] = {"id": message["id"], "timestamp": int(message["timestamp"])}
    if kind == "system":  # no contacts: the system object says who changed what
        fields.update(system=message["system"]["type"], body=message["system"]["body"])
        return Inbound(message, message["from_user_id"], message["from"], fields)
    contact = value["contacts"][0]
    user_id: str = contact["user_id"]
    wa_id: str | None = contact.get("wa_id")
    fields["name"] = contact["profile"]["name"]
    if wa_id is not None and message["from"] != wa_id:
        raise ValueError(f"a message from {message['from']} under the contact of {wa_id}")
    if "errors" in value:  # Meta could not read the message: it may lack its object
        fields["error"] = value["errors"][0]["code"]
    elif kind == "text":
        fields["body"] = message["text"]["body"]
    elif kind == "interactive":
        reply = message["interactive"][message["interactive"]["type"]]
        fields.update(reply_id=reply["id"], title=reply["title"], to=message["context"]["id"])
    elif kind == "button":
        button = message["button"]
        fields.update(payload=button["payload"], title=button["text"], to=message["context"]["id"])
    elif kind in _MEDIA:
        media = message[kind]
        fields.update(media_id=media["id"], mime_type=media["mime_type"], sha256=media["sha256"])
        if kind in _MEDIA_FLAG:
            fields[_MEDIA_FLAG[kind]] = media[_MEDIA_FLAG[kind]]
    elif kind == "location":
        place = message["location"]
        fields.update(latitude=float(place["latitude"]), longitude=float(place["longitude"]))
    elif kind == "contacts":
        fields["cards"] = [card["name"]["formatted_name"] for card in message["contacts"]]
    elif kind == "reaction":
        fields.update(to=message["reaction"]["message_id"], emoji=message["reaction"].get("emoji"))
    elif kind == "unsupported":
        fields["error"] = message["errors"][0]["code"]
    elif kind == "order":
        items = message["order"]["product_items"]
        fields["items"] = [(item["product_retailer_id"], item["quantity"]) for item in items]
    return Inbound(message, user_id, wa_id, fields)


def _read_status(value: dict[str, Any], status: dict[str, Any]) -> Outcome:
    fields = {"id": status["id"], "status": status["status"], "at": int(status["timestamp"])}
    user_id = value["contacts"][0]["user_id"]
    if status["recipient_user_id"] != user_id:
        raise ValueError(
            f"a status of {status['recipient_user_id']} under the contact of {user_id}"
        )
    if status["status"] == "failed":
        error = status["errors"][0]
        fields.update(code=error["code"], title=error["title"])
        fields["details"] = error["error_data"]["details"]
    if "pricing" in status:
        fields["category"] = status["pricing"]["category"]
    return Outcome(status, fields)


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
    #: Why each webhook the bot could not read failed, as "ExceptionName: message".
    errors: list[str] = field(default_factory=list)
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
        try:
            read = read_webhook(json.loads(body), self.config.phone_number_id)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            self.errors.append(f"{type(exc).__name__}: {exc}")
            return PlainTextResponse("ok")
        task = asyncio.get_running_loop().create_task(self._handle(read))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return PlainTextResponse("ok")

    async def _handle(self, read: Read) -> None:
        self.statuses.extend(outcome.status for outcome in read.statuses)
        for inbound in read.messages:
            self.messages.append(inbound.message)
            if inbound.message["type"] != "system":
                to = {"to": inbound.wa_id} if inbound.wa_id else {"recipient": inbound.user_id}
                await self._answer(inbound.message, to)

    async def _answer(self, message: dict[str, Any], to: dict[str, str]) -> None:
        await self.send(
            {"messaging_product": "whatsapp", "status": "read", "message_id": message["id"]}
        )
        kind = message["type"]
        if kind == "text":
            text = message["text"]["body"]
            if text == "menu":
                await self.send(_buttons(to))
            elif text == "template":
                await self.send(
                    {
                        "messaging_product": "whatsapp",
                        **to,
                        "type": "template",
                        "template": {"name": "hello_world", "language": {"code": "en_US"}},
                    }
                )
            else:
                await self.send(_text(to, f"echo: {text}"))
        elif kind == "interactive" and "interactive" in message:
            reply = message["interactive"][message["interactive"]["type"]]
            await self.send(_text(to, f"you chose {reply['title']}"))
        elif kind in _MEDIA:
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


def _text(to: dict[str, str], body: str) -> dict[str, Any]:
    return {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        **to,
        "type": "text",
        "text": {"preview_url": False, "body": body},
    }


def _buttons(to: dict[str, str]) -> dict[str, Any]:
    return {
        "messaging_product": "whatsapp",
        **to,
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
