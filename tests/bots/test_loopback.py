"""The test doubles' port chooser: no two servers of one test race for one port."""

from __future__ import annotations

import itertools

import pytest

from tests.bots import loopback


def test_a_port_is_handed_out_once_per_process() -> None:
    ports = [loopback.free_port() for _ in range(300)]
    assert len(set(ports)) == len(ports)
    low, _ = loopback._ephemeral_range()
    assert all(10_000 <= port < max(low, 10_001) for port in ports)


@pytest.mark.parametrize("count", [2, 3, 4])
def test_parallel_workers_draw_from_disjoint_slices(
    monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    slices = []
    for index in range(count):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{index}")
        monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(count))
        slices.append(loopback._slice(10_000, 32_768))
    assert slices[0][0] == 10_000
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(slices))
    assert all(stop - start >= (22_768 // count) - 1 for start, stop in slices)


def test_one_worker_uses_the_whole_range(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    assert loopback._slice(10_000, 32_768) == (10_000, 32_768)
