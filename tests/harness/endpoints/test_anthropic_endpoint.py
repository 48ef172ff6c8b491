"""The model endpoint, driven by the official ``anthropic`` SDK pointed at it by its base URL."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anthropic
import httpx
import pytest
from starlette.applications import Starlette

from harness.endpoints import ANTHROPIC_UPSTREAM, OPENAI_UPSTREAM, ModelEndpoint
from harness.exceptions import Divergence
from harness.llm import LLMResponse
from harness.llm_recorder import RecordingLLMClient
from harness.providers import NOT_RECORDED
from harness.recording import Recording
from harness.records import LLMRecord
from harness.tape import RecordMode
from harness.trace import Event, LLMExchange
from tests.bots.fake_anthropic import (
    Failure,
    FakeAnthropic,
    Step,
    Text,
    ToolUse,
    serve_fake_anthropic,
)
from tests.bots.loopback import serve_in_process

pytestmark = pytest.mark.network

MODEL = "claude-test-1"
TOOLS = [
    {
        "name": "find_slots",
        "description": "Free slots on a day.",
        "input_schema": {"type": "object", "properties": {"day": {"type": "string"}}},
    }
]
ASK = [{"role": "user", "content": "Any slot on Friday?"}]
SECRET = "sk-ant-secret-0123456789"


@asynccontextmanager
async def endpoint(
    recording: Recording, upstream: str = "http://127.0.0.1:9", events: list[Event] | None = None
) -> AsyncIterator[str]:
    """The endpoint served on loopback, in front of ``upstream``; yields its base URL."""
    model = ModelEndpoint(
        recording, sink=None if events is None else events.append, anthropic_upstream=upstream
    )
    try:
        async with serve_in_process(Starlette(routes=model.routes())) as url:
            yield url
    finally:
        await model.aclose()


@asynccontextmanager
async def recorded(
    script: Sequence[Step],
) -> AsyncIterator[tuple[str, FakeAnthropic, list[LLMRecord]]]:
    """An endpoint recording a fake provider's answers; yields its URL, the fake, the records."""
    records: list[LLMRecord] = []
    recording = Recording(mode=RecordMode.RECORD, on_llm_record=records.append)
    async with (
        serve_fake_anthropic(script, delay=0) as (upstream, fake),
        endpoint(recording, upstream) as url,
    ):
        yield url, fake, records


# The SDK's request and answer types are unions of many shapes: the tests read them as data.
Factory = Callable[[str], Any]


@pytest.fixture
async def sdk(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Factory]:
    """The SDK as an agent builds it, configured by its environment only; closed afterwards."""
    made: list[anthropic.AsyncAnthropic] = []

    def build(url: str) -> anthropic.AsyncAnthropic:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
        made.append(anthropic.AsyncAnthropic())
        return made[-1]

    yield build
    for client in made:
        await client.close()


async def test_a_recorded_tool_call_replays_offline_with_the_same_answer(
    sdk: Factory,
) -> None:
    async with recorded([ToolUse("find_slots", {"day": "friday"}, id="toolu_1")]) as (
        url,
        fake,
        records,
    ):
        live = await sdk(url).messages.create(
            model=MODEL, max_tokens=256, messages=ASK, tools=TOOLS
        )
    assert live.stop_reason == "tool_use"
    assert live.content[0].type == "tool_use"
    assert live.content[0].input == {"day": "friday"}
    # The key went on to the provider, and into nothing written.
    forwarded = fake.requests[0].headers
    assert "[redacted]" in (forwarded.get("x-api-key"), forwarded.get("authorization"))
    assert len(records) == 1
    assert SECRET not in records[0].model_dump_json()

    replaying = Recording(mode=RecordMode.REPLAY, llm_records=records)
    async with endpoint(replaying) as url:  # no provider behind it at all
        again = await sdk(url).messages.create(
            model=MODEL, max_tokens=256, messages=ASK, tools=TOOLS
        )
    assert again.model_dump() == live.model_dump()
    assert replaying.unused() == []


async def test_a_request_keys_as_the_in_process_recorder_keys_it(
    sdk: Factory,
) -> None:
    async with recorded([Text("Friday at 10 is free.")]) as (url, _fake, records):
        await sdk(url).messages.create(
            model=MODEL,
            max_tokens=256,
            messages=ASK,
            tools=TOOLS,
            stop_sequences=["END"],
            system="You book slots.",
        )
    in_process = RecordingLLMClient(None, RecordMode.REPLAY, records=records)
    answer = await in_process.create(
        model=MODEL,
        max_tokens=256,
        messages=ASK,
        tools=TOOLS,
        stop_sequences=["END"],
        system="You book slots.",
    )
    assert isinstance(answer, LLMResponse)
    assert answer.text == "Friday at 10 is free."


async def test_a_streamed_chat_records_and_replays_as_a_stream(
    sdk: Factory,
) -> None:
    reply = "Friday at 10, 11 or 15 are free; which one suits you best?"
    async with (
        recorded([Text(reply)]) as (url, fake, records),
        sdk(url).messages.stream(model=MODEL, max_tokens=256, messages=ASK) as stream,
    ):
        pieces = [text async for text in stream.text_stream]
        live = await stream.get_final_message()
    assert "stream" not in fake.requests[0].body  # the provider is asked whole
    assert len(pieces) > 1
    assert "".join(pieces) == reply == live.content[0].text

    events: list[Event] = []
    replaying = Recording(mode=RecordMode.REPLAY, llm_records=records)
    async with endpoint(replaying, events=events) as url:
        async with sdk(url).messages.stream(model=MODEL, max_tokens=256, messages=ASK) as stream:
            again = await stream.get_final_message()
        # Streamed or not, it is one request: the unstreamed form finds no second answer.
        with pytest.raises(anthropic.BadRequestError):
            await sdk(url).messages.create(model=MODEL, max_tokens=256, messages=ASK)
    assert again.content[0].text == reply
    assert again.stop_reason == "end_turn"
    # The refusal is in the trace too, as a call no provider answered.
    assert [(type(e), e.source, e.error) for e in events if isinstance(e, LLMExchange)] == [
        (LLMExchange, "recorded", None),
        (LLMExchange, "live", NOT_RECORDED),
    ]
    assert len(events) == 2


async def test_a_streamed_tool_call_replays_with_its_input(sdk: Factory) -> None:
    async with recorded([ToolUse("find_slots", {"day": "friday", "after": "10:00"})]) as (
        url,
        _fake,
        records,
    ):
        await sdk(url).messages.create(model=MODEL, max_tokens=256, messages=ASK, tools=TOOLS)
    async with (
        endpoint(Recording(mode=RecordMode.REPLAY, llm_records=records)) as url,
        sdk(url).messages.stream(model=MODEL, max_tokens=256, messages=ASK, tools=TOOLS) as stream,
    ):
        message = await stream.get_final_message()
    [use] = message.content
    assert use.type == "tool_use"
    assert use.name == "find_slots"
    assert use.input == {"day": "friday", "after": "10:00"}


async def test_an_unrecorded_request_is_the_providers_error_and_a_divergence_of_the_run(
    sdk: Factory,
) -> None:
    async with recorded([Text("Friday at 10 is free.")]) as (url, _fake, records):
        await sdk(url).messages.create(model=MODEL, max_tokens=256, messages=ASK)
    replaying = Recording(mode=RecordMode.REPLAY, llm_records=records)
    changed = [{"role": "user", "content": "Any slot on Saturday?"}]
    async with endpoint(replaying) as url:
        client = sdk(url)
        with pytest.raises(anthropic.BadRequestError) as caught:
            await client.messages.create(model=MODEL, max_tokens=256, messages=changed)
    assert caught.value.status_code == 400
    assert "messages[0] differs" in str(caught.value)
    [divergence] = replaying.divergences
    assert isinstance(divergence, Divergence)
    assert "Saturday" in str(divergence)


async def test_the_providers_refusal_reaches_the_agent_unchanged_and_is_not_recorded(
    sdk: Factory,
) -> None:
    async with recorded([Failure(400, message="max_tokens: too large")]) as (url, _f, records):
        with pytest.raises(anthropic.BadRequestError) as caught:
            await sdk(url).messages.create(model=MODEL, max_tokens=256, messages=ASK)
    assert "max_tokens: too large" in str(caught.value)
    assert records == []


async def test_passthrough_answers_live_and_keeps_nothing(sdk: Factory) -> None:
    records: list[LLMRecord] = []
    recording = Recording(on_llm_record=records.append)  # passthrough is the default
    async with (
        serve_fake_anthropic([Text("hello")], delay=0) as (upstream, fake),
        endpoint(recording, upstream) as url,
    ):
        answer = await sdk(url).messages.create(model=MODEL, max_tokens=64, messages=ASK)
    assert answer.content[0].text == "hello"
    assert len(fake.requests) == 1
    assert records == []


async def test_a_body_that_is_no_request_gets_the_providers_error_shape() -> None:
    import httpx

    recording = Recording(mode=RecordMode.REPLAY)
    async with endpoint(recording) as url, httpx.AsyncClient() as client:
        answer = await client.post(f"{url}/v1/messages", json={"model": MODEL, "messages": []})
    assert answer.status_code == 400
    assert answer.json() == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "max_tokens: Field required (an integer)",
        },
    }
    assert json.loads(answer.content)["type"] == "error"


def _providers_answer(request: httpx.Request) -> httpx.Response:
    """Anthropic's and OpenAI's own APIs, as far as one short answer goes."""
    if request.url.host == "api.anthropic.com":
        return httpx.Response(
            200,
            json={
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [{"type": "text", "text": "Friday at 10."}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 5, "output_tokens": 3},
            },
        )
    return httpx.Response(
        200,
        json={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-test-1",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "Friday at 10."},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
        },
    )


@pytest.mark.parametrize(
    ("anthropic_upstream", "openai_upstream", "expected"),
    [
        (ANTHROPIC_UPSTREAM, OPENAI_UPSTREAM, ["anthropic", "openai"]),
        ("http://llm.test", "http://llm.test/v1", [None, None]),  # who answers there is unknown
    ],
)
async def test_a_recorded_call_names_the_provider_the_endpoint_forwarded_it_to(
    anthropic_upstream: str, openai_upstream: str, expected: list[str | None]
) -> None:
    records: list[LLMRecord] = []
    events: list[Event] = []
    recording = Recording(mode=RecordMode.RECORD, on_llm_record=records.append)
    upstream = httpx.AsyncClient(transport=httpx.MockTransport(_providers_answer))
    model = ModelEndpoint(
        recording,
        sink=events.append,
        http=upstream,
        anthropic_upstream=anthropic_upstream,
        openai_upstream=openai_upstream,
    )
    app = Starlette(routes=model.routes())
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://harness"
    ) as agent:
        for path, name in [("/v1/messages", MODEL), ("/v1/chat/completions", "gpt-test-1")]:
            body = {"model": name, "max_tokens": 64, "messages": ASK}
            answer = await agent.post(path, json=body, headers={"x-api-key": SECRET})
            assert answer.status_code == 200, answer.text
    await upstream.aclose()
    assert [record.provider for record in records] == expected
    assert [e.provider for e in events if isinstance(e, LLMExchange)] == expected
