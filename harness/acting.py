"""Which user an agent is working for, so its model and tool calls name that user.

A context variable, so tasks an agent starts while serving a user inherit
the user; the recorders read it when they stamp their trace events.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["acting_for", "current_user"]

_ACTING: ContextVar[str | None] = ContextVar("harness_acting_user", default=None)


@contextmanager
def acting_for(user: str) -> Iterator[None]:
    """Name the user an agent is working for, so its model and tool calls carry that user.

    An agent serving several users wraps each user's work in it (the tasks it
    starts inside inherit it); the recorders stamp their trace events with it.
    """
    token = _ACTING.set(user)
    try:
        yield
    finally:
        _ACTING.reset(token)


def current_user() -> str | None:
    """The user the agent is working for now, as :func:`acting_for` named it."""
    return _ACTING.get()
