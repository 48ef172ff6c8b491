"""On a paced server (``harness serve``) the rate limits count real seconds, at Meta's numbers.

Virtual time follows real time there only in ticks, and not at all while the
process is too busy to tick; a budget refilled on it would refuse sends Meta
would take.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.errors import PairRateLimited, ThroughputLimited
from channels.whatsapp.limits import PairRateLimiter, ThroughputLimiter
from channels.whatsapp.simulator import WhatsAppSimulator
from channels.whatsapp.timekeeping import RealTimeView
from harness.clock import VirtualClock

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class FakeMonotonic:
    def __init__(self) -> None:
        self.seconds = 1000.0

    def __call__(self) -> float:
        return self.seconds


def test_the_view_moves_with_real_time_while_virtual_time_stands_still() -> None:
    clock, real = VirtualClock(START), FakeMonotonic()
    view = RealTimeView(clock, monotonic=real)
    real.seconds += 2.5
    assert view.now() == START + timedelta(seconds=2.5)
    assert clock.now() == START


def test_the_view_takes_a_jump_of_virtual_time_and_never_goes_back() -> None:
    clock, real = VirtualClock(START), FakeMonotonic()
    view = RealTimeView(clock, monotonic=real)
    real.seconds += 1
    clock.advance(3600)
    assert view.now() == START + timedelta(hours=1)
    real.seconds += 0.5
    assert view.now() == START + timedelta(hours=1, seconds=0.5)
    real.seconds -= 10  # a monotonic source never does this; the view holds anyway
    assert view.now() >= START + timedelta(hours=1)


def test_throughput_at_80_just_over_and_just_under_on_real_time() -> None:
    real = FakeMonotonic()
    limiter = ThroughputLimiter(RealTimeView(VirtualClock(START), monotonic=real))
    for _ in range(80):  # at the limit: a second's worth at once
        limiter.check("pn")
    with pytest.raises(ThroughputLimited) as over:  # just over
        limiter.check("pn")
    assert over.value.code == 130429
    real.seconds += 1 / 80 - 1e-5  # just under a token's worth of real time
    with pytest.raises(ThroughputLimited):
        limiter.check("pn")
    real.seconds += 1e-5
    limiter.check("pn")
    real.seconds += 0.5  # half a second: 40 more, not 41
    for _ in range(40):
        limiter.check("pn")
    with pytest.raises(ThroughputLimited):
        limiter.check("pn")


def test_pair_rate_at_45_then_one_per_6_real_seconds() -> None:
    real = FakeMonotonic()
    limiter = PairRateLimiter(RealTimeView(VirtualClock(START), monotonic=real))
    for _ in range(45):
        limiter.check("5511987654321")
    with pytest.raises(PairRateLimited):
        limiter.check("5511987654321")
    real.seconds += 5.99
    with pytest.raises(PairRateLimited):
        limiter.check("5511987654321")
    real.seconds += 0.01
    limiter.check("5511987654321")


@pytest.fixture
async def paced() -> AsyncIterator[WhatsAppSimulator]:
    config = SimulatorConfig()
    sim = WhatsAppSimulator(config, clock=VirtualClock(datetime.now(UTC).replace(microsecond=0)))
    pacer = asyncio.get_running_loop().create_task(sim.run_paced())
    await asyncio.sleep(0)  # the pacer starts
    yield sim
    pacer.cancel()
    await asyncio.gather(pacer, return_exceptions=True)
    await sim.aclose()


async def test_a_busy_process_refills_the_budget_as_real_time_passes(
    paced: WhatsAppSimulator,
) -> None:
    sim = paced
    number = sim.config.phone_number_id
    for _ in range(80):
        sim.throughput.check(number)
    time.sleep(0.3)  # noqa: ASYNC251  # blocks the loop, as a busy process does: no tick
    # 0.3 real seconds refilled 24 messages; virtual time, which stood still, none.
    assert sim.throughput.peek(number) >= 24
    async with sim.graph_client() as graph:
        answers = [
            await graph.post(
                f"/v25.0/{number}/messages",
                headers={"Authorization": f"Bearer {sim.config.access_token}"},
                json={
                    "messaging_product": "whatsapp",
                    "to": f"155500{n:05d}",
                    "type": "template",
                    "template": {"name": "hello_world", "language": {"code": "en_US"}},
                },
            )
            for n in range(24)
        ]
    assert [a.status_code for a in answers] == [200] * 24, answers[-1].text


async def test_the_limits_go_back_to_virtual_time_when_pacing_stops() -> None:
    sim = WhatsAppSimulator(SimulatorConfig(), clock=VirtualClock(START))
    before = (sim.throughput.clock, sim.pair_limit.clock)
    pacer = asyncio.get_running_loop().create_task(sim.run_paced())
    await asyncio.sleep(0.06)
    assert isinstance(sim.throughput.clock, RealTimeView)
    assert isinstance(sim.pair_limit.clock, RealTimeView)
    pacer.cancel()
    await asyncio.gather(pacer, return_exceptions=True)
    assert (sim.throughput.clock, sim.pair_limit.clock) == before
    await sim.aclose()


def test_a_refused_send_is_told_to_wait_in_real_seconds() -> None:
    real = FakeMonotonic()
    limiter = ThroughputLimiter(RealTimeView(VirtualClock(START), monotonic=real))
    for _ in range(80):
        limiter.check("pn")
    assert limiter.retry_after("pn") == pytest.approx(1 / 80)
    real.seconds += 1 / 160
    assert limiter.retry_after("pn") == pytest.approx(1 / 160)
