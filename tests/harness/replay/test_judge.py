"""The judge: the request it sends, strict parsing, weights, the gate, record and replay.

The model is a fake answering the Messages API JSON in ``tests/data/judge``,
or the real ``AnthropicClient`` talking to an in-process ``MockTransport``;
nothing touches the network and no API key is real.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from harness.canonical import canonical_key
from harness.exceptions import (
    ConfigError,
    Divergence,
    FixtureFormatError,
    FixtureNotFound,
    LLMError,
    SchemaVersionError,
)
from harness.fixture import VERDICTS_FILE
from harness.llm import AnthropicClient, LLMResponse, SystemPrompt, Usage, sdk_http_module
from harness.llm_recorder import VOLATILE_PARAMS, RecordingLLMClient
from harness.records import LLMRecord
from harness.replay.judge import (
    DEFAULT_RUBRIC,
    EXIT_BELOW_THRESHOLD,
    EXIT_NO_VERDICT,
    Criterion,
    CriterionScore,
    GateOutcome,
    Judge,
    Verdict,
    check_rubric,
    check_threshold,
    gate_outcome,
    load_verdicts,
    parse_rubric,
    parse_verdict,
    render_transcript,
    save_verdicts,
)
from harness.trace import Conversation, InboundMessage

DATA = Path(__file__).resolve().parents[3] / "tests" / "data" / "judge"
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


def test_the_transcript_leaves_out_channel_mechanics() -> None:
    lines = render_transcript(conversation())

    assert len(lines) == 12
    assert lines[0] == "[turn 1] user Ana: Hi! Can I get a table for 4 this Friday?"
    assert sum(line.startswith("[turn 3] user Ana: yes please") for line in lines) == 1
    assert lines[-1] == (
        "[turn 3] status failed 131047 (Re-engagement message) "
        "(the agent's message 'See you tonight at 19:30!')"
    )


def test_an_empty_conversation_is_said_to_be_empty() -> None:
    request = Judge(FakeModel()).request(Conversation())

    assert "(the conversation is empty)" in request.messages[0]["content"]


# --- parsing ---------------------------------------------------------------------------------


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


# --- rubrics and weights -----------------------------------------------------------------


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
    data = yaml.safe_load(
        """
        goal_completion: {question: "Was the table booked?", weight: 2}
        tone: "Was the agent polite?"
        """
    )

    assert parse_rubric(data) == (
        Criterion("goal_completion", "Was the table booked?", 2.0),
        Criterion("tone", "Was the agent polite?", 1.0),
    )


def test_a_rubric_loads_from_a_list() -> None:
    data = yaml.safe_load(
        """
        - {name: booked, question: "Was the table booked?", weight: 0.5}
        - {name: tone, question: "Polite?"}
        """
    )

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


# --- the gate ------------------------------------------------------------------------------


def test_a_verdict_at_the_threshold_passes_despite_rounding() -> None:
    at = verdict(0.7, 0.7, 0.7)
    assert at.overall < 0.7  # the float mean lands a hair below
    assert at.gate(0.7)
    assert not at.gate(0.7001)


@pytest.mark.parametrize(
    ("scores", "threshold", "passes"),
    [
        ((0.0, 0.0), 0.0, True),
        ((1.0, 1.0), 1.0, True),
        ((1.0, 0.99), 1.0, False),
        ((0.5, 0.5), 0.5, True),
        ((0.5, 0.49), 0.5, False),
    ],
)
def test_gate_edges(scores: tuple[float, ...], threshold: float, passes: bool) -> None:
    assert verdict(*scores).gate(threshold) is passes


@pytest.mark.parametrize("threshold", [-0.01, 1.01, math.nan, math.inf])
def test_a_threshold_outside_zero_to_one_is_refused(threshold: float) -> None:
    with pytest.raises(ConfigError, match="between 0 and 1"):
        check_threshold(threshold)
    with pytest.raises(ConfigError):
        verdict(0.5).gate(threshold)
    with pytest.raises(ConfigError):
        gate_outcome([verdict(0.5)], threshold)


def test_the_gate_passes_when_every_verdict_reaches_the_threshold() -> None:
    outcome = gate_outcome([verdict(0.8), verdict(0.7, 0.7, 0.7)], 0.7)

    assert outcome == GateOutcome(status="pass", threshold=0.7, judged=2)
    assert (outcome.exit_code("gate"), outcome.exit_code("advisory")) == (0, 0)
    assert outcome.message == "judge gate passed: 2 verdict(s) at or above 0.7"


def test_a_verdict_below_the_threshold_fails_the_gate_with_exit_4() -> None:
    outcome = gate_outcome([verdict(0.9), verdict(0.4)], 0.75, scenarios=["happy", "rude"])

    assert outcome.status == "below"
    assert [(f.index, f.scenario, f.overall) for f in outcome.failing] == [(1, "rude", 0.4)]
    assert outcome.exit_code() == EXIT_BELOW_THRESHOLD == 4
    assert outcome.exit_code("advisory") == 0
    assert outcome.message == "judge gate failed: 1 of 2 below 0.75: rude (0.400)"


def test_a_missing_verdict_refuses_the_gate_with_exit_2_even_beside_a_low_one() -> None:
    outcome = gate_outcome([verdict(0.2), None, verdict(0.9)], 0.5)

    assert outcome.status == "missing"
    assert [(f.scenario, f.overall) for f in outcome.failing] == [("s", 0.2), ("#2", None)]
    assert outcome.judged == 2
    assert outcome.exit_code() == EXIT_NO_VERDICT == 2
    assert outcome.exit_code("advisory") == 0
    assert outcome.message == "judge gate refused: no verdict for #2; below 0.5: s (0.200)"


def test_no_verdicts_at_all_refuse_the_gate() -> None:
    outcome = gate_outcome([], 0.5)

    assert (outcome.status, outcome.exit_code()) == ("missing", 2)
    assert outcome.message == "judge gate refused: no verdicts to gate on"


def test_gate_arguments_are_checked() -> None:
    with pytest.raises(ConfigError, match="2 scenario names for 1 verdicts"):
        gate_outcome([None], 0.5, scenarios=["a", "b"])
    with pytest.raises(ConfigError, match="invalid judge mode 'strict'"):
        gate_outcome([None], 0.5).exit_code("strict")  # type: ignore[arg-type]  # on purpose


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


# --- verdicts.json -----------------------------------------------------------------------


@pytest.fixture
async def recording() -> tuple[Verdict, list[LLMRecord]]:
    """A verdict recorded live, and the exchange behind it."""
    recorder = RecordingLLMClient(FakeModel(response_of(api_message())), "record")
    judge = Judge(recorder)
    result = await judge.evaluate(conversation(), goal=GOAL)
    return result, judge.records


def test_verdicts_round_trip_through_their_file(
    tmp_path: Path, recording: tuple[Verdict, list[LLMRecord]]
) -> None:
    result, records = recording

    written = save_verdicts(tmp_path, [result], records=records)
    loaded = load_verdicts(tmp_path)

    assert written == tmp_path / VERDICTS_FILE
    assert [p.name for p in tmp_path.iterdir()] == [VERDICTS_FILE]  # no temp file left behind
    assert json.loads(written.read_text("utf-8"))["schema_version"] == 1
    assert loaded.verdicts == (result,)
    assert list(loaded.records) == records


async def test_a_saved_verdict_replays_offline(
    tmp_path: Path, recording: tuple[Verdict, list[LLMRecord]]
) -> None:
    result, records = recording
    loaded = load_verdicts(save_verdicts(tmp_path / "verdicts.json", [result], records=records))

    replayer = RecordingLLMClient(None, "replay", records=loaded.records)

    assert await Judge(replayer).evaluate(conversation(), goal=GOAL) == result.model_copy(
        update={"recorded": True}
    )


async def test_secrets_are_scrubbed_from_the_file_and_it_still_replays(tmp_path: Path) -> None:
    secret = "EAAG-very-secret-access-token"
    original = conversation()
    leaky = original.model_copy(
        update={
            "events": (
                *original.events,
                InboundMessage(
                    at=original.events[-1].at,
                    user="447700900123",
                    wamid="wamid.Z",
                    type="text",
                    text=f"my token is {secret}",
                ),
            )
        }
    )
    recorder = RecordingLLMClient(FakeModel(response_of(api_message())), "record")
    judge = Judge(recorder)
    result = await judge.evaluate(leaky)

    path = save_verdicts(tmp_path / "v.json", [result], records=judge.records, secrets=[secret])
    loaded = load_verdicts(path)

    assert secret not in path.read_text("utf-8")
    replayer = RecordingLLMClient(None, "replay", records=loaded.records)
    assert (await Judge(replayer).evaluate(leaky)).recorded


@pytest.mark.parametrize(
    ("content", "error", "message"),
    [
        (None, FixtureNotFound, "not found"),
        ('{"schema_version": 1,\n "verdicts": [', FixtureFormatError, r"v\.json:2: invalid JSON"),
        ("[]", FixtureFormatError, "expected a JSON object"),
        ('{"schema_version": 2}', SchemaVersionError, "schema version 2 is not supported"),
        ('{"verdicts": []}', SchemaVersionError, "schema version None"),
        ('{"schema_version": 1, "verdicts": [{}]}', FixtureFormatError, r"verdicts\.0\.scenario"),
        ('{"schema_version": 1, "extra": 1}', FixtureFormatError, "extra: Extra inputs"),
    ],
)
def test_a_bad_verdicts_file_is_one_clear_error(
    tmp_path: Path, content: str | None, error: type[Exception], message: str
) -> None:
    path = tmp_path / "v.json"
    if content is not None:
        path.write_text(content, "utf-8")

    with pytest.raises(error, match=message):
        load_verdicts(path)


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
