"""The bundled suite against an agent at a URL: locally, and on 1 and on 2 ``harness worker``s.

The reference agent runs as a process of its own on loopback, joined to the
runs through the store (``HARNESS_STORE_URL``), its Graph API a ``harness
serve --routes`` that passes each send on to the Graph API playing its user:
the local run's (``--graph-advertise``) or a worker's. Three ways are timed
in each round, interleaved: a local URL run at concurrency 4 (the baseline),
and ``harness run --distributed`` with 1 and with 2 workers at concurrency 4
each. Figures are wall seconds of the whole ``harness run`` (start-up
included) and ratios to the baseline of the same round: median (min–max).

Against an agent at a URL a scenario mostly waits (on the agent, and on its
quiet window), so the figures say how well waiting spreads, not computing.

Run: ``python benchmarks/distributed_url.py`` (``--rounds 3``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from channels.whatsapp.config import SimulatorConfig  # noqa: E402
from tests.bots.loopback import free_port, started_process  # noqa: E402
from tests.support.redis_server import RedisServer, redis_binary  # noqa: E402

CONCURRENCY = "4"


@asynccontextmanager
async def processes(*commands: list[str]) -> AsyncIterator[None]:
    """Long-running harness processes, each ready (its first line said) before the block."""
    started = [
        await asyncio.create_subprocess_exec(
            *command,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        for command in commands
    ]
    for process in started:
        assert process.stdout is not None
        await asyncio.wait_for(process.stdout.readline(), 30)
    drains = [asyncio.create_task(_drain(p)) for p in started]
    try:
        yield
    finally:
        for process in started:
            process.terminate()
        for process in started:
            await process.wait()
        for drain in drains:
            drain.cancel()


@asynccontextmanager
async def redis_server() -> AsyncIterator[str]:
    """A private redis-server on a free loopback port; yields its URL (database 0)."""
    binary = redis_binary()
    assert binary is not None, "this benchmark needs redis-server"
    with tempfile.TemporaryDirectory() as folder:
        server = RedisServer(binary, free_port(), Path(folder))
        await server.start()
        try:
            yield server.url
        finally:
            await server.kill()


async def _drain(process: asyncio.subprocess.Process) -> None:
    assert process.stdout is not None
    while await process.stdout.read(65536):
        pass


def _spread(values: list[float], digits: int = 2) -> str:
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{mid:.{digits}f} ({low:.{digits}f}–{high:.{digits}f})"


def _harness(*args: str) -> list[str]:
    return [sys.executable, "-m", "harness", *args]


async def _run(args: list[str], report: Path) -> tuple[float, int]:
    """Seconds for one ``harness run``, and how many of its scenarios passed."""
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *_harness("run", *args, "-q", "--report-dir", str(report)),
        cwd=ROOT,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    await asyncio.wait_for(process.wait(), 600)
    elapsed = time.perf_counter() - started
    scenarios = json.loads((report / "report.json").read_text())["scenarios"]
    return elapsed, sum(1 for s in scenarios if s["status"] == "passed")


async def measure(rounds: int) -> None:
    """Time every way in each round, interleaved, and print the table."""
    names = ["local, concurrency 4", "1 worker", "2 workers"]
    seconds: dict[str, list[float]] = {name: [] for name in names}
    ratios: dict[str, list[float]] = {name: [] for name in names}
    defaults = SimulatorConfig()
    async with redis_server() as url:
        broker, store = url, url.removesuffix("/0") + "/2"
        serve_port = free_port()
        agent_env = {
            "WHATSAPP_GRAPH_URL": f"http://127.0.0.1:{serve_port}",
            "WHATSAPP_ACCESS_TOKEN": defaults.access_token,
            "WHATSAPP_PHONE_NUMBER_ID": defaults.phone_number_id,
            "WHATSAPP_APP_SECRET": defaults.app_secret,
            "WHATSAPP_VERIFY_TOKEN": defaults.verify_token,
            "HARNESS_STORE_URL": store,
        }
        serve = _harness("serve", "--port", str(serve_port), "--routes", store)
        async with (
            processes(serve),
            started_process(
                "tests.support.replica", "agents.booking:app", env=agent_env, ready_path="/healthz"
            ) as (agent, _),
        ):
            target = ["--target-url", f"{agent}/webhook", "--redis", store]
            worker = _harness("worker", "--broker", broker, "--concurrency", CONCURRENCY)
            with tempfile.TemporaryDirectory() as folder:
                for n in range(rounds):
                    graph = free_port()
                    timed = [
                        await _run(
                            [
                                *target,
                                *("--concurrency", CONCURRENCY, "--graph-port", str(graph)),
                                *("--graph-advertise", f"http://127.0.0.1:{graph}"),
                            ],
                            Path(folder) / f"{n}-local",
                        )
                    ]
                    for count in (1, 2):
                        async with processes(*([worker] * count)):
                            timed.append(
                                await _run(
                                    [*target, "--distributed", broker],
                                    Path(folder) / f"{n}-{count}",
                                )
                            )
                    for name, (elapsed, passed) in zip(names, timed, strict=True):
                        assert passed == 15, f"{name}: {passed} of 15 passed"
                        seconds[name].append(elapsed)
                        ratios[name].append(elapsed / timed[0][0])
                    figures = zip(names, timed, strict=True)
                    print("round:", ", ".join(f"{n} {t:.1f}s" for n, (t, _) in figures), flush=True)
    print(
        f"the bundled suite (15 scenarios) at a URL, {rounds} interleaved rounds, "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}: median (min–max)"
    )
    print(f"{'':22} {'seconds':>22} {'time / local':>22}")
    for name in names:
        print(f"{name:22} {_spread(seconds[name]):>22} {_spread(ratios[name]):>22}")


def main() -> None:
    """Parse the options and measure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(measure(args.rounds))


if __name__ == "__main__":
    main()
