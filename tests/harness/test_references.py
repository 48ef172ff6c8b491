"""References to messages: last_reply, reply N and labels, read, resolved and filled in."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest

from harness.exceptions import StepError
from harness.references import LAST_REPLY, MessageRef, agent_replies, message_ids, refer
from harness.trace import ErrorInfo, Event, InboundMessage, OutboundSend

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ANA = "15550001111"
BEN = "15550002222"


def _send(user: str, wamid: str | None, kind: str = "text", **fields: Any) -> OutboundSend:
    return OutboundSend(at=T0, user=user, type=kind, wamid=wamid, **fields)


CHAT: list[Event] = [
    InboundMessage(at=T0, user=ANA, wamid="wamid.IN_1", type="text", text="hi"),
    _send(ANA, None, "mark_read"),
    _send(ANA, "wamid.OUT_1"),
    _send(BEN, "wamid.BEN_1"),
    _send(ANA, "wamid.OUT_2", "interactive"),
    _send(ANA, "wamid.OUT_R", "reaction"),
    _send(ANA, None, error=ErrorInfo(code=131047, title="Re-engagement message")),
]


@pytest.mark.parametrize(
    ("text", "number", "label"),
    [
        ("last_reply", None, None),
        ("reply 1", 1, None),
        ("reply   12", 12, None),
        ("offer", None, "offer"),
        ("the-offer_2", None, "the-offer_2"),
    ],
)
def test_a_reference_reads_as_the_last_reply_a_numbered_reply_or_a_label(
    text: str, number: int | None, label: str | None
) -> None:
    ref = MessageRef.parse(text)
    assert (ref.number, ref.label) == (number, label)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("reply 0", "'reply 0': replies are counted from 1"),
        ("reply -2", "'reply -2': replies are counted from 1"),
        ("reply", "'reply' is not a message reference: expected last_reply, reply N"),
        ("last reply", "'last reply' is not a message reference"),
        ("2nd", "'2nd' is not a message reference"),
    ],
)
def test_a_malformed_reference_says_which_shapes_there_are(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=r"^" + re.escape(problem)):
        MessageRef.parse(text)


def test_without_labels_a_word_is_not_a_reference_and_the_error_offers_a_wamid() -> None:
    with pytest.raises(ValueError, match=r"or a wamid$"):
        MessageRef.parse("offer", labels=False)


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("last_reply", "names the agent's replies"),
        ("reply", "names the agent's replies"),
        ("2nd", "is not a label"),
        ("my offer", "is not a label"),
        ("", "is not a label"),
    ],
)
def test_a_label_may_not_look_like_a_reference_or_hold_spaces(name: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        MessageRef.check_label(name)


def test_replies_count_the_users_accepted_messages_without_receipts_reactions_or_refusals() -> None:
    assert agent_replies(CHAT, ANA) == ["wamid.OUT_1", "wamid.OUT_2"]
    assert agent_replies(CHAT, BEN) == ["wamid.BEN_1"]


def test_the_last_and_numbered_replies_resolve_in_the_users_own_chat() -> None:
    assert MessageRef.parse(LAST_REPLY).resolve(CHAT, ANA) == "wamid.OUT_2"
    assert MessageRef.parse("reply 1").resolve(CHAT, ANA) == "wamid.OUT_1"
    assert MessageRef.parse("last_reply").resolve(CHAT, BEN) == "wamid.BEN_1"


def test_a_reply_the_agent_never_sent_is_a_step_error_saying_how_many_it_sent() -> None:
    with pytest.raises(StepError, match=r"^reply 3: the agent has sent this user only 2 messages"):
        MessageRef.parse("reply 3").resolve(CHAT, ANA)
    with pytest.raises(StepError, match=r"^reply 2: .* only 1 message so far$"):
        MessageRef.parse("reply 2").resolve(CHAT, BEN)
    with pytest.raises(StepError, match=r"^last_reply: the agent has sent this user no message"):
        MessageRef.parse(LAST_REPLY).resolve(CHAT, "15550009999")


def test_a_label_resolves_to_what_its_step_recorded() -> None:
    labels = {"ask": "wamid.IN_1", "quiet": None}
    assert MessageRef.parse("ask").resolve(CHAT, ANA, labels) == "wamid.IN_1"
    with pytest.raises(StepError, match=r"^the step labelled 'quiet' has no message to name$"):
        MessageRef.parse("quiet").resolve(CHAT, ANA, labels)
    with pytest.raises(StepError, match=r"^no step labelled 'later' has been played yet$"):
        MessageRef.parse("later").resolve(CHAT, ANA, labels)


def test_message_ids_are_found_in_a_reaction_and_a_quote() -> None:
    message = {
        "type": "text",
        "text": {"body": "that one"},
        "context": {"id": "reply 1"},
        "reaction": {"message_id": 7},
    }
    assert list(message_ids(message)) == [("reaction.message_id", 7), ("context.id", "reply 1")]
    assert list(message_ids({"type": "text", "context": {"forwarded": True}})) == []


def test_refer_replaces_each_reference_and_names_its_field() -> None:
    seen: list[tuple[str, str]] = []

    def resolve(field: str, text: str) -> str:
        seen.append((field, text))
        return f"wamid.{text.upper().replace(' ', '_')}"

    quote = {"type": "text", "text": {"body": "this"}, "context": {"id": "reply 1"}}
    assert refer(quote, resolve)["context"] == {"id": "wamid.REPLY_1"}
    assert seen == [("context.id", "reply 1")]
    assert quote["context"] == {"id": "reply 1"}  # the given message is left as it was


def test_a_reaction_without_a_message_id_reacts_to_the_last_reply() -> None:
    def resolve(field: str, text: str) -> str:
        return {"last_reply": "wamid.OUT_2"}[text]

    for reaction in ({"emoji": "👍"}, {"message_id": None, "emoji": "👍"}):
        filled = refer({"type": "reaction", "reaction": reaction}, resolve)
        assert filled["reaction"] == {"message_id": "wamid.OUT_2", "emoji": "👍"}
    removal = refer({"type": "reaction", "reaction": {}}, resolve)
    assert removal["reaction"] == {"message_id": "wamid.OUT_2"}


def test_a_reference_that_is_not_a_string_is_left_for_the_channel_to_refuse() -> None:
    def resolve(field: str, text: str) -> str:
        raise AssertionError("not called")

    message = {"type": "reaction", "reaction": {"message_id": 5, "emoji": "👍"}}
    assert refer(message, resolve) == message
