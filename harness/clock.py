"""Clocks: real time, virtual time that jumps, and the skew applied at replay.

Everything in the harness that waits or reads the time takes a :class:`Clock`
through its constructor. :class:`SystemClock` is real time.
:class:`VirtualClock` never waits: a sleeper registers a deadline and is woken
when virtual time reaches it, so a 26-hour conversation replays in
milliseconds.

Who moves virtual time when every task is asleep? By default, whoever owns
the clock: a runner or test calls :meth:`VirtualClock.advance` (or the
``async`` :meth:`VirtualClock.run_until`, which also lets each woken task run
before moving on). With ``auto_advance=True`` the clock moves itself: a
driver task waits until the event loop has nothing else ready to run, then
jumps to the earliest pending deadline and wakes the sleepers due there.
Sleepers wake in deadline order, ties in the order ``sleep`` was called, and
each sees :meth:`~VirtualClock.now` equal to its own deadline. Work the loop
cannot see (a request to a remote server, a worker thread) must be wrapped
in :meth:`VirtualClock.hold` so the clock does not jump while it is in
flight.

Skew is a pure transform of a recorded timeline (:class:`Skew`, built from
:class:`Shift`, :class:`Scale` and :class:`AgentOffset`, or parsed by
:func:`parse_skew`); :class:`OffsetClock` is the agent's skewed view of a
clock; :func:`wall_clock_from` makes in-process code that reads
``datetime.now()`` or ``time.time()`` see a virtual clock, through freezegun.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Final, Protocol, runtime_checkable

from freezegun import freeze_time

from harness.exceptions import ClockError, ConfigError
from harness.trace import ClockJump

__all__ = [
    "DEFAULT_START",
    "AgentOffset",
    "Clock",
    "JumpListener",
    "ObservableClock",
    "OffsetClock",
    "Scale",
    "Shift",
    "Skew",
    "SystemClock",
    "VirtualClock",
    "format_duration",
    "hold",
    "parse_duration",
    "parse_skew",
    "wall_clock_from",
]

#: Where a :class:`VirtualClock` starts unless told otherwise, so runs are reproducible.
DEFAULT_START: Final = datetime(2026, 1, 1, tzinfo=UTC)

#: Called with every jump a clock makes (the trace's own event type).
JumpListener = Callable[[ClockJump], None]

# Settling: how many event-loop rounds the auto-advance driver gives other
# tasks. On loops that expose their ready queue (CPython's) the driver stops
# as soon as it is empty; elsewhere it waits a fixed number of rounds.
_FALLBACK_ROUNDS: Final = 64
# A task that spins on sleep(0) forever would keep the loop busy; past this
# many rounds the driver moves time anyway rather than hang.
_MAX_ROUNDS: Final = 10_000


@runtime_checkable
class Clock(Protocol):
    """What the harness needs from time: read it, and wait on it."""

    def now(self) -> datetime:
        """The current instant, timezone-aware, in UTC."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` on this clock; zero or negative only yields to the loop."""
        ...


@runtime_checkable
class ObservableClock(Clock, Protocol):
    """A clock that reports its jumps, so others (freezegun, the trace) can follow it."""

    def add_listener(self, listener: JumpListener) -> Callable[[], None]:
        """Call ``listener`` on every jump; returns a function that removes it."""
        ...


def _seconds(seconds: float) -> float:
    value = float(seconds)
    if not math.isfinite(value):
        raise ClockError(f"{seconds!r} is not a finite number of seconds")
    return value


def _as_delta(amount: float | timedelta) -> timedelta:
    if isinstance(amount, timedelta):
        return amount
    try:
        return timedelta(seconds=_seconds(amount))
    except OverflowError:
        raise ClockError(f"{amount!r} seconds is too long for a clock") from None


def _aware(when: datetime, what: str) -> datetime:
    if when.tzinfo is None or when.utcoffset() is None:
        raise ClockError(f"{what} must be timezone-aware, got naive {when.isoformat()}")
    return when.astimezone(UTC)


class SystemClock:
    """Real time: ``datetime.now(UTC)`` and ``asyncio.sleep``."""

    def now(self) -> datetime:
        """The real current instant in UTC."""
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of real time (at least one trip through the event loop)."""
        await asyncio.sleep(max(_seconds(seconds), 0.0))

    def __repr__(self) -> str:
        return "SystemClock()"


@dataclass(order=True)
class _Sleeper:
    deadline: datetime
    seq: int
    future: asyncio.Future[None] = field(compare=False)


class VirtualClock:
    """Time that only moves when told to (or, with ``auto_advance``, when all are asleep).

    ``jumps`` records every move as a trace :class:`~harness.trace.ClockJump`;
    ``on_jump`` and :meth:`add_listener` are called with each as it happens.
    Not thread-safe: use it from one event loop's thread.
    """

    def __init__(
        self,
        start: datetime | None = None,
        *,
        auto_advance: bool = False,
        on_jump: JumpListener | None = None,
    ) -> None:
        self._now = DEFAULT_START if start is None else _aware(start, "start")
        self._auto_advance = auto_advance
        self._sleepers: list[_Sleeper] = []  # a heap: deadline, then order of sleep()
        self._order = itertools.count()
        self._listeners: list[JumpListener] = [] if on_jump is None else [on_jump]
        self._holds = 0
        self._released: asyncio.Future[None] | None = None
        self._driver: asyncio.Task[None] | None = None
        #: Every jump so far, oldest first.
        self.jumps: list[ClockJump] = []

    def __repr__(self) -> str:
        return f"VirtualClock(now={self._now.isoformat()}, sleeping={len(self._sleepers)})"

    @property
    def auto_advance(self) -> bool:
        """Whether the clock jumps by itself when every task is asleep."""
        return self._auto_advance

    @property
    def sleeping(self) -> int:
        """How many sleepers are waiting for their deadline."""
        return len(self._sleepers)

    @property
    def next_deadline(self) -> datetime | None:
        """The earliest deadline a sleeper is waiting for, if any."""
        return self._sleepers[0].deadline if self._sleepers else None

    def now(self) -> datetime:
        """The current virtual instant."""
        return self._now

    def add_listener(self, listener: JumpListener) -> Callable[[], None]:
        """Call ``listener`` with each future jump; returns a function that removes it."""
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    def advance(self, amount: float | timedelta, *, reason: str = "advance") -> datetime:
        """Move time forward by ``amount`` at once and wake every sleeper now due.

        Woken sleepers resume (in deadline order) once the caller yields, and
        all see the new time; :meth:`advance_async` lets each see its own
        deadline instead.
        """
        delta = _as_delta(amount)
        if delta < timedelta(0):
            raise ClockError(f"can't advance a clock by a negative amount ({amount!r})")
        self._move(self._later(delta), reason)
        self._wake_due()
        return self._now

    def set(self, when: datetime, *, reason: str = "set") -> datetime:
        """Move time forward to ``when``; moving it backwards raises :class:`ClockError`."""
        when = _aware(when, "the new time")
        if when < self._now:
            raise ClockError(
                f"can't set the clock back from {self._now.isoformat()} to {when.isoformat()}"
            )
        self._move(when, reason)
        self._wake_due()
        return self._now

    async def advance_async(
        self, amount: float | timedelta, *, reason: str = "advance"
    ) -> datetime:
        """Move time forward by ``amount`` step by step; see :meth:`run_until`."""
        delta = _as_delta(amount)
        if delta < timedelta(0):
            raise ClockError(f"can't advance a clock by a negative amount ({amount!r})")
        return await self.run_until(self._later(delta), reason=reason)

    async def run_until(self, deadline: datetime, *, reason: str = "advance") -> datetime:
        """Move time to ``deadline``, stopping at each sleeper's deadline on the way.

        At each stop the sleepers due there wake and run until the event loop
        is idle again, so they see ``now()`` equal to their own deadline and
        anything they schedule before ``deadline`` is honoured too.
        """
        deadline = _aware(deadline, "deadline")
        if deadline < self._now:
            raise ClockError(
                f"can't run the clock back from {self._now.isoformat()} to {deadline.isoformat()}"
            )
        await self._settle()
        while self._sleepers and self._sleepers[0].deadline <= deadline:
            self._move(max(self._sleepers[0].deadline, self._now), reason)
            self._wake_due()
            await self._settle()
        # In auto-advance mode the driver may already have gone further.
        self._move(max(deadline, self._now), reason)
        return self._now

    async def sleep(self, seconds: float) -> None:
        """Wait until virtual time has moved ``seconds`` forward, without waiting in real time.

        Zero, negative and sub-microsecond durations only yield to the event
        loop once. Cancelling the sleeping task removes its deadline.
        """
        deadline = self._later(_as_delta(max(_seconds(seconds), 0.0)))
        if deadline <= self._now:
            await asyncio.sleep(0)
            return
        loop = asyncio.get_running_loop()
        sleeper = _Sleeper(deadline, next(self._order), loop.create_future())
        heapq.heappush(self._sleepers, sleeper)
        if self._auto_advance:
            self._start_driver(loop)
        try:
            await sleeper.future
        finally:
            self._forget(sleeper)

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Keep auto-advance from jumping while work the event loop can't see is in flight.

        Use it around a request to a remote server or a call into a worker
        thread; holds nest, and explicit :meth:`advance` ignores them.
        """
        self._holds += 1
        try:
            yield
        finally:
            self._holds -= 1
            if not self._holds and self._released is not None and not self._released.done():
                self._released.set_result(None)

    # -- internals ---------------------------------------------------------

    def _later(self, delta: timedelta) -> datetime:
        try:
            return self._now + delta
        except OverflowError:
            raise ClockError(
                f"{delta} from {self._now.isoformat()} is past the end of time"
            ) from None

    def _move(self, to: datetime, reason: str) -> None:
        if to <= self._now:
            return
        jump = ClockJump(at=to, previous=self._now, reason=reason)
        self._now = to
        self.jumps.append(jump)
        for listener in tuple(self._listeners):
            listener(jump)

    def _wake_due(self) -> None:
        # Resolving the futures in heap order queues the sleepers' wake-ups in
        # that order, and the event loop runs its ready queue first in, first out.
        while self._sleepers and self._sleepers[0].deadline <= self._now:
            sleeper = heapq.heappop(self._sleepers)
            if not sleeper.future.done():
                sleeper.future.set_result(None)

    def _forget(self, sleeper: _Sleeper) -> None:
        for i, pending in enumerate(self._sleepers):
            if pending is sleeper:
                self._sleepers.pop(i)
                heapq.heapify(self._sleepers)
                return

    async def _settle(self) -> None:
        """Yield until every other task in the loop is blocked (or give up after many rounds)."""
        loop = asyncio.get_running_loop()
        # CPython's loops keep runnable callbacks in `_ready`; reading it is the
        # only way to know the loop is idle. Other loops get a fixed number of rounds.
        ready = getattr(loop, "_ready", None)
        rounds = _MAX_ROUNDS if ready is not None else _FALLBACK_ROUNDS
        for _ in range(rounds):
            await asyncio.sleep(0)
            if ready is not None and not ready:
                return

    def _start_driver(self, loop: asyncio.AbstractEventLoop) -> None:
        driver = self._driver
        if driver is None or driver.done() or driver.get_loop() is not loop:
            self._driver = loop.create_task(self._drive(), name="VirtualClock auto-advance")

    async def _drive(self) -> None:
        while self._sleepers:
            await self._settle()
            if self._holds:
                self._released = asyncio.get_running_loop().create_future()
                await self._released
                continue
            if self._sleepers:
                self._move(self._sleepers[0].deadline, "auto-advance")
                self._wake_due()


class OffsetClock:
    """Another clock's time plus a fixed offset: the agent's view when its clock is skewed.

    Durations are not skewed: ``sleep`` waits on the base clock.
    """

    def __init__(self, base: Clock, offset: timedelta | float | str) -> None:
        self.base = base
        self.offset = parse_duration(offset)

    def __repr__(self) -> str:
        return f"OffsetClock({self.base!r}, {format_duration(self.offset)!r})"

    def now(self) -> datetime:
        """The base clock's instant plus the offset."""
        return self.base.now() + self.offset

    async def sleep(self, seconds: float) -> None:
        """Wait on the base clock."""
        await self.base.sleep(seconds)

    def add_listener(self, listener: JumpListener) -> Callable[[], None]:
        """Report the base clock's jumps, shifted by the offset."""
        if not isinstance(self.base, ObservableClock):
            raise ClockError(f"{self.base!r} does not report its jumps, so nothing can follow it")

        def shifted(jump: ClockJump) -> None:
            listener(
                ClockJump(
                    at=jump.at + self.offset,
                    previous=jump.previous + self.offset,
                    reason=jump.reason,
                )
            )

        return self.base.add_listener(shifted)


def hold(clock: Clock) -> AbstractContextManager[None]:
    """:meth:`VirtualClock.hold` for any clock: a no-op unless a virtual clock is underneath."""
    while isinstance(clock, OffsetClock):
        clock = clock.base
    if isinstance(clock, VirtualClock):
        return clock.hold()
    return nullcontext()


# -- durations -------------------------------------------------------------

_UNITS: Final = {"d": "days", "h": "hours", "m": "minutes", "s": "seconds", "ms": "milliseconds"}
_UNIT_RANK: Final = {unit: rank for rank, unit in enumerate(_UNITS)}
_NUMBER: Final = r"(?:\d+(?:\.\d+)?|\.\d+)"
_DURATION_PART: Final = re.compile(rf"({_NUMBER})(ms|[dhms])")
_DURATION: Final = re.compile(rf"([+-]?)((?:{_NUMBER}(?:ms|[dhms]))+)")
_DURATION_HINT: Final = "a number with a unit (d, h, m, s, ms), e.g. 90s, 5m, 1d2h, -5m or 1.5h"


def parse_duration(value: str | float | timedelta) -> timedelta:
    """Read a duration such as ``"25h"``, ``"90s"``, ``"1d2h"``, ``"-5m"`` or ``"1.5h"``.

    Units go from largest to smallest, each at most once; a sign may lead.
    Numbers are taken as seconds and a ``timedelta`` as itself, so scenario
    files may write either. Anything else raises :class:`ConfigError`.
    """
    if isinstance(value, timedelta):
        return value
    try:
        if isinstance(value, bool):
            raise ConfigError(f"expected {_DURATION_HINT}")
        if isinstance(value, int | float):
            if not math.isfinite(value):
                raise ConfigError("it must be finite")
            return timedelta(seconds=value)
        return _duration_text(value.strip())
    except OverflowError:
        raise ConfigError(f"bad duration {value!r}: too long") from None
    except ConfigError as exc:
        raise ConfigError(f"bad duration {value!r}: {exc}") from None


def _duration_text(text: str) -> timedelta:
    if text in ("0", "+0", "-0"):
        return timedelta(0)
    match = _DURATION.fullmatch(text)
    if match is None:
        raise ConfigError(f"expected {_DURATION_HINT}")
    sign, body = match.groups()
    total = timedelta(0)
    last_rank = -1
    for number, unit in _DURATION_PART.findall(body):
        if _UNIT_RANK[unit] <= last_rank:
            raise ConfigError("units must go from largest to smallest, each once")
        last_rank = _UNIT_RANK[unit]
        try:
            total += timedelta(**{_UNITS[unit]: float(number)})
        except OverflowError:
            raise ConfigError("the duration is too long") from None
    return -total if sign == "-" else total


def format_duration(delta: timedelta, *, plus: bool = False) -> str:
    """Write a duration the way :func:`parse_duration` reads it (``"1d2h"``, ``"-5m"``).

    ``plus`` puts a ``+`` before positive durations, as skew specs do.
    """
    if not delta:
        return "0s"
    sign = "-" if delta < timedelta(0) else ("+" if plus else "")
    delta = abs(delta)
    hours, rest = divmod(delta.seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [f"{n}{unit}" for n, unit in ((delta.days, "d"), (hours, "h"), (minutes, "m")) if n]
    if delta.microseconds:
        parts.append(f"{seconds}.{delta.microseconds:06d}".rstrip("0") + "s")
    elif seconds:
        parts.append(f"{seconds}s")
    return sign + "".join(parts)


# -- skew --------------------------------------------------------------------


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
                transforms.append(AgentOffset(_duration_text(value)))
            else:
                raise ConfigError(
                    f"unknown transform {name!r} (expected shift, scale or agent-offset)"
                )
        except ConfigError as exc:
            raise ConfigError(f"bad skew part {part!r}: {exc}") from None
    return Skew(tuple(transforms))


def _parse_shift(value: str) -> Shift:
    amount, at, where = value.partition("@")
    delta = _duration_text(amount.strip())
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


# -- the process's wall clock ------------------------------------------------


class _WallClockPatch:
    """freezegun, started once and moved along with one clock; shared by nested users."""

    def __init__(self, clock: ObservableClock, ignore: Sequence[str]) -> None:
        self.clock = clock
        self.depth = 0
        self._freezer = freeze_time(clock.now(), ignore=list(ignore), real_asyncio=True)
        factory = self._freezer.start()
        try:
            self._remove = clock.add_listener(lambda _jump: factory.move_to(clock.now()))
        except BaseException:
            self._freezer.stop()
            raise

    def stop(self) -> None:
        try:
            self._remove()
        finally:
            self._freezer.stop()


# freezegun patches the whole process, so at most one clock can drive it.
_wall_clock: list[_WallClockPatch] = []


@contextmanager
def wall_clock_from(clock: ObservableClock, *, ignore: Sequence[str] = ()) -> Iterator[None]:
    """Make in-process code read its time from ``clock`` while inside.

    ``datetime.now()``, ``datetime.utcnow()``, ``date.today()``,
    ``time.time()`` and ``time.monotonic()`` return the clock's current time
    and follow it as it jumps, so an agent called in-process sees virtual
    time (naive readings such as ``datetime.now()`` are in UTC). The asyncio
    event loop keeps real monotonic time (freezegun's ``real_asyncio``), so
    ``asyncio.sleep`` and timeouts still work; ``loop.time()`` is the way to
    measure real durations inside.
    Everything is restored on exit, also after an exception.

    The patch is process-wide: it may be nested for the same clock (the last
    exit restores), but a second clock raises :class:`ClockError`. Modules
    named in ``ignore`` (prefixes) keep reading real ``time.time()``.
    """
    if _wall_clock:
        patch = _wall_clock[0]
        if patch.clock is not clock:
            raise ClockError(
                f"the process's wall clock already follows {patch.clock!r}; "
                f"it can't follow {clock!r} too"
            )
    else:
        patch = _WallClockPatch(clock, ignore)
        _wall_clock.append(patch)
    patch.depth += 1
    try:
        yield
    finally:
        patch.depth -= 1
        if not patch.depth:
            _wall_clock.remove(patch)
            patch.stop()
