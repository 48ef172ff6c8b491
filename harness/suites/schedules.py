"""Channel schedules: what the channel does to one scenario's turns, written as plain steps.

``harness explore`` plays a scenario many times, each time under another
schedule: the faults a real channel may throw at the same conversation. A
:class:`Schedule` holds one :class:`TurnFaults` per turn (a user step and the
steps that check it), and :meth:`Schedule.apply` writes them into the
scenario as the explicit steps the scenario format already has:

- ``jump``: virtual time jumps before the turn (``wait: 25h``), as when a user
  comes back a day later; the agent's timers (a follow-up) fire on the way;
- ``split``: a typed message arrives as a burst of fragments (``say: [a, b]``
  with ``gap``), or a burst's messages come at another spacing;
- ``redeliver``: after the turn has been checked, Meta delivers one of the
  user's messages again, byte for byte (``redeliver: 2``);
- ``faults``: during the turn, the channel's fault profile changes
  (a ``faults:`` step: reordered, late or lost statuses, duplicated POSTs,
  retries after a lost answer), then goes back to the scenario's own.

Faults go between turns or into the user's own step, never between a user
step and the ``expect`` that checks it, so what a scenario expects still
holds for an agent that copes with the channel. A schedule with no faults
gives the scenario back unchanged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from pydantic import JsonValue

from harness.durations import format_duration
from harness.suites.scenario import Scenario
from harness.suites.steps import (
    BaseStep,
    FaultsStep,
    RedeliverStep,
    SayStep,
    SendStep,
    TapStep,
    UserStep,
    WaitStep,
)

__all__ = ["FAULT_KINDS", "Schedule", "Turn", "TurnFaults", "split_turns"]

#: The kinds of fault a schedule may hold, in the order summaries list them.
FAULT_KINDS = ("jump", "split", "redeliver", "faults")


@dataclass(frozen=True)
class Turn:
    """Steps of a scenario that belong together: a user step and what follows it."""

    #: The user step that opens the turn (``None`` for steps before the first one).
    opener: UserStep | None
    #: The steps after it, up to the next user step (expects, waits).
    rest: tuple[BaseStep, ...] = ()
    #: How many messages the acting user has sent before this turn (for ``redeliver``).
    sent_before: int = 0


def _sends(step: UserStep) -> int:
    if isinstance(step, SayStep):
        return len(step.say)
    if isinstance(step, TapStep | SendStep):
        return 1
    return 0


def split_turns(scenario: Scenario) -> list[Turn]:
    """The scenario's steps grouped into turns; the first may have no user step."""
    turns: list[Turn] = []
    opener: UserStep | None = None
    rest: list[BaseStep] = []
    sent: Counter[str] = Counter()
    before = 0
    first = scenario.users[0].name
    for step in scenario.steps:
        if isinstance(step, SayStep | TapStep | SendStep | RedeliverStep):
            if opener is not None or rest:
                turns.append(Turn(opener, tuple(rest), before))
            who = step.user or first
            before = sent[who]
            sent[who] += _sends(step)
            opener, rest = step, []
        else:
            rest.append(step)
    turns.append(Turn(opener, tuple(rest), before))
    return turns


@dataclass(frozen=True)
class TurnFaults:
    """What the channel does to one turn; the defaults do nothing."""

    #: Virtual time that passes before the turn's user step.
    jump: timedelta | None = None
    #: The message (or burst) the user's ``say`` arrives as, and the time between its parts.
    split: tuple[str, ...] | None = None
    gap: timedelta = timedelta(seconds=1)
    #: The channel's faults during the turn: a mapping of fault settings.
    faults: dict[str, JsonValue] | None = None
    #: After the turn: which of the user's messages (1-based) Meta delivers again.
    redeliver: int | None = None

    @property
    def kinds(self) -> list[str]:
        """The kinds of fault this turn has, from :data:`FAULT_KINDS`."""
        found = {
            "jump": self.jump is not None,
            "split": self.split is not None,
            "redeliver": self.redeliver is not None,
            "faults": bool(self.faults),
        }
        return [kind for kind in FAULT_KINDS if found[kind]]

    def describe(self) -> list[str]:
        """The faults as short phrases (``jump 25h``, ``redeliver message 2``)."""
        out = []
        if self.jump is not None:
            out.append(f"jump {format_duration(self.jump)}")
        if self.split is not None:
            out.append(f"split into {len(self.split)} ({format_duration(self.gap)} apart)")
        if self.faults:
            out.append("faults " + ", ".join(f"{k}={v}" for k, v in self.faults.items()))
        if self.redeliver is not None:
            out.append(f"redeliver message {self.redeliver}")
        return out


@dataclass(frozen=True)
class Schedule:
    """One :class:`TurnFaults` per turn of a scenario (see :func:`split_turns`)."""

    turns: tuple[TurnFaults, ...] = field(default_factory=tuple)

    @property
    def kinds(self) -> Counter[str]:
        """How many faults of each kind the schedule holds."""
        return Counter(kind for turn in self.turns for kind in turn.kinds)

    @property
    def size(self) -> int:
        """How many faults the schedule holds in all."""
        return sum(self.kinds.values())

    def describe(self) -> str:
        """The faults turn by turn (``turn 2: jump 25h``), or ``no faults``."""
        parts = [
            f"turn {index}: {'; '.join(turn.describe())}"
            for index, turn in enumerate(self.turns, start=1)
            if turn.kinds
        ]
        return ", ".join(parts) or "no faults"

    def apply(self, scenario: Scenario, turns: Sequence[Turn] | None = None) -> Scenario:
        """The scenario with these faults written in as explicit steps."""
        turns = split_turns(scenario) if turns is None else turns
        steps: list[BaseStep] = []
        for turn, faults in zip(turns, self.turns, strict=False):
            steps.extend(_turn_steps(turn, faults, scenario.faults))
        for turn in turns[len(self.turns) :]:
            steps.extend(_turn_steps(turn, TurnFaults(), scenario.faults))
        data = {name: getattr(scenario, name) for name in type(scenario).model_fields}
        data["steps"] = [step.model_copy(update={"line": None}) for step in steps]
        return Scenario.model_validate(data)


def _turn_steps(
    turn: Turn, faults: TurnFaults, scenario_faults: str | dict[str, JsonValue] | None
) -> list[BaseStep]:
    out: list[BaseStep] = []
    opener = turn.opener
    if faults.jump is not None and opener is not None:
        out.append(WaitStep(wait=faults.jump))
    if faults.faults:
        out.append(FaultsStep(faults=dict(faults.faults)))
    if opener is not None:
        if faults.split is not None and isinstance(opener, SayStep):
            opener = opener.model_copy(update={"say": faults.split, "gap": faults.gap})
        out.append(opener)
    out.extend(turn.rest)
    if faults.faults:
        out.append(FaultsStep(faults=scenario_faults if scenario_faults is not None else "none"))
    if faults.redeliver is not None and opener is not None:
        out.append(RedeliverStep(redeliver=faults.redeliver, user=opener.user))
    return out
