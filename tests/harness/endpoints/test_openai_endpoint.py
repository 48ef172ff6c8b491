"""The model endpoint, driven by the official ``openai`` SDK pointed at it by its base URL."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import openai
import pytest
from starlette.applications import Starlette

from harness.endpoints import ModelEndpoint
from harness.recording import Recording
from harness.records import LLMRecord
from harness.tape import RecordMode
from tests.bots.fake_openai import Call, OpenAIStep, Say, serve_fake_openai
from tests.bots.loopback import serve_in_process

pytestmark = pytest.mark.network

MODEL = "gpt-test-1"
SECRET = "sk-openai-secret-0123456789"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "find_slots",
            "description": "Free slots on a day.",
            "parameters": {"type": "object", "properties": {"day": {"type": "string"}}},
        },
    }
]
ASK = [
    {"role": "system", "content": "You book appointments."},
    {"role": "user", "content": "Any slot on Friday?"},
]

# The SDK's request and answer types are unions of many shapes: the tests read them as data.
Factory = Callable[[str], Any]


@pytest.fixture
async def sdk(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Factory]:
    """The SDK as an agent builds it, configured by its environment only; closed afterwards."""
    made: list[openai.AsyncOpenAI] = []

    def build(url: str) -> openai.AsyncOpenAI:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        made.append(openai.AsyncOpenAI())
        return made[-1]

    yield build
    for client in made:
        await client.close()


@asynccontextmanager
async def endpoint(
    recording: Recording, upstream: str = "http://127.0.0.1:9/v1"
) -> AsyncIterator[str]:
    model = ModelEndpoint(recording, openai_upstream=upstream)
    try:
        async with serve_in_process(Starlette(routes=model.routes())) as url:
            yield url
    finally:
        await model.aclose()


@asynccontextmanager
async def recorded(script: list[OpenAIStep]) -> AsyncIterator[tuple[str, list[LLMRecord]]]:
    records: list[LLMRecord] = []
    recording = Recording(mode=RecordMode.RECORD, on_llm_record=records.append)
    async with serve_fake_openai(script) as (upstream, fake), endpoint(recording, upstream) as url:
        yield url, records
    assert all(not body.get("stream") for body, _ in fake.requests)
    assert all(headers["authorization"] == "[redacted]" for _, headers in fake.requests)


async def test_a_recorded_tool_call_replays_offline_with_the_same_answer(sdk: Factory) -> None:
    async with recorded([Call("find_slots", {"day": "friday"}, id="call_1")]) as (url, records):
        live = await sdk(url).chat.completions.create(model=MODEL, messages=ASK, tools=TOOLS)
    [call] = live.choices[0].message.tool_calls or []
    assert live.choices[0].finish_reason == "tool_calls"
    assert call.id == "call_1"
    assert json.loads(call.function.arguments) == {"day": "friday"}
    assert SECRET not in records[0].model_dump_json()
    assert records[0].response.stop_reason == "tool_use"  # one vocabulary in every recording

    replaying = Recording(mode=RecordMode.REPLAY, llm_records=records)
    async with endpoint(replaying) as url:
        again = await sdk(url).chat.completions.create(model=MODEL, messages=ASK, tools=TOOLS)
    assert again.choices[0].message.model_dump() == live.choices[0].message.model_dump()
    assert again.choices[0].finish_reason == "tool_calls"
    assert again.usage == live.usage
    assert replaying.unused() == []


async def test_a_streamed_completion_replays_as_a_stream_with_usage(sdk: Factory) -> None:
    reply = "Friday at 10, 11 or 15 are free; which one suits you best?"
    async with recorded([Say(reply)]) as (url, records):
        stream = await sdk(url).chat.completions.create(model=MODEL, messages=ASK, stream=True)
        live = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert live == reply

    async with endpoint(Recording(mode=RecordMode.REPLAY, llm_records=records)) as url:
        stream = await sdk(url).chat.completions.create(
            model=MODEL, messages=ASK, stream=True, stream_options={"include_usage": True}
        )
        chunks = [chunk async for chunk in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == reply
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 1
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop"
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.prompt_tokens == records[0].input_tokens


async def test_a_streamed_tool_call_replays_with_its_arguments(sdk: Factory) -> None:
    arguments = {"day": "friday", "after": "10:00", "people": 2}
    async with recorded([Call("find_slots", arguments)]) as (url, records):
        await sdk(url).chat.completions.create(model=MODEL, messages=ASK, tools=TOOLS)
    async with endpoint(Recording(mode=RecordMode.REPLAY, llm_records=records)) as url:
        stream = await sdk(url).chat.completions.create(
            model=MODEL, messages=ASK, tools=TOOLS, stream=True
        )
        chunks = [chunk async for chunk in stream]
    calls = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert calls[0].function is not None
    assert calls[0].function.name == "find_slots"
    joined = "".join(tc.function.arguments or "" for tc in calls if tc.function is not None)
    assert json.loads(joined) == arguments
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"


async def test_an_unrecorded_request_is_openais_error_and_a_divergence(sdk: Factory) -> None:
    async with recorded([Say("Friday at 10 is free.")]) as (url, records):
        await sdk(url).chat.completions.create(model=MODEL, messages=ASK)
    replaying = Recording(mode=RecordMode.REPLAY, llm_records=records)
    changed = [ASK[0], {"role": "user", "content": "Any slot on Saturday?"}]
    async with endpoint(replaying) as url:
        with pytest.raises(openai.BadRequestError) as caught:
            await sdk(url).chat.completions.create(model=MODEL, messages=changed)
    assert caught.value.code == "harness_replay_miss"
    assert "messages[1] differs" in caught.value.message
    assert len(replaying.divergences) == 1
