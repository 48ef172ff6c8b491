"""Every kind of webhook the simulator sends, and every kind of answer its Graph API gives.

:func:`recorded_traffic` runs one simulator on a virtual clock against a bot
that only listens (it answers the verification handshake and keeps every
POST as it came: raw bytes and signature), while this module plays the bot's
sending side through the fake Graph API. Users send every type of message
(through the simulator's own entry points: ``say``, ``tap``, ``send_media``,
``receive``, ``receive_recorded``); the bot's sends earn statuses (sent,
delivered, read, and failed with 131047, 131009 and 131026); and every Graph
API answer is kept with the place in Meta's file of the schema it must match.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from channels.whatsapp.channel import MEDIA_SAMPLES
from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.errors import error_object
from channels.whatsapp.messages import (
    Context,
    contact_card,
    contacts_message,
    template_button,
    unsupported,
)
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.clock import VirtualClock

__all__ = [
    "ANSWER_KINDS",
    "MESSAGE_KINDS",
    "NOT_YET_AS_META",
    "STATUS_KINDS",
    "WEBHOOK_KINDS",
    "Answer",
    "Delivery",
    "Traffic",
    "recorded_traffic",
]

ANA: Final = "5511987654321"
"""A user with a phone number and a profile name."""
STRANGER: Final = "16505550199"
"""A number with no WhatsApp account (a user set not on WhatsApp): sends to it fail with 131026."""

MESSAGE_KINDS: Final = (
    "text",
    "text_reply",
    "text_forwarded",
    "text_frequently_forwarded",
    "button_reply",
    "list_reply",
    "template_quick_reply",
    "image",
    "audio_voice",
    "video",
    "document",
    "sticker",
    "location",
    "contacts",
    "reaction",
    "reaction_removed",
    "unsupported",
    "order",
    "system_user_changed_number",
    "text_from_username_only_user",
    "interactive_unreadable_with_value_errors",
)
STATUS_KINDS: Final = (
    "status_sent",
    "status_delivered",
    "status_read",
    "status_sent_template",
    "status_sent_reaction",
    "status_sent_to_username_only_user",
    "status_failed_131047",
    "status_failed_131009",
    "status_failed_131026",
)
WEBHOOK_KINDS: Final = (*MESSAGE_KINDS, *STATUS_KINDS)

NOT_YET_AS_META: Final[dict[str, str]] = {}
"""Webhooks the simulator does not send as Meta does yet, and how they differ.

Meta's schema takes them (it says nothing of a status's contacts), but clients
that read what Meta sends break on them; the tests of those clients expect
them to fail until the simulator changes.
"""

_SCHEMA: Final = "/components/schemas/"
_OK_JSON: Final = "responses/200/content/application~1json/schema"
_MESSAGES_200: Final = f"/paths/~1{{Version}}~1{{Phone-Number-ID}}~1messages/post/{_OK_JSON}"
_MEDIA_200: Final = "/paths/~1{Version}~1{Media-ID}/%s/" + _OK_JSON
_UPLOAD_200: Final = f"/paths/~1{{Version}}~1{{Phone-Number-ID}}~1media/post/{_OK_JSON}"
_ERROR: Final = f"{_SCHEMA}GraphAPIError"

ANSWER_KINDS: Final = {
    "sent_text": _MESSAGES_200,
    "sent_template": _MESSAGES_200,
    "sent_to_bsuid": _MESSAGES_200,
    "marked_read": f"{_SCHEMA}MarkMessageResponsePayload",
    "typing_indicator": f"{_SCHEMA}MarkMessageResponsePayload",
    "media_uploaded": _UPLOAD_200,
    "media_url": _MEDIA_200 % "get",
    "media_deleted": _MEDIA_200 % "delete",
    "error_invalid_parameter": _ERROR,
    "error_missing_parameter": _ERROR,
    "error_unknown_type": _ERROR,
    "error_template_not_found": _ERROR,
    "error_bad_token": _ERROR,
    "error_no_payments": _ERROR,
    "error_unknown_media": _ERROR,
    "error_unknown_path": _ERROR,
    "error_wrong_method": _ERROR,
}
"""Each answer the traffic records, and the place in Meta's file of the schema it must match."""


@dataclass(frozen=True, slots=True)
class Delivery:
    """One webhook POST as the bot received it."""

    body: bytes
    signature: str


@dataclass(frozen=True, slots=True)
class Answer:
    """One Graph API answer: its status and JSON body."""

    status: int
    body: Any


@dataclass
class Traffic:
    """What one run recorded: webhooks by kind, Graph API answers by kind, and the settings."""

    config: SimulatorConfig
    webhooks: dict[str, Delivery] = field(default_factory=dict)
    answers: dict[str, Answer] = field(default_factory=dict)


@dataclass
class _Listener:
    """A bot that answers the handshake and keeps every POST; it never replies."""

    verify_token: str
    posts: list[Delivery] = field(default_factory=list)

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/webhook", self.webhook, methods=["GET", "POST"])])

    async def webhook(self, request: Request) -> Response:
        if request.method == "GET":
            if request.query_params.get("hub.verify_token") != self.verify_token:
                return PlainTextResponse("forbidden", status_code=403)
            return PlainTextResponse(request.query_params.get("hub.challenge", ""))
        signature = request.headers.get("x-hub-signature-256", "")
        self.posts.append(Delivery(await request.body(), signature))
        return PlainTextResponse("ok")


class _Run:
    """The bot's sending side, and the bookkeeping that names each webhook by kind."""

    def __init__(self, sim: WhatsAppSimulator, graph: httpx.AsyncClient) -> None:
        self.sim = sim
        self.graph = graph
        self.config = sim.config
        self.kinds: dict[tuple[str, str], str] = {}
        self.answers: dict[str, Answer] = {}
        #: The first message a user sent (what receipts and reactions point at).
        self.hello = ""

    @property
    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.config.access_token}"}

    def _path(self, tail: str) -> str:
        return f"/{self.config.api_version}/{tail}"

    async def call(self, kind: str | None, method: str, tail: str, **kwargs: Any) -> httpx.Response:
        """A Graph API call; its answer is kept under ``kind``."""
        headers = {**self._auth, **kwargs.pop("headers", {})}
        response = await self.graph.request(method, self._path(tail), headers=headers, **kwargs)
        if kind is not None:
            self.answers[kind] = Answer(response.status_code, response.json())
        return response

    async def send(self, body: Mapping[str, Any], kind: str | None = None) -> str:
        """The bot sends ``body``; returns the new wamid."""
        answer = await self.call(
            kind, "POST", f"{self.config.phone_number_id}/messages", json=dict(body)
        )
        assert answer.status_code == 200, answer.text
        wamid: str = answer.json()["messages"][0]["id"]
        return wamid

    def expect(self, wamid: str, item: str, kind: str) -> None:
        """The webhook about ``wamid`` (``"message"`` or a status value) is of ``kind``."""
        self.kinds[wamid, item] = kind

    async def receive(self, user: str, message: Mapping[str, Any], kind: str) -> str:
        wamid = await self.sim.receive(user, message)
        self.expect(wamid, "message", kind)
        return wamid


def _text(to: str, body: str, **extra: Any) -> dict[str, Any]:
    return {
        "messaging_product": "whatsapp",
        "to": to,
        "type": "text",
        "text": {"body": body},
        **extra,
    }


def _buttons(to: str) -> dict[str, Any]:
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


def _list(to: str) -> dict[str, Any]:
    rows = [{"id": "express", "title": "Express", "description": "1-2 days"}]
    return {
        "messaging_product": "whatsapp",
        "to": to,
        "type": "interactive",
        "interactive": {
            "type": "list",
            "body": {"text": "How fast?"},
            "action": {"button": "Options", "sections": [{"title": "Fast", "rows": rows}]},
        },
    }


def _template(to: str) -> dict[str, Any]:
    return {
        "messaging_product": "whatsapp",
        "to": to,
        "type": "template",
        "template": {
            "name": "order_update",
            "language": {"code": "en_US"},
            "components": [{"type": "body", "parameters": [{"type": "text", "text": "#42"}]}],
        },
    }


def _order() -> dict[str, Any]:
    item = {"product_retailer_id": "di9ozbzfi4", "quantity": 2, "item_price": 30, "currency": "USD"}
    return {
        "type": "order",
        "order": {"catalog_id": "194836987003835", "text": "", "product_items": [item]},
    }


async def _messages(run: _Run, ana: str, jo: str) -> None:
    """Users send every type of message; the bot sends what they answer."""
    sim, business = run.sim, run.config.display_phone_number
    [hello] = await sim.say(ana, "hello")
    run.expect(hello, "message", "text")
    run.hello = hello
    quoted = await run.send(_text(ana, "Table for two at 9am?"), "sent_text")
    await run.receive(
        ana,
        {"type": "text", "text": {"body": "yes"}, "context": {"from": business, "id": quoted}},
        "text_reply",
    )
    forwarded = {"type": "text", "text": {"body": "look at this"}}
    await run.receive(ana, {**forwarded, "context": {"forwarded": True}}, "text_forwarded")
    await run.receive(
        ana, {**forwarded, "context": {"frequently_forwarded": True}}, "text_frequently_forwarded"
    )
    await run.send(_buttons(ana))
    run.expect(await sim.tap(ana, "keep"), "message", "button_reply")
    await run.send(_list(ana))
    run.expect(await sim.tap(ana, "Express"), "message", "list_reply")
    template = await run.send(_template(ana), "sent_template")
    tapped = template_button(
        "x",
        ana,
        sim.clock.now(),
        "CONFIRM",
        "Confirm",
        context=Context(from_=business, id=template),
    )
    await run.receive(ana, tapped.to_dict(), "template_quick_reply")
    for kind, name in (
        ("image", "image"),
        ("audio", "audio_voice"),
        ("video", "video"),
        ("document", "document"),
        ("sticker", "sticker"),
    ):
        data, mime_type = MEDIA_SAMPLES[kind]
        caption = "Menu" if kind in {"image", "video", "document"} else None
        wamid = await sim.send_media(ana, kind, data, mime_type=mime_type, caption=caption)
        run.expect(wamid, "message", name)
    place = {"latitude": 37.4847, "longitude": -122.1486, "name": "HQ", "address": "1 Hacker Way"}
    await run.receive(ana, {"type": "location", "location": place}, "location")
    card = contact_card("Chandler Bing", "+1 555-555-5555", wa_id="15555555555")
    shared = contacts_message("x", ana, sim.clock.now(), [card]).to_dict()
    await run.receive(ana, shared, "contacts")
    await run.receive(
        ana, {"type": "reaction", "reaction": {"message_id": quoted, "emoji": "👍"}}, "reaction"
    )
    await run.receive(
        ana,
        {"type": "reaction", "reaction": {"message_id": quoted, "emoji": ""}},
        "reaction_removed",
    )
    poll = unsupported("x", ana, sim.clock.now(), "poll").to_dict()
    await run.receive(ana, poll, "unsupported")
    await run.receive(ana, _order(), "order")
    [from_jo] = await sim.say(jo, "hello from a username")
    run.expect(from_jo, "message", "text_from_username_only_user")
    await _unreadable(run, ana)
    change = {
        "body": "User Ana changed from 5511987654321 to 5511912345678",
        "wa_id": "5511912345678",
        "type": "user_changed_number",
    }
    await run.receive(ana, {"type": "system", "system": change}, "system_user_changed_number")


async def _unreadable(run: _Run, ana: str) -> None:
    """Meta's observed ``value.errors`` sample: an interactive message without its object."""
    who = run.sim.user(ana)
    item = {"from": ana, "type": "interactive"}
    errors = [error_object(131000, details="Unsupported webhook payload", with_message=False)]
    envelope = {
        "contacts": [{"profile": {"name": who.name}, "wa_id": ana, "user_id": who.user_id}],
        "errors": [error.to_dict() for error in errors],
    }
    wamid = "wamid.HBgNNTUxMTk4NzY1NDMyMRUCABIYFEE5RUEzRkU1NDZEQUU3MkMxNjUxAA=="
    await run.sim.receive_recorded(ana, item, envelope, wamid=wamid)
    run.expect(wamid, "message", "interactive_unreadable_with_value_errors")


async def _statuses(run: _Run, ana: str, jo: str) -> None:
    """The bot's sends and what becomes of them; a day later the window has closed."""
    sim = run.sim
    sent = await run.send(_text(ana, "See you at 9"))
    for value in ("sent", "delivered", "read"):
        run.expect(sent, value, f"status_{value}")
    template = await run.send(_template(ana))
    run.expect(template, "sent", "status_sent_template")
    reaction = {"message_id": run.hello, "emoji": "👍"}
    reacted = await run.send(
        {"messaging_product": "whatsapp", "to": ana, "type": "reaction", "reaction": reaction}
    )
    run.expect(reacted, "sent", "status_sent_reaction")
    user_id = sim.user(jo).user_id
    to_jo = await run.send(
        {
            "messaging_product": "whatsapp",
            "recipient": user_id,
            "type": "text",
            "text": {"body": "hi"},
        },
        "sent_to_bsuid",
    )
    run.expect(to_jo, "sent", "status_sent_to_username_only_user")
    unknown = {
        "message_id": "wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI0RTJEOTc2ODVERUY5RDlGNkYA",
        "emoji": "👍",
    }
    bad_reaction = await run.send(
        {"messaging_product": "whatsapp", "to": ana, "type": "reaction", "reaction": unknown}
    )
    run.expect(bad_reaction, "failed", "status_failed_131009")
    sim.add_user(STRANGER, on_whatsapp=False)
    stranger = await run.send(_text(STRANGER, "Your order shipped"))
    run.expect(stranger, "failed", "status_failed_131026")
    await sim.settle()
    await sim.advance(25 * 3600)
    late = await run.send(_text(ana, "Still there?"))
    run.expect(late, "failed", "status_failed_131047")
    await sim.settle()


async def _answers(run: _Run, ana: str) -> None:
    """The Graph API's other answers: receipts, media, and errors of every kind."""
    phone = run.config.phone_number_id
    messages = f"{phone}/messages"
    receipt = {"messaging_product": "whatsapp", "status": "read", "message_id": run.hello}
    await run.call("marked_read", "POST", messages, json=receipt)
    typing = {**receipt, "typing_indicator": {"type": "text"}}
    await run.call("typing_indicator", "POST", messages, json=typing)
    data, mime_type = MEDIA_SAMPLES["image"]
    files = {"file": ("menu.jpg", data, mime_type)}
    form = {"messaging_product": "whatsapp", "type": mime_type}
    uploaded = await run.call("media_uploaded", "POST", f"{phone}/media", data=form, files=files)
    media_id = uploaded.json()["id"]
    await run.call("media_url", "GET", media_id, params={"phone_number_id": phone})
    await run.call("media_deleted", "DELETE", media_id, params={"phone_number_id": phone})
    await run.call("error_unknown_media", "GET", media_id)
    bad = {
        "error_invalid_parameter": _text(ana, "x" * 4097),
        "error_missing_parameter": {"messaging_product": "whatsapp", "to": ana, "type": "text"},
        "error_unknown_type": {"messaging_product": "whatsapp", "to": ana, "type": "poll"},
        "error_template_not_found": {
            **_template(ana),
            "template": {"name": "no_such_template", "language": {"code": "en_US"}},
        },
        "error_no_payments": {
            "messaging_product": "whatsapp",
            "to": ana,
            "type": "interactive",
            "interactive": {
                "type": "order_details",
                "body": {"text": "Your order"},
                "action": {"name": "review_and_pay", "parameters": {"reference_id": "r-1"}},
            },
        },
    }
    for kind, body in bad.items():
        await run.call(kind, "POST", messages, json=body)
    await run.call(
        "error_bad_token",
        "POST",
        messages,
        json=_text(ana, "hi"),
        headers={"Authorization": "Bearer nope"},
    )
    await run.call("error_unknown_path", "GET", f"{phone}/no_such_edge/deeper")
    await run.call("error_wrong_method", "PUT", messages, json={})


def _named(listener: _Listener, kinds: Mapping[tuple[str, str], str]) -> dict[str, Delivery]:
    from json import loads

    named: dict[str, Delivery] = {}
    for post in listener.posts:
        value = loads(post.body)["entry"][0]["changes"][0]["value"]
        if value.get("messages"):
            key = (value["messages"][0]["id"], "message")
        else:
            item = value["statuses"][0]
            key = (item["id"], item["status"])
        kind = kinds.get(key)
        if kind is not None:
            named.setdefault(kind, post)
    return named


async def _record() -> Traffic:
    config = SimulatorConfig()
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    listener = _Listener(config.verify_token)
    sim.connect(listener.app())
    ana = sim.add_user(ANA, "Ana").key
    jo = sim.add_user(None, "Jo").key
    try:
        async with sim.graph_client() as graph:
            run = _Run(sim, graph)
            await _messages(run, ana, jo)
            await sim.settle()
            await _answers(run, ana)
            await _statuses(run, ana, jo)
    finally:
        await sim.aclose()
    return Traffic(config, _named(listener, run.kinds), run.answers)


@functools.cache
def recorded_traffic() -> Traffic:
    """The traffic of one run, recorded once per test session."""
    return asyncio.run(_record())
