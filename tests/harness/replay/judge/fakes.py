"""What the judge's tests share: a recorded conversation, answers, a fake model, verdicts.

Answers come in the Messages API's shape, the fake model keeps every request
it gets, and verdicts are built by hand.

The model answers with the JSON in ``tests/data/judge``; nothing touches the network.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.llm import LLMResponse, SystemPrompt, Usage
from harness.replay.judge import DEFAULT_RUBRIC, CriterionScore, Verdict
from harness.trace import Conversation

DATA = Path(__file__).resolve().parents[4] / "tests" / "data" / "judge"
GOAL = "Book a table for 4 people this Friday"
QUESTIONS = [c.question for c in DEFAULT_RUBRIC]
FORCED = {"type": "tool", "name": "record_verdict"}


def conversation() -> Conversation:
    """Ana books a table; 25 hours later a free-form reminder is refused (131047)."""
    return Conversation.model_validate_json((DATA / "conversation.json").read_text("utf-8"))


def api_message() -> dict[str, Any]:
    """A Messages API answer holding one record_verdict call, as the API sends it."""
    body: dict[str, Any] = json.loads((DATA / "verdict_message.json").read_text("utf-8"))
    return body


def verdict_input(body: Mapping[str, Any]) -> dict[str, Any]:
    """The record_verdict call's input inside an API answer, to edit."""
    data: dict[str, Any] = body["content"][0]["input"]
    return data


def response_of(body: Mapping[str, Any]) -> LLMResponse:
    """Our model of an API answer."""
    return LLMResponse(
        id=body["id"],
        model=body["model"],
        content=body["content"],
        stop_reason=body["stop_reason"],
        usage=Usage(
            input_tokens=body["usage"]["input_tokens"],
            output_tokens=body["usage"]["output_tokens"],
        ),
    )


def answer(**criteria: tuple[float, bool]) -> LLMResponse:
    """An answer scoring each named criterion ``(score, passed)``."""
    body = api_message()
    verdict_input(body)["criteria"] = {
        name: {"reason": f"Because of turn 1 ({name}).", "score": score, "passed": passed}
        for name, (score, passed) in criteria.items()
    }
    return response_of(body)


class FakeModel:
    """An LLMClient answering with planned responses, keeping each request's arguments."""

    def __init__(self, *answers: LLMResponse) -> None:
        self.answers = list(answers)
        self.calls: list[dict[str, Any]] = []

    async def create(
        self,
        *,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        max_tokens: int,
        system: SystemPrompt | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **params: Any,
    ) -> LLMResponse:
        self.calls.append(
            {
                "model": model,
                "messages": messages,
                "max_tokens": max_tokens,
                "system": system,
                "tools": tools,
                **params,
            }
        )
        return self.answers.pop(0)


def prompt_of(call: Mapping[str, Any]) -> str:
    (message,) = call["messages"]
    assert message["role"] == "user"
    text: str = message["content"]
    return text


def verdict(*scores: float, weights: Sequence[float] = ()) -> Verdict:
    """A verdict with the given scores (criteria c0, c1 ...), weights 1 unless given."""
    return Verdict.from_scores(
        scenario="s",
        model="m",
        scores=[
            CriterionScore(
                name=f"c{i}",
                score=score,
                passed=score >= 0.5,
                reason="r",
                weight=weights[i] if weights else 1.0,
            )
            for i, score in enumerate(scores)
        ],
        summary="fine",
    )
