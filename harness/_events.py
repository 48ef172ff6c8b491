"""The events of a conversation, as data: one union tagged by ``kind``.

The members of :mod:`harness.trace`'s event log (which re-exports them all):
a JSON line names its own type and a validation error names one member.
Every model is frozen and round-trips through JSON unchanged.
"""

from __future__ import annotations

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
    "BlockChange",
    "ClockJump",
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
    "Verification",
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
    (``live``) or its recorded answer was replayed (``recorded``). ``error``
    says why a call the harness's model endpoint was to pass on got no
    answer (the provider could not be reached, or refused it); None for a
    call that was answered.
    """

    kind: Literal["llm"] = "llm"
    key: str
    model: str
    stop_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    source: Source = "live"
    provider: str | None = None
    error: str | None = None


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
