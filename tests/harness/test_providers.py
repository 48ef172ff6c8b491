"""Who answered each model call, named plainly: the live API, the offline stand-in, a recording."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from agents.booking.scripted import ScriptedModel
from harness.llm import AnthropicClient, LLMResponse, TextBlock
from harness.llm_recorder import RecordingLLMClient
from harness.providers import (
    ANTHROPIC,
    NOT_RECORDED,
    STAND_IN,
    describe_provider,
    exchange_label,
    model_counts,
    provider_of,
    span_provider_attributes,
)
from harness.records import LLMRecord
from harness.replay.record import llm_span
from harness.tape import RecordMode
from harness.trace import Event, LLMExchange

AT = datetime(2026, 1, 1, tzinfo=UTC)
ASK: dict[str, Any] = {
    "model": "claude-sonnet-4-6",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "A table on friday at 8pm?"}],
}


class OwnClient:
    """A client of the user's own that names no provider."""

    async def create(self, **request: Any) -> LLMResponse:
        return LLMResponse(id="m", model=request["model"], content=(TextBlock(text="ok"),))


def _exchange(provider: str | None, source: str = "live") -> LLMExchange:
    return LLMExchange.model_validate(
        {"at": AT, "key": "k", "model": "claude-sonnet-4-6", "provider": provider, "source": source}
    )


def test_clients_name_who_answers_them() -> None:
    assert AnthropicClient.provider == ANTHROPIC == "anthropic"
    assert provider_of(ScriptedModel()) == STAND_IN == "offline-stand-in"
    assert provider_of(OwnClient()) == "OwnClient"  # named by its class, never guessed
    assert describe_provider(STAND_IN) == "the offline stand-in (no model)"
    assert describe_provider(None) == "an unrecorded provider"


def test_a_recorded_stand_in_answer_says_so_live_and_when_replayed() -> None:
    events: list[Event] = []
    recorder = RecordingLLMClient(ScriptedModel(), RecordMode.RECORD, sink=events.append)
    asyncio.run(recorder.create(**ASK))
    [record] = recorder.records
    assert record.provider == STAND_IN
    replayer = RecordingLLMClient(None, RecordMode.REPLAY, records=[record], sink=events.append)
    asyncio.run(replayer.create(**ASK))
    live, replayed = events
    assert isinstance(live, LLMExchange)
    assert isinstance(replayed, LLMExchange)
    assert (live.provider, live.source) == (STAND_IN, "live")
    assert (replayed.provider, replayed.source) == (STAND_IN, "recorded")
    assert exchange_label(live) == ("the offline stand-in (no model), asked for claude-sonnet-4-6")
    assert exchange_label(replayed).startswith("recorded: the offline stand-in (no model)")
    assert recorder.provider == STAND_IN
    assert replayer.provider is None  # it calls nobody live


def test_model_calls_are_counted_by_who_answered_them() -> None:
    exchanges = [_exchange(STAND_IN), _exchange(STAND_IN), _exchange(ANTHROPIC, "recorded")]
    assert [count.label for count in model_counts(exchanges)] == [
        "2 model calls: the offline stand-in (no model), asked for claude-sonnet-4-6",
        "1 model call replayed from a recording: claude-sonnet-4-6 via the Anthropic API",
    ]


def _record(provider: str | None) -> LLMRecord:
    response = LLMResponse(id="m", model="claude-sonnet-4-6", content=(TextBlock(text="ok"),))
    return LLMRecord(
        key="k" * 64,
        request=ASK,
        response=response,
        model="claude-sonnet-4-6",
        recorded_at=AT,
        provider=provider,
    )


def test_spans_name_the_real_provider_of_each_exchange() -> None:
    live = llm_span(_record(ANTHROPIC), 1, "run")["attributes"]
    assert (live["gen_ai.provider.name"], live["gen_ai.system"]) == ("anthropic", "anthropic")
    assert live["harness.llm.source"] == "live"
    stand_in = llm_span(_record(STAND_IN), 1, "run")["attributes"]
    assert stand_in["gen_ai.provider.name"] == stand_in["gen_ai.system"] == "offline-stand-in"
    assert stand_in["harness.llm.provider"] == "the offline stand-in (no model)"
    replayed = llm_span(_record(STAND_IN), 1, "run", source="recorded")["attributes"]
    assert replayed["harness.llm.source"] == "recorded"
    unknown = span_provider_attributes(None, "recorded")
    assert unknown["gen_ai.provider.name"] == "unknown"  # never "anthropic" by default


def test_calls_a_replay_refused_are_counted_apart_from_those_answered() -> None:
    def call(**fields: Any) -> LLMExchange:
        return LLMExchange(at=AT, key="k", model="claude-sonnet-4-5", **fields)

    exchanges = [
        call(error=NOT_RECORDED),
        call(source="recorded", provider="anthropic"),
        call(error=NOT_RECORDED),
        call(provider="anthropic"),
        call(error="502: the harness could not get an answer from http://127.0.0.1:9"),
    ]
    assert [count.label for count in model_counts(exchanges)] == [
        "2 model calls refused: not in the recording (asked for claude-sonnet-4-5)",
        "1 model call replayed from a recording: claude-sonnet-4-5 via the Anthropic API",
        "1 model call: claude-sonnet-4-5 via the Anthropic API",
    ]
