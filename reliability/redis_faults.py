"""Redis restarted and paused under ``harness run --redis``: the run ends right, or says why.

Each trial starts a redis-server of its own on a free port and runs the
bundled suite against it (``harness run scenarios/booking --redis URL -v``,
a process of its own). Once a number of scenarios drawn from a seeded
generator have finished, it either restarts the server (SIGKILL, then an
empty server on the same port: every key is gone) or pauses it (SIGSTOP for
a drawn number of seconds, then SIGCONT). What must hold:

- the run ends within a bound (it never hangs);
- it prints no Python traceback;
- it either passes every scenario and exits 0 (the bundled suite passes on a
  healthy store, so any other verdict would be the store's, not the
  agent's), or exits 2 with one line naming the Redis server, and prints no
  FAIL verdict.

A pause shorter than the store's 5-second reply timeout only slows the run;
a longer one times out a command that changes data, which the store does
not send twice, so that run stops with exit 2.

Run: ``python reliability/redis_faults.py`` (``--trials 10`` restarts, ``--seed 7``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.bots.loopback import free_port  # noqa: E402  # after the path tweak
from tests.support.redis_server import RedisServer, redis_binary  # noqa: E402

SUITE = ROOT / "scenarios" / "booking"
#: Real seconds a run may take beyond the fault before it counts as hung.
BOUND = 60.0
Fault = Literal["restart", "pause"]
NOT_INSTALLED = "redis-server is not installed (apt-get install redis-server)"
#: How long each paused trial keeps Redis stopped (seconds): shorter and longer than the
#: store's 5-second reply timeout.
PAUSES = (1.5, 3.0, 6.0)


@dataclass
class RedisTrial:
    """What one run did when its Redis was restarted or paused."""

    fault: Fault
    after: int
    pause: float
    code: int | None
    seconds: float
    stdout: str
    stderr: str
    url: str

    @property
    def hung(self) -> bool:
        """The run did not end within the bound, and was killed."""
        return self.code is None

    @property
    def traceback(self) -> bool:
        """A Python traceback reached the output."""
        return "Traceback (most recent call last)" in self.stdout + self.stderr

    @property
    def errors(self) -> list[str]:
        """The lines the run printed as errors of its own."""
        return [line for line in self.stderr.splitlines() if line.startswith("error: ")]

    @property
    def problem(self) -> str:
        """What went wrong, or an empty string when the run ended right."""
        if self.hung:
            return f"still running after {BOUND:.0f} s"
        if self.traceback:
            return "printed a traceback"
        if any(line.startswith("FAIL") for line in self.stdout.splitlines()):
            return "a wrong verdict: a scenario failed"
        if self.code == 0:
            passed = "15 scenarios: 15 passed"
            return "" if passed in self.stdout else "exit 0 without every scenario passing"
        if self.code != 2:
            return f"exit {self.code}, not 0 or 2"
        named = [line for line in self.errors if f"Redis at {self.url}" in line]
        if len(self.errors) != 1 or len(named) != 1:
            return f"exit 2 with {len(self.errors)} error lines, {len(named)} naming Redis"
        return ""

    @property
    def ok(self) -> bool:
        """The run ended right: every scenario passed, or one line said the store failed."""
        return not self.problem


async def redis_trial(
    fault: Fault, *, after: int, pause: float = 0.0, workdir: Path, binary: str
) -> RedisTrial:
    """Run the bundled suite on a Redis of its own; restart or pause it after ``after`` results."""
    server = RedisServer(binary, free_port(), workdir)
    await server.start()
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "harness", "run", str(SUITE), "--redis", server.url, "-v"),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None  # piped just above
    assert process.stderr is not None
    errors = asyncio.create_task(process.stderr.read())
    lines: list[str] = []
    code: int | None = None
    try:
        async with asyncio.timeout(BOUND + pause):
            seen = 0
            while raw := await process.stdout.readline():
                line = raw.decode(errors="replace")
                lines.append(line)
                if line.startswith(("PASS", "FAIL", "ERROR")):
                    seen += 1
                    if seen == after:
                        await _strike(server, fault, pause)
            code = await process.wait()
    except TimeoutError:
        process.kill()
        await process.wait()
    finally:
        if process.returncode is None:  # the trial failed or was cancelled: the run goes too
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
        if server.process is not None and server.process.returncode is None:
            server.resume()  # a trial that timed out mid-pause
        await server.kill()
    return RedisTrial(
        fault,
        after,
        pause,
        code,
        time.monotonic() - started,
        "".join(lines),
        (await errors).decode(errors="replace"),
        server.url,
    )


async def _strike(server: RedisServer, fault: Fault, pause: float) -> None:
    if fault == "restart":
        await server.restart()
    else:
        server.pause()
        await asyncio.sleep(pause)
        server.resume()


async def run(trials: int, seed: int) -> list[RedisTrial]:
    """``trials`` restarts, then a pause of each length; one line per trial as it ends."""
    binary = redis_binary()
    if binary is None:
        print(f"redis: not run: {NOT_INSTALLED}", flush=True)
        return []
    rng = random.Random(seed)
    plan: list[tuple[Fault, int, float]] = []
    for _ in range(trials):
        plan.append(("restart", rng.randint(1, 12), 0.0))
    for pause in PAUSES:
        plan.append(("pause", rng.randint(1, 12), pause))
    results: list[RedisTrial] = []
    with tempfile.TemporaryDirectory(prefix="harness-redis-") as tmp:
        for n, (fault, after, pause) in enumerate(plan):
            workdir = Path(tmp) / str(n)
            workdir.mkdir()
            trial = await redis_trial(
                fault, after=after, pause=pause, workdir=workdir, binary=binary
            )
            results.append(trial)
            _print(trial)
    return results


def _print(trial: RedisTrial) -> None:
    what = "restarted" if trial.fault == "restart" else f"paused {trial.pause:g} s"
    ended = "hung" if trial.code is None else f"exit {trial.code}"
    verdict = "ok" if trial.ok else f"FAILED: {trial.problem}"
    print(
        f"redis {what:<10} after {trial.after:2d} results: {ended}, "
        f"{trial.seconds:5.1f} s ({verdict})",
        flush=True,
    )


def summary(results: list[RedisTrial]) -> list[str]:
    """One markdown table row per fault."""
    rows = []
    labels = {
        "restart": "Redis restarted mid-`harness run --redis` (SIGKILL, an empty server on the "
        "same port)",
        "pause": "Redis paused mid-`harness run --redis` (SIGSTOP for "
        + ", ".join(f"{p:g}" for p in PAUSES[:-1])
        + f" and {PAUSES[-1]:g} s, then SIGCONT)",
    }
    for fault in ("restart", "pause"):
        mine = [t for t in results if t.fault == fault]
        if not mine:
            rows.append(f"| {labels[fault]} | 0 | not run: {NOT_INSTALLED} |")
            continue
        hung = sum(t.hung for t in mine)
        traced = sum(t.traceback for t in mine)
        wrong = sum(1 for t in mine if t.problem and not t.hung and not t.traceback)
        rows.append(
            f"| {labels[fault]} | {len(mine)} | {hung} hung, {traced} printed a traceback, "
            f"{wrong} ended otherwise than all passed (exit 0) or one line naming Redis (exit 2) |"
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    """Run the trials and print the summary; exit 1 if any run ended wrong."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    results = asyncio.run(run(args.trials, args.seed))
    print()
    print("\n".join(summary(results)))
    sys.exit(0 if results and all(t.ok for t in results) else 1)


if __name__ == "__main__":
    main()
