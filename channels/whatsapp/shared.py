"""One Meta across processes: the simulator's state in Redis, for ``harness serve --redis``.

Several ``harness serve`` processes behind one address act as one Meta when
each attaches a :class:`SharedMeta` on the same Redis and key namespace.
What must agree at the instant it is asked is asked of Redis itself: the
24-hour windows (moved forward in one step there), the pair-rate and
throughput buckets (one Lua script each send, so two processes can't both
spend the last token), a user or a message another process registered a
moment ago (read on a miss). What
grows with the conversation is kept in Redis too, in the order Redis
received it: the event log and the outbox (lists with the absolute index
of their first entry, so ``?since=N`` means the same on every process), the
users, and the messages either way (hashes, bounded by the retention
policy's ``messages``); the logs are trimmed by the policy's ages too
(:mod:`channels.whatsapp._shared_state`). Webhooks due later are jobs any
process may claim (:mod:`channels.whatsapp.shared_delivery`). A process
that joins late loads all of it before it follows the others' changes.

Each process keeps its own copy of all that in memory, so the simulator's
synchronous lookups (a ``reply 2`` reference, a tap on the last buttons)
stay as fast as in one process. Every change a process makes is written to
Redis and published on one channel in the same transaction; the others
apply it to their copy as it comes (milliseconds later) and wake whoever
waits on it: a long-poll read (``?wait=``) or a call waiting for a user's
turn to end on process B wakes for an event appended by process A. Virtual
time is shared as an offset from real time: an ``advance`` on one process
moves every process's clock.

Writes are queued by the synchronous paths that make them (``record``)
and sent in order by one task; every read of the shared logs first sends
what is queued. A Redis that stops answering is reported as an outage
(:class:`~harness.exceptions.StoreUnavailable`: 503 on the control API,
Meta's 131016 on the Graph API), never as a wrong answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Protocol, cast

from channels.whatsapp._shared_limits import MICROS, spend_tokens
from channels.whatsapp._shared_scripts import APPEND, BEFORE_SEND, CLEAR, READ, REMEMBER, TRIM
from channels.whatsapp._shared_state import (
    Shares,
    keep_inbound,
    keep_sent,
    keep_user,
    load_state,
    trim_by_age,
    us,
)
from channels.whatsapp._shared_window import SharedSessionWindows
from channels.whatsapp.shared_delivery import SharedDeliverer
from channels.whatsapp.shared_media import SharedMediaStore
from channels.whatsapp.simuser import SentMessage, SimUser
from harness._tasks import cancel_until_done
from harness.clock import Clock, VirtualClock
from harness.exceptions import StoreError
from harness.store import RedisStore, check_store
from harness.trace import EVENT_ADAPTER, Event

if TYPE_CHECKING:
    import random

    from redis.asyncio.client import PubSub

    from channels.whatsapp.delivery import Deliverer

__all__ = ["LogWindow", "SharedMeta", "decode_events", "decode_sends", "open_shared"]

_log = logging.getLogger(__name__)

# Changes sent to Redis in one transaction at most.
_BATCH: Final = 500
# Turns of the event loop the flusher lets pass before it writes what was queued.
_GATHER: Final = 3
# Seconds a call waits at most to have heard every other process's changes.
_CAUGHT_UP: Final = 2.0
# Seconds between tries to reach Redis again from the background tasks.
_RETRY: Final = 0.5
# Real seconds between two trims of the shared logs by age.
_TRIM_EVERY: Final = 1.0


@dataclass(frozen=True, slots=True)
class LogWindow:
    """Entries of a shared log read from an absolute index, as the control API answers them."""

    items: list[bytes]
    first: int
    next: int
    dropped: int


async def open_shared(url: str, namespace: str, phone_number_id: str) -> SharedMeta:
    """Connect to the Redis at ``url`` and join the Meta kept under ``namespace`` there.

    Raises :class:`~harness.exceptions.StoreUnavailable` (one line) when Redis does not answer.
    """
    await check_store(url, wait=2.0)  # a wrong URL fails at once, not after retries
    base = RedisStore.from_url(url, namespace=namespace)
    node = await base.with_namespace(f"wa:{phone_number_id}").incr("nodes")
    shared = SharedMeta(base, phone_number_id, node=node)
    await shared.read_offset()
    return shared


def _ms(lifetime: timedelta) -> int:
    return max(1, lifetime // timedelta(milliseconds=1))


# What the other processes need not hear of: commands for Redis alone, signed bodies.
_UNTOLD: Final = frozenset({"ops", "body"})


def _told(change: dict[str, Any]) -> dict[str, Any]:
    """A change as the other processes are told it: a file's bytes stay in Redis."""
    if change["kind"] == "media":
        return {"kind": "media", "id": change["record"]["id"]}
    return change


class _Attaches(Shares, Protocol):
    """The simulator as it is attached: it learns what it shares."""

    shared: SharedMeta | None


class SharedMeta:
    """The simulator's state in Redis, shared by every process that opens the same namespace."""

    def __init__(self, base: RedisStore, phone_number_id: str, *, node: int = 0) -> None:
        #: The store the simulator is given (it adds ``wa:<phone_number_id>`` itself).
        self.base = base
        self.store = base.with_namespace(f"wa:{phone_number_id}")
        #: This process's number among those that joined (1 for the first).
        self.node = node
        #: How far virtual time is ahead of real time, for every process.
        self.offset = timedelta(0)
        #: Names this process on the channel, and as the holder of the webhooks it claims.
        self.origin = f"{node}-{secrets.token_hex(4)}"
        self._own = self.origin.encode()
        self._channel = self.key("changes")
        self._pending: list[dict[str, Any]] = []
        self._queued = asyncio.Event()
        self._lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._pubsub: PubSub | None = None
        self._sim: Shares | None = None
        client = base.client
        self._append = client.register_script(APPEND)
        self._read = client.register_script(READ)
        self._clear = client.register_script(CLEAR)
        self._remember = client.register_script(REMEMBER)
        self._before_send = client.register_script(BEFORE_SEND)
        self._trim = client.register_script(TRIM)
        # Marks this process published and waits to hear back (see caught_up).
        self._marks: dict[str, asyncio.Future[None]] = {}
        # Whether the scripts a transaction runs are known to Redis (a restart forgets them).
        self._loaded = False
        # The mark published behind the state read at joining, until it is heard back.
        self._joined = ""

    def key(self, name: str) -> str:
        """The full Redis key of ``name`` under this Meta's namespace."""
        return f"{self.store.namespace}:{name}"

    @property
    def sim(self) -> Shares:
        """The simulator this process shares (after :meth:`attach`)."""
        if self._sim is None:
            raise StoreError("the shared state is not attached to a simulator yet")
        return self._sim

    # -- joining and leaving ---------------------------------------------------------

    async def read_offset(self) -> None:
        """Read how far the shared virtual time is ahead of real time."""
        raw = await self.store.get("clock")
        self.offset = timedelta(microseconds=int(raw)) if raw else timedelta(0)

    def start(self) -> datetime:
        """Where this process's virtual clock starts: real time plus the shared offset."""
        return datetime.now(UTC).replace(microsecond=0) + self.offset

    async def attach(self, sim: _Attaches) -> None:
        """Share ``sim``: load what the others did so far, then follow and publish changes."""
        self._sim = sim
        sim.shared = self
        sim.windows = SharedSessionWindows(
            self.store, sim.clock, length=sim.windows.length.total_seconds()
        )
        pubsub = self.base.client.pubsub(ignore_subscribe_messages=True)
        await self.base.execute("changes", lambda _: pubsub.subscribe(self._channel))
        self._pubsub = pubsub
        # What the others did so far, read in one step with a mark published behind it: the
        # changes heard before the mark are in what was read, and are not applied twice.
        self._joined = secrets.token_hex(8)
        note = f"{self.origin} mark {self._joined}"
        await load_state(self, sim, note)
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._flushing()),
            loop.create_task(self._following()),
            loop.create_task(self._trimming()),
        ]

    async def aclose(self) -> None:
        """Send what is queued, stop following, and close the connection."""
        with contextlib.suppress(StoreError):
            await self.flush()
        await cancel_until_done(*self._tasks)
        if self._pubsub is not None:
            with contextlib.suppress(Exception):  # the connection may be gone already
                await cast(Any, self._pubsub).aclose()  # annotated only in newer redis-py
        await self.base.close()

    async def store_call(self, key: str, command: Any, *, changes: bool = False) -> Any:
        """Run a Redis command with the store's retries and one-line errors."""
        return await self.store.execute(key, command, changes=changes)

    # -- what this process changes ----------------------------------------------------

    def user_added(self, user: SimUser) -> None:
        """A user was registered here."""
        self._queue({"kind": "user", "user": asdict(user)})

    def inbound_added(self, wamid: str, user: str, payload: Mapping[str, Any], burst: str) -> None:
        """A user's message was made here."""
        self._queue(
            {"kind": "inbound", "wamid": wamid, "user": user, "payload": payload, "burst": burst}
        )

    def sent_added(self, sent: SentMessage) -> None:
        """The agent's message was accepted here."""
        self._queue(
            {
                "kind": "sent",
                "wamid": sent.wamid,
                "user": None if sent.user is None else sent.user.key,
                "send": {**asdict(sent.send), "body": dict(sent.send.body)},
                "at": sent.at.isoformat(),
            }
        )

    def outbox_added(self, body: Mapping[str, Any]) -> None:
        """A send entered the outbox here."""
        self._queue({"kind": "outbox", "body": dict(body), "us": us(self.sim.clock.now())})

    def media_added(self, record: Mapping[str, Any], lifetime: timedelta) -> None:
        """A file was stored here (``record`` as :func:`~.shared_media.media_record` makes it)."""
        self._queue({"kind": "media", "record": record, "ms": _ms(lifetime)})

    def media_deleted(self, media_id: str) -> None:
        """A file was deleted here."""
        self._queue({"kind": "unmedia", "id": media_id})

    def link_issued(self, token: str, media_id: str, lifetime: timedelta) -> None:
        """A download URL was issued here."""
        expires = (self.sim.clock.now() + lifetime).isoformat()
        link = {"media_id": media_id, "expires": expires}
        self._queue({"kind": "link", "token": token, "link": link, "ms": _ms(lifetime)})

    async def read_media(self, media_id: str) -> bytes | None:
        """A file another process stored, as :func:`media_record` wrote it; None if gone."""
        return await self.store.get(f"media:{media_id}")

    async def media_kept(self, media_id: str) -> bool:
        """Tell whether a file is still in Redis (no process has deleted it, nor has it expired)."""
        name = f"media:{media_id}"
        kept: int = await self.store_call(name, lambda c: c.exists(self.key(name)))
        return kept > 0

    async def read_link(self, token: str) -> bytes | None:
        """A download URL another process issued: its media id and expiry; None if gone."""
        return await self.store.get(f"link:{token}")

    def media_store(
        self, clock: Clock, public_url: str, *, rng: random.Random | None = None
    ) -> SharedMediaStore:
        """A media store whose files every process of this Meta can use."""
        return SharedMediaStore(self, clock, public_url, rng=rng)

    def event_recorded(self, event: Event) -> None:
        """An event was recorded here."""
        dumped = EVENT_ADAPTER.dump_python(event, mode="json")
        self._queue({"kind": "event", "event": dumped, "us": us(event.at)})

    def queue_ops(self, *ops: tuple[Any, ...]) -> None:
        """Redis commands (name, then arguments) to run with the next changes, not told."""
        self._queue({"kind": "ops", "ops": ops})

    def body_kept(self, item_id: str, record: Mapping[str, Any]) -> None:
        """A user's message went out signed (``record``): any process may redeliver it."""
        self._queue({"kind": "body", "wamid": item_id, "record": record})

    async def fetch_body(self, item_id: str, deliverer: Deliverer) -> None:
        """Make sure ``deliverer`` holds a user's message's signed body, sent by any process."""
        if item_id in deliverer.sent_bodies or not isinstance(deliverer, SharedDeliverer):
            return
        raw = await self.store_call("bodies", lambda c: c.hget(self.key("bodies"), item_id))
        if raw is not None:
            deliverer.keep_body(item_id, json.loads(raw))

    async def advanced(self, previous: datetime) -> None:
        """Virtual time jumped here from ``previous``: every process's clock jumps with it."""
        delta = (self.sim.clock.now() - previous) // timedelta(microseconds=1)
        offset = await self.store.incr("clock", delta)
        self.offset += timedelta(microseconds=delta)
        await self._catch_up(offset)  # another process's jump meanwhile, if any
        self._queue({"kind": "clock", "offset": offset})
        await self.flush()

    async def sync_clock(self) -> None:
        """Jump this process's clock as far as the others have jumped theirs, if further."""
        raw = await self.store.get("clock")
        if raw:
            await self._catch_up(int(raw))

    async def _catch_up(self, offset: int) -> None:
        missing = timedelta(microseconds=offset) - self.offset
        if missing <= timedelta(0):
            return
        self.offset += missing
        clock = self.sim.clock
        if isinstance(clock, VirtualClock):
            # At once, not step by step: what falls due wakes, and nothing here waits for it
            # (a request this process serves may be what the woken work waits on).
            clock.advance(missing, reason="advance elsewhere")

    def _queue(self, change: dict[str, Any]) -> None:
        self._pending.append(change)
        self._queued.set()

    async def flush(self) -> None:
        """Send every queued change to Redis, in order, and publish it to the other processes."""
        async with self._lock:
            while self._pending:
                batch = self._pending[:_BATCH]
                await self._write(batch)
                del self._pending[: len(batch)]

    async def _write(self, batch: Sequence[dict[str, Any]]) -> None:
        policy = self.sim.retention.policy
        events = [c for c in batch if c["kind"] == "event"]
        outbox = [c for c in batch if c["kind"] == "outbox"]
        told = [_told(change) for change in batch if change["kind"] not in _UNTOLD]
        # Each message starts with its origin: a process skips its own without reading them.
        message = f"{self.origin} {json.dumps(told)}"

        async def run(client: Any) -> Any:
            pipe = client.pipeline(transaction=True)
            for change in batch:
                kind = change["kind"]
                if kind == "user":
                    user = change["user"]
                    raw = json.dumps(user)
                    for alias in {user["user_id"], user["wa_id"]} - {None}:
                        pipe.hset(self.key("users"), alias, raw)
                elif kind == "media":
                    record = change["record"]
                    pipe.set(self.key(f"media:{record['id']}"), json.dumps(record), px=change["ms"])
                elif kind == "unmedia":
                    pipe.delete(self.key(f"media:{change['id']}"))
                elif kind == "link":
                    link = json.dumps(change["link"])
                    pipe.set(self.key(f"link:{change['token']}"), link, px=change["ms"])
                elif kind in ("inbound", "sent", "body"):
                    name = "bodies" if kind == "body" else kind
                    keys = [self.key(name), self.key(f"{name}:order")]
                    kept = change["record"] if kind == "body" else change
                    args = [policy.messages or 0, change["wamid"], json.dumps(kept)]
                    pipe.evalsha(self._remember.sha, len(keys), *keys, *args)
                elif kind == "ops":
                    for name, *args in change["ops"]:
                        getattr(pipe, name)(*args)
            for name, items, cap in (
                ("events", events, policy.events),
                ("outbox", outbox, policy.outbox),
            ):
                if items:
                    keys = [self.key(name), self.key(f"{name}:first"), self.key(f"{name}:at")]
                    field = "event" if name == "events" else "body"
                    entries = [json.dumps(c[field]) for c in items]
                    times = [c["us"] for c in items]
                    args = [cap or 0, len(items), *entries, *times]
                    pipe.evalsha(self._append.sha, len(keys), *keys, *args)
            if told:
                pipe.publish(self._channel, message)
            return await pipe.execute()

        if not self._loaded:
            await self.store_call("scripts", self._load_scripts)
            self._loaded = True
        try:
            await self.store_call("changes", run, changes=True)
        except StoreError:
            self._loaded = False  # Redis may have restarted, without the scripts
            raise

    async def _load_scripts(self, client: Any) -> None:
        for script in (self._remember, self._append):
            await client.script_load(script.script)

    async def _flushing(self) -> None:
        """Send queued changes as they come; keep them and try again while Redis is away."""
        while True:
            await self._queued.wait()
            # What the same step changes next (a send, its event, its outbox entry) goes along.
            for _ in range(_GATHER):
                await asyncio.sleep(0)
            self._queued.clear()
            try:
                await self.flush()
            except StoreError as exc:
                _log.warning("harness serve: %s; trying again", exc)
                await asyncio.sleep(_RETRY)
                self._queued.set()

    async def _trimming(self) -> None:
        """Apply the retention policy's age limits to the logs in Redis, once a second."""
        policy = self.sim.retention.policy
        if policy.events_for is None and policy.outbox_for is None:
            return
        while True:
            await asyncio.sleep(_TRIM_EVERY)
            try:
                await trim_by_age(self, self.sim, self._trim)
            except StoreError as exc:
                _log.warning("harness serve: %s; trimming the logs later", exc)

    # -- what the other processes change ---------------------------------------------------

    async def _following(self) -> None:
        """Apply what the other processes publish, in the order Redis received it."""
        assert self._pubsub is not None
        pubsub = self._pubsub
        while True:
            try:
                message = await pubsub.get_message(timeout=1.0)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a lost connection: the client subscribes again
                _log.warning("harness serve: following Redis failed (%s); retrying", exc)
                await asyncio.sleep(_RETRY)
                continue
            if message is None or message.get("type") != "message":
                continue
            origin, _, told = bytes(message["data"]).partition(b" ")
            if told.startswith(b"mark "):
                token = told[5:].decode()
                if origin == self._own and token == self._joined:
                    self._joined = ""  # what follows is newer than what was loaded
                mark = self._marks.get(token) if origin == self._own else None
                if mark is not None and not mark.done():
                    mark.set_result(None)
                continue
            if origin == self._own:
                continue
            for change in json.loads(told):
                if self._joined and change["kind"] != "clock":
                    continue  # in what was loaded already (a clock only moves forward)
                try:
                    await self._apply(change)
                except Exception:  # one change this process can't apply: go on with the rest
                    _log.exception("could not apply a %s from another process", change["kind"])

    async def _apply(self, change: Mapping[str, Any]) -> None:
        sim = self.sim
        kind = change["kind"]
        if kind == "user":
            keep_user(sim, change["user"])
        elif kind == "inbound":
            keep_inbound(sim, change)
        elif kind == "sent":
            keep_sent(sim, change)
        elif kind == "event":
            event = EVENT_ADAPTER.validate_python(change["event"])
            sim.events.append(event)
            sim.activity.note(event)
            sim.retention.noted(event)
        elif kind == "clock":
            await self._catch_up(int(change["offset"]))
        elif kind == "unmedia" and isinstance(sim.media, SharedMediaStore):
            sim.media.forget_here(change["id"])

    async def caught_up(self, *, within: float = _CAUGHT_UP) -> None:
        """Return once every change published so far by any process has been applied here.

        A mark published on the channel comes back after everything published
        before it, so hearing it means the rest has been heard (and applied).
        After ``within`` seconds without it, go on with what has been heard.
        """
        token = secrets.token_hex(8)
        mark: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._marks[token] = mark
        note = f"{self.origin} mark {token}"
        try:
            await self.store_call("changes", lambda c: c.publish(self._channel, note))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(mark, within)
        finally:
            del self._marks[token]

    # -- asking Redis when this process hasn't heard yet -----------------------------------

    async def fetch_user(self, key: str) -> None:
        """Make sure a user another process registered is known here."""
        if key in self.sim._users:
            return
        raw = await self.store_call("users", lambda c: c.hget(self.key("users"), key))
        if raw is not None:
            keep_user(self.sim, json.loads(raw))

    async def fetch_message(self, wamid: str) -> None:
        """Make sure a message (a user's or the agent's) another process made is known here."""
        sim = self.sim
        if not wamid or wamid in sim._inbound or wamid in sim._sent:
            return
        for kind in ("inbound", "sent"):
            raw = await self.store_call(kind, lambda c, k=kind: c.hget(self.key(k), wamid))
            if raw is not None:
                change = json.loads(raw)
                if change["user"] is not None:
                    await self.fetch_user(change["user"])
                (keep_inbound if kind == "inbound" else keep_sent)(sim, change)
                return

    # -- limits ---------------------------------------------------------------------------

    async def check_limits(self, user: str | None) -> None:
        """Catch up with the shared clock, then spend a throughput token and a pair-rate one.

        One call to Redis (:func:`~channels.whatsapp._shared_limits.spend_tokens`): the
        clock another process moved counts for this send's window. Raises the limit's
        error (130429, 131056) when a bucket is empty.
        """
        spent = await spend_tokens(self, self.sim, user, self._before_send)
        refused, missing, offset, buckets = spent
        await self._catch_up(offset)
        if refused:
            limiter, name = buckets[refused - 1]
            raise limiter.refusal(name, missing / limiter.interval.denominator / MICROS)

    # -- the shared logs -----------------------------------------------------------------

    async def read_log(self, name: str, since: int) -> LogWindow:
        """The entries of ``events`` or ``outbox`` from absolute index ``since``."""
        await self.flush()
        keys = [self.key(name), self.key(f"{name}:first")]
        first, length, items = await self.store_call(
            name, lambda c: self._read(keys=keys, args=[since], client=c)
        )
        first, length = int(first), int(length)
        return LogWindow(list(items), first, first + length, max(first - since, 0))

    async def clear_log(self, name: str, before: int | None) -> tuple[int, int]:
        """Drop the entries before absolute index ``before`` (all, if None): (first, next) after."""
        await self.flush()
        keys = [self.key(name), self.key(f"{name}:first"), self.key(f"{name}:at")]
        first, length = await self.store_call(
            name,
            lambda c: self._clear(keys=keys, args=[-1 if before is None else before], client=c),
            changes=True,
        )
        return int(first), int(first) + int(length)

    async def forget_messages(self) -> None:
        """Forget every message either way, in Redis (each process forgets its own copy)."""
        keys = [self.key(k) for k in ("inbound", "inbound:order", "sent", "sent:order")]
        await self.store_call("messages", lambda c: c.delete(*keys))


def decode_events(items: Sequence[bytes]) -> list[Event]:
    """Events as read from the shared log."""
    return [EVENT_ADAPTER.validate_json(item) for item in items]


def decode_sends(items: Sequence[bytes]) -> list[dict[str, Any]]:
    """Sends as read from the shared outbox."""
    return [json.loads(item) for item in items]
