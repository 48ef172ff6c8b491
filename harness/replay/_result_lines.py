"""The lines of a replay's result: each divergence once, led by its turn, in recorded numbers."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime

from harness.trace import Conversation

__all__ = ["numbered", "once_each", "turn_at", "with_turn"]


def once_each(lines: Iterable[str]) -> tuple[str, ...]:
    """``lines`` in order, each once, with how often it came when more than once.

    An agent that asks again what the recording does not hold (its SDK retries)
    diverges the same way each time: one line says so.
    """
    counts = Counter(lines)
    return tuple(line if n == 1 else f"{line} ({n} times)" for line, n in counts.items())


def numbered(text: str, numbers: Mapping[str, str]) -> str:
    """``text`` with the users' replay numbers written as the recorded ones (``numbers``)."""
    for new, old in numbers.items():
        text = text.replace(new, old)
    return text


def with_turn(text: str, at: datetime, conversation: Conversation | None) -> str:
    """A divergence's explanation, led by the turn it happened in."""
    turn = turn_at(at, conversation)
    return text if turn is None else f"turn {turn + 1}: {text}"


def turn_at(at: datetime, conversation: Conversation | None) -> int | None:
    """The index of the turn under way at ``at``, if any."""
    turn = None
    for candidate in conversation.turns if conversation is not None else ():
        if candidate.start <= at:
            turn = candidate.index
    return turn
