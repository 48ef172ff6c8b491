"""Real work in flight under a virtual clock: what keeps virtual time still.

An idle event loop does not mean nothing is happening: a task may be waiting
for a model, a database or another process. Such work is announced with
:meth:`RealWork.hold` (a :class:`~harness.clock.VirtualClock` offers it as
:meth:`~harness.clock.VirtualClock.hold`), and the clock does not move while
any is in flight, except for work whose task has gone to sleep on the clock
itself: that task waits for virtual time. Work that outlives the limit raises
:class:`~harness.exceptions.RealWorkTimeout` naming it.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Iterator, Set
from contextlib import contextmanager
from dataclasses import dataclass

from harness.exceptions import RealWorkTimeout

__all__ = ["RealWork"]


@dataclass(frozen=True, slots=True)
class _Work:
    """One piece of real work in flight: what it is, since when, and the task doing it."""

    what: str
    started: float  # time.monotonic()
    task: asyncio.Task[object] | None


class RealWork:
    """The real work in flight, announced from any thread, and waiting for it to change."""

    def __init__(self, limit: float) -> None:
        #: Real seconds a piece of work may stay in flight before it is reported as hung.
        self.limit = limit
        self._work: dict[int, _Work] = {}
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._watchers: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    @contextmanager
    def hold(self, what: str) -> Iterator[None]:
        """Count ``what`` as in flight until the block ends (from any thread; holds nest)."""
        try:
            task: asyncio.Task[object] | None = asyncio.current_task()
        except RuntimeError:  # entered from a thread with no event loop
            task = None
        with self._lock:
            key = next(self._ids)
            self._work[key] = _Work(what, time.monotonic(), task)
        try:
            yield
        finally:
            with self._lock:
                del self._work[key]
            self.notify()

    def held_by(self, task: asyncio.Task[object]) -> bool:
        """Whether ``task`` holds some of the work in flight now."""
        with self._lock:
            return any(work.task is task for work in self._work.values())

    @property
    def in_flight(self) -> list[tuple[str, float]]:
        """The work in flight now, oldest first: what it is and for how many seconds."""
        now = time.monotonic()
        with self._lock:
            works = sorted(self._work.values(), key=lambda w: w.started)
        return [(w.what, round(now - w.started, 3)) for w in works]

    def unfinished(self, sleeping: Set[asyncio.Future[None]]) -> list[_Work]:
        """The holds whose task is not waiting on one of ``sleeping`` (the clock's sleeps)."""
        with self._lock:
            works = list(self._work.values())
        return [
            w
            for w in works
            if w.task is None or getattr(w.task, "_fut_waiter", None) not in sleeping
        ]

    async def wait(self, working: list[_Work], sleeping: Set[asyncio.Future[None]]) -> None:
        """Wait until some of ``working`` ends (or its task sleeps); past the limit, raise."""
        oldest = min(w.started for w in working)
        remaining = oldest + self.limit - time.monotonic()
        if remaining > 0:
            loop = asyncio.get_running_loop()
            changed: asyncio.Future[None] = loop.create_future()
            entry = (loop, changed)
            self._watchers.append(entry)
            try:
                # Something may have changed between the check and now: look again first.
                if [id(w) for w in self.unfinished(sleeping)] == [id(w) for w in working]:
                    await asyncio.wait_for(changed, remaining)
                return
            except TimeoutError:
                pass
            finally:
                self._watchers.remove(entry)
        now = time.monotonic()
        hung = tuple((w.what, round(now - w.started, 1)) for w in self.unfinished(sleeping))
        listed = "; ".join(f"{what} (in flight {seconds:g} s)" for what, seconds in hung)
        raise RealWorkTimeout(
            f"real work outlived the {self.limit:g} s limit, so virtual time "
            f"can't move on: {listed or 'it ended as the limit passed'}",
            work=hung,
        )

    def notify(self) -> None:
        """Wake whoever waits for the work to change (from any thread)."""
        for loop, changed in list(self._watchers):
            if changed.done():
                continue
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is loop:
                changed.set_result(None)
            else:
                loop.call_soon_threadsafe(_resolve, changed)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
