"""The ``simulate`` step: for a stretch of the scenario, a language model plays the user.

::

    - simulate:
        persona: Rosa, 68, polite but unsure of chat apps; uses a wheelchair
        goal: book a step-free table for friday evening
        language: en                  # default en
        max_turns: 12                 # the user acts at most this often (default 10)
        stop_when: {tool_called: book_appointment}   # any expectation; ends the stretch
        agenda:                       # what the user means to get across, in order
          - hi, um, I was wondering about a table
          - {media: photos/ramp.jpg, caption: "is this your entrance?"}
        behaviour:
          fragments: 0.5              # chance a message goes out as a burst of fragments
          typos: 0.1                  # chance a message has a typo
          taps: 0.9                   # chance to tap a fitting button instead of typing
          silences: {chance: 0.3, length: 1d, at_most: 1}   # or a chance alone
          media: [photos/ramp.jpg]    # files the user may send (relative to the scenario)
          change_mind: {chance: 0.2, say: ["actually, can we make it 8pm?"]}
      as: Rosa                        # optional, as on every user step

The stretch reads the agent's messages as the user's phone shows them and
answers through the same actions the scripted steps use (a say or a burst,
a tap, a media file, a wait on the virtual clock): see
:mod:`harness.simulation`. The models are frozen and refuse unknown fields,
so a typo is an error naming the file, the line and the field.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any, ClassVar, Final, TypeAlias

from pydantic import BeforeValidator, Field, JsonValue, StrictInt, model_validator

from harness.durations import format_duration
from harness.suites.steps import Duration, Expectation, ScenarioPart, UserStep
from harness.suites.yamlpos import LocatedError, describe

__all__ = [
    "DEFAULT_USER_MODEL",
    "AgendaItem",
    "Behaviour",
    "ChangeMind",
    "Silences",
    "SimulateStep",
    "Simulation",
]

#: The model that plays the user when the step names none.
DEFAULT_USER_MODEL: Final = "claude-sonnet-4-6"
#: The most turns one stretch may take.
MOST_TURNS: Final = 100
_DAY: Final = timedelta(days=1)

#: A probability: 0 never, 1 always.
Chance: TypeAlias = Annotated[float, Field(ge=0.0, le=1.0)]
_Text: TypeAlias = Annotated[str, Field(min_length=1)]


def _chance_alone(value: object) -> object:
    """``silences: 0.3`` is ``silences: {chance: 0.3}``."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return {"chance": value}
    return value


class Silences(ScenarioPart):
    """Long silences: the user goes quiet for ``length`` of virtual time before answering."""

    chance: Chance = Field(default=0.0, description="Chance, each turn, of a silence.")
    length: Duration = Field(
        default=_DAY, description="How long a silence lasts.", json_schema_extra={"default": "1d"}
    )
    at_most: Annotated[StrictInt, Field(ge=0)] = Field(
        default=1, description="How many silences a stretch may hold."
    )


class ChangeMind(ScenarioPart):
    """The user changes their mind when asked to confirm, saying one of ``say``."""

    chance: Chance = Field(default=0.0, description="Chance of changing their mind, once.")
    say: tuple[_Text, ...] = Field(
        default=("hmm wait, actually can we change that?",),
        min_length=1,
        description="What the user may say when they change their mind.",
    )


class Behaviour(ScenarioPart):
    """The bounds within which the simulated user writes the way people on WhatsApp do."""

    fragments: Chance = Field(
        default=0.0, description="Chance a message goes out as a burst of short fragments."
    )
    typos: Chance = Field(default=0.0, description="Chance a message has a typo.")
    taps: Chance = Field(
        default=1.0, description="Chance of tapping a fitting button or list row, not typing it."
    )
    silences: Annotated[
        Silences, BeforeValidator(_chance_alone, json_schema_input_type=Chance | Silences)
    ] = Field(default_factory=Silences, description="Long silences on the virtual clock.")
    media: tuple[_Text, ...] = Field(
        default=(), description="Files the user may send, relative to the scenario file."
    )
    change_mind: Annotated[
        ChangeMind, BeforeValidator(_chance_alone, json_schema_input_type=Chance | ChangeMind)
    ] = Field(default_factory=ChangeMind, description="Changing one's mind when asked to confirm.")

    def to_data(self) -> dict[str, JsonValue]:
        """What differs from the defaults, in the file's shape."""
        return _changed(self, Behaviour())


def _agenda_item(value: object) -> object:
    if isinstance(value, str):
        return {"say": value}
    if isinstance(value, dict) and "media" not in value and "say" not in value:
        raise ValueError(f"expected a text or {{media: file, caption: ...}}, got {describe(value)}")
    return value


class AgendaItem(ScenarioPart):
    """One thing the user means to get across: a text, or a file to send (with a caption)."""

    say: _Text | None = None
    media: _Text | None = None
    caption: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: object) -> object:
        return _agenda_item(value)

    @model_validator(mode="after")
    def _one(self) -> AgendaItem:
        if (self.say is None) == (self.media is None):
            raise ValueError("an agenda item is a text or {media: file, caption: ...}, not both")
        if self.caption is not None and self.media is None:
            raise LocatedError("a caption goes with media", ("caption",))
        return self

    def to_data(self) -> JsonValue:
        """A text alone, or the media mapping."""
        if self.say is not None:
            return self.say
        data: dict[str, JsonValue] = {"media": self.media}
        if self.caption is not None:
            data["caption"] = self.caption
        return data


class Simulation(ScenarioPart):
    """Who the simulated user is, what they want, and the bounds of how they write."""

    persona: _Text = Field(description="Who the user is, in a sentence or two.")
    goal: _Text = Field(description="What the user wants from the conversation.")
    language: _Text = Field(default="en", description="The language the user writes in.")
    max_turns: Annotated[StrictInt, Field(ge=1, le=MOST_TURNS)] = Field(
        default=10, description="The most times the user acts in this stretch."
    )
    stop_when: Expectation | None = Field(
        default=None,
        description="Ends the stretch once it holds over what the agent did in it; "
        "a stretch that ends without it holding fails.",
    )
    agenda: tuple[
        Annotated[
            AgendaItem, BeforeValidator(_agenda_item, json_schema_input_type=_Text | AgendaItem)
        ],
        ...,
    ] = Field(default=(), description="What the user means to get across, in order.")
    behaviour: Behaviour = Field(default_factory=Behaviour)
    model: _Text = Field(
        default=DEFAULT_USER_MODEL, description="The model that plays the user (when live)."
    )

    @model_validator(mode="after")
    def _media_listed(self) -> Simulation:
        for index, item in enumerate(self.agenda):
            if item.media is not None and item.media not in self.behaviour.media:
                listed = ", ".join(self.behaviour.media) or "none"
                message = (
                    f"'{item.media}' is not among behaviour.media (listed: {listed}); "
                    "list every file the user may send there"
                )
                raise LocatedError(message, ("agenda", index, "media"))
        return self

    def to_data(self) -> dict[str, JsonValue]:
        """This simulation as the file writes it, defaults left out."""
        data: dict[str, JsonValue] = {"persona": self.persona, "goal": self.goal}
        if self.language != "en":
            data["language"] = self.language
        if self.max_turns != 10:
            data["max_turns"] = self.max_turns
        if self.stop_when is not None:
            data["stop_when"] = self.stop_when.to_data()
        if self.agenda:
            data["agenda"] = [item.to_data() for item in self.agenda]
        behaviour = self.behaviour.to_data()
        if behaviour:
            data["behaviour"] = behaviour
        if self.model != DEFAULT_USER_MODEL:
            data["model"] = self.model
        return data


class SimulateStep(UserStep):
    """A stretch in which a language model plays the acting user, until a stop or a limit."""

    action: ClassVar[str] = "simulate"
    simulate: Simulation

    @property
    def time_taken(self) -> timedelta:
        """The silences the stretch may hold (the rest is counted when it happens)."""
        silences = self.simulate.behaviour.silences
        try:
            return silences.length * silences.at_most
        except OverflowError:  # longer than any clock keeps
            return timedelta.max

    def to_data(self) -> dict[str, JsonValue]:
        """This step as the file writes it."""
        return self._with_user({"simulate": self.simulate.to_data()})


def _changed(model: ScenarioPart, default: ScenarioPart) -> dict[str, JsonValue]:
    """The fields of ``model`` that differ from ``default``, as JSON-shaped data."""
    out: dict[str, JsonValue] = {}
    for name in type(model).model_fields:
        value: Any = getattr(model, name)
        if value == getattr(default, name):
            continue
        if isinstance(value, ScenarioPart):
            out[name] = _changed(value, type(value)())
        elif isinstance(value, timedelta):
            out[name] = format_duration(value)
        elif isinstance(value, tuple):
            out[name] = list(value)
        else:
            out[name] = value
    return out
