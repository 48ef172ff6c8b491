"""``harness load`` against a minimal echo agent: how fast one process goes, and its memory.

The agent (``benchmarks/echo_agent.py``, uvicorn on loopback, a process of
its own) answers each text message with one Graph API send. Figures, each
the median over interleaved rounds with its min-max:

(a) the bare loopback ceiling: requests/s of a bare aiohttp client (50
    connections) POSTing a signed status webhook to the agent, which it
    reads and answers 200 without sending anything;
(b) the same with httpx's pool (50 connections), the client a load run
    could have used instead;
(c) the receiving side: sends/s a bare aiohttp client gets through the load
    run's own fake Graph API (``benchmarks/load_graph.py``: Meta's
    validation and the load run's send handler);
(d) messages/s one ``harness load`` process sustains with 1,000 users
    (no think time, ``--no-rate-limits``: Meta's throughput and pair
    rate would cap users who never pause, and the figure is the harness's)
    and ``--no-statuses``. A message costs 2 HTTP requests (the webhook, the
    agent's send), so the target is at least 50% of ceiling / 2, the
    ceiling of each round being the mean of (a) measured just before and
    just after its load run;
(d') the same with status webhooks (the default: sent, delivered and read
    1, 2 and 5 s after each send), over a longer run so that most statuses
    fall due inside it. A message then costs 5 HTTP requests, so the target
    is 50% of ceiling / 5; the statuses the agent answered per second of the
    whole run are printed beside it;
(e) the peak resident memory of the ``harness load`` process with 1,000
    and with 10,000 users in conversation at once (the 10,000 write one
    message each, at a rate the agent keeps up with, and stay in the
    conversation while the others write), statuses on. Target: at most
    300 MB at 10,000.

Missed targets are reported, not failed; the exit code is non-zero only when
something went wrong (a run that lost replies, a process failing).

Run: ``python benchmarks/load.py`` (``--quick`` for one round).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import hmac
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.bots.loopback import free_port, started_process  # noqa: E402  # after the path tweak

APP_SECRET = "harness-app-secret"
ACCESS_TOKEN = "harness-access-token"
PHONE_NUMBER_ID = "100200300400500"
CONCURRENCY = 50
REQUESTS_PER_MESSAGE = 2
# With statuses: the webhook, the agent's send, and its sent, delivered and read statuses.
REQUESTS_WITH_STATUSES = 5
# The benchmark measures the harness, not Meta's limits (its users never pause).
NO_RATE_LIMITS = "--no-rate-limits"
RSS_TARGET_MB = 300
SCENARIO = """\
name: small talk
users: [{name: Load, wa_id: "15550000001"}]
steps:
  - say: hello
  - say: what time do you open tomorrow?
  - say: thanks, see you then
"""


class Failure(Exception):
    """Something went wrong (not a missed target): the benchmark exits non-zero."""


def _status_webhook() -> tuple[bytes, dict[str, str]]:
    status = {
        "id": "wamid.bench",
        "status": "delivered",
        "timestamp": str(int(time.time())),
        "recipient_id": "15550000001",
    }
    value = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550001111", "phone_number_id": PHONE_NUMBER_ID},
        "statuses": [status],
    }
    payload = {
        "object": "whatsapp_business_account",
        "entry": [{"id": "900800700600500", "changes": [{"value": value, "field": "messages"}]}],
    }
    body = json.dumps(payload, separators=(",", ":")).encode()
    signature = "sha256=" + hmac.new(APP_SECRET.encode(), body, hashlib.sha256).hexdigest()
    return body, {"Content-Type": "application/json", "X-Hub-Signature-256": signature}


def _graph_send() -> tuple[bytes, dict[str, str]]:
    body = {
        "messaging_product": "whatsapp",
        "to": "15550000001",
        "type": "text",
        "text": {"body": "You said: hello"},
    }
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {ACCESS_TOKEN}"}
    return json.dumps(body).encode(), headers


async def _for(seconds: float, worker: Callable[[], Awaitable[int]]) -> float:
    """Requests per second of ``CONCURRENCY`` workers, each looping for ``seconds``."""
    start = time.perf_counter()
    counts = await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return sum(counts) / (time.perf_counter() - start)


async def bare_aiohttp(url: str, body: bytes, headers: dict[str, str], seconds: float) -> float:
    """Requests/s of a bare aiohttp client POSTing ``body`` to ``url``."""
    connector = aiohttp.TCPConnector(limit=CONCURRENCY)
    async with aiohttp.ClientSession(connector=connector) as session:
        end = time.perf_counter() + seconds

        async def worker() -> int:
            done = 0
            while time.perf_counter() < end:
                async with session.post(url, data=body, headers=headers) as response:
                    await response.read()
                    if response.status != 200:
                        raise Failure(f"{url} answered {response.status}")
                done += 1
            return done

        return await _for(seconds, worker)


async def bare_httpx(url: str, body: bytes, headers: dict[str, str], seconds: float) -> float:
    """Requests/s of httpx's pool POSTing ``body`` to ``url``."""
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    async with httpx.AsyncClient(limits=limits, timeout=30) as client:
        end = time.perf_counter() + seconds

        async def worker() -> int:
            done = 0
            while time.perf_counter() < end:
                response = await client.post(url, content=body, headers=headers)
                if response.status_code != 200:
                    raise Failure(f"{url} answered {response.status_code}")
                done += 1
            return done

        return await _for(seconds, worker)


def _rss_kb(pid: int, field: str = "VmRSS") -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


async def harness_load(
    agent_url: str, graph_port: int, scenario: Path, out: Path, *options: str, strict: bool = True
) -> tuple[dict[str, Any], int]:
    """Run ``harness load`` as a process; its report's results and its peak RSS in KB.

    ``strict``: a lost or duplicated reply, or an error, is a failure of the benchmark.
    """
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "harness",
        "load",
        "--target-url",
        agent_url + "/webhook",
        "--graph-port",
        str(graph_port),
        "--scenario",
        str(scenario),
        "--json",
        str(out),
        *options,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        cwd=ROOT,
    )
    peak = 0
    reading = asyncio.ensure_future(process.stderr.read()) if process.stderr else None
    while process.returncode is None:
        peak = max(peak, _rss_kb(process.pid), _rss_kb(process.pid, "VmHWM"))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), 0.05)
    error = (await reading).decode() if reading else ""
    try:
        report = json.loads(out.read_bytes())  # noqa: ASYNC240  # a small file, once, after the run
    except FileNotFoundError:
        raise Failure(f"harness load exited {process.returncode}: {error[-800:]}") from None
    out.unlink()  # noqa: ASYNC240  # the next run writes it again
    results: dict[str, Any] = report["results"]
    failed = results["lost_replies"] or results["duplicated_replies"]
    if strict and (failed or results["errors"]):
        raise Failure(f"harness load lost, duplicated or failed: {results}")
    return results, peak


def _figure(values: Sequence[float]) -> str:
    return f"{statistics.median(values):,.0f} (min {min(values):,.0f}, max {max(values):,.0f})"


async def main(rounds: int, seconds: float) -> int:
    """Run the rounds and print the figures; see the module."""
    graph_port = free_port()
    graph_url = f"http://127.0.0.1:{graph_port}"
    status_body, status_headers = _status_webhook()
    send_body, send_headers = _graph_send()
    kinds = ("ceiling", "httpx", "graph", "load", "statuses", "status_rate")
    figures: dict[str, list[float]] = {k: [] for k in kinds}
    latencies: list[float] = []
    baselines: list[float] = []
    status_baselines: list[float] = []
    rss_1k: list[int] = []
    rss_10k: list[int] = []
    with tempfile.TemporaryDirectory() as folder:
        scenario = Path(folder) / "small_talk.yaml"
        scenario.write_text(SCENARIO)
        out = Path(folder) / "load.json"
        async with (
            started_process("benchmarks.echo_agent", "--graph", graph_url, start_within=60) as (
                agent,
                _,
            ),
            started_process(
                "benchmarks.load_graph", ready_path="/openapi.json", start_within=60
            ) as (graph, _),
        ):
            webhook = agent + "/webhook"
            sends = f"{graph}/v25.0/{PHONE_NUMBER_ID}/messages"
            for round_ in range(1, rounds + 1):
                figures["ceiling"].append(
                    await bare_aiohttp(webhook, status_body, status_headers, seconds)
                )
                figures["httpx"].append(
                    await bare_httpx(webhook, status_body, status_headers, seconds)
                )
                figures["graph"].append(await bare_aiohttp(sends, send_body, send_headers, seconds))
                results, _ = await harness_load(
                    agent,
                    graph_port,
                    scenario,
                    out,
                    "--users=1000",
                    "--rate=1000000",
                    "--think=0s",
                    f"--duration={seconds * 5:g}s",
                    "--reply-timeout=10s",
                    "--max-messages=10000000",
                    NO_RATE_LIMITS,
                    "--no-statuses",
                )
                figures["load"].append(results["messages_per_s"])
                # The ceiling again right after: the round's baseline is the mean of the two
                # around its load run, so a machine that got busier or quieter in between
                # moves both sides of the ratio.
                after = await bare_aiohttp(webhook, status_body, status_headers, seconds)
                baselines.append((figures["ceiling"][-1] + after) / 2)
                latencies.append(results["latency_s"]["p95"])
                with_statuses, peak = await harness_load(
                    agent,
                    graph_port,
                    scenario,
                    out,
                    "--users=1000",
                    "--rate=1000000",
                    "--think=0s",
                    f"--duration={seconds * 5:g}s",
                    "--reply-timeout=10s",
                    "--max-messages=10000000",
                    NO_RATE_LIMITS,
                )
                figures["statuses"].append(with_statuses["messages_per_s"])
                answered = sum(with_statuses["statuses_answered"].values())
                figures["status_rate"].append(answered / with_statuses["elapsed_s"])
                again = await bare_aiohttp(webhook, status_body, status_headers, seconds)
                status_baselines.append((after + again) / 2)
                rss_1k.append(peak)
                print(
                    f"round {round_}: ceiling {figures['ceiling'][-1]:,.0f}/s, httpx "
                    f"{figures['httpx'][-1]:,.0f}/s, graph {figures['graph'][-1]:,.0f}/s, "
                    f"load {results['messages_per_s']:,.0f} msg/s (p95 "
                    f"{results['latency_s']['p95'] * 1000:.0f} ms), with statuses "
                    f"{with_statuses['messages_per_s']:,.0f} msg/s ({answered} statuses, "
                    f"{with_statuses['statuses_unsent']} unsent), RSS {peak / 1024:.0f} MB",
                    flush=True,
                )
            for _ in range(max(1, rounds - 1)):
                results, peak = await harness_load(
                    agent,
                    graph_port,
                    scenario,
                    out,
                    "--users=10000",
                    "--rate=300",
                    "--think=120s",
                    "--duration=40s",
                    "--max-messages=10000",
                    "--reply-timeout=30s",
                    "--webhook-timeout=30s",
                    NO_RATE_LIMITS,
                    strict=False,  # memory is the figure; a slow agent losing replies is not
                )
                rss_10k.append(peak)
                print(
                    f"10,000 users: peak RSS {peak / 1024:.0f} MB ({results['messages_sent']} "
                    f"sent, {results['replies']} replies, {results['lost_replies']} lost, "
                    f"{results['errors']} errors, "
                    f"{sum(results['statuses_answered'].values())} statuses answered)",
                    flush=True,
                )
    print()
    print(f"(a) bare loopback ceiling, aiohttp x{CONCURRENCY}: {_figure(figures['ceiling'])} req/s")
    ratios = [a / h for a, h in zip(figures["ceiling"], figures["httpx"], strict=True)]
    print(
        f"(b) httpx pool x{CONCURRENCY}:             {_figure(figures['httpx'])} req/s "
        f"(aiohttp/httpx per round {statistics.median(ratios):.1f}x, "
        f"min {min(ratios):.1f}x, max {max(ratios):.1f}x)"
    )
    print(f"(c) load run's Graph API, aiohttp x{CONCURRENCY}: {_figure(figures['graph'])} sends/s")
    shares = [
        load / (ceiling / REQUESTS_PER_MESSAGE)
        for load, ceiling in zip(figures["load"], baselines, strict=True)
    ]
    share = statistics.median(shares)
    print(
        f"(d) harness load, 1,000 users: {_figure(figures['load'])} msg/s; per round, "
        f"{share:.0%} (min {min(shares):.0%}, max {max(shares):.0%}) of "
        f"ceiling/{REQUESTS_PER_MESSAGE} (target >= 50%): {'met' if share >= 0.5 else 'MISSED'}; "
        f"reply p95 median {statistics.median(latencies) * 1000:.0f} ms"
    )
    shares = [
        load / (ceiling / REQUESTS_WITH_STATUSES)
        for load, ceiling in zip(figures["statuses"], status_baselines, strict=True)
    ]
    share = statistics.median(shares)
    print(
        f"(d') with statuses: {_figure(figures['statuses'])} msg/s; per round, "
        f"{share:.0%} (min {min(shares):.0%}, max {max(shares):.0%}) of "
        f"ceiling/{REQUESTS_WITH_STATUSES} (target >= 50%): "
        f"{'met' if share >= 0.5 else 'MISSED'}; statuses answered "
        f"{_figure(figures['status_rate'])}/s over each whole run"
    )
    mb_1k = [kb / 1024 for kb in rss_1k]
    mb_10k = [kb / 1024 for kb in rss_10k]
    met = statistics.median(mb_10k) <= RSS_TARGET_MB
    print(f"(e) peak RSS, 1,000 users: {_figure(mb_1k)} MB; 10,000 users: {_figure(mb_10k)} MB")
    print(f"    (target <= {RSS_TARGET_MB} MB at 10,000): {'met' if met else 'MISSED'}")
    return 0


def _cli() -> None:
    parser = argparse.ArgumentParser(description="harness load against a minimal echo agent.")
    parser.add_argument("--quick", action="store_true", help="one round, shorter runs")
    args = parser.parse_args()
    rounds, seconds = (1, 2.0) if args.quick else (3, 3.0)
    try:
        sys.exit(asyncio.run(main(rounds, seconds)))
    except Failure as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    _cli()
