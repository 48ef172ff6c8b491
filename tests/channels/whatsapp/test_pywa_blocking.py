"""pywa's own Block Users calls, unmodified, against the simulator over loopback HTTP.

pywa blocks, lists and unblocks users through its client, reads every answer
with its own classes, and maps Meta's codes to its own exceptions: a partial
failure (139100) with the failed user's own error inside, a send to a
blocked user (131048). pywa 4.5 breaks on Meta's own listing of blocked
users (:data:`PYWA_BREAKS`): an expected failure, which flips once pywa reads
it as Meta writes it.
"""

from __future__ import annotations

from typing import Final

import httpx
import pytest
from pywa.errors import BulkBlockingFailed, SpamRateLimitHit
from pywa_async.client import WhatsApp as AsyncWhatsApp
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.server import BackgroundServer
from channels.whatsapp.simulator import WhatsAppSimulator
from channels.whatsapp.transport import GraphRedirect
from harness.clock import VirtualClock
from harness.trace import DroppedMessage, InboundMessage
from tests.bots.loopback import free_port

PYWA_BREAKS: Final = (
    "pywa 4.5 reads input on each user get_blocked_users lists, which Meta's listing (the"
    " example of its OpenAPI description: messaging_product and wa_id) does not carry"
)
CONFIG: Final = SimulatorConfig(handshake=False)
ANA: Final = "5511987654321"
BEN: Final = "4915112345678"


async def _ok(request: Request) -> Response:
    return PlainTextResponse("ok")


@pytest.mark.network
async def test_pywa_blocks_lists_and_unblocks_users_as_meta_answers() -> None:
    sim = WhatsAppSimulator(CONFIG, clock=VirtualClock())
    sim.connect(Starlette(routes=[Route(CONFIG.webhook_path, _ok, methods=["POST"])]))
    sim.add_user(ANA, "Ana")
    sim.add_user(BEN, "Ben")
    await sim.say(ANA, "you idiot")
    async with BackgroundServer(sim.graph_app, port=free_port()) as graph:
        session = httpx.AsyncClient(transport=GraphRedirect(graph.url))
        wa = AsyncWhatsApp(
            phone_id=CONFIG.phone_number_id, token=CONFIG.access_token, session=session
        )
        auth = {"Authorization": f"Bearer {CONFIG.access_token}"}
        blocked = await wa.block_users([ANA])
        path = f"/v25.0/{CONFIG.phone_number_id}/block_users"
        listed = (await session.get(f"https://graph.facebook.com{path}", headers=auth)).json()
        with pytest.raises(BulkBlockingFailed) as failed:  # Ben never wrote
            await wa.block_users([BEN])
        await sim.say(ANA, "hello?")
        with pytest.raises(SpamRateLimitHit) as refused:
            await wa.send_message(to=ANA, text="hi")
        unblocked = await wa.unblock_users([ANA])
        after = (await session.get(f"https://graph.facebook.com{path}", headers=auth)).json()
        await sim.say(ANA, "sorry")
        await session.aclose()
    await sim.settle()
    await sim.aclose()
    assert [(u.input, u.wa_id) for u in blocked.added_users] == [(ANA, ANA)]
    assert blocked.failed_users == ()
    assert listed["data"] == [{"messaging_product": "whatsapp", "wa_id": ANA}]
    assert failed.value.code == 139100
    assert failed.value.raw_response is not None
    [failure] = failed.value.raw_response.json()["block_users"]["failed_users"]
    assert failure["errors"][0]["code"] == 131047
    assert refused.value.code == 131048
    assert refused.value.message == "(#131048) User is blocked"
    assert [(u.input, u.wa_id) for u in unblocked.removed_users] == [(ANA, ANA)]
    assert after == {"data": []}
    events = sim.conversation().events
    assert [e.text for e in events if isinstance(e, InboundMessage)] == ["you idiot", "sorry"]
    assert [e.text for e in events if isinstance(e, DroppedMessage)] == ["hello?"]


@pytest.mark.network
@pytest.mark.xfail(raises=KeyError, strict=True, reason=PYWA_BREAKS)
async def test_pywa_reads_the_list_of_blocked_users() -> None:
    sim = WhatsAppSimulator(CONFIG, clock=VirtualClock())
    sim.connect(Starlette(routes=[Route(CONFIG.webhook_path, _ok, methods=["POST"])]))
    sim.add_user(ANA, "Ana")
    await sim.say(ANA, "you idiot")
    try:
        async with (
            BackgroundServer(sim.graph_app, port=free_port()) as graph,
            httpx.AsyncClient(transport=GraphRedirect(graph.url)) as session,
        ):
            wa = AsyncWhatsApp(
                phone_id=CONFIG.phone_number_id, token=CONFIG.access_token, session=session
            )
            await wa.block_users([ANA])
            listed = (await wa.get_blocked_users())[:]
            assert [u.wa_id for u in listed] == [ANA]
    finally:
        await sim.settle()
        await sim.aclose()
