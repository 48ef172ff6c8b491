"""A simulated conversation recorded with both model streams, and replayed exactly or live."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from harness.exceptions import ConfigError
from harness.fixture import load_fixture
from harness.replay.playback import replay_fixture
from harness.replay.record import record_scenario
from harness.replay.simulated import user_model_of
from harness.skew import parse_skew
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import load_scenario
from harness.trace import Conversation, InboundMessage, OutboundSend, ToolCall

AT = datetime(2026, 1, 1, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[3]
BUNDLED = ROOT / "scenarios" / "booking" / "simulated_hesitant_customer.yaml"
FIXTURE = ROOT / "scenarios" / "booking" / "fixtures" / "simulated_hesitant_customer"
TARGET = "agents.booking:agent_factory"


def said(conversation: Conversation | None) -> list[str]:
    """Every message, send and tool call, as JSON, byte for byte: all but timing and sources.

    Delivery latencies are real milliseconds, and a replayed model call takes on the
    virtual clock as long as it took when recorded, so instants move by fractions of a
    millisecond; what was said, sent and done may not move at all.
    """
    assert conversation is not None
    kept = (InboundMessage, OutboundSend, ToolCall)
    return [
        e.model_copy(
            update={"at": AT, "source": "live"} if isinstance(e, ToolCall) else {"at": AT}
        ).model_dump_json()
        for e in conversation.events
        if isinstance(e, kept)
    ]


def runner(**settings: str) -> Runner:
    return Runner(RunOptions(target=TARGET, agent_settings=settings))


async def test_recording_keeps_the_users_stream_apart_and_the_replay_is_the_same(
    tmp_path: Path,
) -> None:
    out = tmp_path / "fixture"
    result = await record_scenario(runner(), load_scenario(BUNDLED), out)
    assert result.status == "passed"
    users = [json.loads(line) for line in (out / "users.jsonl").read_text("utf-8").splitlines()]
    assert len(users) == len(result.simulated)  # one exchange per thing the user did
    assert {u["provider"] for u in users} == {"offline-stand-in"}
    spans = (out / "spans.jsonl").read_text("utf-8").splitlines()
    assert len(spans) == len((out / "llm.jsonl").read_text("utf-8").splitlines())
    replayed = await replay_fixture(runner(), load_fixture(out))
    assert replayed.status == "same", (replayed.divergences, replayed.changes, replayed.error)
    assert replayed.unused == 0
    assert said(replayed.conversation) == said(load_fixture(out).conversation)
    assert user_model_of(load_fixture(out)) == "stand-in"


async def test_the_bundled_fixture_replays_byte_for_byte() -> None:
    fixture = load_fixture(FIXTURE)
    replayed = await replay_fixture(runner(), fixture)
    assert replayed.status == "same"
    assert said(replayed.conversation) == said(fixture.conversation)


@pytest.mark.parametrize("regression", ["book_without_confirm", "forget_constraint"])
async def test_a_changed_agent_diverges_when_pinned(regression: str) -> None:
    replayed = await replay_fixture(
        runner(BOOKING_REGRESSIONS=regression), load_fixture(FIXTURE), policy="pinned"
    )
    assert replayed.status == "diverged"
    assert replayed.divergences
    assert all(line.startswith("turn ") for line in replayed.divergences)


@pytest.mark.parametrize(
    ("regression", "rule"),
    [
        ("book_without_confirm", "action_only_after_confirmation"),
        ("forget_constraint", "constraint_honored"),
    ],
)
async def test_a_changed_agent_meets_the_same_simulated_user_live_and_fails(
    regression: str, rule: str
) -> None:
    replayed = await replay_fixture(
        runner(BOOKING_REGRESSIONS=regression), load_fixture(FIXTURE), policy="live"
    )
    assert replayed.status == "failed"
    assert rule in {v.rule for v in replayed.violations}
    # The user was asked again where the agent said something new, and answered from the
    # recording where it had said the same: the first turns came from the fixture.
    assert said(replayed.conversation)[:2] == said(load_fixture(FIXTURE).conversation)[:2]


async def test_a_simulated_fixture_takes_no_skew() -> None:
    with pytest.raises(ConfigError, match="takes no --skew"):
        await replay_fixture(runner(), load_fixture(FIXTURE), skew=parse_skew("scale=2"))


MEDIA = """\
steps:
  - simulate:
      persona: a guest in a wheelchair
      goal: know if the entrance is step-free
      max_turns: 4
      agenda:
        - hello
        - {media: photos/ramp.jpg, caption: "is this your entrance?"}
      behaviour: {media: [photos/ramp.jpg]}
"""


async def test_the_files_a_simulated_user_sends_travel_with_the_fixture(tmp_path: Path) -> None:
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "ramp.jpg").write_bytes(b"\xff\xd8\xff\xe0 a ramp")
    (tmp_path / "s.yaml").write_text(MEDIA, encoding="utf-8")
    out = tmp_path / "fixture"
    await record_scenario(runner(), load_scenario(tmp_path / "s.yaml"), out)
    kept = out / "media" / "simulated" / "photos" / "ramp.jpg"
    assert kept.read_bytes() == b"\xff\xd8\xff\xe0 a ramp"
    (tmp_path / "photos" / "ramp.jpg").unlink()  # the replay needs only the fixture
    replayed = await replay_fixture(runner(), load_fixture(out))
    assert replayed.status == "same", (replayed.divergences, replayed.error)
    assert replayed.conversation is not None
    assert [m.type for m in replayed.conversation.inbound()] == ["text", "image"]
