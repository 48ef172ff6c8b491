"""The confirmation gate: nothing is booked until the customer said yes to it.

Models are eager: told a day and a time, many call ``book_appointment`` at
once, whatever the prompt says. :class:`ConfirmationGate` is a
:class:`~agents.booking.brain.ToolPolicy` that stands between the model and
the calendar. An unconfirmed ``book_appointment`` does not run: it becomes
the user's :class:`~agents.booking.state.Proposal` and the model is told
``needs_confirmation``, so it asks, and the agent sends Confirm and Change
buttons. Once the customer confirms (see :func:`read_confirmation`), the
same call goes through, once: a claim in the store stops a second booking
of the same proposal, whether from a repeated tap or a redelivered webhook.

The planted regressions open it: ``book_without_confirm`` lets every
booking through; ``no_dedupe`` drops the once-only claim.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from agents.booking.brain import ToolDecision
from agents.booking.inbound import Inbound
from agents.booking.language import find_date, find_time, is_confirmation, is_rejection
from agents.booking.regressions import Regression
from agents.booking.state import Proposal, UserState
from harness.store import Store

__all__ = ["CONFIRM_BUTTONS", "ConfirmationGate", "read_confirmation"]

#: The reply buttons sent with a proposal: (id, title); titles fit Meta's 20 characters.
CONFIRM_BUTTONS: tuple[tuple[str, str], ...] = (("confirm", "Confirm"), ("change", "Change"))

_NEEDS_CONFIRMATION = (
    "Nothing is booked yet. Propose this day and time to the customer in one short question; "
    "they get Confirm and Change buttons. Book only after they confirm."
)


def read_confirmation(state: UserState, messages: Sequence[Inbound], today: date) -> None:
    """Mark the user's proposal confirmed, or drop it, from what they just sent.

    A tap on Confirm counts when it belongs to the message that carried the
    proposal (a tap on an older proposal's button does not confirm a newer
    one); so does a typed yes that names no new day or time. Change, or a
    typed no, drops the proposal.
    """
    for message in messages:
        proposal = state.proposal
        if proposal is None:
            return
        marker = message.wamid or "direct"
        if message.kind == "reply" and message.reply_id == "confirm":
            stale = (
                message.context_id is not None
                and bool(proposal.message_wamids)
                and message.context_id not in proposal.message_wamids
            )
            if not stale and not proposal.confirmed:
                proposal.confirmed_by = marker
        elif message.kind == "reply" and message.reply_id == "change":
            state.proposal = None
        elif message.text and message.kind == "text":
            if find_time(message.text) or find_date(message.text, today):
                continue  # a new day or time: the model will make a new proposal
            if is_rejection(message.text):
                state.proposal = None
            elif is_confirmation(message.text) and not proposal.confirmed:
                proposal.confirmed_by = marker


def _slot(value: Any) -> str:
    slot = str(value or "").strip()
    return "0" + slot if len(slot) == 4 and slot[1] == ":" else slot


class ConfirmationGate:
    """The tool policy for one turn of one user: adds ``customer``, gates bookings."""

    def __init__(
        self,
        state: UserState,
        store: Store,
        *,
        now: datetime,
        regressions: frozenset[Regression] = frozenset(),
    ) -> None:
        self.state = state
        self.store = store
        self.now = now
        self.regressions = regressions
        #: True when this turn made a new proposal that awaits confirmation.
        self.proposed = False

    def _claim_key(self, proposal: Proposal) -> str:
        return f"claim:{self.state.user}:{proposal.id}"

    async def before(self, name: str, args: dict[str, Any]) -> ToolDecision:
        """Add the customer; let a confirmed booking through once; turn the rest into proposals."""
        if name in ("book_appointment", "cancel_booking"):
            args = {**args, "customer": self.state.user}
        if name != "book_appointment" or Regression.BOOK_WITHOUT_CONFIRM in self.regressions:
            return ToolDecision(args)
        proposal = self.state.proposal
        if proposal is not None and proposal.matches(args) and proposal.confirmed:
            if Regression.NO_DEDUPE in self.regressions:
                return ToolDecision(args)
            if await self.store.set_if_absent(self._claim_key(proposal), "1"):
                return ToolDecision(args)
            return ToolDecision(
                args,
                result={
                    "status": "already_booked",
                    "booking_id": proposal.booking_id,
                    "date": proposal.date,
                    "slot": proposal.slot,
                },
            )
        if proposal is None or not proposal.matches(args) or proposal.booking_id is not None:
            number = await self.store.incr(f"proposal-seq:{self.state.user}")
            proposal = Proposal(
                id=f"P{number}",
                date=str(args.get("date", "")).strip(),
                slot=_slot(args.get("slot")),
                notes=str(args.get("notes") or ""),
                step_free=bool(args.get("step_free")),
                proposed_at=self.now,
            )
            self.state.proposal = proposal
        self.proposed = True
        return ToolDecision(
            args,
            result={
                "status": "needs_confirmation",
                "date": proposal.date,
                "slot": proposal.slot,
                "notes": proposal.notes,
                "step_free": proposal.step_free,
                "message": _NEEDS_CONFIRMATION,
            },
        )

    async def after(self, name: str, args: dict[str, Any], result: Any, error: str | None) -> None:
        """Keep the state in step with what the calendar did."""
        data = result if isinstance(result, dict) else {}
        status = data.get("status")
        proposal = self.state.proposal
        ours = proposal is not None and proposal.matches(args)
        if name == "book_appointment":
            if status == "booked":
                booking_id = str(data.get("booking_id"))
                if booking_id not in self.state.bookings:
                    self.state.bookings.append(booking_id)
                self.state.booking_details[booking_id] = {
                    "date": str(data.get("date", args.get("date", ""))),
                    "slot": str(data.get("slot", args.get("slot", ""))),
                }
                if proposal is not None and ours:
                    proposal.booking_id = booking_id
            elif proposal is not None and ours and proposal.booking_id is None:
                # Refused (full, past...) or failed: this proposal is void; free its claim.
                await self.store.delete(self._claim_key(proposal))
                self.state.proposal = None
        elif name == "cancel_booking" and status == "cancelled":
            booking_id = str(data.get("booking_id"))
            if booking_id in self.state.bookings:
                self.state.bookings.remove(booking_id)
            self.state.booking_details.pop(booking_id, None)
            if proposal is not None and proposal.booking_id == booking_id:
                self.state.proposal = None
