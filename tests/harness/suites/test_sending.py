"""Steps that hand the channel a message: references resolved as played, errors located.

Played through the fake channel of ``test_runner``, whose agent answers every
message with one reply (``fake.out.N``) and names the user's messages
``fake.in.N``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from harness.exceptions import ConfigError, ScenarioError
from harness.plugins import ChannelPlugin
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import parse_scenario
from harness.suites.sending import step_message
from tests.harness.suites.test_runner import TARGET, FakeChannel, _run


def _sends(channel: FakeChannel) -> list[dict[str, Any]]:
    return [call[2] for call in channel.session.calls if call[0] == "send"]


async def test_references_become_the_ids_of_the_messages_they_name() -> None:
    result, channel, _ = await _run(
        """\
steps:
  - say: hi
    label: ask
  - expect: {replies: 1}
    label: answer
  - say: twice
  - send: {type: reaction, reaction: {emoji: "👍"}}
  - send: {type: reaction, reaction: {message_id: answer, emoji: "❤️"}}
  - send: {type: reaction, reaction: {message_id: reply 2}}
  - say: about that
    reply_to: ask
  - send: {type: location, location: {latitude: 1.5, longitude: 2.5}}
    reply_to: reply 1
"""
    )
    assert result.status == "passed", (result.error, result.violations)
    # hi -> fake.in.1, fake.out.2; twice -> fake.in.3, fake.out.4 and fake.out.5
    assert _sends(channel) == [
        {"type": "reaction", "reaction": {"message_id": "fake.out.5", "emoji": "👍"}},
        {"type": "reaction", "reaction": {"message_id": "fake.out.2", "emoji": "❤️"}},
        {"type": "reaction", "reaction": {"message_id": "fake.out.4"}},
        {"type": "text", "text": {"body": "about that"}, "context": {"id": "fake.in.1"}},
        {
            "type": "location",
            "location": {"latitude": 1.5, "longitude": 2.5},
            "context": {"id": "fake.out.2"},
        },
    ]


async def test_a_reply_the_agent_never_sent_fails_the_step_naming_its_field() -> None:
    result, channel, _ = await _run(
        """\
steps:
  - say: silence
  - send: {type: reaction, reaction: {emoji: "👍"}}
  - say: never played
"""
    )
    assert result.status == "failed"
    [violation] = result.violations
    assert (violation.step, violation.line) == (1, 3)
    assert violation.message == (
        "steps[1].send.reaction.message_id: last_reply: the agent has sent this user no message "
        "yet (the rest of the scenario was not played)"
    )
    assert _sends(channel) == []


async def test_a_label_whose_step_saw_no_reply_names_nothing() -> None:
    result, _, _ = await _run(
        """\
steps:
  - say: silence
  - expect: {replies: 0}
    label: quiet
  - say: that
    reply_to: quiet
"""
    )
    [violation] = result.violations
    assert violation.message.startswith(
        "steps[2].reply_to: the step labelled 'quiet' has no message to name"
    )


def _checking(channel: FakeChannel, check: Any) -> Runner:
    plugin = ChannelPlugin(
        name="fake", description="Checks messages.", factory=channel, check_message=check
    )
    return Runner(RunOptions(channel="fake", target=TARGET), plugins={"fake": plugin})


async def test_the_channel_checks_every_message_before_anything_runs() -> None:
    seen: list[Mapping[str, Any]] = []

    def check(message: Mapping[str, Any]) -> None:
        seen.append(message)
        if message["type"] == "location":
            raise ValueError("invalid message at location.latitude: Field required")

    text = """\
steps:
  - say: hi
  - say: that
    reply_to: last_reply
  - send: {type: location, location: {longitude: 2.5}}
"""
    channel = FakeChannel()
    with pytest.raises(ScenarioError) as caught:
        await _checking(channel, check).run([parse_scenario(text, path="s.yaml")])
    assert str(caught.value) == (
        "s.yaml:5: steps[2].send: invalid message at location.latitude: Field required"
    )
    assert channel.sessions == []
    assert seen[0] == {"type": "text", "text": {"body": "that"}, "context": {"id": "last_reply"}}


async def test_a_message_the_channel_refuses_while_playing_is_a_located_error() -> None:
    class Refusing(FakeChannel):
        def __call__(self, setup: Any) -> Any:
            session = super().__call__(setup)

            async def send(user: str, message: Mapping[str, Any], *, data: Any = None) -> None:
                raise ConfigError("invalid message at image.id: no media '7'")

            session.send = send  # type: ignore[method-assign]  # a session that refuses
            return session

    channel = Refusing()
    runner = Runner(RunOptions(channel="fake", target=TARGET), plugins={"fake": channel.plugin})
    scenario = parse_scenario("steps:\n  - say: hi\n  - send: image\n", path="s.yaml")
    [result] = (await runner.run([scenario])).scenarios
    assert result.status == "error"
    assert result.error == "s.yaml:3: steps[1].send: invalid message at image.id: no media '7'"


def test_only_sends_and_quoting_says_hand_the_channel_a_message() -> None:
    scenario = parse_scenario("steps:\n  - say: hi\n  - say: [a, b]\n  - tap: Yes\n")
    assert [step_message(step) for step in scenario.steps] == [None, None, None]
