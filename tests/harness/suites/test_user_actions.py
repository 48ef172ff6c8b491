"""The simulated user's model answers with one act call, read strictly."""

from __future__ import annotations

from typing import Any

import pytest

from harness.exceptions import LLMError
from harness.llm import LLMResponse, TextBlock, ToolUseBlock
from harness.suites.user_actions import (
    ACT_TOOL,
    Done,
    SayAction,
    SendMedia,
    TapAction,
    WaitAction,
    act_tool,
    parse_action,
)


def answer(*inputs: dict[str, Any], name: str = ACT_TOOL, text: str = "") -> LLMResponse:
    content: list[Any] = [TextBlock(text=text)] if text else []
    content += [ToolUseBlock(id=f"t{i}", name=name, input=data) for i, data in enumerate(inputs)]
    return LLMResponse(id="m", model="claude-x", content=tuple(content), stop_reason="tool_use")


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        ({"action": "say", "messages": ["hi", "there"], "thought": "greet"}, SayAction),
        ({"action": "tap", "choice": "Confirm", "thought": "yes", "covered": 3}, TapAction),
        (
            {"action": "send_media", "file": "ramp.jpg", "caption": "this?", "thought": ""},
            SendMedia,
        ),
        ({"action": "wait", "duration": "1d", "thought": "busy"}, WaitAction),
        ({"action": "done", "outcome": "goal_met", "thought": "booked"}, Done),
    ],
)
def test_each_action_is_read_as_its_model(data: dict[str, Any], kind: type[object]) -> None:
    assert isinstance(parse_action(answer(data)), kind)


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        (
            answer(text="Sure, I'd like a table"),
            "must call the act tool once, it called it 0 times",
        ),
        (
            answer({"action": "say", "messages": ["a"]}, {"action": "done", "outcome": "gave_up"}),
            "2 times",
        ),
        (answer({"action": "say", "messages": ["a"]}, name="reply"), "0 times"),
        (answer({"action": "shout", "messages": ["a"]}), "bad act call: "),
        (answer({"action": "say", "messages": []}), "bad act call: say.messages: "),
        (answer({"action": "tap"}), "bad act call: tap.choice: "),
        (answer({"action": "done", "outcome": "bored"}), "bad act call: done.outcome: "),
        (answer({"action": "say", "messages": ["a"], "mood": "x"}), "bad act call: say.mood: "),
        (answer({"action": "say", "messages": ["1", "2", "3", "4", "5", "6"]}), "say.messages"),
    ],
)
def test_anything_else_is_an_error_saying_what_was_wrong(
    response: LLMResponse, expected: str
) -> None:
    with pytest.raises(LLMError, match="simulated user's model") as caught:
        parse_action(response)
    assert expected in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_tool_offers_exactly_the_actions_the_parser_reads() -> None:
    schema = act_tool()["input_schema"]
    assert act_tool()["name"] == "act"
    assert schema["properties"]["action"]["enum"] == ["say", "tap", "send_media", "wait", "done"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["messages"]["maxItems"] == 5
