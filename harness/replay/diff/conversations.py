"""Two conversations diffed: turns paired, and each pair compared (:func:`diff_conversations`).

Turns pair by index; when both sides have the same users, by each user's
own turn count, so two users' turns that swapped places in time still pair up.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from harness.replay.diff._compare import compare_messages, compare_replies, compare_tools
from harness.replay.diff._text import plural, show
from harness.replay.diff.result import ConversationDiff, TurnDiff
from harness.trace import Conversation, StatusUpdate, Turn, build_turns

__all__ = ["diff_conversations"]


@dataclass(frozen=True)
class _Side:
    """One conversation, prepared for comparing: its turns and each sent message's statuses."""

    turns: tuple[Turn, ...]
    statuses: Mapping[str, list[StatusUpdate]]

    @classmethod
    def of(cls, conversation: Conversation) -> _Side:
        turns = conversation.turns
        if not turns and conversation.events:  # a trace saved without its turns
            turns = build_turns(conversation.events)
        statuses: dict[str, list[StatusUpdate]] = defaultdict(list)
        for event in conversation.events:
            if isinstance(event, StatusUpdate):
                statuses[event.wamid].append(event)
        return cls(turns, statuses)


_Pair: TypeAlias = tuple[Turn | None, Turn | None]


def _pair_turns(a: Sequence[Turn], b: Sequence[Turn]) -> list[_Pair]:
    """Turns paired by each user's turn count when both sides have the same users, else by index."""
    if {t.user for t in a} != {t.user for t in b}:
        return [
            (a[i] if i < len(a) else None, b[i] if i < len(b) else None)
            for i in range(max(len(a), len(b)))
        ]
    queues: dict[str, deque[Turn]] = defaultdict(deque)
    for turn in b:
        queues[turn.user].append(turn)
    pairs: list[_Pair] = []
    for turn in a:
        queue = queues[turn.user]
        pairs.append((turn, queue.popleft() if queue else None))
    leftovers = sorted((t for q in queues.values() for t in q), key=lambda t: t.index)
    for extra in leftovers:
        # after the last row holding an earlier turn of B, so B's order is kept
        at = 0
        for position, (_, other) in enumerate(pairs):
            if other is not None and other.index < extra.index:
                at = position + 1
        pairs.insert(at, (None, extra))
    return pairs


def _outline(turn: Turn) -> str:
    said = ", ".join(show(text) for text in turn.texts) or f"{len(turn.messages)} message(s)"
    replies = [s for s in turn.sends if s.is_message]
    tools = plural(len(turn.tool_calls), "tool call")
    return f"user {said}; {plural(len(replies), 'reply')}; {tools}"


def _compare_pair(
    ta: Turn, tb: Turn, side_a: _Side, side_b: _Side, compare_times: bool
) -> list[str]:
    changes: list[str] = []
    if ta.user != tb.user:
        changes.append(f"user differs: {ta.user!r} -> {tb.user!r}")
    changes += compare_messages(ta, tb, compare_times)
    changes += compare_tools(ta.tool_calls, tb.tool_calls, compare_times)
    changes += compare_replies(
        [s for s in ta.sends if s.is_message],
        [s for s in tb.sends if s.is_message],
        side_a.statuses,
        side_b.statuses,
        compare_times,
    )
    return changes


def diff_conversations(
    a: Conversation, b: Conversation, *, compare_times: bool = False
) -> ConversationDiff:
    """Compare two conversations turn by turn; see :mod:`harness.replay.diff` for what counts."""
    side_a, side_b = _Side.of(a), _Side.of(b)
    rows: list[TurnDiff] = []
    for ta, tb in _pair_turns(side_a.turns, side_b.turns):
        if ta is not None and tb is not None:
            changes = _compare_pair(ta, tb, side_a, side_b, compare_times)
            rows.append(
                TurnDiff(
                    index=ta.index,
                    status="changed" if changes else "same",
                    user_a=ta.user,
                    user_b=tb.user,
                    index_a=ta.index,
                    index_b=tb.index,
                    changes=tuple(changes),
                )
            )
        elif ta is not None:
            rows.append(
                TurnDiff(
                    index=ta.index,
                    status="only_a",
                    user_a=ta.user,
                    index_a=ta.index,
                    changes=(f"only in a: {_outline(ta)}",),
                )
            )
        elif tb is not None:
            rows.append(
                TurnDiff(
                    index=tb.index,
                    status="only_b",
                    user_b=tb.user,
                    index_b=tb.index,
                    changes=(f"only in b: {_outline(tb)}",),
                )
            )
    turns = tuple(rows)
    return ConversationDiff(
        turns=turns, same=all(t.same for t in turns), compare_times=compare_times
    )
