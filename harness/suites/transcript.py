"""Conversations as the lines violations and reports show: ``[turn 2] user Ana: yes please``.

:class:`Transcript` renders events and knows each event's turn; the
invariants quote it in their messages and the reports print conversations
with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.durations import format_duration
from harness.providers import exchange_label
from harness.results import Violation
from harness.trace import (
    EVENT_ADAPTER,
    BlockChange,
    ClockJump,
    Conversation,
    DeliveryAttempt,
    DroppedMessage,
    ErrorInfo,
    Event,
    InboundMessage,
    LLMExchange,
    OutboundSend,
    StatusUpdate,
    ToolCall,
    Verification,
)

__all__ = ["Transcript", "render_event"]

_MAX_TEXT = 160


def _clip(text: str, limit: int = _MAX_TEXT) -> str:
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return f"{flat[: limit - 1]}… (+{len(flat) - limit + 1} chars)"


def _value(value: Any) -> str:
    return repr(_clip(value, 60)) if isinstance(value, str) else _clip(repr(value), 60)


def _errors(errors: Iterable[ErrorInfo], *, details: bool = False) -> str:
    shown = []
    for error in errors:
        parts = (error.title, error.details) if details else (error.title,)
        words = ": ".join(part for part in parts if part)
        shown.append(f"{error.code} ({_clip(words, 100)})" if words else str(error.code))
    return "; ".join(shown)


def _body(event: Event, name: str, to: str) -> str:
    if isinstance(event, InboundMessage):
        who = f"user {name}" + (" (redelivered)" if event.duplicate else "")
        said = _clip(event.text) if event.text is not None else f"<{event.type}>"
        button = f" [button {event.reply_id}]" if event.reply_id is not None else ""
        return f"{who}: {said}{button}"
    if isinstance(event, OutboundSend):
        if not event.is_message:
            line = f"agent {event.type}{to}"
        else:
            notes = []
            if event.is_template:
                template = event.request.get("template")
                tname = template.get("name") if isinstance(template, dict) else None
                notes.append(f"template {tname}" if tname else "template")
            elif event.type != "text":
                notes.append(event.type)
            if event.in_window is False and not event.is_template:
                notes.append("window closed")
            head = "agent" + to + (f" ({', '.join(notes)})" if notes else "")
            line = f"{head}: {_clip(event.text)}" if event.text else head
        if event.error is not None:
            line += f" -> refused {_errors([event.error], details=True)}"
        return line
    if isinstance(event, ToolCall):
        args = ", ".join(f"{k}={_value(v)}" for k, v in event.args.items())
        line = f"tool {event.name}({args})"
        if event.error is not None:
            line += f" -> error: {_clip(event.error, 80)}"
        return line
    if isinstance(event, StatusUpdate):
        errors = f" {_errors(event.errors)}" if event.errors else ""
        return f"status {event.status}{errors}"
    if isinstance(event, LLMExchange):
        stop = f" (stop {event.stop_reason})" if event.stop_reason else ""
        return f"llm {exchange_label(event)}{stop}"
    if isinstance(event, ClockJump):
        jumped = format_duration(event.at - event.previous, plus=True)
        return f"clock {jumped}" + (f" ({event.reason})" if event.reason else "")
    if isinstance(event, DeliveryAttempt):
        answer = str(event.status_code) if event.status_code is not None else "no answer"
        faults = f" [{', '.join(event.faults)}]" if event.faults else ""
        return f"delivery {event.delivery} attempt {event.attempt} -> {answer}{faults}"
    if isinstance(event, Verification):
        answer = str(event.status_code) if event.status_code is not None else "no answer"
        verdict = "passed" if event.passed else "failed"
        return f"verification {event.method} -> {answer} ({verdict})"
    if isinstance(event, BlockChange):
        line = f"agent {'blocks' if event.blocked else 'unblocks'} {name}"
        if event.error is not None:
            line += f" -> refused {_errors([event.error], details=True)}"
        return line
    if isinstance(event, DroppedMessage):
        said = _clip(event.text) if event.text is not None else f"<{event.type}>"
        return f"user {name} ({event.reason}, not delivered): {said}"
    raise TypeError(f"not an event: {event!r}")  # pragma: no cover  # the union is closed


def render_event(
    event: Event,
    turn: int | None = None,
    *,
    names: Mapping[str, str] | None = None,
    recipient: bool = False,
) -> str:
    """One event as a line of the conversation, e.g. ``[turn 2] user Ana: yes please``.

    ``turn`` is the 0-based turn index, shown 1-based as
    :meth:`~harness.results.Violation.headline` shows it; ``names`` maps
    user keys to display names; ``recipient`` adds ``to <name>`` to the
    agent's sends, for conversations with several users.
    """
    user = event.user or ""
    name = (names or {}).get(user) or user or "?"
    to = f" to {name}" if recipient and event.user else ""
    prefix = f"[turn {turn + 1}] " if turn is not None else ""
    return prefix + _body(event, name, to)


class Transcript:
    """A conversation's event log as printable lines, with the turn of each event.

    Events are addressed by their index in ``conversation.events``, the
    index a :class:`~harness.results.Violation` lists in ``events``. Turns
    share the log's event objects; for a conversation loaded from JSON,
    where they are equal copies, each is matched to the log by value.
    """

    def __init__(self, conversation: Conversation) -> None:
        self.conversation = conversation
        self.events: tuple[Event, ...] = conversation.events
        self.names = {p.id: p.name for p in conversation.participants if p.name}
        users = {e.user for e in self.events if e.user is not None}
        self.recipient = len(users) > 1
        self._turn_at: list[int | None] = [None] * len(self.events)
        self._turn_events: list[list[int]] = []
        self._map_turns()

    def _map_turns(self) -> None:
        by_id: dict[int, int] = {}
        for i, event in enumerate(self.events):
            by_id.setdefault(id(event), i)
        by_value: dict[bytes, list[int]] | None = None
        claimed: set[int] = set()
        for turn in self.conversation.turns:
            indexes: list[int] = []
            for event in (*turn.inbound, *turn.actions):
                index = by_id.get(id(event))
                if index is None or index in claimed:
                    if by_value is None:
                        by_value = {}
                        for i, e in enumerate(self.events):
                            by_value.setdefault(EVENT_ADAPTER.dump_json(e), []).append(i)
                    free = [
                        i
                        for i in by_value.get(EVENT_ADAPTER.dump_json(event), [])
                        if i not in claimed
                    ]
                    if not free:
                        continue
                    index = free[0]
                claimed.add(index)
                indexes.append(index)
                self._turn_at[index] = turn.index
            self._turn_events.append(sorted(indexes))

    def turn(self, index: int) -> int | None:
        """The index of the turn event ``index`` belongs to (None before the first turn)."""
        return self._turn_at[index]

    def turn_events(self, turn: int) -> list[int]:
        """The log indexes of a turn's events, in log order."""
        return list(self._turn_events[turn])

    def reply_groups(self, indexes: list[int], chunk_min: int) -> list[list[int]]:
        """Sends grouped so that one long text split into chunks (each of the first
        ``chunk_min`` characters or more) counts once."""
        groups: list[list[int]] = []
        chunking = False
        for i in indexes:
            send = self.events[i]
            assert isinstance(send, OutboundSend)
            if chunking and send.type == "text":
                groups[-1].append(i)
            else:
                groups.append([i])
            chunking = send.type == "text" and len(send.text or "") >= chunk_min
        return groups

    def user(self, index: int) -> str | None:
        """Whose conversation event ``index`` is part of: its user, else its turn's user."""
        event = self.events[index]
        if event.user is not None:
            return event.user
        turn = self._turn_at[index]
        return self.conversation.turns[turn].user if turn is not None else None

    def line(self, index: int) -> str:
        """Event ``index`` rendered as a line, with its turn."""
        return render_event(
            self.events[index], self._turn_at[index], names=self.names, recipient=self.recipient
        )

    def lines(self, indexes: Iterable[int] | None = None) -> list[str]:
        """Several events as lines (the whole log when ``indexes`` is None)."""
        chosen = range(len(self.events)) if indexes is None else indexes
        return [self.line(i) for i in chosen]

    def violation(
        self, rule: str, message: str, indexes: Sequence[int], *, turn: int | None = None
    ) -> Violation:
        """A violation showing events ``indexes`` (sorted, once each).

        ``turn`` defaults to the turn of the last of them, where it showed.
        """
        shown = sorted(set(indexes))
        if turn is None:
            turns = [t for t in (self._turn_at[i] for i in shown) if t is not None]
            turn = turns[-1] if turns else None
        return Violation(
            rule=rule,
            message=message,
            turn=turn,
            messages=tuple(self.lines(shown)),
            events=tuple(shown),
        )
