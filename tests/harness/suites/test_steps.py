"""Step models from code: dispatch by action key, shorthands, and what each step reports."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import TypeAdapter, ValidationError

from harness.suites.steps import (
    ACTIONS,
    STEP_TAGS,
    STEP_TYPES,
    BaseStep,
    Expectation,
    ExpectStep,
    RedeliverStep,
    SayStep,
    SendStep,
    Step,
    TapStep,
    ToolExpectation,
    UserStep,
    WaitStep,
    step_action,
)

STEP = TypeAdapter(Step)


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        ({"say": "hi"}, SayStep),
        ({"tap": "ok"}, TapStep),
        ({"send": "image"}, SendStep),
        ({"wait": "1h"}, WaitStep),
        ({"advance": "1h"}, WaitStep),
        ({"redeliver": "last"}, RedeliverStep),
        ({"expect": {"replies": 1}}, ExpectStep),
    ],
)
def test_a_step_is_chosen_by_its_action_key(data: dict[str, object], kind: type[BaseStep]) -> None:
    step = STEP.validate_python(data)
    assert type(step) is kind
    assert STEP_TYPES[step_action(data) or ""] is kind
    assert step_action(step) == kind.action


def test_every_action_has_a_model_and_a_tag() -> None:
    assert set(STEP_TYPES) == set(ACTIONS)
    assert {cls.__name__ for cls in STEP_TYPES.values()} == STEP_TAGS
    assert step_action("say") is None
    assert step_action({"gap": "1s"}) is None


def test_a_bad_step_is_one_error_not_one_per_model() -> None:
    with pytest.raises(ValidationError) as caught:
        STEP.validate_python({"sya": "hi"})
    assert [e["msg"] for e in caught.value.errors()] == [
        "Value error, unknown step 'sya' (expected one of: say, tap, send, wait, advance, "
        "redeliver, faults, expect)"
    ]


def test_step_instances_pass_through_the_union() -> None:
    step = TapStep(tap="ok", user="Ana")
    assert STEP.validate_python(step) is step
    assert isinstance(step, UserStep)
    assert not isinstance(WaitStep(wait=timedelta(0)), UserStep)


def test_steps_report_what_they_do() -> None:
    assert SayStep(say=("a", "b")).burst
    assert not SayStep(say=("a",)).burst
    assert SendStep(send="video").message_type == "video"
    assert SendStep(send={"type": "contacts", "contacts": []}).message_type == "contacts"
    assert WaitStep(wait=timedelta(hours=2)).duration == timedelta(hours=2)
    assert WaitStep(advance=timedelta(hours=3)).duration == timedelta(hours=3)
    assert RedeliverStep(redeliver="last").which is None
    assert RedeliverStep(redeliver=2).which == 2


def test_a_wait_takes_exactly_one_duration() -> None:
    with pytest.raises(ValidationError, match="exactly one of wait or advance"):
        WaitStep()
    with pytest.raises(ValidationError, match="exactly one of wait or advance"):
        WaitStep(wait=timedelta(1), advance=timedelta(1))


def test_durations_serialise_as_the_file_writes_them() -> None:
    step = ExpectStep(expect=Expectation(no_reply_within=timedelta(seconds=90)))
    dumped = step.model_dump(mode="json", by_alias=True)
    assert dumped["expect"]["no_reply_within"] == "1m30s"
    assert SayStep(say=("a",)).model_dump(mode="json")["gap"] == "1s"


def test_to_data_is_the_shortest_shape_the_loader_reads() -> None:
    assert SayStep(say=("a",), user="Ana").to_data() == {"say": "a", "as": "Ana"}
    assert WaitStep(advance=timedelta(minutes=5)).to_data() == {"advance": "5m"}
    assert RedeliverStep(redeliver=3).to_data() == {"redeliver": 3}
    expect = Expectation(
        reply_contains=("a", "b"),
        tool_called=(ToolExpectation(name="t"),),
        tool_not_called=(ToolExpectation(name="u", args={"x": 1}), ToolExpectation(name="v")),
    )
    assert expect.to_data() == {
        "reply_contains": ["a", "b"],
        "tool_called": "t",
        "tool_not_called": [{"name": "u", "args": {"x": 1}}, "v"],
    }
    with pytest.raises(NotImplementedError):
        BaseStep().to_data()
