"""Outages of the store a run stands on, noted where they happen so that no verdict rests on one.

A scenario's verdict is only as good as the store under it. When Redis stops
answering mid-scenario, the agent under test may catch the error and carry
on: a message goes unanswered and the scenario fails, for a reason that is
not the agent's. When Redis restarts, the keys the scenario wrote (the
24-hour window, the dedupe keys, the history) are gone, and the scenario may
fail, or pass, on an empty store. Neither is a verdict.

The store notes each outage it meets with :func:`note_outage`, in the
context of the scenario that met it: tasks the agent starts inherit that
context, as :mod:`harness.inflight` relies on too. :func:`collect_outages`
gathers them; :func:`harness.store.watch_outages` adds a Redis that
restarted meanwhile, for the runner, which turns a scenario with an outage
into an error that says so (and ``harness run`` exits 2).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["Outages", "collect_outages", "had_outage", "note_outage"]


class Outages:
    """What failed under one scenario, each outage once, in the order it was noticed."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def __bool__(self) -> bool:
        return bool(self.messages)

    def note(self, message: str) -> None:
        """Add an outage, unless the same one was noted already."""
        if message not in self.messages:
            self.messages.append(message)


_current: ContextVar[Outages | None] = ContextVar("harness_outages", default=None)


def note_outage(message: str) -> bool:
    """Tell the scenario in progress that its store failed; False when none is in progress."""
    outages = _current.get()
    if outages is None:
        return False
    outages.note(message)
    return True


def had_outage() -> bool:
    """Whether the scenario in progress has met an outage already (its verdict is lost)."""
    outages = _current.get()
    return bool(outages)


@contextmanager
def collect_outages() -> Iterator[Outages]:
    """Gather the outages noted inside the block (and in the tasks it starts)."""
    outages = Outages()
    token = _current.set(outages)
    try:
        yield outages
    finally:
        _current.reset(token)
