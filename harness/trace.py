"""The trace contract: what happened in a conversation, as data.

Channels and recorders emit *events*; one union tagged by ``kind`` covers
them all, so a JSON line names its own type and a validation error names one
member. A :class:`Turn` groups a burst of user messages with what the agent
did about it; a :class:`Conversation` holds the event log and its turns, with
the query helpers that invariants are written against.

Every model is frozen and round-trips through JSON unchanged. Times are
timezone-aware (UTC) instants on whichever clock ran the conversation,
usually a virtual one.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Annotated, Any, Literal, Self, TypeAlias, cast

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    TypeAdapter,
)

from harness._event_plans import FIELDS_SETS as _FIELDS_SETS
from harness._event_plans import built_by_plan

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

Source: TypeAlias = Literal["live", "recorded"]
EventKind: TypeAlias = Literal[
    "inbound",
    "send",
    "status",
    "llm",
    "tool",
    "clock",
    "delivery",
    "verification",
    "block",
    "dropped",
]

#: ``OutboundSend.type`` values that are not messages a user reads.
NON_MESSAGE_SEND_TYPES = frozenset({"mark_read", "typing"})


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ErrorInfo(_Model):
    """An error as a channel reports it (Meta's ``code``, ``title``, ``details``)."""

    code: int
    title: str = ""
    message: str = ""
    details: str = ""
    http_status: int | None = None


class Participant(_Model):
    """A user who takes part in a conversation.

    ``id`` is the key events use in their ``user`` field: the wa_id when the
    user has one, else the business-scoped user id.
    """

    id: str
    name: str = ""
    wa_id: str | None = None
    user_id: str | None = None


# Each plain kind of event's field names, in declared order (see ``_Event.model_construct``).
_FIELD_ORDER: dict[type[BaseModel], tuple[str, ...]] = {}
_setattr = object.__setattr__


class _Event(_Model):
    at: AwareDatetime
    user: str | None = None

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """Teach the new kind of event its field names once, before any event of it exists.

        An object keeps its attributes in a compact table shared by its class
        when they are set one by one in the same order, not when a whole dict
        is handed to it, as validation does. The class learns the names from
        its first object; one made here, in declared order, before the first
        real event, makes that order the one every later event of the kind
        finds (see :meth:`model_construct`).
        """
        super().__pydantic_init_subclass__(**kwargs)
        names = tuple(cls.__pydantic_fields__)
        if all(
            f.alias is None and f.validation_alias is None for f in cls.__pydantic_fields__.values()
        ):
            _FIELD_ORDER[cls] = names
            first = cls.__new__(cls)
            for name in names:
                _setattr(first, name, None)

    @classmethod
    def model_construct(  # type: ignore[override]  # the plugin's per-field signature holds
        cls, _fields_set: set[str] | None = None, **values: Any
    ) -> Self:
        """An event from trusted values, without validation: pydantic's ``model_construct``.

        The same event (equal, the same fields, defaults and record of the
        given names) with its values kept as attributes set in declared order
        rather than a dict of their own: for an event of ten fields that takes
        less than half the memory, and a run keeps every event. Reading a
        field, comparing, copying and dumping work as for any event.
        """
        names = _FIELD_ORDER.get(cls)
        if names is None:  # not a plain kind of event: pydantic's own way
            return cast(Self, super().model_construct(_fields_set, **values))
        if _fields_set is None:
            planned = built_by_plan(cls, names, values)
            if planned is not None:
                return planned
        event = cls.__new__(cls)
        given: set[str] = set()
        fields = cls.__pydantic_fields__
        made: dict[str, Any] = {}
        for name in names:
            if name in values:
                value = values[name]
                given.add(name)
            else:
                field = fields[name]
                if field.is_required():
                    continue
                value = field.get_default(call_default_factory=True, validated_data=made)
            made[name] = value
            _setattr(event, name, value)
        if _fields_set is not None:
            given = _fields_set
        _setattr(event, "__pydantic_fields_set__", _FIELDS_SETS.setdefault(frozenset(given), given))
        _setattr(event, "__pydantic_extra__", None)
        _setattr(event, "__pydantic_private__", None)
        return event

    def model_post_init(self, context: Any, /) -> None:
        """Share the record of which fields were given with every event given the same ones.

        Pydantic keeps a set of the field names given to each instance
        (``model_fields_set``): for an event of ten fields that set takes more
        memory than the event's own values, and a run keeps every event. An
        event is frozen, so its set never changes once built (``model_copy``
        copies it before adding to it), and one set per combination of names
        serves them all: each kind of event is built from a handful.
        """
        given = self.__pydantic_fields_set__
        shared = _FIELDS_SETS.setdefault(frozenset(given), given)
        if shared is not given:
            object.__setattr__(self, "__pydantic_fields_set__", shared)


class InboundMessage(_Event):
    """A user's message as the agent received it (one per delivered copy).

    ``duplicate`` marks a copy whose ``wamid`` the agent was already sent
    (a redelivery); ``delivery`` names the delivery attempt that carried it.
    ``burst`` is the same for messages the user typed as one burst, where the
    channel knows (a scripted ``say`` of several messages); a recorded live
    chat leaves it unset, and bursts are then judged by timing. ``envelope``
    is what the channel sent around the message, as sent (WhatsApp: the
    webhook's ``value`` without its messages: the sender's contact with its
    profile or none, the business number, errors), so a replay can send it
    again as it was; None where it was not kept.
    """

    kind: Literal["inbound"] = "inbound"
    wamid: str
    type: str
    text: str | None = None
    reply_id: str | None = None
    context_id: str | None = None
    body: dict[str, JsonValue] = Field(default_factory=dict)
    delivery: str | None = None
    duplicate: bool = False
    burst: str | None = None
    envelope: dict[str, JsonValue] | None = None


class OutboundSend(_Event):
    """A call the agent made to send something, and the channel's answer.

    ``type`` is the message type (``text``, ``interactive``, ``template`` ...)
    or one of :data:`NON_MESSAGE_SEND_TYPES`. Exactly one of ``wamid`` and
    ``error`` is set once the channel has answered. ``in_window`` says
    whether the user's customer-service window was open at the time, where
    the channel knows.
    """

    kind: Literal["send"] = "send"
    type: str
    text: str | None = None
    request: dict[str, JsonValue] = Field(default_factory=dict)
    wamid: str | None = None
    error: ErrorInfo | None = None
    in_window: bool | None = None

    @property
    def ok(self) -> bool:
        """True when the channel accepted the send."""
        return self.error is None

    @property
    def is_message(self) -> bool:
        """True for a message the user sees (not a read receipt or typing indicator)."""
        return self.type not in NON_MESSAGE_SEND_TYPES

    @property
    def is_template(self) -> bool:
        """True for a template message, the only kind allowed outside the window."""
        return self.type == "template"


class StatusUpdate(_Event):
    """A delivery status of a message the agent sent (sent, delivered, read, failed...)."""

    kind: Literal["status"] = "status"
    wamid: str
    status: str
    errors: tuple[ErrorInfo, ...] = ()
    delivery: str | None = None


class LLMExchange(_Event):
    """One call to the language model, summarised; the full exchange lives in the fixture.

    ``model`` is the model the agent asked for; ``provider`` is who answered
    (:mod:`harness.providers`: ``anthropic``, ``offline-stand-in`` ...; None
    when nobody recorded it), and ``source`` whether it answered then
    (``live``) or its recorded answer was replayed (``recorded``).
    """

    kind: Literal["llm"] = "llm"
    key: str
    model: str
    stop_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    source: Source = "live"
    provider: str | None = None


class ToolCall(_Event):
    """One call of one of the agent's tools, with its arguments and result."""

    kind: Literal["tool"] = "tool"
    name: str
    args: dict[str, JsonValue] = Field(default_factory=dict)
    result: JsonValue = None
    error: str | None = None
    side_effect: bool = False
    source: Source = "live"


class ClockJump(_Event):
    """Virtual time moved forward without anything happening in between."""

    kind: Literal["clock"] = "clock"
    previous: AwareDatetime
    reason: str = ""


class DeliveryAttempt(_Event):
    """One webhook POST (or other hand-over) to the agent, and how it went.

    ``items`` names what the POST carried: a user message by its wamid, a
    status as ``wamid:status``. ``status_code`` is None when no answer came (timeout, refused);
    ``faults`` names the channel faults applied to it (``duplicate``,
    ``reordered``, ``batched``, ``retry`` ...).
    """

    kind: Literal["delivery"] = "delivery"
    delivery: str
    attempt: int = 1
    items: tuple[str, ...] = ()
    status_code: int | None = None
    error: str | None = None
    latency_ms: float | None = None
    faults: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when the agent acknowledged the delivery with a 200."""
        return self.status_code == 200


class Verification(_Event):
    """The channel checked the agent's endpoint before delivering anything to it.

    WhatsApp: Meta's verification handshake, a GET whose query (``request``)
    carries a challenge (``challenge``) that a valid endpoint answers with 200
    and the challenge as its body. ``status_code`` and ``answer`` (clipped)
    are the agent's reply (``status_code`` None when none came, ``error``
    then says why); ``passed`` is the channel's verdict. Nothing is delivered
    to an endpoint that has not passed.
    """

    kind: Literal["verification"] = "verification"
    method: str = "GET"
    request: dict[str, JsonValue] = Field(default_factory=dict)
    challenge: str = ""
    status_code: int | None = None
    answer: str = ""
    error: str | None = None
    passed: bool = False


class BlockChange(_Event):
    """The agent blocked a user (``blocked``) or unblocked them, named as ``input``.

    ``error`` is set when the channel refused the change for this user. While a
    user is blocked their messages never reach the agent, and its sends to them fail.
    """

    kind: Literal["block"] = "block"
    blocked: bool = True
    input: str = ""
    error: ErrorInfo | None = None


class DroppedMessage(_Event):
    """A user's message the channel did not pass on to the agent, and why (``blocked``)."""

    kind: Literal["dropped"] = "dropped"
    wamid: str
    type: str
    text: str | None = None
    reason: str = "blocked"


Event = Annotated[
    InboundMessage
    | OutboundSend
    | StatusUpdate
    | LLMExchange
    | ToolCall
    | ClockJump
    | DeliveryAttempt
    | Verification
    | BlockChange
    | DroppedMessage,
    Field(discriminator="kind"),
]

#: Validates and serialises a single event of any kind.
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


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
