"""A suite at a URL: the bundled scenarios against the reference agent in its own process.

The agent runs as docs/how-to/staging.md starts it (``uvicorn
agents.booking:app`` joined to the run with ``HARNESS_STORE_URL``); the
bundled suite runs against it at ``--concurrency 1`` and ``8``, taking turns,
several repetitions. The figure is the ratio of the two wall times (median,
min-max): waiting on an agent that lives on real time overlaps across
scenarios, so the ratio, not the seconds, is what carries to another machine.

Needs a Redis on 127.0.0.1:6379 (``--redis`` for another). Run:
``python benchmarks/staging.py`` (``--repeat 3`` by default).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.suites.runner import Runner, RunOptions  # noqa: E402  # after the path tweak
from harness.suites.scenario import load_scenarios  # noqa: E402


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _agent(port: int, graph_port: int, redis_url: str) -> asyncio.subprocess.Process:
    env = {
        **os.environ,
        "WHATSAPP_GRAPH_URL": f"http://127.0.0.1:{graph_port}",
        "WHATSAPP_ACCESS_TOKEN": "harness-access-token",
        "WHATSAPP_PHONE_NUMBER_ID": "100200300400500",
        "WHATSAPP_APP_SECRET": "harness-app-secret",
        "WHATSAPP_VERIFY_TOKEN": "harness-verify-token",
        "HARNESS_STORE_URL": redis_url,
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "uvicorn",
        "agents.booking:app",
        "--port",
        str(port),
        env=env,
        cwd=ROOT,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    async with httpx.AsyncClient() as client:
        for _ in range(200):
            try:
                await client.get(f"http://127.0.0.1:{port}/healthz")
                return process
            except httpx.TransportError:
                await asyncio.sleep(0.05)
    raise RuntimeError("the agent did not start")


async def _suite(url: str, graph_port: int, redis_url: str, concurrency: int) -> tuple[float, int]:
    suite = load_scenarios([ROOT / "scenarios" / "booking"])
    options = RunOptions(
        target_url=f"{url}/webhook",
        store_url=redis_url,
        concurrency=concurrency,
        channel_options={"graph_url": f"http://127.0.0.1:{graph_port}", "serve_graph": True},
    )
    started = time.perf_counter()
    run = await Runner(options).run(suite)
    return time.perf_counter() - started, run.passed


async def main(repeat: int, redis_url: str) -> None:
    """Measure and print the table."""
    port, graph_port = _free_port(), _free_port()
    agent = await _agent(port, graph_port, redis_url)
    url = f"http://127.0.0.1:{port}"
    times: dict[int, list[float]] = {1: [], 8: []}
    try:
        for rep in range(repeat):
            for concurrency in (1, 8):
                seconds, passed = await _suite(url, graph_port, redis_url, concurrency)
                times[concurrency].append(seconds)
                label = f"repetition {rep + 1}, concurrency {concurrency}"
                print(f"{label}: {seconds:.1f} s, {passed} passed")
    finally:
        agent.terminate()
        await agent.wait()
    ratios = [one / eight for one, eight in zip(times[1], times[8], strict=True)]
    print(
        f"concurrency 1: median {statistics.median(times[1]):.1f} s; "
        f"concurrency 8: median {statistics.median(times[8]):.1f} s"
    )
    print(
        f"ratio (1 / 8): median {statistics.median(ratios):.2f}x, "
        f"min {min(ratios):.2f}x, max {max(ratios):.2f}x"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    args = parser.parse_args()
    asyncio.run(main(args.repeat, args.redis))
