"""``harness serve`` under load: one turn, many users at once, and memory per turn.

``harness serve`` runs as a process of its own and delivers to the
independent echo bot (``tests/channels/whatsapp/echo_bot.py``), served by
uvicorn on loopback in this process, as the interop tests run it. The
number is an upgraded one (``--throughput-mps 1000``): at Meta's default of
80 messages a second, any rate over 80 turns a second meets 130429 by the
rules, and the count would say nothing. Three figures, each with its target:

(a) one turn through ``POST /_harness/inbound`` (the call answers once the
    agent has gone quiet) against one bare loopback round trip to the same
    bot: a signed status webhook POSTed straight to it. The rounds
    interleave the two, and each round gives a ratio. Target: at most 15x.
(b) 20 users writing at once for a few seconds: turns per second, and how
    many of the bot's sends Meta's throughput limit refused (130429).
    Target: at least 150 turns/s, and no 130429. Beside it, how long one
    call took, and the CPU time each process spent per turn (read from the
    kernel, so other work on the machine does not inflate it as it does
    wall time): ``harness serve``, and this process (the echo bot, its
    uvicorn, and the driver playing the users); first while the users
    wrote, then with the statuses that came after.
(c) how much the serve process's resident memory grows over 5,000 turns
    with its default retention, in KB per turn (the users write 20 at a
    time). Target: at most 10. The same with ``--keep-all`` is printed
    beside it, for comparison. One server runs at a time, the two settings
    taking turns: servers run side by side slowed each other's turns until
    calls timed out on two cores.
(d) one turn on a server keeping its state in Redis (``--redis``) against
    one turn on a server keeping it in memory, the two servers running side
    by side, each with a bot of its own, their turns taken one after the
    other. Each round gives a ratio. No target: this is what sharing one
    Meta between processes costs a turn. Skipped when no Redis answers at
    ``--redis`` (default: ``HARNESS_TEST_REDIS_URL``, else database 15 of
    the local Redis); its keys are deleted afterwards.

Each figure is the median over the repetitions, with its min-max. Missed
targets are reported, not failed: the exit code is non-zero only when
something went wrong (a call refused, the server or the bot failing).

Run: ``python benchmarks/serve.py`` (``--quick`` for fewer repetitions, ``--only b`` for one
figure, ``--loop asyncio`` to run both processes on asyncio's loop instead of uvloop).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from channels.whatsapp._event_loop import LOOPS, loop_factory, run_on  # noqa: E402
from tests.bots.loopback import free_port, serve_in_process  # noqa: E402  # after the path tweak
from tests.channels.whatsapp.echo_bot import BotConfig, EchoBot  # noqa: E402

# harness serve's defaults, which the bot is configured with as a real bot would be.
APP_SECRET = "harness-app-secret"
VERIFY_TOKEN = "harness-verify-token"
ACCESS_TOKEN = "harness-access-token"
PHONE_NUMBER_ID = "100200300400500"
THROTTLED = 130429
# Meta's pair rate (45 at once, then one every 6 s to a user): a user typing faster meets it.
PAIR_RATE = 131056
# Users writing at once while the memory figure is taken.
AT_ONCE = 20


# Clock ticks per second, the unit of a process's CPU times in /proc.
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class Failure(Exception):
    """Something went wrong (not a missed target): the benchmark exits non-zero."""


@dataclass
class Served:
    """A running ``harness serve`` process, the bot it delivers to, and a client for both."""

    url: str
    process: asyncio.subprocess.Process
    bot: EchoBot
    bot_url: str
    client: httpx.AsyncClient
    driver: aiohttp.ClientSession

    def cpu_seconds(self) -> float:
        """CPU time (user and system) the serve process has used so far, in seconds (Linux)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICKS

    def rss_kb(self) -> int:
        """The serve process's resident set size, in KB (Linux)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise Failure("no VmRSS in /proc: the memory figure needs Linux")

    async def turn(self, user: str, text: str = "hello") -> None:
        """One user message through the control API, answered once the agent is quiet."""
        async with self.driver.post(
            f"{self.url}/_harness/inbound", json={"user": user, "text": text}
        ) as answer:
            if answer.status != 200:
                raise Failure(
                    f"POST /_harness/inbound answered {answer.status}: {await answer.text()}"
                )

    async def events(self, since: int) -> dict[str, object]:
        """The event log from absolute index ``since``."""
        answer = await self.client.get(f"{self.url}/_harness/events", params={"since": since})
        if answer.status_code != 200:
            raise Failure(f"GET /_harness/events answered {answer.status_code}: {answer.text}")
        page: dict[str, object] = answer.json()
        return page

    def forget_what_the_bot_saw(self) -> None:
        """The bot keeps what it saw for tests to read; a long run has no use for it."""
        bot = self.bot
        if bot.errors:
            raise Failure(f"the bot could not read a webhook: {bot.errors[0]}")
        refused = [body for status, body in bot.send_results if status != 200]
        if any(body.get("error", {}).get("code") not in (THROTTLED, PAIR_RATE) for body in refused):
            raise Failure(f"the fake Graph API refused a send of the bot's: {refused[0]}")
        for seen in (bot.raw_bodies, bot.signatures, bot.messages, bot.statuses):
            seen.clear()
        bot.send_results.clear()
        bot.downloads.clear()


@asynccontextmanager
async def serving(*options: str, loop: str = "auto") -> AsyncIterator[Served]:
    """``harness serve`` in its own process, delivering to the echo bot served here."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # Idle connections are let go before uvicorn's own 5 s would close them under a request.
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200, keepalive_expiry=2)
    # The bot's own client: httpx's default pool, as a bot would have it, with the same expiry.
    bot_limits = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=2)
    # The driver plays the users; aiohttp, whose pool costs little per request at 20 at once,
    # so that the figure is the server's and the bot's, not the driver's.
    connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=2)
    async with (
        httpx.AsyncClient(timeout=60, limits=limits) as client,
        httpx.AsyncClient(timeout=60, limits=bot_limits) as bot_client,
        aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(60)) as driver,
    ):
        config = BotConfig(APP_SECRET, VERIFY_TOKEN, ACCESS_TOKEN, PHONE_NUMBER_ID, graph_url=url)
        bot = EchoBot(config, bot_client)
        async with serve_in_process(bot.app()) as bot_url:
            process = await asyncio.create_subprocess_exec(
                *(sys.executable, "-m", "harness", "serve", "--port", str(port)),
                *(
                    "--webhook-url",
                    f"{bot_url}/webhook",
                    "--throughput-mps",
                    "1000",
                    "--loop",
                    loop,
                    *options,
                ),
                cwd=ROOT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
            try:
                await _started(client, url, process)
                served = Served(url, process, bot, bot_url, client, driver)
                yield served
                await _quiet(served)  # the last statuses: none is cut off on its way to the bot
                await bot.idle()
            finally:
                if process.returncode is None:
                    process.terminate()
                await process.communicate()


async def _started(
    client: httpx.AsyncClient, url: str, process: asyncio.subprocess.Process
) -> None:
    deadline = time.monotonic() + 20
    while True:
        if process.returncode is not None:
            assert process.stderr is not None
            raise Failure(f"harness serve exited: {(await process.stderr.read()).decode()}")
        try:
            if (await client.get(f"{url}/_harness/clock")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise Failure("harness serve did not answer within 20 s")
        await asyncio.sleep(0.05)


def _signed_status(at: int) -> tuple[bytes, dict[str, str]]:
    """A status webhook as Meta sends one, signed: the bot reads it and sends nothing back."""
    user = "BR.7790102030405060708"
    status = {
        "id": "wamid.HBgNNTUxMTk4NzY1NDMyMRUCABEYEjQ2QzA1N0Q3RkI3Q0JBRjVFNQA=",
        "status": "delivered",
        "timestamp": str(at),
        "recipient_id": "5511987654321",
        "recipient_user_id": user,
    }
    value = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550001111", "phone_number_id": PHONE_NUMBER_ID},
        "contacts": [{"wa_id": "5511987654321", "user_id": user}],
        "statuses": [status],
    }
    payload = {
        "object": "whatsapp_business_account",
        "entry": [{"id": "900800700600500", "changes": [{"field": "messages", "value": value}]}],
    }
    body = json.dumps(payload, separators=(",", ":")).encode()
    digest = hmac.new(APP_SECRET.encode(), body, hashlib.sha256).hexdigest()
    return body, {"Content-Type": "application/json", "X-Hub-Signature-256": f"sha256={digest}"}


# -- (a) one turn against one bare round trip -------------------------------------------------


async def single_turn(served: Served, rounds: int, turns: int) -> list[tuple[float, float]]:
    """Per round: the median seconds of a turn and of a bare round trip, timed in turn."""
    body, headers = _signed_status(int(time.time()))
    webhook = f"{served.bot_url}/webhook"

    async def bare() -> None:
        async with served.driver.post(webhook, data=body, headers=headers) as answer:
            if answer.status != 200:
                raise Failure(f"the bot answered a signed webhook with {answer.status}")

    await served.turn("15550100000", "warm up")
    for _ in range(5):
        await bare()
    figures = []
    for round_ in range(rounds):
        user = f"155501{round_ + 1:05d}"  # a user of its own per round: pair rates stay clear
        turn_times, bare_times = [], []
        for i in range(turns):
            started = time.perf_counter()
            await served.turn(user, f"hello {i}")
            turn_times.append(time.perf_counter() - started)
            for _ in range(4):
                started = time.perf_counter()
                await bare()
                bare_times.append(time.perf_counter() - started)
        figures.append((statistics.median(turn_times), statistics.median(bare_times)))
        served.forget_what_the_bot_saw()
    return figures


# -- (b) 20 users at once ---------------------------------------------------------------------


@dataclass(frozen=True)
class Rush:
    """What one run of users writing at once gave: its rate, the refusals, the CPU it took."""

    turns_per_second: float
    throttled: int
    paired: int
    #: CPU milliseconds per turn while the users wrote, of serve and of this process
    #: (the echo bot and the driver); then the same with the statuses due after the run.
    serve_ms: float
    here_ms: float
    serve_all_ms: float
    here_all_ms: float
    #: The median and the 95th percentile of one call's time, in ms.
    call_ms: float
    call_p95_ms: float


async def concurrent_users(served: Served, repetition: int, users: int, seconds: float) -> Rush:
    """Turns per second with ``users`` writing at once for ``seconds``, the refusals met, the CPU.

    The refusals are the bot's sends refused with 130429 (throughput), then with 131056 (pair
    rate). CPU time is read from the kernel for each process, which other work on the machine
    does not inflate as it does wall time.
    """
    served.forget_what_the_bot_saw()
    names = [f"1555{repetition + 2:02d}{n:05d}" for n in range(users)]  # new users each time
    done = 0
    took: list[float] = []

    async def user(name: str, until: float) -> None:
        nonlocal done
        i = 0
        while (began := time.perf_counter()) < until:
            await served.turn(name, f"message {i}")
            took.append(time.perf_counter() - began)
            done += 1
            i += 1

    serve_cpu, here_cpu = served.cpu_seconds(), time.process_time()
    started = time.perf_counter()
    await asyncio.gather(*(user(name, started + seconds) for name in names))
    elapsed = time.perf_counter() - started
    serve_run, here_run = served.cpu_seconds() - serve_cpu, time.process_time() - here_cpu
    await _quiet(served)  # every status of these turns has come
    await served.bot.idle()
    serve_all, here_all = served.cpu_seconds() - serve_cpu, time.process_time() - here_cpu
    refused = [body.get("error", {}).get("code") for status, body in served.bot.send_results]
    served.forget_what_the_bot_saw()
    per_turn = 1000 / max(done, 1)
    return Rush(
        turns_per_second=done / elapsed,
        throttled=refused.count(THROTTLED),
        paired=refused.count(PAIR_RATE),
        serve_ms=serve_run * per_turn,
        here_ms=here_run * per_turn,
        serve_all_ms=serve_all * per_turn,
        here_all_ms=here_all * per_turn,
        call_ms=statistics.median(took) * 1000,
        call_p95_ms=statistics.quantiles(took, n=20)[-1] * 1000,
    )


# -- (c) memory over 5,000 turns ------------------------------------------------------------


async def memory_per_turn(served: Served, turns: int, at_once: int) -> tuple[float, int, int]:
    """KB of resident memory the serve process gains per turn, with the events it holds."""
    per_user = 25  # well under the pair rate's burst of 45: no user is held back
    users = [f"1556{n:07d}" for n in range(max(turns // per_user, at_once))]
    for name in users[:at_once]:  # the same code paths, once, before the first reading
        await served.turn(name, "warm up")
    await _quiet(served)
    before = served.rss_kb()
    queue = asyncio.Queue[str]()
    for i in range(turns):
        queue.put_nowait(users[i % len(users)])

    async def writer() -> None:
        while not queue.empty():
            name = queue.get_nowait()
            await served.turn(name, "hello")
            if queue.qsize() % 500 == 0:
                served.forget_what_the_bot_saw()

    await asyncio.gather(*(writer() for _ in range(at_once)))
    await _quiet(served)
    served.forget_what_the_bot_saw()
    after = served.rss_kb()
    page = await served.events(0)
    kept = int(str(page["next"])) - int(str(page["first"]))
    return (after - before) / turns, kept, int(str(page["next"]))


async def _quiet(served: Served) -> None:
    """Wait until the statuses of the last sends have come (5 s after them, at most)."""
    last, since = -1, time.monotonic()
    while time.monotonic() - since < 1.5:
        await asyncio.sleep(0.25)
        now = int(str((await served.events(1 << 62))["next"]))
        if now != last:
            last, since = now, time.monotonic()


# -- (d) one turn with the state in Redis against one in memory ------------------------------


async def redis_turn(
    memory: Served, shared: Served, rounds: int, turns: int
) -> list[tuple[float, float]]:
    """Per round: the median seconds of a turn on each server, their turns taken in turn."""
    await memory.turn("15557000000", "warm up")
    await shared.turn("15557000000", "warm up")
    figures = []
    for round_ in range(rounds):
        user = f"155570{round_ + 1:05d}"  # a user of its own per round: pair rates stay clear
        times: dict[str, list[float]] = {"memory": [], "redis": []}
        for i in range(turns):
            for name, served in (("memory", memory), ("redis", shared)):
                started = time.perf_counter()
                await served.turn(user, f"hello {i}")
                times[name].append(time.perf_counter() - started)
        figures.append((statistics.median(times["memory"]), statistics.median(times["redis"])))
        memory.forget_what_the_bot_saw()
        shared.forget_what_the_bot_saw()
    return figures


async def _redis_answers(url: str) -> bool:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url, socket_connect_timeout=1)
    try:
        await client.ping()
    except Exception:  # any failure to reach it means there is none to measure with
        return False
    finally:
        await client.aclose()
    return True


async def _drop_keys(url: str, namespace: str) -> None:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url)
    try:
        keys = [key async for key in client.scan_iter(match=f"{namespace}:*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


async def redis_figure(args: argparse.Namespace) -> None:
    """Measure and print (d)."""
    if not await _redis_answers(args.redis):
        print(f"(d) skipped: no Redis answers at {args.redis}")
        return
    namespace = f"bench-{os.getpid()}"
    sharing = ("--redis", args.redis, "--redis-namespace", namespace)
    try:
        async with serving(loop=args.loop) as memory, serving(*sharing, loop=args.loop) as shared:
            pairs = await redis_turn(memory, shared, rounds=3 if args.quick else 7, turns=5)
    finally:
        await _drop_keys(args.redis, namespace)
    ratios = [redis / mem for mem, redis in pairs]
    print("(d) one turn with the state in Redis (--redis) against one in memory, interleaved")
    print(f"    memory {_spread([m * 1e3 for m, _ in pairs], ' ms')}")
    print(f"    redis  {_spread([r * 1e3 for _, r in pairs], ' ms')}")
    print(f"    ratio  {_spread(ratios, 'x', 2)}")


# -- the table ----------------------------------------------------------------------------------


def _spread(values: Sequence[float], unit: str = "", digits: int = 1) -> str:
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{mid:.{digits}f}{unit} (min {low:.{digits}f}, max {high:.{digits}f})"


def _verdict(met: bool) -> str:
    return "target met" if met else "target MISSED"


async def turn_figure(served: Served, args: argparse.Namespace) -> None:
    """Measure and print (a)."""
    pairs = await single_turn(served, rounds=3 if args.quick else 5, turns=5)
    ratios = [turn / bare for turn, bare in pairs]
    print("(a) one turn through POST /_harness/inbound against one bare loopback round trip")
    print(f"    turn {_spread([t * 1e3 for t, _ in pairs], ' ms')}")
    print(f"    bare {_spread([b * 1e3 for _, b in pairs], ' ms', 2)}")
    print(f"    ratio {_spread(ratios, 'x')}: {_verdict(statistics.median(ratios) <= 15)}")


async def rush_figure(served: Served, args: argparse.Namespace) -> None:
    """Measure and print (b), with the CPU each process spent per turn."""
    rushes = [
        await concurrent_users(served, repetition, 20, args.seconds)
        for repetition in range(1 if args.quick else args.rounds)
    ]
    throttled = [r.throttled for r in rushes]
    print(f"(b) 20 users at once for {args.seconds:g} s, {len(rushes)} repetitions")
    rates = [r.turns_per_second for r in rushes]
    met = statistics.median(rates) >= 150 and max(throttled) == 0
    print(f"    {_spread(rates, ' turns/s')}; 130429 refusals {throttled}: {_verdict(met)}")
    print(f"    (131056 refusals, a user over Meta's pair rate: {[r.paired for r in rushes]})")
    calls, p95 = [r.call_ms for r in rushes], [r.call_p95_ms for r in rushes]
    print(f"    one call: median {_spread(calls, ' ms')}; 95th percentile {_spread(p95, ' ms')}")
    print("    CPU per turn while the users wrote, then with the statuses due after:")
    serve_ms, serve_all = [r.serve_ms for r in rushes], [r.serve_all_ms for r in rushes]
    here_ms, here_all = [r.here_ms for r in rushes], [r.here_all_ms for r in rushes]
    print(f"      harness serve    {_spread(serve_ms, ' ms', 2)}; {_spread(serve_all, ' ms', 2)}")
    print(f"      echo bot, driver {_spread(here_ms, ' ms', 2)}; {_spread(here_all, ' ms', 2)}")


async def memory_figure(args: argparse.Namespace) -> None:
    """Measure and print (c)."""
    repeats = 1 if args.quick else args.repeat
    grown: dict[str, list[float]] = {"default retention": [], "--keep-all": []}
    held: dict[str, tuple[int, int]] = {}

    async def memory(name: str, *options: str) -> None:
        async with serving(*options, loop=args.loop) as served:
            per_turn, kept, total = await memory_per_turn(served, args.turns, AT_ONCE)
        grown[name].append(per_turn)
        held[name] = (kept, total)

    # One serve at a time, the two settings taking turns: serves measured at once slow each
    # other's turns until calls time out, and the figure needs no company.
    for _ in range(repeats):
        await memory("default retention")
        await memory("--keep-all", "--keep-all")
    print(f"(c) resident memory of harness serve over {args.turns} turns, {AT_ONCE} at a time")
    for name, values in grown.items():
        kept, total = held[name]
        line = f"    {name:18} {_spread(values, ' KB/turn')}, {kept} of {total} events kept"
        if name == "default retention":
            line += f": {_verdict(statistics.median(values) <= 10)}"
        print(line)


async def main(args: argparse.Namespace) -> None:
    """Measure and print the figures (or the one asked for)."""
    figures = args.only or "abcd"
    if "a" in figures or "b" in figures:
        async with serving(loop=args.loop) as served:
            if "a" in figures:
                await turn_figure(served, args)
            if "b" in figures:
                await rush_figure(served, args)
    if "c" in figures:
        await memory_figure(args)
    if "d" in figures:
        await redis_figure(args)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="repetitions of (c)")
    parser.add_argument("--turns", type=int, default=5000, help="turns for (c)")
    parser.add_argument("--seconds", type=float, default=3.0, help="length of (b)")
    parser.add_argument("--rounds", type=int, default=3, help="repetitions of (b)")
    parser.add_argument("--quick", action="store_true", help="one repetition of each")
    parser.add_argument("--only", choices=list("abcd"), help="measure this figure alone")
    parser.add_argument(
        "--loop",
        choices=LOOPS,
        default="auto",
        help="the event loop of harness serve and of this process (the bot, the driver)",
    )
    parser.add_argument(
        "--redis",
        default=os.environ.get("HARNESS_TEST_REDIS_URL", "redis://127.0.0.1:6379/15"),
        help="the Redis for (d)",
    )
    arguments = parser.parse_args()
    try:
        run_on(loop_factory(arguments.loop), main(arguments))
    except Failure as exc:
        sys.exit(f"error: {exc}")
