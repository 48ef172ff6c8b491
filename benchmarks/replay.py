"""Replay cost: a long recorded conversation, replayed offline, against running it afresh.

The conversation has 20 user turns spread over 26 virtual hours (bookings,
questions, a cancellation, long silences) with the bundled booking agent.
It is recorded once; then the benchmark measures the wall time of one
replay, replays per second over many replays, and the ratio between a
replay (answers from the recording) and re-running the same scenario with
the offline ScriptedModel, both measured in this run.

Run: ``python benchmarks/replay.py`` (``--replays 1000``; ``--quick`` for 100).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.fixture import load_fixture  # after the path tweak
from harness.replay.playback import replay_fixture
from harness.replay.record import record_scenario
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import Scenario, parse_scenario

_TURNS = [
    ("say", "Hi! Do you have a table on Friday at 8pm?"),
    ("tap", "confirm"),
    ("wait", "2h"),
    ("say", "What is your cancellation policy?"),
    ("say", "thanks"),
    ("wait", "3h"),
    ("say", "Could I also book Saturday at 7pm?"),
    ("say", "yes please"),
    ("wait", "6h"),
    ("say", "I use a wheelchair, is that ok?"),
    ("say", "great, thanks"),
    ("wait", "4h"),
    ("say", "please cancel my booking BK-0002"),
    ("say", "and what about Sunday at 1pm?"),
    ("tap", "confirm"),
    ("wait", "5h"),
    ("say", "hello again"),
    ("say", "do you have vegan dishes?"),
    ("wait", "6h"),
    ("say", "Monday at 9pm for two?"),
    ("tap", "change"),
    ("say", "10pm then"),
    ("tap", "confirm"),
    ("say", "see you then!"),
    ("say", "one more question: parking?"),
    ("say", "ok bye"),
]


def long_scenario() -> Scenario:
    """20 user turns over 26 virtual hours, as a scenario."""
    lines = [
        "name: long conversation",
        "users:",
        '  - {name: Ana, wa_id: "5511987654321"}',
        "steps:",
    ]
    for kind, value in _TURNS:
        lines.append(f'  - {kind}: "{value}"')
    return parse_scenario("\n".join(lines) + "\n")


async def _measure(replays: int) -> dict[str, float]:
    runner = Runner(RunOptions())
    scenario = long_scenario()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "long"
        recorded = await record_scenario(runner, scenario, out)
        assert recorded.conversation is not None
        turns = len(recorded.conversation.turns)
        events = recorded.conversation.events
        span_h = (max(e.at for e in events) - min(e.at for e in events)).total_seconds() / 3600
        fixture = load_fixture(out)

        single = []
        for _ in range(5):
            started = time.perf_counter()
            result = await replay_fixture(runner, fixture)
            single.append(time.perf_counter() - started)
            assert result.status == "same", (result.divergences, result.changes)

        started = time.perf_counter()
        for _ in range(replays):
            await replay_fixture(runner, fixture)
        many = time.perf_counter() - started

        fresh = []
        for _ in range(5):
            started = time.perf_counter()
            rerun = await runner.run_scenario(scenario)
            fresh.append(time.perf_counter() - started)
            assert rerun.status in ("passed", "failed")
    return {
        "turns": turns,
        "span_h": span_h,
        "replay_s": statistics.median(single),
        "replays_per_s": replays / many,
        "rerun_s": statistics.median(fresh),
    }


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replays", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="100 replays")
    args = parser.parse_args()
    figures = asyncio.run(_measure(100 if args.quick else args.replays))
    print(f"conversation: {figures['turns']:.0f} turns over {figures['span_h']:.1f} virtual hours")
    print(
        f"one replay (median of 5):          {figures['replay_s'] * 1000:8.1f} ms"
        f"   (target under 500 ms)"
    )
    print(f"replays per second:                {figures['replays_per_s']:8.1f}")
    print(f"re-running the scenario (median):  {figures['rerun_s'] * 1000:8.1f} ms")
    print(f"replay / re-run:                   {figures['replay_s'] / figures['rerun_s']:8.2f}x")


if __name__ == "__main__":
    main()
