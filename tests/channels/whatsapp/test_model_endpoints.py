"""``harness proxy`` and ``harness serve`` as model endpoints and OTLP receivers for any agent.

An agent using the official SDKs, configured by their environment only, is
recorded through the proxy (model calls on their way to the provider, tool
calls from its OpenTelemetry spans) and replayed offline by ``harness serve``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anthropic
import pytest
from click.testing import CliRunner
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from channels.whatsapp.cli import serve_command
from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.control import control_app
from channels.whatsapp.model_options import serve_recording
from channels.whatsapp.proxy import create_proxy_app
from channels.whatsapp.proxy_record import ProxyRecorder
from channels.whatsapp.proxy_settings import ProxySettings
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.cli.main import HarnessGroup
from harness.clock import VirtualClock
from harness.endpoints import Endpoints, Stamp
from harness.fixture import load_fixture
from harness.records import LLMRecord
from harness.trace import LLMExchange
from tests.bots.fake_anthropic import Step, Text, ToolUse, serve_fake_anthropic
from tests.bots.loopback import serve_in_process

pytestmark = pytest.mark.network

CONFIG = SimulatorConfig()
SECRET = "sk-ant-secret-proxy-0123456789"
MODEL = "claude-test-1"
ASK: Any = [{"role": "user", "content": "Book me in on Friday at 10"}]
TOOLS: Any = [{"name": "book_appointment", "input_schema": {"type": "object"}}]


async def agent_turn(url: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """One turn of an agent built on the SDKs alone: ask, call the tool, ask again, answer."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    tracer = provider.get_tracer("agent")
    async with anthropic.AsyncAnthropic() as client:
        first = await client.messages.create(model=MODEL, max_tokens=128, messages=ASK, tools=TOOLS)
        [use] = [block for block in first.content if block.type == "tool_use"]

        def run_tool() -> None:  # the exporter posts synchronously: beside the loop
            attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": use.name,
                "gen_ai.tool.call.arguments": json.dumps(use.input),
                "gen_ai.tool.call.result": json.dumps({"booking": "B-1"}),
            }
            with tracer.start_as_current_span(f"execute_tool {use.name}", attributes=attributes):
                pass
            provider.shutdown()

        await asyncio.to_thread(run_tool)
        history: Any = [
            *ASK,
            {"role": "assistant", "content": [b.model_dump() for b in first.content]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "B-1"}],
            },
        ]
        async with client.messages.stream(
            model=MODEL, max_tokens=128, messages=history, tools=TOOLS
        ) as stream:
            final = await stream.get_final_message()
    assert final.content[0].type == "text"
    return use.name, final.content[0].text


@asynccontextmanager
async def proxy(tmp_path: Path, upstream: str) -> AsyncIterator[tuple[str, ProxyRecorder]]:
    settings = ProxySettings(
        agent_url="http://127.0.0.1:9/webhook",
        app_secret=CONFIG.app_secret,
        verify_token=CONFIG.verify_token,
        out=tmp_path / "fixture",
        anthropic_upstream=upstream,
        side_effect_tools=("book_appointment",),
    )
    recorder = ProxyRecorder(settings)
    try:
        async with serve_in_process(create_proxy_app(settings, recorder)) as url:
            yield url, recorder
    finally:
        recorder.close()


@asynccontextmanager
async def served(fixture: Path) -> AsyncIterator[tuple[str, WhatsAppSimulator]]:
    """``harness serve --model-mode replay --model-records FIXTURE``, in-process."""
    sim = WhatsAppSimulator(CONFIG, clock=VirtualClock())
    recording, close = serve_recording("replay", fixture)
    endpoints = Endpoints.for_recording(recording, sim.record, clock=Stamp(sim.clock))
    try:
        async with serve_in_process(endpoints.around(control_app(sim))) as url:
            yield url, sim
    finally:
        await endpoints.aclose()
        await sim.aclose()
        close()


async def test_a_chat_recorded_through_the_proxy_replays_offline_through_serve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script: list[Step] = [
        ToolUse("book_appointment", {"day": "friday", "time": "10:00"}),
        Text("Booked!"),
    ]
    async with serve_fake_anthropic(script, delay=0) as (upstream, fake):
        async with proxy(tmp_path, upstream) as (url, recorder):
            live = await agent_turn(url, monkeypatch)
        assert len(fake.requests) == 2
    assert live == ("book_appointment", "Booked!")

    fixture = load_fixture(tmp_path / "fixture")
    assert len(fixture.records("llm", LLMRecord)) == 2
    # The booking, seen in the result the agent gave back to its model and reported by its
    # span: the span's is kept, once, in the conversation and in the event log.
    conversation = recorder.conversation()
    assert [event.kind for event in conversation.events] == ["llm", "tool", "llm"]
    assert [e.kind for e in fixture.events or ()] == ["llm", "tool", "llm"]
    [booking] = conversation.tool_calls()
    assert booking.args == {"day": "friday", "time": "10:00"}
    assert booking.side_effect
    for written in (tmp_path / "fixture").iterdir():
        assert SECRET not in written.read_text(encoding="utf-8"), written.name

    # Offline: no provider anywhere, and the same turn gets the same answers.
    async with served(tmp_path / "fixture") as (url, sim):
        again = await agent_turn(url, monkeypatch)
    assert again == live
    replayed = [event for event in sim.events if isinstance(event, LLMExchange)]
    assert [event.source for event in replayed] == ["recorded", "recorded"]
    assert [event.kind for event in sim.events] == ["llm", "tool", "llm"]


def test_serve_replaying_without_records_is_refused_in_one_line() -> None:
    group = HarnessGroup(commands={"serve": serve_command})
    result = CliRunner().invoke(group, ["serve", "--model-mode", "replay"])
    assert result.exit_code == 2
    assert result.output == "error: --model-mode replay: needs --model-records\n"


def test_serve_replaying_a_bad_record_names_the_file_and_line(tmp_path: Path) -> None:
    records = tmp_path / "llm.jsonl"
    records.write_text('{"key": "abc"}\n', encoding="utf-8")
    group = HarnessGroup(commands={"serve": serve_command})
    args = ["serve", "--model-mode", "replay", "--model-records", str(records)]
    result = CliRunner().invoke(group, args)
    assert result.exit_code == 2
    assert result.output.startswith(f"error: {records}:1: request: ")


async def test_the_proxy_forwards_and_records_the_agents_key_only(tmp_path: Path) -> None:
    script: list[Step] = [Text("yes"), Text("again")]
    async with (
        serve_fake_anthropic(script, delay=0) as (upstream, fake),
        proxy(tmp_path, upstream) as (url, recorder),
    ):
        async with anthropic.AsyncAnthropic(base_url=url, api_key=SECRET) as agent:
            await agent.messages.create(model=MODEL, max_tokens=16, messages=ASK)
        async with anthropic.AsyncAnthropic(
            base_url=url, api_key="sk-ant-stranger", max_retries=0
        ) as stranger:
            with pytest.raises(anthropic.PermissionDeniedError) as caught:
                await stranger.messages.create(model=MODEL, max_tokens=16, messages=ASK)
        async with anthropic.AsyncAnthropic(base_url=url, api_key=SECRET) as agent:
            again: Any = await agent.messages.create(model=MODEL, max_tokens=16, messages=ASK)
    assert "one agent's calls only" in str(caught.value)
    assert len(fake.requests) == 2  # the stranger's call never left the proxy
    assert again.content[0].text == "again"
    assert [event.kind for event in recorder.events] == ["llm", "llm"]
