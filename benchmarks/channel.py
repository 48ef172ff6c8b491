"""Channel cost: a whole simulated WhatsApp turn against bare HTTP round trips.

A turn is: the simulator signs a webhook and POSTs it to a trivial echo bot;
the bot answers through the fake Graph API; the simulator validates the send,
then POSTs three status webhooks (sent, delivered, read). Each is measured
against bare ``httpx`` round trips to a trivial app, timed in the same run:
in-process through ``httpx.ASGITransport``, and over loopback HTTP through
uvicorn. A turn needs five HTTP exchanges, so the figures are given against
one bare round trip and against five.

Then the same in-process turn with the reference agent (``agents.booking``,
its offline ScriptedModel behind the harness's pass-through recorders, as
``harness run`` builds it): the user asks questions and for a table in turn,
and the agent marks each message read, answers (a proposal with buttons now
and then) and keeps its per-user state. Each sample is a fresh agent: its
first turn, then turns 100 to 100+N (the steady state: a long history, a long
trace) in five blocks, each timed back to back with a block of bare ASGI
round trips (which goes first alternates), so a slow moment falls on both.
The figures are the median over the samples and their spread (min–max), as
milliseconds, turns per second and the ratio to one bare round trip.

Every echo-bot figure is per round: a block of turns and a block of bare
round trips timed back to back in one event loop (which goes first alternates
from round to round), so a slow moment on a shared machine falls on both; the
table gives the median over the rounds and the spread (min–max) of the time
per turn, the turns per second and the ratio to one bare round trip.

``--memory N`` adds the simulator's memory per conversation: N echo-bot
conversations (a user of their own each, one message and its reply with its
statuses), measured with ``tracemalloc`` over that phase alone: what is still
held after it (per conversation) and the phase's own peak, not the process's
lifetime maximum. ``--sites K`` adds the K allocation sites holding the most of
it, each named by the innermost line of this project that allocated it (and
the library line below it, if any). ``--gc N`` times the cyclic garbage
collector (``gc.callbacks``) over N such conversations, at Python's thresholds
and at the ones the ``harness`` command runs with.

Run: ``python benchmarks/channel.py`` (``--quick`` for a short run;
``--rounds``, ``--samples`` and ``--memory 10000`` for the issue's figures).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import re
import statistics
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.booking import BookingSettings, ScriptedModel, create_app  # after the path tweak
from channels.whatsapp.channel import agent_settings
from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.server import BackgroundServer
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.cli.main import GC_THRESHOLDS
from harness.clock import VirtualClock
from harness.llm_recorder import RecordingLLMClient
from harness.tape import RecordMode
from harness.tool_recorder import ToolRecorder

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


Round = tuple[float, float]  # seconds per turn, seconds per bare round trip


async def interleaved(
    turn: Callable[[], Awaitable[Any]],
    round_trip: Callable[[], Awaitable[Any]],
    rounds: int,
    per_round: int,
) -> list[Round]:
    """Per round: seconds per ``turn`` and per ``round_trip``, timed back to back.

    One round of each goes first untimed: the first bare round trips of a process ran at
    three times their later cost, which made the first round's ratio meaningless.
    """
    await timed(per_round, turn)
    await timed(per_round, round_trip)
    measured: list[Round] = []
    for index in range(rounds):
        if index % 2:
            trip = await timed(per_round, round_trip)
            per_turn = await timed(per_round, turn)
        else:
            per_turn = await timed(per_round, turn)
            trip = await timed(per_round, round_trip)
        measured.append((per_turn, trip))
    return measured


async def in_process(rounds: int, turns: int) -> list[Round]:
    """Per round: seconds per simulated turn and per bare ASGI round trip, in-process."""
    config = SimulatorConfig(rate_limits=False)  # one user, hundreds of replies
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    client = sim.graph_client()
    sim.connect(echo_bot(config, client, config.public_url))
    sim.add_user(WA_ID)
    bare = httpx.AsyncClient(transport=httpx.ASGITransport(app=bare_app()), base_url="http://x")

    async def turn() -> None:
        await sim.say(WA_ID, "hello")
        await sim.settle()

    async def round_trip() -> None:
        await bare.post("/", json={"hello": "world"})

    try:
        measured = await interleaved(turn, round_trip, rounds, turns)
        statuses = len(sim.conversation().statuses())
        assert statuses == 3 * (rounds + 1) * (turns + min(20, turns)), statuses
    finally:
        await sim.aclose()
        await client.aclose()
        await bare.aclose()
    return measured


async def loopback(rounds: int, turns: int) -> list[Round]:
    """Per round: seconds per simulated turn and per bare round trip, over loopback HTTP."""
    config = SimulatorConfig(rate_limits=False)  # one user, hundreds of replies
    clock = VirtualClock()
    async with httpx.AsyncClient() as client:
        sim = WhatsAppSimulator(config, clock=clock)
        graph = BackgroundServer(sim.graph_app)
        await graph.start()
        bot = BackgroundServer(echo_bot(config, client, graph.url))
        await bot.start()
        bare = BackgroundServer(bare_app())
        await bare.start()
        sim.connect(f"{bot.url}/webhook")
        sim.add_user(WA_ID)

        async def turn() -> None:
            await sim.say(WA_ID, "hello")
            await sim.settle(real_quiet=0.0)

        async def round_trip() -> None:
            await client.post(f"{bare.url}/", json={"hello": "world"})

        try:
            return await interleaved(turn, round_trip, rounds, turns)
        finally:
            await sim.aclose()
            await bare.stop()
            await bot.stop()
            await graph.stop()


Sites = list[tuple[str, float]]  # an allocation site, and the bytes it holds per conversation


async def memory_per_conversation(conversations: int, sites: int = 0) -> tuple[float, float, Sites]:
    """KiB held per echo-bot conversation after ``conversations`` of them, the phase's peak (MiB).

    Each conversation is a user of its own: one message, the bot's reply and
    its statuses. ``tracemalloc`` measures from just before the phase; with
    ``sites``, also the allocation sites holding the most, per conversation.
    """
    config = SimulatorConfig(rate_limits=False)
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    client = sim.graph_client()
    sim.connect(echo_bot(config, client, config.public_url))
    warm = sim.add_user("15550000000")
    await sim.say(warm, "hello")  # the handshake and first-use caches, outside the phase
    await sim.settle()
    gc.collect()
    tracemalloc.start(32 if sites else 1)
    try:
        start = tracemalloc.take_snapshot() if sites else None
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        for index in range(conversations):
            user = sim.add_user(f"1555{index + 1:07d}")
            await sim.say(user, "hello")
            await sim.settle()
        gc.collect()
        after, peak = tracemalloc.get_traced_memory()
        held = [] if start is None else _sites(start, tracemalloc.take_snapshot(), conversations)
    finally:
        tracemalloc.stop()
        await sim.aclose()
        await client.aclose()
    assert len(sim.outbox) == conversations + 1
    per = (after - before) / conversations / 1024
    return per, (peak - before) / 1024 / 1024, held[:sites]


def _sites(start: tracemalloc.Snapshot, end: tracemalloc.Snapshot, count: int) -> Sites:
    """Bytes held per conversation by site: this project's innermost line, and the one below."""
    root = str(Path(__file__).resolve().parent.parent) + "/"
    ours = tracemalloc.Filter(False, tracemalloc.__file__)
    held: dict[str, float] = {}
    for stat in end.filter_traces([ours]).compare_to(start.filter_traces([ours]), "traceback"):
        frames = list(stat.traceback)  # oldest first
        own = [f for f in frames if f.filename.startswith(root) and "-packages/" not in f.filename]
        site = f"{own[-1].filename.removeprefix(root)}:{own[-1].lineno}" if own else "elsewhere"
        if own and frames[-1] is not own[-1]:
            below = re.sub(r".*(-packages|/python3\.\d+)/", "", frames[-1].filename)
            site += f" ({below}:{frames[-1].lineno})"
        held[site] = held.get(site, 0.0) + stat.size_diff / count
    return sorted(held.items(), key=lambda item: -item[1])


async def collector_share(
    conversations: int, thresholds: tuple[int, int, int]
) -> tuple[float, int]:
    """The garbage collector's share of ``conversations`` echo-bot conversations, and its runs.

    Timed with ``gc.callbacks`` at ``thresholds``; the process's own are put back after.
    """
    config = SimulatorConfig(rate_limits=False)
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    client = sim.graph_client()
    sim.connect(echo_bot(config, client, config.public_url))
    spent, runs, began = 0.0, 0, 0.0

    def timing(phase: str, info: dict[str, int]) -> None:
        nonlocal spent, runs, began
        if phase == "start":
            began = time.perf_counter()
        else:
            spent += time.perf_counter() - began
            runs += 1

    own = gc.get_threshold()
    gc.collect()
    gc.set_threshold(*thresholds)
    gc.callbacks.append(timing)
    try:
        started = time.perf_counter()
        for index in range(conversations):
            user = sim.add_user(f"1555{index + 1:07d}")
            await sim.say(user, "hello")
            await sim.settle()
        elapsed = time.perf_counter() - started
    finally:
        gc.callbacks.remove(timing)
        gc.set_threshold(*own)
        await sim.aclose()
        await client.aclose()
    return spent / elapsed, runs


# What the user says, in turn: questions, and a table now and then (proposed, never confirmed).
CHAT = (
    "do you have vegan dishes?",
    "hello again",
    "a table on friday at 8pm?",
    "what is your cancellation policy?",
    "thanks",
)


async def reference_agent(steady_from: int, steady_turns: int) -> tuple[float, float, float]:
    """Seconds of a fresh agent's first turn, per steady turn, and per bare ASGI round trip.

    The steady turns and the bare round trips are timed in blocks, taking turns.
    """
    config = SimulatorConfig(rate_limits=False)  # one user, hundreds of replies
    sim = WhatsAppSimulator(config, clock=VirtualClock(), seed=0)
    user = sim.add_user(WA_ID, "Ana")
    client = sim.graph_client()
    llm = RecordingLLMClient(
        ScriptedModel(), RecordMode.PASSTHROUGH, sink=sim.record, clock=sim.clock
    )
    tools = ToolRecorder(RecordMode.PASSTHROUGH, sink=sim.record, clock=sim.clock)
    settings = BookingSettings.from_env(agent_settings(config, config.public_url))
    app = create_app(settings, clock=sim.clock, http_client=client, llm=llm, tools=tools)
    sim.connect(app)
    bare = httpx.AsyncClient(transport=httpx.ASGITransport(app=bare_app()), base_url="http://x")
    said = 0

    async def turn() -> None:
        nonlocal said
        await sim.say(user, CHAT[said % len(CHAT)])
        await sim.settle()
        said += 1

    async def round_trip() -> None:
        await bare.post("/", json={"hello": "world"})

    async def block(count: int, step: Callable[[], Awaitable[Any]]) -> float:
        started = time.perf_counter()
        for _ in range(count):
            await step()
        return time.perf_counter() - started

    blocks = 5
    per_block = max(1, steady_turns // blocks)
    trips = 5 * per_block
    try:
        started = time.perf_counter()
        await turn()
        first = time.perf_counter() - started
        while said < steady_from - 1:
            await turn()
        await block(20, round_trip)  # warm the bare client as the agent is warm
        steady = bare_total = 0.0
        for index in range(blocks):
            if index % 2:
                bare_total += await block(trips, round_trip)
                steady += await block(per_block, turn)
            else:
                steady += await block(per_block, turn)
                bare_total += await block(trips, round_trip)
        assert len(sim.conversation().replies()) >= said, "every message is answered"
    finally:
        await app.state.agent.aclose()
        await sim.aclose()
        await client.aclose()
        await bare.aclose()
    return first, steady / (blocks * per_block), bare_total / (blocks * trips)


def _spread(values: list[float], scale: float = 1.0, digits: int = 2) -> str:
    """The median and (min–max) of ``values`` times ``scale``."""
    low, mid, high = min(values) * scale, statistics.median(values) * scale, max(values) * scale
    return f"{mid:.{digits}f} ({low:.{digits}f}–{high:.{digits}f})"


def reference_table(samples: int, steady_from: int, steady_turns: int) -> None:
    """Measure the reference agent's turns and print them."""
    measured = [asyncio.run(reference_agent(steady_from, steady_turns)) for _ in range(samples)]
    print(
        f"\nreference agent (agents.booking) in-process, {samples} fresh agents: median (min–max)"
    )
    header = ("turn", "ms", "turns/s", "x bare ASGI round trip")
    print("{:<22} {:<22} {:<20} {}".format(*header))
    bare = [m[2] for m in measured]
    for label, index in (("1st", 0), (f"{steady_from} to {steady_from + steady_turns - 1}", 1)):
        per_turn = [m[index] for m in measured]
        rate = [1 / t for t in per_turn]
        ratio = [t / b for t, b in zip(per_turn, bare, strict=True)]
        print(
            f"{label:<22} {_spread(per_turn, 1e3):<22} {_spread(rate, digits=0):<20}"
            f" {_spread(ratio, digits=1)}"
        )
    print(f"{'bare ASGI round trip':<22} {_spread(bare, 1e3, digits=3)}")


def main() -> None:
    """Measure and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer turns and rounds")
    parser.add_argument("--rounds", type=int, default=None, help="echo-bot rounds (default 9)")
    parser.add_argument("--samples", type=int, default=None, help="fresh reference agents")
    parser.add_argument(
        "--memory", type=int, default=0, metavar="N", help="also measure N conversations' memory"
    )
    parser.add_argument(
        "--sites", type=int, default=0, metavar="K", help="with --memory: the K largest sites"
    )
    parser.add_argument(
        "--gc", type=int, default=0, metavar="N", help="also time the collector: N conversations"
    )
    args = parser.parse_args()
    turns = 50 if args.quick else 200
    rounds = args.rounds or (3 if args.quick else 9)

    print(f"echo bot: {rounds} rounds of {turns} turns and {turns} bare round trips, interleaved")
    print("median (min–max) over the rounds")
    header = ("path", "turn ms", "turns/s", "bare ms", "x bare round trip")
    print("{:<28} {:<22} {:<18} {:<22} {}".format(*header))
    for name, bench in (
        ("in-process (ASGI)", in_process),
        ("loopback HTTP (uvicorn)", loopback),
    ):
        measured = asyncio.run(bench(rounds, turns))
        per_turn = [m[0] for m in measured]
        bare = [m[1] for m in measured]
        rate = [1 / t for t in per_turn]
        ratio = [t / b for t, b in measured]
        print(
            f"{name:<28} {_spread(per_turn, 1e3, 3):<22} {_spread(rate, digits=0):<18}"
            f" {_spread(bare, 1e3, 3):<22} {_spread(ratio, digits=2)}"
        )
    agents = args.samples or (3 if args.quick else 7)
    reference_table(agents, steady_from=100, steady_turns=20 if args.quick else 50)
    if args.memory:
        held, peak, sites = asyncio.run(memory_per_conversation(args.memory, args.sites))
        print(
            f"\nsimulator memory, echo bot, {args.memory} conversations:"
            f" {held:.1f} KiB held per conversation; the phase's peak {peak:.1f} MiB"
        )
        for site, size in sites:
            print(f"{size:>8.0f} B  {site}")
    if args.gc:
        print(f"\nthe garbage collector over {args.gc} echo-bot conversations (one run each)")
        for name, thresholds in (("Python's", (700, 10, 10)), ("the command's", GC_THRESHOLDS)):
            share, runs = asyncio.run(collector_share(args.gc, thresholds))
            print(f"  {name} thresholds {thresholds}: {share:.1%} of the time, {runs} collections")


if __name__ == "__main__":
    main()
