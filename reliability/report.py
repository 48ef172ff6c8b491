"""RELIABILITY.md, regenerated: every probe run, its table printed.

Runs the SIGKILL trials (:mod:`reliability.kills`), the Redis restarts and
pauses (:mod:`reliability.redis_faults`), the secrets grep
(:mod:`reliability.secrets_grep`) and, alongside them in a process of its
own, the probes of the test suite, counted (:mod:`reliability.suite_probes`:
Hypothesis, schemathesis, script injection in Chromium). It prints
RELIABILITY.md: what was tried, how many times, and what was lost or broke.
``--write`` replaces the file; ``--check`` exits 1 if the file differs from
what the probes give now (CI runs that), or if any probe lost anything.

Run: ``python reliability/report.py [--write | --check]``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reliability import (  # noqa: E402  # after the path tweak
    kills,
    redis_faults,
    secrets_grep,
    suite_probes,
)

FILE = ROOT / "RELIABILITY.md"

HEADER = """\
# Reliability

What the harness was put through, how many times, and what was lost. A testing tool that
loses a recording, leaks a secret or gives a verdict its infrastructure made up is worse than
none, so every row must say nothing was lost or broke. This file is printed by
`python reliability/report.py --write` from the probes in `reliability/` and from the probes of
the test suite (counted with Hypothesis derandomized, so the counts repeat), and CI checks it
(`--check`) against a fresh run of them.

| Fault, bad input or attack | Tries | What was lost or broke |
| --- | --- | --- |
"""

FOOTER = """
Further probes run with the tests (`pytest`): Meta's own OpenAPI examples and schemas
(`tests/channels/whatsapp/conformance/`), a SIGKILL of the proxy mid-conversation
(`tests/integration/test_proxy_chain.py`), Redis with injected latency
(`tests/integration/test_real_io.py`), Redis restarted and paused mid-run
(`tests/integration/test_redis_faults.py`), and the replays of recordings cut by a SIGKILL and
of a proxy's recordings, and a run whose Redis is down, each reported in one line, never a
traceback (`tests/integration/test_no_tracebacks.py`).
"""


def render(rows: list[str]) -> str:
    """The whole file for these table rows."""
    return HEADER + "\n".join(rows) + "\n" + FOOTER


async def _trials(
    kill_trials: int, redis_trials: int
) -> tuple[list[kills.Trial], list[redis_faults.RedisTrial], list[secrets_grep.Search]]:
    """The SIGKILL trials, the Redis trials and the secrets grep, at the same time."""
    return await asyncio.gather(
        kills.run(kill_trials, seed=7),
        redis_faults.run(redis_trials, seed=7),
        asyncio.to_thread(secrets_grep.run),
    )


def main(argv: list[str] | None = None) -> None:
    """Run the probes; print, write or check the file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="replace RELIABILITY.md")
    mode.add_argument("--check", action="store_true", help="exit 1 if RELIABILITY.md differs")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--redis-trials", type=int, default=10)
    args = parser.parse_args(argv)
    logging.disable(logging.CRITICAL)  # the agent's complaints about the killed proxy

    with tempfile.TemporaryDirectory(prefix="harness-report-") as tmp:
        out, log = Path(tmp) / "counts.jsonl", Path(tmp) / "pytest.log"
        # The counted tests need a core; the trials mostly wait on processes: all side by side.
        counted = suite_probes.launch(out, log)
        try:
            trials, faults, searches = asyncio.run(_trials(args.trials, args.redis_trials))
            suite = suite_probes.collect(counted, out, log)
            log_tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
        finally:
            if counted.poll() is None:
                counted.kill()
                counted.wait()
    rows = [
        *kills.summary(trials),
        *redis_faults.summary(faults),
        *secrets_grep.summary(searches),
        *suite_probes.summary(suite),
    ]
    text = render(rows)
    for line in suite_probes.problems(suite, log_tail):
        print(line)
    lost = (
        not all(t.ok for t in trials)
        or not faults
        or not all(f.ok for f in faults)
        or any(s.found for s in searches)
        or not suite
        or not all(t.ok for t in suite)
    )
    if args.write:
        FILE.write_text(text, encoding="utf-8")
        print(f"wrote {FILE}")
    elif args.check:
        if FILE.read_text(encoding="utf-8") != text:
            print(f"{FILE.name} differs from what the probes give now:\n\n{text}")
            sys.exit(1)
        print(f"{FILE.name} matches the probes")
    else:
        print(text)
    sys.exit(1 if lost else 0)


if __name__ == "__main__":
    main()
