"""The judge: the request it sends, record and replay, and forced tool use through the SDK.

The model is a fake answering the Messages API JSON in ``tests/data/judge``,
or the real ``AnthropicClient`` talking to an in-process ``MockTransport``;
nothing touches the network and no API key is real.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.canonical import canonical_key
from harness.exceptions import ConfigError, Divergence
from harness.llm import AnthropicClient, sdk_http_module
from harness.llm_recorder import VOLATILE_PARAMS, RecordingLLMClient
from harness.replay.judge import DEFAULT_RUBRIC, Judge, gate_outcome
from harness.trace import Conversation, InboundMessage
from tests.harness.replay.judge.fakes import (
    FORCED,
    GOAL,
    QUESTIONS,
    FakeModel,
    api_message,
    conversation,
    prompt_of,
    response_of,
)

# --- the request ---------------------------------------------------------------------------


async def test_the_request_forces_the_verdict_tool_and_carries_the_transcript() -> None:
    model = FakeModel(response_of(api_message()))
    judge = Judge(model)

    await judge.evaluate(conversation(), goal=GOAL)

    (call,) = model.calls
    assert call["tool_choice"] == FORCED
    assert [tool["name"] for tool in call["tools"]] == ["record_verdict"]
    assert (call["model"], call["max_tokens"], call["temperature"]) == (
        "claude-sonnet-4-6",
        1024,
        0.0,
    )
    assert "record_verdict" in call["system"]
    prompt = prompt_of(call)
    assert "[turn 1] user Ana: Hi! Can I get a table for 4 this Friday?" in prompt
    assert "[turn 2] user Ana: 19:30 [button slot_1930]" in prompt
    assert (
        "[turn 3] tool book_table(date='2025-06-13', time='19:30', party_size=4, name='Ana') "
        '-> {"booking_id":"R-2041"}'
    ) in prompt
    assert "agent (template booking_reminder)" in prompt
    assert "agent (window closed): See you tonight at 19:30!" in prompt
    assert "status failed 131047 (Re-engagement message)" in prompt
    assert "clock +1d1h (advance 25h)" in prompt
    assert f"The user's goal in this conversation: {GOAL}" in prompt
    for question in QUESTIONS:
        assert question in prompt
    # Channel mechanics are not the user's experience; the scenario's name is only a label.
    for absent in ("redelivered", "mark_read", "status delivered", "delivery d1", "llm "):
        assert absent not in prompt
    assert "booking_happy_path" not in prompt


async def test_messages_reach_the_judge_whole() -> None:
    model = FakeModel(response_of(api_message()))

    await Judge(model).evaluate(conversation())

    prompt = prompt_of(model.calls[0])
    # The confirmation is longer than a report line and spans three lines: none of it is cut.
    assert (
        "[turn 3] agent: Booked! Your table at Trattoria Roma:\n"
        "    Friday 13 June, 19:30, 4 people, under the name Ana.\n"
        "    Booking reference R-2041. Reply CANCEL at any time to cancel, or tell me if you need "
        "a high chair or a quieter table and I will add it to the booking.\n"
    ) in prompt
    assert "No goal was stated" in prompt


async def test_the_tool_schema_asks_for_every_criterion() -> None:
    model = FakeModel(response_of(api_message()))

    await Judge(model).evaluate(conversation())

    schema = model.calls[0]["tools"][0]["input_schema"]
    assert schema["required"] == ["criteria", "summary"]
    assert schema["properties"]["summary"]["type"] == "string"
    criteria = schema["properties"]["criteria"]
    assert criteria["required"] == ["goal_completion", "tone", "relevance"]
    assert criteria["additionalProperties"] is False
    for criterion in DEFAULT_RUBRIC:
        entry = criteria["properties"][criterion.name]
        assert entry["description"] == criterion.question
        assert entry["required"] == ["reason", "score", "passed"]
        props = entry["properties"]
        assert props["score"] == {
            "type": "number",
            "minimum": 0,
            "maximum": 1,
            "description": props["score"]["description"],
        }
        assert props["passed"]["type"] == "boolean"
        assert props["reason"]["type"] == "string"


# --- record and replay -----------------------------------------------------------------------


async def test_a_recorded_verdict_replays_offline_without_a_call() -> None:
    model = FakeModel(response_of(api_message()))
    recorder = RecordingLLMClient(model, "record")
    recorded = await Judge(recorder).evaluate(conversation(), goal=GOAL)
    records = Judge(recorder).records

    replayer = RecordingLLMClient(None, "replay", records=records)  # no inner client at all
    replayed = await Judge(replayer).evaluate(conversation(), goal=GOAL)

    assert len(records) == 1
    assert records[0].request["tool_choice"] == FORCED
    assert replayed == recorded.model_copy(update={"recorded": True})
    assert recorded.recorded is False
    assert len(model.calls) == 1
    assert replayer.all_played


async def test_a_changed_conversation_has_no_recorded_verdict() -> None:
    recorder = RecordingLLMClient(FakeModel(response_of(api_message())), "record")
    await Judge(recorder).evaluate(conversation())
    original = conversation()
    changed = Conversation.from_events(
        [
            *original.events[:1],
            InboundMessage(
                at=original.events[1].at,
                user="447700900123",
                wamid="wamid.X",
                type="text",
                text="hi",
            ),
        ],
        participants=original.participants,
    )

    replayer = RecordingLLMClient(None, "replay", records=recorder.records)
    with pytest.raises(Divergence, match=r"messages\[0\] differs"):
        await Judge(replayer).evaluate(changed)

    assert gate_outcome([None], 0.5, scenarios=["booking"]).exit_code() == 2


async def test_the_same_conversation_gives_the_same_request_key() -> None:
    model = FakeModel(response_of(api_message()), response_of(api_message()))
    recorder = RecordingLLMClient(model, "record")
    judge = Judge(recorder)
    reloaded = Conversation.model_validate_json(conversation().model_dump_json())

    await judge.evaluate(conversation(), goal=GOAL)
    await judge.evaluate(reloaded, goal=GOAL)

    first, second = recorder.records
    assert first.key == second.key
    assert first.request == second.request
    request = judge.request(conversation(), goal=GOAL)
    assert canonical_key(request.body(exclude=VOLATILE_PARAMS)) == first.key
    assert judge.request(conversation(), goal="Something else") != request


async def test_a_replay_with_live_misses_says_which_verdicts_were_recorded() -> None:
    recorder = RecordingLLMClient(FakeModel(response_of(api_message())), "record")
    await Judge(recorder).evaluate(conversation())
    live = FakeModel(response_of(api_message()))
    replayer = RecordingLLMClient(live, "replay", records=recorder.records, on_miss="live")
    judge = Judge(replayer)

    served = await judge.evaluate(conversation())
    fresh = await judge.evaluate(conversation(), goal=GOAL)

    assert (served.recorded, fresh.recorded) == (True, False)
    assert len(live.calls) == 1
    assert len(judge.records) == 2


def test_a_judge_without_a_recorder_has_no_records() -> None:
    with pytest.raises(ConfigError, match="RecordingLLMClient"):
        _ = Judge(FakeModel()).records


# --- through the real SDK ------------------------------------------------------------------


async def test_forced_tool_use_goes_through_the_anthropic_sdk() -> None:
    # The installed SDK warns that the default model is deprecated; name a current one.
    model = "claude-sonnet-4-6"
    http = sdk_http_module()
    sent: list[Any] = []

    def messages_api(request: Any) -> Any:
        sent.append(request)
        body = {**api_message(), "model": model}
        return http.Response(200, json=body, headers={"request-id": "req_01JudgeTest"})

    client = AnthropicClient(
        "sk-ant-test-0000", http_client=http.AsyncClient(transport=http.MockTransport(messages_api))
    )
    try:
        recorder = RecordingLLMClient(client, "record")
        result = await Judge(recorder, model=model).evaluate(conversation(), goal=GOAL)
    finally:
        await client.aclose()

    (request,) = sent
    assert request.url.path == "/v1/messages"
    body = json.loads(request.content)
    assert body["tool_choice"] == FORCED
    assert [tool["name"] for tool in body["tools"]] == ["record_verdict"]
    assert body["tools"][0]["input_schema"]["properties"]["criteria"]["required"] == [
        "goal_completion",
        "tone",
        "relevance",
    ]
    assert body["model"] == model
    assert body["temperature"] == 0.0
    assert "user Ana: Hi! Can I get a table for 4 this Friday?" in body["messages"][0]["content"]
    assert result.overall == pytest.approx(0.8)
    assert result.model == model
    # And the exchange it recorded replays with no client, no key and no network.
    replayer = RecordingLLMClient(None, "replay", records=recorder.records)
    replayed = await Judge(replayer, model=model).evaluate(conversation(), goal=GOAL)
    assert replayed == result.model_copy(update={"recorded": True})
