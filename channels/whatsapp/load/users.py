"""One simulated user of a load run, and how the agent's sends are counted against its turns.

A user plays its template turn by turn: it sends a turn's message (or burst),
waits for the reply, thinks, and goes on. The agent's sends carry no link to
the message they answer, so a send is counted against the user's latest
turn, the one under way when it arrives:

- the turn's first send is its reply: its latency runs from the user's last
  message before it to its arrival;
- a later send with the same body as one the turn already got is a
  duplicate; with another body, an extra part of the answer (not an error);
- a turn with no send within the reply timeout is lost; a send that comes
  after that, before the next turn, is a late reply;
- a send to a user who has not written yet is unexpected;
- a send the Graph API refused (Meta's limits, the window) answers nothing:
  a turn that gets no other send within the reply timeout is counted as
  refused, by the first refusal's code, not as lost.

So a duplicate (or a late reply) that arrives after the user has started its
next turn counts as that turn's reply: the user's think time is the window in
which they are told apart.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Final, Literal

from channels.whatsapp.load.plan import Template
from channels.whatsapp.load.stats import LoadStats

__all__ = ["Choice", "LoadUser"]

_NONE: Final = 0
_WAITING: Final = 1
_ANSWERED: Final = 2
_LOST: Final = 3


@dataclass(frozen=True, slots=True)
class Choice:
    """A button or list row of the agent's last interactive message, which a tap picks."""

    kind: Literal["button", "list"]
    id: str
    title: str
    message_id: str


class LoadUser:
    """A user's turns and what the agent sent them (see the module for the counting rules)."""

    __slots__ = (
        "_answered",
        "_bodies",
        "_last_post",
        "_refused",
        "_state",
        "choices",
        "number",
        "stats",
        "template",
        "wa_id",
    )

    def __init__(self, number: int, wa_id: str, template: Template, stats: LoadStats) -> None:
        self.number = number
        self.wa_id = wa_id
        self.template = template
        self.stats = stats
        #: The buttons or rows of the agent's last interactive message to this user.
        self.choices: tuple[Choice, ...] = ()
        self._state = _NONE
        self._last_post = 0.0
        self._bodies: set[bytes] = set()
        self._answered: asyncio.Event | None = None
        self._refused: int | None = None

    def start_turn(self) -> None:
        """Begin a turn: the sends that arrive from now on count against it."""
        self.stats.turns += 1
        self._state = _WAITING
        self._bodies = set()
        self._answered = asyncio.Event()
        self._refused = None

    def posting(self, at: float) -> None:
        """A message of the current turn is POSTed at ``at`` (asked for, then written)."""
        self._last_post = at

    @property
    def last_post(self) -> float:
        """When the user's latest message was written to the agent (see :meth:`posting`)."""
        return self._last_post

    def received(self, body: bytes, at: float) -> None:
        """The agent sent this user a message with ``body`` (canonical bytes) at ``at``."""
        if self._state == _NONE:
            self.stats.unexpected += 1
            return
        if self._state == _WAITING:
            self._state = _ANSWERED
            self.stats.reply(at, at - self._last_post)
            if self._answered is not None:
                self._answered.set()
        elif body in self._bodies:
            self.stats.duplicated += 1
        elif self._state == _LOST:
            self.stats.late += 1
            self._state = _ANSWERED
        else:
            self.stats.extra += 1
        self._bodies.add(body)

    def refused(self, code: int) -> None:
        """The agent's send to this user was refused with Meta's ``code`` (it answers nothing)."""
        if self._state == _NONE:
            self.stats.unexpected += 1
        elif self._state == _WAITING and self._refused is None:
            self._refused = code

    async def answered(self, within: float) -> bool:
        """Wait until the current turn has its reply; after ``within`` s, count it lost.

        A turn with a refused send and no reply is counted as refused instead.
        """
        event = self._answered
        if event is None or self._state != _WAITING:
            return self._state == _ANSWERED
        try:
            async with asyncio.timeout(within):
                await event.wait()
        except TimeoutError:
            if self._state == _WAITING:
                self._state = _LOST
                at = asyncio.get_running_loop().time()
                if self._refused is None:
                    self.stats.turn_lost(at)
                else:
                    self.stats.turn_refused(at, self._refused)
                return False
        return True

    def choice(self, text: str) -> Choice | None:
        """The button or row of the last interactive message whose id or title is ``text``."""
        wanted = text.casefold()
        for option in self.choices:
            if wanted in (option.id.casefold(), option.title.casefold()):
                return option
        return None
