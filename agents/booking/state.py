"""Per-user state, kept as JSON in the shared store so any worker can serve any user.

A user's :class:`UserState` holds the latest messages of the conversation
(Messages API messages, tool calls included: as many as the model is shown,
so a long chat costs no more to load than a short one), the proposal waiting
for confirmation, the
needs they stated, their bookings and when they last wrote (for the 24-hour
window). :class:`StateStore` loads and saves it; callers hold the user's
lock (see :mod:`agents.booking.bursts`) around a load-change-save.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from agents.booking.constraints import Constraint
from harness.store import Store

__all__ = ["FailedSend", "Proposal", "StateStore", "UserState"]


class Proposal(BaseModel):
    """A booking the agent offered and the customer has not (or has just) confirmed.

    ``message_wamids`` are the interactive messages that carried its Confirm
    button; ``confirmed_by`` the message that confirmed it; ``booking_id``
    is set once it is booked.
    """

    model_config = ConfigDict(extra="ignore")

    id: str
    date: str
    slot: str
    notes: str = ""
    step_free: bool = False
    proposed_at: AwareDatetime
    message_wamids: list[str] = Field(default_factory=list)
    confirmed_by: str | None = None
    booking_id: str | None = None

    @property
    def confirmed(self) -> bool:
        """True once the customer said yes to it."""
        return self.confirmed_by is not None

    def matches(self, args: dict[str, Any]) -> bool:
        """True when a ``book_appointment`` call asks for this date and seating."""
        slot = str(args.get("slot", "")).strip()
        if len(slot) == 4 and slot[1] == ":":
            slot = "0" + slot
        return str(args.get("date", "")).strip() == self.date and slot == self.slot


class UserState(BaseModel):
    """Everything the agent remembers about one user between messages.

    Unknown fields are ignored, so state written by an older or newer
    version of the agent still loads.
    """

    model_config = ConfigDict(extra="ignore")

    user: str
    name: str = ""
    history: list[dict[str, Any]] = Field(default_factory=list)
    proposal: Proposal | None = None
    constraints: list[Constraint] = Field(default_factory=list)
    bookings: list[str] = Field(default_factory=list)
    #: What the calendar said of each booking when it was made (date, slot). The agent
    #: describes bookings from this, not from the calendar, so a replay whose tools
    #: answer from the recording (and book nothing) describes them the same way.
    booking_details: dict[str, dict[str, str]] = Field(default_factory=dict)
    last_user_at: AwareDatetime | None = None
    last_inbound_wamid: str | None = None

    def window_open(self, now: datetime, hours: float) -> bool:
        """True while the user's customer-service window (``hours`` long) is open at ``now``."""
        if self.last_user_at is None:
            return False
        return (now - self.last_user_at).total_seconds() < hours * 3600


class FailedSend(BaseModel):
    """A message Meta failed to deliver, as a status webhook reported it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    wamid: str
    user: str | None = None
    code: int | None = None
    title: str = ""
    details: str = ""
    at: AwareDatetime


class StateStore:
    """Loads and saves :class:`UserState` objects and the log of failed sends."""

    def __init__(self, store: Store) -> None:
        self._store = store

    @staticmethod
    def _key(user: str) -> str:
        return f"state:{user}"

    async def load(self, user: str) -> UserState:
        """The user's state; a fresh one when there is none or it can't be read."""
        raw = await self._store.get(self._key(user))
        if raw is None:
            return UserState(user=user)
        try:
            return UserState.model_validate_json(raw)
        except ValidationError:
            # A corrupt record must not wedge the conversation; start over, keep the bytes.
            await self._store.set(f"state-corrupt:{user}", raw)
            return UserState(user=user)

    async def save(self, state: UserState) -> None:
        """Write the user's state."""
        await self._store.set(self._key(state.user), state.model_dump_json())

    async def record_failure(self, failure: FailedSend) -> None:
        """Append a failed send to the log (all users) and to the user's own log."""
        line = failure.model_dump_json()
        await self._store.append("failed-sends", line)
        if failure.user:
            await self._store.append(f"failed-sends:{failure.user}", line)

    async def failures(self, user: str | None = None) -> list[FailedSend]:
        """The failed sends recorded so far, for one user or all."""
        key = f"failed-sends:{user}" if user else "failed-sends"
        return [FailedSend.model_validate_json(raw) for raw in await self._store.read_log(key)]
