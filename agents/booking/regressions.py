"""The planted regressions: bugs real WhatsApp agents ship, each behind a switch.

The booking agent is correct by default. Each :class:`Regression` turns one
safeguard off, so a test or scenario can show that the harness catches it.
They are chosen with ``BOOKING_REGRESSIONS=book_without_confirm,no_dedupe``
(see :mod:`agents.booking.settings`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from enum import StrEnum

from harness.exceptions import ConfigError

__all__ = ["Regression", "parse_regressions"]


class Regression(StrEnum):
    """One planted bug; the value is the name used in ``BOOKING_REGRESSIONS``."""

    #: The confirmation gate is off: a chosen slot is booked at once, unconfirmed.
    BOOK_WITHOUT_CONFIRM = "book_without_confirm"
    #: No idempotency: redelivered webhooks are processed again, and a confirmed
    #: proposal can be booked more than once (a redelivered "yes" books again).
    NO_DEDUPE = "no_dedupe"
    #: No debouncing: every message of a burst gets its own answer.
    REPLY_PER_FRAGMENT = "reply_per_fragment"
    #: Free text is sent even when the 24-hour window is closed (Meta fails it with 131047).
    IGNORE_WINDOW = "ignore_window"
    #: Replies over 4096 characters go out in one piece (Meta refuses them).
    NO_CHUNKING = "no_chunking"
    #: A stated need (wheelchair, vegan) is kept for the turn it was said in, then dropped.
    FORGET_CONSTRAINT = "forget_constraint"


def _valid() -> str:
    return ", ".join(r.value for r in Regression)


def parse_regressions(value: str | Iterable[str] | None) -> frozenset[Regression]:
    """Read regression names: a comma- or space-separated string, or an iterable of names.

    Names are case-insensitive and ``-`` counts as ``_``; blanks are ignored.
    An unknown name raises :class:`~harness.exceptions.ConfigError` listing
    the valid ones.
    """
    if value is None:
        return frozenset()
    if isinstance(value, str):
        names: Iterable[str] = value.replace(",", " ").split()
    else:
        names = value
    found: set[Regression] = set()
    unknown: list[str] = []
    for raw in names:
        name = str(raw).strip().lower().replace("-", "_")
        if not name:
            continue
        try:
            found.add(Regression(name))
        except ValueError:
            unknown.append(str(raw).strip())
    if unknown:
        listed = ", ".join(repr(name) for name in unknown)
        close = difflib.get_close_matches(unknown[0].lower(), [r.value for r in Regression], n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ConfigError(f"unknown regression {listed}{hint}; valid names: {_valid()}")
    return frozenset(found)
