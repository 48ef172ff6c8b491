"""Channel cost: a whole simulated WhatsApp turn against bare HTTP round trips.

A turn is: the simulator signs a webhook and POSTs it to a trivial echo bot;
the bot answers through the fake Graph API; the simulator validates the send,
then POSTs three status webhooks (sent, delivered, read). Each is measured
against bare ``httpx`` round trips to a trivial app, timed in the same run:
in-process through ``httpx.ASGITransport``, and over loopback HTTP through
uvicorn. A turn needs five HTTP exchanges, so the figures are given against
one bare round trip and against five.

Run: ``python benchmarks/channel.py`` (``--quick`` for a short run).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from channels.whatsapp.config import SimulatorConfig  # after the path tweak
from channels.whatsapp.server import BackgroundServer
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.clock import VirtualClock

WA_ID = "15551230001"


def echo_bot(config: SimulatorConfig, client: httpx.AsyncClient, graph_url: str) -> Starlette:
    """A trivial bot: answers the handshake; echoes each text through the Graph API."""
    url = f"{graph_url}/v25.0/{config.phone_number_id}/messages"
    auth = {"Authorization": f"Bearer {config.access_token}"}

    async def webhook(request: Request) -> Response:
        if request.method == "GET":
            return PlainTextResponse(request.query_params["hub.challenge"])
        payload = await request.json()
        value = payload["entry"][0]["changes"][0]["value"]
        for message in value.get("messages", []):
            body = {
                "messaging_product": "whatsapp",
                "to": message["from"],
                "type": "text",
                "text": {"body": message["text"]["body"]},
            }
            await client.post(url, json=body, headers=auth)
        return PlainTextResponse("ok")

    return Starlette(routes=[Route("/webhook", webhook, methods=["GET", "POST"])])


def bare_app() -> Starlette:
    """The baseline: an app that answers a JSON POST with a small JSON body."""

    async def echo(request: Request) -> Response:
        await request.body()
        return JSONResponse({"ok": True})

    return Starlette(routes=[Route("/", echo, methods=["POST"])])


async def timed(count: int, step: Callable[[], Awaitable[Any]]) -> float:
    """Seconds per call of ``step`` over ``count`` calls (after a short warm-up)."""
    for _ in range(min(20, count)):
        await step()
    started = time.perf_counter()
    for _ in range(count):
        await step()
    return (time.perf_counter() - started) / count


async def in_process(turns: int) -> tuple[float, float]:
    """Seconds per simulated turn and per bare ASGI round trip, in-process."""
    config = SimulatorConfig(rate_limits=False)  # one user, hundreds of replies
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    client = sim.graph_client()
    sim.connect(echo_bot(config, client, config.public_url))
    sim.add_user(WA_ID)

    async def turn() -> None:
        await sim.say(WA_ID, "hello")
        await sim.settle()

    per_turn = await timed(turns, turn)
    statuses = len(sim.conversation().statuses())
    assert statuses == 3 * (turns + min(20, turns)), statuses
    await sim.aclose()
    await client.aclose()

    bare = httpx.AsyncClient(transport=httpx.ASGITransport(app=bare_app()), base_url="http://x")

    async def round_trip() -> None:
        await bare.post("/", json={"hello": "world"})

    per_trip = await timed(turns * 5, round_trip)
    await bare.aclose()
    return per_turn, per_trip


async def loopback(turns: int) -> tuple[float, float]:
    """Seconds per simulated turn and per bare round trip, over loopback HTTP."""
    config = SimulatorConfig(rate_limits=False)  # one user, hundreds of replies
    clock = VirtualClock()
    async with httpx.AsyncClient() as client:
        sim = WhatsAppSimulator(config, clock=clock)
        graph = BackgroundServer(sim.graph_app)
        await graph.start()
        bot = BackgroundServer(echo_bot(config, client, graph.url))
        await bot.start()
        sim.connect(f"{bot.url}/webhook")
        sim.add_user(WA_ID)

        async def turn() -> None:
            await sim.say(WA_ID, "hello")
            await sim.settle(real_quiet=0.0)

        per_turn = await timed(turns, turn)
        await sim.aclose()
        await bot.stop()
        await graph.stop()

        async with BackgroundServer(bare_app()) as bare:

            async def round_trip() -> None:
                await client.post(f"{bare.url}/", json={"hello": "world"})

            per_trip = await timed(turns * 5, round_trip)
    return per_turn, per_trip


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer turns")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    turns = 50 if args.quick else 300

    rows: list[tuple[str, float, float]] = []
    for name, bench in (
        ("in-process (ASGITransport)", in_process),
        ("loopback HTTP (uvicorn)", loopback),
    ):
        samples = [asyncio.run(bench(turns)) for _ in range(args.repeats)]
        per_turn = statistics.median(s[0] for s in samples)
        per_trip = statistics.median(s[1] for s in samples)
        rows.append((name, per_turn, per_trip))

    print(f"{turns} turns per sample, median of {args.repeats} samples")
    header = ("path", "turn (ms)", "turns/s", "bare (ms)", "x bare", "x 5 bare")
    print("{:<28} {:>10} {:>9} {:>10} {:>8} {:>9}".format(*header))
    for name, per_turn, per_trip in rows:
        print(
            f"{name:<28} {per_turn * 1e3:>10.3f} {1 / per_turn:>9.0f} {per_trip * 1e3:>10.3f}"
            f" {per_turn / per_trip:>8.1f} {per_turn / (5 * per_trip):>9.2f}"
        )


if __name__ == "__main__":
    main()
