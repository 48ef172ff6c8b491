"""The simulate step in a scenario file: its shape, its defaults, errors naming file and field."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import jsonschema_rs
import pytest

from harness.exceptions import ScenarioError
from harness.suites.scenario import load_scenario, parse_scenario, scenario_json_schema
from harness.suites.simulate_step import DEFAULT_USER_MODEL, SimulateStep
from harness.suites.yamlpos import read_yaml

ROOT = Path(__file__).resolve().parents[3]
BUNDLED = ROOT / "scenarios" / "booking" / "simulated_hesitant_customer.yaml"

FULL = """\
users: [{name: Rosa, wa_id: "15557654321"}]
steps:
  - say: hello
  - simulate:
      persona: Rosa, 68, unsure of chat apps
      goal: a step-free table on friday
      language: es
      max_turns: 5
      stop_when: {tool_called: book_appointment}
      agenda:
        - hola
        - {media: ramp.jpg, caption: "is this the entrance?"}
      behaviour:
        fragments: 0.5
        typos: 0.2
        taps: 0.8
        silences: {chance: 0.3, length: 2h, at_most: 2}
        media: [ramp.jpg]
        change_mind: {chance: 0.1, say: [actually 8pm]}
    as: Rosa
  - expect: {reply_contains: Booked}
"""


def test_a_simulate_step_reads_every_field() -> None:
    scenario = parse_scenario(FULL, path="s.yaml")
    step = scenario.steps[1]
    assert isinstance(step, SimulateStep)
    assert step.user == "Rosa"
    assert step.line == 4
    sim = step.simulate
    assert (sim.persona, sim.goal, sim.language, sim.max_turns) == (
        "Rosa, 68, unsure of chat apps",
        "a step-free table on friday",
        "es",
        5,
    )
    assert sim.stop_when is not None
    assert sim.stop_when.tool_called is not None
    assert [item.say or item.media for item in sim.agenda] == ["hola", "ramp.jpg"]
    assert sim.agenda[1].caption == "is this the entrance?"
    assert sim.behaviour.silences.length == timedelta(hours=2)
    assert sim.behaviour.silences.at_most == 2
    assert sim.behaviour.change_mind.say == ("actually 8pm",)
    assert sim.model == DEFAULT_USER_MODEL
    # The most virtual time the step may take: its silences.
    assert step.time_taken == timedelta(hours=4)


def test_a_chance_alone_stands_for_silences_and_change_of_mind() -> None:
    text = (
        "steps:\n  - simulate: {persona: p, goal: g, "
        "behaviour: {silences: 0.4, change_mind: 0.2}}\n"
    )
    step = parse_scenario(text).steps[0]
    assert isinstance(step, SimulateStep)
    assert step.simulate.behaviour.silences.chance == 0.4
    assert step.simulate.behaviour.silences.length == timedelta(days=1)
    assert step.simulate.behaviour.change_mind.chance == 0.2


def test_the_minimal_yaml_reads_back_as_the_same_scenario() -> None:
    scenario = parse_scenario(FULL, path="s.yaml")
    again = parse_scenario(scenario.to_yaml(), path="s.yaml")
    assert again.steps[1] == scenario.steps[1].model_copy(update={"line": again.steps[1].line})
    bare = parse_scenario("steps:\n  - simulate: {persona: p, goal: g}\n")
    assert bare.to_data()["steps"] == [{"simulate": {"persona": "p", "goal": "g"}}]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("{goal: g}", "s.yaml:2: steps[0].simulate: missing required field 'persona'"),
        (
            "{persona: p, goal: g, behaviour: {typos: 1.5}}",
            "s.yaml:2: steps[0].simulate.behaviour.typos: must be <= 1.0, got 1.5",
        ),
        (
            "{persona: p, goal: g, behaviour: {typo: 0.1}}",
            "s.yaml:2: steps[0].simulate.behaviour.typo: unknown field",
        ),
        (
            "{persona: p, goal: g, max_turns: 0}",
            "s.yaml:2: steps[0].simulate.max_turns: must be >= 1, got 0",
        ),
        (
            "{persona: p, goal: g, agenda: [{media: x.jpg}]}",
            "s.yaml:2: steps[0].simulate.agenda[0].media: 'x.jpg' is not among behaviour.media",
        ),
        (
            "{persona: p, goal: g, stop_when: {reply_contain: x}}",
            "s.yaml:2: steps[0].simulate.stop_when.reply_contain: unknown field",
        ),
        (
            "{persona: p, goal: g, behaviour: {silences: {length: -1h}}}",
            "s.yaml:2: steps[0].simulate.behaviour.silences.length:",
        ),
    ],
)
def test_a_bad_simulate_step_is_one_line_naming_the_file_line_and_field(
    body: str, expected: str
) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(f"steps:\n  - simulate: {body}\n", path="s.yaml")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(expected), message


def test_the_json_schema_knows_the_simulate_step_and_the_judge() -> None:
    validator = jsonschema_rs.validator_for(scenario_json_schema())
    data = read_yaml(BUNDLED.read_text(encoding="utf-8"), path=BUNDLED).data
    assert validator.is_valid(json.loads(json.dumps(data)))
    bad = {"steps": [{"simulate": {"persona": "p", "goal": "g", "behaviour": {"taps": 2}}}]}
    assert not validator.is_valid(bad)


def test_the_bundled_simulated_scenario_loads_with_its_judge_criteria() -> None:
    scenario = load_scenario(BUNDLED)
    assert scenario.judge is not None
    assert [name for name, _, _ in scenario.judge.questions()] == ["remembered_the_wheelchair"]
    assert any(isinstance(step, SimulateStep) for step in scenario.steps)
