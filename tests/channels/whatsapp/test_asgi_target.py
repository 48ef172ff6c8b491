"""The in-process webhook target calls the agent's app as an HTTP client would, only directly."""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Any

import httpx
import pytest

from channels.whatsapp.delivery import AsgiTarget
from channels.whatsapp.signing import SignedBody
from channels.whatsapp.url_target import META_USER_AGENT


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
