"""An agent written on the SDKs alone, recorded and replayed by a run against its URL.

The bot (:mod:`tests.bots.sdk_agent`) knows nothing of the harness: its
``ANTHROPIC_BASE_URL`` and ``OTEL_EXPORTER_OTLP_ENDPOINT`` point at the run's
fake Graph API server, which records its model calls (on their way to a fake
provider), replays them offline, and turns its tool spans into the trace's
tool calls, where an invariant catches a booking the user never confirmed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import anthropic
import httpx
import pytest
from starlette.applications import Starlette

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.router import GraphRouter
from harness.recording import Recording
from harness.records import LLMRecord
from harness.results import ScenarioResult
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import parse_scenario
from harness.tape import RecordMode
from harness.trace import Event, InboundMessage, LLMExchange, OutboundSend, ToolCall
from tests.bots.fake_anthropic import Step, Text, ToolUse, serve_fake_anthropic
from tests.bots.loopback import free_port, serve_in_process
from tests.bots.sdk_agent import create_app

pytestmark = pytest.mark.network

SCENARIO = """
name: an SDK agent books
users:
  - {name: Ana, wa_id: "5511987654321"}
steps:
  - say: Book me in on Friday at 10
  - expect:
      reply_contains: Booked
      tool_called: {name: book_appointment, args: {day: friday}}
invariants:
  - action_only_after_confirmation
"""
DEAD = "http://127.0.0.1:9"  # nothing listens: a replay that reached the provider would fail


@asynccontextmanager
async def sdk_agent(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[str, str]]:
    """The bot on loopback, its SDKs aimed at the run's server; yields its URL and the server's."""
    defaults = SimulatorConfig()
    graph = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", graph)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", graph)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
    settings = {
        "WHATSAPP_GRAPH_URL": graph,
        "WHATSAPP_ACCESS_TOKEN": defaults.access_token,
        "WHATSAPP_PHONE_NUMBER_ID": defaults.phone_number_id,
        "WHATSAPP_APP_SECRET": defaults.app_secret,
        "WHATSAPP_VERIFY_TOKEN": defaults.verify_token,
    }
    async with serve_in_process(create_app(settings)) as url:
        yield url, graph


async def play(
    url: str, graph: str, upstream: str, recording: Recording, *, wait: float = 10.0
) -> ScenarioResult:
    options = RunOptions(
        target_url=f"{url}/webhook",
        quiet=0.5,
        expect_timeout=wait,
        channel_options={"graph_url": graph, "serve_graph": True, "anthropic_upstream": upstream},
    )
    return await Runner(options).run_scenario(parse_scenario(SCENARIO), recording=recording)


async def test_an_sdk_agent_is_recorded_then_replayed_offline_and_its_spans_are_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    records: list[LLMRecord] = []
    recording = Recording(mode=RecordMode.RECORD, on_llm_record=records.append)
    script: list[Step] = [
        ToolUse("book_appointment", {"day": "friday", "time": "10:00"}),
        Text("Booked!"),
    ]
    async with serve_fake_anthropic(script, delay=0) as (upstream, fake):
        async with sdk_agent(monkeypatch) as (url, graph):
            live = await play(url, graph, upstream, recording)
        assert len(fake.requests) == 2
    assert live.status == "failed", live.error
    assert [v.rule for v in live.violations] == ["action_only_after_confirmation"]
    assert len(records) == 2
    assert live.conversation is not None
    [booking] = [e for e in live.conversation.events if isinstance(e, ToolCall)]
    assert booking.args == {"day": "friday", "time": "10:00"}

    replaying = Recording(mode=RecordMode.REPLAY, llm_records=records)
    async with sdk_agent(monkeypatch) as (url, graph):
        again = await play(url, graph, DEAD, replaying)
    assert replaying.divergences == []
    assert replaying.unused() == []
    assert [v.rule for v in again.violations] == ["action_only_after_confirmation"]
    assert again.conversation is not None
    exchanges = [e for e in again.conversation.events if isinstance(e, LLMExchange)]
    assert [e.source for e in exchanges] == ["recorded", "recorded"]
    assert [e.text for e in again.conversation.events if isinstance(e, OutboundSend)] == ["Booked!"]


async def test_an_sdk_agent_whose_prompt_changed_diverges_and_says_where(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    records: list[LLMRecord] = []
    script: list[Step] = [
        ToolUse("book_appointment", {"day": "friday", "time": "10:00"}),
        Text("Booked!"),
    ]
    recording = Recording(RecordMode.RECORD, on_llm_record=records.append)
    async with (
        serve_fake_anthropic(script, delay=0) as (upstream, _fake),
        sdk_agent(monkeypatch) as (url, graph),
    ):
        await play(url, graph, upstream, recording)
    monkeypatch.setattr("tests.bots.sdk_agent.SYSTEM", "You book appointments at a barber's.")
    replaying = Recording(mode=RecordMode.REPLAY, llm_records=records)
    async with sdk_agent(monkeypatch) as (url, graph):
        changed = await play(url, graph, DEAD, replaying, wait=1.0)
    assert changed.conversation is not None
    assert [e.text for e in changed.conversation.events if isinstance(e, OutboundSend)] == [
        "Sorry, I can't book right now."
    ]
    assert len(replaying.divergences) == 1
    assert "system prompt differs" in str(replaying.divergences[0])


def _inbound(user: str, text: str) -> InboundMessage:
    return InboundMessage(
        at=datetime.now(UTC), user=user, wamid=f"wamid.{user}", type="text", text=text
    )


async def test_model_calls_of_scenarios_played_at_once_are_recorded_each_under_its_own() -> None:
    config = SimulatorConfig()
    port = free_port()
    async with serve_fake_anthropic(
        [Text("Saturday at 9 is free."), Text("Friday it is.")], delay=0
    ) as (up, _f):
        router = GraphRouter(config, "127.0.0.1", port, anthropic_upstream=up)
        ana: list[LLMRecord] = []
        bruno: list[LLMRecord] = []
        ana_events: list[Event] = [_inbound("5511900000001", "A cut on Friday, please")]
        bruno_events: list[Event] = [_inbound("5511900000002", "Is Saturday morning free?")]
        nothing = Starlette()
        for name, records, events in (("a", ana, ana_events), ("b", bruno, bruno_events)):
            router.attach(
                name,
                nothing,
                router.clock,
                [events[0].user or ""],
                recording=Recording(mode=RecordMode.RECORD, on_llm_record=records.append),
                sink=events.append,
                events=events,
            )
        await router.start()
        try:
            async with anthropic.AsyncAnthropic(base_url=router.url, api_key="sk-ant-test") as sdk:
                for said in ("Is Saturday morning free?", "A cut on Friday, please"):
                    messages: list[anthropic.types.MessageParam] = [
                        {"role": "user", "content": said}
                    ]
                    await sdk.messages.create(
                        model="claude-test-1", max_tokens=64, messages=messages
                    )
            # The same call reported as a span too: it came through the endpoint already.
            chat = {
                "name": "chat",
                "startTimeUnixNano": "1",
                "attributes": [
                    {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                    {"key": "user.id", "value": {"stringValue": "5511900000001"}},
                ],
            }
            export = {"resourceSpans": [{"scopeSpans": [{"spans": [chat]}]}]}
            async with httpx.AsyncClient() as client:
                await client.post(f"{router.url}/v1/traces", json=export)
        finally:
            await router.stop()
    assert [r.response.text for r in bruno] == ["Saturday at 9 is free."]  # Bruno asked first
    assert [r.response.text for r in ana] == ["Friday it is."]
    assert [e.kind for e in ana_events] == ["inbound", "llm"]
    assert [e.kind for e in bruno_events] == ["inbound", "llm"]
    assert router.observed == {"llm"}


def _books_then_confirms(body: dict[str, Any]) -> Step:
    """The model's part: book on the user's first word, then say so."""
    last = body["messages"][-1]["content"]
    if isinstance(last, str):
        return ToolUse("book_appointment", {"day": "friday", "time": "10:00"})
    return Text("Booked!")


async def test_scenarios_played_at_once_each_get_their_own_tool_calls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each user's own words: what tells one scenario's model calls from the other's.
    scenarios = [
        parse_scenario(
            SCENARIO.replace("an SDK agent books", name).replace("Book me in on Friday at 10", said)
        )
        for name, said in (
            ("Ana books", "Friday at 10 for me"),
            ("Bia books", "Can I come Friday?"),
        )
    ]
    async with (
        serve_fake_anthropic(_books_then_confirms, delay=0.05) as (upstream, fake),
        sdk_agent(monkeypatch) as (url, graph),
    ):
        options = RunOptions(
            target_url=f"{url}/webhook",
            quiet=0.5,
            expect_timeout=10.0,
            concurrency=2,
            channel_options={
                "graph_url": graph,
                "serve_graph": True,
                "anthropic_upstream": upstream,
            },
        )
        run = await Runner(options).run(scenarios)
    assert len(fake.requests) == 4
    for result in run.scenarios:
        assert [v.rule for v in result.violations] == ["action_only_after_confirmation"]
        assert result.conversation is not None
        [call] = [e for e in result.conversation.events if isinstance(e, ToolCall)]
        [user] = {e.user for e in result.conversation.events if isinstance(e, InboundMessage)}
        assert call.user == user  # its own user's booking, not the other scenario's
        assert len([e for e in result.conversation.events if isinstance(e, LLMExchange)]) == 2


def _tool_span(name: str, **attributes: str) -> dict[str, Any]:
    pairs = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
        {"key": "gen_ai.tool.name", "value": {"stringValue": name}},
        *({"key": k.replace("_", "."), "value": {"stringValue": v}} for k, v in attributes.items()),
    ]
    return {"name": f"execute_tool {name}", "startTimeUnixNano": "1", "attributes": pairs}


async def test_spans_of_scenarios_played_at_once_go_to_the_scenario_they_name() -> None:
    router = GraphRouter(SimulatorConfig(), "127.0.0.1", free_port())
    sinks: dict[str, list[Event]] = {"a": [], "b": []}
    for name, user in (("a", "5511900000001"), ("b", "5511900000002")):
        router.attach(name, Starlette(), router.clock, [user], sink=sinks[name].append)
    spans = [
        _tool_span("for_bruno", user_id="5511900000002"),
        _tool_span("for_ana", harness_scenario="a"),
        _tool_span("for_nobody"),  # two scenarios run: it can't be told whose it is
    ]
    export = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    await router.start()
    try:
        async with httpx.AsyncClient() as client:
            answer = await client.post(f"{router.url}/v1/traces", json=export)
    finally:
        await router.stop()
    assert answer.status_code == 200
    assert [e.name for e in sinks["a"] if isinstance(e, ToolCall)] == ["for_ana"]
    assert [e.name for e in sinks["b"] if isinstance(e, ToolCall)] == ["for_bruno"]
    assert (router.otlp.accepted, router.otlp.dropped) == (2, 1)
