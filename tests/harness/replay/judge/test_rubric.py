"""Rubrics: custom criteria and weights, from code or YAML, and the bad ones refused."""

from __future__ import annotations

import math
from typing import Any

import pytest

from harness.exceptions import ConfigError
from harness.replay.judge import DEFAULT_RUBRIC, Criterion, Judge, check_rubric, parse_rubric
from harness.suites.yamlpos import read_yaml
from tests.harness.replay.judge.fakes import QUESTIONS, FakeModel, answer, conversation, prompt_of


async def test_a_custom_rubric_is_asked_and_weighted() -> None:
    rubric = [
        Criterion("booked", "Was a table booked after the user confirmed?", weight=3),
        Criterion("brief", "Were the replies short?"),
    ]
    model = FakeModel(answer(booked=(1.0, True), brief=(0.0, False)))

    result = await Judge(model, rubric=rubric).evaluate(conversation())

    assert result.overall == 0.75
    assert [(s.name, s.weight) for s in result.scores] == [("booked", 3.0), ("brief", 1.0)]
    prompt = prompt_of(model.calls[0])
    assert "- booked: Was a table booked after the user confirmed?" in prompt
    assert "- brief: Were the replies short?" in prompt
    assert QUESTIONS[1] not in prompt
    schema = model.calls[0]["tools"][0]["input_schema"]["properties"]["criteria"]
    assert schema["required"] == ["booked", "brief"]


async def test_a_zero_weight_criterion_is_reported_but_not_counted() -> None:
    rubric = [Criterion("booked", "Booked?"), Criterion("emoji", "Any emoji?", weight=0)]
    model = FakeModel(answer(booked=(0.8, True), emoji=(0.0, False)))

    result = await Judge(model, rubric=rubric).evaluate(conversation())

    assert result.overall == pytest.approx(0.8)
    assert [s.name for s in result.scores] == ["booked", "emoji"]


def test_a_rubric_loads_from_yaml() -> None:
    data = read_yaml(
        """
        goal_completion: {question: "Was the table booked?", weight: 2}
        tone: "Was the agent polite?"
        """
    ).data

    assert isinstance(data, dict)
    assert parse_rubric(data) == (
        Criterion("goal_completion", "Was the table booked?", 2.0),
        Criterion("tone", "Was the agent polite?", 1.0),
    )


def test_a_rubric_loads_from_a_list() -> None:
    data = read_yaml(
        """
        - {name: booked, question: "Was the table booked?", weight: 0.5}
        - {name: tone, question: "Polite?"}
        """
    ).data

    assert isinstance(data, list)
    assert parse_rubric(data) == (
        Criterion("booked", "Was the table booked?", 0.5),
        Criterion("tone", "Polite?"),
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, "at least one criterion"),
        ([], "at least one criterion"),
        ("tone", "expected a mapping or a list"),
        ({"tone": 3}, r"rubric\.tone\.question: expected text"),
        ({"tone": {"question": "Polite?", "weight": "high"}}, r"rubric\.tone\.weight: expected"),
        ({"tone": {"question": "Polite?", "weight": True}}, r"rubric\.tone\.weight"),
        ({"tone": {"question": "Polite?", "wieght": 2}}, "unknown field 'wieght'"),
        ({"tone": {"weight": 2}}, r"rubric\.tone\.question: expected text, not None"),
        ({"tone": ""}, "criterion 'tone': the question is empty"),
        ({"tone": {"question": "Polite?", "weight": -1}}, "weight must be >= 0"),
        ({"a": {"question": "A?", "weight": 0}}, "weight above 0"),
        ({"has space": "A?"}, "criterion name 'has space'"),
        ({"1st": "A?"}, "criterion name '1st'"),
        ([{"question": "A?"}], r"rubric\[0\]: expected a mapping with name"),
        (["tone"], r"rubric\[0\]"),
        ([{"name": 7, "question": "A?"}], r"rubric\[0\]: a criterion's name must be text"),
        ([{"name": "a", "question": "A?"}, {"name": "a", "question": "B?"}], "criterion .a. twice"),
    ],
)
def test_a_bad_rubric_is_a_config_error(data: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_rubric(data)


@pytest.mark.parametrize("weight", [math.nan, math.inf, -0.5])
def test_a_criterion_weight_must_be_a_finite_number_at_least_zero(weight: float) -> None:
    with pytest.raises(ConfigError, match="weight must be >= 0"):
        Criterion("tone", "Polite?", weight)


def test_a_judge_refuses_a_bad_rubric_or_max_tokens() -> None:
    with pytest.raises(ConfigError, match="at least one"):
        Judge(FakeModel(), rubric=[])
    with pytest.raises(ConfigError, match="twice"):
        Judge(FakeModel(), rubric=[*DEFAULT_RUBRIC, DEFAULT_RUBRIC[0]])
    with pytest.raises(ConfigError, match="max_tokens"):
        Judge(FakeModel(), max_tokens=0)
    assert check_rubric(DEFAULT_RUBRIC) == DEFAULT_RUBRIC
