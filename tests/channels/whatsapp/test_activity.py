"""Waiting for a conversation to move: one user's waiters wake for that user's events only.

Statuses are news about sends made before: they move no conversation. A typing
indicator says the agent is still composing, until its next message or Meta's 25 s."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

from channels.whatsapp.activity import TYPING_SHOWN, Activity
from harness.trace import DeliveryAttempt, ErrorInfo, OutboundSend, StatusUpdate

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


def _status(user: str) -> StatusUpdate:
    return StatusUpdate(at=NOW, user=user, wamid="wamid.out", status="delivered", delivery="d2")


def _delivery(user: str, *items: str) -> DeliveryAttempt:
    return DeliveryAttempt(at=NOW, user=user, delivery="d1", items=items, status_code=200)


async def test_statuses_of_earlier_sends_neither_move_nor_wake_a_users_conversation() -> None:
    activity = Activity()
    ana = asyncio.create_task(activity.next_change(5, user="ana"))
    anyone = asyncio.create_task(activity.next_change(5))
    await asyncio.sleep(0)
    activity.note(_delivery("ana", "wamid.out:sent", "wamid.out:delivered"))
    activity.note(_status("ana"))
    await asyncio.wait_for(anyone, 1)  # a reader of the whole log still hears of them
    await asyncio.sleep(0.05)
    assert not ana.done(), "a status woke a call waiting for Ana's turn"
    assert activity.moved("ana") == 0
    # Her own message put to the agent, batched with a status: that moves it.
    activity.note(_delivery("ana", "wamid.out:read", "wamid.in"))
    await asyncio.wait_for(ana, 1)
    assert activity.moved("ana") > 0
    assert activity.count == 3


def _typing(user: str, *, refused: bool = False) -> OutboundSend:
    error = ErrorInfo(code=131009, message="Parameter value is not valid") if refused else None
    return OutboundSend(at=NOW, user=user, type="typing", error=error)


def test_a_typing_indicator_is_up_until_the_agents_next_message_to_that_user() -> None:
    activity = Activity()
    assert activity.typing_until("ana") == 0
    assert activity.typing_until() == 0
    before = time.monotonic()
    activity.note(_typing("ana"))
    up_until = activity.typing_until("ana")
    assert before + TYPING_SHOWN <= up_until <= time.monotonic() + TYPING_SHOWN
    assert activity.typing_until() == up_until  # anyone's
    assert activity.typing_until("bruno") == 0
    assert activity.answered("ana") == 0, "a typing indicator is not an answer"
    activity.note(_send("bruno"))
    assert activity.typing_until("ana") == up_until, "another user's message took it down"
    activity.note(_send("ana"))
    assert activity.typing_until("ana") == 0
    assert activity.typing_until() == 0


def test_a_refused_typing_indicator_shows_nothing() -> None:
    activity = Activity()
    activity.note(_typing("ana", refused=True))
    assert activity.typing_until("ana") == 0
    assert activity.moved("ana") > 0  # the agent's attempt still moved the conversation


def test_a_reaction_acknowledges_a_message_it_does_not_answer_it() -> None:
    activity = Activity()
    activity.note(_typing("ana"))
    activity.note(OutboundSend(at=NOW, user="ana", type="reaction", wamid="wamid.r", request={}))
    assert activity.answered("ana") == 0
    assert activity.moved("ana") > 0
    assert activity.typing_until("ana") == 0  # it is a message: the indicator goes
