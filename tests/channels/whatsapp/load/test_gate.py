"""The gate that hands out a load run's messages: its cap, its end, and stopping early."""

from __future__ import annotations

import asyncio

from channels.whatsapp.load import Gate


async def test_the_gate_gives_no_more_than_its_cap() -> None:
    loop = asyncio.get_running_loop()
    gate = Gate(rate=1e9, limit=3, end=loop.time() + 60)
    taken = [await gate.take() for _ in range(5)]
    assert taken == [True, True, True, False, False]


async def test_the_gate_gives_no_slot_at_or_after_its_end() -> None:
    loop = asyncio.get_running_loop()
    gate = Gate(rate=1e9, limit=100, end=loop.time() - 1)
    assert not await gate.take()
    assert gate.given == 0


async def test_slots_are_handed_out_one_rate_step_apart() -> None:
    loop = asyncio.get_running_loop()
    gate = Gate(rate=20.0, limit=100, end=loop.time() + 60)
    start = loop.time()
    for _ in range(3):
        assert await gate.take()
    # the third slot is two steps (2 x 50 ms) after the first, not at once
    assert loop.time() - start >= 0.09


async def test_a_closed_gate_stops_every_user_even_one_already_waiting_for_its_slot() -> None:
    loop = asyncio.get_running_loop()
    gate = Gate(rate=2.0, limit=100, end=loop.time() + 60)
    assert await gate.take()
    waiting = asyncio.ensure_future(gate.take())  # its slot is half a second away
    await asyncio.sleep(0.01)
    gate.close()
    assert not await waiting
    assert not await gate.take()


async def test_a_pause_ends_at_the_runs_end_or_when_the_gate_closes() -> None:
    loop = asyncio.get_running_loop()
    gate = Gate(rate=1.0, limit=100, end=loop.time() + 0.05)
    start = loop.time()
    await gate.pause(60)  # a user thinking for a minute, in a run with 50 ms left
    assert loop.time() - start < 30

    gate = Gate(rate=1.0, limit=100, end=loop.time() + 60)
    pausing = asyncio.ensure_future(gate.pause(60))
    await asyncio.sleep(0.01)
    gate.close()
    await asyncio.wait_for(pausing, 30)
