"""Blocking under ``harness serve``: a bot at a URL blocks a user the control API plays.

As ``harness serve`` runs it: the simulator paced on real time, its Graph API
and control API served over loopback, the bot in a server of its own sending
to that Graph API. The user's message after the block is answered by the
control API (the user's phone sent it) but never reaches the bot, and the
event log says so; the listing and the unblock go through the same server.
"""

from __future__ import annotations

import asyncio
from typing import Final

import httpx
import pytest

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.control import control_app
from channels.whatsapp.server import BackgroundServer
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.clock import VirtualClock
from tests.bots import moderator
from tests.bots.loopback import free_port, serve_in_process

WA_ID: Final = "5511987654321"


@pytest.mark.network
async def test_a_user_the_bot_blocked_under_serve_is_dropped_until_unblocked() -> None:
    port = free_port()
    config = SimulatorConfig(public_url=f"http://127.0.0.1:{port}")
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    pacer = asyncio.get_running_loop().create_task(sim.run_paced())
    settings = {
        "WHATSAPP_ACCESS_TOKEN": config.access_token,
        "WHATSAPP_PHONE_NUMBER_ID": config.phone_number_id,
        "WHATSAPP_GRAPH_URL": config.public_url,
    }
    auth = {"Authorization": f"Bearer {config.access_token}"}
    block_users = f"/v25.0/{config.phone_number_id}/block_users"
    try:
        async with (
            BackgroundServer(control_app(sim), port=port) as served,
            serve_in_process(moderator.create_app(settings)) as bot,
            httpx.AsyncClient(base_url=served.url, timeout=30) as client,
        ):
            sim.connect(f"{bot}/webhook")
            added = await client.post("/_harness/users", json={"wa_id": WA_ID, "name": "Ana"})
            assert added.status_code == 201, added.text
            said = []
            for text in ("hello", "you idiot", "are you there?"):
                answer = await client.post("/_harness/inbound", json={"user": WA_ID, "text": text})
                assert answer.status_code == 200, answer.text
                said.append(answer.json()["wamid"])
            listed = (await client.get(block_users, headers=auth)).json()
            events = (await client.get("/_harness/events")).json()["events"]
            unblock = {"messaging_product": "whatsapp", "block_users": [{"user": WA_ID}]}
            undone = await client.request("DELETE", block_users, json=unblock, headers=auth)
            again = await client.post("/_harness/inbound", json={"user": WA_ID, "text": "sorry"})
            assert again.status_code == 200, again.text
            outbox = (await client.get("/_harness/outbox")).json()["messages"]
    finally:
        pacer.cancel()
        await sim.aclose()
    assert listed["data"] == [{"messaging_product": "whatsapp", "wa_id": WA_ID}]
    assert undone.json()["block_users"]["removed_users"] == [{"input": WA_ID, "wa_id": WA_ID}]
    delivered = [e["text"] for e in events if e["kind"] == "inbound"]
    assert delivered == ["hello", "you idiot"]
    [dropped] = [e for e in events if e["kind"] == "dropped"]
    assert (dropped["wamid"], dropped["text"], dropped["reason"]) == (
        said[2],
        "are you there?",
        "blocked",
    )
    [block] = [e for e in events if e["kind"] == "block"]
    assert (block["user"], block["blocked"], block["error"]) == (WA_ID, True, None)
    replies = [m["text"]["body"] for m in outbox]
    assert replies == ["You said: hello", "Goodbye.", "You said: sorry"]
