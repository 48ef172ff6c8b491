"""The judge's verdict: read strictly from the one record_verdict call of an answer."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from harness.exceptions import LLMError
from harness.llm import LLMResponse
from harness.replay.judge import DEFAULT_RUBRIC, Judge, Verdict, parse_verdict
from tests.harness.replay.judge.fakes import (
    FakeModel,
    api_message,
    conversation,
    response_of,
    verdict,
    verdict_input,
)


async def test_the_verdict_is_read_from_the_tool_call() -> None:
    result = await Judge(FakeModel(response_of(api_message()))).evaluate(conversation())

    assert [(s.name, s.score, s.passed) for s in result.scores] == [
        ("goal_completion", 0.9, True),
        ("tone", 1.0, True),
        ("relevance", 0.5, False),
    ]
    assert result.scores[2].reason.startswith("Each reply answers Ana's last message")
    assert result.overall == pytest.approx(0.8)
    assert result.summary.startswith("A clean booking")
    assert (result.scenario, result.model, result.recorded) == (
        "booking_happy_path",
        "claude-sonnet-4-5-20250929",
        False,
    )
    assert result.headline() == (
        "judge 0.80 (live, claude-sonnet-4-5-20250929): goal_completion 0.90, tone 1.00, "
        "relevance 0.50 (failed)"
    )


async def test_the_scenario_argument_labels_the_verdict() -> None:
    result = await Judge(FakeModel(response_of(api_message()))).evaluate(
        conversation(), scenario="suite/booking.yaml"
    )

    assert result.scenario == "suite/booking.yaml"


def test_criteria_come_back_in_rubric_order() -> None:
    body = api_message()
    criteria = verdict_input(body)["criteria"]
    verdict_input(body)["criteria"] = dict(reversed(list(criteria.items())))

    result = parse_verdict(response_of(body), DEFAULT_RUBRIC)

    assert [s.name for s in result.scores] == ["goal_completion", "tone", "relevance"]


def _edit(change: Any) -> LLMResponse:
    body = api_message()
    change(body)
    return response_of(body)


def _set(path: str, value: Any) -> Any:
    def change(body: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = verdict_input(body)
        for part in parents:
            target = target[part]
        if value is _DELETE:
            del target[last]
        else:
            target[last] = value

    return change


_DELETE = object()


def _replace_content(*blocks: dict[str, Any], stop_reason: str = "end_turn") -> Any:
    def change(body: dict[str, Any]) -> None:
        body["content"] = list(blocks)
        body["stop_reason"] = stop_reason

    return change


def _twice(body: dict[str, Any]) -> None:
    second = copy.deepcopy(body["content"][0])
    second["id"] = "toolu_01SecondCall00000000000"
    body["content"].append(second)


_TEXT = {"type": "text", "text": "The agent did well overall."}
_OTHER_TOOL = {"type": "tool_use", "id": "toolu_01X", "name": "book_table", "input": {}}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_replace_content(_TEXT), r"no record_verdict call \(stop_reason end_turn, text 'The"),
        (_replace_content(_OTHER_TOOL, stop_reason="tool_use"), "called book_table"),
        (_replace_content(stop_reason="max_tokens"), "cut off at max_tokens"),
        (_twice, "record_verdict 2 times"),
        (_set("criteria.tone.score", 1.5), r"criteria\.tone\.score: Input should be less"),
        (_set("criteria.tone.score", -0.1), r"criteria\.tone\.score"),
        (_set("criteria.tone.score", "0.9"), r"criteria\.tone\.score: Input should be a valid"),
        (_set("criteria.tone.score", True), r"criteria\.tone\.score"),
        (_set("criteria.tone.passed", "yes"), r"criteria\.tone\.passed"),
        (_set("criteria.tone.reason", "  "), r"criteria\.tone\.reason"),
        (_set("criteria.tone.reason", _DELETE), r"criteria\.tone\.reason: Field required"),
        (_set("criteria.tone.mood", "great"), r"criteria\.tone\.mood: Extra inputs"),
        (_set("criteria.relevance", _DELETE), "does not match the rubric .missing: relevance"),
        (_set("summary", _DELETE), "summary: Field required"),
        (_set("summary", ""), "summary"),
        (_set("criteria", []), "criteria: Input should be a valid dictionary"),
        (_set("overall", 0.9), "overall: Extra inputs are not permitted"),
    ],
)
async def test_an_answer_that_is_not_a_verdict_is_an_error(change: Any, message: str) -> None:
    response = _edit(change)

    with pytest.raises(LLMError, match=message):
        await Judge(FakeModel(response)).evaluate(conversation())


def test_an_unknown_criterion_with_a_valid_shape_is_still_refused() -> None:
    body = api_message()
    verdict_input(body)["criteria"]["empathy"] = {"reason": "Kind.", "score": 1, "passed": True}

    with pytest.raises(LLMError, match="unknown: empathy"):
        parse_verdict(response_of(body), DEFAULT_RUBRIC)


def test_a_malformed_cut_off_answer_says_to_raise_max_tokens() -> None:
    body = api_message()
    body["stop_reason"] = "max_tokens"
    verdict_input(body).pop("summary")

    with pytest.raises(LLMError, match="summary: Field required; the answer was cut off"):
        parse_verdict(response_of(body), DEFAULT_RUBRIC)


def test_a_verdict_overall_must_be_the_weighted_mean() -> None:
    good = verdict(1.0, 0.0, weights=[3, 1])
    assert good.overall == 0.75

    with pytest.raises(ValidationError, match="not the scores' weighted mean"):
        Verdict.model_validate({**good.model_dump(), "overall": 0.9})
    with pytest.raises(ValidationError, match="scored twice"):
        Verdict.model_validate(
            {**good.model_dump(), "scores": [good.scores[0], good.scores[0]], "overall": 1.0}
        )
    assert Verdict.model_validate_json(good.model_dump_json()) == good
