"""Playing Meta by hand for the bots' tests: signed webhooks in, a recording Graph API out.

The payloads are built here from Meta's documented wire format, not with the
harness's builders, so the bots' tests do not depend on the code the bots will
later be used to test. :class:`FakeGraph` stands in for the Graph API through
an ``httpx.MockTransport``; :class:`Driver` posts to a bot through
``httpx.ASGITransport`` and notes, in one shared log, when each webhook
response completed and when each send reached the Graph API, so a test can
tell "before the 200" from "after".
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.types import Message, Receive, Scope, Send

__all__ = [
    "PHONE_NUMBER_ID",
    "SETTINGS",
    "USER",
    "Driver",
    "FakeGraph",
    "Sent",
    "button_reply",
    "compact",
    "envelope",
    "signature",
    "status_update",
    "text_message",
]

PHONE_NUMBER_ID = "100200300400500"
USER = "5511987654321"
SETTINGS: Mapping[str, str] = {
    "WHATSAPP_APP_SECRET": "bots-app-secret",
    "WHATSAPP_VERIFY_TOKEN": "bots-verify-token",
    "WHATSAPP_ACCESS_TOKEN": "EAAGbotstoken",
    "WHATSAPP_PHONE_NUMBER_ID": PHONE_NUMBER_ID,
    "WHATSAPP_GRAPH_URL": "http://graph.test",
}
_wamids = itertools.count(1)


def envelope(value: dict[str, Any], *, phone_number_id: str = PHONE_NUMBER_ID) -> dict[str, Any]:
    """The webhook envelope around one change's ``value``."""
    metadata = {"display_phone_number": "15550001111", "phone_number_id": phone_number_id}
    change = {
        "value": {"messaging_product": "whatsapp", "metadata": metadata, **value},
        "field": "messages",
    }
    return {
        "object": "whatsapp_business_account",
        "entry": [{"id": "1029384756", "changes": [change]}],
    }


def _inbound(message: dict[str, Any], user: str, phone_number_id: str) -> dict[str, Any]:
    contact = {"profile": {"name": "Ana"}, "wa_id": user, "user_id": f"BR.{user[-10:]}"}
    header = {"from": user, "id": message.pop("id"), "timestamp": str(int(time.time()))}
    value = {"contacts": [contact], "messages": [{**header, **message}]}
    return envelope(value, phone_number_id=phone_number_id)


def text_message(
    text: str,
    *,
    wamid: str | None = None,
    user: str = USER,
    phone_number_id: str = PHONE_NUMBER_ID,
) -> dict[str, Any]:
    """A webhook carrying one text message (a fresh wamid unless given)."""
    wamid = wamid or f"wamid.BOTS_IN_{next(_wamids)}"
    body = {"id": wamid, "type": "text", "text": {"body": text}}
    return _inbound(body, user, phone_number_id)


def button_reply(
    button_id: str, title: str, *, wamid: str | None = None, user: str = USER
) -> dict[str, Any]:
    """A webhook carrying a tap on a reply button."""
    wamid = wamid or f"wamid.BOTS_IN_{next(_wamids)}"
    reply = {"type": "button_reply", "button_reply": {"id": button_id, "title": title}}
    context = {"from": "15550001111", "id": "wamid.BOTS_OUT_1"}
    body = {"id": wamid, "type": "interactive", "interactive": reply, "context": context}
    return _inbound(body, user, PHONE_NUMBER_ID)


def status_update(wamid: str, status: str = "delivered", *, user: str = USER) -> dict[str, Any]:
    """A status webhook for a message the bot sent."""
    now = str(int(time.time()))
    item = {"id": wamid, "status": status, "timestamp": now, "recipient_id": user}
    value = {"contacts": [{"wa_id": user, "user_id": f"BR.{user[-10:]}"}], "statuses": [item]}
    return envelope(value)


def compact(payload: dict[str, Any]) -> bytes:
    """``payload`` as Meta sends it: compact JSON, non-ASCII escaped."""
    return json.dumps(payload, separators=(",", ":")).encode()


def signature(raw: bytes, secret: str = SETTINGS["WHATSAPP_APP_SECRET"]) -> str:
    """The ``X-Hub-Signature-256`` header value for ``raw``."""
    return "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Sent:
    """One call that reached the fake Graph API."""

    path: str
    body: dict[str, Any]
    authorization: str | None
    at: float  # time.monotonic()


@dataclass
class FakeGraph:
    """The Graph API's send endpoint, answering as Meta does and recording every call."""

    log: list[str] = field(default_factory=list)
    sends: list[Sent] = field(default_factory=list)

    def handle(self, request: httpx.Request) -> httpx.Response:
        """Answer one Graph API call (the ``MockTransport`` handler)."""
        body = json.loads(request.content)
        self.sends.append(
            Sent(request.url.path, body, request.headers.get("authorization"), time.monotonic())
        )
        self.log.append("send")
        if body.get("status") == "read":
            return httpx.Response(200, json={"success": True})
        wamid = f"wamid.BOTS_OUT_{len(self.sends)}"
        contacts = [{"input": body.get("to"), "wa_id": body.get("to")}]
        answer = {
            "messaging_product": "whatsapp",
            "contacts": contacts,
            "messages": [{"id": wamid}],
        }
        return httpx.Response(200, json=answer)

    def client(self) -> httpx.AsyncClient:
        """A client whose every request lands here."""
        return httpx.AsyncClient(transport=httpx.MockTransport(self.handle))

    def replies(self) -> list[dict[str, Any]]:
        """The sends that were messages (not read marks), in order."""
        return [sent.body for sent in self.sends if sent.body.get("status") != "read"]

    async def wait_for(self, count: int, *, within: float = 2.0) -> None:
        """Wait until ``count`` calls arrived; fails after ``within`` seconds."""
        deadline = time.monotonic() + within
        while len(self.sends) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(self.sends)} Graph API calls, expected {count}")
            await asyncio.sleep(0.01)


class Driver:
    """Posts webhooks to a bot in-process and logs when each response completed."""

    def __init__(self, app: Starlette, graph: FakeGraph) -> None:
        self.app = app
        self.graph = graph
        self.log = graph.log
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self._watched), base_url="http://bot.test"
        )

    async def _watched(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def noting(message: Message) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                self.log.append("response")

        await self.app(scope, receive, noting)

    async def post(self, payload: dict[str, Any], *, secret: str | None = None) -> httpx.Response:
        """POST ``payload`` to ``/webhook``, signed with the app secret (or ``secret``)."""
        raw = compact(payload)
        header = signature(raw, secret or SETTINGS["WHATSAPP_APP_SECRET"])
        return await self.post_raw(raw, {"X-Hub-Signature-256": header})

    async def post_raw(self, raw: bytes, headers: Mapping[str, str]) -> httpx.Response:
        """POST these exact bytes and headers to ``/webhook``."""
        headers = {"Content-Type": "application/json", **headers}
        return await self.client.post("/webhook", content=raw, headers=headers)

    async def aclose(self) -> None:
        """Close the client."""
        await self.client.aclose()
