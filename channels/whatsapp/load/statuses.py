"""The status webhooks of a load run: sent, delivered and read for every message accepted.

Each message the fake Graph API accepts gets its statuses at the delays the
settings say (``config.statuses``: 1, 2 and 5 seconds by default), on the real
clock, signed and POSTed like the users' messages, through the same aiohttp
session. A message failed after it was accepted (outside the window) gets one
``failed`` status carrying Meta's error instead; a reaction gets only ``sent``.

At 10,000 users that is thousands of statuses a second, so nothing here is
made per status but a small tuple: one heap holds what is scheduled, one task
takes each status off it when due, and a fixed number of lanes (a queue and a
task each, the same for a message's every status, so they reach the agent in
order) POST them one at a time. Memory grows with the statuses not yet due,
the sends of the last few seconds; the count of tasks never grows.

The agent's answers to status webhooks are counted apart from its answers to
messages (:meth:`~channels.whatsapp.load.stats.LoadStats.status_posted`), and
a status carries no user's turn: it is never taken for a reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import Final, TypeAlias

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.envelope import contact_item, webhook_body
from channels.whatsapp.errors import GraphAPIError
from channels.whatsapp.load.stats import LoadStats
from channels.whatsapp.load.webhooks import WebhookPoster
from channels.whatsapp.signing import serialize
from channels.whatsapp.statuses import pricing_item, status_item
from channels.whatsapp.validation import ValidatedSend

__all__ = ["StatusSender"]

# How many statuses may wait in one lane before the scheduler waits for it.
_LANE_QUEUE: Final = 256

# A scheduled status: when it is due (event-loop time), a tie-breaker keeping the order
# statuses were scheduled in, the message's wamid, its user, the status, the send's
# biz_opaque_callback_data, its pricing category, and the error of a failed one.
_Item: TypeAlias = tuple[float, int, str, str, str, str | None, str, GraphAPIError | None]


class StatusSender:
    """Schedules and POSTs the status webhooks of a load run (see the module)."""

    def __init__(
        self,
        poster: WebhookPoster,
        config: SimulatorConfig,
        stats: LoadStats,
        *,
        lanes: int = 16,
    ) -> None:
        self.poster = poster
        self.config = config
        self.stats = stats
        self._heap: list[_Item] = []
        self._order = itertools.count()
        self._wake = asyncio.Event()
        self._lanes: list[asyncio.Queue[_Item]] = [
            asyncio.Queue(_LANE_QUEUE) for _ in range(max(1, lanes))
        ]
        self._tasks: list[asyncio.Task[None]] = []
        self._closed = False
        self._idle = asyncio.Event()
        self._idle.set()
        #: Statuses scheduled and not yet answered (or failed) by the agent.
        self.pending = 0

    def start(self) -> None:
        """Start the scheduler and the lanes (on the running event loop)."""
        if self._tasks:
            return
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._schedule()))
        self._tasks.extend(loop.create_task(self._lane(lane)) for lane in self._lanes)

    def accepted(self, wamid: str, wa_id: str, send: ValidatedSend, at: float) -> None:
        """The message ``wamid`` to ``wa_id`` was accepted at ``at``: schedule its statuses."""
        timing = self.config.statuses
        plan: list[tuple[str, float]] = [
            (name, delay)
            for name, delay in (
                ("sent", timing.sent),
                ("delivered", timing.delivered),
                ("read", timing.read),
            )
            if delay is not None and (send.type != "reaction" or name == "sent")
        ]
        category = "utility" if send.type == "template" else "service"
        # Pricing rides on "sent" and on "delivered", or on "read" when no "delivered" comes.
        second = "delivered" if any(name == "delivered" for name, _ in plan) else "read"
        for name, delay in plan:
            priced = category if name in ("sent", second) else ""
            self._push(at + delay, wamid, wa_id, name, send.biz_opaque_callback_data, priced)

    def failed(
        self, wamid: str, wa_id: str, send: ValidatedSend, error: GraphAPIError, at: float
    ) -> None:
        """The message ``wamid`` was accepted at ``at`` but fails: a ``failed`` status."""
        delay = self.config.statuses.sent or 0.0
        callback = send.biz_opaque_callback_data
        self._push(at + delay, wamid, wa_id, "failed", callback, "", error)

    def _push(
        self,
        due: float,
        wamid: str,
        wa_id: str,
        name: str,
        callback: str | None,
        priced: str,
        error: GraphAPIError | None = None,
    ) -> None:
        if self._closed:  # a send after the end of the run: its statuses never go out
            self.stats.statuses_unsent += 1
            return
        item = (due, next(self._order), wamid, wa_id, name, callback, priced, error)
        heapq.heappush(self._heap, item)
        self.pending += 1
        self._idle.clear()
        if self._heap[0] is item:  # due before what the scheduler waits for
            self._wake.set()

    def body(self, item: _Item) -> bytes:
        """The webhook of a scheduled status, as sent (stamped with the time it goes out)."""
        _, _, wamid, wa_id, name, callback, priced, error = item
        status = status_item(
            wamid,
            name,  # type: ignore[arg-type]  # one of the status values, as scheduled
            int(time.time()),
            wa_id,
            pricing=pricing_item(priced) if priced else None,
            errors=None if error is None else [error.to_error_object().to_dict()],
            biz_opaque_callback_data=callback,
        )
        config = self.config
        payload = webhook_body(
            waba_id=config.waba_id,
            phone_number_id=config.phone_number_id,
            display_phone_number=config.display_phone_number,
            statuses=[status],
            contacts=[contact_item(wa_id, None)],
        )
        return serialize(payload)

    async def _schedule(self) -> None:
        loop = asyncio.get_running_loop()
        heap, lanes = self._heap, self._lanes
        while True:
            if not heap:
                self._wake.clear()
                await self._wake.wait()
                continue
            wait = heap[0][0] - loop.time()
            if wait > 0:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await self._wake.wait()
                continue
            item = heapq.heappop(heap)
            await lanes[hash(item[2]) % len(lanes)].put(item)

    async def _lane(self, queue: asyncio.Queue[_Item]) -> None:
        loop = asyncio.get_running_loop()
        while True:
            item = await queue.get()
            failure = await self.poster.post(self.body(item))
            self.pending -= 1
            if not self.pending:
                self._idle.set()
            self.stats.status_posted(loop.time(), item[4], failure)

    async def finish(
        self, until: float | None, stop: Callable[[], Awaitable[object]] | None = None
    ) -> None:
        """Send what falls due until ``until`` (event-loop time; ``None``: nothing), then stop.

        ``stop`` (the run being stopped early) cuts the wait short. The
        statuses not sent by then are counted as unsent.
        """
        if until is not None and self.pending:
            waits: list[asyncio.Future[object]] = [asyncio.ensure_future(self._idle.wait())]
            if stop is not None:
                waits.append(asyncio.ensure_future(stop()))
            left = max(until - asyncio.get_running_loop().time(), 0.0)
            try:
                await asyncio.wait(waits, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for wait in waits:
                    wait.cancel()
                await asyncio.gather(*waits, return_exceptions=True)
        self._closed = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        self.stats.statuses_unsent += self.pending
        self.pending = 0
