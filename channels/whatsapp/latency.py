"""The Graph API answering a replayed agent as slowly as it answered the live one.

A chat recorded through ``harness proxy`` keeps how long each of the agent's
Graph API calls took. Replayed in-process, the fake Graph API answers at
once, so whatever the agent does after a call (reading the time for its
prompt, say) would happen earlier than it did live. :class:`RecordedLatency`
wraps the transport of the agent's Graph API client and, before each call,
waits on the run's clock as long as the same call took live: the first
``POST .../messages`` as long as the first recorded one, and so on. Calls are
matched by method and the shape of their path (ids and numbers stand for any
value, since a replay renames ids); a call with nothing recorded left goes
through at once.
"""

from __future__ import annotations

import re
from collections import defaultdict, deque
from collections.abc import Iterable

import httpx

from harness.channel import RecordedCall
from harness.clock import Clock

__all__ = ["RecordedLatency", "call_shape"]

_VERSION = re.compile(r"v\d+(\.\d+)?")
_WORD = re.compile(r"[a-z_]+")


def call_shape(method: str, path: str) -> tuple[str, str]:
    """A call's method and its path with every id or number written ``*``."""
    parts = [
        part if _VERSION.fullmatch(part) or _WORD.fullmatch(part) else "*"
        for part in path.split("?", 1)[0].strip("/").split("/")
    ]
    return method.upper(), "/" + "/".join(parts)


class RecordedLatency(httpx.AsyncBaseTransport):
    """Waits, on ``clock``, each recorded call's latency before passing the call on."""

    def __init__(
        self, inner: httpx.AsyncBaseTransport, calls: Iterable[RecordedCall], clock: Clock
    ) -> None:
        self._inner = inner
        self._clock = clock
        self._left: dict[tuple[str, str], deque[float]] = defaultdict(deque)
        for call in calls:
            self._left[call_shape(call.method, call.path)].append(call.latency_ms)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Wait as long as the same call took live, then make it."""
        left = self._left.get(call_shape(request.method, request.url.path))
        if left:
            latency = left.popleft()
            if latency > 0:
                await self._clock.sleep(latency / 1000)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Close the wrapped transport."""
        await self._inner.aclose()
