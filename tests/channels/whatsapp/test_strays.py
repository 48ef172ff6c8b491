"""Sends to a number no scenario of a run plays: answered as Meta answers them, and kept.

Meta takes a message to a number that never wrote (200, a wamid) and fails it
a moment later on a status webhook with 131047; ``harness serve`` does the
same. The run's shared Graph API must too, instead of letting the send vanish,
and keep it for the report of the scenarios running when it came.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any, Final

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from channels.whatsapp.config import SimulatorConfig, StatusTiming
from channels.whatsapp.router import GraphRouter
from channels.whatsapp.signing import is_valid
from channels.whatsapp.simulator import WhatsAppSimulator
from tests.bots.loopback import free_port, serve_in_process

CONFIG: Final = SimulatorConfig(statuses=StatusTiming(sent=0.1))
PATH: Final = f"/v25.0/{CONFIG.phone_number_id}/messages"
AUTH: Final = {"Authorization": f"Bearer {CONFIG.access_token}"}
STRANGER: Final = "15550009999"  # a number the bot was configured with, no scenario's user
ANA: Final = "5511987654321"
BO: Final = "4915112345678"


def _text(body: str, to: str = STRANGER) -> dict[str, Any]:
    return {"messaging_product": "whatsapp", "to": to, "type": "text", "text": {"body": body}}


class Webhooks:
    """A bot's webhook that keeps every update it is sent, and tells when a status comes."""

    def __init__(self) -> None:
        self.received: list[tuple[bytes, str | None]] = []
        self.status = asyncio.Event()
        self.app = Starlette(routes=[Route("/webhook", self._webhook, methods=["POST"])])

    async def _webhook(self, request: Request) -> Response:
        raw = await request.body()
        self.received.append((raw, request.headers.get("x-hub-signature-256")))
        if json.loads(raw)["entry"][0]["changes"][0]["value"].get("statuses"):
            self.status.set()
        return PlainTextResponse("ok")

    def statuses(self) -> list[dict[str, Any]]:
        """Every status item received, in order."""
        return [
            item
            for raw, _ in self.received
            for item in json.loads(raw)["entry"][0]["changes"][0]["value"].get("statuses", [])
        ]


def _without_ids(raw: bytes) -> dict[str, Any]:
    """A status webhook with what differs between two sends (the wamid, the time) blanked."""
    payload: dict[str, Any] = json.loads(raw)
    for item in payload["entry"][0]["changes"][0]["value"]["statuses"]:
        item["id"] = item["timestamp"] = "-"
    return payload


async def _as_serve_fails_it() -> bytes:
    """The failed status ``harness serve``'s simulator sends the agent for the same send."""
    webhooks = Webhooks()
    sim = WhatsAppSimulator(CONFIG)
    sim.connect(webhooks.app, verified=True)
    try:
        async with sim.graph_client(headers=AUTH) as client:
            assert (await client.post(PATH, json=_text("Your order is ready"))).status_code == 200
        await sim.run_until(sim.clock.now() + timedelta(seconds=1))
    finally:
        await sim.aclose()
    [(raw, _)] = webhooks.received
    return raw


@pytest.mark.network
async def test_a_send_to_a_number_no_scenario_plays_fails_with_131047_on_a_signed_status() -> None:
    webhooks = Webhooks()
    async with serve_in_process(webhooks.app) as url:
        router = GraphRouter(CONFIG, "127.0.0.1", free_port(), target_url=f"{url}/webhook")
        router.attach("run:0", Starlette(), router.clock, [ANA])
        await router.start()
        try:
            async with httpx.AsyncClient(base_url=router.url, headers=AUTH) as client:
                answer = await client.post(PATH, json=_text("Your order is ready"))
            await asyncio.wait_for(webhooks.status.wait(), timeout=10)
            strays = router.strays("run:0")
        finally:
            await router.stop()
    # Accepted as Meta accepts it...
    assert answer.status_code == 200
    wamid = answer.json()["messages"][0]["id"]
    assert wamid.startswith("wamid.")
    assert answer.json()["contacts"] == [{"input": STRANGER, "wa_id": STRANGER}]
    # ...then failed on a status webhook, signed with the app secret, as serve fails it.
    [(raw, signature)] = webhooks.received
    assert is_valid(raw, signature, CONFIG.app_secret)
    [status] = webhooks.statuses()
    assert (status["id"], status["status"], status["recipient_id"]) == (wamid, "failed", STRANGER)
    assert [(e["code"], e["title"]) for e in status["errors"]] == [
        (131047, "Re-engagement message")
    ]
    assert _without_ids(raw) == _without_ids(await _as_serve_fails_it())
    # And kept for the scenario that was running.
    [stray] = strays
    assert (stray.to, stray.type, stray.text, stray.wamid, stray.running) == (
        STRANGER,
        "text",
        "Your order is ready",
        wamid,
        1,
    )
    assert stray.headline() == (
        "the agent sent text 'Your order is ready' to 15550009999, a number that is none of "
        "this scenario's users; accepted, then failed: 131047 (Re-engagement message)"
    )


async def test_a_stray_send_goes_on_each_scenario_running_or_else_on_the_last_that_ended() -> None:
    router = GraphRouter(CONFIG, "127.0.0.1", free_port())  # no agent URL: statuses go nowhere
    router.attach("run:0", Starlette(), router.clock, [ANA])
    router.attach("run:1", Starlette(), router.clock, [BO])
    transport = httpx.ASGITransport(app=router)
    try:
        async with httpx.AsyncClient(
            transport=transport, base_url="http://graph.local", headers=AUTH
        ) as client:
            assert (await client.post(PATH, json=_text("while both ran"))).status_code == 200
            router.detach("run:0")
            router.detach("run:1")
            assert (await client.post(PATH, json=_text("after both ended"))).status_code == 200
            # A read receipt for no scenario's message is refused, as the simulator refuses
            # one for a message it never received, and is no stray send.
            receipt = {"messaging_product": "whatsapp", "status": "read", "message_id": "wamid.X"}
            read = await client.post(PATH, json=receipt)
    finally:
        await router.stop()
    assert read.status_code == 400
    assert read.json()["error"]["code"] == 131009
    details = read.json()["error"]["error_data"]["details"]
    assert details == "message_id 'wamid.X' is not a message this number received"
    first, later = router.strays("run:0"), router.strays("run:1")
    assert [(s.text, s.running) for s in first] == [("while both ran", 2)]
    assert [(s.text, s.running) for s in later] == [("while both ran", 2), ("after both ended", 0)]
    assert first[0].headline() == (
        "the agent sent text 'while both ran' to 15550009999, a number that matched no "
        "scenario's user (sent while 2 scenarios ran: listed on each); accepted"
    )
    assert "(sent after this scenario ended)" in later[1].headline()
