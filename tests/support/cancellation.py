"""A wait that carries on after its first cancellation, as a redis-py command may on Python 3.11."""

from __future__ import annotations

import asyncio

__all__ = ["LosesOneCancellation"]


class LosesOneCancellation:
    """Sleeps that swallow the first cancellation they meet and honour every later one."""

    def __init__(self) -> None:
        #: How many cancellations were swallowed (0 or 1).
        self.lost = 0

    async def sleep(self, seconds: float) -> None:
        """Sleep ``seconds``; the first cancellation met ends the sleep but is not raised."""
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            if self.lost:
                raise
            self.lost += 1
