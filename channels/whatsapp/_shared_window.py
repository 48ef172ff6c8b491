"""The 24-hour windows of one Meta across processes, moved forward atomically in Redis.

:class:`~channels.whatsapp.window.SessionWindows` reads a user's last message
and writes it again if the new one is later: two processes taking two
messages of one user at once could both read, and the earlier could be
written last. Here Redis compares and writes in one step. The instants are
written in UTC with microseconds, so that their text sorts as they do, and
read back by :class:`~channels.whatsapp.window.SessionWindows` as before.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

from channels.whatsapp.window import SessionWindows
from harness.clock import Clock
from harness.store import RedisStore

__all__ = ["SharedSessionWindows"]

# Set KEYS[1] to ARGV[1] unless it holds a later instant (the same format sorts as text).
_LATER: Final = """
local current = redis.call('GET', KEYS[1])
if (not current) or current < ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1])
  return 1
end
return 0
"""


class SharedSessionWindows(SessionWindows):
    """:class:`SessionWindows` in Redis whose :meth:`touch` is one atomic step."""

    def __init__(self, store: RedisStore, clock: Clock, *, length: float = 24 * 3600.0) -> None:
        super().__init__(store, clock, length=length)
        self._redis = store
        self._later = store.client.register_script(_LATER)

    async def touch(self, user: str, at: datetime | None = None) -> None:
        """Record a message from ``user`` (now, or at ``at``); never moves the window back."""
        when = (self._clock.now() if at is None else at).astimezone(UTC)
        stamp = when.isoformat(timespec="microseconds")
        key = f"window:{user}"
        full = f"{self._redis.namespace}:{key}"
        await self._redis.execute(
            key, lambda client: self._later(keys=[full], args=[stamp], client=client), changes=True
        )
