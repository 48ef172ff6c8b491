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
- channel faults (:data:`CHANNEL_FAULTS`): during the turn the channel's
  fault profile changes (a ``faults:`` step: duplicated or reordered
  webhooks, a 500 and Meta's retry after the agent took the update, latency,
  late, lost or shuffled statuses, the agent's clock five minutes off the
  channel's), then goes back to the scenario's own.

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
from typing import Literal

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

__all__ = [
    "CHANNEL_FAULTS",
    "FAULT_KINDS",
    "IN_PROCESS_ONLY",
    "Schedule",
    "TurnFaults",
    "TurnSteps",
    "messages_sent",
    "split_turns",
]

#: Faults of the channel's profile a schedule may turn on for one turn, by name: the
#: settings of a ``faults:`` step (see :class:`channels.whatsapp.faults.FaultProfile`).
#: A probability below 1 is still one outcome: the channel's dice are seeded. Delays stay
#: small enough (reordering and jitter under half a second each) that the parts of a
#: burst typed a second apart still come within two seconds of each other: further apart,
#: an agent that waits that long for the rest of a burst may rightly answer twice.
CHANNEL_FAULTS: dict[str, dict[str, JsonValue]] = {
    "duplicate": {"duplicate": 1.0, "duplicate_delay": 1},
    "answer_lost": {"answer_lost": 1.0},
    "reorder": {"reorder": 0.5, "reorder_window": 0.4},
    "latency": {"latency": 1, "jitter": 0.4},
    "status_late": {"status_late": 1.0, "status_late_delay": 90},
    "status_missing": {"status_missing": 1.0},
    "status_out_of_order": {"status_out_of_order": 1.0},
    "skip_delivered": {"skip_delivered": 1.0},
    "skew_behind": {"clock_skew": -300},
    "skew_ahead": {"clock_skew": 300},
}
#: Of those, the ones only an in-process agent can be put through (its clock is the harness's).
IN_PROCESS_ONLY = frozenset({"skew_behind", "skew_ahead"})
#: The kinds of fault a schedule may hold, in the order summaries list them.
FAULT_KINDS = ("jump", "split", "redeliver", *CHANNEL_FAULTS)


@dataclass(frozen=True)
class TurnSteps:
    """Steps of a scenario that belong together: a user step and what follows it."""

    #: The user step that opens the turn (``None`` for steps before the first one).
    opener: UserStep | None
    #: The steps after it, up to the next user step (expects, waits).
    rest: tuple[BaseStep, ...] = ()


def messages_sent(step: UserStep) -> int:
    """How many new messages a user step sends (a redelivery sends none)."""
    if isinstance(step, SayStep):
        return len(step.say)
    if isinstance(step, TapStep | SendStep):
        return 1
    return 0


def split_turns(scenario: Scenario) -> list[TurnSteps]:
    """The scenario's steps grouped into turns; the first may have no user step."""
    turns: list[TurnSteps] = []
    opener: UserStep | None = None
    rest: list[BaseStep] = []
    for step in scenario.steps:
        if isinstance(step, SayStep | TapStep | SendStep | RedeliverStep):
            if opener is not None or rest:
                turns.append(TurnSteps(opener, tuple(rest)))
            opener, rest = step, []
        else:
            rest.append(step)
    turns.append(TurnSteps(opener, tuple(rest)))
    return turns


@dataclass(frozen=True)
class TurnFaults:
    """What the channel does to one turn; the defaults do nothing."""

    #: Virtual time that passes before the turn's user step.
    jump: timedelta | None = None
    #: The message (or burst) the user's ``say`` arrives as, and the time between its parts.
    split: tuple[str, ...] | None = None
    gap: timedelta = timedelta(seconds=1)
    #: The channel's faults during the turn, by name in :data:`CHANNEL_FAULTS`.
    channel: tuple[str, ...] = ()
    #: After the turn: which of the user's messages Meta delivers again (1-based, or
    #: ``last``, which stays the latest whatever the faults before it).
    redeliver: int | Literal["last"] | None = None

    @property
    def kinds(self) -> list[str]:
        """The kinds of fault this turn has, from :data:`FAULT_KINDS`."""
        found = {
            "jump": self.jump is not None,
            "split": self.split is not None,
            "redeliver": self.redeliver is not None,
        }
        return [kind for kind in FAULT_KINDS if found.get(kind) or kind in self.channel]

    @property
    def settings(self) -> dict[str, JsonValue]:
        """The ``faults:`` step's settings for the turn's channel faults (empty: none)."""
        out: dict[str, JsonValue] = {}
        for name in self.channel:
            out.update(CHANNEL_FAULTS[name])
        return out

    def describe(self) -> list[str]:
        """The faults as short phrases (``jump 25h``, ``redeliver message 2``)."""
        out = []
        if self.jump is not None:
            out.append(f"jump {format_duration(self.jump)}")
        if self.split is not None:
            out.append(f"split into {len(self.split)} ({format_duration(self.gap)} apart)")
        out.extend(self.channel)
        if self.redeliver is not None:
            which = "the last message" if self.redeliver == "last" else f"message {self.redeliver}"
            out.append(f"redeliver {which}")
        return out


@dataclass(frozen=True)
class Schedule:
    """One :class:`TurnFaults` per turn of a scenario (see :func:`split_turns`)."""

    turns: tuple[TurnFaults, ...] = field(default_factory=tuple)
    #: Virtual time that passes after the last turn (the agent's timers fire on the way).
    tail: timedelta | None = None

    @property
    def kinds(self) -> Counter[str]:
        """How many faults of each kind the schedule holds."""
        found = Counter(kind for turn in self.turns for kind in turn.kinds)
        if self.tail is not None:
            found["jump"] += 1
        return found

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
        if self.tail is not None:
            parts.append(f"then jump {format_duration(self.tail)}")
        return ", ".join(parts) or "no faults"

    def apply(self, scenario: Scenario, turns: Sequence[TurnSteps] | None = None) -> Scenario:
        """The scenario with these faults written in as explicit steps."""
        turns = split_turns(scenario) if turns is None else turns
        steps: list[BaseStep] = []
        for turn, faults in zip(turns, self.turns, strict=False):
            steps.extend(_turn_steps(turn, faults, scenario.faults))
        for turn in turns[len(self.turns) :]:
            steps.extend(_turn_steps(turn, TurnFaults(), scenario.faults))
        if self.tail is not None:
            steps.append(WaitStep(wait=self.tail))
        data = {name: getattr(scenario, name) for name in type(scenario).model_fields}
        data["steps"] = [step.model_copy(update={"line": None}) for step in steps]
        return Scenario.model_validate(data)


def _turn_steps(
    turn: TurnSteps, faults: TurnFaults, scenario_faults: str | dict[str, JsonValue] | None
) -> list[BaseStep]:
    out: list[BaseStep] = []
    opener = turn.opener
    if faults.jump is not None and opener is not None:
        out.append(WaitStep(wait=faults.jump))
    if faults.channel:
        out.append(FaultsStep(faults=faults.settings))
    if opener is not None:
        if faults.split is not None and isinstance(opener, SayStep) and not opener.reply_to:
            opener = opener.model_copy(update={"say": faults.split, "gap": faults.gap})
        out.append(opener)
    out.extend(turn.rest)
    if faults.channel:
        out.append(FaultsStep(faults=scenario_faults))
    if faults.redeliver is not None and opener is not None:
        out.append(RedeliverStep(redeliver=faults.redeliver, user=opener.user))
    return out
