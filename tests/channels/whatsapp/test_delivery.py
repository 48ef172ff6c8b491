"""How webhooks reach the agent: the verification handshake first, in the trace, as Meta."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import httpx
import pytest

from channels.whatsapp.channel import WhatsAppChannel
from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.server import BackgroundServer
from channels.whatsapp.simulator import WhatsAppSimulator
from channels.whatsapp.url_target import META_USER_AGENT
from harness.channel import ChannelSetup, UserSpec
from harness.clock import VirtualClock
from harness.exceptions import HandshakeError
from harness.redaction import REDACTED
from harness.trace import EVENT_ADAPTER, Conversation, DeliveryAttempt, Verification
from tests.bots.loopback import free_port
from tests.channels.whatsapp.echo_bot import BotConfig, EchoBot

WA_ID = "5511987654321"
TEMPLATE = {
    "messaging_product": "whatsapp",
    "to": WA_ID,
    "type": "template",
    "template": {"name": "hello_world", "language": {"code": "en_US"}},
}

Seen = list[tuple[str, dict[str, str], str]]


def _spied(app: Any, seen: Seen) -> Callable[..., Any]:
    """The agent's app, noting each request's method, headers and query first."""

    async def spy(scope, receive, send):  # type: ignore[no-untyped-def]  # raw ASGI
        if scope["type"] == "http":
            headers = {k.decode(): v.decode() for k, v in scope["headers"]}
            seen.append((scope["method"], headers, scope["query_string"].decode()))
        await app(scope, receive, send)

    return spy


def _setup(verify_token: str = "harness-verify-token") -> tuple[WhatsAppSimulator, EchoBot, Seen]:
    config = SimulatorConfig()
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    bot = BotConfig(
        config.app_secret,
        verify_token,
        config.access_token,
        config.phone_number_id,
        graph_url=config.public_url,
    )
    echo = EchoBot(bot, sim.graph_client())
    seen: Seen = []
    sim.connect(_spied(echo.app(), seen))
    sim.add_user(WA_ID, "Ana")
    return sim, echo, seen


def _kinds(conversation: Conversation) -> list[str]:
    return [e.kind for e in conversation.events if e.kind in ("verification", "delivery")]


async def test_the_handshake_precedes_a_status_when_the_agent_writes_first() -> None:
    sim, echo, seen = _setup()
    code, _answer = await echo.send(TEMPLATE)  # nobody has written yet
    assert code == 200
    await sim.settle()
    assert [method for method, _, _ in seen] == ["GET", "POST", "POST", "POST"]
    assert [s["status"] for s in echo.statuses] == ["sent", "delivered", "read"]
    conversation = sim.conversation()
    assert _kinds(conversation) == ["verification"] + ["delivery"] * 3
    # a message after that is delivered without a second handshake
    await sim.say(WA_ID, "hi")
    await sim.settle()
    assert [method for method, _, _ in seen].count("GET") == 1
    await sim.aclose()


async def test_the_handshake_is_in_the_trace_with_its_challenge_and_answer() -> None:
    sim, _echo, seen = _setup()
    await sim.say(WA_ID, "hi")
    await sim.settle()
    [check] = sim.conversation().verifications()
    _, _, query = seen[0]
    assert f"hub.challenge={check.challenge}" in query
    assert check.request == {
        "hub.mode": "subscribe",
        "hub.challenge": check.challenge,
        "hub.verify_token": REDACTED,  # the trace ends up in reports
    }
    assert (check.method, check.status_code, check.answer, check.passed) == (
        "GET",
        200,
        check.challenge,
        True,
    )
    assert check.challenge.isdigit()
    first_delivery = next(e for e in sim.events if isinstance(e, DeliveryAttempt))
    assert sim.events.index(check) < sim.events.index(first_delivery)
    assert EVENT_ADAPTER.validate_json(EVENT_ADAPTER.dump_json(check)) == check
    assert sim.conversation().turns[0].actions  # the turn holds the reply ...
    assert all(not isinstance(e, Verification) for e in sim.conversation().turns[0].actions)
    await sim.aclose()


async def test_a_failed_handshake_before_a_status_delivers_nothing_and_stops_the_run() -> None:
    sim, echo, seen = _setup(verify_token="not-the-one")
    code, _answer = await echo.send(TEMPLATE)
    assert code == 200  # sending does not depend on the webhook
    with pytest.raises(HandshakeError, match=r"verification handshake.*403"):
        await sim.settle()
    assert {method for method, _, _ in seen} == {"GET"}
    assert echo.statuses == []
    conversation = sim.conversation()
    assert conversation.deliveries() == []
    checks = conversation.verifications()
    assert checks
    assert {(c.status_code, c.passed, c.answer) for c in checks} == {(403, False, "forbidden")}
    await sim.aclose()


async def test_webhooks_carry_metas_user_agent() -> None:
    sim, _echo, seen = _setup()
    await sim.say(WA_ID, "hi")
    await sim.settle()
    assert {method for method, _, _ in seen} == {"GET", "POST"}
    assert {headers["user-agent"] for _, headers, _ in seen} == {META_USER_AGENT}
    assert META_USER_AGENT == "facebookexternalua"
    await sim.aclose()


async def _settle_for(channel: WhatsAppChannel, seconds: float) -> None:
    """Settle again and again for a while: against a URL, statuses come on real time."""
    for _ in range(int(seconds / 0.05)):
        await channel.settle()
        await asyncio.sleep(0.05)


@pytest.mark.network
async def test_an_agent_at_a_url_that_fails_the_handshake_stops_its_scenario() -> None:
    config = SimulatorConfig()
    graph_port = free_port()
    graph = f"http://127.0.0.1:{graph_port}"
    client = httpx.AsyncClient(timeout=10)
    bot = BotConfig(
        config.app_secret, "not-the-one", config.access_token, config.phone_number_id, graph
    )
    echo = EchoBot(bot, client)
    async with BackgroundServer(echo.app()) as bot_server:
        setup = ChannelSetup(
            users=[UserSpec("Ana", WA_ID)],
            target_url=f"{bot_server.url}/webhook",
            options={"graph_url": graph, "serve_graph": True},
        )
        channel = WhatsAppChannel(setup)
        await channel.start()
        try:
            code, _answer = await echo.send(TEMPLATE)  # the agent writes first
            assert code == 200
            with pytest.raises(HandshakeError, match=r"verification handshake.*403"):
                await _settle_for(channel, 2.5)
        finally:
            await channel.close()
    await client.aclose()
    assert echo.statuses == []
    assert channel.conversation().deliveries() == []


async def test_statuses_wait_on_the_clock_without_a_task_until_they_are_due() -> None:
    sim, echo, _ = _setup()
    await sim.say(WA_ID, "hello")
    await sim.run_until(sim.clock.now())  # the echo is sent; its statuses are due in 1, 2, 5 s
    assert _busy(sim)
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
    await sim.settle()
    assert [s["status"] for s in echo.statuses] == ["sent", "delivered", "read"]
    assert not _busy(sim)
    await sim.aclose()


def _busy(sim: WhatsAppSimulator) -> bool:
    deliverer = sim.deliverer
    assert deliverer is not None
    return deliverer.busy


async def test_closing_drops_the_statuses_still_waiting_for_their_instant() -> None:
    sim, echo, _ = _setup()
    clock = sim.clock
    assert isinstance(clock, VirtualClock)
    await sim.say(WA_ID, "hello")
    await sim.run_until(clock.now())
    assert clock.sleeping == 3  # sent, delivered, read
    await sim.aclose()
    assert clock.sleeping == 0
    await clock.run_until(clock.now() + timedelta(seconds=10))
    assert echo.statuses == []


async def test_a_finished_delivery_is_off_the_books_in_the_turn_of_the_loop_it_ends() -> None:
    # The clock waits for an idle loop after each delivery: a delivery that left the
    # deliverer's books a turn later (a done callback) would cost it one more wait each.
    async def quiet_agent(scope, receive, send):  # type: ignore[no-untyped-def]  # raw ASGI
        await receive()
        answer = b"ok"
        if scope["method"] == "GET":  # the handshake: the challenge back
            query = dict(p.split("=", 1) for p in scope["query_string"].decode().split("&"))
            answer = query["hub.challenge"].encode()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": answer})

    sim = WhatsAppSimulator(SimulatorConfig(), clock=VirtualClock())
    sim.connect(quiet_agent)
    sim.add_user(WA_ID, "Ana")
    deliverer = sim.deliverer
    assert deliverer is not None
    await sim.say(WA_ID, "hello")
    turns = 0
    while not sim.conversation().deliveries():
        assert deliverer.busy
        await asyncio.sleep(0)
        turns += 1
        assert turns < 20, "the message was never delivered"
    assert not deliverer.busy
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
    await sim.aclose()
