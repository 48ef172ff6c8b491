"""Labels and message references in scenario files: what loads, what is refused, and where."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from harness.exceptions import ScenarioError, StepError
from harness.suites.messages import MessageLabels, references
from harness.suites.scenario import parse_scenario
from harness.suites.steps import ExpectStep, SayStep, SendStep
from harness.trace import Conversation, InboundMessage, OutboundSend

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ANA = "15551230001"


def error_of(text: str) -> str:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, path="s.yaml")
    return str(caught.value)


def test_labels_and_references_load_and_write_back_the_same() -> None:
    text = """\
steps:
  - say: hi
    label: ask
  - expect: {replies: 1}
    label: offer
  - send: {type: reaction, reaction: {message_id: offer, emoji: "👍"}}
  - say: that one
    reply_to: reply 1
  - send: image
    reply_to: ask
"""
    scenario = parse_scenario(text)
    say, expect, react, quote, photo = scenario.steps
    assert isinstance(say, SayStep)
    assert isinstance(expect, ExpectStep)
    assert isinstance(react, SendStep)
    assert isinstance(quote, SayStep)
    assert isinstance(photo, SendStep)
    assert (say.label, expect.label, quote.reply_to) == ("ask", "offer", "reply 1")
    assert references(react.message()) == [("reaction.message_id", "offer")]
    assert photo.message() == {"type": "image", "image": {}, "context": {"id": "ask"}}
    assert parse_scenario(scenario.to_yaml()).to_data() == scenario.to_data()


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            "steps:\n  - say: hi\n  - send: {type: reaction, reaction: {message_id: 5}}\n",
            "s.yaml:3: steps[1].send.reaction.message_id: expected a message reference such as "
            "last_reply, got an integer",
        ),
        (
            "steps:\n  - send: {type: reaction, reaction: {message_id: the offer}}\n",
            "s.yaml:2: steps[0].send.reaction.message_id: 'the offer' is not a message reference: "
            "expected last_reply, reply N (the agent's N-th message, from 1) or a step's label",
        ),
        (
            "steps:\n  - say: hi\n    label: last_reply\n",
            "s.yaml:3: steps[0].label: 'last_reply' names the agent's replies; "
            "choose another label",
        ),
        (
            "steps:\n  - say: hi\n  - redeliver: last\n    label: again\n",
            "s.yaml:4: steps[1].label: unknown field",
        ),
        (
            "steps:\n  - say: [a, b]\n    reply_to: last_reply\n",
            "s.yaml:3: steps[0].reply_to: a quote goes with one message, not a burst",
        ),
        (
            "steps:\n  - send: {type: reaction, reaction: {emoji: x}}\n    reply_to: last_reply\n",
            "s.yaml:3: steps[0].reply_to: a reaction names its message in reaction.message_id",
        ),
        (
            "steps:\n  - send: {type: text, text: {body: x}, context: {id: last_reply}}\n"
            "    reply_to: last_reply\n",
            "s.yaml:3: steps[0].reply_to: give reply_to or the message's context, not both",
        ),
        (
            "steps:\n  - say: hi\n    reply_to: hi\n    label: hi\n",
            "s.yaml:3: steps[0].reply_to: no earlier step is labelled 'hi'; labels so far: none; "
            "or name the agent's reply: last_reply, reply N",
        ),
    ],
)
def test_a_bad_label_or_reference_names_the_file_line_and_field(text: str, error: str) -> None:
    assert error_of(text) == error


def _conversation() -> Conversation:
    return Conversation.from_events(
        [
            InboundMessage(at=T0, user=ANA, wamid="wamid.IN_1", type="text", text="a"),
            InboundMessage(at=T0, user=ANA, wamid="wamid.IN_2", type="text", text="b"),
            OutboundSend(at=T0, user=ANA, type="text", wamid="wamid.OUT_1"),
            OutboundSend(at=T0, user=ANA, type="text", wamid="wamid.OUT_2"),
            OutboundSend(at=T0, user="15550009999", type="text", wamid="wamid.OTHER"),
        ]
    )


def test_a_user_steps_label_names_its_last_message_and_an_expects_the_last_reply() -> None:
    labels = MessageLabels()
    trace = _conversation()
    labels.user_step("burst", trace, ANA, before=0)
    labels.user_step("second", trace, ANA, before=1)
    labels.user_step("nothing", trace, ANA, before=2)
    labels.expect_step("answer", trace, ANA, since=2)
    labels.expect_step("late", trace, ANA, since=4)

    def field(name: str) -> str:
        return f"steps[9].send.{name}"

    def quote(ref: str) -> object:
        message = {"type": "text", "text": {"body": "x"}, "context": {"id": ref}}
        return labels.refer(message, trace, ANA, field)["context"]["id"]

    assert [quote(r) for r in ("burst", "second", "answer", "reply 1")] == [
        "wamid.IN_2",
        "wamid.IN_2",
        "wamid.OUT_2",
        "wamid.OUT_1",
    ]
    with pytest.raises(
        StepError, match=r"^steps\[9\]\.send\.context\.id: the step labelled 'late'"
    ):
        quote("late")
    with pytest.raises(StepError, match=r"^steps.9..send.context.id: the step labelled 'nothing'"):
        quote("nothing")
