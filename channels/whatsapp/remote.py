"""A scenario against an agent in another process: real time, watched like a phone.

An agent at a URL lives on real time and does its work where the harness
can't see it, so a scenario played against it can't settle its clock the
way an in-process one does. :class:`RemoteSession` keeps the scenario's
virtual clock moving with real time (a ``wait`` step jumps it ahead, and an
agent that follows the harness's clock is told), sends every webhook with
the scenario's ``X-Harness-Scenario`` header, brings the model and tool
calls the agent reports into the trace, and answers the two questions the
runner asks of a real-time agent: has the trace come to hold something yet,
and has the agent gone quiet?

Quiet means: no user message still on its way or in flight to the agent, no
typing indicator up (the agent shows one while it composes: it is taken down
by its next message, or after Meta's 25 s), and nothing from the agent (a
send, a reported call, an answered webhook) for a whole window of real time.
Statuses Meta sends the agent don't count: the agent's reaction to one would.

The trace keeps the order things reach the harness, which is what a scenario
reads while it plays. A span, though, can reach it late (an exporter that
batches, or flushes after the reply): the session notes the real instant each
event arrived, and each reported event's start, so the finished conversation
puts a late span back where its work happened (:meth:`RemoteSession.in_order_of_work`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Final

from starlette.types import ASGIApp, Receive, Scope, Send

from channels.whatsapp.simulator import WhatsAppSimulator
from channels.whatsapp.url_target import UrlTarget
from harness.clock import DEFAULT_START, VirtualClock
from harness.remote import (
    SCENARIO_HEADER,
    AgentAnnouncement,
    publish_offset,
    read_announcement,
    read_events,
    working_key,
)
from harness.store import Store
from harness.trace import (
    ClockJump,
    Conversation,
    DeliveryAttempt,
    Event,
    InboundMessage,
    OutboundSend,
    ToolCall,
)

__all__ = ["RemoteSession"]

# How long an agent that says when it works must also stay silent to count as quiet
# (its background work starts a moment after the webhook is answered).
_SETTLED: Final = 0.3
# A span is waited for this many times the longest any span has taken to come.
_LAG_MARGIN: Final = 1.25
# How long closing waits for the session's own tasks to end once cancelled.
_CLOSE_WAIT: Final = 2.0
# How often virtual time catches up with real time, and reports are read.
_TICK: Final = 0.02
_POLL: Final = 0.05


class RemoteSession:
    """The real-time side of one scenario whose agent is at a URL."""

    def __init__(
        self,
        sim: WhatsAppSimulator,
        clock: VirtualClock,
        url: str,
        scope: str,
        store: Store | None,
        *,
        start: datetime | None = None,
    ) -> None:
        self.sim = sim
        self.clock = clock
        self.url = url
        self.scope = scope
        self.store = store
        self._start = start
        #: What the agent said about itself when it joined harness runs (None: it didn't).
        self.announcement: AgentAnnouncement | None = None
        self._offset = timedelta(0)
        self._changed = asyncio.Event()
        self._last_activity = 0.0
        self._tasks: list[asyncio.Task[None]] = []
        self._closing = False
        self._reports_seen = 0
        self._reading = asyncio.Lock()
        #: For each event of the trace, in order: when it reached the harness (wall
        #: seconds), or for an event the agent reported, when its work began.
        self._arrivals: list[float] = []
        self._latest = 0.0
        self._started: float | None = None
        #: The longest a span has taken to come once its work was done (an exporter
        #: that batches holds it back for seconds).
        self._span_lag = 0.0
        #: Where in the trace are tool calls the model endpoint saw the agent make, and
        #: whether the agent reports its tool calls itself (spans, or through the store).
        self._seen_by_model: set[int] = set()
        self._reports_tools = False
        self._draining = False

    @property
    def observed(self) -> tuple[str, ...]:
        """The agent's own calls this run can see: what the agent reports, if it joined."""
        return self.announcement.reports if self.announcement is not None else ()

    def saw(self, event: Event) -> None:
        """Note an event of the trace: it may be the agent at work, and it may end a wait."""
        now = time.time()
        if isinstance(event, ToolCall):
            if self._started is not None or self._draining:
                self._reports_tools = True
            else:
                self._seen_by_model.add(len(self._arrivals))
        if self._started is not None:
            self._arrivals.append(min(self._started, now))
        else:
            # The harness's own events keep their order, whatever the wall clock does.
            self._latest = max(self._latest, now)
            self._arrivals.append(self._latest)
        if _is_activity(event):
            self._last_activity = asyncio.get_running_loop().time()
        self._changed.set()

    def reported(self, event: Event, started: float, ended: float) -> None:
        """Record an event the agent reported (a span) that ran from ``started`` to ``ended``.

        Both are wall-clock seconds since the epoch, by the agent's clock: the
        agent and the harness are taken to share the time of day. How long
        after its end a span came is learnt: :meth:`quiet` waits that long.
        """
        self._span_lag = max(self._span_lag, time.time() - ended)
        self._started = started
        try:
            self.sim.record(event)
        finally:
            self._started = None

    def in_order_of_work(self, events: Sequence[Event]) -> Sequence[Event]:
        """``events`` (the trace) as a record of the agent's work, once played.

        Each reported event is moved back to where its work began: a span that
        reached the harness after events that came later than its start (the
        reply it led to, the user's next message) goes before them, and takes
        the time of the event it now follows. Nothing else changes order, and
        nothing moves later than where it arrived. And when the agent reports
        its tool calls itself, the ones the model endpoint saw it make are left
        out (they are the same calls). ``events`` itself when nothing changes.
        """
        if len(self._arrivals) != len(events):  # a trace this session did not see grow
            return events
        order = sorted(range(len(events)), key=self._arrivals.__getitem__)
        dropped = self._seen_by_model if self._reports_tools else set()
        if not dropped and order == list(range(len(events))):
            return events
        placed: list[Event] = []
        for position, index in enumerate(order):
            if index in dropped:
                continue
            event = events[index]
            if index > position:  # moved back: it happened after the event it now follows
                after = placed[-1].at if placed else min(event.at, events[order[1]].at)
                event = event.model_copy(update={"at": after})
            placed.append(event)
        return tuple(placed)

    async def start(self) -> None:
        """Connect to the agent, start the clock following real time, and listen for reports."""
        loop = asyncio.get_running_loop()
        self._last_activity = loop.time()
        if self.store is not None:
            self.announcement = await read_announcement(self.store, self.sim.config.phone_number_id)
        if self.announcement is not None and self.announcement.clock:
            # The agent reads this scenario's time from the harness: it can start where an
            # in-process run starts, so the same scenario means the same dates either way.
            self.clock.restart(self._start or DEFAULT_START)
        elif self._start is not None:
            self.clock.restart(self._start)
        self._offset = self.clock.now() - datetime.now(UTC)
        await self._publish_offset()
        target = UrlTarget(
            self.url, timeout=self.sim.config.webhook_timeout, headers={SCENARIO_HEADER: self.scope}
        )
        self.sim.connect(target)
        self.sim.paced = True  # a burst's gaps pass in real time, as the agent lives in it
        self._tasks.append(loop.create_task(self._pace(), name=f"pace {self.scope}"))
        if self.observed and self.store is not None:
            self._tasks.append(loop.create_task(self._read_reports(self.store)))

    async def close(self) -> None:
        """Stop following real time and listening for reports."""
        self._closing = True
        for task in self._tasks:
            task.cancel()
        tasks, self._tasks = self._tasks, []
        if not tasks:
            return
        # A read of the store cut short may take a moment to clean up; never forever.
        done, pending = await asyncio.wait(tasks, timeout=_CLOSE_WAIT)
        for task in pending:
            # It ends on its own soon after; what it meets then (a closed store) is no news.
            task.add_done_callback(_outcome_ignored)
        for task in done:
            if not task.cancelled() and (error := task.exception()) is not None:
                raise error

    async def jump(self, seconds: float, reason: str) -> None:
        """Move the scenario's time ``seconds`` ahead of real time (and tell the agent)."""
        before = self.clock.now()
        self._offset += timedelta(seconds=seconds)
        self._catch_up()
        await asyncio.sleep(0)  # let what fell due run
        self.sim.record(ClockJump(at=self.clock.now(), previous=before, reason=reason))
        await self._publish_offset()

    async def delivered(self, within: float) -> None:
        """Wait until every user message has been put to the agent (at most ``within`` s)."""
        deliverer = self.sim.deliverer
        loop = asyncio.get_running_loop()
        end = loop.time() + within
        while deliverer is not None and deliverer.pending_messages and loop.time() < end:
            await self._next_change(min(_POLL, end - loop.time()))

    async def wait_until(self, holds: Callable[[Conversation], bool], within: float) -> bool:
        """Wait until ``holds(trace)`` is true or ``within`` real seconds pass."""
        loop = asyncio.get_running_loop()
        end = loop.time() + within
        while True:
            if holds(self.sim.conversation()):
                return True
            remaining = end - loop.time()
            if remaining <= 0:
                return False
            await self._next_change(min(remaining, 0.25))

    async def quiet(self, window: float, within: float) -> bool:
        """Wait until the agent has done nothing for ``window`` real seconds; see the module.

        An agent that says when it is working is quiet once it has no work under
        way and has been silent for a moment: its word replaces the long window.
        An agent whose spans have come late (an exporter that batches them) is
        quiet once silent for as long as they took, so that its last spans are
        in (at most ``within``).
        """
        loop = asyncio.get_running_loop()
        end = loop.time() + max(within, window)
        deliverer = self.sim.deliverer
        tells = self.store is not None and self.announcement is not None and self.announcement.work
        if tells:
            window = min(window, _SETTLED)
        given = window
        while True:
            if self._span_lag > given:  # learnt, maybe while waiting: spans come this late
                window = min(self._span_lag * _LAG_MARGIN + _TICK, max(within, given))
            now = loop.time()
            busy = deliverer is not None and (deliverer.pending_messages or deliverer.in_flight)
            busy = busy or self.sim.activity.typing_until() > time.monotonic()
            if not busy and tells and self.store is not None:
                busy = await _working(self.store, self.scope)
            idle = now - self._last_activity
            if not busy and idle >= window:
                return True
            if now >= end:
                return False
            wait = _POLL if busy else window - idle
            await self._next_change(max(min(wait, end - now), 0.001))

    # -- internals ---------------------------------------------------------------

    async def _next_change(self, longest: float) -> None:
        self._changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), longest)

    def _catch_up(self) -> None:
        target = datetime.now(UTC) + self._offset
        if target > self.clock.now():
            self.clock.set(target, reason="real time")

    async def _pace(self) -> None:
        while True:
            self._catch_up()
            await asyncio.sleep(_TICK)

    async def _publish_offset(self) -> None:
        if self.store is not None and self.announcement is not None and self.announcement.clock:
            await publish_offset(self.store, self.scope, self._offset)

    async def drain_reports(self) -> None:
        """Bring what the agent has reported so far into the trace."""
        if self.store is None or not self.observed:
            return
        async with self._reading:
            for event in await read_events(self.store, self.scope, self._reports_seen):
                self._reports_seen += 1
                self._draining = True
                try:
                    self.sim.record(event.model_copy(update={"at": self.clock.now()}))
                finally:
                    self._draining = False

    def graph_app(self) -> ASGIApp:
        """The simulator's Graph API, reading the agent's reports before each send.

        The agent reports a tool call before it sends what the tool told it,
        so the trace keeps that order.
        """
        app = self.sim.graph_app
        drain = self.drain_reports

        async def draining(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http" and scope["method"] == "POST":
                await drain()
            await app(scope, receive, send)

        return draining

    async def _read_reports(self, store: Store) -> None:
        while not self._closing:
            await self.drain_reports()
            await asyncio.sleep(_POLL)


def _outcome_ignored(task: asyncio.Task[None]) -> None:
    if not task.cancelled():
        task.exception()


async def _working(store: Store, scope: str) -> bool:
    raw = await store.get(working_key(scope))
    return raw is not None and int(raw) > 0


def _is_activity(event: Event) -> bool:
    """Whether an event shows the agent at work (or just given work), not Meta's statuses."""
    if isinstance(event, ClockJump):
        return False
    if isinstance(event, DeliveryAttempt):
        return any(":" not in item for item in event.items)  # a status is "wamid:status"
    if isinstance(event, OutboundSend | InboundMessage):
        return True
    return event.kind in ("llm", "tool")
