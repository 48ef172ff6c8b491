"""Recording with a model that takes real time, then replaying offline.

``harness record --live`` runs the booking agent with the official
``anthropic`` SDK, pointed (``ANTHROPIC_BASE_URL``) at an Anthropic-compatible
server on loopback that answers after a real delay, the first request with a
429 the SDK retries. Every exchange must be in the fixture, and
``harness replay`` must play the conversation again offline, with no server
and no key, to the same outcome.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from tests.bots.fake_anthropic import serve_fake_anthropic
from tests.support.model_server import ScriptedBehindAServer
from tests.support.processes import stop

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios" / "booking" / "happy_confirm_button.yaml"


async def _harness(*args: str, env: Mapping[str, str]) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "harness",
        *args,
        cwd=ROOT,
        env={k: v for k, v in {**os.environ, **env}.items() if not k.startswith("ANTHROPIC_")}
        | {k: v for k, v in env.items() if k.startswith("ANTHROPIC_")},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        out, _ = await process.communicate()
    finally:
        await stop(process)
    assert process.returncode is not None
    return process.returncode, out.decode()


@pytest.mark.network
@pytest.mark.slow
async def test_a_live_recording_keeps_every_exchange_and_replays_offline(tmp_path: Path) -> None:
    behind = ScriptedBehindAServer(busy_first=1)
    fixture = tmp_path / "fixture"
    async with serve_fake_anthropic(behind, delay=0.3) as (url, fake):
        code, out = await _harness(
            "record",
            str(SCENARIO),
            "--out",
            str(fixture),
            "--live",
            env={"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": url},
        )
    assert code == 0, out
    assert "passed" in out
    # Each exchange is shown as it is recorded, so a slow model is visibly at work.
    assert "with the live model at http://127.0.0.1:" in out
    assert "tool_use search_slots" in out
    assert "tool book_appointment done" in out
    answered = len(fake.requests) - 1  # the first one got the 429
    assert answered >= 4
    exchanges = [json.loads(line) for line in (fixture / "llm.jsonl").read_text().splitlines()]
    assert len(exchanges) == answered
    tools = [
        json.loads(line)["name"] for line in (fixture / "tools.jsonl").read_text().splitlines()
    ]
    assert tools == ["search_slots", "book_appointment"]
    conversation = json.loads((fixture / "conversation.json").read_text())
    replies = [e["text"] for e in conversation["events"] if e["kind"] == "send" and e.get("text")]
    assert any("Booked" in reply for reply in replies)
    assert "test-key" not in "".join(p.read_text() for p in fixture.glob("*.json*"))

    # Offline: no server, no key. The recording answers every model call.
    code, out = await _harness("replay", str(fixture), env={})
    assert code == 0, out
    assert "SAME" in out


BURST = """
name: a burst typed faster than the model answers
users:
  - {name: Priya, wa_id: "919876543210"}
steps:
  - say: [hi, can I get a table tomorrow, "around 7pm? there will be 4 of us"]
    gap: 0.2s
  - expect: {replies: 3}
"""


@pytest.mark.network
@pytest.mark.slow
async def test_a_burst_faster_than_the_live_model_replays_as_it_was_recorded(
    tmp_path: Path,
) -> None:
    # The agent answers each fragment; the model takes 0.3 s of real time, the fragments come
    # 0.2 s apart. While recording, virtual time stands still during a model call, so each
    # answer comes before the next fragment: a replay must keep that order, not take the
    # model's real time on its clock (where the next fragment would overtake the answer).
    scenario = tmp_path / "burst.yaml"
    scenario.write_text(BURST, encoding="utf-8")
    fixture = tmp_path / "fixture"
    async with serve_fake_anthropic(ScriptedBehindAServer(), delay=0.3) as (url, _):
        code, out = await _harness(
            "record",
            str(scenario),
            "--out",
            str(fixture),
            "--live",
            "--agent-setting",
            "BOOKING_REGRESSIONS=reply_per_fragment",
            env={"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": url},
        )
    assert code == 0, out
    lines = (fixture / "llm.jsonl").read_text(encoding="utf-8").splitlines()
    waited = [json.loads(line)["waited_s"] for line in lines]
    assert waited
    assert all(w == 0 for w in waited), waited
    for _ in range(2):
        code, out = await _harness("replay", str(fixture), env={})
        assert code == 0, out
        assert "SAME" in out
