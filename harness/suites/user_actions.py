"""What a simulated user may do on their turn, and how a model's answer is read as one action.

The model that plays the user answers by calling one tool, ``act``, whose
input is one action: ``say`` (one message, or a burst of fragments), ``tap``
(a reply button or list row on the screen), ``send_media`` (one of the files
the scenario lists), ``wait`` (a silence on the virtual clock) or ``done``
(the goal is met, or the user gives up). :func:`parse_action` reads the
answer strictly: anything else is an :class:`~harness.exceptions.LLMError`
that says what was wrong, never a guess.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from harness.exceptions import LLMError
from harness.llm import LLMResponse

__all__ = [
    "ACT_TOOL",
    "Done",
    "SayAction",
    "SendMedia",
    "TapAction",
    "UserAction",
    "WaitAction",
    "act_tool",
    "parse_action",
]

#: The one tool the simulated user's model is offered, and made to call.
ACT_TOOL: Final = "act"
#: The most fragments one burst may hold.
MOST_FRAGMENTS: Final = 5


class _Action(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Why the user does this, in a few words (shown in reports, never sent).
    thought: str = ""
    #: How many items of the agenda the user has got across, counting this action.
    covered: Annotated[int, Field(ge=0)] | None = None


class SayAction(_Action):
    """Type one message, or a burst of short fragments sent one after another."""

    action: Literal["say"]
    messages: tuple[Annotated[str, Field(min_length=1, max_length=4096)], ...] = Field(
        min_length=1, max_length=MOST_FRAGMENTS
    )


class TapAction(_Action):
    """Tap a reply button or list row on the screen, by its id or title."""

    action: Literal["tap"]
    choice: Annotated[str, Field(min_length=1)]


class SendMedia(_Action):
    """Send one of the scenario's files (a photo, a voice note ...), with a caption."""

    action: Literal["send_media"]
    file: Annotated[str, Field(min_length=1)]
    caption: str = ""


class WaitAction(_Action):
    """Go quiet for a while (virtual time), then look at the phone again."""

    action: Literal["wait"]
    duration: Annotated[str, Field(min_length=1)]


class Done(_Action):
    """Stop: the goal is met, or the user gives up."""

    action: Literal["done"]
    outcome: Literal["goal_met", "gave_up"]


#: One action of the simulated user, told apart by ``action``.
UserAction: TypeAlias = Annotated[
    SayAction | TapAction | SendMedia | WaitAction | Done, Field(discriminator="action")
]
_ADAPTER: Final[TypeAdapter[UserAction]] = TypeAdapter(UserAction)


def act_tool() -> dict[str, Any]:
    """The ``act`` tool in the Messages API's shape."""
    return {
        "name": ACT_TOOL,
        "description": (
            "Do one thing on your phone: say (one message, or several short fragments sent "
            "one after another), tap a button or list row you can see, send one of your "
            "files, wait (go quiet for a while), or done (your goal is met, or you give up)."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ["say", "tap", "send_media", "wait", "done"]},
                "thought": {"type": "string", "description": "Why, in a few words."},
                "messages": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": 1,
                    "maxItems": MOST_FRAGMENTS,
                    "description": "say: what you type; several items are sent as fragments.",
                },
                "choice": {"type": "string", "description": "tap: the button's or row's title."},
                "file": {"type": "string", "description": "send_media: one of your files."},
                "caption": {"type": "string", "description": "send_media: a caption, if any."},
                "duration": {
                    "type": "string",
                    "description": "wait: how long you stay quiet, such as 2h or 1d.",
                },
                "outcome": {"type": "string", "enum": ["goal_met", "gave_up"]},
                "covered": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "How many items of your agenda you have got across so far, "
                    "counting this action.",
                },
            },
            "required": ["action", "thought"],
            "additionalProperties": False,
        },
    }


def parse_action(response: LLMResponse) -> SayAction | TapAction | SendMedia | WaitAction | Done:
    """The one ``act`` call in ``response``, validated; :class:`LLMError` saying why otherwise."""
    uses = [use for use in response.tool_uses if use.name == ACT_TOOL]
    if len(uses) != 1:
        said = response.text.strip()
        shown = f"; it wrote {said[:120]!r}" if said else ""
        raise LLMError(
            f"the simulated user's model must call the {ACT_TOOL} tool once, "
            f"it called it {len(uses)} times{shown}"
        )
    try:
        return _ADAPTER.validate_python(uses[0].input)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "input"
        raise LLMError(
            f"the simulated user's model answered a bad {ACT_TOOL} call: {where}: {first['msg']}"
        ) from None
