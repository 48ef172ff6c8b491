"""Bursts: a user's quick messages answered once, together, by exactly one worker.

People type a thought as three quick messages. Each inbound message is put
in the user's inbox in the shared store and numbered; its flush waits out
the debounce window on the clock and then answers only if no newer message
arrived meanwhile (otherwise the newer message's flush answers them all).
A lock in the store (set-if-absent with a TTL) keeps two workers from
answering the same user at once, and a "done" mark says which messages are
already answered, so none is answered twice or lost.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

from agents.booking.inbound import Inbound
from harness.clock import Clock
from harness.store import Store

__all__ = ["BurstQueue"]

_INBOX_TTL: Final = 7 * 24 * 3600.0


class BurstQueue:
    """Per-user inboxes, debounce and locks in a store shared by every worker."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        debounce: float = 2.0,
        lock_ttl: float = 300.0,
        poll: float = 0.25,
    ) -> None:
        self.store = store
        self.clock = clock
        self.debounce = debounce
        self.lock_ttl = lock_ttl
        self.poll = poll

    async def add(self, message: Inbound) -> int:
        """Put ``message`` in its user's inbox; returns its number there."""
        number = await self.store.incr(f"inbox-seq:{message.user}")
        await self.store.set(
            f"inbox:{message.user}:{number}", message.model_dump_json(), ttl=_INBOX_TTL
        )
        return number

    async def latest(self, user: str) -> int:
        """The number of the user's newest message."""
        raw = await self.store.get(f"inbox-seq:{user}")
        return int(raw) if raw else 0

    async def settled(self, user: str, number: int) -> bool:
        """Wait out the debounce window; True if message ``number`` is still the newest."""
        if self.debounce > 0:
            await self.clock.sleep(self.debounce)
        return await self.latest(user) == number

    async def take(self, user: str, upto: int | None = None) -> list[Inbound]:
        """The user's unanswered messages up to ``upto`` (all by default), marked answered.

        Call it holding the user's lock. Messages come in the order their
        timestamps give (arrival order breaks ties), since webhooks can
        arrive out of order.
        """
        last = await self.latest(user) if upto is None else upto
        raw_done = await self.store.get(f"inbox-done:{user}")
        done = int(raw_done) if raw_done else 0
        found: list[tuple[int, Inbound]] = []
        for number in range(done + 1, last + 1):
            raw = await self.store.get(f"inbox:{user}:{number}")
            if raw is not None:
                found.append((number, Inbound.model_validate_json(raw)))
        if last > done:
            await self.store.set(f"inbox-done:{user}", str(last))
        for number, _ in found:
            await self.store.delete(f"inbox:{user}:{number}")
        found.sort(key=lambda item: (item[1].timestamp is None, item[1].timestamp, item[0]))
        return [message for _, message in found]

    @asynccontextmanager
    async def lock(self, name: str) -> AsyncIterator[None]:
        """Hold the store lock ``name`` (waiting for it on the clock), released on exit."""
        key = f"lock:{name}"
        token = secrets.token_hex(8)
        while not await self.store.set_if_absent(key, token, ttl=self.lock_ttl):
            await self.clock.sleep(self.poll)
        try:
            yield
        finally:
            # Only release our own lock: after a TTL expiry it may be someone else's.
            if await self.store.get(key) == token.encode():
                await self.store.delete(key)
