"""The in-process webhook target calls the agent's app as an HTTP client would, only directly."""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import MutableMapping
from typing import Any

import httpx
import pytest

from channels.whatsapp.asgi_target import AsgiTarget
from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.signing import SignedBody
from channels.whatsapp.simulator import WhatsAppSimulator
from channels.whatsapp.url_target import META_USER_AGENT
from harness.clock import VirtualClock
from harness.exceptions import HandshakeError
from harness.trace import DeliveryAttempt


class Seen:
    """An ASGI app that keeps what it was called with and answers 202 with a body."""

    def __init__(self, *, fail: bool = False) -> None:
        self.scopes: list[MutableMapping[str, Any]] = []
        self.bodies: list[bytes] = []
        self.after_answer: list[str] = []
        self.fail = fail

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        self.scopes.append(scope)
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        self.bodies.append(body)
        if self.fail:
            raise RuntimeError("the agent broke")
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b"got ", "more_body": True})
        await send({"type": "http.response.body", "body": b"it"})
        # An app that listens for the client going away hears it once it has answered.
        self.after_answer.append((await receive())["type"])


def _view(scope: MutableMapping[str, Any]) -> dict[str, Any]:
    return {k: scope[k] for k in ("method", "path", "raw_path", "query_string", "headers")}


async def test_a_post_reaches_the_app_as_an_http_client_would_send_it() -> None:
    body = SignedBody.create({"object": "whatsapp_business_account", "entry": []}, "s3cret")
    direct, through_client = Seen(), Seen()
    answer = await AsgiTarget(direct).post(body)
    client = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=through_client), base_url="http://agent.local"
    )
    async with client:
        await client.post(
            "/webhook",
            content=body.body,
            headers={"User-Agent": META_USER_AGENT, **body.headers()},
        )
    assert _view(direct.scopes[0]) == _view(through_client.scopes[0])
    assert direct.bodies == [body.body]
    assert (answer.status_code, answer.body, answer.error) == (202, b"got it", None)
    assert direct.after_answer == ["http.disconnect"]


async def test_the_handshake_gets_its_query_as_a_client_would_encode_it() -> None:
    direct, through_client = Seen(), Seen()
    params = {"hub.mode": "subscribe", "hub.verify_token": "a b&c", "hub.challenge": "42"}
    status, text = await AsgiTarget(direct).get(params)
    client = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=through_client), base_url="http://agent.local"
    )
    async with client:
        await client.get("/webhook", params=params, headers={"User-Agent": META_USER_AGENT})
    assert _view(direct.scopes[0]) == _view(through_client.scopes[0])
    assert (status, text) == (202, "got it")


async def test_an_exception_in_the_app_reaches_the_caller() -> None:
    with pytest.raises(RuntimeError, match="the agent broke"):
        await AsgiTarget(Seen(fail=True)).post(SignedBody.create({}, "s"))


async def test_concurrent_posts_do_not_share_a_body() -> None:
    app = Seen()
    target = AsgiTarget(app)
    bodies = [SignedBody.create({"n": n}, "s") for n in range(20)]
    await asyncio.gather(*(target.post(b) for b in bodies))
    assert sorted(app.bodies) == sorted(b.body for b in bodies)


class Silent:
    """An ASGI app that reads a POST and never answers; it notes being given up on.

    With ``verifies``, it answers the verification GET; else that hangs too.
    """

    def __init__(self, *, verifies: bool = False) -> None:
        self.cancelled = 0
        self.verifies = verifies

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        await receive()
        if scope["method"] == "GET" and self.verifies:
            challenge = dict(urllib.parse.parse_qsl(scope["query_string"].decode()))
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": challenge["hub.challenge"].encode()})
            return
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise


async def test_an_app_that_never_answers_times_out_as_a_webhook_does() -> None:
    app = Silent()
    target = AsgiTarget(app, timeout=0.05)
    result = await asyncio.wait_for(target.post(SignedBody.create({}, "s")), 5)
    assert (result.status_code, result.error) == (None, "timeout")
    assert result.reached  # the bytes reached it, as Meta counts a timeout
    assert app.cancelled == 1
    with pytest.raises(HandshakeError, match=r"did not answer the verification GET within 0\.05 s"):
        await asyncio.wait_for(target.get({"hub.challenge": "1"}), 5)


async def test_a_run_goes_on_past_an_in_process_agent_that_never_answers() -> None:
    # Meta gives up on the POST, retries on its schedule, and the run reports it.
    sim = WhatsAppSimulator(SimulatorConfig(webhook_timeout=0.05), clock=VirtualClock())
    user = sim.add_user("15551234567", "Ana")
    sim.connect(Silent(verifies=True))
    await sim.say(user, "hi")
    await asyncio.wait_for(sim.settle(), 30)
    attempts = [e for e in sim.events if isinstance(e, DeliveryAttempt)]
    assert attempts
    assert {(a.status_code, a.error) for a in attempts} == {(None, "timeout")}
    await sim.aclose()
