"""How much of the past a long-running simulator keeps, and what it forgets first.

``harness serve`` runs for days, and without limits its event log, its
outbox and what it remembers of each message grow with every turn. A
:class:`RetentionPolicy` bounds each of them by count and by age (on the
simulator's clock as it runs, not its jumps: after ``advance 25h`` what came
before is as old as it was, and still there to read);
:class:`Retention` applies it to one simulator as events are recorded, and
answers the control API's readers in absolute indices.

What is forgotten, oldest first, and what it means afterwards:

- events beyond the count or older than the age. A conversation whose user
  did something within ``active`` keeps its current turn whole (from the
  user's first message since the agent last sent them anything); to bound
  that, the log never holds more than twice its count. Indices stay
  absolute: event ``i`` is the ``i``-th ever recorded, so a reader asking
  from an index already dropped is answered from the first kept one and told
  how many it missed. ``reply N`` keeps counting from the agent's first
  message to the user.
- sends in the outbox beyond its count or older than its age.
- what the simulator remembers of each message, users' and the agent's:
  the latest ``messages`` of each, none older than ``messages_for``. A
  forgotten id is answered as Meta answers an id it does not know: marking
  it read or typing under it fails with 131009, a reaction to it gets a
  failed status with 131009, quoting it, tapping its buttons or
  redelivering it is refused (400, or 409 for a tap). Statuses already on
  their way still arrive. Signed status webhooks are not kept once sent
  (nothing delivers a status again on request).
- media past Meta's lifetime (7 days for a user's, 30 for an upload), and
  beyond ``media`` files the oldest; expired download links. (The virtual
  clock keeps only its latest jumps itself.)

Users, their windows and their BSUIDs are kept: they grow with the number
of users, not of turns. The default policy keeps everything and costs
nothing, so in-process runs (``harness run``, the scenario runner) are as
before; ``harness serve`` sets :data:`SERVE_RETENTION` unless told otherwise.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Generic, Protocol, TypeVar

from channels.whatsapp.retention_policy import SERVE_RETENTION, RetentionPolicy
from harness.clock import Clock
from harness.exceptions import StepError
from harness.references import LAST_REPLY, MessageRef, agent_replies
from harness.trace import ClockJump, Event, InboundMessage, OutboundSend

if TYPE_CHECKING:
    from channels.whatsapp.delivery import Deliverer
    from channels.whatsapp.media import MediaStore
    from channels.whatsapp.simuser import ReceivedMessage, SentMessage

__all__ = ["SERVE_RETENTION", "Retention", "RetentionPolicy", "Snapshot", "Window"]

T = TypeVar("T")
# Checking the age limits and pruning the per-message maps costs a pass over them:
# it is done once every this many events (and before every read).
_SWEEP_EVERY: Final = 256


class _Remembers(Protocol):
    """What retention reaches into: the simulator's logs and per-message maps."""

    clock: Clock
    events: list[Event]
    outbox: list[dict[str, Any]]
    media: MediaStore
    _sent: dict[str, SentMessage]
    _inbound: dict[str, ReceivedMessage]
    _sent_items: set[str]
    _burst_of: dict[str, str]
    _status_seen: set[str]
    _conversations: dict[tuple[str, str], tuple[str, datetime]]
    _deliverer: Deliverer | None


@dataclass(slots=True)
class _Turn:
    """A user's current turn: where it starts in the log, and when the user was last seen."""

    start: int
    last: datetime
    answered: bool = False
    #: When the turn began (what the logs in Redis are trimmed by: their indices are not these).
    since: datetime | None = None


@dataclass(frozen=True, slots=True)
class Window(Generic[T]):
    """Events or sends read from an absolute index, with what was no longer kept."""

    items: Sequence[T]
    #: The absolute index of the first one kept.
    first: int
    #: The absolute index the next one will have.
    next: int
    #: How many of those asked for are no longer kept.
    dropped: int


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything kept at one instant, with the absolute index of the first event and send."""

    at: datetime
    events: list[Event]
    events_first: int
    outbox: list[dict[str, Any]]
    outbox_first: int


class Retention:
    """A policy applied to one simulator, with the absolute offsets of what it dropped."""

    def __init__(self, sim: _Remembers, policy: RetentionPolicy | None = None) -> None:
        self.sim = sim
        self.policy = policy or RetentionPolicy()
        self._keeps_all = self.policy.keeps_all  # checked at every event: in-process runs
        #: The absolute index of ``sim.events[0]``: how many events were dropped.
        self.events_first = 0
        #: The absolute index of ``sim.outbox[0]``: how many sends were dropped.
        self.outbox_first = 0
        #: How many messages (either way) were forgotten.
        self.messages_forgotten = 0
        self._turns: dict[str, _Turn] = {}
        self._replies_dropped: dict[str, int] = {}
        self._outbox_times: deque[datetime] = deque()
        self._since_sweep = 0
        # The counts a sweep left: one that could not bring a count under its cap (an active
        # conversation keeps its turn) is not forced again until the count has grown once more.
        self._swept_sizes: tuple[int, ...] = (0, 0, 0, 0)
        #: The clock's jumps (``advance``), from and to, oldest first: ages skip them.
        self._jumps: deque[tuple[datetime, datetime]] = deque()

    @property
    def events_next(self) -> int:
        """The absolute index the next event recorded will have."""
        return self.events_first + len(self.sim.events)

    @property
    def outbox_next(self) -> int:
        """The absolute index the next send in the outbox will have."""
        return self.outbox_first + len(self.sim.outbox)

    # -- as events are recorded ------------------------------------------------------

    def noted(self, event: Event) -> None:
        """``event`` was just appended to the log: follow the turns, prune when due."""
        if self._keeps_all:
            return
        if isinstance(event, ClockJump) and event.at > event.previous:
            self._jumps.append((event.previous, event.at))
        # The event's own time, not the clock's: an event another process recorded
        # arrives here later, perhaps after the shared clock has moved on.
        now = event.at
        if isinstance(event, InboundMessage) and event.user is not None and not event.duplicate:
            turn = self._turns.get(event.user)
            if turn is None or turn.answered:
                turn = self._turns[event.user] = _Turn(self.events_next - 1, now, since=now)
            turn.last = now
        elif isinstance(event, OutboundSend) and event.is_message and event.user is not None:
            turn = self._turns.get(event.user)
            if turn is not None:
                turn.answered = True
                turn.last = now
        outbox = self.sim.outbox
        while len(self._outbox_times) < len(outbox):
            self._outbox_times.append(now)  # the send was just appended, with this event
        self._since_sweep += 1
        if self._since_sweep >= _SWEEP_EVERY or self._over_count():
            self.sweep()

    def older_than(self, now: datetime, age: timedelta) -> datetime:
        """The time before which things are older than ``age`` at ``now``.

        Age counts the clock's time as it ran, not its jumps: ``advance 25h``
        ages nothing.
        """
        at, left = now, age
        for start, end in reversed(self._jumps):
            if end > at:  # a jump recorded after now (another process's): none of it counts
                end = max(start, at)
            ran = at - end
            if ran >= left:
                break
            left -= ran
            at = min(start, at)
        return at - left

    def active_since(self, now: datetime) -> datetime | None:
        """When the earliest current turn of a conversation still active began (None if none)."""
        horizon = self.older_than(now, self.policy.active)
        starts = [t.since for t in self._turns.values() if t.last >= horizon and t.since]
        return min(starts, default=None)

    def _sizes(self) -> tuple[int, ...]:
        sim = self.sim
        return (len(sim.events), len(sim.outbox), len(sim._inbound), len(sim._sent))

    def _over_count(self) -> bool:
        policy = self.policy
        caps = (policy.events, policy.outbox, policy.messages, policy.messages)
        return any(
            cap is not None and size > max(cap, swept) + _slack(cap)
            for cap, size, swept in zip(caps, self._sizes(), self._swept_sizes, strict=True)
        )

    # -- forgetting ----------------------------------------------------------------

    def sweep(self) -> None:
        """Apply the policy now: drop what is over its count or older than its age."""
        self._since_sweep = 0
        if self._keeps_all:
            return
        now = self.sim.clock.now()
        self._forget_jumps(now)
        self._drop_events(self._events_cut(now))
        self._drop_outbox(self._outbox_cut(now))
        self._forget_messages(now)
        self._forget_the_rest(now)
        self._swept_sizes = self._sizes()

    def _forget_jumps(self, now: datetime) -> None:
        """Drop the jumps before the oldest horizon any age of the policy reaches now."""
        policy = self.policy
        ages = [policy.active, policy.events_for, policy.outbox_for, policy.messages_for]
        oldest = self.older_than(now, max(age for age in ages if age is not None))
        while self._jumps and self._jumps[0][1] <= oldest:
            self._jumps.popleft()

    def _events_cut(self, now: datetime) -> int:
        """How many events from the front of the log to drop now."""
        policy, events = self.policy, self.sim.events
        cut = 0
        if policy.events is not None:
            cut = max(len(events) - policy.events, 0)
        if policy.events_for is not None:
            horizon = self.older_than(now, policy.events_for)
            cut = max(cut, _leading_older(events, horizon, lambda e: e.at))
        if cut == 0:
            return 0
        # An active conversation keeps its current turn whole; the log stays under twice its count.
        horizon = self.older_than(now, policy.active)
        for user, turn in list(self._turns.items()):
            if turn.last < horizon:
                del self._turns[user]
            else:  # what is left of it, if the bound below has cut into it
                cut = min(cut, max(turn.start - self.events_first, 0))
        if policy.events is not None:
            cut = max(cut, len(events) - 2 * policy.events)
        return cut

    def _drop_events(self, cut: int) -> None:
        if cut <= 0:
            return
        events = self.sim.events
        for user, count in _replies_by_user(events[:cut]).items():
            self._replies_dropped[user] = self._replies_dropped.get(user, 0) + count
        del events[:cut]
        self.events_first += cut

    def _outbox_cut(self, now: datetime) -> int:
        policy, times = self.policy, self._outbox_times
        cut = 0
        if policy.outbox is not None:
            cut = max(len(self.sim.outbox) - policy.outbox, 0)
        if policy.outbox_for is not None:
            horizon = self.older_than(now, policy.outbox_for)
            cut = max(cut, _leading_older(times, horizon, lambda at: at))
        return cut

    def _drop_outbox(self, cut: int) -> None:
        if cut <= 0:
            return
        del self.sim.outbox[:cut]
        for _ in range(min(cut, len(self._outbox_times))):
            self._outbox_times.popleft()
        self.outbox_first += cut

    def _forget_messages(self, now: datetime, *, everything: bool = False) -> None:
        policy, sim = self.policy, self.sim
        cap = 0 if everything else policy.messages
        age = policy.messages_for
        horizon = None if age is None else self.older_than(now, age)
        inbound = sim._inbound
        while inbound:
            wamid = next(iter(inbound))
            old = horizon is not None and _received_at(inbound[wamid].item) < horizon
            if not old and (cap is None or len(inbound) <= cap):
                break
            del inbound[wamid]
            sim._burst_of.pop(wamid, None)
            self.messages_forgotten += 1
        sent = sim._sent
        while sent:
            wamid = next(iter(sent))
            old = horizon is not None and sent[wamid].at < horizon
            if not old and (cap is None or len(sent) <= cap):
                break
            del sent[wamid]
            self.messages_forgotten += 1
        # What hangs off the messages goes with them (statuses may come after a message left).
        sim._sent_items.intersection_update(inbound)
        seen = {key for key in sim._status_seen if key.rpartition(":")[0] in sent}
        if len(seen) != len(sim._status_seen):
            sim._status_seen.clear()
            sim._status_seen.update(seen)
        if sim._deliverer is not None:
            sim._deliverer.forget(lambda item_id: item_id in inbound)

    def _forget_the_rest(self, now: datetime) -> None:
        sim = self.sim
        for key in [k for k, (_, expires) in sim._conversations.items() if expires <= now]:
            del sim._conversations[key]
        sim.media.forget(keep=self.policy.media)

    def clear(
        self,
        *,
        events_before: int | None = None,
        outbox_before: int | None = None,
        messages: bool = False,
    ) -> None:
        """Drop the events and sends before the given absolute indices (all of them by default).

        Given ``messages``, forget every message too (their ids then answer
        as unknown). Active conversations are not spared: this is asked for.
        """
        self._swept_sizes = (0, 0, 0, 0)  # counts fall: a forced sweep may be due again soon
        events_cut = len(self.sim.events)
        if events_before is not None:
            events_cut = min(max(events_before - self.events_first, 0), events_cut)
        self._drop_events(events_cut)
        outbox_cut = len(self.sim.outbox)
        if outbox_before is not None:
            outbox_cut = min(max(outbox_before - self.outbox_first, 0), outbox_cut)
        self._drop_outbox(outbox_cut)
        if messages:
            self._forget_messages(self.sim.clock.now(), everything=True)

    # -- reading -----------------------------------------------------------------------

    def events_since(self, since: int) -> Window[Event]:
        """The events kept from absolute index ``since`` on (from the first kept, if later)."""
        return _window(self.sim.events, self.events_first, since)

    def outbox_since(self, since: int) -> Window[dict[str, Any]]:
        """The sends kept from absolute index ``since`` on (from the first kept, if later)."""
        return _window(self.sim.outbox, self.outbox_first, since)

    def snapshot(self) -> Snapshot:
        """Everything kept now (after applying the policy), for an export."""
        self.sweep()
        return Snapshot(
            at=self.sim.clock.now(),
            events=list(self.sim.events),
            events_first=self.events_first,
            outbox=list(self.sim.outbox),
            outbox_first=self.outbox_first,
        )

    def resolve(self, ref: MessageRef, events: Sequence[Event], user: str) -> str:
        """The wamid ``ref`` names in ``user``'s chat, counting replies the log has dropped."""
        gone = self._replies_dropped.get(user, 0)
        if gone and ref.number is not None:
            if ref.number <= gone:
                raise StepError(
                    f"{ref.text}: the agent's first {gone} messages to this user are older"
                    " than the server keeps"
                )
            ref = MessageRef(ref.text, number=ref.number - gone)
        if gone and ref.number is None and ref.label is None and not agent_replies(events, user):
            raise StepError(
                f"{LAST_REPLY}: the agent's messages to this user are older than the server keeps"
            )
        return ref.resolve(events, user)


def _window(items: list[T], first: int, since: int) -> Window[T]:
    start = min(max(since, first), first + len(items))
    return Window(
        items=items[start - first :],
        first=first,
        next=first + len(items),
        dropped=max(first - since, 0),
    )


def _slack(cap: int) -> int:
    """How far a count may run over before a sweep is forced (sweeps are batched)."""
    return max(cap // 16, 1)


def _leading_older(items: Iterable[Any], horizon: datetime, at: Callable[[Any], datetime]) -> int:
    """How many items at the front were recorded before ``horizon``."""
    count = 0
    for item in items:
        if at(item) >= horizon:
            break
        count += 1
    return count


def _replies_by_user(events: Sequence[Event]) -> dict[str, int]:
    """How many of the agent's replies (as ``reply N`` counts them) each user has in ``events``."""
    sends: dict[str, list[Event]] = {}
    for event in events:
        if isinstance(event, OutboundSend) and event.user is not None:
            sends.setdefault(event.user, []).append(event)
    counts = {user: len(agent_replies(own, user)) for user, own in sends.items()}
    return {user: count for user, count in counts.items() if count}


def _received_at(item: dict[str, Any]) -> datetime:
    """When a user's message was sent, from its ``timestamp``."""
    return datetime.fromtimestamp(int(item["timestamp"]), UTC)
