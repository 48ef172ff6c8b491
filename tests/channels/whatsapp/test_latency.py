"""A replayed agent's Graph API calls take as long as they took in the chat recorded live."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from channels.whatsapp.channel import WhatsAppChannel
from channels.whatsapp.latency import RecordedLatency, call_shape
from harness.channel import AgentEnvironment, ChannelSetup, RecordedCall, UserSpec
from harness.clock import VirtualClock
from harness.trace import InboundMessage, OutboundSend

ANA = UserSpec(name="Ana", wa_id="15550001111")


def test_a_call_is_known_by_its_method_and_the_shape_of_its_path() -> None:
    assert call_shape("post", "/v25.0/100200300400500/messages") == ("POST", "/v25.0/*/messages")
    assert call_shape("GET", "/v25.0/4469980719646669") == ("GET", "/v25.0/*")
    assert call_shape("GET", "/_media/Zm9vYmFy?sig=1") == ("GET", "/_media/*")


async def test_each_call_waits_its_own_recorded_latency_on_the_clock() -> None:
    clock = VirtualClock()
    seen: list[tuple[str, float]] = []
    start = clock.now()

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, (clock.now() - start).total_seconds()))
        return httpx.Response(200, json={})

    calls = [
        RecordedCall("POST", "/v25.0/111/messages", 250.0),
        RecordedCall("GET", "/v25.0/777", 40.0),
        RecordedCall("POST", "/v25.0/111/messages", 1000.0),
    ]
    transport = RecordedLatency(httpx.MockTransport(answer), calls, clock)
    async with httpx.AsyncClient(transport=transport, base_url="http://graph") as client:
        first = asyncio.create_task(client.post("/v25.0/222/messages", json={}))
        await clock.run_until(start + timedelta(seconds=0.25))
        await first
        media = asyncio.create_task(client.get("/v25.0/888"))  # another id: the same shape
        await clock.run_until(clock.now() + timedelta(seconds=0.04))
        await media
        second = asyncio.create_task(client.post("/v25.0/222/messages", json={}))
        await clock.run_until(clock.now() + timedelta(seconds=1))
        await second
        await client.post("/v25.0/222/messages", json={})  # nothing recorded left: at once
    assert seen == [
        ("/v25.0/222/messages", 0.25),
        ("/v25.0/888", pytest.approx(0.29)),
        ("/v25.0/222/messages", pytest.approx(1.29)),
        ("/v25.0/222/messages", pytest.approx(1.29)),
    ]


def _bot(inline: bool) -> Any:
    """A bot that marks each message read, then echoes it: in its handler, or after the 200."""

    def factory(env: AgentEnvironment) -> Starlette:
        settings, http = env.settings, env.http_client
        assert http is not None
        url = (
            f"{settings['WHATSAPP_GRAPH_URL']}/{settings['WHATSAPP_API_VERSION']}"
            f"/{settings['WHATSAPP_PHONE_NUMBER_ID']}/messages"
        )
        auth = {"Authorization": f"Bearer {settings['WHATSAPP_ACCESS_TOKEN']}"}
        tasks: set[asyncio.Task[None]] = set()

        async def answer(message: dict[str, Any]) -> None:
            read = {"messaging_product": "whatsapp", "status": "read", "message_id": message["id"]}
            await http.post(url, headers=auth, json=read)
            echo = {"messaging_product": "whatsapp", "to": message["from"]}
            await http.post(url, headers=auth, json=echo | {"text": {"body": "echo"}})

        async def webhook(request: Request) -> Response:
            if request.method == "GET":
                return Response(request.query_params.get("hub.challenge", ""))
            value = json.loads(await request.body())["entry"][0]["changes"][0]["value"]
            for message in value.get("messages", []):
                if inline:
                    await answer(message)
                else:
                    task = asyncio.get_running_loop().create_task(answer(message))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
            return Response("ok")

        return Starlette(routes=[Route("/webhook", webhook, methods=["GET", "POST"])])

    return factory


@pytest.mark.parametrize("inline", [True, False], ids=["in-the-handler", "after-the-200"])
async def test_a_replayed_agents_sends_come_as_late_as_they_did_live(inline: bool) -> None:
    recorded = [
        RecordedCall("POST", "/v25.0/100200300400500/messages", 700.0),  # the read receipt
        RecordedCall("POST", "/v25.0/100200300400500/messages", 1300.0),  # the echo
    ]
    times: dict[str, list[float]] = {}
    for calls in ((), recorded):
        channel = WhatsAppChannel(
            ChannelSetup(users=[ANA], agent_factory=_bot(inline), recorded_calls=calls)
        )
        await channel.start()
        try:
            await channel.say("Ana", ["hi"])
            await channel.settle()
        finally:
            await channel.close()
        events = channel.conversation().events
        [inbound] = [e for e in events if isinstance(e, InboundMessage)]
        sends = [e for e in events if isinstance(e, OutboundSend)]
        times["recorded" if calls else "instant"] = [
            (s.at - inbound.at).total_seconds() for s in sends
        ]
    assert times["instant"] == [0.0, 0.0]
    assert times["recorded"] == [pytest.approx(0.7), pytest.approx(2.0)]
