"""The control API's readers on a server that shares its state (``harness serve --redis``).

The outbox, the event log, the conversation and the export are read from
the logs in Redis (:mod:`channels.whatsapp.shared`), so every process
behind one address answers the same entries at the same absolute indices,
whichever process made them. A read with ``?wait=`` wakes at the next event
of any process: the others' events reach this process as they are
published. :func:`conversation_of` builds one user's conversation (or
everyone's) from either kind of server's events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from channels.whatsapp.retention import Snapshot
from channels.whatsapp.shared import LogWindow, SharedMeta, decode_events, decode_sends
from channels.whatsapp.simulator import WhatsAppSimulator
from channels.whatsapp.simuser import SimUser
from harness.trace import Conversation, Event

__all__ = [
    "conversation_of",
    "events_of",
    "sends_of",
    "shared_clear",
    "shared_conversation",
    "shared_read",
    "shared_snapshot",
]

_Item = TypeVar("_Item")


async def shared_read(
    sim: WhatsAppSimulator,
    shared: SharedMeta,
    name: str,
    since: int,
    wait: float,
    chosen: Callable[[LogWindow], list[_Item]],
) -> tuple[list[_Item], LogWindow]:
    """What ``chosen`` picks of log ``name`` from ``since``, waiting up to ``wait`` s for some."""
    window = await shared.read_log(name, since)
    found = chosen(window)
    loop = asyncio.get_running_loop()
    end = loop.time() + wait
    while not found and (left := end - loop.time()) > 0:
        await sim.activity.next_change(left)
        window = await shared.read_log(name, since)
        found = chosen(window)
    return found, window


def events_of(window: LogWindow, keys: set[str] | None) -> list[Event]:
    """The events read, for the users ``keys`` name if given."""
    events = decode_events(window.items)
    return events if keys is None else [e for e in events if e.user in keys]


def sends_of(window: LogWindow, keys: set[str] | None) -> list[dict[str, Any]]:
    """The sends read, to the users ``keys`` name if given."""
    sends = decode_sends(window.items)
    if keys is None:
        return sends
    return [m for m in sends if m.get("to") in keys or m.get("recipient") in keys]


def conversation_of(
    events: Sequence[Event], users: Iterable[SimUser], keys: set[str] | None
) -> Conversation:
    """The conversation of ``events``: of the user ``keys`` name if given, else of everyone.

    One user's conversation holds the events about them (their messages, the
    agent's sends to them and their statuses, as ``/_harness/events?user=``
    reads them), turned into turns, with them alone as its participant.
    """
    participants = tuple(u.participant() for u in users)
    if keys is not None:
        events = [e for e in events if e.user in keys]
        participants = tuple(p for p in participants if p.id in keys)
    return Conversation.from_events(events, channel="whatsapp", participants=participants)


async def shared_conversation(
    sim: WhatsAppSimulator, shared: SharedMeta, keys: set[str] | None = None
) -> Conversation:
    """The conversation as every process sees it (of the user ``keys`` name, if given)."""
    window = await shared.read_log("events", 0)
    return conversation_of(decode_events(window.items), sim.users, keys)


async def shared_snapshot(sim: WhatsAppSimulator, shared: SharedMeta) -> Snapshot:
    """Everything the shared logs keep now, for an export."""
    events = await shared.read_log("events", 0)
    outbox = await shared.read_log("outbox", 0)
    return Snapshot(
        at=sim.clock.now(),
        events=decode_events(events.items),
        events_first=events.first,
        outbox=decode_sends(outbox.items),
        outbox_first=outbox.first,
    )


async def shared_clear(
    sim: WhatsAppSimulator,
    shared: SharedMeta,
    *,
    events_before: int | None,
    outbox_before: int | None,
    messages: bool,
) -> tuple[tuple[int, int], tuple[int, int]]:
    """Drop the shared logs' entries before the indices given: (first, next) of each after.

    Given ``messages``, the messages are forgotten in Redis and by this process
    (another process forgets its own copy as its retention policy says).
    """
    if messages:
        retention = sim.retention
        retention.clear(
            events_before=retention.events_first,
            outbox_before=retention.outbox_first,
            messages=True,
        )
        await shared.forget_messages()
    events = await shared.clear_log("events", events_before)
    outbox = await shared.clear_log("outbox", outbox_before)
    return events, outbox
