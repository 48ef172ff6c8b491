"""The trace contract: what happened in a conversation, as data.

Channels and recorders emit *events*; one union tagged by ``kind`` covers
them all, so a JSON line names its own type and a validation error names one
member (the events are defined in :mod:`harness._events` and exported from
here). A :class:`Turn` groups a burst of user messages with what the agent
did about it; a :class:`Conversation` holds the event log and its turns, with
the query helpers that invariants are written against.

Every model is frozen and round-trips through JSON unchanged. Times are
timezone-aware (UTC) instants on whichever clock ran the conversation,
usually a virtual one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any

from harness._events import (
    EVENT_ADAPTER,
    NON_MESSAGE_SEND_TYPES,
    BlockChange,
    ClockJump,
    DeliveryAttempt,
    DroppedMessage,
    ErrorInfo,
    Event,
    EventKind,
    InboundMessage,
    LLMExchange,
    OutboundSend,
    Participant,
    StatusUpdate,
    ToolCall,
    Verification,
    _Model,
)

__all__ = [
    "EVENT_ADAPTER",
    "NON_MESSAGE_SEND_TYPES",
    "OBSERVABLE_KINDS",
    "BlockChange",
    "ClockJump",
    "Conversation",
    "DeliveryAttempt",
    "DroppedMessage",
    "ErrorInfo",
    "Event",
    "EventKind",
    "InboundMessage",
    "LLMExchange",
    "OutboundSend",
    "Participant",
    "StatusUpdate",
    "ToolCall",
    "Turn",
    "Verification",
    "build_turns",
]


class Turn(_Model):
    """A burst of messages from one user, and everything the agent did about it.

    ``inbound`` holds the burst, redelivered copies included; ``actions``
    holds the events that followed, up to the user's next burst.
    """

    index: int
    user: str
    inbound: tuple[InboundMessage, ...]
    actions: tuple[Event, ...] = ()

    @property
    def messages(self) -> list[InboundMessage]:
        """The user's messages in this turn, first copies only."""
        return [e for e in self.inbound if not e.duplicate]

    @property
    def texts(self) -> list[str]:
        """The text of each message in the burst (button titles included)."""
        return [m.text for m in self.messages if m.text is not None]

    @property
    def sends(self) -> list[OutboundSend]:
        """Every send the agent made in this turn, receipts and typing included."""
        return [e for e in self.actions if isinstance(e, OutboundSend)]

    @property
    def replies(self) -> list[OutboundSend]:
        """The messages the channel accepted from the agent in this turn.

        Receipts, typing indicators and refused sends are not replies: the
        user never saw them (:attr:`sends` has them all).
        """
        return [e for e in self.sends if e.is_message and e.ok]

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The agent's tool calls in this turn."""
        return [e for e in self.actions if isinstance(e, ToolCall)]

    @property
    def llm_exchanges(self) -> list[LLMExchange]:
        """The model calls the agent made in this turn."""
        return [e for e in self.actions if isinstance(e, LLMExchange)]

    @property
    def statuses(self) -> list[StatusUpdate]:
        """Status updates that arrived during this turn."""
        return [e for e in self.actions if isinstance(e, StatusUpdate)]

    @property
    def start(self) -> datetime:
        """When the first message of the burst arrived."""
        return self.inbound[0].at


def _is_turn_action(event: Event) -> bool:
    return not isinstance(event, (InboundMessage, DeliveryAttempt, ClockJump, Verification))


def _answers(event: Event) -> bool:
    """Whether the agent's event ends the user's burst: statuses and dropped messages are
    Meta's doing, and a read receipt or typing indicator tells the user nothing of the answer."""
    if isinstance(event, OutboundSend):
        return event.is_message
    return not isinstance(event, StatusUpdate | DroppedMessage)


def build_turns(events: Iterable[Event]) -> tuple[Turn, ...]:
    """Group an event log into turns.

    A new turn starts when a user's message arrives after the agent has done
    something for that user (sent a message, called a tool or the model)
    since the user's previous message; messages in between form one burst.
    Statuses of the agent's earlier sends, its read receipts and typing
    indicators join the open turn but end no burst: the statuses are Meta's,
    not the agent's, and against an agent on real time they arrive while the
    user is still typing; a bot that marks each message read as it comes has
    not answered it. Redelivered
    copies never start a turn. Events with no user go to the turn that was
    open last, which is exact for one user and a good guess for several.
    """
    turns: list[dict[str, Any]] = []
    open_turn: dict[str, int] = {}  # user -> index in turns
    acted: dict[str, bool] = {}  # user -> has the agent acted since the burst began
    last: int | None = None
    for event in events:
        if isinstance(event, InboundMessage):
            user = event.user or ""
            index = open_turn.get(user)
            if index is None or (acted.get(user, False) and not event.duplicate):
                turns.append({"user": user, "inbound": [event], "actions": []})
                index = len(turns) - 1
                open_turn[user] = index
                acted[user] = False
            else:
                turns[index]["inbound"].append(event)
            last = index
        elif _is_turn_action(event):
            index = open_turn.get(event.user) if event.user is not None else last
            if index is None:
                index = last
            if index is None:
                continue
            turns[index]["actions"].append(event)
            if _answers(event):
                acted[turns[index]["user"]] = True
    return tuple(
        Turn(index=i, user=t["user"], inbound=tuple(t["inbound"]), actions=tuple(t["actions"]))
        for i, t in enumerate(turns)
    )


#: The kinds of the agent's own work a channel can observe (``observed`` on a conversation).
OBSERVABLE_KINDS = ("llm", "tool")


class Conversation(_Model):
    """A whole conversation: who took part, the event log in order, and its turns.

    ``observed`` names which of the agent's own calls the channel could see
    (:data:`OBSERVABLE_KINDS`): an agent that reports no tool calls has no
    ``tool`` there, and a check about tools can't pass on its trace. ``None``
    (traces written before the field existed) means all of them.
    """

    id: str = ""
    scenario: str | None = None
    channel: str = ""
    participants: tuple[Participant, ...] = ()
    events: tuple[Event, ...] = ()
    turns: tuple[Turn, ...] = ()
    observed: tuple[str, ...] | None = None

    def observes(self, kind: str) -> bool:
        """True when the channel could see the agent's calls of ``kind`` (``llm``, ``tool``)."""
        return self.observed is None or kind in self.observed

    @classmethod
    def from_events(cls, events: Sequence[Event], **fields: Any) -> Conversation:
        """Build a conversation from its event log, deriving the turns."""
        log = tuple(events)
        return cls(events=log, turns=build_turns(log), **fields)

    # -- queries over the log -------------------------------------------------

    def of_kind(self, kind: EventKind) -> Iterator[Event]:
        """The events of one kind, in order."""
        return (e for e in self.events if e.kind == kind)

    def inbound(self, user: str | None = None, *, duplicates: bool = False) -> list[InboundMessage]:
        """The user messages the agent received, optionally with redelivered copies."""
        return [
            e
            for e in self.events
            if isinstance(e, InboundMessage)
            and (user is None or e.user == user)
            and (duplicates or not e.duplicate)
        ]

    def sends(self, user: str | None = None) -> list[OutboundSend]:
        """Every send the agent made, read receipts and typing indicators included."""
        return [
            e
            for e in self.events
            if isinstance(e, OutboundSend) and (user is None or e.user == user)
        ]

    def replies(self, user: str | None = None) -> list[OutboundSend]:
        """The messages the channel accepted from the agent (no receipts, typing or refusals)."""
        return [e for e in self.sends(user) if e.is_message and e.ok]

    def tool_calls(
        self, name: str | None = None, *, side_effect: bool | None = None
    ) -> list[ToolCall]:
        """Tool calls, optionally of one tool or only the side-effecting ones."""
        return [
            e
            for e in self.events
            if isinstance(e, ToolCall)
            and (name is None or e.name == name)
            and (side_effect is None or e.side_effect == side_effect)
        ]

    def llm_exchanges(self) -> list[LLMExchange]:
        """The model calls, in order."""
        return [e for e in self.events if isinstance(e, LLMExchange)]

    def statuses(self, status: str | None = None) -> list[StatusUpdate]:
        """Status updates, optionally of one status value."""
        return [
            e
            for e in self.events
            if isinstance(e, StatusUpdate) and (status is None or e.status == status)
        ]

    def deliveries(self) -> list[DeliveryAttempt]:
        """Every delivery attempt the channel made to the agent."""
        return [e for e in self.events if isinstance(e, DeliveryAttempt)]

    def verifications(self) -> list[Verification]:
        """Every check of the agent's endpoint (WhatsApp: the verification handshake)."""
        return [e for e in self.events if isinstance(e, Verification)]

    def sends_outside_window(self) -> list[OutboundSend]:
        """Free-form messages sent while the user's 24-hour window was closed."""
        return [e for e in self.replies() if e.in_window is False and not e.is_template]

    def failed_sends(self) -> list[OutboundSend | StatusUpdate]:
        """Sends the channel refused, and sends that later failed on a status."""
        refused: list[OutboundSend | StatusUpdate] = [e for e in self.sends() if not e.ok]
        return refused + self.statuses("failed")

    def user_messages_before(self, turn: int, user: str | None = None) -> list[InboundMessage]:
        """The user messages of every turn before turn number ``turn``."""
        return [m for t in self.turns[:turn] if user is None or t.user == user for m in t.messages]

    def turn_of(self, event: Event) -> Turn | None:
        """The turn an event belongs to (by identity, then by equality)."""
        for turn in self.turns:
            if any(e is event for e in (*turn.inbound, *turn.actions)):
                return turn
        for turn in self.turns:
            if event in turn.inbound or event in turn.actions:
                return turn
        return None

    def send_for(self, wamid: str) -> OutboundSend | None:
        """The send that produced a message id, to pair statuses with their sends."""
        for e in self.events:
            if isinstance(e, OutboundSend) and e.wamid == wamid:
                return e
        return None
