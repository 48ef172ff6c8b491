"""Simulated stretches played through the channel against the bundled agent, offline."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from harness.exceptions import ConfigError, ScenarioError
from harness.llm import LLMResponse, ToolUseBlock
from harness.results import ScenarioResult
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import Scenario, load_scenario, parse_scenario
from harness.suites.simulate import media_message

ROOT = Path(__file__).resolve().parents[3]
BUNDLED = ROOT / "scenarios" / "booking" / "simulated_hesitant_customer.yaml"
TARGET = "agents.booking:agent_factory"


async def run(scenario: Scenario, channel: str = "whatsapp", **settings: str) -> ScenarioResult:
    runner = Runner(RunOptions(target=TARGET, channel=channel, agent_settings=settings))
    return await runner.run_scenario(scenario)


@pytest.mark.parametrize("channel", ["whatsapp", "direct"])
async def test_the_hesitant_customer_books_a_step_free_table(channel: str) -> None:
    result = await run(load_scenario(BUNDLED), channel)
    assert result.status == "passed", [v.headline() for v in result.violations]
    conversation = result.conversation
    assert conversation is not None
    said = [m.text or "" for m in conversation.inbound()]
    assert any("wheelchair" in text for text in said)
    bursts = {m.burst for m in conversation.inbound() if m.burst is not None}
    assert len(conversation.inbound()) > len(bursts) + 1  # fragments: bursts of several
    assert "wait: 1d" in result.simulated
    assert result.simulated[-1] == "tap: Confirm"
    [booking] = conversation.tool_calls("book_appointment")
    assert booking.args["step_free"] is True


@pytest.mark.parametrize(
    ("regression", "rules"),
    [
        ("book_without_confirm", {"action_only_after_confirmation"}),
        ("forget_constraint", {"constraint_honored", "expect"}),
    ],
)
@pytest.mark.parametrize("channel", ["whatsapp", "direct"])
async def test_a_planted_regression_fails_the_simulated_scenario(
    regression: str, rules: set[str], channel: str
) -> None:
    result = await run(load_scenario(BUNDLED), channel, BOOKING_REGRESSIONS=regression)
    assert result.status == "failed"
    assert rules <= {v.rule for v in result.violations}


class ScriptedUser:
    """A user model that answers with the given act inputs, one per call, and keeps the requests."""

    provider = "scripted-test-user"

    def __init__(self, actions: Sequence[dict[str, Any]]) -> None:
        self.actions: Iterator[dict[str, Any]] = iter(actions)
        self.requests: list[dict[str, Any]] = []

    async def create(self, **request: Any) -> LLMResponse:
        self.requests.append(request)
        action = next(self.actions)
        use = ToolUseBlock(id=f"t{len(self.requests)}", name="act", input=action)
        return LLMResponse(id="m", model=request["model"], content=(use,), stop_reason="tool_use")


def with_user(monkeypatch: pytest.MonkeyPatch, user: ScriptedUser) -> None:
    # The user model is chosen by name on the command line; a test hands in its own.
    import harness.suites.user_clients as clients

    monkeypatch.setattr(clients, "inner_user_model", lambda kind, key: user)


SHORT = """\
steps:
  - simulate:
      persona: a guest
      goal: a table on friday at 8pm
      max_turns: 3
      stop_when: {tool_called: book_appointment}
      behaviour: {media: [menu.jpg]}
"""


async def test_a_stretch_that_never_reaches_stop_when_fails_naming_its_step(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "menu.jpg").write_bytes(b"\xff\xd8\xff\xe0 a tiny jpeg")
    user = ScriptedUser([{"action": "say", "messages": ["hello"], "thought": ""}] * 3)
    with_user(monkeypatch, user)
    (tmp_path / "s.yaml").write_text(SHORT, encoding="utf-8")
    result = await run(load_scenario(tmp_path / "s.yaml"))
    assert result.status == "failed"
    [violation] = result.violations
    assert violation.rule == "simulate"
    assert violation.line == 2
    assert "ran out of turns (3) and stop_when never held (tool_called: book_appointment)" in (
        violation.message
    )
    # Each turn the model saw the agent's newest replies on the phone.
    assert "Hello" in user.requests[1]["messages"][-1]["content"][-1]["text"]


async def test_a_file_the_user_sends_arrives_as_media_with_its_bytes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "menu.jpg").write_bytes(b"\xff\xd8\xff\xe0 a tiny jpeg")
    user = ScriptedUser(
        [
            {"action": "send_media", "file": "menu.jpg", "caption": "this one?", "thought": ""},
            {"action": "done", "outcome": "gave_up", "thought": "no luck"},
        ]
    )
    with_user(monkeypatch, user)
    (tmp_path / "s.yaml").write_text(SHORT, encoding="utf-8")
    result = await run(load_scenario(tmp_path / "s.yaml"))
    assert result.conversation is not None
    [sent] = result.conversation.inbound()
    assert sent.type == "image"
    image = sent.body["image"]
    assert isinstance(image, dict)
    assert image["caption"] == "this one?"
    assert "the simulated user gave up after 2 turns" in result.violations[0].message


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (
            {"action": "tap", "choice": "Book now", "thought": ""},
            "steps[0].simulate: turn 1: the simulated user tapped 'Book now', which its phone "
            "does not show (it can tap: nothing)",
        ),
        (
            {"action": "send_media", "file": "other.jpg", "thought": ""},
            "which is not among behaviour.media (menu.jpg)",
        ),
        (
            {"action": "wait", "duration": "2d", "thought": ""},
            "outside the scenario's silences (at most 1, each up to 1 day",
        ),
        ({"action": "say", "thought": ""}, "turn 1: the simulated user's model answered a bad"),
    ],
)
async def test_a_model_that_steps_outside_the_bounds_is_an_error_of_the_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, action: dict[str, Any], expected: str
) -> None:
    (tmp_path / "menu.jpg").write_bytes(b"jpeg")
    with_user(monkeypatch, ScriptedUser([action]))
    (tmp_path / "s.yaml").write_text(SHORT, encoding="utf-8")
    result = await run(load_scenario(tmp_path / "s.yaml"))
    assert result.status == "error"
    assert result.error is not None
    assert expected in result.error
    assert "\n" not in result.error


async def test_a_missing_file_stops_the_run_before_it_starts(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SHORT, encoding="utf-8")
    runner = Runner(RunOptions(target=TARGET))
    with pytest.raises(ScenarioError) as caught:
        runner.check([load_scenario(tmp_path / "s.yaml")])
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 's.yaml'}:2: steps[0].simulate.behaviour.media[0]:")
    assert "no such file" in message


def test_the_anthropic_user_model_needs_the_usual_key() -> None:
    scenario = parse_scenario("steps:\n  - simulate: {persona: p, goal: g}\n")
    runner = Runner(RunOptions(target=TARGET, user_model="anthropic"))
    with pytest.raises(ConfigError, match="needs ANTHROPIC_API_KEY"):
        runner.check([scenario])
    with pytest.raises(ConfigError, match="unknown user model 'gpt'"):
        Runner(RunOptions(target=TARGET, user_model="gpt")).check([scenario])


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("ramp.jpg", {"type": "image", "image": {"caption": "the ramp"}}),
        ("note.ogg", {"type": "audio", "audio": {"voice": True}}),
        ("menu.pdf", {"type": "document", "document": {"caption": "the ramp"}}),
        ("clip.mp4", {"type": "video", "video": {"caption": "the ramp"}}),
    ],
)
def test_a_file_becomes_the_message_its_extension_names(
    name: str, message: Mapping[str, Any]
) -> None:
    assert media_message(Path(name), "the ramp") == message


def test_a_stretch_between_scripted_steps_hands_on_to_the_next_expect() -> None:
    text = SHORT.replace("steps:\n", "steps:\n  - say: hi\n") + "  - expect: {replies: 0}\n"
    scenario = parse_scenario(text)
    assert [step.action for step in scenario.steps] == ["say", "simulate", "expect"]


def test_the_bundled_fixture_keeps_the_simulated_users_stream_apart() -> None:
    fixture = ROOT / "scenarios" / "booking" / "fixtures" / "simulated_hesitant_customer"
    users = (fixture / "users.jsonl").read_text(encoding="utf-8").splitlines()
    agent = (fixture / "llm.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(users) >= 5
    assert all("<brief>" in line for line in users)
    assert not any("<brief>" in line for line in agent)


async def test_a_stretch_after_a_scripted_say_first_sees_the_agents_answer_to_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    user = ScriptedUser([{"action": "done", "outcome": "goal_met", "thought": ""}])
    with_user(monkeypatch, user)
    text = "steps:\n  - say: a table on friday at 8pm\n  - simulate: {persona: p, goal: g}\n"
    result = await run(parse_scenario(text))
    assert result.status == "passed"
    [request] = user.requests
    shown = request["messages"][-1]["content"][-1]["text"]
    assert "Friday" in shown
    assert result.simulated == ("done: goal_met",)
