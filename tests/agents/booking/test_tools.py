"""The calendar: fixed seatings, step-free rooms, tables claimed atomically, in the store."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agents.booking import SEATINGS, TOOL_SCHEMAS, Calendar, ToolInputError, register_tools, room_of
from harness.clock import VirtualClock
from harness.store import MemoryStore
from harness.tape import RecordMode
from harness.tool_recorder import ToolRecorder


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def calendar(clock: VirtualClock) -> Calendar:
    return Calendar(MemoryStore(clock=clock), clock, tables=2)


async def test_search_lists_every_seating_with_its_room(calendar: Calendar) -> None:
    result = await calendar.search_slots("2026-01-02")
    assert result["day"] == "Friday 2 January"
    assert [s["time"] for s in result["slots"]] == list(SEATINGS)
    for slot in result["slots"]:
        assert (slot["room"], slot["step_free"]) == room_of(slot["time"])
        assert slot["tables_left"] == 2
    assert room_of("19:00") == ("garden room", True)
    assert room_of("19:30") == ("mezzanine", False)


async def test_seatings_already_started_today_are_not_offered(
    calendar: Calendar, clock: VirtualClock
) -> None:
    clock.advance(timedelta(hours=19, minutes=10))
    result = await calendar.search_slots("2026-01-01")
    assert [s["time"] for s in result["slots"]] == ["19:30", "20:00", "20:30", "21:00"]
    refused = await calendar.book_appointment("2026-01-01", "19:00", "u1")
    assert refused["status"] == "past"


async def test_a_full_seating_is_refused_and_a_cancel_frees_a_table(calendar: Calendar) -> None:
    first = await calendar.book_appointment("2026-01-02", "20:00", "u1", notes="vegan")
    second = await calendar.book_appointment("2026-01-02", "20:00", "u2")
    third = await calendar.book_appointment("2026-01-02", "20:00", "u3")
    assert (first["status"], second["status"], third["status"]) == ("booked", "booked", "full")
    assert (first["booking_id"], second["booking_id"]) == ("BK-0001", "BK-0002")
    assert "customer" not in first
    slots = (await calendar.search_slots("2026-01-02"))["slots"]
    assert "20:00" not in [s["time"] for s in slots]
    cancelled = await calendar.cancel_booking("BK-0001", "u1")
    assert cancelled["status"] == "cancelled"
    assert (await calendar.cancel_booking("BK-0001", "u1"))["status"] == "already_cancelled"
    assert (await calendar.book_appointment("2026-01-02", "20:00", "u3"))["status"] == "booked"


async def test_only_the_customer_can_cancel(calendar: Calendar) -> None:
    await calendar.book_appointment("2026-01-02", "20:00", "u1")
    assert (await calendar.cancel_booking("BK-0001", "u2"))["status"] == "not_found"
    assert (await calendar.cancel_booking("BK-9999", "u1"))["status"] == "not_found"
    assert len(await calendar.bookings_of("u1")) == 1


async def test_a_step_free_booking_refuses_the_mezzanine(calendar: Calendar) -> None:
    result = await calendar.book_appointment("2026-01-02", "19:30", "u1", step_free=True)
    assert result["status"] == "not_step_free"


@pytest.mark.parametrize(
    ("date", "slot", "message"),
    [
        ("friday", "20:00", "YYYY-MM-DD"),
        ("2025-12-31", "20:00", "in the past"),
        ("2026-06-01", "20:00", "90 days"),
        ("2026-01-02", "18:00", "no seating"),
    ],
)
async def test_bad_arguments_raise(calendar: Calendar, date: str, slot: str, message: str) -> None:
    with pytest.raises(ToolInputError, match=message):
        await calendar.book_appointment(date, slot, "u1")


async def test_two_calendars_on_one_store_see_the_same_bookings(clock: VirtualClock) -> None:
    store = MemoryStore(clock=clock)
    one, two = Calendar(store, clock, tables=1), Calendar(store, clock, tables=1)
    assert (await one.book_appointment("2026-01-02", "20:00", "u1"))["status"] == "booked"
    assert (await two.book_appointment("2026-01-02", "20:00", "u2"))["status"] == "full"
    assert [b["booking_id"] for b in await two.bookings_of("u1")] == ["BK-0001"]


def test_tools_are_registered_with_their_side_effects(calendar: Calendar) -> None:
    recorder = ToolRecorder(RecordMode.PASSTHROUGH)
    recorder.register("search_slots", lambda date: {"slots": []}, side_effect=False)
    register_tools(recorder, calendar)
    assert recorder.tools() == ("search_slots", "book_appointment", "cancel_booking")
    assert not recorder.is_side_effecting("search_slots")
    assert recorder.is_side_effecting("book_appointment")
    assert recorder.is_side_effecting("cancel_booking")
    assert [t["name"] for t in TOOL_SCHEMAS] == list(recorder.tools())
