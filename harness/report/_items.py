"""What the HTML report draws for a conversation: bubbles, cards, chips, dividers, turns.

Plain data, filled in by :mod:`harness.report._chat` and drawn by the
template; each item names its ``kind`` so the template can tell them apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar, TypeAlias

from harness.report._content import Button, ListSection
from harness.report.causes import Cause
from harness.results import ScenarioResult

__all__ = [
    "Bubble",
    "Chip",
    "Divider",
    "Item",
    "Note",
    "ScenarioView",
    "Ticks",
    "ToolCard",
    "TurnBlock",
]


@dataclass
class Chip:
    """A small label: a channel fault on a bubble, a receipt, a model call."""

    text: str
    kind: str = "info"
    fault: str = ""
    title: str = ""


@dataclass
class Ticks:
    """The delivery state of a sent message, as WhatsApp draws it."""

    state: str
    symbol: str
    label: str = ""
    title: str = ""


@dataclass
class Bubble:
    """A message in the chat: a user's (``in``) or the agent's (``out``)."""

    kind: ClassVar[str] = "bubble"
    direction: str
    at: datetime
    event: int
    text: str = ""
    label: str = ""
    header: str = ""
    footer: str = ""
    sender: str = ""
    buttons: list[Button] = field(default_factory=list)
    list_button: str = ""
    sections: list[ListSection] = field(default_factory=list)
    ticks: Ticks | None = None
    error: str = ""
    chips: list[Chip] = field(default_factory=list)
    duplicate: bool = False
    template: bool = False
    flagged: bool = False


@dataclass
class ToolCard:
    """A tool call, drawn inline as a small monospace card."""

    kind: ClassVar[str] = "tool"
    at: datetime
    event: int
    name: str
    args: str
    result: str
    error: str = ""
    side_effect: bool = False
    source: str = "live"
    flagged: bool = False


@dataclass
class Note:
    """A centred tiny chip for something that is not a message (typing, a model call)."""

    kind: ClassVar[str] = "note"
    at: datetime
    event: int
    chip: Chip
    flagged: bool = False


@dataclass
class Divider:
    """A centred line across the chat: a new date, or virtual time jumping ahead."""

    kind: ClassVar[str] = "divider"
    style: str
    text: str
    title: str = ""
    at: datetime | None = None


@dataclass
class TurnBlock:
    """One turn: the user's burst, what the agent did, and the causes of failure found there.

    A cause sits at the turn of the violation that names it; what follows
    from it is drawn inside it, wherever that happened.
    """

    kind: ClassVar[str] = "turn"
    index: int
    user: str
    items: list[Item] = field(default_factory=list)
    causes: list[Cause] = field(default_factory=list)

    @property
    def number(self) -> int:
        """The turn's number as people count it (and as violation headlines say it)."""
        return self.index + 1


Item: TypeAlias = Bubble | ToolCard | Note | Divider | TurnBlock


@dataclass
class ScenarioView:
    """Everything the report shows about one scenario.

    ``causes`` are all of its causes of failure, the first first (the page
    lists their headlines before the chat); ``top_causes`` those drawn above
    the chat because they belong to no turn of it.
    """

    anchor: str
    result: ScenarioResult
    items: list[Item]
    causes: list[Cause]
    top_causes: list[Cause]
    faults: list[str]

    def turn_anchor(self, cause: Cause) -> str | None:
        """The id of the turn a cause is drawn at, if it is drawn at one."""
        if any(top is cause for top in self.top_causes) or cause.lead.turn is None:
            return None
        return f"{self.anchor}-turn-{cause.lead.turn + 1}"

    @property
    def failing(self) -> bool:
        """True when the scenario failed or could not be run (a skipped one is neither)."""
        return self.result.status in ("failed", "error")
