"""Percentiles and the tally of a load run."""

from __future__ import annotations

import pytest

from channels.whatsapp.load import LoadStats, percentile


def test_the_median_of_an_even_count_lies_halfway_between_the_middle_two() -> None:
    assert percentile([10.0, 1.0, 4.0, 3.0], 50) == 3.5


def test_percentiles_interpolate_between_ranks_as_spreadsheets_do() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert percentile(values, 95) == pytest.approx(95.05)
    assert percentile(values, 99) == pytest.approx(99.01)
    assert percentile(values, 0) == 1.0
    assert percentile(values, 100) == 100.0


def test_a_single_value_is_every_percentile_and_none_is_none() -> None:
    assert percentile([0.25], 99) == 0.25
    assert percentile([], 50) is None


def test_a_percentile_outside_0_to_100_is_refused() -> None:
    with pytest.raises(ValueError, match="between 0 and 100"):
        percentile([1.0], 101)


def test_the_summary_gives_exact_percentiles_and_counts_throughput_over_the_active_time() -> None:
    stats = LoadStats(start=100.0)
    for n in range(1, 11):
        stats.message_sent(100.0 + n / 10)
        stats.reply(100.0 + n / 10 + 0.05, n / 100)  # 0.01 .. 0.10 s
    stats.turn_lost(105.0)
    stats.webhook_failed(100.5, "HTTP 500")
    summary = stats.summary(elapsed=20.0)  # the run then waited for a reply that never came
    assert summary["latency_s"]["p50"] == pytest.approx(0.055)
    assert summary["latency_s"]["p99"] == pytest.approx(0.0991)
    assert summary["latency_s"]["max"] == pytest.approx(0.10)
    assert summary["active_s"] == pytest.approx(1.05)  # up to the last reply
    assert summary["messages_per_s"] == pytest.approx(10 / 1.05, rel=1e-3)
    assert summary["lost_replies"] == 1
    assert summary["webhook_errors"] == {"HTTP 500": 1}
    assert summary["errors"] == 1


def test_the_timeline_bins_each_reply_by_its_second_and_latency() -> None:
    stats = LoadStats(start=0.0)
    stats.reply(0.5, 0.004)  # second 0, the first bin (<= 5 ms)
    stats.reply(2.2, 0.3)  # second 2, <= 500 ms: the 7th bin
    stats.reply(2.9, 60.0)  # second 2, slower than every bin: the last
    assert stats.timeline[0].bins[0] == 1
    assert stats.timeline[2].bins[6] == 1
    assert stats.timeline[2].bins[-1] == 1
    assert stats.timeline[2].replied == 2
