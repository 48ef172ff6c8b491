"""Two ``harness serve --redis`` processes sharing one Redis act as one Meta.

An independent bot (``tests.bots.inline``) gets its webhooks from both and
sends its replies through a round-robin balancer in front of both, as a bot
behind a load balancer would; a conversation's messages are injected
alternately through either process. Each test uses a key prefix of its own.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import sys
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from click.testing import CliRunner
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from channels.whatsapp.cli import serve_command
from tests.bots.loopback import free_port, serve_in_process, started_process
from tests.support.processes import stop
from tests.support.redis_server import RedisServer

pytestmark = [pytest.mark.network, pytest.mark.redis, pytest.mark.slow]

TOKEN = "harness-access-token"
PHONE_NUMBER_ID = "100200300400500"
BOT_SETTINGS = {
    "WHATSAPP_APP_SECRET": "harness-app-secret",
    "WHATSAPP_VERIFY_TOKEN": "harness-verify-token",
    "WHATSAPP_ACCESS_TOKEN": TOKEN,
    "WHATSAPP_PHONE_NUMBER_ID": PHONE_NUMBER_ID,
}
ANA, BEN, CAL = "15550002001", "15550002002", "15550002003"
RE_ENGAGEMENT = 131047


@dataclass
class Balancer:
    """Hands each Graph API request to the next server in turn, and counts where each went."""

    targets: list[str]
    client: httpx.AsyncClient
    counts: dict[str, int] = field(default_factory=dict)

    def app(self) -> Starlette:
        turn = itertools.cycle(self.targets)
        client = self.client

        async def forward(request: Request) -> Response:
            target = next(turn)
            self.counts[target] = self.counts.get(target, 0) + 1
            answer = await client.request(
                request.method,
                target + request.url.path,
                params=request.query_params,
                content=await request.body(),
                headers={k: v for k, v in request.headers.items() if k.lower() != "host"},
            )
            return Response(answer.content, answer.status_code, media_type="application/json")

        return Starlette(routes=[Route("/{path:path}", forward, methods=["GET", "POST"])])


@dataclass
class Meta:
    """The two servers, as the test reaches them."""

    a: httpx.AsyncClient
    b: httpx.AsyncClient
    balancer: Balancer

    def either(self, i: int) -> httpx.AsyncClient:
        return self.a if i % 2 == 0 else self.b


async def _serve(
    port: int, webhook: str, redis_url: str, namespace: str, *options: str
) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "harness", "serve", "--port", str(port)),
        *("--webhook-url", webhook, "--redis", redis_url, "--redis-namespace", namespace),
        *options,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )


async def _started(client: httpx.AsyncClient, process: asyncio.subprocess.Process) -> None:
    deadline = time.monotonic() + 20
    while True:
        try:
            if (await client.get("/openapi.json")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if process.returncode is not None:
            pytest.fail((await process.communicate())[1].decode())
        assert time.monotonic() < deadline, "harness serve did not start in 20 s"
        await asyncio.sleep(0.1)


async def _stop(process: asyncio.subprocess.Process) -> None:
    await stop(process, within=10)


async def _drop(url: str, namespace: str) -> None:
    client = aioredis.Redis.from_url(url)
    try:
        keys = [key async for key in client.scan_iter(match=f"{namespace}:*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


@asynccontextmanager
async def _one_meta(
    redis_url: str,
    namespace: str,
    *options: str,
    bot: str = "tests.bots.inline",
    bot_env: Mapping[str, str] | None = None,
) -> AsyncIterator[Meta]:
    ports = free_port(), free_port()
    urls = [f"http://127.0.0.1:{port}" for port in ports]
    async with AsyncExitStack() as stack:
        stack.push_async_callback(_drop, redis_url, namespace)
        forwarding = await stack.enter_async_context(httpx.AsyncClient(timeout=10))
        balancer = Balancer(urls, forwarding)
        graph = await stack.enter_async_context(serve_in_process(balancer.app()))
        env = {**BOT_SETTINGS, "WHATSAPP_GRAPH_URL": graph, **(bot_env or {})}
        bot_url, _ = await stack.enter_async_context(
            started_process(bot, env=env, ready_path="/webhook")
        )
        clients = []
        for port, url in zip(ports, urls, strict=True):
            process = await _serve(port, f"{bot_url}/webhook", redis_url, namespace, *options)
            stack.push_async_callback(_stop, process)
            client = await stack.enter_async_context(httpx.AsyncClient(base_url=url, timeout=30))
            await _started(client, process)
            clients.append(client)
        yield Meta(clients[0], clients[1], balancer)


async def _say(client: httpx.AsyncClient, user: str, text: str) -> str:
    answer = await client.post("/_harness/inbound", json={"user": user, "text": text})
    assert answer.status_code == 200, answer.text
    wamid: str = answer.json()["wamid"]
    return wamid


async def _send(client: httpx.AsyncClient, body: Mapping[str, Any]) -> httpx.Response:
    return await client.post(
        f"/v25.0/{PHONE_NUMBER_ID}/messages",
        json={"messaging_product": "whatsapp", **body},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )


async def _events(client: httpx.AsyncClient, *, wait: float = 0) -> dict[str, Any]:
    answer = await client.get("/_harness/events", params={"since": 0, "wait": wait})
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


async def _failed_with(meta: Meta, wamid: str, code: int) -> bool:
    """Whether ``wamid`` got a failed status with ``code``, waiting up to 5 s for it."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        for event in (await _events(meta.a))["events"]:
            seen = (event["kind"], event.get("wamid"), event.get("status"))
            if seen == ("status", wamid, "failed"):
                return any(e["code"] == code for e in event["errors"])
        await asyncio.sleep(0.1)
    return False


async def test_a_conversation_spread_over_two_servers_reads_the_same_and_whole_from_either(
    redis_url: str, namespace: str
) -> None:
    async with _one_meta(redis_url, namespace) as meta:
        registered = await meta.a.post("/_harness/users", json={"wa_id": ANA, "name": "Ana"})
        assert registered.status_code == 201
        wamids = [await _say(meta.either(i), ANA, f"message {i}") for i in range(8)]
        outbox_a = (await meta.a.get("/_harness/outbox")).json()
        outbox_b = (await meta.b.get("/_harness/outbox")).json()
        events_a, events_b = await _events(meta.a), await _events(meta.b)
        conversation = (await meta.b.get("/_harness/conversation")).json()
    # The bot's replies went to both servers, and each reads all of them, in one order.
    assert all(count >= 3 for count in meta.balancer.counts.values()), meta.balancer.counts
    texts = [m["text"]["body"] for m in outbox_a["messages"]]
    assert texts == [f"You said: message {i}" for i in range(8)]
    assert outbox_a == outbox_b
    assert events_a == events_b
    inbound = [e["wamid"] for e in events_a["events"] if e["kind"] == "inbound"]
    assert inbound == wamids
    sent = [e["wamid"] for e in events_a["events"] if e["kind"] == "send"]
    assert len(sent) == 8
    assert len(set(wamids + sent)) == 16  # no wamid twice, whichever process drew it
    # The user registered on A is Ana on B too.
    assert [p["name"] for p in conversation["participants"]] == ["Ana"]


async def test_the_window_opened_on_one_server_is_open_on_the_other_and_closes_on_both(
    redis_url: str, namespace: str
) -> None:
    # The day moved on below would age out, by default, a failed status sent before it.
    async with _one_meta(redis_url, namespace, "--keep-events-for", "all") as meta:
        await _say(meta.a, BEN, "hello")  # Ben's window opens, through A
        text = {"type": "text", "text": {"body": "still there?"}}
        accepted = await _send(meta.b, {"to": BEN, **text})
        assert accepted.status_code == 200, accepted.text
        in_window = accepted.json()["messages"][0]["id"]
        # Cal never wrote: a free-form message fails on either server.
        never = [(await _send(c, {"to": CAL, **text})).json() for c in (meta.a, meta.b)]
        # A day later, moved on A, Ben's window has closed on B too.
        advanced = await meta.a.post("/_harness/advance", json={"duration": "25h"})
        assert advanced.status_code == 200
        clock_a = (await meta.a.get("/_harness/clock")).json()["now"]
        clock_b = (await meta.b.get("/_harness/clock")).json()["now"]
        late = (await _send(meta.b, {"to": BEN, **text})).json()["messages"][0]["id"]
        assert not await _failed_with(meta, in_window, RE_ENGAGEMENT)
        for answer in never:
            assert await _failed_with(meta, answer["messages"][0]["id"], RE_ENGAGEMENT)
        assert await _failed_with(meta, late, RE_ENGAGEMENT)
    assert abs(_seconds(clock_a) - _seconds(clock_b)) < 5


async def test_a_message_made_on_one_server_is_read_and_reacted_to_through_the_other(
    redis_url: str, namespace: str
) -> None:
    async with _one_meta(redis_url, namespace) as meta:
        wamid = await _say(meta.a, ANA, "read me")
        read = await _send(meta.b, {"status": "read", "message_id": wamid})
        unknown = await _send(meta.b, {"status": "read", "message_id": "wamid.HBgNnotamessage"})
        reaction = await _send(
            meta.b,
            {"to": ANA, "type": "reaction", "reaction": {"message_id": wamid, "emoji": "👍"}},
        )
        reacted = reaction.json()["messages"][0]["id"]
        assert read.status_code == 200, read.text
        assert unknown.status_code == 400
        assert not await _failed_with(meta, reacted, 131009)


def _seconds(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp).timestamp()


async def test_a_read_waiting_on_one_server_wakes_for_an_event_on_the_other(
    redis_url: str, namespace: str
) -> None:
    async with _one_meta(redis_url, namespace) as meta:
        registered = await meta.a.post("/_harness/users", json={"wa_id": CAL})
        assert registered.status_code == 201
        start = (await _events(meta.b))["next"]
        waiting = asyncio.create_task(
            meta.b.get("/_harness/events", params={"since": start, "wait": 30, "user": CAL})
        )
        await asyncio.sleep(0.3)  # the read is waiting on B before anything happens
        assert not waiting.done()
        # Only A hears of this send: the agent sends it through A, and no bot answers it.
        sent = await _send(meta.a, {"to": CAL, "type": "text", "text": {"body": "hello?"}})
        woken = (await waiting).json()
    assert [e["kind"] for e in woken["events"]][:1] == ["send"], "the read on B never woke"
    assert woken["events"][0]["wamid"] == sent.json()["messages"][0]["id"]


async def test_a_call_on_one_server_waits_while_the_bot_shows_typing_through_the_other(
    redis_url: str, namespace: str
) -> None:
    # The bot says it is on it, shows "typing..." and thinks for longer than the 0.3 s of
    # silence that ends a call with no answer; its sends alternate between the two servers.
    thinking = {"BOT_HOLDING": "One moment...", "BOT_THINK_SECONDS": "0.8"}
    async with _one_meta(redis_url, namespace, bot="tests.bots.thinking", bot_env=thinking) as meta:
        answered = []
        for i, text in enumerate(("a table for two", "at 8")):
            await _say(meta.either(i), ANA, text)
            outbox = (await meta.either(i).get("/_harness/outbox", params={"user": ANA})).json()
            answered.append([m["text"]["body"] for m in outbox["messages"]])
    assert answered == [
        ["One moment...", "You said: a table for two"],
        ["One moment...", "You said: a table for two", "One moment...", "You said: at 8"],
    ]
    assert set(meta.balancer.counts) == set(meta.balancer.targets)  # both servers took sends


async def test_the_pair_rate_limit_counts_the_sends_of_both_servers(
    redis_url: str, namespace: str
) -> None:
    async with _one_meta(redis_url, namespace) as meta:
        await _say(meta.a, BEN, "hi")  # the bot's answer spends one of Ben's 45
        text = {"type": "text", "text": {"body": "news"}}
        answers = [(await _send(meta.either(i), {"to": BEN, **text})) for i in range(45)]
    codes = [a.json()["error"]["code"] if a.status_code != 200 else 200 for a in answers]
    assert codes[:44] == [200] * 44
    assert codes[44] == 131056  # the 46th message within seconds, whichever server took it


async def test_a_file_uploaded_through_one_server_is_sent_and_downloaded_through_the_other(
    redis_url: str, namespace: str
) -> None:
    photo = b"\xff\xd8\xff\xe0" + b"a user's photo" * 50
    async with _one_meta(redis_url, namespace) as meta:
        uploaded = await meta.a.post(
            "/_harness/media", content=photo, headers={"Content-Type": "image/jpeg"}
        )
        assert uploaded.status_code == 201, uploaded.text
        media_id = uploaded.json()["id"]
        image = {"type": "image", "image": {"id": media_id}}
        sent = await meta.b.post("/_harness/inbound", json={"user": ANA, "message": image})
        assert sent.status_code == 200, sent.text
        auth = {"Authorization": f"Bearer {TOKEN}"}
        described = (await meta.b.get(f"/v25.0/{media_id}", headers=auth)).json()
        path = "/" + described["url"].split("/", 3)[3]
        downloaded = await meta.a.get(path, headers=auth)
        # The agent's own upload, through B, sent by its id through A.
        form = {"messaging_product": "whatsapp", "type": "image/jpeg"}
        files = {"file": ("reply.jpg", photo, "image/jpeg")}
        upload = await meta.b.post(
            f"/v25.0/{PHONE_NUMBER_ID}/media", data=form, files=files, headers=auth
        )
        reply = await _send(
            meta.a, {"to": ANA, "type": "image", "image": {"id": upload.json()["id"]}}
        )
    assert downloaded.status_code == 200
    assert downloaded.content == photo
    assert reply.status_code == 200, reply.text


async def test_buttons_sent_through_one_server_are_tapped_through_the_other(
    redis_url: str, namespace: str
) -> None:
    buttons = {
        "type": "interactive",
        "interactive": {
            "type": "button",
            "body": {"text": "Pizza?"},
            "action": {
                "buttons": [
                    {"type": "reply", "reply": {"id": "yes", "title": "Yes"}},
                    {"type": "reply", "reply": {"id": "no", "title": "No"}},
                ]
            },
        },
    }
    async with _one_meta(redis_url, namespace) as meta:
        await _say(meta.b, ANA, "hungry")
        offered = await _send(meta.a, {"to": ANA, **buttons})
        assert offered.status_code == 200, offered.text
        tapped = await meta.b.post("/_harness/tap", json={"user": ANA, "choice": "Yes"})
        events = (await _events(meta.a))["events"]
    assert tapped.status_code == 200, tapped.text
    [tap] = [e for e in events if e["kind"] == "inbound" and e["type"] == "interactive"]
    assert tap["context_id"] == offered.json()["messages"][0]["id"]


async def test_a_redis_outage_is_answered_as_one_and_the_server_carries_on_after_it(
    redis_server: RedisServer, namespace: str
) -> None:
    port = free_port()
    process = await _serve(port, "http://127.0.0.1:9/webhook", redis_server.url, namespace)
    text = {"type": "text", "text": {"body": "hello"}}
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            await _started(client, process)
            before = await _send(client, {"to": ANA, **text})
            await redis_server.kill()
            graph = await _send(client, {"to": ANA, **text})
            control = await client.get("/_harness/outbox")
            await redis_server.start()  # an empty Redis on the same port
            after = await client.get("/_harness/outbox")
    finally:
        await _stop(process)
    assert before.status_code == 200
    assert (graph.status_code, graph.json()["error"]["code"]) == (503, 131016)
    assert "Redis at redis://127.0.0.1" in graph.json()["error"]["error_data"]["details"]
    assert control.status_code == 503
    assert control.json()["error"]["message"].startswith("Redis at redis://127.0.0.1")
    assert after.status_code == 200


def test_harness_serve_stops_with_one_line_when_its_redis_does_not_answer() -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    result = CliRunner().invoke(serve_command, ["--port", "0", "--redis", url])
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: Redis at {url} is unavailable")
    assert result.output.count("\n") == 1


async def test_two_servers_given_the_same_seed_and_run_id_draw_different_wamids(
    redis_url: str, namespace: str
) -> None:
    async with AsyncExitStack() as stack:
        stack.push_async_callback(_drop, redis_url, namespace)
        wamids = []
        for _ in range(2):
            port = free_port()
            process = await asyncio.create_subprocess_exec(
                *(sys.executable, "-m", "harness", "serve", "--port", str(port)),
                *("--redis", redis_url, "--redis-namespace", namespace),
                *("--seed", "7", "--run-id", "same"),
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
            stack.push_async_callback(_stop, process)
            url = f"http://127.0.0.1:{port}"
            client = await stack.enter_async_context(httpx.AsyncClient(base_url=url, timeout=30))
            await _started(client, process)
            sent = await _send(client, {"to": ANA, "type": "text", "text": {"body": "hi"}})
            wamids.append(sent.json()["messages"][0]["id"])
    assert wamids[0] != wamids[1]
