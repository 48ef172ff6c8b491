"""The tools' recorder: side effects never run twice, errors replayed, divergence by argument."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest

from harness.canonical import canonical_key
from harness.exceptions import ConfigError, Divergence, RecordingError, UnknownTool
from harness.records import ToolRecord
from harness.tool_recorder import RecordedToolError, ToolRecorder
from harness.trace import Event, ToolCall
from tests.harness.recorder_fakes import START, StepClock


class Restaurant:
    """Tools with a side effect to count: bookings made."""

    def __init__(self) -> None:
        self.bookings: list[dict[str, Any]] = []

    def book_table(self, date: str, party_size: int) -> dict[str, Any]:
        self.bookings.append({"date": date, "party_size": party_size})
        return {"booking_id": f"B{len(self.bookings)}", "date": date}

    async def availability(self, date: str) -> list[str]:
        await asyncio.sleep(0)
        return ["19:30", "21:00"] if date.endswith("13") else []

    def cancel(self, booking_id: str) -> None:
        raise ValueError(f"no booking {booking_id}")


def tools_for(restaurant: Restaurant, mode: str = "record", **options: Any) -> ToolRecorder:
    recorder = ToolRecorder(mode, **options)
    recorder.register("book_table", restaurant.book_table, side_effect=True)
    recorder.register("availability", restaurant.availability, side_effect=False)
    recorder.register("cancel", restaurant.cancel, side_effect=True)
    return recorder


async def recorded_tools() -> list[ToolRecord]:
    recorder = tools_for(Restaurant(), clock=StepClock())
    await recorder.call("availability", date="2025-06-13")
    await recorder.call("book_table", {"date": "2025-06-13", "party_size": 4})
    with pytest.raises(ValueError, match="no booking B9"):
        await recorder.call("cancel", booking_id="B9")
    return recorder.records


async def test_tools_record_sync_and_async_results() -> None:
    restaurant = Restaurant()
    recorder = tools_for(restaurant, clock=StepClock())

    slots = await recorder.call("availability", date="2025-06-13")
    booking = await recorder.call("book_table", date="2025-06-13", party_size=4)

    assert slots == ["19:30", "21:00"]
    assert booking == {"booking_id": "B1", "date": "2025-06-13"}
    first, second = recorder.records
    assert (first.name, first.args, first.result, first.side_effect) == (
        "availability",
        {"date": "2025-06-13"},
        ["19:30", "21:00"],
        False,
    )
    assert (second.name, second.side_effect, second.error) == ("book_table", True, None)
    assert ToolRecord.model_validate_json(second.model_dump_json()) == second


async def test_tool_replay_never_runs_side_effects() -> None:
    records = await recorded_tools()
    restaurant = Restaurant()
    replay = tools_for(restaurant, "replay", records=records)

    booking = await replay.call("book_table", party_size=4, date="2025-06-13")
    slots = await replay.call("availability", {"date": "2025-06-13"})

    assert booking == {"booking_id": "B1", "date": "2025-06-13"}
    assert slots == ["19:30", "21:00"]
    assert restaurant.bookings == []


async def test_tool_errors_are_recorded_and_replayed() -> None:
    records = await recorded_tools()
    assert records[2].error == "ValueError: no booking B9"
    assert records[2].result is None
    replay = tools_for(Restaurant(), "replay", records=records)

    with pytest.raises(RecordedToolError, match="no booking B9") as caught:
        await replay.call("cancel", booking_id="B9")
    assert caught.value.tool == "cancel"


async def test_mapping_and_keyword_arguments_key_alike() -> None:
    recorder = tools_for(Restaurant())
    await recorder.call("availability", {"date": "2025-06-13"})
    await recorder.call("availability", date="2025-06-13")

    first, second = recorder.records
    assert first.key == second.key == canonical_key({"args": first.args, "name": "availability"})
    with pytest.raises(ConfigError, match="not both"):
        await recorder.call("availability", {"date": "x"}, date="y")


async def test_tool_registry() -> None:
    recorder = tools_for(Restaurant())

    assert recorder.tools() == ("book_table", "availability", "cancel")
    assert recorder.is_side_effecting("book_table")
    assert not recorder.is_side_effecting("availability")
    with pytest.raises(ConfigError, match="already registered"):
        recorder.register("cancel", Restaurant().cancel, side_effect=False)
    with pytest.raises(UnknownTool, match=r"'refund'.*registered: book_table, availability"):
        await recorder.call("refund", amount=10)
    with pytest.raises(LookupError):
        recorder.is_side_effecting("refund")


async def test_tool_divergence_names_the_argument() -> None:
    replay = tools_for(Restaurant(), "replay", records=await recorded_tools())

    with pytest.raises(Divergence) as caught:
        await replay.call("book_table", date="2025-06-13", party_size=5, notes="window")

    assert caught.value.differences == (
        'arg notes: (absent) -> "window"',
        "arg party_size: 4 -> 5",
    )
    assert "tool call #2 of 3, unused" in str(caught.value)


async def test_tool_divergence_names_the_tool() -> None:
    recorder = tools_for(Restaurant(), "replay", records=(await recorded_tools())[:2])
    recorder.register("reschedule", Restaurant().book_table, side_effect=True)

    with pytest.raises(Divergence) as caught:
        await recorder.call("reschedule", date="2025-06-13", party_size=4)

    assert caught.value.differences == ("tool: book_table -> reschedule",)


async def test_tool_asked_more_often_than_recorded() -> None:
    replay = tools_for(Restaurant(), "replay", records=await recorded_tools())
    await replay.call("availability", date="2025-06-13")

    with pytest.raises(Divergence, match="asked 2 times, recorded 1"):
        await replay.call("availability", date="2025-06-13")


async def test_tool_on_miss_live_runs_and_records() -> None:
    restaurant = Restaurant()
    replay = tools_for(restaurant, "replay", records=await recorded_tools(), on_miss="live")

    booking = await replay.call("book_table", date="2025-06-14", party_size=2)

    assert booking == {"booking_id": "B1", "date": "2025-06-14"}
    assert restaurant.bookings == [{"date": "2025-06-14", "party_size": 2}]
    assert [r.args for r in replay.new_records] == [{"date": "2025-06-14", "party_size": 2}]
    assert len(replay.records) == 4
    assert len(replay.unused()) == 3


async def test_tool_on_record_gets_live_records() -> None:
    made: list[ToolRecord] = []
    replay = tools_for(
        Restaurant(),
        "replay",
        records=await recorded_tools(),
        on_miss="live",
        on_record=made.append,
    )
    await replay.call("availability", date="2025-06-13")
    await replay.call("availability", date="2025-06-20")

    assert [(r.args, r.result) for r in made] == [({"date": "2025-06-20"}, [])]


async def test_tool_unused_report() -> None:
    replay = tools_for(Restaurant(), "replay", records=await recorded_tools())
    await replay.call("availability", date="2025-06-13")

    report = replay.report()
    assert "3 recorded tool calls loaded, 1 served, 2 unused" in report
    assert 'unused #2: book_table({"date":"2025-06-13","party_size":4})' in report
    assert [r.name for r in replay.unused()] == ["book_table", "cancel"]


async def test_tool_passthrough_runs_and_records_nothing() -> None:
    restaurant = Restaurant()
    events: list[Event] = []
    recorder = tools_for(restaurant, "passthrough", sink=events.append)

    await recorder.call("book_table", date="2025-06-13", party_size=4)

    assert len(restaurant.bookings) == 1
    assert recorder.records == []
    assert [e.kind for e in events] == ["tool"]


async def test_tool_sink_events() -> None:
    events: list[Event] = []
    clock = StepClock()
    recorder = tools_for(Restaurant(), sink=events.append, clock=clock)
    await recorder.call("book_table", date="2025-06-13", party_size=4)
    with pytest.raises(ValueError, match="no booking"):
        await recorder.call("cancel", booking_id="B9")
    replay = tools_for(Restaurant(), "replay", records=recorder.records, sink=events.append)
    await replay.call("book_table", date="2025-06-13", party_size=4)

    booked, failed, replayed = events
    assert isinstance(booked, ToolCall)
    assert isinstance(failed, ToolCall)
    assert isinstance(replayed, ToolCall)
    assert (booked.name, booked.side_effect, booked.source) == ("book_table", True, "live")
    assert booked.args == {"date": "2025-06-13", "party_size": 4}
    assert booked.result == {"booking_id": "B1", "date": "2025-06-13"}
    assert booked.at == START + timedelta(seconds=1)
    assert failed.error == "ValueError: no booking B9"
    assert (replayed.source, replayed.result) == ("recorded", booked.result)


async def test_tool_results_must_be_json() -> None:
    recorder = ToolRecorder()
    recorder.register("opaque", lambda: object(), side_effect=False)

    with pytest.raises(RecordingError, match="'opaque' result"):
        await recorder.call("opaque")
    with pytest.raises(RecordingError, match="'opaque' arguments"):
        await recorder.call("opaque", {"x": object()})


async def test_tool_passthrough_shows_what_json_cannot_hold() -> None:
    events: list[Event] = []
    recorder = ToolRecorder("passthrough", sink=events.append)
    marker = object()
    recorder.register("echo", lambda thing: thing, side_effect=False)

    assert await recorder.call("echo", thing=marker) is marker

    (event,) = events
    assert isinstance(event, ToolCall)
    assert event.result == repr(marker)
    assert event.args == {"thing": repr(marker)}


async def test_concurrent_tool_replay() -> None:
    records = await recorded_tools()
    restaurant = Restaurant()
    replay = tools_for(restaurant, "replay", records=records)

    slots, booking = await asyncio.gather(
        replay.call("availability", date="2025-06-13"),
        replay.call("book_table", date="2025-06-13", party_size=4),
    )

    assert slots == ["19:30", "21:00"]
    assert booking["booking_id"] == "B1"
    assert restaurant.bookings == []
