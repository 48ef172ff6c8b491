"""The booking agent's offline model behind an Anthropic-compatible server: real latency.

The fake server (``tests.bots.fake_anthropic``) answers each request the way
the project's :class:`~agents.booking.scripted.ScriptedModel` would, after a
real delay, so an agent using the official SDK holds a whole booking
conversation with a model that takes real time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.booking.scripted import ScriptedModel
from harness.llm import LLMResponse, TextBlock, ToolUseBlock
from tests.bots.fake_anthropic import Blocks, Failure, Step

__all__ = ["ScriptedBehindAServer"]


class ScriptedBehindAServer:
    """A script for the fake server: the scripted model's answers, after ``busy_first`` 429s."""

    def __init__(self, *, busy_first: int = 0) -> None:
        self.model = ScriptedModel()
        self.busy_first = busy_first
        self.asked = 0

    def __call__(self, body: dict[str, Any]) -> Step:
        """The answer to one request."""
        self.asked += 1
        if self.asked <= self.busy_first:
            return Failure(429, retry_after=0.2, message="slow down")
        answer = _answer_now(self.model, body)
        blocks: list[Mapping[str, Any]] = []
        for block in answer.content:
            if isinstance(block, TextBlock):
                blocks.append({"type": "text", "text": block.text})
            elif isinstance(block, ToolUseBlock):
                blocks.append(
                    {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
                )
        return Blocks(blocks)


def _answer_now(model: ScriptedModel, body: dict[str, Any]) -> LLMResponse:
    # The scripted model never waits inside, so its coroutine finishes on the first step.
    coroutine = model.create(
        model=body["model"],
        messages=body["messages"],
        max_tokens=body["max_tokens"],
        system=body.get("system"),
        tools=body.get("tools"),
    )
    try:
        coroutine.send(None)
    except StopIteration as done:
        answer: LLMResponse = done.value
        return answer
    raise AssertionError("the scripted model waited for something")
