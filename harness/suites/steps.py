"""The steps of a scenario: what users do, how time passes, what the agent must have done.

Each step is a mapping with one action key and that action's modifiers (see
:mod:`harness.suites.scenario` for the whole file format):

- ``say: hi`` or ``say: [a, burst, of three]`` with ``gap`` (default 1s);
  ``reply_to: last_reply`` quotes a message;
- ``tap: confirm``: a button or list row of the agent's last interactive
  message, by id or title;
- ``send: image`` (a media type, optional ``caption``) or
  ``send: {type: location, location: {...}}`` (any Meta message object; the
  channel sets ``id``, ``from``, ``from_user_id`` and ``timestamp``, and
  checks the content), with ``reply_to``; a message id in it
  (``reaction.message_id``, ``context.id``) is written as a reference;
- ``wait: 25h`` or ``advance: 25h``: virtual time passes;
- ``redeliver: last`` (or ``true``, or the user's Nth message): Meta delivers
  it again with identical bytes;
- ``faults: {reorder: 1}`` (or a preset, or null): the channel's faults from
  here on, until the next such step;
- ``expect: {...}`` with ``within``: what the agent did since the last user
  step.

``as: Ana`` names the acting user on every step but a wait; ``label: offer``
names a say, tap, send or expect step's message for later references
(``last_reply``, ``reply 2`` or a label: :mod:`harness.suites.messages`). The models are
frozen and refuse unknown fields, so a typo is an error that names it;
:data:`harness.suites.step_union.Step` picks the model by the action key, so
a step with no action or two of them fails with one clear message rather than
one per model. A ``simulate`` step (a language model plays the user for a
stretch) lives in :mod:`harness.suites.simulate_step`.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any, ClassVar, Final, Literal, TypeAlias

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    PlainSerializer,
    StrictBool,
    StrictInt,
    WithJsonSchema,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from harness.durations import format_duration, parse_duration
from harness.exceptions import ConfigError
from harness.suites.dates import check_dated_regex, check_dated_values, check_dates
from harness.suites.messages import MEDIA_TYPES, SEND_SCHEMA, Label, Reference, check_send
from harness.suites.yamlpos import LocatedError, describe

__all__ = [
    "DEFAULT_GAP",
    "MEDIA_TYPES",
    "STATUSES",
    "BaseStep",
    "Duration",
    "ExpectStep",
    "Expectation",
    "FaultsStep",
    "LabelledStep",
    "RedeliverStep",
    "SayStep",
    "ScenarioPart",
    "SendStep",
    "TapStep",
    "ToolExpectation",
    "UserStep",
    "WaitStep",
    "fault_spec",
]

#: Message statuses an ``expect: {status: ...}`` may ask for.
STATUSES: Final = ("sent", "delivered", "read", "failed")
#: Time between the messages of a burst unless ``gap`` says otherwise.
DEFAULT_GAP: Final = timedelta(seconds=1)

_CAPTIONED: Final = ("document", "image", "video")
_DURATION_TEXT: Final = r"^[+]?(0|([0-9]+(\.[0-9]*)?|\.[0-9]+)(ms|[dhms]))+$"


class ScenarioPart(BaseModel):
    """Base of the models a scenario file is made of: frozen, unknown fields refused.

    Fields with an alias (``as``) are also set by name (``user``) from code;
    the loader reads files by alias only.
    """

    model_config = ConfigDict(
        frozen=True, extra="forbid", validate_by_name=True, validate_by_alias=True
    )


# -- field types -------------------------------------------------------------------


def _duration(value: object) -> object:
    if isinstance(value, timedelta):
        delta = value
    elif isinstance(value, str | int | float) and not isinstance(value, bool):
        try:
            delta = parse_duration(value)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
    else:
        raise ValueError(f"expected a duration such as 90s, 25h or 1d2h, got {describe(value)}")
    if delta < timedelta(0):
        raise ValueError(f"a duration must not be negative, got {value!r}")
    return delta


def _positive(delta: timedelta) -> timedelta:
    if not delta:
        raise ValueError("must be longer than zero")
    return delta


_DURATION_INPUT: TypeAlias = (
    Annotated[str, Field(pattern=_DURATION_TEXT)] | Annotated[float, Field(ge=0)]
)
#: A non-negative span of virtual time: ``"90s"``, ``"1d2h"`` or seconds.
Duration: TypeAlias = Annotated[
    timedelta,
    BeforeValidator(_duration, json_schema_input_type=_DURATION_INPUT),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
]
_Positive: TypeAlias = Annotated[Duration, AfterValidator(_positive)]
_Text: TypeAlias = Annotated[str, Field(min_length=1)]


def _one_or_many(value: object) -> object:
    return value if isinstance(value, list | tuple) else [value]


#: One string or a non-empty list of them, kept as a tuple.
_Texts: TypeAlias = Annotated[
    tuple[_Text, ...],
    BeforeValidator(
        _one_or_many, json_schema_input_type=_Text | Annotated[list[_Text], Field(min_length=1)]
    ),
    Field(min_length=1),
]


#: Texts an expectation looks for: each may name dates relative to the scenario's start.
_DatedTexts: TypeAlias = Annotated[
    tuple[Annotated[_Text, AfterValidator(check_dates)], ...],
    BeforeValidator(
        _one_or_many, json_schema_input_type=_Text | Annotated[list[_Text], Field(min_length=1)]
    ),
    Field(min_length=1),
]
# -- steps -------------------------------------------------------------------------


class BaseStep(ScenarioPart):
    """What every step has: where it was written, and its position in ``steps``."""

    #: The action key that makes a mapping this kind of step.
    action: ClassVar[str]
    #: The 1-based line of the step in its file (``None`` when built in code).
    line: SkipJsonSchema[int | None] = None
    #: The step's 0-based position in ``steps`` (set by the scenario).
    index: SkipJsonSchema[int] = 0

    def to_data(self) -> dict[str, JsonValue]:
        """This step as the file writes it: the action first, defaults left out."""
        raise NotImplementedError

    @property
    def time_taken(self) -> timedelta:
        """The most virtual time the step takes: a wait, a burst's gaps, an ``expect``'s within."""
        return timedelta(0)


class UserStep(BaseStep):
    """A step taken by one of the users (``as: Ana``; the first user by default)."""

    user: str | None = Field(
        default=None, alias="as", description="The acting user's name (default: the first)."
    )

    def _with_user(self, data: dict[str, JsonValue]) -> dict[str, JsonValue]:
        if self.user is not None:
            data["as"] = self.user
        return data


class LabelledStep(UserStep):
    """A step whose message a later step may name by its ``label``."""

    label: Label | None = Field(default=None, description="A name for this step's message.")

    def _with_user(self, data: dict[str, JsonValue]) -> dict[str, JsonValue]:
        if self.label is not None:
            data["label"] = self.label
        return super()._with_user(data)


class SayStep(LabelledStep):
    """The user types one message, or a burst of several ``gap`` apart."""

    action: ClassVar[str] = "say"
    say: _Texts = Field(description="A message, or a list of messages sent as a burst.")
    gap: Duration = Field(
        default=DEFAULT_GAP,
        description="Time between burst messages.",
        json_schema_extra={"default": format_duration(DEFAULT_GAP)},
    )
    reply_to: Reference | None = Field(default=None, description="The message this one quotes.")

    @model_validator(mode="after")
    def _quotes_one(self) -> SayStep:
        if self.reply_to is not None and self.burst:
            raise LocatedError("a quote goes with one message, not a burst", ("reply_to",))
        return self

    @property
    def burst(self) -> bool:
        """True when the step sends more than one message."""
        return len(self.say) > 1

    @property
    def time_taken(self) -> timedelta:
        """The gaps between the burst's messages."""
        try:
            return self.gap * (len(self.say) - 1)
        except OverflowError:  # longer than any clock keeps
            return timedelta.max

    def to_data(self) -> dict[str, JsonValue]:
        """This step as the file writes it."""
        data: dict[str, JsonValue] = {"say": self.say[0] if len(self.say) == 1 else list(self.say)}
        if self.gap != DEFAULT_GAP:
            data["gap"] = format_duration(self.gap)
        if self.reply_to is not None:
            data["reply_to"] = self.reply_to
        return self._with_user(data)


class TapStep(LabelledStep):
    """The user taps a button or list row of the agent's last interactive message."""

    action: ClassVar[str] = "tap"
    tap: _Text = Field(description="The button's or row's id or title.")

    def to_data(self) -> dict[str, JsonValue]:
        """This step as the file writes it."""
        return self._with_user({"tap": self.tap})


class SendStep(LabelledStep):
    """The user sends any inbound message: a media shorthand or a Meta message object."""

    action: ClassVar[str] = "send"
    send: Annotated[
        str | dict[str, JsonValue], BeforeValidator(check_send), WithJsonSchema(SEND_SCHEMA)
    ]
    caption: str | None = Field(default=None, description="Caption of an image, video or document.")
    reply_to: Reference | None = Field(default=None, description="The message this one quotes.")

    @model_validator(mode="after")
    def _caption_fits(self) -> SendStep:
        if self.caption is not None and self.send not in _CAPTIONED:
            where = "a message object" if isinstance(self.send, dict) else f"'{self.send}'"
            raise LocatedError(
                f"a caption goes with send: image, video or document, not {where}", ("caption",)
            )
        if self.reply_to is not None and self.message_type == "reaction":
            message = "a reaction names its message in reaction.message_id"
            raise LocatedError(message, ("reply_to",))
        if self.reply_to is not None and isinstance(self.send, dict) and "context" in self.send:
            raise LocatedError("give reply_to or the message's context, not both", ("reply_to",))
        return self

    def message(self) -> dict[str, JsonValue]:
        """The message object to send: the shorthand written out, ``reply_to`` as its context."""
        if isinstance(self.send, str):
            content: dict[str, JsonValue] = {}
            if self.caption is not None:
                content["caption"] = self.caption
            message: dict[str, JsonValue] = {"type": self.send, self.send: content}
        else:
            message = dict(self.send)
        if self.reply_to is not None:
            message["context"] = {"id": self.reply_to}
        return message

    @property
    def message_type(self) -> str:
        """The message's ``type``: ``image``, ``location``..."""
        return self.send if isinstance(self.send, str) else str(self.send["type"])

    def to_data(self) -> dict[str, JsonValue]:
        """This step as the file writes it."""
        data: dict[str, JsonValue] = {"send": self.send}
        if self.caption is not None:
            data["caption"] = self.caption
        if self.reply_to is not None:
            data["reply_to"] = self.reply_to
        return self._with_user(data)


class WaitStep(BaseStep):
    """Virtual time passes: ``wait: 25h`` (``advance`` is a synonym)."""

    action: ClassVar[str] = "wait"
    wait: Duration | SkipJsonSchema[None] = None
    advance: Duration | SkipJsonSchema[None] = None

    model_config = ConfigDict(
        json_schema_extra={"oneOf": [{"required": ["wait"]}, {"required": ["advance"]}]}
    )

    @model_validator(mode="after")
    def _one_duration(self) -> WaitStep:
        if (self.wait is None) == (self.advance is None):
            raise ValueError("a wait step takes exactly one of wait or advance")
        return self

    @property
    def duration(self) -> timedelta:
        """How far virtual time moves."""
        return self.wait if self.wait is not None else self.advance or timedelta(0)

    @property
    def time_taken(self) -> timedelta:
        """The wait."""
        return self.duration

    def to_data(self) -> dict[str, JsonValue]:
        """This step as the file writes it, with the keyword it was written with."""
        key = "wait" if self.wait is not None else "advance"
        return {key: format_duration(self.duration)}


def _which(value: object) -> object:
    if value is True or value == "last":
        return "last"
    if value is False:
        raise ValueError("redeliver: false does nothing; remove the step")
    if not isinstance(value, int) or value < 1:
        raise ValueError(
            f"expected last, true or the number (from 1) of the user's message, got {value!r}"
        )
    return value


class RedeliverStep(UserStep):
    """Meta delivers a user's earlier message again, with identical bytes."""

    action: ClassVar[str] = "redeliver"
    redeliver: Annotated[
        Literal["last"] | StrictInt,
        BeforeValidator(
            _which,
            json_schema_input_type=Literal["last", True] | Annotated[int, Field(ge=1)],
        ),
    ] = Field(description="last (or true), or the 1-based number of the user's message.")

    @property
    def which(self) -> int | None:
        """The 1-based number of the user's message to redeliver; ``None`` for the last."""
        return None if self.redeliver == "last" else self.redeliver

    def to_data(self) -> dict[str, JsonValue]:
        """This step as the file writes it."""
        return self._with_user({"redeliver": self.redeliver})


def fault_spec(value: object) -> object:
    """A ``faults:`` value as written: a preset name, a mapping of settings, or null."""
    if value is None or isinstance(value, str | dict):
        return value
    raise ValueError(
        f"expected a preset name, a mapping of fault settings or null, got {describe(value)}"
    )


class FaultsStep(BaseStep):
    """From here on the channel's faults are these (null: none), until the next such step.

    The value is what the scenario's own ``faults:`` takes; the channel checks it.
    """

    action: ClassVar[str] = "faults"
    faults: Annotated[str | dict[str, JsonValue] | None, BeforeValidator(fault_spec)] = Field(
        description="A fault preset name, a mapping of fault settings, or null for none."
    )

    def to_data(self) -> dict[str, JsonValue]:
        """This step as the file writes it."""
        return {"faults": self.faults}


class ToolExpectation(ScenarioPart):
    """A tool call to look for; ``args`` must be a subset of the call's arguments."""

    name: _Text
    args: Annotated[dict[str, JsonValue], AfterValidator(check_dated_values)] | None = None

    def to_data(self) -> JsonValue:
        """The name alone when there are no arguments, else ``{name, args}``."""
        if self.args is None:
            return self.name
        return {"name": self.name, "args": self.args}


def _tools(value: object) -> object:
    items = value if isinstance(value, list | tuple) else [value]
    return [{"name": item} if isinstance(item, str) else item for item in items]


_ToolsInput: TypeAlias = str | ToolExpectation | list[str | ToolExpectation]
_ToolExpectations: TypeAlias = Annotated[
    tuple[ToolExpectation, ...],
    BeforeValidator(_tools, json_schema_input_type=_ToolsInput),
    Field(min_length=1),
]


def _one_or_list(values: tuple[Any, ...], write: Any = lambda v: v) -> JsonValue:
    out = [write(value) for value in values]
    return out[0] if len(out) == 1 else out


class Expectation(ScenarioPart):
    """What the agent must (not) have done since the last user step; all must hold."""

    reply_contains: _DatedTexts | None = Field(
        default=None, description="Text (or texts) that must all appear in the replies."
    )
    reply_matches: Annotated[str, AfterValidator(check_dated_regex)] | None = Field(
        default=None, description="A Python regular expression the replies must match."
    )
    reply_not_contains: _DatedTexts | None = Field(
        default=None, description="Text (or texts) that must not appear in the replies."
    )
    tool_called: _ToolExpectations | None = Field(
        default=None, description="A tool (name or {name, args}) that must have been called."
    )
    tool_not_called: _ToolExpectations | None = Field(
        default=None,
        description="A tool that must not have been called (a name near one the agent "
        "called, but not its own, fails as a likely misspelling).",
    )
    no_reply_within: _Positive | None = Field(
        default=None, description="The agent sends nothing within this time."
    )
    status: Literal["sent", "delivered", "read", "failed"] | None = Field(
        default=None, description="The status the agent's last reply reached."
    )
    template: StrictBool | None = Field(
        default=None, description="Whether the last reply was a template."
    )
    replies: Annotated[StrictInt, Field(ge=0)] | None = Field(
        default=None, description="Exactly this many agent messages."
    )
    blocked: StrictBool | None = Field(
        default=None,
        description="Whether the agent has the step's user blocked by then (Block Users API).",
    )

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    @model_validator(mode="after")
    def _something(self) -> Expectation:
        if all(getattr(self, name) is None for name in type(self).model_fields):
            raise ValueError("expect needs at least one of: " + ", ".join(type(self).model_fields))
        return self

    def to_data(self) -> dict[str, JsonValue]:
        """The expectations that are set, in the file's shape."""
        data: dict[str, JsonValue] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if value is None:
                continue
            if name in ("reply_contains", "reply_not_contains"):
                data[name] = _one_or_list(value)
            elif name in ("tool_called", "tool_not_called"):
                data[name] = _one_or_list(value, ToolExpectation.to_data)
            elif isinstance(value, timedelta):
                data[name] = format_duration(value)
            else:
                data[name] = value
        return data


class ExpectStep(LabelledStep):
    """Check what the agent did since the last user step; its label names the last reply."""

    action: ClassVar[str] = "expect"
    expect: Expectation
    within: _Positive | None = Field(
        default=None, description="How long to wait for the agent (default: until quiet)."
    )

    @property
    def time_taken(self) -> timedelta:
        """Its ``within``, the longest it waits."""
        return self.within or timedelta(0)

    def to_data(self) -> dict[str, JsonValue]:
        """This step as the file writes it."""
        data: dict[str, JsonValue] = {"expect": self.expect.to_data()}
        if self.within is not None:
            data["within"] = format_duration(self.within)
        return self._with_user(data)
