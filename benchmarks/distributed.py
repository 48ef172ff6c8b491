"""Distributed suites: 1,000 scenario runs handed to 1 and to 2 ``harness worker`` processes.

The bundled scenarios, repeated, run against the bundled booking agent
in-process. Four ways are timed in each round, interleaved: a local run at
concurrency 1 (the baseline: one process, as one worker), a local run at
concurrency 2 (two worker processes of the local runner), and
``run_distributed`` with 1 and with 2 ``harness worker`` processes on a
private redis-server on loopback. Figures are seconds and ratios to the
baseline of the same round: median (min–max) over the rounds.

The machine's cores are shared by the coordinator, the workers and Redis: on 2
cores, 2 workers leave the coordinator and Redis no core of their own.
Worker start-up (Python and imports, about a second) is not timed; each
worker's first scenario, which builds the agent, is.

Run: ``python benchmarks/distributed.py`` (``--runs 1000 --rounds 3``; ``--quick``: 100, 1).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.suites.distributed import run_distributed  # noqa: E402  # after the path tweak
from harness.suites.runner import Runner, RunOptions  # noqa: E402
from harness.suites.scenario import Scenario, load_scenarios  # noqa: E402
from tests.bots.loopback import free_port  # noqa: E402


@asynccontextmanager
async def redis_server() -> AsyncIterator[str]:
    """A private redis-server on a free loopback port; yields its URL."""
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        process = await asyncio.create_subprocess_exec(
            *(binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", folder),
            stdout=asyncio.subprocess.DEVNULL,
        )
        try:
            for _ in range(200):
                ping = await asyncio.create_subprocess_exec(
                    *("redis-cli", "-p", str(port), "ping"),
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.DEVNULL,
                )
                answer, _ = await ping.communicate()
                if answer.strip() == b"PONG":
                    break
                await asyncio.sleep(0.05)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            process.terminate()
            await process.wait()


@asynccontextmanager
async def workers(url: str, count: int) -> AsyncIterator[None]:
    """``count`` worker processes serving ``url``, each ready before the block runs."""
    started = [
        await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "harness", "worker", "--broker", url),
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        for _ in range(count)
    ]
    for process in started:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        assert line.startswith(b"worker "), line
    # Drain what they say, so that a full pipe never holds them up.
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


async def _drain(process: asyncio.subprocess.Process) -> None:
    assert process.stdout is not None
    while await process.stdout.read(65536):
        pass


async def local(scenarios: list[Scenario], concurrency: int) -> tuple[float, int]:
    """Seconds for a local run, and how many scenarios passed."""
    runner = Runner(RunOptions(concurrency=concurrency))
    started = time.perf_counter()
    result = await runner.run(scenarios)
    return time.perf_counter() - started, result.passed


async def distributed(scenarios: list[Scenario], url: str, count: int) -> tuple[float, int]:
    """Seconds for a run handed to ``count`` workers, and how many scenarios passed."""
    async with workers(url, count):
        started = time.perf_counter()
        # Bounded: a run that never ends is a failure of the benchmark, not a figure.
        result = await asyncio.wait_for(
            run_distributed(Runner(RunOptions()), scenarios, url), 60 + len(scenarios)
        )
        return time.perf_counter() - started, result.passed


def _spread(values: list[float], digits: int = 2) -> str:
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{mid:.{digits}f} ({low:.{digits}f}–{high:.{digits}f})"


async def measure(runs: int, rounds: int) -> None:
    """Time every way in each round, interleaved, and print the table."""
    suite = load_scenarios([ROOT / "scenarios" / "booking"])
    scenarios = [suite[i % len(suite)] for i in range(runs)]
    names = ["local, concurrency 1", "local, concurrency 2", "1 worker", "2 workers"]
    seconds: dict[str, list[float]] = {name: [] for name in names}
    ratios: dict[str, list[float]] = {name: [] for name in names}
    async with redis_server() as url:
        for _ in range(rounds):
            timed = [
                await local(scenarios, 1),
                await local(scenarios, 2),
                await distributed(scenarios, url, 1),
                await distributed(scenarios, url, 2),
            ]
            for name, (elapsed, passed) in zip(names, timed, strict=True):
                assert passed == runs, f"{name}: {passed} of {runs} passed"
                seconds[name].append(elapsed)
                ratios[name].append(elapsed / timed[0][0])
            # Each round as it ends, so that a long benchmark shows its progress.
            figures = zip(names, timed, strict=True)
            print("round:", ", ".join(f"{n} {t:.1f}s" for n, (t, _) in figures), flush=True)
    print(
        f"{runs} scenario runs of the bundled suite, {rounds} interleaved rounds, "
        f"{os.cpu_count()} cores: median (min–max)"
    )
    print(f"{'':22} {'seconds':>22} {'scenarios/s':>12} {'time / local c1':>22}")
    for name in names:
        rate = runs / statistics.median(seconds[name])
        print(f"{name:22} {_spread(seconds[name]):>22} {rate:>12.0f} {_spread(ratios[name]):>22}")


def main() -> None:
    """Parse the options and measure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="100 runs, 1 round")
    args = parser.parse_args()
    runs, rounds = (100, 1) if args.quick else (args.runs, args.rounds)
    asyncio.run(measure(runs, rounds))


if __name__ == "__main__":
    main()
