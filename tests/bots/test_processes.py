"""Each bot runs as a process of its own, configured from its environment."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.bots.loopback import serve_in_process, started_process
from tests.bots.meta import PHONE_NUMBER_ID, SETTINGS, compact, signature, text_message

pytestmark = pytest.mark.network


@pytest.mark.parametrize(
    "name", ["inline", "background", "debounce", "per_fragment", "pizza", "thinking"]
)
async def test_each_bot_process_answers_the_verification_handshake(name: str) -> None:
    bot = started_process(f"tests.bots.{name}", env=SETTINGS, ready_path="/webhook")
    async with bot as (url, _), httpx.AsyncClient() as client:
        query = {"hub.mode": "subscribe", "hub.challenge": "1158201444"}
        right = await client.get(
            f"{url}/webhook", params={**query, "hub.verify_token": "bots-verify-token"}
        )
        wrong = await client.get(f"{url}/webhook", params={**query, "hub.verify_token": "guess"})
    assert (right.status_code, right.text) == (200, "1158201444")
    assert wrong.status_code == 403


Sends = list[tuple[float, str, str | None, dict[str, Any]]]  # when, path, authorization, body


def _graph(sends: Sends, arrived: asyncio.Event) -> Starlette:
    async def messages(request: Request) -> Response:
        authorization = request.headers.get("authorization")
        sends.append((time.monotonic(), request.url.path, authorization, await request.json()))
        arrived.set()
        return JSONResponse({"messaging_product": "whatsapp", "messages": [{"id": "wamid.P1"}]})

    return Starlette(routes=[Route("/{version}/{phone_id}/messages", messages, methods=["POST"])])


@pytest.mark.parametrize(
    ("name", "extra", "sent_before_the_200"),
    [("inline", {}, True), ("background", {"BOT_REPLY_DELAY_SECONDS": "0.3"}, False)],
    ids=["inline", "background"],
)
async def test_a_bot_process_replies_through_the_graph_url_in_its_environment(
    name: str, extra: dict[str, str], sent_before_the_200: bool
) -> None:
    sends: Sends = []
    arrived = asyncio.Event()
    async with serve_in_process(_graph(sends, arrived)) as graph_url:
        env = {**SETTINGS, "WHATSAPP_GRAPH_URL": graph_url, **extra}
        bot = started_process(f"tests.bots.{name}", env=env, ready_path="/webhook")
        async with bot as (url, _), httpx.AsyncClient() as client:
            raw = compact(text_message("over the wire"))
            headers = {"X-Hub-Signature-256": signature(raw), "Content-Type": "application/json"}
            response = await client.post(f"{url}/webhook", content=raw, headers=headers)
            answered = time.monotonic()
            assert response.status_code == 200
            assert bool(sends) is sent_before_the_200
            await asyncio.wait_for(arrived.wait(), timeout=2)
    [(sent_at, path, authorization, body)] = sends
    assert path == f"/v25.0/{PHONE_NUMBER_ID}/messages"
    assert authorization == "Bearer EAAGbotstoken"
    assert body["text"] == {"body": "You said: over the wire"}
    assert (sent_at < answered) is sent_before_the_200
