"""How the simulator moves time: settling after a step, long waits, real-time pacing.

A mixin of :class:`~channels.whatsapp.simulator.WhatsAppSimulator`. On a
:class:`~harness.clock.VirtualClock` the simulator moves time itself:
:meth:`Timekeeping.settle` runs through whatever is due soon (deliveries,
statuses, retries, the agent's own sleeps and real-time timers) until the
conversation is quiet; :meth:`Timekeeping.advance` jumps over a long
silence, waking everything due on the way; :meth:`Timekeeping.run_paced`
makes virtual time follow real time (``harness serve``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Protocol

from channels.whatsapp.activity import Activity
from channels.whatsapp.delivery import Deliverer
from channels.whatsapp.limits import PairRateLimiter, ThroughputLimiter, TokenBucketLimiter
from harness.clock import Clock, VirtualClock
from harness.exceptions import ConfigError
from harness.trace import ClockJump, Event

__all__ = [
    "ANSWERED_QUIET",
    "QUIET",
    "SHARED_ANSWERED_QUIET",
    "RealTimeView",
    "Timekeeping",
]

#: Real seconds of silence after which a user's conversation counts as quiet on a paced
#: server when the agent has not answered (yet): it may still be thinking.
QUIET = 0.3
#: The least silence that ends a turn once the agent has sent the user a message: the
#: rest of its answer, if any, follows within milliseconds (one Graph API call after another).
ANSWERED_QUIET = 0.002
#: The same with state shared between processes (``serve --redis``): the agent's next step
#: may go through another process and reach this one only after that process has handled it
#: and Redis has passed it on, which on a busy machine takes tens of milliseconds.
SHARED_ANSWERED_QUIET = 0.05
_BUSY_POLL = 0.05


class RealTimeView:
    """A virtual clock read as real time moves: its time at the last look, plus real seconds since.

    Virtual time that jumps ahead (an ``advance``) is taken as the new start;
    it never goes back. Waiting is the virtual clock's.
    """

    def __init__(
        self, clock: VirtualClock, *, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self._clock = clock
        self._monotonic = monotonic
        self._start = (clock.now(), monotonic())

    def now(self) -> datetime:
        """Virtual time at the start, plus the real seconds since; or virtual time, if later."""
        virtual, real = self._clock.now(), self._monotonic()
        at, since = self._start
        moved = at + timedelta(seconds=max(real - since, 0.0))
        if virtual > moved:
            self._start = (virtual, real)
            return virtual
        return moved

    async def sleep(self, seconds: float) -> None:
        """Wait on the virtual clock."""
        await self._clock.sleep(seconds)


class _HearsOthers(Protocol):
    """The state shared with other processes (``serve --redis``), as settling uses it."""

    async def caught_up(self) -> None:
        """Return once every change another process published so far has been applied here."""
        ...


class Timekeeping:
    """Settling, advancing and pacing the simulator's clock."""

    clock: Clock
    events: list[Event]
    paced: bool
    _deliverer: Deliverer | None
    pair_limit: PairRateLimiter
    throughput: ThroughputLimiter
    _last_activity: datetime
    _remote: bool
    activity: Activity
    shared: _HearsOthers | None

    def record(self, event: Event) -> None:
        """Append an event to the log (the simulator defines it)."""
        raise NotImplementedError

    async def settle(self, *, quiet: float = 60.0, real_quiet: float | None = None) -> None:
        """Run the conversation until nothing more is due soon.

        Virtual time moves through every deadline that falls within ``quiet``
        seconds of the last thing that happened (a delivery, a send, a
        status), so replies, statuses and prompt retries all land; later
        deadlines wait for :meth:`advance`. For an agent in another process,
        the simulator also waits ``real_quiet`` real seconds (0.3 by default)
        with nothing in flight, since it can't see that agent's work.

        Raises ``HandshakeError`` when updates could not be delivered because
        the webhook failed the verification handshake meanwhile.
        """
        if real_quiet is None:
            real_quiet = 0.3 if self._remote else 0.0
        clock = self.clock
        if self.paced:
            await self._quiesce(max(real_quiet, 0.05))
            self.raise_undelivered()
            return
        settled = False
        while True:
            settled = await self._quiesce(real_quiet, settled=settled)
            self.raise_undelivered()
            if not isinstance(clock, VirtualClock):
                return
            nxt = clock.next_event()
            if nxt is None or (nxt - self._last_activity).total_seconds() > quiet:
                return
            await clock.run_until(nxt, reason="settle", settled=settled)
            settled = True  # it returned just now, with the loop idle

    async def settle_user(
        self, user: str, *, quiet: float | None = None, within: float = 60.0
    ) -> None:
        """Wait until ``user``'s conversation is quiet, ignoring every other user's.

        Off a paced server this is :meth:`settle`. On one (``harness serve``),
        where the agent runs on real time: until the user's messages have been
        put to the agent and no POST about the user is out, then until nothing
        about the user has happened for ``quiet`` real seconds, answered or not.
        Without ``quiet``: for :data:`QUIET` seconds, but once the agent has sent
        the user a message since the call began, a shorter silence ends it:
        twice the longest pause the agent took between two steps of this
        answer, at least :data:`ANSWERED_QUIET`, since an agent that answers in
        steps a millisecond apart takes its next one about as fast. (An agent
        that says "one moment" and then thinks needs ``quiet``, or to show the
        typing indicator: its pause after the holding message can't otherwise
        be told from the end of its answer.) While the agent shows the user the
        typing indicator the conversation is not quiet, whatever the silence:
        until its next message to the user, or Meta's 25 s. Statuses and
        retries due later don't hold it; neither does any other conversation.
        With state shared between processes, that shorter silence is at least
        :data:`SHARED_ANSWERED_QUIET`, and it is confirmed before the call
        ends: what the agent did through another process (a typing indicator,
        the rest of its answer) may not have been heard here yet.
        At most ``within`` seconds.
        """
        if not self.paced:
            await self.settle()
            return
        activity = self.activity
        deliverer = self._deliverer
        shortcut = quiet is None  # a silence the caller named is waited for whole
        silence = QUIET if quiet is None else quiet
        least = ANSWERED_QUIET if self.shared is None else SHARED_ANSWERED_QUIET
        started = seen = time.monotonic()
        end = started + within
        steps = 0
        longest = 0.0
        confirmed = False  # the silence has been checked against other processes
        while True:
            now = time.monotonic()
            if now >= end:
                break
            moved = activity.moved(user)
            if moved > seen:
                steps += 1
                if steps > 2:  # not the message itself, nor its delivery: the agent's own pace
                    longest = max(longest, moved - seen)
                seen = moved
                confirmed = False
            typing = activity.typing_until(user)
            if deliverer is not None and deliverer.busy_for(user):
                wait = _BUSY_POLL  # the delivery's own event wakes us sooner
            elif typing > now:  # the agent says it is composing: its message wakes us
                wait = typing - now
            else:
                window = silence
                if shortcut and activity.answered(user) >= started:
                    window = min(silence, max(least, 2 * longest))
                idle = now - seen
                if idle >= window:
                    if self.shared is None or confirmed:
                        break
                    await self.shared.caught_up()  # hear what was published until now
                    confirmed = True
                    continue
                wait = window - idle
            await activity.next_change(min(wait, end - now), user=user)
        self.raise_undelivered(user, since=started)

    async def advance(self, seconds: float | timedelta, *, reason: str = "wait") -> None:
        """Let ``seconds`` of virtual time pass, waking everything due on the way."""
        clock = self.clock
        if not isinstance(clock, VirtualClock):
            raise ConfigError("advance needs a VirtualClock")
        delta = seconds if isinstance(seconds, timedelta) else timedelta(seconds=seconds)
        before = clock.now()
        await self._quiesce(0.3 if self._remote else 0.0)
        await clock.run_until(before + delta, reason=reason)
        self.record(ClockJump(at=clock.now(), previous=before, reason=reason))
        await self.settle()

    async def run_paced(self, *, tick: float = 0.05) -> None:
        """Move virtual time along with real time until cancelled (for ``harness serve``).

        Statuses and retries then come at their real pace; :meth:`advance`
        still jumps ahead at once.
        """
        clock = self.clock
        if not isinstance(clock, VirtualClock):
            raise ConfigError("pacing needs a VirtualClock")
        self.paced = True
        # Meta's rate limits count real seconds: between ticks, or while the process is too
        # busy to tick, virtual time stands still, and sends would find their budget unrefilled.
        limits: tuple[TokenBucketLimiter, ...] = (self.pair_limit, self.throughput)
        clocks = [limit.clock for limit in limits]
        for limit in limits:
            limit.clock = RealTimeView(clock)
        loop = asyncio.get_running_loop()
        last = loop.time()
        try:
            while True:
                await asyncio.sleep(tick)
                now = loop.time()
                await clock.run_until(clock.now() + timedelta(seconds=now - last), reason="paced")
                last = now
        finally:
            self.paced = False
            for limit, previous in zip(limits, clocks, strict=True):
                limit.clock = previous

    async def run_until(self, when: datetime) -> None:
        """Move virtual time to ``when``, running what falls due on the way (no settling)."""
        clock = self.clock
        if not isinstance(clock, VirtualClock):
            raise ConfigError("run_until needs a VirtualClock")
        if when > clock.now():
            await clock.run_until(when, reason="replay")
        else:
            await clock.run_until(clock.now())

    async def _pass(self, seconds: float, reason: str) -> None:
        """Let time pass between two user actions, running what falls due meanwhile."""
        clock = self.clock
        if self.paced:
            await asyncio.sleep(seconds)  # virtual time follows real time: let it pass
        elif isinstance(clock, VirtualClock):
            await clock.run_until(clock.now() + timedelta(seconds=seconds), reason=reason)
        else:
            await clock.sleep(seconds)

    def raise_undelivered(self, user: str | None = None, *, since: float | None = None) -> None:
        """Raise why updates were dropped unsent since last asked (a failed handshake), if any.

        With ``user``: only a drop of an update about that user, at or after
        ``since`` (``time.monotonic``), as :meth:`Deliverer.take_failure` reads it.
        """
        deliverer = self._deliverer
        failure = None if deliverer is None else deliverer.take_failure(user, since=since)
        if failure is not None:
            raise failure

    async def _quiesce(self, real_quiet: float, *, settled: bool = False) -> bool:
        """Wait until nothing is in flight (and ``real_quiet`` real seconds of quiet).

        ``settled``: the caller's own ``run_until`` has just returned and it
        has awaited nothing since. Returns whether the same holds on return
        (the loop was last found idle by a ``run_until`` with no wait after it).
        """
        clock = self.clock
        while True:
            if isinstance(clock, VirtualClock):
                await clock.run_until(clock.now(), settled=settled)
            else:
                await asyncio.sleep(0)
            settled = False
            deliverer = self._deliverer
            if deliverer is None or not deliverer.in_flight:
                break
            if isinstance(clock, VirtualClock) and any(
                clock.is_asleep(task) for task in deliverer.posting_tasks
            ):
                # An agent in this process answers its webhook only after waiting on this
                # clock (a reply in the handler after a pause, a call replayed at its recorded
                # pace): let that time pass, as it would have.
                nxt = clock.next_deadline
                if nxt is not None:
                    await clock.run_until(nxt, reason="settle")
                    continue
            await asyncio.sleep(0.001)  # a POST to a remote agent is on the wire
        if real_quiet <= 0:
            return isinstance(clock, VirtualClock)
        loop = asyncio.get_running_loop()
        quiet_since = loop.time()
        marker = self.activity.count  # not the log's length: retention shortens the log
        while loop.time() - quiet_since < real_quiet:
            await asyncio.sleep(min(0.05, real_quiet))
            busy = self._deliverer is not None and self._deliverer.in_flight > 0
            if busy or self.activity.count != marker:
                marker = self.activity.count  # not the log's length: retention shortens the log
                quiet_since = loop.time()
        return False
