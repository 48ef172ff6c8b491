"""When each user's conversation last moved, in real time, and waiting for it to move.

The simulator tells :class:`Activity` of every event it records. A control
call that plays a user then waits for *that user's* conversation to go quiet
(:meth:`~channels.whatsapp.timekeeping.Timekeeping.settle_user`), and a
reader of the outbox or the event log can wait for the next event
(:meth:`Activity.next_change`) instead of polling. Times are real
(``time.monotonic``): a paced server's virtual time follows real time, but
only in ticks.

An agent that shows the user the typing indicator says it is still composing:
the user's conversation is not quiet until the agent sends a message, or until
Meta would have taken the indicator down (:data:`TYPING_SHOWN`), whichever
comes first.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Final

from harness.trace import DeliveryAttempt, Event, OutboundSend, StatusUpdate

__all__ = ["TYPING_SHOWN", "Activity"]

#: Seconds Meta shows a typing indicator that no message follows.
TYPING_SHOWN: Final = 25.0


def _moves(event: Event) -> bool:
    """Tell whether ``event`` moves its user's conversation.

    A status, and a POST that carries statuses alone (its items written
    ``wamid:status``), are Meta's news about sends made before: they come
    1, 2 and 5 seconds after each send, whatever the user does meanwhile,
    so they neither hold nor wake a call waiting for the user's turn to end.
    What the agent does on hearing one (a send) moves it as any send does.
    """
    if isinstance(event, StatusUpdate):
        return False
    if isinstance(event, DeliveryAttempt):
        return not event.items or any(":" not in item for item in event.items)
    return True


class Activity:
    """The last real instant each user's conversation moved, and the agent last answered."""

    def __init__(self) -> None:
        self._moved: dict[str, float] = {}
        self._answered: dict[str, float] = {}
        # Whom the agent shows it is typing to, since when (taken down by its next message).
        self._typing: dict[str, float] = {}
        # Who waits for any event, and who waits only for one user's.
        self._waiters: set[asyncio.Future[None]] = set()
        self._waiting_for: dict[str, set[asyncio.Future[None]]] = {}
        #: How many events have happened in all (the log itself may have forgotten some).
        self.count = 0

    def note(self, event: Event) -> None:
        """An event happened: count it, and wake whoever waits.

        A reader of the log wakes at any event; a call waiting for one user's
        turn, and the time the user's conversation last moved, heed only the
        events that move it (a status does not).
        """
        now = time.monotonic()
        self.count += 1
        user = event.user if _moves(event) else None
        if user is not None:
            self._moved[user] = now
            if isinstance(event, OutboundSend):
                if event.is_message:
                    if event.type != "reaction":  # an acknowledgment (say 👀), not an answer
                        self._answered[user] = now
                    self._typing.pop(user, None)
                elif event.type == "typing" and event.ok:
                    self._typing[user] = now
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        for waiter in self._waiting_for.get(user, ()) if user is not None else ():
            if not waiter.done():
                waiter.set_result(None)

    def moved(self, user: str) -> float:
        """When an event about ``user`` last happened (``time.monotonic``; 0 if never)."""
        return self._moved.get(user, 0.0)

    def answered(self, user: str) -> float:
        """When the agent last sent ``user`` a message (not a receipt, typing or a reaction).

        ``time.monotonic`` time; 0 if never. An agent that reacts to a message
        (say with 👀) has acknowledged it, not answered it.
        """
        return self._answered.get(user, 0.0)

    def typing_until(self, user: str | None = None) -> float:
        """Until when the agent shows ``user`` (anyone, without a user) it is typing.

        ``time.monotonic`` time; 0 if it shows no one. The indicator stays up
        until the agent's next message to that user, or :data:`TYPING_SHOWN` s.
        """
        if user is not None:
            since = self._typing.get(user)
            return 0.0 if since is None else since + TYPING_SHOWN
        latest = max(self._typing.values(), default=None)
        return 0.0 if latest is None else latest + TYPING_SHOWN

    async def next_change(self, longest: float, *, user: str | None = None) -> None:
        """Return at the next event (about ``user`` only, if given), or after ``longest`` s."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters = self._waiters if user is None else self._waiting_for.setdefault(user, set())
        waiters.add(waiter)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter, max(longest, 0.0))
        finally:
            waiters.discard(waiter)
            if user is not None and not waiters:
                self._waiting_for.pop(user, None)
