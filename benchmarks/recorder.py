"""How much the LLM recorder costs: replay lookup as the recording grows, and recording overhead.

Run ``python benchmarks/recorder.py`` (``--quick`` for a smaller, faster run).
The paths compared take turns, sample after sample, so that a busy moment
slows them alike, and each is set against a baseline measured in the same
run: the ratios hold from one machine to another even where the microseconds
don't. Lookups show the best sample and the median (min–max) over the rounds,
and the ratio of each round's samples; recording shows the best sample.

* replay lookup per call with 10, 1,000 and 100,000 recorded exchanges,
  against the 10-exchange figure (target: at most 1.5x at 100,000);
* recording overhead per call for a 20-message request, against calling the
  inner client directly (target: under 50 microseconds), with the cost of one
  canonical JSON dump and sha256 of that request shown as the floor.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.canonical import canonical_json
from harness.llm import LLMResponse, SystemPrompt, TextBlock, Usage
from harness.llm_recorder import RecordingLLMClient
from harness.records import LLMRecord
from harness.tape import RecordMode

LOOKUP_SIZES = (10, 1_000, 100_000)
QUICK_LOOKUP_SIZES = (10, 1_000, 10_000)
LOOKUP_RATIO_TARGET = 1.5
OVERHEAD_TARGET_US = 50.0

SYSTEM = (
    "You are the booking assistant of a small restaurant. Be brief and friendly, "
    "confirm every booking before making it, and never book without a date, a time "
    "and a party size."
)
TOOLS: list[dict[str, Any]] = [
    {
        "name": "check_availability",
        "description": "Free tables for a date and time.",
        "input_schema": {
            "type": "object",
            "properties": {"date": {"type": "string"}, "time": {"type": "string"}},
            "required": ["date", "time"],
        },
    },
    {
        "name": "book_table",
        "description": "Book a table; call only after the user confirmed.",
        "input_schema": {
            "type": "object",
            "properties": {
                "date": {"type": "string"},
                "time": {"type": "string"},
                "party_size": {"type": "integer"},
            },
            "required": ["date", "time", "party_size"],
        },
    },
]


class FakeLLM:
    """An inner client that answers at once with a fixed response: the cost baseline."""

    def __init__(self) -> None:
        self.response = LLMResponse(
            id="msg_bench",
            model="claude-bench",
            content=(TextBlock(text="Your table is booked."),),
            stop_reason="end_turn",
            usage=Usage(input_tokens=900, output_tokens=12),
        )

    async def create(
        self,
        *,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        max_tokens: int,
        system: SystemPrompt | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **params: Any,
    ) -> LLMResponse:
        return self.response


def conversation(length: int, tag: int = 0) -> list[dict[str, Any]]:
    """A booking chat of ``length`` messages mixing text, tool_use and tool_result blocks."""
    messages: list[dict[str, Any]] = []
    for i in range(length):
        if i % 4 == 0:
            messages.append(
                {
                    "role": "user",
                    "content": f"Hi, a table for {i % 7 + 2} on Friday at 8pm? ({tag})",
                }
            )
        elif i % 4 == 1:
            messages.append(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "Let me check what is free on Friday evening."},
                        {
                            "type": "tool_use",
                            "id": f"toolu_{tag:06d}_{i:02d}",
                            "name": "check_availability",
                            "input": {"date": "2025-06-13", "time": "20:00"},
                        },
                    ],
                }
            )
        elif i % 4 == 2:
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": f"toolu_{tag:06d}_{i - 1:02d}",
                            "content": '{"free": ["19:30", "20:00", "21:15"]}',
                        }
                    ],
                }
            )
        else:
            messages.append(
                {"role": "assistant", "content": "8pm is free. Shall I book it for you?"}
            )
    return messages


def request(length: int, tag: int = 0) -> dict[str, Any]:
    """Keyword arguments for one ``create`` call."""
    return {
        "model": "claude-bench",
        "system": SYSTEM,
        "tools": TOOLS,
        "messages": conversation(length, tag),
        "max_tokens": 1024,
        "temperature": 0.2,
    }


async def timed(call: Callable[[], Awaitable[Any]], calls: int) -> float:
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(calls):
            await call()
        return time.perf_counter() - start
    finally:
        gc.enable()


def build_records(size: int) -> list[LLMRecord]:
    """``size`` distinct recorded exchanges, made by recording them."""
    recorder = RecordingLLMClient(FakeLLM(), RecordMode.RECORD)

    async def record_all() -> None:
        for tag in range(size):
            await recorder.create(**request(2, tag))

    asyncio.run(record_all())
    return recorder.records


def lookup_us(records: list[LLMRecord], calls: int, rng: random.Random) -> float:
    """One sample of replay cost per call, asking for recorded requests in a shuffled order.

    Each answer is served once, so a small recording is replayed by several
    clients in turn, all built before the clock starts; the requests asked
    are the same number of distinct objects at every size.
    """
    size = len(records)
    order: list[int] = []
    while len(order) < calls:
        order += rng.sample(range(size), size)
    asks = [request(2, tag) for tag in order[:calls]]
    clients = [RecordingLLMClient(None, "replay", records=records) for _ in range(0, calls, size)]

    async def run() -> float:
        gc.disable()
        try:
            start = time.perf_counter()
            for i, kwargs in enumerate(asks):
                await clients[i // size].create(**kwargs)
            return time.perf_counter() - start
        finally:
            gc.enable()

    return asyncio.run(run()) / calls * 1e6


def floor_us(body: Mapping[str, Any], calls: int) -> float:
    """One canonical JSON dump and sha256 of the request: work no recorder can skip."""
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(calls):
            hashlib.sha256(canonical_json(body).encode()).hexdigest()
        return (time.perf_counter() - start) / calls * 1e6
    finally:
        gc.enable()


def _spread(values: Sequence[float], digits: int = 2, unit: str = "") -> str:
    """The median and (min–max) of ``values``."""
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{mid:.{digits}f}{unit} ({low:.{digits}f}–{high:.{digits}f})"


def lookup_table(sizes: Sequence[int], calls: int, repeats: int) -> bool:
    print("Replay lookup per call (2-message requests, each recorded one asked once, shuffled)")
    header = f"  {'recorded':>10}  {'best us':>8}  {'us/call: median (min–max)':<28}"
    print(f"{header}  vs 10: median (min–max)")
    recordings = {size: build_records(size) for size in sizes}
    rng = random.Random(0)
    samples: dict[int, list[float]] = {size: [] for size in sizes}
    lookup_us(recordings[sizes[0]], calls, rng)  # warm up the allocator and caches
    for _ in range(repeats):  # interleaved, so a noisy moment hits every size alike
        for size in sizes:
            samples[size].append(lookup_us(recordings[size], calls, rng))
    base = samples[sizes[0]]
    for size in sizes:
        ratios = [s / b for s, b in zip(samples[size], base, strict=True)]
        print(
            f"  {size:>10,}  {min(samples[size]):>8.2f}  {_spread(samples[size]):<28}"
            f"  {_spread(ratios, unit='x')}"
        )
    ratios = [s / b for s, b in zip(samples[sizes[-1]], base, strict=True)]
    ratio = statistics.median(ratios)
    met = ratio <= LOOKUP_RATIO_TARGET
    verdict = "met" if met else "MISSED"
    print(
        f"  target: at most {LOOKUP_RATIO_TARGET}x from {sizes[0]} to {sizes[-1]:,} "
        f"(median of the rounds' ratios): {verdict}"
    )
    return met


def overhead_table(calls: int, repeats: int) -> bool:
    kwargs = request(20)
    inner = FakeLLM()
    events: list[object] = []

    def direct() -> Awaitable[LLMResponse]:
        return inner.create(**kwargs)

    def through(sink: bool) -> Callable[[], Awaitable[LLMResponse]]:
        recorder = RecordingLLMClient(
            inner, RecordMode.RECORD, sink=events.append if sink else None
        )
        return lambda: recorder.create(**kwargs)

    best = {"direct": float("inf"), "record": float("inf"), "sink": float("inf")}
    floor = float("inf")
    for _ in range(repeats):  # interleaved, so a noisy moment hits every path alike
        for name, call in (("direct", direct), ("record", through(False)), ("sink", through(True))):
            best[name] = min(best[name], asyncio.run(timed(call, calls)) / calls * 1e6)
            events.clear()
        floor = min(floor, floor_us(kwargs, calls))
    size = len(canonical_json(kwargs).encode())
    print(f"Recording one 20-message request ({size:,} bytes of canonical JSON), record mode")
    print(f"  {'path':<34}  {'us/call':>9}  {'vs direct':>9}")
    rows = [
        ("inner client called directly", best["direct"]),
        ("through RecordingLLMClient", best["record"]),
        ("  ... with a trace sink", best["sink"]),
    ]
    for label, figure in rows:
        print(f"  {label:<34}  {figure:>9.2f}  {figure / best['direct']:>8.1f}x")
    print(f"  {'canonical JSON + sha256 (floor)':<34}  {floor:>9.2f}")
    overhead = best["record"] - best["direct"]
    met = overhead < OVERHEAD_TARGET_US
    verdict = "met" if met else "MISSED"
    print(
        f"  overhead: {overhead:.2f} us/call, {overhead / floor:.2f}x the floor; "
        f"target under {OVERHEAD_TARGET_US:.0f} us: {verdict}"
    )
    return met


def main(argv: Sequence[str] | None = None) -> int:
    """Print both tables; the exit status is 0 whether or not the targets were met."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    options = parser.parse_args(argv)
    sizes = QUICK_LOOKUP_SIZES if options.quick else LOOKUP_SIZES
    calls = 500 if options.quick else 1_000
    repeats = 5 if options.quick else 21
    print(
        f"Python {sys.version.split()[0]}; {repeats} rounds of {calls:,} calls per path, "
        "the paths taking turns"
    )
    print()
    lookup_table(sizes, calls, repeats)
    print()
    overhead_table(calls, repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
