"""How the built-in invariants read a transcript and quote it in their messages."""

from __future__ import annotations

import difflib
from collections.abc import Collection

from harness.suites.transcript import Transcript
from harness.trace import Event, InboundMessage, OutboundSend

__all__ = ["first_copy", "is_message", "misnamed_tool", "quote", "turn_no"]


def quote(text: str | None, limit: int = 40) -> str:
    """``text`` on one line, cut to ``limit`` characters, quoted."""
    flat = " ".join((text or "").split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")


def first_copy(event: Event) -> bool:
    """Whether ``event`` is a user's message as first delivered (not a duplicate)."""
    return isinstance(event, InboundMessage) and not event.duplicate


def is_message(event: Event) -> bool:
    """Whether ``event`` is a send that puts a message in the chat (not a receipt)."""
    return isinstance(event, OutboundSend) and event.is_message


def turn_no(transcript: Transcript, index: int) -> str:
    """The turn of event ``index`` as a message names it: "turn 3"."""
    turn = transcript.turn(index)
    return f"turn {turn + 1}" if turn is not None else "before the first turn"


def misnamed_tool(name: str, called: Collection[str]) -> str | None:
    """The tool the agent called whose name ``name`` is a near miss of, if it never called ``name``.

    A check that a tool was *not* called passes whatever the name: spelled
    ``book_apointment``, it would pass while ``book_appointment`` runs.
    """
    if name in called:
        return None
    near = difflib.get_close_matches(name, sorted(called), n=1, cutoff=0.8)
    return near[0] if near else None
