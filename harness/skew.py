"""Skew: pure transforms of a recorded timeline, applied when a conversation is replayed.

:class:`Shift` adds a pause from one turn on (``shift=+25h@turn3``),
:class:`Scale` stretches every gap (``scale=10``), :class:`AgentOffset` gives
the agent a clock that runs early or late (``agent-offset=-5m``); a
:class:`Skew` combines them, and :func:`parse_skew` reads the spec the
command line takes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Final

from harness.clock import Clock, OffsetClock
from harness.durations import format_duration, parse_duration_text
from harness.exceptions import ClockError, ConfigError

__all__ = ["REMOTE_AGENT_OFFSET", "AgentOffset", "Scale", "Shift", "Skew", "parse_skew"]

#: Why ``agent-offset`` can't skew an agent at a URL (``shift`` and ``scale`` can: they move
#: the timestamps of what the channel tells it).
REMOTE_AGENT_OFFSET: Final = (
    "--skew agent-offset: an agent at --target-url reads its own machine's clock, which the "
    "replay can't move; skew that clock there (shift and scale move the webhooks' timestamps)"
)


def _timeline(instants: Sequence[datetime]) -> list[datetime]:
    times = list(instants)
    for i, (before, after) in enumerate(pairwise(times), start=1):
        if after < before:
            raise ClockError(
                f"a timeline must not go backwards: instant {i} ({after.isoformat()}) "
                f"is before instant {i - 1} ({before.isoformat()})"
            )
    return times


def _in_order(times: list[datetime]) -> list[datetime]:
    for i in range(1, len(times)):
        times[i] = max(times[i], times[i - 1])
    return times


@dataclass(frozen=True)
class Shift:
    """Add ``delta`` to every instant from one point of a timeline on (a pause before turn 4).

    The point is ``turn``, a turn number counted from 1 and looked up in the
    ``turn_starts`` given to :meth:`apply`, when set; otherwise the instant
    at ``from_index``. A negative shift never pulls an instant before the
    one preceding it: the result is kept in order.
    """

    delta: timedelta
    from_index: int = 0
    turn: int | None = None

    def __post_init__(self) -> None:
        if self.from_index < 0:
            raise ConfigError(f"{self}: the index must not be negative")
        if self.turn is not None and (self.turn < 1 or self.from_index):
            raise ConfigError(f"{self}: turns count from 1, and a shift starts at a turn or index")

    def __str__(self) -> str:
        if self.turn is not None:
            where = f"@turn{self.turn}"
        else:
            where = f"@index{self.from_index}" if self.from_index else ""
        return f"shift={format_duration(self.delta, plus=True)}{where}"

    def start(self, size: int, turn_starts: Sequence[int] | None = None) -> int:
        """The index of the first instant this shift moves, in a timeline of ``size``."""
        if self.turn is None:
            index = self.from_index
        elif turn_starts is None:
            raise ConfigError(f"{self}: the timeline has no turns to count")
        elif self.turn > len(turn_starts):
            raise ConfigError(f"{self}: the timeline has only {len(turn_starts)} turns")
        else:
            index = turn_starts[self.turn - 1]
        if not 0 <= index < size:
            raise ConfigError(f"{self}: the timeline has only {size} instants")
        return index

    def apply(
        self, instants: Sequence[datetime], turn_starts: Sequence[int] | None = None
    ) -> list[datetime]:
        """The timeline with this shift applied, kept in order."""
        times = _timeline(instants)
        if not times:
            return []
        start = self.start(len(times), turn_starts)
        try:
            return _in_order([t + self.delta if i >= start else t for i, t in enumerate(times)])
        except OverflowError:
            raise ClockError(f"{self} moves the timeline past the end of time") from None


@dataclass(frozen=True)
class Scale:
    """Multiply every gap between consecutive instants by ``factor`` (the first one stays)."""

    factor: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.factor) and self.factor > 0):
            raise ConfigError(f"scale={self.factor!r}: the factor must be a positive number")

    def __str__(self) -> str:
        factor = float(self.factor)
        return f"scale={int(factor) if factor.is_integer() else factor!r}"

    def apply(
        self, instants: Sequence[datetime], turn_starts: Sequence[int] | None = None
    ) -> list[datetime]:
        """The timeline with its gaps scaled (``turn_starts`` is accepted and unused)."""
        times = _timeline(instants)
        scaled = times[:1]
        try:
            for before, after in pairwise(times):
                scaled.append(scaled[-1] + (after - before) * self.factor)
        except OverflowError:
            raise ClockError(f"{self} moves the timeline past the end of time") from None
        return scaled


@dataclass(frozen=True)
class AgentOffset:
    """How far the agent's clock is from the channel's: the agent sees channel time + ``delta``."""

    delta: timedelta

    def __str__(self) -> str:
        return f"agent-offset={format_duration(self.delta, plus=True)}"

    def clock(self, channel: Clock) -> OffsetClock:
        """The agent's view of the channel's clock."""
        return OffsetClock(channel, self.delta)


@dataclass(frozen=True)
class Skew:
    """Transforms applied to a recorded conversation at replay; combine them with ``+``.

    Whatever order they are written in, scales stretch the recorded gaps
    first and shifts then add their exact amounts, so ``shift=+25h@turn3``
    is a 25-hour pause even with ``scale=10``. Agent offsets don't move the
    channel's timeline; they give the agent a skewed clock (:meth:`agent_clock`).
    ``str()`` gives back a spec that :func:`parse_skew` reads.
    """

    transforms: tuple[Shift | Scale | AgentOffset, ...] = ()

    def __str__(self) -> str:
        return ",".join(str(t) for t in self.transforms)

    def __add__(self, other: Skew) -> Skew:
        return Skew(self.transforms + other.transforms)

    @property
    def scale(self) -> float:
        """The product of every scale factor."""
        return math.prod(t.factor for t in self.transforms if isinstance(t, Scale))

    @property
    def shifts(self) -> tuple[Shift, ...]:
        """The shifts, in the order given."""
        return tuple(t for t in self.transforms if isinstance(t, Shift))

    @property
    def agent_offset(self) -> timedelta:
        """The total offset of the agent's clock from the channel's."""
        offsets = (t.delta for t in self.transforms if isinstance(t, AgentOffset))
        return sum(offsets, timedelta(0))

    @property
    def is_identity(self) -> bool:
        """True when replaying with this skew changes nothing."""
        return self.scale == 1 and not self.agent_offset and not any(s.delta for s in self.shifts)

    def apply(
        self, instants: Sequence[datetime], turn_starts: Sequence[int] | None = None
    ) -> list[datetime]:
        """The channel's timeline after the skew: scaled, shifted, and still in order.

        ``turn_starts[n - 1]`` is the index of the first instant of turn ``n``;
        shifts written against a turn need it.
        """
        times = _timeline(instants)
        if self.scale != 1:
            times = Scale(self.scale).apply(times)
        for shift in self.shifts:
            times = shift.apply(times, turn_starts)
        return times

    def agent_clock(self, channel: Clock) -> Clock:
        """The clock the agent should see: the channel's, offset when there is an agent offset."""
        offset = self.agent_offset
        return OffsetClock(channel, offset) if offset else channel


_SKEW_HINT: Final = "expected name=value parts such as shift=+25h@turn3, scale=10, agent-offset=-5m"
_SHIFT_AT: Final = re.compile(r"turn(\d+)|index(\d+)")


def parse_skew(spec: str) -> Skew:
    """Read a skew spec such as ``"shift=+25h@turn3,scale=10,agent-offset=-5m"``.

    Parts are comma-separated and may repeat (shifts add up, scales
    multiply, offsets add up). A shift applies from a turn (``@turn3``,
    counted from 1), from an instant (``@index5``, counted from 0), or to the
    whole timeline. An empty spec is no skew. A bad part raises
    :class:`ConfigError` naming it.
    """
    if not spec.strip():
        return Skew()
    transforms: list[Shift | Scale | AgentOffset] = []
    for raw in spec.split(","):
        part = raw.strip()
        name, sep, value = (s.strip() for s in part.partition("="))
        try:
            if not sep or not value:
                raise ConfigError(_SKEW_HINT)
            if name == "shift":
                transforms.append(_parse_shift(value))
            elif name == "scale":
                transforms.append(Scale(_parse_factor(value)))
            elif name in ("agent-offset", "agent_offset"):
                transforms.append(AgentOffset(parse_duration_text(value, signed=True)))
            else:
                raise ConfigError(
                    f"unknown transform {name!r} (expected shift, scale or agent-offset)"
                )
        except ConfigError as exc:
            raise ConfigError(f"bad skew part {part!r}: {exc}") from None
    return Skew(tuple(transforms))


def _parse_shift(value: str) -> Shift:
    amount, at, where = value.partition("@")
    delta = parse_duration_text(amount.strip(), signed=True)
    if not at:
        return Shift(delta)
    match = _SHIFT_AT.fullmatch(where.strip())
    if match is None:
        raise ConfigError(f"a shift starts @turnN (from 1) or @indexN (from 0), not @{where}")
    turn, index = match.groups()
    return Shift(delta, turn=int(turn)) if turn is not None else Shift(delta, int(index))


def _parse_factor(value: str) -> float:
    try:
        factor = float(value)
    except ValueError:
        raise ConfigError(f"{value!r} is not a number") from None
    if not (math.isfinite(factor) and factor > 0):
        raise ConfigError("the factor must be a positive number")
    return factor
