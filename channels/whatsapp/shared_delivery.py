"""Webhook delivery shared by the processes of one Meta (``harness serve --redis``).

On one server, what is due later (a status at +1, +2, +5 s, a retry on
Meta's schedule) waits on that process's clock, and is lost if the process
stops. Here each update is a job in Redis, in a sorted set by when it is
due, written before the agent hears of the message it is about. The process
that made the update claims it when it falls due, as on one server; every
process also looks for jobs overdue by a moment (their process has stopped)
and claims those. A claim is atomic (one Lua script), so one process sends
each; it holds for a lease, and a process that dies mid-delivery has its
claim taken over once the lease runs out. A delivery the agent does not
answer with 200 is due again at Meta's next retry, for any process to make;
a redelivery asked of any process sends the bytes Redis keeps.

Jobs one process claims at once are delivered in the order they fell due,
one after the other for each user, so a message's statuses arrive in order
even when another process takes them over. Each job is one POST (several
updates when the fault profile batches them) with what its next attempt
needs: the signed bytes once made, the delivery's id, the attempt's number.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Protocol

from channels.whatsapp._shared_scripts import AGAIN, CLAIM, DONE, RELEASE
from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.delivery import Deliverer, Emit, PendingUpdate, WebhookTarget
from channels.whatsapp.envelope import batch_webhooks
from channels.whatsapp.faults import FaultDice
from channels.whatsapp.signing import SignedBody
from harness._tasks import cancel_until_done
from harness.clock import Clock
from harness.exceptions import HandshakeError, StoreError
from harness.trace import DeliveryAttempt

if TYPE_CHECKING:
    from harness.store import RedisStore

__all__ = ["SharedDeliverer"]

_log = logging.getLogger(__name__)
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
# Real seconds between two looks for jobs another process left due.
_POLL: Final = 0.2
# How long past due a job must be before a process that did not make it claims it: its own
# process claims it at once when it is alive, and this keeps the two from racing.
_GRACE: Final = timedelta(milliseconds=300)
# Real seconds between looks while Redis does not answer.
_AWAY: Final = 1.0
# Jobs claimed at once, at most.
_AT_ONCE: Final = 100
# Real seconds a claim holds beyond the webhook's timeout before another process may take it.
_LEASE_MARGIN: Final = 5.0

Hook = Callable[[PendingUpdate, str], None]


class _Shared(Protocol):
    """What of :class:`~channels.whatsapp.shared.SharedMeta` the jobs go through."""

    base: RedisStore
    node: int
    origin: str

    def key(self, name: str) -> str: ...

    async def store_call(self, key: str, command: Any, *, changes: bool = False) -> Any: ...

    def queue_ops(self, *ops: tuple[Any, ...]) -> None: ...

    def body_kept(self, item_id: str, record: Mapping[str, Any]) -> None: ...

    async def flush(self) -> None: ...


def _us(at: datetime) -> int:
    return (at - _EPOCH) // timedelta(microseconds=1)


def _at(us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=us)


class SharedDeliverer(Deliverer):
    """A :class:`Deliverer` whose pending work is jobs in Redis that any process may send."""

    def __init__(
        self,
        target: WebhookTarget,
        config: SimulatorConfig,
        clock: Clock,
        dice: FaultDice,
        emit: Emit,
        *,
        shared: _Shared,
        hooks: Mapping[str, Hook],
        verify: Callable[[], Coroutine[Any, Any, None]] | None = None,
    ) -> None:
        super().__init__(target, config, clock, dice, emit, verify=verify)
        self.shared = shared
        self._hooks = dict(hooks)
        self._holder = shared.origin
        self._made = itertools.count(1)
        self._lease_ms = int((config.webhook_timeout + _LEASE_MARGIN) * 1000)
        client = shared.base.client
        self._claim = client.register_script(CLAIM)
        self._done = client.register_script(DONE)
        self._again = client.register_script(AGAIN)
        self._release_all = client.register_script(RELEASE)
        self._keys = [shared.key(name) for name in ("due", "jobs", "leases", "holders")]
        self._poller = asyncio.get_running_loop().create_task(self._polling())

    # -- making jobs ---------------------------------------------------------------------

    def enqueue(self, update: PendingUpdate) -> None:
        """Make ``update`` a job due at ``update.due`` plus the profile's faults."""
        profile = self.dice.profile
        update.seq = next(self._seq)
        now = self.clock.now()
        delay = max((update.due - now).total_seconds(), 0.0) + self.dice.delivery_delay()
        if self.dice.roll("reorder", profile.reorder):
            delay += profile.reorder_window
            update.faults = (*update.faults, "reordered")
        if profile.batch > 1:
            delay += profile.batch_window  # what falls due meanwhile is claimed with it
        update.send_at = now + timedelta(seconds=delay)
        job = self._job([update], update.send_at, [update.item_id])
        update.unsent = self._count([update])
        self._spawn(self._deliver_own(job["id"], delay, update.unsent))

    def redeliver(self, item_id: str, *, reason: str = "redelivery") -> bool:
        """Send an item's last signed body again, byte for byte; False if never sent."""
        body = self.sent_bodies.get(item_id)
        if body is None:
            return False
        latest = self.latest_update(item_id, body)
        updates = [] if latest is None else [latest]
        job = self._job(updates, self.clock.now(), [item_id], faults=(reason,), body=body)
        self._spawn(self._deliver_own(job["id"], 0.0, self._count(updates)))
        return True

    def keep_body(self, item_id: str, record: Mapping[str, Any]) -> None:
        """A message's signed body as Redis keeps it (see :meth:`_remember`), for a redelivery."""
        self.sent_bodies[item_id] = _signed(record["body"])
        self._latest[item_id] = self._update(record["update"], sent=True)

    def _job(
        self,
        updates: Sequence[PendingUpdate],
        due: datetime,
        items: Sequence[str],
        *,
        faults: tuple[str, ...] = (),
        body: SignedBody | None = None,
    ) -> dict[str, Any]:
        """A new job, queued for Redis (written before the agent hears of what it is about)."""
        job: dict[str, Any] = {
            "id": f"{self._holder}-{next(self._made)}",
            "due": str(_us(due)),
            "items": list(items),
            "updates": [_plain(u) for u in updates],
            "faults": list(faults),
            "attempt": 0,
            "delivery": None,
            "first": None,
            "body": None if body is None else _body(body),
        }
        due_key, jobs_key = self._keys[:2]
        self.shared.queue_ops(
            ("hset", jobs_key, job["id"], json.dumps(job)),
            ("zadd", due_key, {job["id"]: int(job["due"])}),
        )
        return job

    def _update(self, plain: Mapping[str, Any], *, sent: bool | None = None) -> PendingUpdate:
        kind = plain["kind"]
        return PendingUpdate(
            kind=kind,
            item_id=plain["item"],
            user=plain["user"],
            payload=plain["payload"],
            due=self.clock.now(),
            faults=tuple(plain["faults"]),
            on_sending=self._hooks.get(kind),
            sent=plain["sent"] if sent is None else sent,
        )

    # -- claiming --------------------------------------------------------------------------

    async def _deliver_own(self, job_id: str, delay: float, unsent: list[str]) -> None:
        """Claim a job this process made once it falls due, and deliver it."""
        counted = len(unsent)
        try:
            await self.clock.sleep(delay)
            await self.shared.flush()  # the job is in Redis before anything claims it
            jobs = await self._claimed(self.clock.now(), job_id)
            if jobs:
                await self._attempt(jobs, unsent)
        except StoreError as exc:  # Redis is away: the job waits there for whoever can
            _log.warning("harness serve: %s; the webhook waits in Redis", exc)
        finally:
            self.pending_messages -= counted
            self._release(unsent)

    async def _claimed(self, now: datetime, job_id: str = "") -> list[dict[str, Any]]:
        args: list[int | str] = [_us(now), self._lease_ms, self._holder, _AT_ONCE, job_id]
        raw = await self.shared.store_call(
            "due", lambda c: self._claim(keys=self._keys, args=args, client=c), changes=True
        )
        jobs = []
        for job, before in zip(raw[::2], raw[1::2], strict=True):
            found = json.loads(job)
            found["taken"] = before in (b"!", "!")  # its holder stopped, perhaps mid-POST
            jobs.append(found)
        return jobs

    async def _polling(self) -> None:
        """Claim what other processes left due (they stopped), as it falls due."""
        while True:
            await asyncio.sleep(_POLL)
            try:
                jobs = await self._claimed(self.clock.now() - _GRACE)
            except StoreError as exc:
                _log.warning("harness serve: %s; looking for due webhooks again", exc)
                await asyncio.sleep(_AWAY)
                continue
            except Exception:  # a job this process can't read: the others go on being claimed
                _log.exception("harness serve: claiming due webhooks failed")
                continue
            if jobs:
                self._spawn(self._deliver_claimed(jobs))

    async def _deliver_claimed(self, jobs: list[dict[str, Any]]) -> None:
        """Deliver jobs claimed together: in the order they fell due, one at a time per user."""
        jobs.sort(key=lambda job: (int(job["due"]), job["id"]))
        size = self.dice.profile.batch
        if size > 1:
            groups = [jobs[i : i + size] for i in range(0, len(jobs), size)]
            await asyncio.gather(*(self._attempt(group, []) for group in groups))
            return
        by_user: dict[str, list[dict[str, Any]]] = {}
        for job in jobs:
            by_user.setdefault(job["updates"][0]["user"] if job["updates"] else "", []).append(job)

        async def in_turn(own: list[dict[str, Any]]) -> None:
            for job in own:
                await self._attempt([job], [])

        await asyncio.gather(*(in_turn(own) for own in by_user.values()))

    # -- delivering -----------------------------------------------------------------------

    async def _attempt(self, jobs: list[dict[str, Any]], unsent: list[str]) -> None:
        """One POST of claimed jobs; then they are over, or due again at the next retry."""
        try:
            await self._post(jobs, unsent)
        except StoreError as exc:  # the claims run out, and another process takes them over
            _log.warning("harness serve: %s; the webhook is left to its lease", exc)

    async def _post(self, jobs: list[dict[str, Any]], unsent: list[str]) -> None:
        carrier = jobs[0]
        updates = [self._update(plain) for job in jobs for plain in job["updates"]]
        items = [item for job in jobs for item in job["items"]]
        faults = tuple(dict.fromkeys([f for job in jobs for f in job["faults"]]))
        faults = tuple(dict.fromkeys([*faults, *(f for u in updates for f in u.faults)]))
        if len(jobs) > 1:
            faults = (*faults, "batched")
        if carrier["body"] is not None:
            body = _signed(carrier["body"])
        elif len(updates) == 1:
            body = SignedBody.create(updates[0].payload, self.config.app_secret)
        else:
            body = SignedBody.create(
                batch_webhooks([u.payload for u in updates]), self.config.app_secret
            )
        if carrier["attempt"] == 0 and carrier["body"] is None:  # a copy's bytes are kept
            self._remember(body, updates)
        if self._verify is not None:
            try:
                await self._verify()  # Meta delivers nothing to an endpoint it has not verified
            except HandshakeError as exc:
                self.dropped(updates, exc)
                await self._finish(jobs)
                return
        if any(job.get("taken") for job in jobs):
            for update in updates:  # the agent may have had it from the process that stopped
                update.sent = True
        delivery = carrier["delivery"] or f"d{self.shared.node}.{next(self._ids)}"
        first = self.clock.now() if carrier["first"] is None else _at(int(carrier["first"]))
        attempt = int(carrier["attempt"]) + 1
        for update in updates:
            if update.on_sending is not None and not (update.kind == "status" and update.sent):
                update.on_sending(update, delivery)
            update.sent = True
        result = await self._post_counted(body, updates, unsent)
        status, error, latency = result.status_code, result.error, float(result.latency_ms)
        tags = faults if attempt == 1 else (*faults, "retry")
        lost = self.dice.profile.answer_lost
        if status == 200 and attempt == 1 and self.dice.roll("answer-lost", lost):
            status, tags = 500, (*tags, "answer_lost")  # the agent took it; its 200 was lost
        self._emit(
            DeliveryAttempt.model_construct(
                at=self.clock.now(),
                user=updates[0].user if updates else None,
                delivery=delivery,
                attempt=attempt,
                items=tuple(items),
                status_code=status,
                error=error,
                latency_ms=latency,
                faults=tags,
            )
        )
        if status == 200 or attempt >= len(self._offsets):
            await self._finish(jobs)
            if "duplicate" not in faults and self.dice.roll(
                "duplicate", self.dice.profile.duplicate
            ):
                due = self.clock.now() + timedelta(seconds=self.dice.profile.duplicate_delay)
                copy = self._job(updates, due, items, faults=(*faults, "duplicate"), body=body)
                self._spawn(self._deliver_own(copy["id"], self.dice.profile.duplicate_delay, []))
            return
        again = {
            **carrier,
            "items": items,
            "updates": [_plain(u) for u in updates],
            "faults": list(faults),
            "attempt": attempt,
            "delivery": delivery,
            "first": str(_us(first)),
            "body": _body(body),
            "due": str(_us(first + timedelta(seconds=self._offsets[attempt]))),
        }
        await self._rescheduled(again, jobs[1:])

    def _remember(self, body: SignedBody, updates: list[PendingUpdate]) -> None:
        """Keep the signed bytes of the users' messages, here and in Redis, for a redelivery."""
        for update in updates:
            if update.kind != "message":
                continue  # a status is not delivered again on request
            self.sent_bodies[update.item_id] = body
            self._latest[update.item_id] = update
            record = {"body": _body(body), "update": _plain(update)}
            self.shared.body_kept(update.item_id, record)

    async def _finish(self, jobs: Sequence[dict[str, Any]]) -> None:
        for job in jobs:
            args = [job["id"], self._holder]
            await self.shared.store_call(
                "due",
                lambda c, a=args: self._done(keys=self._keys[1:], args=a, client=c),
                changes=True,
            )

    async def _rescheduled(self, job: dict[str, Any], merged: Sequence[dict[str, Any]]) -> None:
        args = [job["id"], self._holder, job["due"], json.dumps(job)]
        await self.shared.store_call(
            "due", lambda c: self._again(keys=self._keys, args=args, client=c), changes=True
        )
        await self._finish(merged)  # batched into the job: they go with it from now on

    # -- stopping ----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop claiming, stop what is under way, and hand its claims back to the other processes.

        Jobs not yet due stay in Redis for whichever process is alive when they are.
        """
        # A claim it made meanwhile is in Redis before the hand-back.
        await cancel_until_done(self._poller)
        await super().aclose()
        try:
            await self.shared.store_call(
                "due",
                lambda c: self._release_all(keys=self._keys, args=[self._holder], client=c),
                changes=True,
            )
        except StoreError as exc:
            _log.warning("harness serve: %s; its claims run out on their own", exc)


def _plain(update: PendingUpdate) -> dict[str, Any]:
    """An update as a job keeps it."""
    return {
        "kind": update.kind,
        "item": update.item_id,
        "user": update.user,
        "payload": update.payload,
        "faults": list(update.faults),
        "sent": update.sent,
    }


def _body(body: SignedBody) -> dict[str, str]:
    return {"bytes": body.body.decode("ascii"), "signature": body.signature}


def _signed(kept: Mapping[str, str]) -> SignedBody:
    return SignedBody(kept["bytes"].encode("ascii"), kept["signature"])
