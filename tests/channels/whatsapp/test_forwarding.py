"""Several fake Graph APIs acting as one Meta: each send goes to whoever plays its recipient.

Two runs against one agent share a Redis; the agent (an independent bot from
``tests/bots``) knows a single Graph API, the other run's, and its replies
still land in the scenario of the user they answer. A send for a user nobody
registered is answered where it landed; a send for a user whose Graph API is
gone gets Meta's answer for a temporary failure at once.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.forwarding import FORWARDED_HEADER, Forwarder, RouteBook, route_key
from harness.store import MemoryStore
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import parse_scenario
from harness.trace import OutboundSend
from tests.bots import inline
from tests.bots.loopback import free_port, serve_in_process
from tests.support.processes import stop

SCENARIO = """
name: {name}
users:
  - {{name: Ana, wa_id: "{wa_id}"}}
steps:
  - say: hello from {name}
  - expect: {{reply_contains: "You said: hello from {name}"}}
invariants:
  - every_inbound_answered
"""
PATH = "/v25.0/100200300400500/messages"


def _app(seen: list[dict[str, Any]], answer: dict[str, Any], status: int = 200) -> Starlette:
    """A stand-in Graph API that notes every request it gets and answers ``answer``."""

    async def endpoint(request: Request) -> Response:
        seen.append(
            {
                "method": request.method,
                "path": request.url.path,
                "query": request.url.query,
                "headers": dict(request.headers),
                "body": await request.body(),
            }
        )
        return JSONResponse(answer, status_code=status, headers={"x-owner": "yes"})

    return Starlette(routes=[Route("/{rest:path}", endpoint, methods=["GET", "POST"])])


async def _post(app: Any, body: dict[str, Any] | bytes, **headers: str) -> httpx.Response:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://graph.test") as client:
        return await asyncio.wait_for(
            client.post(
                PATH,
                params={"appsecret_proof": "abc"},
                content=raw,
                headers={"Authorization": "Bearer t0k", **headers},
            ),
            20,  # a guard against a hang, not a timing check
        )


@pytest.fixture
async def owner() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []
    answer = {"messaging_product": "whatsapp", "messages": [{"id": "wamid.OWNER"}]}
    async with serve_in_process(_app(seen, answer)) as url:
        yield url, seen


async def test_a_send_for_a_registered_user_is_passed_on_byte_for_byte(
    owner: tuple[str, list[dict[str, Any]]],
) -> None:
    url, seen = owner
    store = MemoryStore()
    await RouteBook(store, url).claim_users("s1", ["15550001111"])
    local: list[dict[str, Any]] = []
    forwarder = Forwarder(_app(local, {"local": True}), RouteBook(store))
    raw = b'{"messaging_product":"whatsapp","to":"+1 555 000 1111",' + b'"text":{"body":"hi"}}'
    try:
        got = await _post(forwarder, raw)
    finally:
        await forwarder.aclose()
    assert got.status_code == 200
    assert got.json() == {"messaging_product": "whatsapp", "messages": [{"id": "wamid.OWNER"}]}
    assert got.headers["x-owner"] == "yes"
    assert local == []
    [request] = seen
    assert request["method"] == "POST"
    assert request["path"] == PATH
    assert request["query"] == "appsecret_proof=abc"
    assert request["headers"]["authorization"] == "Bearer t0k"
    assert request["body"] == raw
    assert request["headers"][FORWARDED_HEADER.lower()] == "1"


async def test_a_read_receipt_follows_the_message_it_marks(
    owner: tuple[str, list[dict[str, Any]]],
) -> None:
    url, seen = owner
    store = MemoryStore()
    book = RouteBook(store, url)
    await book.claim_users("s1", ["15550001111"])
    book.claim_wamid("s1", "wamid.FROMANA")
    await asyncio.sleep(0.05)  # the claim is written in the background
    forwarder = Forwarder(_app([], {"local": True}), RouteBook(store))
    try:
        got = await _post(
            forwarder,
            {"messaging_product": "whatsapp", "status": "read", "message_id": "wamid.FROMANA"},
        )
    finally:
        await forwarder.aclose()
        await book.release()
    assert got.status_code == 200
    assert len(seen) == 1
    assert await store.get(route_key("wamid", "wamid.FROMANA")) is None  # released


async def test_a_scenario_that_ended_stops_being_renewed_and_is_removed_at_the_end() -> None:
    store = MemoryStore()
    book = RouteBook(store, "http://127.0.0.1:1")
    await book.claim_users("ended", ["15550001111"])
    await book.claim_users("dropped", ["15550002222"])
    await book.claim_users("playing", ["15550003333"])
    book.let_go("ended")
    book.drop("dropped")
    keys = [route_key("user", u) for u in ("15550001111", "15550002222", "15550003333")]
    assert all([await store.get(k) for k in keys])
    await book.release()
    # What ended is removed with what still played; what was dropped expires on its own.
    assert [await store.get(k) is not None for k in keys] == [False, True, False]


async def test_a_users_media_is_fetched_from_the_graph_api_that_holds_it(
    owner: tuple[str, list[dict[str, Any]]],
) -> None:
    url, seen = owner
    store = MemoryStore()
    book = RouteBook(store, url)
    book.claim_media("1234567890123456")
    await asyncio.sleep(0.05)  # the claim is written in the background
    local: list[dict[str, Any]] = []
    forwarder = Forwarder(_app(local, {"local": True}), RouteBook(store))
    transport = httpx.ASGITransport(app=forwarder)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://graph.test") as client:
            held = await client.get("/v25.0/1234567890123456", headers={"Authorization": "x"})
            other = await client.get("/v25.0/6543210987654321")
    finally:
        await forwarder.aclose()
        await book.release()
    assert held.json() == {"messaging_product": "whatsapp", "messages": [{"id": "wamid.OWNER"}]}
    assert [(r["method"], r["path"]) for r in seen] == [("GET", "/v25.0/1234567890123456")]
    assert other.json() == {"local": True}
    assert len(local) == 1


async def test_a_send_for_nobody_is_answered_where_it_landed(
    owner: tuple[str, list[dict[str, Any]]],
) -> None:
    url, seen = owner
    store = MemoryStore()
    await RouteBook(store, url).claim_users("s1", ["15550001111"])
    local: list[dict[str, Any]] = []
    forwarder = Forwarder(_app(local, {"local": True}), RouteBook(store))
    try:
        stranger = await _post(forwarder, {"to": "15559998888", "type": "text"})
        # A request another Graph API passed on is answered here, never passed on again.
        passed = await _post(forwarder, {"to": "15550001111"}, **{FORWARDED_HEADER: "1"})
        # What the wrapped app plays itself is never looked up.
        mine = Forwarder(_app(local, {"local": True}), RouteBook(store), plays=lambda named: True)
        played = await _post(mine, {"to": "15550001111"})
    finally:
        await forwarder.aclose()
    assert stranger.json() == passed.json() == played.json() == {"local": True}
    assert len(local) == 3
    assert seen == []


async def test_a_dead_owner_gives_the_agent_a_temporary_failure_not_a_hang() -> None:
    store = MemoryStore()
    dead = f"http://127.0.0.1:{free_port()}"  # registered, but nothing listens there
    await RouteBook(store, dead).claim_users("s1", ["15550001111"])
    forwarder = Forwarder(_app([], {"local": True}), RouteBook(store))
    try:
        got = await _post(forwarder, {"to": "15550001111", "type": "text"})
    finally:
        await forwarder.aclose()
    assert got.status_code == 503
    error = got.json()["error"]
    assert error["code"] == 131016
    assert error["type"] == "OAuthException"
    assert error["fbtrace_id"]
    assert got.headers["x-fb-trace-id"] == error["fbtrace_id"]


# --- two runs on one Redis, one agent that knows one of their Graph APIs -----------------


def _options(agent: str, redis_url: str, graph_port: int) -> RunOptions:
    graph = f"http://127.0.0.1:{graph_port}"
    return RunOptions(
        target_url=f"{agent}/webhook",
        store_url=redis_url,
        quiet=0.5,
        expect_timeout=10.0,
        channel_options={
            "graph_url": graph,
            "serve_graph": True,
            "graph_routes": redis_url,
            "graph_advertise": graph,
        },
    )


@pytest.mark.network
@pytest.mark.redis
async def test_an_agent_that_sends_to_the_wrong_graph_api_still_answers_each_scenario(
    redis_url: str,
) -> None:
    defaults = SimulatorConfig()
    port_a, port_b = free_port(), free_port()
    settings = {
        "WHATSAPP_APP_SECRET": defaults.app_secret,
        "WHATSAPP_VERIFY_TOKEN": defaults.verify_token,
        "WHATSAPP_PHONE_NUMBER_ID": defaults.phone_number_id,
        "WHATSAPP_ACCESS_TOKEN": defaults.access_token,
        # The bot knows one Graph API: run B's. Run A's users are answered through it.
        "WHATSAPP_GRAPH_URL": f"http://127.0.0.1:{port_b}",
    }
    tag = uuid.uuid4().hex[:6]
    first = parse_scenario(SCENARIO.format(name=f"a-{tag}", wa_id="5511900000001"))
    second = parse_scenario(SCENARIO.format(name=f"b-{tag}", wa_id="5511900000002"))
    async with serve_in_process(inline.create_app(settings)) as agent:
        runs = await asyncio.gather(
            Runner(_options(agent, redis_url, port_a)).run([first]),
            Runner(_options(agent, redis_url, port_b)).run([second]),
        )
    for run, name in zip(runs, ("a", "b"), strict=True):
        [result] = run.scenarios
        assert result.status == "passed", (name, result.error, result.violations)
        assert result.conversation is not None
        sent = [e for e in result.conversation.events if isinstance(e, OutboundSend)]
        assert [e.text for e in sent] == [f"You said: hello from {name}-{tag}"]
    # Both runs gave their users back: nothing in the book points at their Graph APIs.
    client = aioredis.Redis.from_url(redis_url)
    try:
        ours = {f"http://127.0.0.1:{port_a}".encode(), f"http://127.0.0.1:{port_b}".encode()}
        left = [k async for k in client.scan_iter(match=route_key("*", "*"))]
        values = [await client.get(k) for k in left]
        assert not ours & set(values)
    finally:
        await client.aclose()


@pytest.mark.network
@pytest.mark.redis
async def test_a_run_reaches_an_agent_whose_graph_api_is_harness_serve(redis_url: str) -> None:
    """``harness run --graph-advertise`` with the agent on ``harness serve --routes``."""
    defaults = SimulatorConfig()
    serve_port, run_port = free_port(), free_port()
    settings = {
        "WHATSAPP_APP_SECRET": defaults.app_secret,
        "WHATSAPP_VERIFY_TOKEN": defaults.verify_token,
        "WHATSAPP_PHONE_NUMBER_ID": defaults.phone_number_id,
        "WHATSAPP_ACCESS_TOKEN": defaults.access_token,
        "WHATSAPP_GRAPH_URL": f"http://127.0.0.1:{serve_port}",
    }
    serve = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "harness", "serve", "--port", str(serve_port)),
        *("--routes", redis_url),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    tag = uuid.uuid4().hex[:6]
    scenario = parse_scenario(SCENARIO.format(name=f"served-{tag}", wa_id="5511900000003"))
    try:
        assert serve.stdout is not None
        said: list[bytes] = []
        while not any(b"passing sends" in line for line in said):  # serve's start-up lines
            said.append(await asyncio.wait_for(serve.stdout.readline(), 30))
            assert said[-1], said  # serve ended before saying it routes
            assert len(said) < 12, said
        async with serve_in_process(inline.create_app(settings)) as agent:
            run = await Runner(_options(agent, redis_url, run_port)).run([scenario])
    finally:
        await stop(serve)
    [result] = run.scenarios
    assert result.status == "passed", (result.error, result.violations)
