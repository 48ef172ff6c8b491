"""The booking agent's tools: a restaurant calendar kept in the shared store.

Seatings are the same every day: lunch at 12:00 to 13:30 and dinner at 19:00
to 21:00, every half hour. Full-hour seatings are in the garden room, which
is step-free; half-hour seatings are on the mezzanine, up a flight of stairs.
Each seating has a fixed number of tables. Bookings live in the
:class:`~harness.store.Store`, so two workers see the same bookings, and a
table is claimed with an atomic counter, so two workers can't both take the
last one.

The model reaches the calendar through three tools (:data:`TOOL_SCHEMAS`):
``search_slots`` (no side effect), ``book_appointment`` and
``cancel_booking`` (side effects). :func:`register_tools` puts them behind a
:class:`~harness.recorder.ToolRecorder`, so the harness can record and replay
them. The agent, not the model, adds the ``customer`` argument.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, date, datetime, time, tzinfo
from typing import Any, Final

from agents.booking.language import format_day
from harness.clock import Clock
from harness.store import Store
from harness.tool_recorder import ToolRecorder

__all__ = [
    "SEATINGS",
    "SIDE_EFFECTS",
    "TOOL_SCHEMAS",
    "Calendar",
    "ToolInputError",
    "register_tools",
    "room_of",
]

#: Seating times, every day.
SEATINGS: Final = ("12:00", "12:30", "13:00", "13:30", "19:00", "19:30", "20:00", "20:30", "21:00")

#: Which tools change the world.
SIDE_EFFECTS: Final = {"search_slots": False, "book_appointment": True, "cancel_booking": True}

#: The tools as the Messages API describes them to the model.
TOOL_SCHEMAS: Final[tuple[dict[str, Any], ...]] = (
    {
        "name": "search_slots",
        "description": (
            "List the seatings with a free table on a date. Each slot says its time, its room "
            "and whether it is step-free (reachable without stairs)."
        ),
        "input_schema": {
            "type": "object",
            "properties": {"date": {"type": "string", "description": "ISO date, YYYY-MM-DD"}},
            "required": ["date"],
        },
    },
    {
        "name": "book_appointment",
        "description": (
            "Book a table at a seating. Only call this once the customer has confirmed the "
            "date and time. Pass every need the customer stated (access, diet) in notes, and "
            "step_free=true when they need a table without stairs."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "date": {"type": "string", "description": "ISO date, YYYY-MM-DD"},
                "slot": {"type": "string", "description": "seating time, HH:MM"},
                "notes": {"type": "string", "description": "needs to tell the staff"},
                "step_free": {"type": "boolean", "description": "needs a step-free table"},
            },
            "required": ["date", "slot"],
        },
    },
    {
        "name": "cancel_booking",
        "description": "Cancel one of the customer's bookings by its reference (BK-0001).",
        "input_schema": {
            "type": "object",
            "properties": {"booking_id": {"type": "string"}},
            "required": ["booking_id"],
        },
    },
)

_HORIZON_DAYS: Final = 90


class ToolInputError(ValueError):
    """A tool called with arguments it can't use (a malformed date, an unknown seating)."""


def room_of(slot: str) -> tuple[str, bool]:
    """The room of a seating and whether it is step-free."""
    if slot.endswith(":00"):
        return "garden room", True
    return "mezzanine", False


class Calendar:
    """Seatings, tables and bookings, kept in a store shared by every worker."""

    def __init__(self, store: Store, clock: Clock, *, tables: int = 2, zone: tzinfo = UTC) -> None:
        self._store = store
        self._clock = clock
        self.tables = tables
        self.zone = zone

    def _today(self) -> date:
        return self._clock.now().astimezone(self.zone).date()

    def _parse_date(self, value: object) -> date:
        try:
            day = date.fromisoformat(str(value))
        except ValueError:
            raise ToolInputError(f"date must be YYYY-MM-DD, not {value!r}") from None
        today = self._today()
        if day < today:
            raise ToolInputError(f"{day.isoformat()} is in the past (today is {today.isoformat()})")
        if (day - today).days > _HORIZON_DAYS:
            raise ToolInputError(f"bookings open {_HORIZON_DAYS} days ahead at most")
        return day

    @staticmethod
    def _parse_slot(value: object) -> str:
        slot = str(value).strip()
        if len(slot) == 4 and slot[1] == ":":
            slot = "0" + slot
        if slot not in SEATINGS:
            raise ToolInputError(
                f"there is no seating at {value!r}; seatings: {', '.join(SEATINGS)}"
            )
        return slot

    def _started(self, day: date, slot: str) -> bool:
        start = datetime.combine(day, time.fromisoformat(slot), tzinfo=self.zone)
        return start <= self._clock.now()

    async def _taken(self, day: date, slot: str) -> int:
        raw = await self._store.get(f"cal:seats:{day.isoformat()}:{slot}")
        return int(raw) if raw else 0

    async def search_slots(self, date: str) -> dict[str, Any]:
        """The seatings on ``date`` with a free table, with room and step-free flag."""
        day = self._parse_date(date)
        slots = []
        for slot in SEATINGS:
            if self._started(day, slot):
                continue
            left = self.tables - await self._taken(day, slot)
            if left > 0:
                room, step_free = room_of(slot)
                slots.append(
                    {"time": slot, "room": room, "step_free": step_free, "tables_left": left}
                )
        return {"date": day.isoformat(), "day": format_day(day), "slots": slots}

    async def book_appointment(
        self, date: str, slot: str, customer: str, notes: str = "", step_free: bool = False
    ) -> dict[str, Any]:
        """Take a table at a seating for ``customer``; refuses a full or unsuitable seating."""
        day = self._parse_date(date)
        slot = self._parse_slot(slot)
        room, room_step_free = room_of(slot)
        base = {"date": day.isoformat(), "day": format_day(day), "slot": slot, "room": room}
        if self._started(day, slot):
            return {**base, "status": "past"}
        if step_free and not room_step_free:
            return {**base, "status": "not_step_free"}
        seats = f"cal:seats:{day.isoformat()}:{slot}"
        if await self._store.incr(seats) > self.tables:
            await self._store.incr(seats, -1)
            return {**base, "status": "full"}
        booking_id = f"BK-{await self._store.incr('cal:seq'):04d}"
        booking = {
            **base,
            "booking_id": booking_id,
            "customer": customer,
            "notes": notes,
            "step_free": room_step_free,
            "status": "booked",
        }
        await self._store.set(f"cal:booking:{booking_id}", json.dumps(booking))
        await self._store.append(f"cal:customer:{customer}", booking_id)
        return {key: value for key, value in booking.items() if key != "customer"}

    async def cancel_booking(self, booking_id: str, customer: str) -> dict[str, Any]:
        """Cancel ``customer``'s booking ``booking_id``, freeing its table."""
        booking = await self.booking(booking_id)
        if booking is None or booking.get("customer") != customer:
            return {"booking_id": booking_id, "status": "not_found"}
        public = {k: v for k, v in booking.items() if k not in ("customer", "status")}
        if booking.get("status") == "cancelled":
            return {**public, "status": "already_cancelled"}
        booking["status"] = "cancelled"
        await self._store.set(f"cal:booking:{booking_id}", json.dumps(booking))
        await self._store.incr(f"cal:seats:{booking['date']}:{booking['slot']}", -1)
        return {**public, "status": "cancelled"}

    async def booking(self, booking_id: str) -> dict[str, Any] | None:
        """One booking as stored (with its customer), or None."""
        raw = await self._store.get(f"cal:booking:{str(booking_id).strip().upper()}")
        if raw is None:
            return None
        value: dict[str, Any] = json.loads(raw)
        return value

    async def bookings_of(self, customer: str) -> list[dict[str, Any]]:
        """``customer``'s bookings that still stand, oldest first."""
        found = []
        for raw in await self._store.read_log(f"cal:customer:{customer}"):
            booking = await self.booking(raw.decode())
            if booking is not None and booking.get("status") == "booked":
                found.append(booking)
        return found


def register_tools(recorder: ToolRecorder, calendar: Calendar) -> None:
    """Register the three calendar tools with ``recorder``, marking their side effects.

    A tool the recorder already knows (the harness may register its own) is left alone.
    """
    functions: dict[str, Callable[..., Any]] = {
        "search_slots": calendar.search_slots,
        "book_appointment": calendar.book_appointment,
        "cancel_booking": calendar.cancel_booking,
    }
    known = set(recorder.tools())
    for name, fn in functions.items():
        if name not in known:
            recorder.register(name, fn, side_effect=SIDE_EFFECTS[name])
