"""The 24-hour customer-service window, per user, on the simulator's clock.

Each message from a user opens the window or refreshes it; while it is open
the business may send anything, once it has closed only templates. Sending a
template does not reopen it. State lives in the store, so several simulator
processes sharing one Redis agree on it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from harness.clock import Clock
from harness.store import Store

__all__ = ["SessionWindows"]


class SessionWindows:
    """When each user last wrote, and whether their window is open now."""

    def __init__(self, store: Store, clock: Clock, *, length: float = 24 * 3600.0) -> None:
        self._store = store
        self._clock = clock
        self.length = timedelta(seconds=length)

    @staticmethod
    def _key(user: str) -> str:
        return f"window:{user}"

    async def touch(self, user: str, at: datetime | None = None) -> None:
        """Record a message from ``user`` (now, or at ``at``); never moves the window back."""
        when = self._clock.now() if at is None else at
        last = await self.last_message(user)
        if last is None or when > last:
            await self._store.set(self._key(user), when.isoformat())

    async def last_message(self, user: str) -> datetime | None:
        """When ``user`` last wrote, if ever."""
        raw = await self._store.get(self._key(user))
        return None if raw is None else datetime.fromisoformat(raw.decode())

    async def closes_at(self, user: str) -> datetime | None:
        """When the user's window closes (or closed); None if it was never opened."""
        last = await self.last_message(user)
        return None if last is None else last + self.length

    async def is_open(self, user: str, at: datetime | None = None) -> bool:
        """Whether a free-form message to ``user`` is allowed now (or at ``at``)."""
        closes = await self.closes_at(user)
        when = self._clock.now() if at is None else at
        return closes is not None and when < closes
