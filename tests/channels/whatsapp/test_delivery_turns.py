"""Whose turn a POST on the wire is part of: a user's message holds the user, statuses don't."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Literal

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.delivery import Deliverer, PendingUpdate
from channels.whatsapp.faults import FaultDice, FaultProfile
from channels.whatsapp.signing import SignedBody
from channels.whatsapp.url_target import PostResult
from harness.clock import VirtualClock
from harness.trace import Event

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class HeldWebhook:
    """An agent that takes each POST and answers it only when told to."""

    description = "held webhook"

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.posted: list[bytes] = []

    async def post(self, body: SignedBody) -> PostResult:
        self.posted.append(body.body)
        await self.release.wait()
        return PostResult(200, None, 1.0)

    async def get(self, params: dict[str, str]) -> tuple[int, str]:
        return 200, params["hub.challenge"]

    async def aclose(self) -> None:
        pass


def _update(kind: Literal["message", "status"], item: str) -> PendingUpdate:
    payload = {"object": "whatsapp_business_account", "entry": [{"id": item}]}
    return PendingUpdate(kind=kind, item_id=item, user="ana", payload=payload, due=NOW)


async def _on_the_wire(
    kind: Literal["message", "status"], item: str
) -> tuple[Deliverer, HeldWebhook]:
    target = HeldWebhook()
    events: list[Event] = []
    clock = VirtualClock(NOW)
    deliverer = Deliverer(
        target, SimulatorConfig(), clock, FaultDice(FaultProfile()), events.append
    )
    deliverer.enqueue(_update(kind, item))
    await clock.run_until(NOW + timedelta(seconds=1))
    assert len(target.posted) == 1, "the POST did not go out"
    return deliverer, target


async def test_a_users_message_on_the_wire_holds_the_user() -> None:
    deliverer, target = await _on_the_wire("message", "wamid.in")
    assert deliverer.busy_for("ana")
    target.release.set()
    await deliverer.aclose()


async def test_a_status_on_the_wire_holds_no_one() -> None:
    deliverer, target = await _on_the_wire("status", "wamid.out:delivered")
    assert deliverer.in_flight == 1
    assert not deliverer.busy_for("ana"), "a status of an earlier send held the user's turn"
    target.release.set()
    await deliverer.aclose()
