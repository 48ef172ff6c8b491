"""The fake model server answers the official ``anthropic`` SDK as the real API would.

Every test but the script-file ones talks over real loopback HTTP, since
serving the SDK on a socket is the fake's job.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest

from tests.bots.fake_anthropic import (
    Failure,
    Hang,
    Step,
    Text,
    ToolUse,
    load_script,
    serve_fake_anthropic,
)
from tests.bots.loopback import started_process

MODEL = "claude-sonnet-4-6"
HELLO: list[anthropic.types.MessageParam] = [{"role": "user", "content": "hello"}]
TOOLS: list[anthropic.types.ToolParam] = [
    {
        "name": "find_slots",
        "description": "Free table slots on a day.",
        "input_schema": {"type": "object", "properties": {"day": {"type": "string"}}},
    }
]
FAST = 0.05  # the fake's delay where a test is not about the delay


def _sdk(url: str, **options: Any) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=url, api_key="test-key", **options)


@pytest.mark.network
async def test_the_sdk_gets_a_scripted_text() -> None:
    async with (
        serve_fake_anthropic([Text("Hi! Where shall we eat?")], delay=FAST) as (url, _),
        _sdk(url) as client,
    ):
        message = await client.messages.create(model=MODEL, max_tokens=200, messages=HELLO)
    assert message.model == MODEL
    assert message.role == "assistant"
    assert message.stop_reason == "end_turn"
    assert [block.type for block in message.content] == ["text"]
    assert isinstance(message.content[0], anthropic.types.TextBlock)
    assert message.content[0].text == "Hi! Where shall we eat?"
    assert message.usage.input_tokens > 0
    assert message.usage.output_tokens > 0


@pytest.mark.network
async def test_the_sdk_gets_a_scripted_tool_use() -> None:
    script = [ToolUse("find_slots", {"day": "2026-03-01"}, id="toolu_01")]
    async with serve_fake_anthropic(script, delay=FAST) as (url, _), _sdk(url) as client:
        message = await client.messages.create(
            model=MODEL, max_tokens=200, messages=HELLO, tools=TOOLS
        )
    assert message.stop_reason == "tool_use"
    block = message.content[0]
    assert isinstance(block, anthropic.types.ToolUseBlock)
    assert (block.id, block.name, block.input) == ("toolu_01", "find_slots", {"day": "2026-03-01"})


@pytest.mark.network
async def test_the_sdk_streams_a_scripted_text() -> None:
    said = "A table for two at eight, under the name Ana."
    async with (
        serve_fake_anthropic([Text(said)], delay=FAST) as (url, _),
        _sdk(url) as client,
        client.messages.stream(model=MODEL, max_tokens=200, messages=HELLO) as stream,
    ):
        pieces = [piece async for piece in stream.text_stream]
        final = await stream.get_final_message()
    assert len(pieces) > 1
    assert "".join(pieces) == said
    assert final.stop_reason == "end_turn"
    assert isinstance(final.content[0], anthropic.types.TextBlock)
    assert final.content[0].text == said


@pytest.mark.network
async def test_the_sdk_streams_a_scripted_tool_use() -> None:
    arguments = {"day": "2026-03-01", "party": 2}
    script = [ToolUse("find_slots", arguments)]
    async with (
        serve_fake_anthropic(script, delay=FAST) as (url, _),
        _sdk(url) as client,
        client.messages.stream(model=MODEL, max_tokens=200, messages=HELLO, tools=TOOLS) as stream,
    ):
        final = await stream.get_final_message()
    assert final.stop_reason == "tool_use"
    block = final.content[0]
    assert isinstance(block, anthropic.types.ToolUseBlock)
    assert (block.name, block.input) == ("find_slots", arguments)


@pytest.mark.network
async def test_a_stream_is_the_messages_api_event_sequence() -> None:
    async with (
        serve_fake_anthropic([Text("Hello there, Ana")], delay=FAST) as (url, _),
        httpx.AsyncClient() as client,
    ):
        body = {"model": MODEL, "max_tokens": 50, "messages": HELLO, "stream": True}
        response = await client.post(
            f"{url}/v1/messages", json=body, headers={"x-api-key": "test-key"}
        )
    assert response.headers["content-type"].startswith("text/event-stream")
    lines = response.text.splitlines()
    names = [line.removeprefix("event: ") for line in lines if line.startswith("event: ")]
    data = [json.loads(line.removeprefix("data: ")) for line in lines if line.startswith("data: ")]
    assert [event["type"] for event in data] == names
    deltas = names.count("content_block_delta")
    assert names == [
        "message_start",
        "ping",
        "content_block_start",
        *["content_block_delta"] * deltas,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert deltas == 2  # "Hello there, Ana" in pieces of eight characters


@pytest.mark.network
async def test_a_429_with_retry_after_is_retried_by_the_sdk() -> None:
    # One second is longer than the SDK's own first backoff (at most half a second).
    script: list[Step] = [Failure(429, retry_after=1), Text("made it")]
    async with serve_fake_anthropic(script, delay=FAST) as (url, fake), _sdk(url) as client:
        message = await client.messages.create(model=MODEL, max_tokens=50, messages=HELLO)
    assert isinstance(message.content[0], anthropic.types.TextBlock)
    assert message.content[0].text == "made it"
    assert len(fake.requests) == 2
    first, second = fake.requests
    assert first.body == second.body
    assert second.received_at - first.received_at >= 1 + FAST  # the SDK waited as told


@pytest.mark.network
async def test_a_500_reaches_a_client_that_does_not_retry() -> None:
    async with (
        serve_fake_anthropic([Failure(500, message="boom")], delay=FAST) as (url, fake),
        _sdk(url, max_retries=0) as client,
    ):
        with pytest.raises(anthropic.InternalServerError, match="boom"):
            await client.messages.create(model=MODEL, max_tokens=50, messages=HELLO)
    assert len(fake.requests) == 1


@pytest.mark.network
async def test_a_hang_ends_in_the_clients_timeout() -> None:
    async with (
        serve_fake_anthropic([Hang()]) as (url, fake),
        _sdk(url, max_retries=0, timeout=0.3) as client,
    ):
        started = time.monotonic()
        with pytest.raises(anthropic.APITimeoutError):
            await client.messages.create(model=MODEL, max_tokens=50, messages=HELLO)
        waited = time.monotonic() - started
    assert 0.3 <= waited < 1.5
    assert len(fake.requests) == 1


@pytest.mark.network
async def test_the_answer_waits_the_default_delay_or_the_steps_own() -> None:
    async with (
        serve_fake_anthropic([Text("slow"), Text("slower", delay=0.5)]) as (url, _),
        _sdk(url) as client,
    ):
        started = time.monotonic()
        await client.messages.create(model=MODEL, max_tokens=50, messages=HELLO)
        first = time.monotonic() - started
        await client.messages.create(model=MODEL, max_tokens=50, messages=HELLO)
        second = time.monotonic() - started - first
    assert first >= 0.3
    assert second >= 0.5


@pytest.mark.network
async def test_every_request_is_recorded_with_its_key_redacted() -> None:
    async with serve_fake_anthropic([Text("hi")], delay=FAST) as (url, fake), _sdk(url) as client:
        await client.messages.create(model=MODEL, max_tokens=64, system="Be brief.", messages=HELLO)
        async with httpx.AsyncClient() as plain:
            over_http = (await plain.get(f"{url}/_fake/requests")).json()["requests"]
    [recorded] = fake.requests
    assert recorded.body == {
        "model": MODEL,
        "max_tokens": 64,
        "system": "Be brief.",
        "messages": HELLO,
    }
    # The SDK carries the key in x-api-key or (2.x) in Authorization: both are redacted.
    carried = {name: recorded.headers.get(name) for name in ("x-api-key", "authorization")}
    assert set(carried.values()) - {None} == {"[redacted]"}
    assert "anthropic-version" in recorded.headers
    assert "test-key" not in json.dumps(recorded.headers)
    assert over_http[0]["body"] == recorded.body
    assert over_http[0]["headers"] == recorded.headers


@pytest.mark.network
async def test_a_script_may_be_a_function_of_the_request() -> None:
    def script(body: dict[str, Any]) -> Text:
        return Text(f"you wrote {body['messages'][-1]['content']!r}")

    async with serve_fake_anthropic(script, delay=FAST) as (url, _), _sdk(url) as client:
        message = await client.messages.create(model=MODEL, max_tokens=50, messages=HELLO)
    assert isinstance(message.content[0], anthropic.types.TextBlock)
    assert message.content[0].text == "you wrote 'hello'"


@pytest.mark.network
async def test_a_used_up_script_is_a_clear_error_not_a_retry() -> None:
    async with (
        serve_fake_anthropic([Text("only one")], delay=FAST) as (url, fake),
        _sdk(url) as client,
    ):
        await client.messages.create(model=MODEL, max_tokens=50, messages=HELLO)
        with pytest.raises(anthropic.BadRequestError, match="script's 1 steps are used up"):
            await client.messages.create(model=MODEL, max_tokens=50, messages=HELLO)
    assert len(fake.requests) == 2


@pytest.mark.network
async def test_a_request_without_a_key_or_a_required_field_is_refused() -> None:
    async with (
        serve_fake_anthropic([Text("never sent")], delay=FAST) as (url, fake),
        httpx.AsyncClient(base_url=url) as client,
    ):
        body = {"model": MODEL, "max_tokens": 50, "messages": HELLO}
        keyless = await client.post("/v1/messages", json=body)
        no_model = await client.post(
            "/v1/messages",
            json={"max_tokens": 50, "messages": HELLO},
            headers={"x-api-key": "k"},
        )
        answered = await client.post("/v1/messages", json=body, headers={"x-api-key": "k"})
    assert keyless.status_code == 401
    assert keyless.json()["error"]["type"] == "authentication_error"
    assert no_model.status_code == 400
    assert no_model.json()["error"]["message"] == "model: Field required"
    assert answered.json()["content"] == [{"type": "text", "text": "never sent"}]
    assert len(fake.requests) == 3


def test_a_script_file_becomes_steps(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(
        json.dumps(
            [
                {"text": "hi", "delay": 0.1},
                {"tool_use": {"name": "find_slots", "input": {"day": "mon"}}},
                {"status": 429, "retry_after": 1},
                {"hang": True},
            ]
        )
    )
    assert load_script(path) == [
        Text("hi", delay=0.1),
        ToolUse("find_slots", {"day": "mon"}),
        Failure(429, retry_after=1),
        Hang(),
    ]


def test_a_bad_script_step_is_named_by_file_and_index(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps([{"text": "hi"}, {"say": "hello"}]))
    with pytest.raises(ValueError, match=r"script\.json: step 1: a step needs one of text"):
        load_script(path)


@pytest.mark.network
async def test_the_fake_runs_as_a_process_from_a_script_file(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "from another process"}]))
    args = ("--delay", "0.05", "--script", str(script))
    fake = started_process("tests.bots.fake_anthropic", *args, ready_path="/_fake/requests")
    async with fake as (url, _), _sdk(url) as client, httpx.AsyncClient() as plain:
        message = await client.messages.create(model=MODEL, max_tokens=50, messages=HELLO)
        recorded = (await plain.get(f"{url}/_fake/requests")).json()["requests"]
    assert isinstance(message.content[0], anthropic.types.TextBlock)
    assert message.content[0].text == "from another process"
    assert [request["body"]["messages"] for request in recorded] == [HELLO]
