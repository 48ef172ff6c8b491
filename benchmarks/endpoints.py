"""What replaying through the model endpoint costs an agent, per model call.

Run ``python benchmarks/endpoints.py`` (``--quick`` for fewer rounds). A
20-call booking conversation (each request the whole history so far, with a
system prompt and two tools) is replayed three ways, the paths taking turns
so that a busy moment slows them alike, best round of each:

* in-process: :class:`~harness.llm_recorder.RecordingLLMClient` in replay
  mode, the recorder an agent built with this package uses;
* endpoint: the official ``anthropic`` SDK, pointed at the model endpoint
  (``ANTHROPIC_BASE_URL``) served by uvicorn on loopback, replaying;
* bare SDK: the same SDK against a loopback app that answers every request
  with one canned message, no recorder at all: the HTTP and SDK floor.

* vcrpy: the same SDK replaying a cassette of the same 20 calls, recorded
  first through vcrpy from the endpoint, matched on method, URL and body
  (the body is what tells the 20 calls apart, as the endpoint's key does).
  The cassette is parsed once and kept in memory, so a round times the
  calls, not the YAML loading.

The endpoint's figure is set against the others: against the bare SDK it is
what the endpoint itself adds (parsing, keying, the lookup, writing the
answer); against in-process it is what an agent pays for needing no harness
code; against vcrpy it is the cost next to the usual way of replaying HTTP
in Python tests. Each round times every path once; the figures are the
median and range over rounds, of times and of each round's ratios.
vcrpy is a development dependency (``pip install -e ".[dev]"``).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

if __package__ in (None, ""):  # run as a script: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anthropic
import vcr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from channels.whatsapp.server import BackgroundServer
from harness.endpoints import ModelEndpoint, Seat, anthropic_message, request_key
from harness.llm import LLMResponse, TextBlock, Usage
from harness.llm_recorder import RecordingLLMClient
from harness.recording import Recording
from harness.records import LLMRecord
from harness.tape import RecordMode

CALLS = 20
MODEL = "claude-test-1"
SYSTEM = "You are the booking assistant of a small restaurant. Confirm before booking."
TOOLS: list[Any] = [
    {
        "name": "check_availability",
        "description": "Free tables for a date and time.",
        "input_schema": {"type": "object", "properties": {"date": {"type": "string"}}},
    },
    {
        "name": "book_table",
        "description": "Book a table; call only after the user confirmed.",
        "input_schema": {"type": "object", "properties": {"date": {"type": "string"}}},
    },
]


def conversation() -> list[dict[str, Any]]:
    """The 20 requests of one conversation, each holding the history before it."""
    history: list[dict[str, Any]] = []
    requests = []
    for turn in range(CALLS):
        history.append({"role": "user", "content": f"Message {turn}: a table for {turn + 2}?"})
        requests.append(
            {
                "model": MODEL,
                "max_tokens": 256,
                "system": SYSTEM,
                "tools": TOOLS,
                "messages": list(history),
            }
        )
        history.append({"role": "assistant", "content": f"Answer {turn}: we have a table."})
    return requests


def answer(turn: int) -> LLMResponse:
    return LLMResponse(
        id=f"msg_{turn:04d}",
        model=MODEL,
        content=(TextBlock(text=f"Answer {turn}: we have a table."),),
        stop_reason="end_turn",
        usage=Usage(input_tokens=100 + turn * 20, output_tokens=12),
    )


def records(requests: list[dict[str, Any]]) -> list[LLMRecord]:
    now = datetime.now(UTC)
    return [
        LLMRecord(
            key=request_key(body),
            request=body,
            response=answer(turn),
            model=MODEL,
            recorded_at=now,
        )
        for turn, body in enumerate(requests)
    ]


async def per_call(calls: Callable[[], Awaitable[None]]) -> float:
    started = time.perf_counter()
    await calls()
    return (time.perf_counter() - started) / CALLS


def canned_app() -> Starlette:
    message = anthropic_message(answer(0))

    async def messages(request: Request) -> Response:
        await request.body()
        return JSONResponse(message)

    return Starlette(routes=[Route("/v1/messages", messages, methods=["POST"])])


class _ParsedOnce:
    """A vcrpy persister that parses each cassette file once and keeps it."""

    parsed: ClassVar[dict[str, Any]] = {}

    @classmethod
    def load_cassette(cls, cassette_path: str, serializer: Any) -> Any:
        from vcr.persisters.filesystem import FilesystemPersister

        if cassette_path not in cls.parsed:
            cls.parsed[cassette_path] = FilesystemPersister.load_cassette(cassette_path, serializer)
        return cls.parsed[cassette_path]

    @staticmethod
    def save_cassette(cassette_path: str, cassette_dict: Any, serializer: Any) -> None:
        from vcr.persisters.filesystem import FilesystemPersister

        FilesystemPersister.save_cassette(cassette_path, cassette_dict, serializer)


PATHS = ("in-process recorder", "endpoint (SDK)", "vcrpy (SDK)", "bare SDK round trip")


async def measure(rounds: int) -> dict[str, list[float]]:
    requests = conversation()
    recorded = records(requests)
    current: list[Recording] = [Recording(mode=RecordMode.REPLAY, llm_records=recorded)]

    def seat(_body: Mapping[str, Any], _headers: Mapping[str, str]) -> Seat:
        return current[0], None

    endpoint = ModelEndpoint(seat)
    times: dict[str, list[float]] = {name: [] for name in PATHS}
    cassette = str(Path(tempfile.mkdtemp(prefix="bench-vcr-")) / "conversation.yaml")
    match_on = ("method", "scheme", "host", "port", "path", "query", "body")
    recorder = vcr.VCR(record_mode="all", match_on=match_on)
    recorder.register_persister(_ParsedOnce)
    player = vcr.VCR(record_mode="none", match_on=match_on)
    player.register_persister(_ParsedOnce)
    async with (
        BackgroundServer(Starlette(routes=endpoint.routes())) as served,
        BackgroundServer(canned_app()) as bare,
        anthropic.AsyncAnthropic(base_url=served.url, api_key="benchmark") as via_endpoint,
        anthropic.AsyncAnthropic(base_url=bare.url, api_key="benchmark") as via_bare,
    ):
        with recorder.use_cassette(cassette):
            for body in requests:
                await via_endpoint.messages.create(**body)
        current[0] = Recording(mode=RecordMode.REPLAY, llm_records=recorded)

        async def in_process() -> None:
            client = RecordingLLMClient(None, RecordMode.REPLAY, records=recorded)
            for body in requests:
                await client.create(**body)

        async def through_endpoint() -> None:
            current[0] = Recording(mode=RecordMode.REPLAY, llm_records=recorded)
            for body in requests:
                await via_endpoint.messages.create(**body)
            assert not current[0].divergences, current[0].divergences
            assert not current[0].unused(), "the endpoint skipped recorded calls"

        async def through_vcrpy() -> None:
            with player.use_cassette(cassette) as played:
                for turn, body in enumerate(requests):
                    message = await via_endpoint.messages.create(**body)
                    expected = answer(turn).text
                    assert message.content[0].text == expected, "vcrpy played a wrong answer"
                assert played.all_played, "vcrpy skipped recorded calls"

        async def bare_sdk() -> None:
            for body in requests:
                await via_bare.messages.create(**body)

        paths = {
            "in-process recorder": in_process,
            "endpoint (SDK)": through_endpoint,
            "vcrpy (SDK)": through_vcrpy,
            "bare SDK round trip": bare_sdk,
        }
        for _ in range(rounds):
            for name, path in paths.items():
                times[name].append(await per_call(path))
    await endpoint.aclose()
    return times


def spread(values: list[float], scale: float = 1.0) -> str:
    """Median (min-max), three significant digits."""
    middle = statistics.median(values) * scale
    return f"{middle:.3g} ({min(values) * scale:.3g}-{max(values) * scale:.3g})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args()
    rounds = 5 if args.quick else 30
    times = asyncio.run(measure(rounds))
    print(f"a {CALLS}-call conversation replayed, {rounds} rounds, per call: median (min-max)")
    print(f"{'path':<22} {'us/call':>22} {'x in-process':>20} {'x vcrpy':>18} {'x bare SDK':>18}")
    for name in PATHS:
        row = times[name]
        ratios = [
            [a / b for a, b in zip(row, times[base], strict=True)]
            for base in ("in-process recorder", "vcrpy (SDK)", "bare SDK round trip")
        ]
        cells = " ".join(f"{spread(r):>19}" for r in ratios)
        print(f"{name:<22} {spread(row, 1e6):>22} {cells}")


if __name__ == "__main__":
    main()
