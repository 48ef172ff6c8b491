"""A live chat with an SDK agent, recorded through ``harness proxy`` and replayed offline.

The example of docs/how-to/any-agent.md, over loopback: the simulator plays
Meta, the proxy sits between it and a bot written on the ``anthropic`` SDK and
OpenTelemetry alone (its base URL, its Graph API URL and its exporter all
aimed at the proxy), and the model is a fake provider behind the proxy. The
fixture must replay against a fresh copy of the bot, aimed at the replay's
server, with no provider at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.proxy import create_proxy_app
from channels.whatsapp.proxy_record import ProxyRecorder
from channels.whatsapp.proxy_settings import ProxySettings
from channels.whatsapp.server import BackgroundServer
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.clock import VirtualClock
from harness.fixture import load_fixture
from harness.replay.playback import replay_fixture
from harness.suites.runner import Runner, RunOptions
from harness.trace import LLMExchange, OutboundSend, ToolCall
from tests.bots.fake_anthropic import Step, Text, ToolUse, serve_fake_anthropic
from tests.bots.loopback import free_port, serve_in_process
from tests.bots.sdk_agent import create_app

pytestmark = pytest.mark.network

ANA = "5511987654321"
CONFIG = SimulatorConfig()


@asynccontextmanager
async def sdk_agent(
    monkeypatch: pytest.MonkeyPatch, harness_url: str, *, booked: int = 0, spans: bool = True
) -> AsyncIterator[str]:
    """The bot, its model, Graph API and spans all aimed at ``harness_url``; yields its URL.

    Its booking service already holds ``booked`` bookings (so it hands out later ids);
    with ``spans`` False it exports no spans (its tool calls are seen in its model calls).
    """
    monkeypatch.setenv("ANTHROPIC_BASE_URL", harness_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-live-key")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", harness_url)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
    settings = {
        "WHATSAPP_GRAPH_URL": harness_url,
        "WHATSAPP_ACCESS_TOKEN": CONFIG.access_token,
        "WHATSAPP_PHONE_NUMBER_ID": CONFIG.phone_number_id,
        "WHATSAPP_APP_SECRET": CONFIG.app_secret,
        "WHATSAPP_VERIFY_TOKEN": CONFIG.verify_token,
    }
    app = create_app(settings, spans=spans)
    app.state.bookings.extend({"user": "0", "day": "monday", "time": "9:00"} for _ in range(booked))
    async with serve_in_process(app) as url:
        yield url


async def until(condition: object, what: str, within: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not callable(condition) or not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"waited {within} s for {what}")
        await asyncio.sleep(0.02)


async def record_chat(out: Path, monkeypatch: pytest.MonkeyPatch, *, spans: bool = True) -> None:
    """Ana books through the proxy, with Meta played by a simulator; the chat lands in ``out``."""
    graph_port, proxy_port = free_port(), free_port()
    config = CONFIG.model_copy(update={"public_url": f"http://127.0.0.1:{graph_port}"})
    sim = WhatsAppSimulator(config, clock=VirtualClock(datetime.now(UTC).replace(microsecond=0)))
    proxy_url = f"http://127.0.0.1:{proxy_port}"
    script: list[Step] = [
        ToolUse("book_appointment", {"day": "friday", "time": "10:00"}),
        Text("Booked you in for Friday at 10."),
    ]
    async with (
        serve_fake_anthropic(script, delay=0) as (provider, _fake),
        BackgroundServer(sim.graph_app, port=graph_port) as graph,
        sdk_agent(monkeypatch, proxy_url, spans=spans) as agent,
    ):
        settings = ProxySettings(
            agent_url=f"{agent}/webhook",
            app_secret=config.app_secret,
            verify_token=config.verify_token,
            out=out,
            upstream_graph=graph.url,
            anthropic_upstream=provider,
            side_effect_tools=("book_appointment",),
        )
        recorder = ProxyRecorder(settings)
        try:
            async with BackgroundServer(create_proxy_app(settings, recorder), port=proxy_port):
                sim.connect(f"{proxy_url}/webhook")
                sim.add_user(ANA, "Ana")
                await sim.say(ANA, "Book me in on Friday at 10")
                await sim.settle()
                await until(
                    lambda: any(isinstance(e, ToolCall) for e in recorder.events), "the tool call"
                )
                if spans:  # the span comes too, and the model's view of the call is left out
                    await until(lambda: len(recorder.conversation().tool_calls()) == 1, "a span")
        finally:
            await sim.aclose()
            recorder.close()


async def test_a_live_chat_with_an_sdk_agent_replays_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "chat"
    await record_chat(out, monkeypatch)

    fixture = load_fixture(out)
    recorded = fixture.conversation
    assert recorded is not None
    assert [r.text for r in recorded.replies()] == ["Booked you in for Friday at 10."]
    assert [c.name for c in recorded.tool_calls("book_appointment")] == ["book_appointment"]
    assert len([e for e in recorded.events if isinstance(e, LLMExchange)]) == 2
    for written in out.rglob("*.json*"):
        assert "sk-ant-live-key" not in written.read_text(encoding="utf-8"), written.name

    # Offline, the bot's own booking service runs for real (its spans report it, but the
    # recording cannot answer it) and has been used since: it hands out B-4, not B-1.
    replay_graph = f"http://127.0.0.1:{free_port()}"
    async with sdk_agent(monkeypatch, replay_graph, booked=3) as agent:
        options = RunOptions(
            target_url=f"{agent}/webhook",
            quiet=0.5,
            channel_options={
                "graph_url": replay_graph,
                "serve_graph": True,
                "anthropic_upstream": "http://127.0.0.1:9",  # nothing there: offline
            },
        )
        result = await replay_fixture(Runner(options), fixture)
        # The bot remembers every user it has talked to: replayed again, the chat's user is
        # someone new to it, and the replay is the same again.
        again = await replay_fixture(Runner(options), fixture)
    assert again.status == "same", (again.divergences, again.error, again.changes)
    assert again.conversation is not None
    assert [u.wa_id for u in again.conversation.participants] == [ANA]  # as recorded
    assert result.divergences == ()
    assert result.status == "same", (result.error, result.changes)
    assert result.unused == 0
    assert result.conversation is not None
    sent = [e.text for e in result.conversation.events if isinstance(e, OutboundSend)]
    assert sent == ["Booked you in for Friday at 10."]
    [call] = result.conversation.tool_calls()
    assert call.name == "book_appointment"
    assert call.result == {"booking": "B-4"}
    assert len(result.tool_notes) == 1
    assert result.tool_notes[0].startswith(
        'turn 1: book_appointment answered {"booking": "B-4"} where the recording has '
        '{"booking": "B-1"}'
    )
    # On the replay's clock the tool call comes after the message that asked for it.
    [asked] = result.conversation.inbound()
    [answered] = [e for e in result.conversation.events if isinstance(e, OutboundSend)]
    assert asked.at <= call.at <= answered.at


async def test_a_chat_with_an_agent_that_exports_no_spans_keeps_its_tool_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No spans, no recorders: the booking is seen in the result the bot gave back to its model.
    out = tmp_path / "chat"
    await record_chat(out, monkeypatch, spans=False)
    fixture = load_fixture(out)
    assert fixture.conversation is not None
    [recorded] = fixture.conversation.tool_calls("book_appointment")
    assert recorded.args == {"day": "friday", "time": "10:00"}
    assert recorded.result == {"booking": "B-1"}
    assert recorded.side_effect  # named by --side-effect-tool

    replay_graph = f"http://127.0.0.1:{free_port()}"
    async with sdk_agent(monkeypatch, replay_graph, booked=3, spans=False) as agent:
        options = RunOptions(
            target_url=f"{agent}/webhook",
            quiet=0.5,
            channel_options={
                "graph_url": replay_graph,
                "serve_graph": True,
                "anthropic_upstream": "http://127.0.0.1:9",  # nothing there: offline
            },
        )
        result = await replay_fixture(Runner(options), fixture)
    assert result.status == "same", (result.divergences, result.error, result.changes)
    assert result.conversation is not None
    [call] = result.conversation.tool_calls()
    assert (call.name, call.result) == ("book_appointment", {"booking": "B-4"})
