"""Invariants a user might write, loaded by import path in the invariant tests."""

from __future__ import annotations

import re
from collections.abc import Iterator

from harness.results import Violation
from harness.suites.registry import invariant
from harness.suites.transcript import Transcript
from harness.trace import Conversation, OutboundSend

_EMOJI = re.compile("[\U0001f300-\U0001faff\u2600-\u27bf]")

#: Not an invariant at all, for the "not callable" error.
NOT_A_FUNCTION = 42


def no_emojis(conversation: Conversation, *, allowed: str = "") -> Iterator[Violation]:
    """The agent's messages hold no emoji, except those in ``allowed``."""
    t = Transcript(conversation)
    for i, event in enumerate(t.events):
        if not isinstance(event, OutboundSend) or not event.text:
            continue
        found = [c for c in _EMOJI.findall(event.text) if c not in allowed]
        if found:
            yield t.violation("no_emojis", f"the agent sent {found[0]}", [i])


def broken(conversation: Conversation) -> list[Violation]:
    """An invariant with a bug: it always raises."""
    return [Violation(rule="broken", message=str(conversation.turns[99]))]


def not_violations(conversation: Conversation) -> list[str]:
    """An invariant with a different bug: it returns text, not violations."""
    return ["oops"]


def takes_positional(conversation: Conversation, limit: int, /) -> list[Violation]:
    """The wrong shape: a positional-only parameter with no default."""
    return []


@invariant("custom_quiet_agent")
def quiet_agent(conversation: Conversation, *, limit: int = 3) -> list[Violation]:
    """A decorated plugin: the agent sends at most ``limit`` messages in all."""
    sent = conversation.replies()
    if len(sent) <= limit:
        return []
    return [Violation(rule="custom_quiet_agent", message=f"{len(sent)} messages, over {limit}")]
