"""The fake Graph API's side of a load run: each send the agent makes, handed to its user.

The load run serves Meta's Graph API as the simulator does (the same
validation and error bodies, so an invalid send is refused and counted), but
with a send handler of its own: it needs none of the simulator's per-scenario
state, only Meta's rules (:class:`~channels.whatsapp.load.rules.MetaRules`:
the window, the throughput and the pair rate), to find the user a send is
for, stamp it with the time, have its statuses sent
(:class:`~channels.whatsapp.load.statuses.StatusSender`), and say which
buttons or rows an interactive message offers (a ``tap`` turn picks one).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import orjson

from channels.whatsapp.errors import GraphAPIError
from channels.whatsapp.graph import SendOutcome
from channels.whatsapp.ids import bulk_wamid
from channels.whatsapp.load.rules import MetaRules
from channels.whatsapp.load.stats import LoadStats
from channels.whatsapp.load.users import Choice, LoadUser
from channels.whatsapp.validation import ValidatedSend, normalize_wa_id

if TYPE_CHECKING:
    from channels.whatsapp.load.statuses import StatusSender

__all__ = ["Inbox", "offered_choices"]


class Inbox:
    """The send handler of a load run's Graph API (and what it does with refusals).

    ``rules`` (none: every valid send is accepted) are Meta's; ``statuses``
    (none: no status webhooks) sends the statuses of what it accepts.
    """

    def __init__(
        self,
        users: Mapping[str, LoadUser],
        stats: LoadStats,
        now: Callable[[], float],
        rng: random.Random | None = None,
        *,
        rules: MetaRules | None = None,
        statuses: StatusSender | None = None,
    ) -> None:
        self.users = users
        self.stats = stats
        self.now = now
        self.rng = rng or random.Random()
        self.rules = rules
        self.statuses = statuses

    async def __call__(self, send: ValidatedSend) -> SendOutcome:
        """Accept ``send`` as Meta would, and count it against its user's turn.

        A send over a limit raises Meta's error (the Graph API answers it and
        tells :meth:`refused`); one outside the window is accepted, then failed.
        """
        at = self.now()
        if send.action != "message":
            return SendOutcome()  # a read receipt or typing indicator answers nothing
        failure = None if self.rules is None else await self.rules.check(send)
        to = send.user or ""
        wamid = bulk_wamid(self.rng, to, outbound=True)
        user = self.users.get(to)
        if failure is not None:
            self.stats.send_refused(at, failure.code)
            if user is None:
                self.stats.unexpected += 1
            else:
                user.refused(failure.code)
            if self.statuses is not None:
                self.statuses.failed(wamid, to, send, failure, at)
            return SendOutcome(wamid=wamid)
        if self.statuses is not None:
            self.statuses.accepted(wamid, to, send, at)
        if user is None:
            self.stats.unexpected += 1
            return SendOutcome(wamid=wamid)
        choices = offered_choices(send.body, wamid)
        if choices:
            user.choices = choices
        user.received(orjson.dumps(send.body, option=orjson.OPT_SORT_KEYS), at)
        return SendOutcome(wamid=wamid)

    def refused(self, phone_number_id: str, body: Mapping[str, Any], error: GraphAPIError) -> None:
        """Count a send the Graph API refused (bad body, Meta's limits ...), for its user too."""
        self.stats.send_refused(self.now(), error.code)
        to = body.get("to")
        user = self.users.get(normalize_wa_id(to) or "") if isinstance(to, str) else None
        if user is not None:
            user.refused(error.code)


def offered_choices(body: Mapping[str, Any], message_id: str) -> tuple[Choice, ...]:
    """The reply buttons or list rows an interactive send offers (none for other sends)."""
    interactive = body.get("interactive")
    if body.get("type") != "interactive" or not isinstance(interactive, Mapping):
        return ()
    action = interactive.get("action")
    if not isinstance(action, Mapping):
        return ()
    found: list[Choice] = []
    if interactive.get("type") == "button":
        for button in action.get("buttons") or ():
            reply = button.get("reply") if isinstance(button, Mapping) else None
            if isinstance(reply, Mapping):
                found.append(
                    Choice(
                        "button", str(reply.get("id", "")), str(reply.get("title", "")), message_id
                    )
                )
    elif interactive.get("type") == "list":
        for section in action.get("sections") or ():
            rows = section.get("rows") if isinstance(section, Mapping) else None
            for row in rows or ():
                if isinstance(row, Mapping):
                    found.append(
                        Choice(
                            "list", str(row.get("id", "")), str(row.get("title", "")), message_id
                        )
                    )
    return tuple(found)


def _choice(kind: Literal["button", "list"], item: Mapping[str, Any], message_id: str) -> Choice:
    return Choice(kind, str(item.get("id", "")), str(item.get("title", "")), message_id)
