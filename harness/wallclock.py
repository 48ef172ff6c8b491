"""The process's wall clock made to follow a virtual clock, for in-process code that reads it.

freezegun patches ``datetime.now()``, ``time.time()`` and friends for the
whole process, so at most one clock can drive it at a time.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from freezegun import freeze_time

from harness.clock import ObservableClock
from harness.exceptions import ClockError

__all__ = ["wall_clock_from"]


class _WallClockPatch:
    """freezegun, started once and moved along with one clock; shared by nested users."""

    def __init__(self, clock: ObservableClock, ignore: Sequence[str]) -> None:
        self.clock = clock
        self.depth = 0
        self._freezer = freeze_time(clock.now(), ignore=list(ignore), real_asyncio=True)
        factory = self._freezer.start()
        try:
            self._remove = clock.add_listener(lambda _jump: factory.move_to(clock.now()))
        except BaseException:
            self._freezer.stop()
            raise

    def stop(self) -> None:
        try:
            self._remove()
        finally:
            self._freezer.stop()


# freezegun patches the whole process, so at most one clock can drive it.
_wall_clock: list[_WallClockPatch] = []


@contextmanager
def wall_clock_from(clock: ObservableClock, *, ignore: Sequence[str] = ()) -> Iterator[None]:
    """Make in-process code read its time from ``clock`` while inside.

    ``datetime.now()``, ``datetime.utcnow()``, ``date.today()``,
    ``time.time()`` and ``time.monotonic()`` return the clock's current time
    and follow it as it jumps, so an agent called in-process sees virtual
    time (naive readings such as ``datetime.now()`` are in UTC). The asyncio
    event loop keeps real monotonic time (freezegun's ``real_asyncio``), so
    ``asyncio.sleep`` and timeouts still work; ``loop.time()`` is the way to
    measure real durations inside.
    Everything is restored on exit, also after an exception.

    The patch is process-wide: it may be nested for the same clock (the last
    exit restores), but a second clock raises :class:`ClockError`. Modules
    named in ``ignore`` (prefixes) keep reading real ``time.time()``.
    """
    if _wall_clock:
        patch = _wall_clock[0]
        if patch.clock is not clock:
            raise ClockError(
                f"the process's wall clock already follows {patch.clock!r}; "
                f"it can't follow {clock!r} too"
            )
    else:
        patch = _WallClockPatch(clock, ignore)
        _wall_clock.append(patch)
    patch.depth += 1
    try:
        yield
    finally:
        patch.depth -= 1
        if not patch.depth:
            _wall_clock.remove(patch)
            patch.stop()
