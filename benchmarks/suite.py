"""Suite throughput: the bundled scenarios, repeated, on one core and on every core.

Each scenario runs in-process against the bundled booking agent through the
WhatsApp simulator. Each round runs the same suite twice, serially (one
scenario at a time, in this process) and at a concurrency of the machine's
core count (the runner then uses as many worker processes); which goes first
alternates from round to round, so a busy moment on a shared machine falls on
both. The figures are scenarios per second for each and their ratio, the
median over the rounds and the spread (min–max), and the peak memory
(maximum resident set size of this process or any worker) after all rounds.

The ratio is what scales with cores: about 2 on an idle two-core machine.
Other processes on the machine take cores from the parallel run first, so
note the load (``uptime``) beside the figure.

The garbage collector runs at the thresholds the ``harness`` command sets
(``--python-gc`` keeps Python's own); worker processes take them from this one.
Worker processes are forked, as a run with no other thread alive forks them;
``--spawn`` starts them as a run with another thread alive does.

Run: ``python benchmarks/suite.py`` (``--runs 1400 --rounds 3`` by default;
``--quick`` for 200 runs, 2 rounds).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import multiprocessing
import os
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.cli.main import GC_THRESHOLDS  # noqa: E402  # after the path tweak
from harness.suites import _spread as spreading  # noqa: E402
from harness.suites.runner import Runner, RunOptions  # noqa: E402
from harness.suites.scenario import load_scenarios  # noqa: E402


def peak_rss_mb() -> float:
    """The largest resident set size so far of this process or a worker, in MiB (Linux: KiB)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, workers) / 1024


async def measure(runs: int, concurrency: int) -> tuple[float, int, int]:
    """Seconds for ``runs`` scenario runs, with the passed and total counts."""
    suite = load_scenarios([ROOT / "scenarios" / "booking"])
    scenarios = [suite[i % len(suite)] for i in range(runs)]
    runner = Runner(RunOptions(concurrency=concurrency))
    started = time.perf_counter()
    result = await runner.run(scenarios)
    elapsed = time.perf_counter() - started
    return elapsed, result.passed, len(result.scenarios)


def _spread(values: list[float], digits: int = 2) -> str:
    return (
        f"{statistics.median(values):.{digits}f}"
        f" ({min(values):.{digits}f}–{max(values):.{digits}f})"
    )


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="200 runs, 2 rounds")
    parser.add_argument(
        "--python-gc", action="store_true", help="Python's collector thresholds, not the command's"
    )
    parser.add_argument(
        "--spawn", action="store_true", help="spawn the worker processes instead of forking them"
    )
    args = parser.parse_args()
    if args.spawn:
        spreading.start_method = lambda: "spawn"
    if not args.python_gc:
        gc.set_threshold(*GC_THRESHOLDS)
    runs = 200 if args.quick else args.runs
    rounds = 2 if args.quick else args.rounds
    cores = os.cpu_count() or 1

    rates: dict[int, list[float]] = {1: [], cores: []}
    passed: dict[int, tuple[int, int]] = {}
    for index in range(rounds):
        order = (1, cores) if index % 2 == 0 else (cores, 1)
        for concurrency in order:
            elapsed, ok, total = asyncio.run(measure(runs, concurrency))
            # A run returns without waiting for its worker processes to exit: let them go
            # before the next round starts, so that they take nothing from it.
            while multiprocessing.active_children():
                time.sleep(0.01)
            rates[concurrency].append(total / elapsed)
            passed[concurrency] = (ok, total)
    ratios = [many / one for one, many in zip(rates[1], rates[cores], strict=True)]

    started = "spawned" if args.spawn else spreading.start_method()
    print(f"{runs} scenario runs of the bundled suite, in-process, {rounds} rounds interleaved")
    print(f"worker processes {started}")
    print(f"load average before the last round: {os.getloadavg()[0]:.1f} on {cores} cores")
    print("{:>12} {:>24} {:>12}".format("concurrency", "scenarios/s", "passed"))
    for concurrency in (1, cores):
        ok, total = passed[concurrency]
        print(f"{concurrency:>12} {_spread(rates[concurrency], 1):>24} {ok:>5}/{total:<6}")
    print(f"throughput on {cores} cores / on 1: {_spread(ratios)}")
    print(f"peak RSS: {peak_rss_mb():.0f} MiB")


if __name__ == "__main__":
    main()
