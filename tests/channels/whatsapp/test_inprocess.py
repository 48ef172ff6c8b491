"""The in-process client reaches its app with the request httpx would send, only directly."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import httpx
import pytest

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.inprocess import InProcessClient
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.clock import VirtualClock


class Seen:
    """An ASGI app that keeps scopes and body messages: answers 201 in two parts."""

    def __init__(self, *, cookie: bool = False, fail: bool = False) -> None:
        self.scopes: list[MutableMapping[str, Any]] = []
        self.messages: list[list[dict[str, Any]]] = []
        self.cookie = cookie
        self.fail = fail

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        self.scopes.append(scope)
        received = [await receive()]
        while received[-1].get("more_body", False):
            received.append(await receive())
        self.messages.append(received)
        if self.fail:
            raise RuntimeError("the app broke")
        headers = [(b"content-type", b"application/json"), (b"x-answer", b"yes")]
        if self.cookie:
            headers.append((b"set-cookie", b"session=abc; Path=/"))
        await send({"type": "http.response.start", "status": 201, "headers": headers})
        await send({"type": "http.response.body", "body": b'{"ok":', "more_body": True})
        await send({"type": "http.response.body", "body": b"true}"})

    def body(self, index: int) -> bytes:
        return b"".join(m.get("body", b"") for m in self.messages[index])


REQUESTS: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/v25.0/1/messages", {"json": {"to": "5511", "text": {"body": "olá ☕"}}}),
    (
        "POST",
        "http://graph.local/v25.0/1/messages",
        {"json": {"a": [1, 2.5, None]}, "headers": {"Authorization": "Bearer t"}},
    ),
    ("POST", "/v25.0/1/media", {"content": b"\x00raw", "headers": {"Content-Type": "x/y"}}),
    ("GET", "/v25.0/123", {"params": {"fields": "url", "q": "a b&c"}}),
    ("DELETE", "/v25.0/123?access_token=t", {}),
    ("POST", "/form", {"data": {"k": "v"}}),
]


def _view(scope: MutableMapping[str, Any]) -> dict[str, Any]:
    keys = ("method", "path", "raw_path", "query_string", "headers", "scheme", "server", "client")
    return {k: scope[k] for k in keys}


@pytest.mark.parametrize(("method", "url", "options"), REQUESTS)
async def test_a_request_reaches_the_app_as_httpx_would_send_it(
    method: str, url: str, options: dict[str, Any]
) -> None:
    direct, through_httpx = Seen(), Seen()
    base: dict[str, Any] = {"base_url": "http://graph.local", "headers": {"X-Client": "1"}}
    async with InProcessClient(direct, **base) as fast:
        got = await fast.request(method, url, **options)
    transport = httpx.ASGITransport(app=through_httpx)
    async with httpx.AsyncClient(transport=transport, **base) as plain:
        expected = await plain.request(method, url, **options)
    assert _view(direct.scopes[0]) == _view(through_httpx.scopes[0])
    assert direct.body(0) == through_httpx.body(0)
    # The body comes in one message, as a server reads a small one; httpx's transport
    # sends it in two (the bytes, then an empty last part).
    assert len(direct.messages[0]) == 1
    assert got.status_code == expected.status_code == 201
    assert got.headers.multi_items() == expected.headers.multi_items()
    assert got.content == expected.content == b'{"ok":true}'
    assert got.json() == {"ok": True}
    assert got.request.url == expected.request.url
    assert got.elapsed.total_seconds() >= 0
    got.raise_for_status()


async def test_a_url_given_as_text_is_parsed_once_and_reaches_the_app_the_same_each_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = Seen()
    parsed: list[object] = []
    real_url = httpx.URL

    def counting_url(*args: Any, **kwargs: Any) -> httpx.URL:
        parsed.append(args[0] if args else kwargs)
        return real_url(*args, **kwargs)

    async with InProcessClient(seen, base_url="http://graph.local") as client:
        monkeypatch.setattr(httpx, "URL", counting_url)
        for _ in range(3):
            await client.post("/v25.0/1/messages?x=1", json={})
            await client.post("http://other.local/v25.0/2/media", json={})
        monkeypatch.undo()
        texts = [p for p in parsed if isinstance(p, str)]
        assert texts.count("/v25.0/1/messages?x=1") == 1
        assert texts.count("http://other.local/v25.0/2/media") == 1
        views = [_view(scope) for scope in seen.scopes]
        assert views[0] == views[2] == views[4]
        assert views[1] == views[3] == views[5]
        assert (views[0]["path"], views[0]["query_string"]) == ("/v25.0/1/messages", b"x=1")
        assert views[1]["server"] == ("other.local", None)
        # Many different URLs: the parsed ones kept stay bounded, and each still arrives right.
        for index in range(600):
            await client.get(f"/v25.0/{index}")
            assert seen.scopes[-1]["path"] == f"/v25.0/{index}"
        assert len(client._urls) <= 256


async def test_what_needs_the_clients_machinery_goes_the_ordinary_way() -> None:
    seen = Seen()
    hooked: list[str] = []

    async def hook(request: httpx.Request) -> None:
        hooked.append(request.method)

    async with InProcessClient(seen, base_url="http://x", event_hooks={"request": [hook]}) as c:
        await c.post("/a", json={})
    async with InProcessClient(seen, base_url="http://x", auth=("u", "p")) as c:
        await c.post("/b", json={})
        assert any(k == b"authorization" for k, _ in seen.scopes[-1]["headers"])
    async with (
        InProcessClient(seen, base_url="http://x") as c,
        c.stream("GET", "/c") as response,
    ):
        assert await response.aread() == b'{"ok":true}'
    assert hooked == ["POST"]
    # each went through httpx's transport, which sends the body in two messages
    assert [len(m) for m in seen.messages] == [2, 2, 2]


async def test_a_cookie_the_app_sets_is_kept_and_sent_back() -> None:
    seen = Seen(cookie=True)
    async with InProcessClient(seen, base_url="http://x") as client:
        await client.get("/first")
        assert client.cookies.get("session") == "abc"
        await client.get("/second")
    sent = dict(seen.scopes[1]["headers"])
    assert sent[b"cookie"] == b"session=abc"


async def test_an_exception_in_the_app_reaches_the_caller() -> None:
    async with InProcessClient(Seen(fail=True), base_url="http://x") as client:
        with pytest.raises(RuntimeError, match="the app broke"):
            await client.post("/", json={})


async def test_a_closed_client_refuses_to_send() -> None:
    client = InProcessClient(Seen(), base_url="http://x")
    await client.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await client.get("/")


async def test_the_simulators_graph_client_goes_straight_to_the_fake_graph_api() -> None:
    config = SimulatorConfig()
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    async with sim.graph_client() as client:
        assert isinstance(client, InProcessClient)
        answer = await client.post(
            f"/v25.0/{config.phone_number_id}/messages",
            json={"messaging_product": "whatsapp", "to": "5511", "type": "text"},
            headers={"Authorization": f"Bearer {config.access_token}"},
        )
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == 131009  # no text: an invalid parameter
    assert answer.headers["content-type"] == "application/json"
