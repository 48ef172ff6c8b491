"""Live chats recorded through ``harness proxy`` replay offline as they happened.

The whole chain, each part a process of its own as a user runs it:
``harness serve`` plays Meta (webhooks out, Graph API in), ``harness proxy``
sits between it and the reference agent (uvicorn, the official Anthropic SDK
pointed at a model on loopback that answers after 0.3 s, a 0.2 s debounce,
recording its model and tool calls into Redis). Users chat through the
simulator's control API: a burst, a tap on a button, a redelivered tap, a
25-hour pause. Each chat's fixture must replay offline (no model, no key, no
agent settings given) SAME, and a replay skewed by 25 hours before the tap
must change in the expected way: the agent's follow-up template comes first.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.fixture import load_fixture
from harness.replay.playback import replay_fixture
from harness.skew import parse_skew
from harness.suites.runner import Runner, RunOptions
from tests.bots.fake_anthropic import serve_fake_anthropic
from tests.bots.loopback import free_port
from tests.support.model_server import ScriptedBehindAServer
from tests.support.processes import stop

pytestmark = [pytest.mark.network, pytest.mark.redis, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SECRET, VERIFY, TOKEN = "harness-app-secret", "harness-verify-token", "harness-access-token"


@dataclass
class Chain:
    """The running processes; ``chat`` records one conversation into a fixture."""

    graph: str
    proxy_port: int
    agent: str
    redis_url: str
    logs: Path

    async def chat(self, out: Path, fixture_id: str, steps: Sequence[tuple[str, Any]]) -> None:
        """Record ``steps`` (control API calls, or pauses in seconds) through a fresh proxy."""
        await _clear_of_a_minute_boundary()
        proxy = await _start(
            "harness",
            "proxy",
            "--listen",
            f"127.0.0.1:{self.proxy_port}",
            "--agent-url",
            f"{self.agent}/webhook",
            "--app-secret",
            SECRET,
            "--verify-token",
            VERIFY,
            "--upstream-graph",
            self.graph,
            "--out",
            str(out),
            "--store",
            self.redis_url,
            "--fixture-id",
            fixture_id,
            log=self.logs / f"proxy-{fixture_id}.log",
        )
        try:
            await _answering(f"http://127.0.0.1:{self.proxy_port}/webhook?hub.mode=x")
            async with httpx.AsyncClient(base_url=self.graph, timeout=30) as client:
                for action, value in steps:
                    if action == "pause":
                        await asyncio.sleep(value)
                        continue
                    if action == "burst":  # quick messages, typed before any answer came
                        answers = await asyncio.gather(
                            *(client.post("/_harness/inbound", json=v) for v in value)
                        )
                    else:
                        answers = [await client.post(f"/_harness/{action}", json=value)]
                    for answer in answers:
                        assert answer.status_code == 200, answer.text
                await asyncio.sleep(2.5)  # the agent's last answer and its statuses
        finally:
            proxy.send_signal(signal.SIGINT)  # the proxy closes its fixture cleanly
            try:
                await asyncio.wait_for(proxy.wait(), 15)
            except TimeoutError:
                proxy.kill()  # a proxy that does not stop fails the test, and goes with it
                await proxy.wait()
                raise


async def _clear_of_a_minute_boundary(room: float = 25.0) -> None:
    """Wait, if need be, until a chat of up to ``room`` seconds ends in the minute it starts.

    The agent's prompt shows the time to the minute. The replay reproduces the
    instants messages arrived, the model's latency and the Graph API's, but not
    the agent's own processing time (milliseconds): a prompt built just after a
    minute turned live could, very rarely, be built just before it in the
    replay, and the replay would then rightly say the prompt differs.
    """
    second = datetime.now(UTC).second + datetime.now(UTC).microsecond / 1e6
    if second > 60 - room:
        await asyncio.sleep(60.5 - second)


async def _start(*args: str, env: dict[str, str] | None = None, log: Path) -> Any:
    with log.open("w") as output:  # the process keeps its own copy of the file
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            *args,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            stdout=output,
            stderr=asyncio.subprocess.STDOUT,
        )


async def _answering(url: str, within: float = 20) -> None:
    deadline = time.monotonic() + within
    async with httpx.AsyncClient(timeout=2) as client:
        while True:
            try:
                await client.get(url)
                return
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.1)


@asynccontextmanager
async def _chain(tmp_path: Path, redis_url: str, fixture_id: str) -> AsyncIterator[Chain]:
    graph_port, proxy_port, agent_port = free_port(), free_port(), free_port()
    async with serve_fake_anthropic(ScriptedBehindAServer(busy_first=1), delay=0.3) as (model, _):
        agent = await _start(
            "uvicorn",
            "agents.booking:app",
            "--port",
            str(agent_port),
            env={
                # The agent sends through the proxy, which forwards to the simulator.
                "WHATSAPP_GRAPH_URL": f"http://127.0.0.1:{proxy_port}",
                "WHATSAPP_ACCESS_TOKEN": TOKEN,
                "WHATSAPP_PHONE_NUMBER_ID": "100200300400500",
                "WHATSAPP_APP_SECRET": SECRET,
                "WHATSAPP_VERIFY_TOKEN": VERIFY,
                "BOOKING_LLM": "anthropic",
                "ANTHROPIC_API_KEY": "test-key",
                "ANTHROPIC_BASE_URL": model,
                "BOOKING_DEBOUNCE_SECONDS": "0.2",
                "HARNESS_RECORD_MODE": "record",
                "HARNESS_RECORDING_URL": redis_url,
                # Unique to this test: runs sharing the Redis must not collect each other's.
                "HARNESS_FIXTURE_ID": fixture_id,
            },
            log=tmp_path / "agent.log",
        )
        try:
            serve = await _start(
                "harness",
                "serve",
                "--port",
                str(graph_port),
                "--webhook-url",
                f"http://127.0.0.1:{proxy_port}/webhook",
                log=tmp_path / "serve.log",
            )
            try:
                await _answering(f"http://127.0.0.1:{agent_port}/healthz")
                await _answering(f"http://127.0.0.1:{graph_port}/_harness/clock")
                yield Chain(
                    f"http://127.0.0.1:{graph_port}",
                    proxy_port,
                    f"http://127.0.0.1:{agent_port}",
                    redis_url,
                    tmp_path,
                )
            finally:
                await stop(serve)
        finally:
            await stop(agent)


async def _offline(fixture: Path, skew: str = "") -> Any:
    # Offline, as a user replays: the recorded agent, its recorded settings, no model.
    return await replay_fixture(
        Runner(RunOptions()), load_fixture(fixture), skew=parse_skew(skew) if skew else None
    )


async def test_live_chats_replay_offline_as_they_happened(
    tmp_path: Path, redis_url: str, namespace: str
) -> None:
    user = str(1555_000_0000 + uuid.uuid4().int % 10**6)
    other = str(4915_000_0000 + uuid.uuid4().int % 10**6)
    tap = tmp_path / "tap"
    pause = tmp_path / "pause"
    async with _chain(tmp_path, redis_url, namespace) as chain:
        # The agent records under the id it was started with; one chat at a time uses it.
        await chain.chat(
            tap,
            namespace,
            [
                (
                    "burst",
                    [
                        {"user": user, "text": "Hi, a table on friday at 8pm?"},
                        {"user": user, "text": "for 4 people"},
                    ],
                ),
                ("pause", 3.0),
                ("tap", {"user": user, "choice": "confirm"}),
                ("pause", 3.0),
                ("redeliver", {"user": user}),
            ],
        )
        await chain.chat(
            pause,
            namespace,
            [
                ("inbound", {"user": other, "text": "Do you have a table tomorrow at 1pm?"}),
                ("pause", 3.0),
                ("advance", {"duration": "25h"}),
                ("inbound", {"user": other, "text": "sorry, I was away. Is it still free?"}),
            ],
        )

    for fixture in (tap, pause):
        recorded = load_fixture(fixture)
        assert recorded.meta.agent_settings["BOOKING_DEBOUNCE_SECONDS"] == "0.2"  # type: ignore[attr-defined]
        assert recorded.raw("llm"), "the agent's model exchanges were joined into the fixture"
        result = await _offline(fixture)
        assert result.status == "same", (result.changes, result.divergences, result.error)
        assert result.unused == 0

    # The burst was one turn, the tap booked once, and the redelivered tap was dropped.
    conversation = load_fixture(tap).conversation
    assert conversation is not None
    # The two were posted at once, so they may have reached the agent in either order.
    assert [sorted(t.texts) for t in conversation.turns][:1] == [
        ["Hi, a table on friday at 8pm?", "for 4 people"]
    ]
    assert [c.name for c in conversation.tool_calls(side_effect=True)] == ["book_appointment"]
    assert any(m.duplicate for m in conversation.inbound(duplicates=True))

    # 25 hours before the tap: the agent nudges the user with its template first, and its
    # prompt then carries the next day's date, which the recording can't answer.
    skewed = await _offline(tap, "shift=+25h@turn2")
    assert skewed.status == "diverged", (skewed.changes, skewed.divergences, skewed.error)
    assert skewed.changes[:2] == (
        "turn 1: a: 1 reply, b: 2",
        "turn 1: reply 2 only in b: template appointment_reminder (en_US)",
    )
    assert len(skewed.divergences) == 1
    assert "system prompt differs" in skewed.divergences[0]
    assert not [s for s in conversation.replies() if s.is_template]
