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
each sees :meth:`~VirtualClock.now` equal to its own deadline.

An idle event loop does not mean nothing is happening: a task may be waiting
for a model, a database or another process. Such real work is announced with
:meth:`VirtualClock.hold` (usually through :func:`harness.inflight.busy`,
which the harness's model recorders, its Redis store and its HTTP transports
call for you; the bookkeeping is in ``harness._real_work``), and virtual time
never moves while real work is in flight;
deadlines due later still fire in order once it ends. Work that outlives
``real_work_limit`` real seconds raises :class:`~harness.exceptions.RealWorkTimeout`
naming it, instead of hanging the run. A task that holds the clock and then
sleeps on it is waiting for virtual time, not doing real work, so it does
not keep the clock still.

:class:`OffsetClock` is the agent's skewed view of a clock. Skew transforms
live in :mod:`harness.skew`, durations in :mod:`harness.durations`, and the
patch that makes ``datetime.now()`` follow a virtual clock in
:mod:`harness.wallclock`.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Protocol, runtime_checkable

from harness._real_work import RealWork
from harness.durations import format_duration, parse_duration
from harness.exceptions import ClockError
from harness.trace import ClockJump

__all__ = [
    "DEFAULT_REAL_WORK_LIMIT",
    "DEFAULT_START",
    "Clock",
    "JumpListener",
    "ObservableClock",
    "OffsetClock",
    "SystemClock",
    "VirtualClock",
    "hold",
    "virtual_base",
]

#: Where a :class:`VirtualClock` starts unless told otherwise, so runs are reproducible.
DEFAULT_START: Final = datetime(2026, 1, 1, tzinfo=UTC)

#: How long real work may stay in flight on a virtual clock before the run gives up on it.
DEFAULT_REAL_WORK_LIMIT: Final = 120.0

#: Called with every jump a clock makes (the trace's own event type).
JumpListener = Callable[[ClockJump], None]

# The latest jumps a virtual clock keeps in ``jumps`` (at least this many, at most twice):
# a long run jumps several times per turn, and listeners see every jump as it happens.
_JUMPS_KEPT: Final = 100

# Settling: how many event-loop rounds the auto-advance driver gives other
# tasks. On loops that expose their ready queue (CPython's) the driver stops
# as soon as it is empty; elsewhere it waits a fixed number of rounds.
_FALLBACK_ROUNDS: Final = 64
# Real-time timers further away than this are not waited for (a real 25-hour sleep
# can't be; a periodic job an hour away is not the agent answering), and one move of
# the clock spends at most this much real time on them (a real-time heartbeat must
# not turn a 25-hour wait into a real one).
_REAL_TIMER_HORIZON: Final = 10.0
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
    #: Resolved at the deadline, for a task in :meth:`VirtualClock.sleep`; None for a timer.
    future: asyncio.Future[None] | None = field(compare=False)
    #: Taken off the heap by its deadline: nothing is left to remove when its sleep ends.
    woken: bool = field(default=False, compare=False)
    #: Called at the deadline, for a timer (:meth:`VirtualClock.call_later`).
    callback: Callable[[], object] | None = field(default=None, compare=False)


class VirtualClock:
    """Time that only moves when told to (or, with ``auto_advance``, when all are asleep).

    ``jumps`` records the latest moves (the last hundred at least) as trace
    :class:`~harness.trace.ClockJump` events; ``on_jump`` and
    :meth:`add_listener` are called with each as it happens.
    Not thread-safe: use it from one event loop's thread.
    """

    def __init__(
        self,
        start: datetime | None = None,
        *,
        auto_advance: bool = False,
        on_jump: JumpListener | None = None,
        real_work_limit: float = DEFAULT_REAL_WORK_LIMIT,
        watch_real_timers: bool = False,
    ) -> None:
        if not (math.isfinite(real_work_limit) and real_work_limit > 0):
            raise ClockError(f"real_work_limit must be a positive number, not {real_work_limit!r}")
        self._now = DEFAULT_START if start is None else _aware(start, "start")
        self._auto_advance = auto_advance
        self._sleepers: list[_Sleeper] = []  # a heap: deadline, then order of sleep()
        self._order = itertools.count()
        self._listeners: list[JumpListener] = [] if on_jump is None else [on_jump]
        #: Whether a real-time timer due soon in the loop (an ``asyncio.sleep`` of code that
        #: does not use this clock) is an event to move to, at the pace of real time.
        self.watch_real_timers = watch_real_timers
        self._holds = RealWork(real_work_limit)
        self._sleeping: set[asyncio.Future[None]] = set()
        self._driver: asyncio.Task[None] | None = None
        #: The latest jumps, oldest first (every one of the last hundred, at least).
        self.jumps: list[ClockJump] = []

    def __repr__(self) -> str:
        return f"VirtualClock(now={self._now.isoformat()}, sleeping={len(self._sleepers)})"

    @property
    def auto_advance(self) -> bool:
        """Whether the clock jumps by itself when every task is asleep."""
        return self._auto_advance

    @property
    def sleeping(self) -> int:
        """How many sleepers (and timers) are waiting for their deadline."""
        return len(self._sleepers)

    def is_asleep(self, task: asyncio.Task[Any]) -> bool:
        """Tell whether ``task`` is waiting, right now, on a :meth:`sleep` of this clock."""
        return getattr(task, "_fut_waiter", None) in self._sleeping

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

    def restart(self, at: datetime) -> None:
        """Start again at ``at`` (earlier or later), before anything has used this clock.

        For a conversation whose starting instant is known only once it is
        connected; once a sleeper waits or time has moved, it raises
        :class:`ClockError`.
        """
        if self._sleepers or self.jumps:
            raise ClockError("a clock can start again only before anything has used it")
        self._now = _aware(at, "start")

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

    async def run_until(
        self, deadline: datetime, *, reason: str = "advance", settled: bool = False
    ) -> datetime:
        """Move time to ``deadline``, stopping at each sleeper's deadline on the way.

        At each stop the sleepers due there wake and run until the event loop
        is idle again, so they see ``now()`` equal to their own deadline and
        anything they schedule before ``deadline`` is honoured too. With
        ``settled``, the caller says that a ``run_until`` of its own has just
        returned and it has awaited nothing since: the loop is idle as that
        call left it, so the first wait for idleness is skipped.
        """
        deadline = _aware(deadline, "deadline")
        if deadline < self._now:
            raise ClockError(
                f"can't run the clock back from {self._now.isoformat()} to {deadline.isoformat()}"
            )
        if not settled:
            await self._settle()
        real_budget = _REAL_TIMER_HORIZON  # real time this call may spend on real-time timers
        while True:
            sleeper = self.next_deadline
            delay = self._real_timer_delay() if real_budget > 0 else None
            timer = None if delay is None else self._later(timedelta(seconds=delay))
            if timer is not None and timer <= deadline and (sleeper is None or timer < sleeper):
                # Code on real time (an asyncio.sleep of the agent's own) acts when its timer
                # fires: let real time pass until then, with virtual time moving alongside.
                assert delay is not None
                await asyncio.sleep(delay)
                real_budget -= delay
                self._move(max(timer, self._now), reason)
                self._wake_due()
            elif sleeper is not None and sleeper <= deadline:
                self._move(max(sleeper, self._now), reason)
                self._wake_due()
            else:
                break
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
        future = loop.create_future()
        sleeper = _Sleeper(deadline, next(self._order), future)
        heapq.heappush(self._sleepers, sleeper)
        self._sleeping.add(future)
        if self._auto_advance:
            self._start_driver(loop)
        self._holds.notify()  # a task holding the clock may have just gone to sleep on it
        try:
            await future
        finally:
            self._sleeping.discard(future)
            if not sleeper.woken:  # cancelled: still in the heap, where nothing will pop it
                self._forget(sleeper)

    def call_later(self, seconds: float, callback: Callable[[], object]) -> Callable[[], None]:
        """Call ``callback`` once virtual time has moved ``seconds`` forward; returns a canceller.

        A timer waits on the clock as a sleeper does, in the same order (its
        deadline, then the order of calls among sleepers and timers due at the
        same instant), but it costs no task: at its deadline the clock calls
        ``callback`` where it would wake a sleeper, so whatever it starts
        (a task, say) is queued where that sleeper's wake-up would be. The
        callback must not raise. A zero or negative delay fires at the next
        move of the clock (:meth:`run_until` to now will do).
        """
        deadline = self._later(_as_delta(max(_seconds(seconds), 0.0)))
        timer = _Sleeper(deadline, next(self._order), None, callback=callback)
        heapq.heappush(self._sleepers, timer)
        if self._auto_advance:
            self._start_driver(asyncio.get_running_loop())

        def cancel() -> None:
            if not timer.woken:
                timer.woken = True
                self._forget(timer)

        return cancel

    @property
    def real_work_limit(self) -> float:
        """Real seconds a piece of real work may stay in flight before it is reported as hung."""
        return self._holds.limit

    def hold(self, what: str = "real work") -> AbstractContextManager[None]:
        """Keep virtual time still while real work the event loop can't see is in flight.

        Use it around a request to a model, a database or another process, or
        a call into a worker thread (it may be entered and left from any
        thread); ``what`` names the work in a
        :class:`~harness.exceptions.RealWorkTimeout`. Holds
        nest, and explicit :meth:`advance` ignores them.
        """
        return self._holds.hold(what)

    @property
    def in_flight(self) -> list[tuple[str, float]]:
        """The real work in flight now, oldest first: what it is and for how many seconds."""
        return self._holds.in_flight

    def held_here(self) -> bool:
        """Whether the current task holds the clock now (False outside a task)."""
        try:
            task = asyncio.current_task()
        except RuntimeError:  # no event loop in this thread
            return False
        return task is not None and self._holds.held_by(task)

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
        # Two aware datetimes and a string: the model's validation would only copy them.
        jump = ClockJump.model_construct(at=to, previous=self._now, reason=reason)
        self._now = to
        self.jumps.append(jump)
        if len(self.jumps) > 2 * _JUMPS_KEPT:
            del self.jumps[:-_JUMPS_KEPT]
        for listener in tuple(self._listeners):
            listener(jump)

    def _wake_due(self) -> None:
        # Resolving the futures in heap order queues the sleepers' wake-ups in
        # that order, and the event loop runs its ready queue first in, first out.
        while self._sleepers and self._sleepers[0].deadline <= self._now:
            sleeper = heapq.heappop(self._sleepers)
            sleeper.woken = True
            if sleeper.callback is not None:
                sleeper.callback()
            elif sleeper.future is not None and not sleeper.future.done():
                sleeper.future.set_result(None)

    def _forget(self, sleeper: _Sleeper) -> None:
        for i, pending in enumerate(self._sleepers):
            if pending is sleeper:
                self._sleepers.pop(i)
                heapq.heapify(self._sleepers)
                return

    async def _settle(self) -> None:
        """Return once the loop is idle and no real work is in flight (see the module docstring)."""
        ready = getattr(asyncio.get_running_loop(), "_ready", None)  # see _drain
        while True:
            idle = await self._drain()
            working = self._holds.unfinished(self._sleeping)
            if not working:
                # Work ended by another thread may have queued its outcome on the loop
                # just before it ended: that is still to run before the loop is idle.
                if idle and ready:
                    continue
                return
            await self._holds.wait(working, self._sleeping)

    def _real_timer_delay(self) -> float | None:
        """Real seconds until the loop's next real-time timer, if one is due within the horizon.

        Only when :attr:`watch_real_timers` is set, and only in CPython's loops,
        whose timers can be read.
        """
        if not self.watch_real_timers:
            return None
        loop = asyncio.get_running_loop()
        scheduled = getattr(loop, "_scheduled", None)  # CPython's heap of TimerHandles
        if not scheduled:
            return None
        now = loop.time()
        due = [
            h.when()
            for h in scheduled
            if not h.cancelled() and h.when() - now <= _REAL_TIMER_HORIZON
        ]
        return max(min(due) - now, 0.0) if due else None

    def next_event(self) -> datetime | None:
        """When the next thing happens: a sleeper's deadline, or a real-time timer (when watched).

        A real-time timer due in ``r`` real seconds counts as an event ``r``
        seconds from now: virtual time moves at the pace of real time up to it.
        """
        sleeper = self.next_deadline
        delay = self._real_timer_delay()
        timer = None if delay is None else self._later(timedelta(seconds=delay))
        if timer is None or (sleeper is not None and sleeper <= timer):
            return sleeper
        return timer

    async def _drain(self) -> bool:
        """Yield until every other task in the loop is blocked (or give up after many rounds).

        Whether the loop was seen idle: false after giving up, or on a loop
        whose queue can't be read.
        """
        loop = asyncio.get_running_loop()
        # CPython's loops keep runnable callbacks in `_ready`; reading it is the
        # only way to know the loop is idle. Other loops get a fixed number of rounds.
        ready = getattr(loop, "_ready", None)
        rounds = _MAX_ROUNDS if ready is not None else _FALLBACK_ROUNDS
        for _ in range(rounds):
            await asyncio.sleep(0)
            if ready is not None and not ready:
                return True
        return False

    def _start_driver(self, loop: asyncio.AbstractEventLoop) -> None:
        driver = self._driver
        if driver is None or driver.done() or driver.get_loop() is not loop:
            self._driver = loop.create_task(self._drive(), name="VirtualClock auto-advance")

    async def _drive(self) -> None:
        while self._sleepers:
            await self._settle()
            if self._sleepers:
                self._move(self._sleepers[0].deadline, "auto-advance")
                self._wake_due()


class OffsetClock:
    """Another clock's time plus a fixed offset: the agent's view when its clock is skewed.

    Durations are not skewed: ``sleep`` waits on the base clock.
    """

    def __init__(self, base: Clock, offset: timedelta | float | str) -> None:
        self.base = base
        self.offset = parse_duration(offset, signed=True)

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


def hold(clock: Clock, what: str = "real work") -> AbstractContextManager[None]:
    """:meth:`VirtualClock.hold` for any clock: a no-op unless a virtual clock is underneath."""
    base = virtual_base(clock)
    return nullcontext() if base is None else base.hold(what)


def virtual_base(clock: Clock) -> VirtualClock | None:
    """The virtual clock under ``clock`` (through any offsets), or None for real time."""
    while isinstance(clock, OffsetClock):
        clock = clock.base
    return clock if isinstance(clock, VirtualClock) else None
