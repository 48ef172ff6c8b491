"""An independent bot (tests/channels/whatsapp/echo_bot.py) against the simulator.

The same unmodified bot runs in-process and over real loopback HTTP, and
against ``harness serve`` started as a separate process and driven through
its control API, as docs/how-to/serve.md shows with curl (a file uploaded and sent,
a reaction too).
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.control import control_app
from channels.whatsapp.server import BackgroundServer
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.clock import VirtualClock
from tests.bots.loopback import free_port
from tests.channels.whatsapp.conformance.traffic import (
    NOT_YET_AS_META,
    WEBHOOK_KINDS,
    recorded_traffic,
)
from tests.channels.whatsapp.echo_bot import BotConfig, EchoBot, Read, read_webhook
from tests.support.processes import stop

WA_ID = "5511987654321"
BOT_FILE = Path(__file__).with_name("echo_bot.py")


def test_the_bot_imports_nothing_from_the_project() -> None:
    tree = ast.parse(BOT_FILE.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert imported <= {
        "__future__",
        "asyncio",
        "hashlib",
        "hmac",
        "json",
        "dataclasses",
        "typing",
        "httpx",
        "starlette",
    }


async def _conversation(sim: WhatsAppSimulator, echo: EchoBot) -> None:
    sim.add_user(WA_ID, "Ana")
    await sim.say(WA_ID, "hello")
    await sim.settle()
    await sim.say(WA_ID, "menu")
    await sim.settle()
    await sim.tap(WA_ID, "keep")
    await sim.settle()
    await sim.send_media(WA_ID, "document", b"%PDF-1.4 tiny", mime_type="application/pdf")
    await sim.settle()
    replies = [r.text for r in sim.conversation().replies()]
    assert replies == ["echo: hello", "Keep 9am?", "you chose Keep", "got 13 bytes"]
    assert [m["type"] for m in echo.messages] == ["text", "text", "interactive", "document"]
    # every reply reached sent, delivered and read, and the bot heard about it
    statuses = sim.conversation().statuses()
    assert len(statuses) == 3 * len(replies)
    assert len(echo.statuses) == len(statuses)
    assert all(code == 200 for code, _ in echo.send_results)
    assert echo.errors == []  # the bot read every webhook, every required field there


async def test_in_process() -> None:
    config = SimulatorConfig()
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    echo = EchoBot(
        BotConfig(
            config.app_secret,
            config.verify_token,
            config.access_token,
            config.phone_number_id,
            graph_url=config.public_url,
        ),
        sim.graph_client(),
    )
    sim.connect(echo.app())
    await _conversation(sim, echo)
    await sim.aclose()


@pytest.mark.network
async def test_over_loopback_http() -> None:
    graph_port = free_port()
    config = SimulatorConfig(public_url=f"http://127.0.0.1:{graph_port}")
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    client = httpx.AsyncClient()
    echo = EchoBot(
        BotConfig(
            config.app_secret,
            config.verify_token,
            config.access_token,
            config.phone_number_id,
            graph_url=config.public_url,
        ),
        client,
    )
    async with (
        BackgroundServer(sim.graph_app, port=graph_port),
        BackgroundServer(echo.app()) as bot_server,
    ):
        sim.connect(f"{bot_server.url}/webhook")
        await _conversation(sim, echo)
        # a wrong signature is refused by the bot, over the wire as in-process
        refused = await client.post(
            f"{bot_server.url}/webhook",
            content=b"{}",
            headers={"X-Hub-Signature-256": "sha256=" + "0" * 64},
        )
        assert refused.status_code == 403
    await client.aclose()
    await sim.aclose()


@asynccontextmanager
async def _serving(client: httpx.AsyncClient, port: int, webhook_url: str) -> AsyncIterator[str]:
    """``harness serve`` in a process of its own on ``port``; yields its base URL."""
    graph = f"http://127.0.0.1:{port}"
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "harness", "serve", "--port", str(port)),
        *("--webhook-url", webhook_url),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if (await client.get(f"{graph}/_harness/clock")).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.returncode is not None:
                pytest.fail((await process.communicate())[1].decode())
            assert time.monotonic() < deadline, "harness serve did not start in 20 s"
            await asyncio.sleep(0.1)
        yield graph
    finally:
        await stop(process, within=10)


def _echo_bot(config: SimulatorConfig, graph: str, client: httpx.AsyncClient) -> EchoBot:
    return EchoBot(
        BotConfig(
            config.app_secret,
            config.verify_token,
            config.access_token,
            config.phone_number_id,
            graph_url=graph,
        ),
        client,
    )


@pytest.mark.network
async def test_harness_serve_driven_through_its_control_api() -> None:
    config = SimulatorConfig()
    port = free_port()
    client = httpx.AsyncClient(timeout=10)
    echo = _echo_bot(config, f"http://127.0.0.1:{port}", client)
    async with (
        BackgroundServer(echo.app()) as bot_server,
        _serving(client, port, f"{bot_server.url}/webhook") as graph,
    ):
        # Named, so its webhooks carry the profile Meta always sends.
        user = {"wa_id": WA_ID, "name": "Ana"}
        registered = await client.post(f"{graph}/_harness/users", json=user)
        assert registered.status_code == 201, registered.text
        answer = await client.post(
            f"{graph}/_harness/inbound", json={"user": WA_ID, "text": "hello"}
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["wamid"].startswith("wamid.")
        outbox = (await client.get(f"{graph}/_harness/outbox")).json()["messages"]
        texts = [m["text"]["body"] for m in outbox if m.get("type") == "text"]
        assert texts == ["echo: hello"]
        # a photo, uploaded as a user's file, is downloaded by the bot as it was sent
        photo = b"\xff\xd8\xff\xe0 a photo"
        uploaded = await client.post(
            f"{graph}/_harness/media", content=photo, headers={"Content-Type": "image/jpeg"}
        )
        assert uploaded.status_code == 201, uploaded.text
        image = {"type": "image", "image": {"id": uploaded.json()["id"]}}
        sent = await client.post(
            f"{graph}/_harness/inbound", json={"user": WA_ID, "message": image}
        )
        assert sent.status_code == 200, sent.text
        assert echo.downloads == [photo]
        # a thumbs up under the bot's last reply names it
        [*_, last] = [
            body["messages"][0]["id"] for _, body in echo.send_results if "messages" in body
        ]
        thumbs = {"type": "reaction", "reaction": {"emoji": "👍"}}
        sent = await client.post(
            f"{graph}/_harness/inbound", json={"user": WA_ID, "message": thumbs}
        )
        assert sent.status_code == 200, sent.text
        assert echo.messages[-1]["reaction"] == {"message_id": last, "emoji": "👍"}
        events = (await client.get(f"{graph}/_harness/events")).json()["events"]
        kinds = {e["kind"] for e in events}
        assert {"verification", "inbound", "send", "delivery"} <= kinds
        before = (await client.get(f"{graph}/_harness/clock")).json()["now"]
        moved = await client.post(f"{graph}/_harness/advance", json={"duration": "25h"})
        assert moved.json()["now"] > before
        bad = await client.post(f"{graph}/_harness/advance", json={"duration": "soon"})
        assert bad.status_code == 400
        assert "soon" in bad.json()["error"]["message"]
        # a jump of a day ages nothing: what came before it is still there to read
        page = (await client.get(f"{graph}/_harness/events")).json()
        assert page["events"][: len(events)] == events
        assert "clock" in {e["kind"] for e in page["events"][len(events) :]}
        assert page["dropped"] == page["first"] == 0
        spec = (await client.get(f"{graph}/openapi.json")).json()
        assert "/_harness/inbound" in spec["paths"]
    await client.aclose()


@pytest.mark.network
async def test_every_start_of_harness_serve_hands_out_new_message_ids() -> None:
    config = SimulatorConfig()
    client = httpx.AsyncClient(timeout=10)
    seen: list[dict[str, str]] = []
    for _start in range(2):  # the same server, started twice: a bot that keeps dedupe keys
        port = free_port()
        echo = _echo_bot(config, f"http://127.0.0.1:{port}", client)
        async with (
            BackgroundServer(echo.app()) as bot_server,
            _serving(client, port, f"{bot_server.url}/webhook") as graph,
        ):
            for user in (WA_ID, "15551234567"):
                answer = await client.post(
                    f"{graph}/_harness/inbound", json={"user": user, "text": "hi"}
                )
                assert answer.status_code == 200, answer.text
            await echo.idle()
        seen.append({m["from"]: f"{m['id']} {m['from_user_id']}" for m in echo.messages})
    await client.aclose()
    first, second = seen
    wamids = [ids.split()[0] for ids in (*first.values(), *second.values())]
    assert len(set(wamids)) == 4  # no "hi" ever has another's id
    bsuids = {user: ids.split()[1] for user, ids in first.items()}
    assert bsuids == {user: ids.split()[1] for user, ids in second.items()}  # kept per number
    assert bsuids[WA_ID] != bsuids["15551234567"]
    assert (bsuids[WA_ID][:3], bsuids["15551234567"][:3]) == ("BR.", "US.")


# -- the bot reads every kind of webhook strictly ------------------------------------


def _kind(kind: str) -> Any:
    reason = NOT_YET_AS_META.get(kind)
    marks = [] if reason is None else [pytest.mark.xfail(strict=True, reason=reason)]
    return pytest.param(kind, marks=marks, id=kind)


@pytest.mark.parametrize("kind", [_kind(kind) for kind in WEBHOOK_KINDS])
def test_the_bot_reads_every_kind_of_webhook_the_simulator_sends(kind: str) -> None:
    traffic = recorded_traffic()
    payload = json.loads(traffic.webhooks[kind].body)
    read = read_webhook(payload, traffic.config.phone_number_id)
    assert len(read.messages) + len(read.statuses) == 1
    assert read_webhook(payload, "another-number") == Read()


def test_the_bot_refuses_a_webhook_that_lacks_a_required_field() -> None:
    traffic = recorded_traffic()
    payload = json.loads(traffic.webhooks["text"].body)
    del payload["entry"][0]["changes"][0]["value"]["contacts"][0]["user_id"]
    with pytest.raises(KeyError, match="user_id"):
        read_webhook(payload, traffic.config.phone_number_id)


async def test_a_number_that_writes_in_unannounced_is_read_by_the_bot() -> None:
    config = SimulatorConfig()
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    bot = BotConfig(
        config.app_secret,
        config.verify_token,
        config.access_token,
        config.phone_number_id,
        graph_url=config.public_url,
    )
    echo = EchoBot(bot, sim.graph_client())
    sim.connect(echo.app())
    transport = httpx.ASGITransport(app=control_app(sim))
    async with httpx.AsyncClient(transport=transport, base_url=config.public_url) as control:
        answer = await control.post("/_harness/inbound", json={"user": WA_ID, "text": "hello"})
    await sim.aclose()
    assert answer.status_code == 200, answer.text
    assert echo.errors == []
