"""The OTLP receiver, fed by the OpenTelemetry SDK's own exporter as an instrumented agent runs."""

from __future__ import annotations

import asyncio
import gzip
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode
from starlette.applications import Starlette

from harness.endpoints import OTLPReceiver, on_clock
from harness.suites.invariants import check
from harness.trace import Conversation, Event, InboundMessage, LLMExchange, ToolCall
from tests.bots.loopback import serve_in_process

pytestmark = pytest.mark.network

USER = "15551230001"


@asynccontextmanager
async def receiver(
    events: list[Event], side_effects: tuple[str, ...] = ()
) -> AsyncIterator[tuple[str, OTLPReceiver]]:
    otlp = OTLPReceiver(events.append, side_effects=side_effects)
    async with serve_in_process(Starlette(routes=otlp.routes())) as url:
        yield url, otlp


def run_instrumented_agent(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    """An agent's usual instrumentation: the SDK's exporter, set up from the environment only.

    It asks its model, then books without asking the user to confirm.
    """
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
    provider = TracerProvider(resource=Resource.create({"service.name": "booking-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    tracer = provider.get_tracer("booking-agent")
    chat: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "claude-test-1",
        "gen_ai.response.model": "claude-test-1-20260101",
        "gen_ai.response.finish_reasons": ["tool_use"],
        "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 14,
        "user.id": USER,
    }
    with tracer.start_as_current_span("chat claude-test-1", attributes=chat):
        pass
    booking = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "book_appointment",
        "gen_ai.tool.call.arguments": json.dumps({"day": "friday", "time": "10:00"}),
        "gen_ai.tool.call.result": json.dumps({"booking": "B-17"}),
        "user.id": USER,
    }
    with tracer.start_as_current_span("execute_tool book_appointment", attributes=booking):
        pass
    failing = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "find_slots"}
    with tracer.start_as_current_span("execute_tool find_slots", attributes=failing) as span:
        span.set_status(Status(StatusCode.ERROR, "calendar unavailable"))
    with tracer.start_as_current_span("format reply"):  # not a GenAI span: ignored
        pass
    provider.shutdown()


async def test_an_instrumented_agents_spans_become_the_traces_model_and_tool_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events: list[Event] = []
    async with receiver(events, side_effects=("book_appointment",)) as (url, otlp):
        # The exporter posts synchronously: the agent runs beside the server's loop.
        await asyncio.to_thread(run_instrumented_agent, monkeypatch, url)
    assert otlp.accepted == 3
    model, booking, failed = events
    assert isinstance(model, LLMExchange)
    assert (model.model, model.stop_reason) == ("claude-test-1-20260101", "tool_use")
    assert (model.input_tokens, model.output_tokens, model.user) == (120, 14, USER)
    assert isinstance(booking, ToolCall)
    assert booking.name == "book_appointment"
    assert booking.args == {"day": "friday", "time": "10:00"}
    assert booking.result == {"booking": "B-17"}
    assert booking.side_effect
    assert booking.user == USER
    assert isinstance(failed, ToolCall)
    assert failed.error == "calendar unavailable"
    assert not failed.side_effect


async def test_a_booking_the_user_never_confirmed_is_caught_from_spans_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events: list[Event] = []
    asked = InboundMessage(
        at=datetime(2026, 1, 1, 9, 0, tzinfo=UTC),
        user=USER,
        wamid="wamid.HBgLMTU1NTEyMzAwMDEVAgASGBQzQUVCMDAwMDAwMDAwMDAwMDAwMQA=",
        type="text",
        text="Book me in on Friday morning",
    )
    async with receiver(events) as (url, _otlp):
        await asyncio.to_thread(run_instrumented_agent, monkeypatch, url)
    conversation = Conversation.from_events([asked, *events], id="otlp", scenario="otlp")
    [violation] = check(conversation, ["action_only_after_confirmation"])
    assert violation.rule == "action_only_after_confirmation"
    assert "book_appointment was called before" in violation.message


async def test_an_otlp_json_export_with_hex_ids_and_gzip_is_read() -> None:
    events: list[Event] = []
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "name": "execute_tool find_slots",
        "startTimeUnixNano": "1767258000000000000",
        "endTimeUnixNano": "1767258000500000000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "find_slots"}},
            {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": '{"day": "friday"}'}},
            {"key": "harness.tool.side_effect", "value": {"boolValue": False}},
        ],
    }
    export = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}
    body = gzip.compress(json.dumps(export).encode())
    headers = {"content-type": "application/json", "content-encoding": "gzip"}
    async with receiver(events) as (url, _otlp), httpx.AsyncClient() as client:
        answer = await client.post(f"{url}/v1/traces", content=body, headers=headers)
    assert answer.status_code == 200
    assert answer.json() == {}
    [call] = events
    assert isinstance(call, ToolCall)
    assert call.args == {"day": "friday"}
    assert call.at == datetime(2026, 1, 1, 9, 0, tzinfo=UTC)


async def test_an_unreadable_export_is_a_400_that_says_why_and_records_nothing() -> None:
    events: list[Event] = []
    async with receiver(events) as (url, _otlp), httpx.AsyncClient() as client:
        garbage = await client.post(
            f"{url}/v1/traces",
            content=b"\xff\x00 not protobuf",
            headers={"content-type": "application/x-protobuf"},
        )
        text = await client.post(
            f"{url}/v1/traces", content=b"hello", headers={"content-type": "text/plain"}
        )
    assert garbage.status_code == 400
    assert "not an OTLP protobuf export" in garbage.json()["message"]
    assert text.status_code == 415
    assert events == []


def test_a_span_keeps_its_age_on_the_traces_clock() -> None:
    started = datetime.now(UTC) - timedelta(seconds=2)
    call = ToolCall(at=started, name="find_slots", args={})
    trace_now = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)  # a replay, at the recorded instant
    moved = on_clock(call, FixedClock(trace_now))
    assert isinstance(moved, ToolCall)
    assert trace_now - timedelta(seconds=3) < moved.at <= trace_now - timedelta(seconds=2)
    assert moved.name == "find_slots"


def test_a_span_never_goes_before_the_traces_last_event() -> None:
    # a virtual clock stands still while the agent works: the span's age would take the
    # tool call back past the message that asked for it
    held = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
    call = ToolCall(at=datetime.now(UTC) - timedelta(seconds=0.3), name="book", args={})
    moved = on_clock(call, FixedClock(held), not_before=held)
    assert moved.at == held


async def test_the_receiver_puts_spans_on_the_traces_clock_after_what_it_holds() -> None:
    held = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
    trace: list[Event] = [InboundMessage(at=held, user=USER, wamid="wamid.1", type="text")]
    otlp = OTLPReceiver(trace.append, clock=FixedClock(held), trace=trace)
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "name": "execute_tool book",
        "startTimeUnixNano": str(time.time_ns() - 200_000_000),
        "endTimeUnixNano": str(time.time_ns()),
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}}],
    }
    export = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}
    transport = httpx.ASGITransport(app=Starlette(routes=otlp.routes()))
    async with httpx.AsyncClient(transport=transport, base_url="http://otlp") as client:
        answer = await client.post("/v1/traces", json=export)
    assert answer.status_code == 200
    assert [type(e).__name__ for e in trace] == ["InboundMessage", "ToolCall"]
    assert trace[1].at == held


class FixedClock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at
