"""Replay cost: a recorded conversation replayed offline, against running its scenario afresh.

Two conversations with the bundled booking agent, through the WhatsApp
simulator: a short bundled fixture (``scenarios/booking/fixtures/
happy_confirm_button``: a proposal, a Confirm tap, a booking) and a long one
recorded here (20 user turns over 26 virtual hours: bookings, questions, a
cancellation, long silences). For each, every round times a fresh run of the
scenario (the offline ScriptedModel answering), a replay of the loaded fixture
(answers from the recording) and a replay that loads the fixture from disk
first, in an order that rotates from round to round. The figures are each
one's wall time and its ratio to the fresh run of the same round: the median
over the rounds and the spread (min–max).

A replay runs the same channel and agent as a fresh run and skips only the
model's answers (and the tools' work), so with the offline model, which
answers in microseconds, a replay can't be much cheaper than a run: what it
adds (reading the fixture, comparing the conversations) should cost little.

Run: ``python benchmarks/replay.py`` (``--rounds 30`` by default; ``--quick`` for 8).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.fixture import load_fixture  # noqa: E402  # after the path tweak
from harness.replay.playback import replay_fixture  # noqa: E402
from harness.replay.record import record_scenario  # noqa: E402
from harness.suites.runner import Runner, RunOptions  # noqa: E402
from harness.suites.scenario import Scenario, load_scenario, parse_scenario  # noqa: E402

SHORT = "happy_confirm_button"
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
KINDS = ("fresh run", "replay", "replay + load")


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


async def _timed(step: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await step()
    return time.perf_counter() - started


async def _rounds(
    runner: Runner, scenario: Scenario, fixture_dir: Path, rounds: int
) -> dict[str, list[float]]:
    """Seconds per round of a fresh run, a replay and a replay that loads the fixture."""
    fixture = load_fixture(fixture_dir)

    async def fresh() -> None:
        result = await runner.run_scenario(scenario)
        assert result.status == "passed", (result.violations, result.error)

    async def replay() -> None:
        result = await replay_fixture(runner, fixture)
        assert result.status == "same", (result.divergences, result.changes, result.error)

    async def replay_loaded() -> None:
        result = await replay_fixture(runner, load_fixture(fixture_dir))
        assert result.status == "same", (result.divergences, result.changes, result.error)

    steps = dict(zip(KINDS, (fresh, replay, replay_loaded), strict=True))
    for step in steps.values():  # warm up: imports, caches, the first scenario's set-up
        await step()
    times: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for round_number in range(rounds):
        shift = round_number % len(KINDS)
        for kind in KINDS[shift:] + KINDS[:shift]:
            times[kind].append(await _timed(steps[kind]))
    return times


def _spread(values: Sequence[float], scale: float = 1.0, unit: str = "") -> str:
    """The median and (min–max) of ``values`` times ``scale``, in two aligned columns."""
    low, mid, high = min(values) * scale, statistics.median(values) * scale, max(values) * scale
    return f"{f'{mid:.2f}{unit}':>9} {f'({low:.2f}–{high:.2f})':<16}"


def _print(title: str, times: dict[str, list[float]]) -> None:
    print(title)
    print(f"  {'':16} {'wall ms':<26} x fresh run")
    fresh = times["fresh run"]
    for kind in KINDS:
        ratios = [t / f for t, f in zip(times[kind], fresh, strict=True)]
        print(f"  {kind:16} {_spread(times[kind], 1000)} {_spread(ratios, unit='x')}")


async def _measure(rounds: int) -> None:
    runner = Runner(RunOptions())
    short = load_scenario(ROOT / "scenarios" / "booking" / f"{SHORT}.yaml")
    fixtures = ROOT / "scenarios" / "booking" / "fixtures"
    times = await _rounds(runner, short, fixtures / SHORT, rounds)
    _print(f"short: the bundled fixture {SHORT}", times)
    scenario = long_scenario()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "long"
        recorded = await record_scenario(runner, scenario, out)
        assert recorded.conversation is not None
        turns = len(recorded.conversation.turns)
        events = recorded.conversation.events
        span_h = (max(e.at for e in events) - min(e.at for e in events)).total_seconds() / 3600
        times = await _rounds(runner, scenario, out, rounds)
    print()
    _print(f"long: {turns} turns over {span_h:.1f} virtual hours, recorded here", times)


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="8 rounds")
    args = parser.parse_args()
    rounds = 8 if args.quick else args.rounds
    print(f"{rounds} rounds, the three in turn: median (min–max)\n")
    asyncio.run(_measure(rounds))


if __name__ == "__main__":
    main()
