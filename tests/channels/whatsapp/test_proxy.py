"""The recording proxy, in-process: the simulator plays Meta, a stub plays the agent.

Webhooks go from the simulator to the proxy app through ``httpx.ASGITransport``
and on to a stub agent the same way; the agent's Graph API calls go through
the proxy to the simulator's fake Graph API. Over-the-wire tests are in
``tests/integration/test_proxy_chain.py``.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.envelope import batch_webhooks, build_webhook, contact
from channels.whatsapp.messages import parse_message
from channels.whatsapp.proxy import (
    create_proxy_app,
)
from channels.whatsapp.proxy_cli import parse_listen, proxy_command, proxy_main
from channels.whatsapp.proxy_collector import RecordingCollector
from channels.whatsapp.proxy_record import ProxyRecorder
from channels.whatsapp.proxy_settings import ProxySettings
from channels.whatsapp.pseudonyms import Pseudonymizer, new_pseudonym_key
from channels.whatsapp.signing import SignedBody
from channels.whatsapp.simulator import WhatsAppSimulator
from channels.whatsapp.summary import outbound_text
from channels.whatsapp.validation import SendValidator
from harness.canonical import canonical_key
from harness.cli.main import HarnessGroup
from harness.clock import VirtualClock
from harness.exceptions import ConfigError
from harness.fixture import load_fixture
from harness.llm import LLMResponse, TextBlock, Usage
from harness.recording import Recording
from harness.replay.playback import plan_from_fixture
from harness.store import MemoryStore, RedisStore, Store
from harness.trace import (
    DeliveryAttempt,
    InboundMessage,
    LLMExchange,
    OutboundSend,
    StatusUpdate,
    ToolCall,
)
from tests.support.cancellation import LosesOneCancellation

ANA = "5511987654321"
BRUNO = "4915112345678"
CONFIG = SimulatorConfig()
TOKEN = CONFIG.access_token
AUTH = {"Authorization": f"Bearer {TOKEN}"}
MESSAGES = f"/v25.0/{CONFIG.phone_number_id}/messages"
KEY = "the team's pseudonym key"


# -- the rig -------------------------------------------------------------------------------------


@dataclass
class StubAgent:
    """A webhook that keeps what it was sent and answers with the codes it is given."""

    codes: list[int] = field(default_factory=list)
    posts: list[tuple[bytes, dict[str, str]]] = field(default_factory=list)
    gets: list[dict[str, str]] = field(default_factory=list)
    handshake_code: int = 200

    def app(self) -> Starlette:
        async def post(request: Request) -> Response:
            self.posts.append((await request.body(), dict(request.headers)))
            code = self.codes.pop(0) if self.codes else 200
            return PlainTextResponse("EVENT_RECEIVED" if code == 200 else "no", status_code=code)

        async def get(request: Request) -> Response:
            self.gets.append(dict(request.query_params))
            challenge = request.query_params.get("hub.challenge", "")
            return PlainTextResponse(challenge, status_code=self.handshake_code)

        return Starlette(routes=[Route("/webhook", post, methods=["POST"]), Route("/webhook", get)])


@dataclass
class Rig:
    """A proxy between the simulator (as Meta) and a stub agent, all in-process."""

    sim: WhatsAppSimulator
    agent: StubAgent
    client: httpx.AsyncClient  # the agent's client, aimed at the proxy
    recorder: ProxyRecorder
    out: Path

    async def send(self, body: dict[str, Any], **headers: str) -> httpx.Response:
        """The agent sends a message through the proxy."""
        return await self.client.post(MESSAGES, json=body, headers={**AUTH, **headers})

    def events(self) -> list[Any]:
        """What the fixture's event log holds, as written."""
        return [json.loads(line) for line in (self.out / "events.jsonl").read_text().splitlines()]

    def written(self) -> str:
        """Every file of the fixture, as one text."""
        return "\n".join(p.read_text(errors="replace") for p in self.out.rglob("*") if p.is_file())


def _text(to: str, body: str) -> dict[str, Any]:
    return {"messaging_product": "whatsapp", "to": to, "type": "text", "text": {"body": body}}


def _rig_settings(tmp_path: Path, key: str | None = None) -> ProxySettings:
    return ProxySettings(
        agent_url="http://agent.local/webhook",
        app_secret=CONFIG.app_secret,
        verify_token=CONFIG.verify_token,
        out=tmp_path / "fixture",
        upstream_graph=CONFIG.public_url,
        pseudonymize_key=key,
    )


@asynccontextmanager
async def _rig(
    tmp_path: Path,
    *,
    key: str | None = None,
    agent: StubAgent | None = None,
    agent_transport: httpx.AsyncBaseTransport | None = None,
    upstream_transport: httpx.AsyncBaseTransport | None = None,
) -> AsyncIterator[Rig]:
    sim = WhatsAppSimulator(CONFIG, clock=VirtualClock())
    agent = agent or StubAgent()
    settings = _rig_settings(tmp_path, key)
    recorder = ProxyRecorder(settings, clock=sim.clock)
    to_agent = httpx.AsyncClient(transport=agent_transport or httpx.ASGITransport(agent.app()))
    upstream = httpx.AsyncClient(transport=upstream_transport or sim.graph_transport())
    app = create_proxy_app(settings, recorder, agent_client=to_agent, upstream_client=upstream)
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://proxy.local")
    sim.connect(app)
    sim.add_user(ANA, "Ana Souza")
    try:
        yield Rig(sim, agent, client, recorder, settings.out)
    finally:
        await sim.aclose()
        for c in (client, to_agent, upstream):
            await c.aclose()
        recorder.close()


def _signed(payload: dict[str, Any], secret: str = CONFIG.app_secret) -> SignedBody:
    return SignedBody.create(payload, secret)


# -- Meta-facing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "signature",
    [None, "sha256=" + "0" * 64, "sha1=abc", _signed({"object": "x"}, "another-secret").signature],
    ids=["missing", "wrong", "malformed", "other-secret"],
)
async def test_a_forged_signature_is_refused_and_leaves_no_trace(
    tmp_path: Path, signature: str | None
) -> None:
    async with _rig(tmp_path) as rig:
        body = _signed({"object": "whatsapp_business_account", "entry": []}).body
        headers = {"Content-Type": "application/json"}
        if signature is not None:
            headers["X-Hub-Signature-256"] = signature
        answer = await rig.client.post("/webhook", content=body, headers=headers)
        assert answer.status_code == 403
        assert rig.agent.posts == []
        assert rig.events() == []
    fixture = load_fixture(rig.out)
    assert fixture.events == ()
    assert fixture.conversation is not None
    assert fixture.conversation.events == ()


@pytest.mark.parametrize("key", [None, KEY])
async def test_the_agent_gets_the_identical_bytes_and_signature(
    tmp_path: Path, key: str | None
) -> None:
    async with _rig(tmp_path, key=key) as rig:
        [wamid] = await rig.sim.say(ANA, "Olá, uma mesa para sexta às 20h")
        await rig.sim.settle()
        sent = rig.sim._deliverer_or_fail().sent_bodies[wamid]
        [(body, headers)] = rig.agent.posts
        assert body == sent.body
        assert headers["x-hub-signature-256"] == sent.signature
        [inbound] = [e for e in rig.recorder.events if isinstance(e, InboundMessage)]
        assert inbound.text == "Olá, uma mesa para sexta às 20h"
        assert inbound.user == ANA
        assert inbound.body["from"] == ANA  # in memory; the file holds the pseudonym
        written = rig.events()[0]
        assert (written["user"] == ANA) is (key is None)


async def test_the_agents_status_code_goes_back_so_meta_retries_keep_their_meaning(
    tmp_path: Path,
) -> None:
    async with _rig(tmp_path, agent=StubAgent(codes=[500])) as rig:
        [wamid] = await rig.sim.say(ANA, "hello")
        await rig.sim.settle()
        seen = [(d.attempt, d.status_code) for d in rig.sim.conversation().deliveries()]
        assert seen == [(1, 500), (2, 200)]  # the proxy answered Meta as the agent did
        await rig.sim.redeliver(wamid)  # Meta's duplicate, after a 200
        await rig.sim.settle()
    fixture = load_fixture(rig.out)
    deliveries = [e for e in fixture.events if isinstance(e, DeliveryAttempt)]
    assert [(d.delivery, d.attempt, d.status_code, d.faults) for d in deliveries] == [
        ("d1", 1, 500, ()),
        ("d1", 2, 200, ("retry",)),
        ("d2", 1, 200, ("duplicate",)),
    ]
    inbound = [e for e in fixture.events if isinstance(e, InboundMessage)]
    assert [(m.delivery, m.duplicate) for m in inbound] == [
        ("d1", False),
        ("d1", True),
        ("d2", True),
    ]
    # the replay plays the message, and the duplicate, but not the retry (it happens by itself)
    # the message goes again as it was received; the duplicate is a redelivery
    assert [a.kind for a in plan_from_fixture(fixture)] == ["recorded", "redeliver"]


async def test_the_handshake_is_answered_by_the_agent(tmp_path: Path) -> None:
    async with _rig(tmp_path) as rig:
        params = {"hub.mode": "subscribe", "hub.challenge": "1158201444"}
        good = await rig.client.get(
            "/webhook", params={**params, "hub.verify_token": CONFIG.verify_token}
        )
        assert (good.status_code, good.text) == (200, "1158201444")
        assert rig.agent.gets[-1]["hub.verify_token"] == CONFIG.verify_token
        wrong = await rig.client.get("/webhook", params={**params, "hub.verify_token": "guess"})
        assert wrong.status_code == 403
        assert len(rig.agent.gets) == 1  # a wrong token never reaches the agent
        rig.agent.handshake_code = 403  # the agent's own refusal is relayed
        refused = await rig.client.get(
            "/webhook", params={**params, "hub.verify_token": CONFIG.verify_token}
        )
        assert refused.status_code == 403
        assert rig.events() == []


def _failing(exc: Exception) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc

    return httpx.MockTransport(handler)


@pytest.mark.parametrize(
    ("problem", "code", "error"),
    [
        (httpx.ConnectError("refused"), 502, "ConnectError: refused"),
        (httpx.ReadTimeout("slow"), 504, "timeout"),
    ],
)
async def test_an_agent_that_does_not_answer_makes_meta_retry(
    tmp_path: Path, problem: Exception, code: int, error: str
) -> None:
    async with _rig(tmp_path, agent_transport=_failing(problem)) as rig:
        body = _signed(_webhook_of("hello"))
        answer = await rig.client.post("/webhook", content=body.body, headers=body.headers())
        assert answer.status_code == code
    fixture = load_fixture(rig.out)
    [delivery] = [e for e in fixture.events if isinstance(e, DeliveryAttempt)]
    assert (delivery.status_code, delivery.error) == (None, error)
    assert [e.kind for e in fixture.events] == ["inbound", "delivery"]


def _webhook_of(text: str, wamid: str = "wamid.TEST1") -> dict[str, Any]:
    message = parse_message(
        {
            "from": ANA,
            "id": wamid,
            "timestamp": "1767225600",
            "type": "text",
            "text": {"body": text},
        }
    )
    return build_webhook(
        waba_id=CONFIG.waba_id,
        phone_number_id=CONFIG.phone_number_id,
        display_phone_number=CONFIG.display_phone_number,
        messages=[message],
        contacts=[contact(ANA, "Ana Souza", user_id="BR.1234567890")],
    )


async def test_a_signed_webhook_the_proxy_cannot_read_is_still_forwarded(tmp_path: Path) -> None:
    async with _rig(tmp_path) as rig:
        body = _signed({"object": "page", "entry": "not a list"})
        answer = await rig.client.post("/webhook", content=body.body, headers=body.headers())
        assert answer.status_code == 200
        assert rig.agent.posts[0][0] == body.body
    [delivery] = [e for e in load_fixture(rig.out).events if isinstance(e, DeliveryAttempt)]
    assert delivery.items == ()


async def test_a_batched_webhook_is_one_delivery_of_several_messages(tmp_path: Path) -> None:
    async with _rig(tmp_path) as rig:
        batch = batch_webhooks([_webhook_of("one", "wamid.B1"), _webhook_of("two", "wamid.B2")])
        body = _signed(batch)
        answer = await rig.client.post("/webhook", content=body.body, headers=body.headers())
        assert answer.status_code == 200
        assert len(rig.agent.posts) == 1
    fixture = load_fixture(rig.out)
    assert [(e.text, e.delivery) for e in fixture.events if isinstance(e, InboundMessage)] == [
        ("one", "d1"),
        ("two", "d1"),
    ]
    [delivery] = [e for e in fixture.events if isinstance(e, DeliveryAttempt)]
    assert delivery.items == ("wamid.B1", "wamid.B2")


async def test_status_webhooks_are_recorded_once_each(tmp_path: Path) -> None:
    async with _rig(tmp_path) as rig:
        rig.sim.add_user(BRUNO, "Bruno")  # never wrote: his window is closed
        await rig.sim.say(ANA, "hi")
        await rig.sim.settle()
        ok = (await rig.send(_text(ANA, "hello Ana"))).json()["messages"][0]["id"]
        late = (await rig.send(_text(BRUNO, "hello Bruno"))).json()["messages"][0]["id"]
        await rig.sim.settle()
        await rig.sim.redeliver(f"{ok}:read")  # a duplicate status webhook
        await rig.sim.settle()
    statuses = [e for e in load_fixture(rig.out).events if isinstance(e, StatusUpdate)]
    assert [(s.wamid, s.status, s.user) for s in statuses if s.wamid == ok] == [
        (ok, "sent", ANA),
        (ok, "delivered", ANA),
        (ok, "read", ANA),
    ]
    [failed] = [s for s in statuses if s.wamid == late]
    assert failed.status == "failed"
    assert [e.code for e in failed.errors] == [131047]


# -- Graph-facing --------------------------------------------------------------------------------


async def test_sends_are_forwarded_unchanged_and_recorded(tmp_path: Path) -> None:
    async with _rig(tmp_path) as rig:
        [wamid] = await rig.sim.say(ANA, "hi")
        await rig.sim.settle()
        body = _text("+55 11 98765-4321", "Olá Ana Souza!")
        answer = await rig.send(body)
        assert answer.status_code == 200
        assert rig.sim.outbox == [body]  # what the agent sent is what Meta got
        read = {"messaging_product": "whatsapp", "status": "read", "message_id": wamid}
        assert (await rig.send(read)).json() == {"success": True}
        refused = await rig.send({"messaging_product": "whatsapp", "type": "text"})
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == 131008  # Meta's error, relayed as it came
    sends = [e for e in load_fixture(rig.out).events if isinstance(e, OutboundSend)]
    assert [(s.type, s.user) for s in sends] == [("text", ANA), ("mark_read", ANA), ("text", None)]
    text = sends[0]
    assert text.wamid == answer.json()["messages"][0]["id"]
    assert (text.text, text.in_window, text.error) == ("Olá Ana Souza!", True, None)
    assert text.request == body
    assert sends[2].error is not None
    assert (sends[2].error.code, sends[2].error.http_status) == (131008, 400)


EXPIRED_TOKEN = {
    "message": "Error validating access token: Session has expired.",
    "type": "OAuthException",
    "code": 190,
    "error_subcode": 463,
    "fbtrace_id": "AbCdEfGh",
}


async def test_the_agents_own_token_expiring_mid_chat_is_recorded(tmp_path: Path) -> None:
    answers = [
        httpx.Response(200, json={"messages": [{"id": "wamid.OK1"}]}),
        httpx.Response(401, json={"error": EXPIRED_TOKEN}),
    ]
    upstream = httpx.MockTransport(lambda request: answers.pop(0))
    async with _rig(tmp_path, upstream_transport=upstream) as rig:
        assert (await rig.send(_text(ANA, "first"))).status_code == 200
        assert (await rig.send(_text(ANA, "second"))).status_code == 401
    sends = [e for e in load_fixture(rig.out).events if isinstance(e, OutboundSend)]
    assert [s.text for s in sends] == ["first", "second"]
    assert sends[1].error is not None
    assert (sends[1].error.code, sends[1].error.http_status) == (190, 401)
    assert TOKEN not in rig.written()


async def test_media_downloads_come_through_the_proxy_and_into_the_fixture(
    tmp_path: Path,
) -> None:
    photo = b"\xff\xd8\xff\xe0 a small photo"
    async with _rig(tmp_path, key=KEY) as rig:
        wamid = await rig.sim.send_media(ANA, "image", photo, mime_type="image/jpeg")
        await rig.sim.settle()
        media_id = json.loads(rig.agent.posts[0][0])["entry"][0]["changes"][0]["value"]["messages"][
            0
        ]["image"]["id"]
        described = (await rig.client.get(f"/v25.0/{media_id}", headers=AUTH)).json()
        assert described["url"].startswith("http://proxy.local/_media/")
        assert described["mime_type"] == "image/jpeg"
        download = await rig.client.get(described["url"], headers=AUTH)
        assert download.content == photo
        assert download.headers["content-type"] == "image/jpeg"
        pseudonym = rig.recorder._scrub(wamid)
    index = json.loads((rig.out / "media" / "index.json").read_text())
    assert list(index) == [pseudonym]
    assert (rig.out / index[pseudonym]).read_bytes() == photo
    fixture = load_fixture(rig.out)
    [send] = [a for a in plan_from_fixture(fixture) if a.kind == "recorded"]
    assert send.wamid == pseudonym  # the replay finds the bytes for its message


async def test_media_on_another_host_is_downloaded_through_the_proxy(tmp_path: Path) -> None:
    cdn = "https://lookaside.example/whatsapp_business/attachments/?mid=42"
    seen: list[httpx.Request] = []

    def meta(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.host == "lookaside.example":
            return httpx.Response(200, content=b"%PDF-1.4", headers={"content-type": "x/pdf"})
        return httpx.Response(200, json={"url": cdn, "id": "42", "mime_type": "x/pdf"})

    async with _rig(tmp_path, upstream_transport=httpx.MockTransport(meta)) as rig:
        described = (await rig.client.get("/v25.0/42", headers=AUTH)).json()
        assert re.fullmatch(r"http://proxy\.local/_proxy/media/[\w-]+", described["url"])
        download = await rig.client.get(described["url"], headers=AUTH)
        assert download.content == b"%PDF-1.4"
        assert str(seen[-1].url) == cdn
        assert seen[-1].headers["authorization"] == f"Bearer {TOKEN}"
        unknown = await rig.client.get("/_proxy/media/made-up", headers=AUTH)
        assert unknown.status_code == 404


async def test_an_unreachable_graph_api_answers_in_metas_shape(tmp_path: Path) -> None:
    async with _rig(tmp_path, upstream_transport=_failing(httpx.ConnectError("down"))) as rig:
        answer = await rig.send(_text(ANA, "hi"))
    assert answer.status_code == 502
    assert answer.json()["error"]["code"] == 131016
    [send] = [e for e in load_fixture(rig.out).events if isinstance(e, OutboundSend)]
    assert send.error is not None
    assert (send.error.code, send.error.http_status) == (131016, 502)
    [span] = load_fixture(rig.out).raw("spans")
    assert span["status"]["code"] == "ERROR"
    assert span["attributes"]["error.type"] == "ConnectError: down"


async def test_secrets_are_never_written(tmp_path: Path) -> None:
    async with _rig(tmp_path) as rig:
        await rig.sim.say(ANA, "hi")
        await rig.sim.settle()
        await rig.send(_text(ANA, f"my token is {TOKEN}, the secret {CONFIG.app_secret}"))
        await rig.client.get(f"/v25.0/{CONFIG.phone_number_id}?access_token={TOKEN}")
        await rig.client.get(
            "/webhook",
            params={"hub.mode": "subscribe", "hub.challenge": "1", "hub.verify_token": "x"},
        )
    written = rig.written()
    for secret in (TOKEN, CONFIG.app_secret, CONFIG.verify_token, "Bearer"):
        assert secret not in written
    spans = load_fixture(rig.out).raw("spans")
    assert len(spans) == 2
    assert "authorization" not in json.dumps(spans).lower()


async def test_several_users_at_once_are_kept_apart(tmp_path: Path) -> None:
    async with _rig(tmp_path) as rig:
        rig.sim.add_user(BRUNO, "Bruno")
        rig.sim.add_user(None, "Cleo", user_id="DE.99887766")
        said = await asyncio.gather(
            rig.sim.say(ANA, "table for two"),
            rig.sim.say(BRUNO, "table for six"),
            rig.sim.say("DE.99887766", "table for one"),
        )
        await rig.sim.settle()
        wamids = {user: w for user, [w] in zip((ANA, BRUNO, "DE.99887766"), said, strict=True)}
        reads = [
            {"messaging_product": "whatsapp", "status": "read", "message_id": w}
            for w in wamids.values()
        ]
        replies = [
            _text(ANA, "two, fine"),
            _text(BRUNO, "six, fine"),
            {
                "messaging_product": "whatsapp",
                "recipient": "DE.99887766",
                "type": "text",
                "text": {"body": "one, fine"},
            },
        ]
        answers = await asyncio.gather(*(rig.send(b) for b in [*reads, *replies]))
        assert all(a.status_code == 200 for a in answers)
        await rig.sim.settle()
    conversation = load_fixture(rig.out).conversation
    assert conversation is not None
    for user, mine in ((ANA, "two"), (BRUNO, "six"), ("DE.99887766", "one")):
        assert [m.text for m in conversation.inbound(user)] == [f"table for {mine}"]
        assert [r.text for r in conversation.replies(user)] == [f"{mine}, fine"]
        assert [s.type for s in conversation.sends(user)] == ["mark_read", "text"]
        assert {s.user for s in conversation.statuses() if s.wamid in _ids(conversation, user)} == {
            user
        }
        [turn] = [t for t in conversation.turns if t.user == user]
        assert [r.text for r in turn.replies] == [f"{mine}, fine"]
    assert {p.id: p.name for p in conversation.participants} == {
        ANA: "Ana Souza",
        BRUNO: "Bruno",
        "DE.99887766": "Cleo",
    }


def _ids(conversation: Any, user: str) -> set[str]:
    return {s.wamid for s in conversation.replies(user) if s.wamid}


async def test_the_business_ids_are_learned_for_meta_json(tmp_path: Path) -> None:
    async with _rig(tmp_path) as rig:
        meta = json.loads((rig.out / "meta.json").read_text())
        assert meta["channel_options"] == {}
        await rig.sim.say(ANA, "hi")
        await rig.sim.settle()
        meta = json.loads((rig.out / "meta.json").read_text())  # before the end: crash-proof
    assert meta["channel_options"] == {
        "phone_number_id": CONFIG.phone_number_id,
        "waba_id": CONFIG.waba_id,
        "display_phone_number": CONFIG.display_phone_number,
    }
    assert meta["participants"][0]["name"] == "Ana Souza"
    assert (meta["agent_settings"], meta["seed"]) == ({}, 0)
    assert "scenario_yaml" not in meta


# -- the agent's recordings, through a store -----------------------------------------------------


class _Model:
    """A model that answers every request with the same words."""

    async def create(self, **request: Any) -> LLMResponse:
        return LLMResponse(
            id="msg_1",
            model=request["model"],
            content=(TextBlock(text="Sure, Ana Souza."),),
            stop_reason="end_turn",
            usage=Usage(input_tokens=12, output_tokens=4),
        )


async def _record_and_collect(tmp_path: Path, store: Store, key: str | None) -> ProxyRecorder:
    recording = Recording.in_store(store, "chat-1", "record")  # the agent's, elsewhere
    collector = RecordingCollector(store, "chat-1")
    async with _rig(tmp_path, key=key) as rig:
        await rig.sim.say(ANA, "hi")
        await rig.sim.settle()
        model = recording.llm(_Model())
        tools = recording.tools()
        tools.register("book", lambda customer, day: {"booked": day}, side_effect=True)
        await model.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": f"I am {ANA}"}]
        )
        await tools.call("book", {"customer": ANA, "day": "2026-12-04"})
        await recording.flush()
        assert await collector.drain(rig.recorder) == 2
        assert await collector.drain(rig.recorder) == 0  # each record once
    return rig.recorder


@pytest.mark.parametrize("key", [None, KEY])
async def test_the_agents_recordings_join_through_a_store(tmp_path: Path, key: str | None) -> None:
    recorder = await _record_and_collect(tmp_path, MemoryStore(), key)
    fixture = load_fixture(recorder.settings.out)
    [llm] = fixture.raw("llm")
    [tool] = fixture.raw("tools")
    assert llm["key"] == canonical_key(llm["request"])  # a replay finds it by its request
    assert tool["key"] == canonical_key({"args": tool["args"], "name": tool["name"]})
    [exchange] = [e for e in fixture.events if isinstance(e, LLMExchange)]
    [call] = [e for e in fixture.events if isinstance(e, ToolCall)]
    assert exchange.key == llm["key"]
    assert call.args["day"] == "2026-12-04"  # not a phone number, even under "day"
    assert (ANA in json.dumps(llm)) is (key is None)
    assert ("Ana Souza" in json.dumps(llm)) is (key is None)
    assert (call.args["customer"] == ANA) is (key is None)
    assert call.side_effect
    assert [s["name"] for s in fixture.raw("spans")] == ["chat m"]
    assert fixture.meta.model == "m"


@pytest.mark.redis
async def test_the_agents_recordings_join_through_redis(
    tmp_path: Path, redis_url: str, namespace: str
) -> None:
    store = RedisStore.from_url(redis_url, namespace=namespace)
    try:
        recorder = await _record_and_collect(tmp_path, store, None)
    finally:
        await store.close()
    assert len(load_fixture(recorder.settings.out).raw("llm")) == 1


# -- pseudonyms ----------------------------------------------------------------------------------


class _LosesACancellation(MemoryStore):
    """A store whose read carries on after its first cancellation, as redis-py's may on 3.11."""

    def __init__(self) -> None:
        super().__init__()
        self.reading = asyncio.Event()
        self.losing = LosesOneCancellation()

    async def read_log(self, key: str, start: int = 0, end: int | None = None) -> list[bytes]:
        self.reading.set()
        await self.losing.sleep(0.05)
        return await super().read_log(key, start, end)


async def test_the_proxy_stops_when_its_collector_loses_a_cancellation(tmp_path: Path) -> None:
    store = _LosesACancellation()
    settings = _rig_settings(tmp_path)
    recorder = ProxyRecorder(settings, clock=VirtualClock())
    collector = RecordingCollector(store, "chat-1")
    app = create_proxy_app(settings, recorder, collector=collector, collect_every=0.01)

    async def start_and_stop() -> None:
        async with app.router.lifespan_context(app):
            store.reading.clear()
            await store.reading.wait()  # the collecting loop is inside a read

    run = asyncio.create_task(start_and_stop())
    try:
        done, _ = await asyncio.wait({run}, timeout=10)
        assert run in done, "the proxy's shutdown waits for ever on its collecting loop"
        run.result()
    finally:
        run.cancel()
        recorder.close()
    assert store.losing.lost == 1


def test_pseudonyms_are_stable_keyed_and_shaped_like_the_original() -> None:
    one, again, other = Pseudonymizer("k1"), Pseudonymizer("k1"), Pseudonymizer("k2")
    assert one.phone(ANA) == again.phone(ANA) != other.phone(ANA)
    assert len(one.phone(ANA)) == len(ANA)
    assert one.phone("+55 11 98765-4321") == "+" + re.sub(
        r"(\d{2})(\d{2})(\d{5})(\d{4})", r"\1 \2 \3-\4", one.phone(ANA)
    )
    assert re.fullmatch(r"BR\.[0-9]{10}", one.bsuid("BR.1234567890"))
    assert re.fullmatch(r"User [0-9]{5}", one.name("Ana"))
    assert one.name("Ana") != one.name("Bruno")
    assert re.fullmatch(r"wamid\.[A-Za-z0-9_-]{43}", one.wamid("wamid.HBgNNTUx"))
    assert len(new_pseudonym_key()) == 64
    with pytest.raises(ValueError, match="empty"):
        Pseudonymizer("")


def test_a_pseudonymized_webhook_keeps_its_shape_and_the_business_numbers() -> None:
    payload = {
        "entry": [
            {
                "id": CONFIG.waba_id,
                "changes": [
                    {
                        "value": {
                            "metadata": {
                                "display_phone_number": CONFIG.display_phone_number,
                                "phone_number_id": CONFIG.phone_number_id,
                            },
                            "contacts": [
                                {
                                    "profile": {"name": "Ana"},
                                    "wa_id": ANA,
                                    "user_id": "BR.1234567890",
                                }
                            ],
                            "messages": [
                                {
                                    "from": ANA,
                                    "id": "wamid.IN1",
                                    "type": "contacts",
                                    "context": {
                                        "from": CONFIG.display_phone_number,
                                        "id": "wamid.OUT1",
                                    },
                                    "contacts": [
                                        {
                                            "name": {"formatted_name": "Chandler Bing"},
                                            "phones": [{"phone": "+1 555-555-5555"}],
                                        }
                                    ],
                                }
                            ],
                        }
                    }
                ],
            }
        ]
    }
    names = Pseudonymizer("k")
    out: Any = names.apply(payload)
    text = json.dumps(out)
    for real in (ANA, "BR.1234567890", "Ana", "wamid.IN1", "Chandler Bing", "555-555-5555"):
        assert real not in text
    assert CONFIG.display_phone_number in text
    assert CONFIG.phone_number_id in text
    assert json.dumps(payload).count(ANA) == 2  # the input is left alone
    # and a later record mentioning the same people gets the same pseudonyms
    later: Any = names.apply({"user": ANA, "text": "Ana? Call +15555555555, not Anabel"})
    assert later["user"] == out["entry"][0]["changes"][0]["value"]["messages"][0]["from"]
    assert later["text"] == f"{names.name('Ana')}? Call +{names.phone('15555555555')}, not Anabel"


def test_short_names_are_replaced_where_they_stand_not_inside_text() -> None:
    names = Pseudonymizer("k")
    out: Any = names.apply([{"profile": {"name": "Al"}, "wa_id": ANA}, "Al said: All good"])
    assert out[0]["profile"]["name"] == names.name("Al")
    assert out[1] == "Al said: All good"


@given(st.from_regex(r"[1-9][0-9]{4,14}", fullmatch=True), st.text(min_size=1, max_size=20))
def test_a_phone_pseudonym_is_as_many_digits(number: str, key: str) -> None:
    fake = Pseudonymizer(key).phone(number)
    assert fake.isdigit()
    assert len(fake) == len(number)
    assert fake[0] != "0"


# -- what a send says -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        _text(ANA, "hi"),
        {"messaging_product": "whatsapp", "to": ANA, "text": {"body": "default type"}},
        {
            "messaging_product": "whatsapp",
            "to": ANA,
            "type": "interactive",
            "interactive": {
                "type": "button",
                "body": {"text": "Keep 9am?"},
                "action": {"buttons": [{"type": "reply", "reply": {"id": "k", "title": "Keep"}}]},
            },
        },
        {
            "messaging_product": "whatsapp",
            "to": ANA,
            "type": "image",
            "image": {"link": "https://x.example/a.jpg", "caption": "menu"},
        },
        {
            "messaging_product": "whatsapp",
            "to": ANA,
            "type": "reaction",
            "reaction": {"message_id": "wamid.X", "emoji": "👍"},
        },
        {
            "messaging_product": "whatsapp",
            "to": ANA,
            "type": "template",
            "template": {"name": "hello_world", "language": {"code": "en_US"}},
        },
    ],
)
def test_outbound_text_reads_as_the_fake_graph_api_does(body: dict[str, Any]) -> None:
    validated = SendValidator().validate(CONFIG.phone_number_id, body)
    assert outbound_text(body) == validated.text


# -- settings and the command line ---------------------------------------------------------------


def _settings(tmp_path: Path, **changes: Any) -> ProxySettings:
    values: dict[str, Any] = {
        "agent_url": "http://127.0.0.1:9/webhook",
        "app_secret": "s",
        "verify_token": "t",
        "out": tmp_path,
    }
    return ProxySettings(**{**values, **changes})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"agent_url": "localhost:8000"}, "--agent-url: expected an http"),
        ({"upstream_graph": "ftp://x"}, "--upstream-graph: expected an http"),
        ({"app_secret": ""}, "--app-secret: must not be empty"),
        ({"pseudonymize_key": "short"}, "--pseudonymize-key: use at least 16 characters"),
        ({"agent_timeout": 0}, "--agent-timeout"),
        ({"target": "agents.booking"}, "--target: expected package.module:attr"),
    ],
)
def test_bad_settings_are_one_line_errors(
    tmp_path: Path, changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as caught:
        _settings(tmp_path, **changes)
    assert "\n" not in str(caught.value)


def test_the_fixture_id_defaults_to_the_directory_name(tmp_path: Path) -> None:
    assert _settings(tmp_path / "ana-chat").name == "ana-chat"
    assert _settings(tmp_path, fixture_id="x").name == "x"


@pytest.mark.parametrize(
    ("value", "expected"),
    [("127.0.0.1:8080", ("127.0.0.1", 8080)), ("[::1]:0", ("::1", 0))],
)
def test_listen_addresses(value: str, expected: tuple[str, int]) -> None:
    assert parse_listen(value) == expected


@pytest.mark.parametrize("value", ["8080", "host:", "host:http", ":80", "h:70000"])
def test_bad_listen_addresses(value: str) -> None:
    with pytest.raises(ConfigError, match="--listen: expected HOST:PORT"):
        parse_listen(value)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exited:
        proxy_main(argv)
    code = exited.value.code
    return (code if isinstance(code, int) else 1), capsys.readouterr().err


_REQUIRED = ["--app-secret", "s", "--verify-token", "t", "--agent-url", "http://127.0.0.1:9/"]


def test_the_command_refuses_a_taken_port(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, err = _run(
            ["--listen", f"127.0.0.1:{port}", *_REQUIRED, "--out", str(tmp_path / "f")], capsys
        )
    assert code == 2
    assert err.startswith(f"error: --listen 127.0.0.1:{port}: ")
    assert err.count("\n") == 1
    assert not (tmp_path / "f").exists()


def test_the_command_refuses_to_forward_to_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--listen", "127.0.0.1:8099", *_REQUIRED[:4], "--agent-url", "http://127.0.0.1:8099/"]
    code, err = _run([*argv, "--out", str(tmp_path)], capsys)
    assert code == 2
    assert err == "error: --agent-url: http://127.0.0.1:8099/ is the proxy itself\n"


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--agent-url", "http://127.0.0.1:9/", "--verify-token", "t"], "--app-secret"),
        ([*_REQUIRED, "--agent-setting", "nokey"], "is not KEY=VALUE"),
        ([*_REQUIRED, "--store", "memory://"], "--store: expected a redis:// URL"),
    ],
)
def test_bad_options_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], problem: str
) -> None:
    code, err = _run([*argv, "--out", str(tmp_path / "f")], capsys)
    assert code == 2
    assert problem in err


def test_the_command_keeps_an_existing_fixture(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ProxyRecorder(_settings(tmp_path / "f")).close()
    code, err = _run([*_REQUIRED, "--listen", "127.0.0.1:0", "--out", str(tmp_path / "f")], capsys)
    assert code == 2
    held = f"{tmp_path / 'f'} already holds a fixture"
    assert err == f"error: --out: {held}; pass --overwrite to replace it\n"


def test_an_existing_fixture_is_kept_unless_overwrite(tmp_path: Path) -> None:
    ProxyRecorder(_settings(tmp_path / "f")).close()
    with pytest.raises(Exception, match="already holds a fixture"):
        ProxyRecorder(_settings(tmp_path / "f"))
    ProxyRecorder(_settings(tmp_path / "f", overwrite=True)).close()


def test_under_the_harness_command_an_error_is_one_line_and_exit_2(tmp_path: Path) -> None:
    group = HarnessGroup(commands={"proxy": proxy_command})  # as once the plugin registers it
    result = CliRunner().invoke(group, ["proxy", "--listen", "nowhere", *_REQUIRED, "--out", "x"])
    assert result.exit_code == 2
    assert (
        result.output
        == "error: --listen: expected HOST:PORT such as 127.0.0.1:8080, not 'nowhere'\n"
    )


async def test_only_graph_api_routes_are_forwarded(tmp_path: Path) -> None:
    async with _rig(tmp_path) as rig:
        for path in ("/admin", "/v25.0", "/_harness/inbound", "/v25.0/1/messages/extra", "/x/y"):
            answer = await rig.client.post(path, json=_text(ANA, "injected"), headers=AUTH)
            assert answer.status_code == 404, path
        assert rig.sim.outbox == []
    assert rig.events() == []
    assert load_fixture(rig.out).raw("spans") == []


async def test_a_caller_with_a_refused_token_is_neither_recorded_nor_learned(
    tmp_path: Path,
) -> None:
    async with _rig(tmp_path) as rig:
        await rig.sim.say(ANA, "hi there, we need a table")
        await rig.sim.settle()
        # A stranger who can reach the proxy: a one-letter token, refused upstream.
        stranger = await rig.send(_text(ANA, "injected"), Authorization="Bearer e")
        assert stranger.status_code == 401
        assert (await rig.send(_text(ANA, "the agent's answer"))).status_code == 200
    fixture = load_fixture(rig.out)  # still readable: no "e" was blanked out anywhere
    sends = [e for e in fixture.events if isinstance(e, OutboundSend)]
    assert [s.text for s in sends] == ["the agent's answer"]
    [inbound] = [e for e in fixture.events if isinstance(e, InboundMessage)]
    assert inbound.text == "hi there, we need a table"
    assert len(fixture.raw("spans")) == 1
    assert TOKEN not in rig.written()
