"""A live chat whose sender's clock jumped replays with the jump in its webhooks' timestamps.

Over loopback, as a user records one: the simulator plays Meta, ``harness
proxy`` sits between it and a bot of a third party's, and Meta's clock moves
25 hours between the user's order and their "yes" (``harness serve``'s
``advance``). The proxy keeps when each message arrived, seconds apart; only
the webhooks' timestamps hold the 25 hours. The bot judges a confirmation's
age by those timestamps, as real bots do, so it said the confirmation had
expired. Replayed against a fresh copy of the bot, it must say so again: the
replay stamps the "yes" 25 hours after the order, and the redelivered "yes"
with the timestamp of the message it repeats.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.proxy import create_proxy_app
from channels.whatsapp.proxy_record import ProxyRecorder
from channels.whatsapp.proxy_settings import ProxySettings
from channels.whatsapp.server import BackgroundServer
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.clock import VirtualClock
from harness.fixture import load_fixture
from harness.replay.playback import replay_fixture
from harness.suites.runner import Runner, RunOptions
from tests.bots.loopback import free_port, serve_in_process

pytestmark = pytest.mark.network

ANA = "5511987654321"
CONFIG = SimulatorConfig()
EXPIRED = "Sorry, that confirmation has expired."
DAY = 24 * 3600


@dataclass
class ShopBot:
    """A bot that asks to confirm an order and refuses a "yes" more than a day later.

    It reads the time from the webhooks' ``timestamp`` alone, drops a message
    it has seen (by id), and keeps every timestamp it was sent, repeats too.
    """

    graph: str
    stamps: list[tuple[str, int]] = field(default_factory=list)
    answered: list[str] = field(default_factory=list)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)

    def app(self) -> Starlette:
        ordered: dict[str, int] = {}
        handled: set[str] = set()

        async def reply(user: str, text: str) -> None:
            async with httpx.AsyncClient(timeout=10) as client:
                await client.post(
                    f"{self.graph}/v25.0/{CONFIG.phone_number_id}/messages",
                    json={"messaging_product": "whatsapp", "to": user, "text": {"body": text}},
                    headers={"Authorization": f"Bearer {CONFIG.access_token}"},
                )
            self.answered.append(text)

        async def webhook(request: Request) -> Response:
            if request.method == "GET":
                return PlainTextResponse(request.query_params.get("hub.challenge", ""))
            for entry in (await request.json())["entry"]:
                for change in entry["changes"]:
                    for message in change["value"].get("messages", []):
                        text, stamp = message["text"]["body"], int(message["timestamp"])
                        self.stamps.append((text, stamp))
                        if message["id"] in handled:
                            continue
                        handled.add(message["id"])
                        user = message["from"]
                        if text == "order":
                            ordered[user] = stamp
                            answer = "Confirm your order of 2 widgets?"
                        elif stamp - ordered.get(user, stamp) > DAY:
                            answer = EXPIRED
                        else:
                            answer = "Done! Your order is placed."
                        task = asyncio.create_task(reply(user, answer))
                        self.tasks.add(task)
                        task.add_done_callback(self.tasks.discard)
            return PlainTextResponse("ok")

        return Starlette(routes=[Route("/webhook", webhook, methods=["GET", "POST"])])


@asynccontextmanager
async def shop_bot(graph: str) -> AsyncIterator[tuple[str, ShopBot]]:
    """A fresh copy of the bot, its Graph API at ``graph``; yields its webhook URL and the bot."""
    bot = ShopBot(graph)
    async with serve_in_process(bot.app()) as url:
        yield f"{url}/webhook", bot


async def until(condition: object, what: str, within: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not callable(condition) or not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"waited {within} s for {what}")
        await asyncio.sleep(0.02)


async def test_a_confirmation_that_expired_live_when_meta_s_clock_jumped_expires_in_the_replay(
    tmp_path: Path,
) -> None:
    out = tmp_path / "chat"
    graph_port, proxy_port = free_port(), free_port()
    config = CONFIG.model_copy(update={"public_url": f"http://127.0.0.1:{graph_port}"})
    sim = WhatsAppSimulator(config, clock=VirtualClock(datetime.now(UTC).replace(microsecond=0)))
    proxy_url = f"http://127.0.0.1:{proxy_port}"
    async with (
        BackgroundServer(sim.graph_app, port=graph_port) as graph,
        shop_bot(proxy_url) as (agent, live_bot),
    ):
        settings = ProxySettings(
            agent_url=agent,
            app_secret=config.app_secret,
            verify_token=config.verify_token,
            out=out,
            upstream_graph=graph.url,
        )
        recorder = ProxyRecorder(settings)
        try:
            async with BackgroundServer(create_proxy_app(settings, recorder), port=proxy_port):
                sim.connect(f"{proxy_url}/webhook")
                sim.add_user(ANA, "Ana")
                await sim.say(ANA, "order")
                await sim.settle()
                await until(lambda: len(live_bot.answered) == 1, "the question")
                await sim.advance(timedelta(hours=25), reason="advance 25h")
                await sim.say(ANA, "yes")
                await sim.settle()
                await until(lambda: len(live_bot.answered) == 2, "the answer")
                await sim.redeliver(user=ANA)
                await sim.settle()
                await until(lambda: len(live_bot.stamps) == 3, "the repeat")
        finally:
            await sim.aclose()
            recorder.close()

    assert live_bot.answered[1] == EXPIRED
    fixture = load_fixture(out)
    inbound = [e for e in fixture.events or () if e.kind == "inbound"]
    assert inbound[1].at - inbound[0].at < timedelta(minutes=1)  # arrivals: seconds apart

    replay_graph = f"http://127.0.0.1:{free_port()}"
    async with shop_bot(replay_graph) as (agent, bot):
        options = RunOptions(
            target_url=agent,
            quiet=0.3,
            channel_options={"graph_url": replay_graph, "serve_graph": True},
        )
        result = await replay_fixture(Runner(options), fixture)

    assert result.status == "same", (result.changes, result.divergences, result.error)
    assert bot.answered == ["Confirm your order of 2 widgets?", EXPIRED], result.changes
    # The agent read the recorded gap again (give or take the seconds a replay takes).
    (_, order), (_, yes), (repeated, again) = bot.stamps
    (_, order_live), (_, yes_live), _ = live_bot.stamps
    assert yes_live - order_live > DAY
    assert abs((yes - order) - (yes_live - order_live)) <= 5
    assert (repeated, again) == ("yes", yes)  # Meta's repeat carries the original's timestamp
