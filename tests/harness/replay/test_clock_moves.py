"""How far a recorded chat's webhooks ran ahead of the arrivals, message by message."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from harness.replay.clock_moves import moved_ahead, webhook_time

T0 = datetime(2026, 12, 7, 20, 17, 18, 276719, tzinfo=UTC)
S = timedelta(seconds=1)
H = timedelta(hours=1)


def test_timestamps_behind_their_arrivals_move_nothing() -> None:
    arrivals = [T0, T0 + 6 * S, T0 + 12 * S]
    stamps = [T0 - S, T0 + 5 * S, T0 + 10 * S]  # whole seconds, sent before they arrived
    assert moved_ahead(arrivals, stamps) == [timedelta(0)] * 3


def test_a_clock_moved_25_hours_moves_that_message_and_every_later_one() -> None:
    arrivals = [T0, T0 + 6 * S, T0 + 12 * S, T0 + 20 * S]
    stamps = [T0, T0 + 6 * S + 25 * H, None, T0 + 19 * S + 25 * H]  # None: a redelivery
    assert moved_ahead(arrivals, stamps) == [timedelta(0), 25 * H, 25 * H, 25 * H]


def test_the_sender_s_clock_never_counts_as_moving_back() -> None:
    # A message Meta delivered late carries its older timestamp: nothing moves back.
    arrivals = [T0, T0 + 10 * S, T0 + 3 * H]
    stamps = [T0 + 2 * H, T0 + 10 * S, T0 + 3 * H]
    assert moved_ahead(arrivals, stamps) == [2 * H, 2 * H, 2 * H]


def test_a_webhook_timestamp_is_read_in_whole_seconds_or_not_at_all() -> None:
    assert webhook_time({"timestamp": "1796674637"}) == datetime(
        2026, 12, 7, 20, 17, 17, tzinfo=UTC
    )
    assert webhook_time({"timestamp": 1796674637}) == webhook_time({"timestamp": "1796674637"})
    assert webhook_time({}) is None
    assert webhook_time({"timestamp": "soon"}) is None
    assert webhook_time({"timestamp": True}) is None
    assert webhook_time({"timestamp": "9" * 30}) is None
