"""Waiting for a conversation to move: one user's waiters wake for that user's events only."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from channels.whatsapp.activity import Activity
from harness.trace import OutboundSend

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _send(user: str) -> OutboundSend:
    return OutboundSend(at=NOW, user=user, type="text", text="hi", wamid="wamid.x")


async def test_a_waiter_for_one_user_sleeps_through_anothers_events() -> None:
    activity = Activity()
    ana = asyncio.create_task(activity.next_change(5, user="ana"))
    anyone = asyncio.create_task(activity.next_change(5))
    await asyncio.sleep(0)
    activity.note(_send("bruno"))
    await asyncio.wait_for(anyone, 1)
    await asyncio.sleep(0.05)
    assert not ana.done()
    activity.note(_send("ana"))
    await asyncio.wait_for(ana, 1)
    assert activity.count == 2
    assert activity.answered("ana") > 0
    assert activity.answered("carla") == 0


async def test_a_waiter_gives_up_after_its_time() -> None:
    activity = Activity()
    await asyncio.wait_for(activity.next_change(0.01, user="ana"), 1)
    assert activity.moved("ana") == 0
