"""The shared state as one process reads it in (:mod:`channels.whatsapp.shared`).

What fills in the simulator's own copy from a change another process made
(a user, a user's message, the agent's), what a process joining late loads
of everything the others did before it (users, the event log and the
outbox with their absolute indices, both message registries), and the age
limits of the retention policy applied to the logs in Redis: trimmed
atomically, by age and count, keeping an active conversation's current turn
whole as the policy does in memory.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Protocol

from channels.whatsapp.simuser import ReceivedMessage, SentMessage, SimUser
from channels.whatsapp.validation import ValidatedSend
from harness.trace import EVENT_ADAPTER, Event

if TYPE_CHECKING:
    from redis.commands.core import AsyncScript

    from channels.whatsapp.activity import Activity
    from channels.whatsapp.config import SimulatorConfig
    from channels.whatsapp.faults import FaultDice
    from channels.whatsapp.limits import PairRateLimiter, ThroughputLimiter
    from channels.whatsapp.media import MediaStore
    from channels.whatsapp.retention import Retention
    from channels.whatsapp.window import SessionWindows
    from harness.clock import Clock

__all__ = [
    "SharedRedis",
    "Shares",
    "keep_inbound",
    "keep_sent",
    "keep_user",
    "load_state",
    "trim_by_age",
    "us",
]

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


class SharedRedis(Protocol):
    """What of :class:`~channels.whatsapp.shared.SharedMeta` reads and writes Redis."""

    def key(self, name: str) -> str:
        """The full Redis key of ``name``."""
        ...

    async def store_call(self, key: str, command: Any, *, changes: bool = False) -> Any:
        """Run a Redis command with the store's retries and one-line errors."""
        ...


class Shares(Protocol):
    """What of the simulator the shared state reads and fills in."""

    config: SimulatorConfig
    clock: Clock
    dice: FaultDice
    events: list[Event]
    outbox: list[dict[str, Any]]
    activity: Activity
    retention: Retention
    media: MediaStore
    throughput: ThroughputLimiter
    pair_limit: PairRateLimiter
    windows: SessionWindows
    _users: dict[str, SimUser]
    _inbound: dict[str, ReceivedMessage]
    _last_inbound: dict[str, str]
    _sent: dict[str, SentMessage]
    _burst_of: dict[str, str]

    def _keep_user(self, user: SimUser) -> None: ...

    def record(self, event: Event) -> None: ...


def keep_user(sim: Shares, data: Mapping[str, Any]) -> SimUser:
    """A user another process registered, known here from now on."""
    user = SimUser(**data)
    known = sim._users.get(user.key)
    if known == user:
        return known  # the same object, so that identity checks on it hold
    sim._keep_user(user)
    return user


def keep_inbound(sim: Shares, change: Mapping[str, Any]) -> None:
    """A user's message another process made, known here (and redeliverable as their last)."""
    user = sim._users.get(change["user"])
    if user is None:
        return  # the user's own change comes first; nothing to attach this to otherwise
    wamid = change["wamid"]
    sim._inbound[wamid] = ReceivedMessage.of(user, change["payload"])
    sim._burst_of[wamid] = change["burst"]
    sim._last_inbound[user.key] = wamid


def keep_sent(sim: Shares, change: Mapping[str, Any]) -> None:
    """The agent's message another process accepted, known here."""
    user = None if change["user"] is None else sim._users.get(change["user"])
    send = ValidatedSend(**change["send"])
    at = datetime.fromisoformat(change["at"])
    sim._sent[change["wamid"]] = SentMessage(change["wamid"], user, send, at)


async def load_state(shared: SharedRedis, sim: Shares, note: str) -> None:
    """Load what the other processes did so far, and publish ``note`` in the same step.

    Read in one transaction with the note published last: a change the
    others published before the note is in what was read, one after it is not.
    """
    key = shared.key

    async def read(client: Any) -> list[Any]:
        pipe = client.pipeline(transaction=True)
        pipe.hgetall(key("users"))
        for kind in ("inbound", "sent"):
            pipe.hgetall(key(kind))
            pipe.lrange(key(f"{kind}:order"), 0, -1)
        for name in ("outbox", "events"):
            pipe.get(key(f"{name}:first"))
            pipe.lrange(key(name), 0, -1)
        pipe.publish(key("changes"), note)
        return list(await pipe.execute())

    users, inbound, inbound_order, sent, sent_order, *logs, _ = await shared.store_call(
        "state", read
    )
    for raw in users.values():
        keep_user(sim, json.loads(raw))
    for keep, found, order in (
        (keep_inbound, inbound, inbound_order),
        (keep_sent, sent, sent_order),
    ):
        for wamid in order:
            raw = found.get(wamid)
            if raw is not None:
                keep(sim, json.loads(raw))
    outbox_first, outbox, events_first, events = logs
    retention = sim.retention
    retention.outbox_first = int(outbox_first or 0)
    sim.outbox.extend(json.loads(item) for item in outbox)
    retention.events_first = int(events_first or 0)
    for item in events:
        event = EVENT_ADAPTER.validate_json(item)
        sim.events.append(event)
        retention.noted(event)


def us(at: datetime) -> int:
    """An instant in microseconds since the epoch, as Redis keeps times."""
    return (at - _EPOCH) // timedelta(microseconds=1)


async def trim_by_age(shared: SharedRedis, sim: Shares, trim: AsyncScript) -> None:
    """Apply the policy's age limits to the event log and the outbox in Redis.

    The events a conversation still active has had since its current turn
    began are kept, as in memory; the log never holds more than twice its count.
    """
    retention = sim.retention
    policy = retention.policy
    now = sim.clock.now()
    kept_from = retention.active_since(now)
    for name, age, cap, since in (
        ("events", policy.events_for, policy.events, kept_from),
        ("outbox", policy.outbox_for, None, None),
    ):
        if age is None:
            continue
        keys = [shared.key(name), shared.key(f"{name}:first"), shared.key(f"{name}:at")]
        args = [us(retention.older_than(now, age)), cap or 0, -1 if since is None else us(since)]
        await shared.store_call(
            name, lambda c, k=keys, a=args: trim(keys=k, args=a, client=c), changes=True
        )
