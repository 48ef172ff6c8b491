"""Webhook delivery: how Meta's POSTs reach the agent, retried and faulted.

A :class:`WebhookTarget` is the agent's webhook, in-process (an ASGI app
called directly) or at a URL (:mod:`channels.whatsapp.url_target`).
:class:`Deliverer` schedules each update on the virtual clock, applies the fault profile (latency,
reordering, batching, duplicates), signs the bytes once and sends those
bytes, retries a delivery that was not answered with 200 on Meta's schedule,
and reports every attempt. Every request goes out with Meta's ``User-Agent``;
nothing is delivered before the webhook has passed the verification
handshake (:func:`handshake`), which the trace records too.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, Literal, Protocol

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.envelope import batch_webhooks
from channels.whatsapp.faults import FaultDice
from channels.whatsapp.signing import SignedBody
from channels.whatsapp.url_target import PostResult
from harness.clock import Clock, virtual_base
from harness.exceptions import HandshakeError
from harness.redaction import REDACTED
from harness.trace import DeliveryAttempt, Event, Verification

__all__ = [
    "Deliverer",
    "PendingUpdate",
    "WebhookTarget",
    "handshake",
]


class WebhookTarget(Protocol):
    """The agent's webhook endpoint."""

    description: str

    async def post(self, body: SignedBody) -> PostResult:
        """POST signed bytes; never raises for a network problem."""
        ...

    async def get(self, params: dict[str, str]) -> tuple[int, str]:
        """GET with query parameters (the verification handshake)."""
        ...

    async def aclose(self) -> None:
        """Release the connection pool."""
        ...


async def handshake(
    target: WebhookTarget,
    verify_token: str,
    rng: random.Random,
    *,
    clock: Clock | None = None,
    record: Callable[[Event], None] | None = None,
) -> None:
    """Perform Meta's GET verification handshake; a wrong answer raises ``HandshakeError``.

    With ``clock`` and ``record``, the GET and its answer go in the trace as a
    :class:`~harness.trace.Verification`, passed or not (the verify token
    masked: a trace ends up in reports).
    """
    challenge = str(rng.randrange(10**9, 10**10))
    params = {"hub.mode": "subscribe", "hub.challenge": challenge, "hub.verify_token": verify_token}
    status: int | None = None
    text = ""
    problem: HandshakeError | None = None
    try:
        status, text = await target.get(params)
    except HandshakeError as exc:
        problem = exc
    if problem is None and status != 200:
        problem = HandshakeError(
            f"webhook {target.description} failed the verification handshake: it answered "
            f"{status} to hub.verify_token={verify_token!r} (expected 200 and the challenge)"
        )
    if problem is None and text.strip() != challenge:
        problem = HandshakeError(
            f"webhook {target.description} failed the verification handshake: expected the "
            f"bare challenge {challenge!r} as the body, got {text[:60]!r}"
        )
    if clock is not None and record is not None:
        record(
            Verification(
                at=clock.now(),
                request={**params, "hub.verify_token": REDACTED},
                challenge=challenge,
                status_code=status,
                answer=text[:_ANSWER_KEPT],
                error=None if problem is None or status is not None else str(problem),
                passed=problem is None,
            )
        )
    if problem is not None:
        raise problem


# The part of the agent's answer to the handshake that the trace keeps.
_ANSWER_KEPT = 200


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(slots=True)
class PendingUpdate:
    """One update (a user's message or a status) on its way to the agent."""

    kind: Literal["message", "status"]
    item_id: str
    user: str
    payload: dict[str, Any]
    due: datetime
    faults: tuple[str, ...] = ()
    #: Called as each copy goes out, before the agent has answered: the trace is causal,
    #: so whatever the agent does while handling the POST comes after the update itself.
    on_sending: Callable[[PendingUpdate, str], None] | None = None
    seq: int = 0
    send_at: datetime = field(default=_EPOCH, repr=False)
    #: While the update waits for its first POST: its user, counted as having a message unsent.
    unsent: list[str] = field(default_factory=list, repr=False)
    #: Set once a copy has gone out (by ``on_sending``): any later copy is a duplicate.
    sent: bool = False


class _Resting:
    """What is kept of an update that went out alone, for a redelivery: its signed body aside.

    Its payload is its signed body's JSON, read back if it is ever redelivered;
    when it was due, its place in the queue and its counters no longer matter.
    A run keeps one per message and status it delivered, so it holds no more.
    """

    __slots__ = ("faults", "kind", "on_sending", "sent", "user")

    def __init__(self, update: PendingUpdate) -> None:
        self.kind = update.kind
        self.user = update.user
        self.faults = update.faults
        self.on_sending = update.on_sending
        self.sent = update.sent

    def same_as(self, update: PendingUpdate) -> bool:
        """True when this record is what would be kept of ``update``."""
        return (
            self.on_sending is update.on_sending
            and self.user == update.user
            and self.kind == update.kind
            and self.sent is update.sent
            and self.faults == update.faults
        )

    def wake(self, item_id: str, body: SignedBody, due: datetime) -> PendingUpdate:
        """The update again, its payload read back from ``body``, to go out once more."""
        return PendingUpdate(
            kind=self.kind,
            item_id=item_id,
            user=self.user,
            payload=json.loads(body.body),
            due=due,
            faults=self.faults,
            on_sending=self.on_sending,
            sent=self.sent,
        )


Emit = Callable[[Any], None]


class Deliverer:
    """Sends updates to one webhook on the virtual clock, with retries and faults."""

    def __init__(
        self,
        target: WebhookTarget,
        config: SimulatorConfig,
        clock: Clock,
        dice: FaultDice,
        emit: Emit,
        *,
        verify: Callable[[], Coroutine[Any, Any, None]] | None = None,
    ) -> None:
        self.target = target
        self.config = config
        self.clock = clock
        self.dice = dice
        self._emit = emit
        self._verify = verify
        # Why updates were dropped unsent (a failed handshake), per user they were about,
        # with when (``time.monotonic``), until :meth:`take_failure`.
        self._failures: dict[str, tuple[float, HandshakeError]] = {}
        self._ids = itertools.count(1)
        self._seq = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        #: Updates waiting on the virtual clock for their instant, by queue number: cancellers.
        self._timers: dict[int, Callable[[], None]] = {}
        self._batch: list[PendingUpdate] = []
        self._batch_task: asyncio.Task[None] | None = None
        self._latest: dict[str, PendingUpdate | _Resting] = {}
        self._last_resting: _Resting | None = None
        self._offsets = (0.0, *config.retry_offsets())
        self.in_flight = 0
        #: User messages on their way (scheduled, in flight or waiting for a retry).
        self.pending_messages = 0
        # Per user: messages not yet put to the agent once, and POSTs on the wire.
        self._unsent: Counter[str] = Counter()
        self._posting: Counter[str] = Counter()
        #: The tasks whose POST to the agent is out right now.
        self.posting_tasks: set[asyncio.Task[Any]] = set()
        #: Signed bodies by item id, so a redelivery sends identical bytes.
        self.sent_bodies: dict[str, SignedBody] = {}

    @property
    def busy(self) -> bool:
        """True while a delivery is scheduled, in flight or waiting for a retry."""
        return bool(self._tasks) or bool(self._batch) or bool(self._timers)

    def busy_for(self, user: str) -> bool:
        """True while a message of ``user`` waits for its first POST, or a POST of one is out.

        Retries due later don't count: like the user's next message, they are
        what happens after the turn. Neither do statuses, due later or on the
        wire: they are news about sends made before.
        """
        return self._unsent[user] > 0 or self._posting[user] > 0

    def _count(self, updates: Sequence[PendingUpdate]) -> list[str]:
        """Count the user messages among ``updates`` as on their way; their users, to release."""
        users = [u.user for u in updates if u.kind == "message"]
        if users:  # statuses, most updates, count for no one
            self.pending_messages += len(users)
            self._unsent.update(users)
        return users

    async def _post_counted(
        self, body: SignedBody, updates: Sequence[PendingUpdate], unsent: list[str]
    ) -> PostResult:
        """POST ``body``, counted as on its way for the users whose messages it carries.

        Statuses are news about earlier sends: a POST of statuses alone holds no
        one's turn. Whatever happens, the messages have been put to the agent
        once afterwards (what follows are retries).
        """
        self.in_flight += 1
        about = [u.user for u in updates if u.kind == "message"]
        if about:
            self._posting.update(about)
        task = asyncio.current_task()
        if task is not None:
            self.posting_tasks.add(task)
        try:
            return await self.target.post(body)
        finally:
            self.in_flight -= 1
            self.posting_tasks.discard(task)
            if about:
                self._posting.subtract(about)
                for user in about:
                    if self._posting[user] <= 0:
                        del self._posting[user]
            self._release(unsent)

    def _release(self, users: list[str]) -> None:
        """The first POST of these messages is over (or won't happen): they are no longer unsent."""
        if not users:
            return
        self._unsent.subtract(users)
        for user in users:
            if self._unsent[user] <= 0:
                del self._unsent[user]
        users.clear()

    async def aclose(self) -> None:
        """Cancel what is still scheduled (late statuses, retries) and wait for it to stop."""
        timers, self._timers = self._timers, {}
        for cancel in timers.values():
            cancel()
        tasks = [t for t in self._tasks if not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            # A POST cut short may take a moment to clean up its connection; never forever.
            await asyncio.wait(tasks, timeout=5.0)
        self._batch.clear()

    def dropped(self, updates: Sequence[PendingUpdate], failure: HandshakeError) -> None:
        """Note that ``updates`` were dropped unsent, and why (a failed handshake)."""
        now = time.monotonic()
        for update in updates:
            self._failures[update.user] = (now, failure)

    def take_failure(
        self, user: str | None = None, *, since: float | None = None
    ) -> HandshakeError | None:
        """Why updates were dropped (None if none were), and forget it.

        Without ``user``: the latest drop of all, every drop forgotten. With
        ``user``: the latest drop of an update about that user, at or after
        ``since`` (``time.monotonic``) if given; that user's drops are
        forgotten, older ones unreported (the trace holds the handshake that
        failed). A call that plays one user thus hears of what was dropped
        while it ran, not of another user's loss or of an older one.
        """
        if user is None:
            latest = max(self._failures.values(), default=None, key=lambda kept: kept[0])
            self._failures.clear()
            return None if latest is None else latest[1]
        kept = self._failures.pop(user, None)
        if kept is None or (since is not None and kept[0] < since):
            return None
        return kept[1]

    def enqueue(self, update: PendingUpdate) -> None:
        """Schedule an update for delivery at ``update.due`` plus the profile's faults."""
        profile = self.dice.profile
        update.seq = next(self._seq)
        update.unsent = self._count([update])
        delay = max((update.due - self.clock.now()).total_seconds(), 0.0)
        delay += self.dice.delivery_delay()
        if self.dice.roll("reorder", profile.reorder):
            delay += profile.reorder_window
            update.faults = (*update.faults, "reordered")
        update.send_at = self.clock.now() + timedelta(seconds=delay)
        if profile.batch > 1:
            self._batch.append(update)
            if self._batch_task is None:
                self._batch_task = self._spawn(self._flush_batches())
            return
        clock = virtual_base(self.clock)  # through any skew: an offset moves no deadline
        if delay > 0 and clock is not None:
            # Until it is due the update waits on the clock itself, as a timer: no task sleeps
            # for it (a send's three statuses wait seconds, and most turns make one).
            self._timers[update.seq] = clock.call_later(delay, partial(self._due, update))
            return
        self._spawn(self._deliver_later([update], delay))

    def _due(self, update: PendingUpdate) -> None:
        """An update's instant has come (its timer fired): deliver it."""
        del self._timers[update.seq]
        self._spawn(self._deliver_now([update]))

    def redeliver(self, item_id: str, *, reason: str = "redelivery") -> bool:
        """Send an item's last signed body again, byte for byte; False if never sent."""
        body = self.sent_bodies.get(item_id)
        if body is None:
            return False
        latest = self.latest_update(item_id, body)
        updates = [] if latest is None else [latest]
        self._spawn(self._send(body, [item_id], updates, (reason,), 0.0, self._count(updates)))
        return True

    def latest_update(self, item_id: str, body: SignedBody) -> PendingUpdate | None:
        """The update last delivered as ``item_id`` (its signed body ``body``), to send again."""
        latest = self._latest.get(item_id)
        if isinstance(latest, _Resting):
            latest = latest.wake(item_id, body, self.clock.now())
            self._latest[item_id] = latest
        return latest

    def forget(self, keep: Callable[[str], bool]) -> None:
        """Forget the signed bodies of the items ``keep`` refuses: they can't be redelivered.

        Deliveries on their way or waiting for a retry are not affected.
        """
        for item_id in [i for i in self.sent_bodies if not keep(i)]:
            del self.sent_bodies[item_id]
        for item_id in [i for i in self._latest if not keep(i)]:
            del self._latest[item_id]

    def _resting(self, update: PendingUpdate) -> _Resting:
        """What to keep of ``update``: the record kept last, when it is the same in every value.

        A record never changes once kept (a redelivery wakes a new update from
        it), so the statuses of one send, or a user's messages, share one.
        """
        last = self._last_resting
        if last is None or not last.same_as(update):
            last = self._last_resting = _Resting(update)
        return last

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(self._tracked(coro))
        self._tasks.add(task)
        return task

    async def _tracked(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro``, then leave the set of tasks on the way, as the task's last step.

        Not from a done callback: that would run in a turn of the loop of its own
        after each delivery, one more for the clock to wait out before it is idle.
        """
        try:
            await coro
        finally:
            task = asyncio.current_task()
            if task is not None:
                self._tasks.discard(task)

    async def _flush_batches(self) -> None:
        window = self.dice.profile.batch_window
        size = self.dice.profile.batch
        while self._batch:
            first = min(u.send_at for u in self._batch)
            wait = (first - self.clock.now()).total_seconds() + window
            if wait > 0:
                await self.clock.sleep(wait)
            now = self.clock.now()
            ready = sorted(
                (u for u in self._batch if u.send_at <= now), key=lambda u: (u.send_at, u.seq)
            )
            self._batch = [u for u in self._batch if u.send_at > now]
            for start in range(0, len(ready), size):
                self._spawn(self._deliver_now(ready[start : start + size]))
        self._batch_task = None

    async def _deliver_later(self, updates: Sequence[PendingUpdate], delay: float) -> None:
        await self.clock.sleep(delay)
        await self._deliver_now(updates)

    async def _deliver_now(self, updates: Sequence[PendingUpdate]) -> None:
        updates = sorted(updates, key=lambda u: (u.send_at, u.seq))
        if len(updates) == 1:
            body = SignedBody.create(updates[0].payload, self.config.app_secret)
        else:
            body = SignedBody.create(
                batch_webhooks([u.payload for u in updates]), self.config.app_secret
            )
        faults = tuple(dict.fromkeys(f for u in updates for f in u.faults))
        if len(updates) > 1:
            faults = (*faults, "batched")
        for update in updates:
            self.sent_bodies[update.item_id] = body
            self._latest[update.item_id] = update
        unsent = [user for u in updates for user in u.unsent]
        for update in updates:
            update.unsent = []
        await self._send(body, [u.item_id for u in updates], list(updates), faults, 0.0, unsent)
        if len(updates) == 1 and self._latest.get(updates[0].item_id) is updates[0]:
            # Kept as it is for a redelivery, its payload would hold the signed body twice.
            self._latest[updates[0].item_id] = self._resting(updates[0])
        if self.dice.roll("duplicate", self.dice.profile.duplicate):
            self._spawn(
                self._send(
                    body,
                    [u.item_id for u in updates],
                    list(updates),
                    (*faults, "duplicate"),
                    self.dice.profile.duplicate_delay,
                    self._count(updates),
                )
            )

    async def _send(
        self,
        body: SignedBody,
        items: list[str],
        updates: list[PendingUpdate],
        faults: tuple[str, ...],
        delay: float,
        unsent: list[str],
    ) -> None:
        """Deliver ``body`` with retries; ``unsent`` are the users of its messages, counted."""
        counted = len(unsent)
        try:
            await self._attempts(body, items, updates, faults, delay, unsent)
        finally:
            self.pending_messages -= counted
            self._release(unsent)

    async def _attempts(
        self,
        body: SignedBody,
        items: list[str],
        updates: list[PendingUpdate],
        faults: tuple[str, ...],
        delay: float,
        unsent: list[str],
    ) -> None:
        if delay:
            await self.clock.sleep(delay)
        if self._verify is not None:
            try:
                await self._verify()  # Meta delivers nothing to an endpoint it has not verified
            except HandshakeError as exc:
                self.dropped(updates, exc)
                return
        delivery = f"d{next(self._ids)}"
        first = self.clock.now()
        for attempt, offset in enumerate(self._offsets, start=1):
            wait = (first - self.clock.now()).total_seconds() + offset
            if wait > 0:
                await self.clock.sleep(wait)
            for update in updates:
                if update.on_sending is not None:
                    update.on_sending(update, delivery)
            result = await self._post_counted(body, updates, unsent)
            status, tags = result.status_code, faults if attempt == 1 else (*faults, "retry")
            lost = self.dice.profile.answer_lost
            if status == 200 and attempt == 1 and self.dice.roll("answer-lost", lost):
                # The agent took it, but its 200 never reached Meta: a proxy's 500 did.
                status, tags = 500, (*tags, "answer_lost")
            # Built from values of the declared types: the model's validation would only copy.
            record = DeliveryAttempt.model_construct(
                at=self.clock.now(),
                user=updates[0].user if updates else None,
                delivery=delivery,
                attempt=attempt,
                items=tuple(items),
                status_code=status,
                error=result.error,
                latency_ms=float(result.latency_ms),
                faults=tags,
            )
            self._emit(record)
            if status == 200:
                return
