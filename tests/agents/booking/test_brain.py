"""The tool loop: bounded, errors reported to the model, replay divergences surfaced."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from agents.booking import FALLBACK_TEXT, Brain, ToolDecision
from harness.clock import VirtualClock
from harness.exceptions import Divergence
from harness.llm import LLMResponse, TextBlock, ToolUseBlock
from harness.tape import RecordMode
from harness.tool_recorder import ToolRecorder


class _Model:
    """Answers with the given responses in turn, remembering what it was asked."""

    def __init__(self, *responses: LLMResponse) -> None:
        self.responses = list(responses)
        self.requests: list[list[dict[str, Any]]] = []

    async def create(self, *, messages: Sequence[Mapping[str, Any]], **kw: Any) -> LLMResponse:
        self.requests.append([dict(m) for m in messages])
        return self.responses.pop(0) if len(self.responses) > 1 else self.responses[0]


def _use(name: str, **args: Any) -> LLMResponse:
    block = ToolUseBlock(id=f"toolu_{name}", name=name, input=args)
    return LLMResponse(id="m", model="x", content=(block,), stop_reason="tool_use")


def _text(text: str) -> LLMResponse:
    return LLMResponse(id="m", model="x", content=(TextBlock(text=text),), stop_reason="end_turn")


def _brain(model: _Model, recorder: ToolRecorder | None = None, rounds: int = 4) -> Brain:
    if recorder is None:
        recorder = ToolRecorder(RecordMode.PASSTHROUGH)
        recorder.register("echo", lambda value: {"value": value}, side_effect=False)
        recorder.register("fail", _fail, side_effect=True)
    return Brain(model, recorder, VirtualClock(), model="x", max_rounds=rounds)


def _fail() -> None:
    raise ValueError("no table free")


USER = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]


async def test_tool_results_go_back_and_the_final_text_ends_the_loop() -> None:
    model = _Model(_use("echo", value=3), _text("done"))
    result = await _brain(model).run(system="s", messages=USER, user="u1")
    assert result.text == "done"
    assert result.rounds == 2
    assert not result.exhausted
    tool_result = model.requests[1][-1]["content"][0]
    assert tool_result["type"] == "tool_result"
    assert tool_result["tool_use_id"] == "toolu_echo"
    assert json.loads(tool_result["content"]) == {"value": 3}
    [call] = result.tool_calls
    assert (call.name, call.args, call.result, call.user) == (
        "echo",
        {"value": 3},
        {"value": 3},
        "u1",
    )
    assert [m["role"] for m in result.messages] == ["assistant", "user", "assistant"]


async def test_a_failing_or_unknown_tool_is_reported_to_the_model() -> None:
    model = _Model(_use("fail"), _use("nope"), _text("sorry"))
    result = await _brain(model).run(system="s", messages=USER)
    failed = model.requests[1][-1]["content"][0]
    assert failed["is_error"] is True
    assert "no table free" in failed["content"]
    unknown = model.requests[2][-1]["content"][0]
    assert unknown["is_error"] is True
    assert "nope" in unknown["content"]
    assert [(c.name, c.error is not None, c.side_effect) for c in result.tool_calls] == [
        ("fail", True, True),
        ("nope", True, False),
    ]


async def test_the_loop_is_bounded() -> None:
    model = _Model(_use("echo", value=1))
    result = await _brain(model, rounds=3).run(system="s", messages=USER)
    assert result.exhausted
    assert result.text == FALLBACK_TEXT
    assert len(model.requests) == 3
    assert result.messages[-1]["role"] == "assistant"


async def test_an_empty_answer_becomes_the_fallback_text() -> None:
    result = await _brain(_Model(_text("   "))).run(system="s", messages=USER)
    assert result.text == FALLBACK_TEXT


async def test_a_policy_can_answer_in_the_tools_place() -> None:
    class Gate:
        async def before(self, name: str, args: dict[str, Any]) -> ToolDecision:
            return ToolDecision(args, result={"status": "needs_confirmation"})

        async def after(
            self, name: str, args: dict[str, Any], result: Any, error: str | None
        ) -> None:
            raise AssertionError("the tool did not run")

    model = _Model(_use("fail"), _text("shall I?"))
    result = await _brain(model).run(system="s", messages=USER, policy=Gate())
    assert result.tool_calls == []  # nothing ran
    assert json.loads(model.requests[1][-1]["content"][0]["content"]) == {
        "status": "needs_confirmation"
    }


async def test_a_replay_divergence_is_not_swallowed() -> None:
    recorder = ToolRecorder(RecordMode.REPLAY)
    recorder.register("echo", lambda value: value, side_effect=False)
    with pytest.raises(Divergence):
        await _brain(_Model(_use("echo", value=1)), recorder).run(system="s", messages=USER)
