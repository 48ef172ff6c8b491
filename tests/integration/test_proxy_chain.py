"""``harness proxy`` in the whole chain, over loopback HTTP.

The simulator plays Meta twice: it sends the users' webhooks to the proxy,
and serves the Graph API the proxy forwards the agent's calls to. The
reference booking agent sits behind the proxy, recording its model and tool
calls into a store under the fixture's id, as a deployed agent does. The
fixture the proxy writes must replay, offline and pinned, to the same
conversation; a proxy killed with SIGKILL must leave a fixture that loads and
lacks at most the event in flight.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from agents.booking import agent_factory
from channels.whatsapp.channel import agent_settings
from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.envelope import build_webhook, contact
from channels.whatsapp.messages import parse_message
from channels.whatsapp.proxy import (
    create_proxy_app,
)
from channels.whatsapp.proxy_collector import RecordingCollector
from channels.whatsapp.proxy_record import ProxyRecorder
from channels.whatsapp.proxy_settings import ProxySettings
from channels.whatsapp.server import BackgroundServer
from channels.whatsapp.signing import SignedBody
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.channel import AgentEnvironment
from harness.cli.main import cli
from harness.clock import SystemClock, VirtualClock
from harness.fixture import load_fixture
from harness.recording import Recording, store_key
from harness.replay.playback import plan_from_fixture, recorded_calls, replay_fixture
from harness.store import MemoryStore, RedisStore
from harness.suites.runner import Runner, RunOptions
from harness.trace import InboundMessage, LLMExchange, OutboundSend, ToolCall
from tests.bots.loopback import free_port
from tests.support.processes import stop

pytestmark = pytest.mark.network

ANA = "5511987654321"
BRUNO = "4915112345678"
AGENT_SETTINGS = {"BOOKING_DEBOUNCE_SECONDS": "0.2"}


@dataclass
class Chain:
    """Everything one recording needs, running."""

    sim: WhatsAppSimulator
    config: SimulatorConfig
    proxy_url: str
    recording: Recording
    out: Path


@asynccontextmanager
async def _agent(
    config: SimulatorConfig, proxy_url: str, recording: Recording | None
) -> AsyncIterator[BackgroundServer]:
    http = httpx.AsyncClient(timeout=10)
    env = AgentEnvironment(
        channel="whatsapp",
        settings={**agent_settings(config, proxy_url), **AGENT_SETTINGS},
        clock=SystemClock(),
        store=MemoryStore(),
        http_client=http,
        recording=recording,
    )
    app = agent_factory(env)
    assert isinstance(app, Starlette)  # with an HTTP client, the webhook app
    try:
        async with BackgroundServer(app) as server:
            yield server
    finally:
        await app.state.agent.aclose()
        await http.aclose()


@asynccontextmanager
async def _chain(out: Path, *, key: str | None = None) -> AsyncIterator[Chain]:
    graph_port, proxy_port = free_port(), free_port()
    config = SimulatorConfig(public_url=f"http://127.0.0.1:{graph_port}")
    sim = WhatsAppSimulator(config, clock=VirtualClock(datetime.now(UTC).replace(microsecond=0)))
    proxy_url = f"http://127.0.0.1:{proxy_port}"
    shared = MemoryStore()  # Redis, between processes
    recording = Recording.in_store(shared, "chat", "record")
    async with (
        BackgroundServer(sim.graph_app, port=graph_port) as graph,
        _agent(config, proxy_url, recording) as agent,
    ):
        settings = ProxySettings(
            agent_url=f"{agent.url}/webhook",
            app_secret=config.app_secret,
            verify_token=config.verify_token,
            out=out,
            upstream_graph=graph.url,
            fixture_id="chat",
            pseudonymize_key=key,
            agent_settings=AGENT_SETTINGS,
        )
        recorder = ProxyRecorder(settings)
        app = create_proxy_app(settings, recorder, collector=RecordingCollector(shared, "chat"))
        try:
            async with BackgroundServer(app, port=proxy_port):
                sim.connect(f"{proxy_url}/webhook")
                yield Chain(sim, config, proxy_url, recording, out)
                await sim.settle()
                await recording.flush()
        finally:
            await sim.aclose()
            recorder.close()


async def _book(sim: WhatsAppSimulator) -> None:
    sim.add_user(ANA, "Ana")
    sim.add_user(BRUNO, "Bruno")
    await sim.say(ANA, "A table on friday at 8pm please")
    await sim.settle()
    await sim.say(BRUNO, "Hi! a table for saturday at 7pm")
    await sim.settle()
    await sim.tap(ANA, "confirm")
    await sim.settle()
    await sim.tap(BRUNO, "confirm")
    await sim.settle()


@pytest.mark.slow
async def test_a_recorded_chat_replays_offline_to_the_same_conversation(tmp_path: Path) -> None:
    out = tmp_path / "chat"
    async with _chain(out) as chain:
        await _book(chain.sim)
        live = chain.sim.conversation()
    fixture = load_fixture(out)
    recorded = fixture.conversation
    assert recorded is not None
    # what Meta saw and what the fixture says the agent sent are the same messages
    assert [r.text for r in recorded.replies()] == [r.text for r in live.replies()]
    assert any("Booked" in (r.text or "") for r in recorded.replies(ANA))
    assert any("Booked" in (r.text or "") for r in recorded.replies(BRUNO))
    assert {p.id for p in recorded.participants} == {ANA, BRUNO}
    assert {p.name for p in recorded.participants} == {"Ana", "Bruno"}
    # the agent's own recordings joined in
    assert fixture.raw("llm")
    assert fixture.raw("tools")
    assert recorded.tool_calls("book_appointment")
    assert [e for e in fixture.events if isinstance(e, LLMExchange)]
    # every status of every reply came through the proxy
    assert len(recorded.statuses("read")) == len(recorded.replies())
    # the agent's Graph API calls, in order, with how long each took, for the replay to take
    calls = recorded_calls(fixture)
    graph_spans = [s for s in fixture.raw("spans") if "http.request.method" in s["attributes"]]
    assert len(calls) == len(graph_spans) >= 2 * len(recorded.replies())
    assert calls[0].method == "POST"
    assert calls[0].path == f"/{chain.config.api_version}/{chain.config.phone_number_id}/messages"
    assert all(c.latency_ms > 0 for c in calls)
    result = await replay_fixture(Runner(RunOptions()), fixture)
    assert result.status == "same", (result.changes, result.divergences, result.error)
    assert result.unused == 0


@pytest.mark.slow
async def test_a_pseudonymized_chat_names_nobody_and_still_replays(tmp_path: Path) -> None:
    out = tmp_path / "chat"
    async with _chain(out, key="a key the team keeps") as chain:
        await _book(chain.sim)
        bsuids = [u.user_id for u in chain.sim.users]
    written = "\n".join(p.read_text() for p in out.rglob("*") if p.is_file())
    for secret in (ANA, BRUNO, *bsuids, chain.config.app_secret):
        assert secret not in written
    for name in ("Ana", "Bruno"):  # as a word: a random id may hold the letters
        assert re.search(rf"\b{name}\b", written) is None, name
    assert chain.config.access_token not in written
    fixture = load_fixture(out)
    assert fixture.conversation is not None
    assert {p.name for p in fixture.conversation.participants} <= {
        f"User {n}" for n in range(10000, 100000)
    }
    result = await replay_fixture(Runner(RunOptions()), fixture)
    assert result.status == "same", (result.changes, result.divergences, result.error)


def test_harness_replay_plays_a_proxy_fixture(tmp_path: Path) -> None:
    out = tmp_path / "chat"

    async def record() -> None:
        async with _chain(out) as chain:
            chain.sim.add_user(ANA, "Ana")
            await chain.sim.say(ANA, "A table on friday at 8pm please")
            await chain.sim.settle()

    asyncio.run(record())
    pinned = CliRunner().invoke(cli, ["replay", str(out)])
    assert pinned.exit_code == 0, pinned.output
    assert "SAME" in pinned.output
    # As after a crash. The users' names are in meta.json, but the replay reads them from
    # conversation.json only, and this agent puts the name in its prompt: so, live.
    (out / "conversation.json").unlink()
    meta = json.loads((out / "meta.json").read_text())
    assert [p["name"] for p in meta["participants"]] == ["Ana"]
    live = CliRunner().invoke(cli, ["replay", str(out), "--policy", "live"])
    assert live.exit_code == 0, live.output


async def _wait_for(url: str, process: asyncio.subprocess.Process) -> None:
    deadline = time.monotonic() + 20
    async with httpx.AsyncClient() as client:
        while True:
            try:
                await client.get(url)
                return
            except httpx.TransportError:
                pass
            if process.returncode is not None:
                _, err = await process.communicate()
                pytest.fail(f"the process exited: {err.decode()}")
            assert time.monotonic() < deadline, f"{url} did not answer in 20 s"
            await asyncio.sleep(0.05)


async def _proxy_ready(process: asyncio.subprocess.Process) -> None:
    """Wait for the proxy to say it listens: an answer on its port could be another server's.

    A port found free and closed again can be handed to the next server started,
    so only the proxy's own "proxy on" line tells that the proxy is the one serving.
    """
    assert process.stdout is not None
    try:
        async with asyncio.timeout(20):
            while not (line := await process.stdout.readline()).startswith(b"proxy on "):
                if not line:
                    _, err = await process.communicate()
                    pytest.fail(f"the proxy exited: {err.decode()}")
    except TimeoutError:
        pytest.fail("the proxy did not start in 20 s")


async def test_a_proxy_killed_mid_conversation_leaves_a_fixture_that_loads(
    tmp_path: Path,
) -> None:
    out = tmp_path / "chat"
    graph_port, proxy_port = free_port(), free_port()
    config = SimulatorConfig(public_url=f"http://127.0.0.1:{graph_port}")
    sim = WhatsAppSimulator(config, clock=VirtualClock(datetime.now(UTC).replace(microsecond=0)))
    proxy_url = f"http://127.0.0.1:{proxy_port}"
    async with (
        BackgroundServer(sim.graph_app, port=graph_port) as graph,
        _agent(config, proxy_url, None) as agent,
    ):
        process = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "channels.whatsapp.proxy_cli"),
            *("--listen", f"127.0.0.1:{proxy_port}", "--agent-url", f"{agent.url}/webhook"),
            *("--upstream-graph", graph.url, "--out", str(out)),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={
                **os.environ,
                "PYTHONUNBUFFERED": "1",
                "WHATSAPP_APP_SECRET": config.app_secret,
                "WHATSAPP_VERIFY_TOKEN": config.verify_token,
            },
        )
        try:
            await _proxy_ready(process)
            sim.connect(f"{proxy_url}/webhook")
            sim.add_user(ANA, "Ana")
            await sim.say(ANA, "A table on friday at 8pm please")
            await sim.settle()
            before = sim.conversation()
            tapped = await sim.tap(ANA, "confirm")
            settling = asyncio.create_task(sim.settle())
            # The second turn is under way (the proxy has passed the tap to the agent) ...
            await _delivered(sim, tapped)
            process.send_signal(signal.SIGKILL)  # ... when the proxy dies
            await process.wait()
            await settling
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
            await sim.aclose()
    assert process.returncode == -signal.SIGKILL
    fixture = load_fixture(out)  # loads: no conversation.json, maybe a torn last line
    assert fixture.conversation is None
    recorded = {e.wamid for e in fixture.events if isinstance(e, InboundMessage)}
    sent = {e.wamid for e in fixture.events if isinstance(e, OutboundSend) and e.wamid}
    assert {m.wamid for m in before.inbound()} <= recorded
    assert {s.wamid for s in before.replies()} <= sent
    # what the proxy acknowledged before dying is there, but for the event in flight
    acknowledged = [d for d in sim.conversation().deliveries() if d.status_code == 200]
    delivered = [e for e in fixture.events if e.kind == "delivery"]
    assert len(acknowledged) - len(delivered) <= 1
    assert plan_from_fixture(fixture)[0].text == "A table on friday at 8pm please"
    assert not [e for e in fixture.events if isinstance(e, ToolCall)]  # no store, no tool calls


async def _delivered(sim: WhatsAppSimulator, wamid: str, within: float = 10.0) -> None:
    """Wait until the agent (through the proxy) has taken message ``wamid``."""
    deadline = time.monotonic() + within
    while not any(
        e.kind == "delivery" and wamid in e.items and e.status_code == 200 for e in sim.events
    ):
        assert time.monotonic() < deadline, f"{wamid} was not delivered in {within} s"
        await asyncio.sleep(0.005)


def _stub_agent() -> Starlette:
    async def receive(request: Request) -> Response:
        await request.body()
        return PlainTextResponse("EVENT_RECEIVED")

    return Starlette(routes=[Route("/webhook", receive, methods=["POST"])])


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
async def test_a_stopped_proxy_closes_its_fixture(tmp_path: Path, stop: signal.Signals) -> None:
    out = tmp_path / "chat"
    config = SimulatorConfig()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    async with BackgroundServer(_stub_agent()) as agent:
        process = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "channels.whatsapp.proxy_cli", "--pseudonymize"),
            *("--listen", f"127.0.0.1:{port}", "--agent-url", f"{agent.url}/webhook"),
            *("--upstream-graph", "http://127.0.0.1:9", "--out", str(out)),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={
                **os.environ,
                "PYTHONUNBUFFERED": "1",
                "WHATSAPP_APP_SECRET": config.app_secret,
                "WHATSAPP_VERIFY_TOKEN": config.verify_token,
            },
        )
        try:
            await _proxy_ready(process)
            message = parse_message(
                {"from": ANA, "id": "wamid.A1", "timestamp": "1767225600", "type": "text"}
                | {"text": {"body": "hello"}}
            )
            payload = build_webhook(
                waba_id=config.waba_id,
                phone_number_id=config.phone_number_id,
                display_phone_number=config.display_phone_number,
                messages=[message],
                contacts=[contact(ANA, "Ana", user_id="BR.1234567890")],
            )
            signed = SignedBody.create(payload, config.app_secret)
            async with httpx.AsyncClient() as client:
                answer = await client.post(
                    f"{url}/webhook", content=signed.body, headers=signed.headers()
                )
            assert answer.status_code == 200
            process.send_signal(stop)
            stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=20)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    assert process.returncode == 0, stderr.decode()
    assert "stopped: 2 events recorded" in stdout.decode()
    printed = re.search(
        r"pseudonym key \(printed once, stored nowhere\): ([0-9a-f]{64})", stderr.decode()
    )
    assert printed is not None
    fixture = load_fixture(out)
    assert fixture.conversation is not None  # written at the clean stop
    [inbound] = fixture.conversation.inbound()
    assert inbound.text == "hello"
    assert inbound.user != ANA
    written = "\n".join(p.read_text() for p in out.rglob("*") if p.is_file())
    for secret in (printed.group(1), ANA, "Ana", config.app_secret, config.verify_token):
        assert secret not in written


async def _start(*argv: str, env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
    )


async def _stop(process: asyncio.subprocess.Process) -> tuple[bytes, bytes]:
    return await stop(process, within=20)  # killed if it is still running 20 s after SIGTERM


@pytest.mark.redis
@pytest.mark.slow
async def test_processes_of_their_own_sharing_a_redis(
    tmp_path: Path, redis_url: str, namespace: str
) -> None:
    """The deployed shape: the agent and the proxy each a process, the recording in Redis."""
    out = tmp_path / "chat"
    graph_port, proxy_port, agent_port = free_port(), free_port(), free_port()
    config = SimulatorConfig(public_url=f"http://127.0.0.1:{graph_port}")
    sim = WhatsAppSimulator(config, clock=VirtualClock(datetime.now(UTC).replace(microsecond=0)))
    proxy_url = f"http://127.0.0.1:{proxy_port}"
    agent = await _start(
        *("-m", "uvicorn", "agents.booking:app", "--port", str(agent_port)),
        env={
            **agent_settings(config, proxy_url),
            **AGENT_SETTINGS,
            "HARNESS_RECORD_MODE": "record",
            "HARNESS_RECORDING_URL": redis_url,
            "HARNESS_FIXTURE_ID": namespace,
        },
    )
    proxy = await _start(
        *("-m", "channels.whatsapp.proxy_cli", "--listen", f"127.0.0.1:{proxy_port}"),
        *("--agent-url", f"http://127.0.0.1:{agent_port}/webhook", "--out", str(out)),
        *("--upstream-graph", f"http://127.0.0.1:{graph_port}", "--store", redis_url),
        *("--fixture-id", namespace, "--agent-setting", "BOOKING_DEBOUNCE_SECONDS=0.2"),
        env={
            "WHATSAPP_APP_SECRET": config.app_secret,
            "WHATSAPP_VERIFY_TOKEN": config.verify_token,
        },
    )
    try:
        async with BackgroundServer(sim.graph_app, port=graph_port):
            await _wait_for(f"http://127.0.0.1:{agent_port}/healthz", agent)
            await _proxy_ready(proxy)
            sim.connect(f"{proxy_url}/webhook")
            sim.add_user(ANA, "Ana")
            await sim.say(ANA, "A table on friday at 8pm please")
            await sim.settle()
            await sim.tap(ANA, "confirm")
            await sim.settle()
            _, err_text = await _stop(proxy)
            assert proxy.returncode == 0, err_text.decode()
    finally:
        await sim.aclose()
        for process in (proxy, agent):
            if process.returncode is None:
                await _stop(process)
        store = RedisStore.from_url(redis_url)
        for log in ("llm", "tools"):
            await store.delete(store_key(namespace, log))
        await store.close()
    fixture = load_fixture(out)
    assert fixture.raw("llm")
    assert fixture.conversation is not None
    assert fixture.conversation.tool_calls("book_appointment")
    assert any("Booked" in (r.text or "") for r in fixture.conversation.replies())
    result = await replay_fixture(Runner(RunOptions()), fixture)
    assert result.status == "same", (result.changes, result.divergences, result.error)
    assert result.unused == 0
