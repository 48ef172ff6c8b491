"""Suite throughput: the bundled scenarios, repeated, at concurrency 1 and 50.

Each scenario runs in-process against the bundled booking agent through the
WhatsApp simulator. The figure is scenarios per second at each concurrency
(above 1, scenarios run in worker processes, as many as there are cores),
their ratio, and the peak memory (maximum resident set size of this process
or any worker) after each run.

Run: ``python benchmarks/suite.py`` (``--runs 1000`` by default; ``--quick`` for 100).
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.suites.runner import Runner, RunOptions  # noqa: E402  # after the path tweak
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


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="100 runs")
    args = parser.parse_args()
    runs = 100 if args.quick else args.runs

    rows = []
    for concurrency in (1, 50):
        elapsed, passed, total = asyncio.run(measure(runs, concurrency))
        rows.append((concurrency, elapsed, passed, total, peak_rss_mb()))

    print(f"{runs} scenario runs of the bundled suite, in-process")
    header = ("concurrency", "seconds", "scenarios/s", "passed", "peak RSS MiB")
    print("{:>11} {:>9} {:>12} {:>9} {:>13}".format(*header))
    for concurrency, elapsed, passed, total, rss in rows:
        print(
            f"{concurrency:>11} {elapsed:>9.2f} {total / elapsed:>12.1f}"
            f" {passed:>4}/{total:<4} {rss:>13.0f}"
        )
    ratio = (rows[1][3] / rows[1][1]) / (rows[0][3] / rows[0][1])
    print(f"throughput at 50 / at 1: {ratio:.2f}x")


if __name__ == "__main__":
    main()
