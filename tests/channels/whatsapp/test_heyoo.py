"""heyoo, a client library from PyPI, unmodified, against the fake Graph API over loopback.

heyoo is synchronous (``requests``) and names Graph API versions of its time:
v14.0 for sends and media, v15.0 for read receipts, both long expired, which
Meta serves with its oldest live version. It reads webhooks with its own
helpers and uploads files as multipart form data through requests-toolbelt.
Its base URLs are plain attributes, set here to the simulator's address, as a
user would point it at a test double; nothing of heyoo itself is changed.
"""

from __future__ import annotations

import asyncio
import gc
import json
from pathlib import Path
from typing import Any, Final

import pytest
from heyoo import WhatsApp
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.server import BackgroundServer
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.clock import VirtualClock
from tests.bots.loopback import free_port

WA_ID: Final = "5511987654321"
PHOTO: Final = b"\xff\xd8\xff\xe0 a photo from heyoo's test"

pytestmark = pytest.mark.network


def _heyoo_bot(config: SimulatorConfig, graph_url: str, folder: Path) -> Starlette:
    """A bot built on heyoo: its webhook helpers read, its client answers (in a thread)."""
    wa = WhatsApp(token=config.access_token, phone_number_id=config.phone_number_id)
    # heyoo's own defaults are graph.facebook.com with v14.0 and v15.0: keep the versions.
    wa.base_url = f"{graph_url}/v14.0"
    wa.v15_base_url = f"{graph_url}/v15.0"
    wa.url = f"{wa.base_url}/{config.phone_number_id}/messages"

    def answer(data: dict[str, Any]) -> None:
        kind = wa.get_message_type(data)
        user = wa.get_mobile(data)
        wa.mark_as_read(wa.get_message_id(data))
        if kind == "text" and wa.get_message(data) == "menu":
            buttons = [
                {"type": "reply", "reply": {"id": "keep", "title": "Keep"}},
                {"type": "reply", "reply": {"id": "move", "title": "Move"}},
            ]
            body = {"type": "button", "body": {"text": "Keep 9am?"}, "action": {"buttons": buttons}}
            wa.send_reply_button(body, user)
        elif kind == "text":
            wa.send_message(f"echo: {wa.get_message(data)} ({wa.get_name(data)})", user)
        elif kind == "interactive":
            chosen = wa.get_interactive_response(data)["button_reply"]["title"]
            wa.send_message(f"you chose {chosen}", user, preview_url=False)
        elif kind == "image":
            image = wa.get_image(data)
            url = wa.query_media_url(image["id"])
            saved = wa.download_media(url, image["mime_type"], str(folder / "received"))
            wa.send_message(f"got {Path(saved).stat().st_size} bytes", user)
            uploaded = wa.upload_media(saved)
            wa.send_image(uploaded["id"], user, caption="yours, back", link=False)

    async def webhook(request: Request) -> Response:
        data = json.loads(await request.body())
        if wa.is_message(data):
            await asyncio.to_thread(answer, data)  # heyoo blocks: off the event loop
        return Response("ok")

    return Starlette(routes=[Route(config.webhook_path, webhook, methods=["POST"])])


# heyoo's upload_media opens the file it uploads and never closes it (its own leak, not the
# simulator's): the warning for that one file is let through, and only it.
@pytest.mark.filterwarnings(
    r"ignore:Exception ignored in. <_io.FileIO name='.*received\.jpeg'"
    ":pytest.PytestUnraisableExceptionWarning"
)
async def test_a_heyoo_bot_talks_to_users_through_the_fake_graph_api(tmp_path: Path) -> None:
    port = free_port()
    # Media download URLs name the address the fake Graph API is served at.
    config = SimulatorConfig(public_url=f"http://127.0.0.1:{port}", handshake=False)
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    try:
        async with BackgroundServer(sim.graph_app, port=port) as graph:
            sim.connect(_heyoo_bot(config, graph.url, tmp_path))
            sim.add_user(WA_ID, "Ana")
            await sim.say(WA_ID, "hello")
            await sim.settle(real_quiet=0.3)
            await sim.say(WA_ID, "menu")
            await sim.settle(real_quiet=0.3)
            await sim.tap(WA_ID, "Move")
            await sim.settle(real_quiet=0.3)
            await sim.send_media(WA_ID, "image", PHOTO, mime_type="image/jpeg")
            await sim.settle(real_quiet=0.3)
    finally:
        await sim.aclose()
        gc.collect()  # heyoo's open file is finalized here, inside this test's warning filter
    conversation = sim.conversation()
    sends = conversation.sends()
    refused = [(send.type, send.error) for send in sends if send.error is not None]
    assert refused == []
    assert [send.type for send in sends] == [
        *("mark_read", "text"),
        *("mark_read", "interactive"),
        *("mark_read", "text"),
        *("mark_read", "text", "image"),
    ]
    assert [send.text for send in sends if send.type == "text"] == [
        "echo: hello (Ana)",
        "you chose Move",
        f"got {len(PHOTO)} bytes",
    ]
    # The photo went up as heyoo's multipart form and came back by its new id, byte for byte.
    [image] = [send.request for send in sends if send.type == "image"]
    sent = image["image"]
    assert isinstance(sent, dict)
    stored = sim.media.get(str(sent["id"]))
    assert stored is not None
    assert stored.data == PHOTO
    assert stored.mime_type == "image/jpeg"
