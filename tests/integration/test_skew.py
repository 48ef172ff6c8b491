"""Skew that matters: replaying a recorded chat with its timing shifted, stretched or offset.

A 25-hour pause before the Confirm tap lets the 24-hour window close while a
proposal is pending: the agent must follow up with a template, and an agent
that ignores the window sends free text that Meta fails with 131047. Scaling
stretches every gap between the user's messages; an agent offset gives the
agent a clock that differs from the channel's.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

from harness.agent import DirectMessage, DirectOption, DirectReply, DirectTurn
from harness.channel import AgentEnvironment, agent_clock
from harness.clock import VirtualClock
from harness.fixture import Fixture, load_fixture
from harness.replay.playback import ReplayResult, plan_from_fixture, replay_fixture
from harness.skew import Shift, parse_skew
from harness.suites.invariants import check
from harness.suites.runner import Runner, RunOptions
from harness.trace import Conversation, InboundMessage, OutboundSend, StatusUpdate

FIXTURES = Path(__file__).resolve().parents[2] / "scenarios" / "booking" / "fixtures"
HAPPY = FIXTURES / "happy_confirm_button"
HERE = "tests.integration.test_skew"
PAUSE = "shift=+25h@turn2"  # turns count from 1: turn 2 is the Confirm tap


def _happy() -> Fixture:
    return load_fixture(HAPPY)


async def _paused(settings: dict[str, str] | None = None) -> ReplayResult:
    return await replay_fixture(
        Runner(RunOptions()),
        _happy(),
        policy="live",
        skew=parse_skew(PAUSE),
        agent_settings=settings,
    )


def _inbound(conversation: Conversation | None) -> list[InboundMessage]:
    assert conversation is not None
    return conversation.inbound()


def test_the_pause_falls_before_the_confirm_tap() -> None:
    skew = parse_skew(PAUSE)
    assert skew.shifts == (Shift(timedelta(hours=25), turn=2),)
    actions = plan_from_fixture(_happy())
    turn_starts = [i for i, a in enumerate(actions) if a.starts_turn]
    assert turn_starts == [0, 1]
    assert actions[turn_starts[1]].kind == "tap"
    times = skew.apply([a.at for a in actions], turn_starts)
    assert times == [actions[0].at, actions[1].at + timedelta(hours=25)]


async def test_a_25h_pause_makes_the_agent_follow_up_with_a_template() -> None:
    result = await _paused()
    # Changed as the skew allows: no divergence, no invariant broken, one reply more.
    assert result.status == "changed"
    assert (result.error, result.divergences, result.violations) == (None, (), ())
    assert any(
        line.startswith("turn 1:") and "template appointment_reminder" in line
        for line in result.changes
    )
    assert result.conversation is not None
    first, confirm = _inbound(result.conversation)
    recorded_first, recorded_confirm = _inbound(_happy().conversation)
    assert first.at == recorded_first.at
    assert confirm.at == recorded_confirm.at + timedelta(hours=25)
    templates = [s for s in result.conversation.sends() if s.is_template]
    assert len(templates) == 1
    [template] = templates
    # In the gap, after the window closed: a template, which Meta accepts.
    assert first.at + timedelta(hours=24) < template.at < confirm.at
    assert template.in_window is False
    assert template.ok
    assert result.conversation.statuses("failed") == []
    # After the pause the guest's tap still books, once.
    assert len(result.conversation.tool_calls("book_appointment")) == 1


async def test_without_the_pause_there_is_no_template() -> None:
    result = await replay_fixture(Runner(RunOptions()), _happy(), policy="live")
    assert result.status == "same"
    assert result.conversation is not None
    assert not any(s.is_template for s in result.conversation.sends())


async def test_an_agent_ignoring_the_window_fails_with_131047_under_the_pause() -> None:
    result = await _paused({"BOOKING_REGRESSIONS": "ignore_window"})
    assert result.status == "failed"
    conversation = result.conversation
    assert conversation is not None
    assert not any(s.is_template for s in conversation.sends())
    [failed] = conversation.statuses("failed")
    assert [e.code for e in failed.errors] == [131047]
    offending = conversation.send_for(failed.wamid)
    assert isinstance(offending, OutboundSend)
    assert offending.in_window is False
    assert not offending.is_template
    [violation] = check(conversation, ["no_freeform_outside_window"])
    assert violation.rule == "no_freeform_outside_window"
    assert "131047" in violation.message
    # The violation sits in the turn whose proposal went unanswered: the first.
    assert violation.turn == 0


async def test_the_window_regression_hides_without_the_skew() -> None:
    result = await replay_fixture(
        Runner(RunOptions()),
        _happy(),
        policy="live",
        agent_settings={"BOOKING_REGRESSIONS": "ignore_window"},
    )
    assert result.status == "same"
    assert result.conversation is not None
    assert check(result.conversation, ["no_freeform_outside_window"]) == []
    assert not any(isinstance(e, StatusUpdate) and e.errors for e in result.conversation.events)


def _gaps(times: Sequence[datetime]) -> list[timedelta]:
    return [b - a for a, b in itertools.pairwise(times)]


async def test_scale_stretches_the_gaps_between_user_messages_tenfold() -> None:
    fixture = load_fixture(FIXTURES / "burst_answered_once")
    recorded = [m.at for m in _inbound(fixture.conversation)]
    result = await replay_fixture(
        Runner(RunOptions()), fixture, policy="live", skew=parse_skew("scale=10")
    )
    assert result.error is None
    replayed = [m.at for m in _inbound(result.conversation)]
    assert len(replayed) == len(recorded) == 4
    assert replayed[0] == recorded[0]
    assert _gaps(replayed) == [gap * 10 for gap in _gaps(recorded)]
    assert _gaps(replayed) == [timedelta(seconds=s) for s in (10, 10, 70)]


# -- the agent's own clock ------------------------------------------------------------


class ClockProbe:
    """A tiny direct agent that answers each burst with what its clock and the channel say.

    Every reply offers a Confirm button, so a recorded tap finds it.
    """

    def __init__(self, env: AgentEnvironment) -> None:
        self.clock = env.clock

    async def handle_burst(
        self, user: str, messages: Sequence[DirectMessage], *, now: datetime
    ) -> DirectTurn:
        """Reply ``agent=<its clock> channel=<now>``."""
        text = f"agent={self.clock.now().isoformat()} channel={now.isoformat()}"
        options = (DirectOption(id="confirm", title="Confirm"),)
        return DirectTurn(replies=(DirectReply(text=text, options=options),))


def clock_probe(env: AgentEnvironment) -> ClockProbe:
    """The agent factory for :class:`ClockProbe`."""
    return ClockProbe(env)


def _readings(conversation: Conversation | None) -> list[tuple[datetime, datetime, datetime]]:
    """(send time, the agent's clock, the channel's time) of each probe reply."""
    assert conversation is not None
    found = []
    for reply in conversation.replies():
        agent, channel = (part.split("=", 1)[1] for part in (reply.text or "").split())
        found.append((reply.at, datetime.fromisoformat(agent), datetime.fromisoformat(channel)))
    return found


async def test_agent_offset_gives_the_agent_a_clock_behind_the_channels() -> None:
    runner = Runner(RunOptions(channel="direct", target=f"{HERE}:clock_probe"))
    result = await replay_fixture(runner, _happy(), skew=parse_skew("agent-offset=-5m"))
    assert result.error is None
    readings = _readings(result.conversation)
    assert len(readings) == 2  # the question and the Confirm tap both reached the probe
    for sent_at, agent_now, channel_now in readings:
        assert channel_now == sent_at
        assert agent_now == channel_now - timedelta(minutes=5)
    # The channel's own timeline is not moved by an agent offset.
    recorded = [m.at for m in _inbound(_happy().conversation)]
    assert [m.at for m in _inbound(result.conversation)] == recorded


async def test_without_an_offset_the_agent_reads_the_channels_clock() -> None:
    runner = Runner(RunOptions(channel="direct", target=f"{HERE}:clock_probe"))
    result = await replay_fixture(runner, _happy())
    readings = _readings(result.conversation)
    assert readings
    assert all(agent_now == channel_now for _, agent_now, channel_now in readings)


def test_agent_clock_follows_the_channel_clock_at_its_offset() -> None:
    channel = VirtualClock()
    assert agent_clock(channel, timedelta(0)) is channel
    agent = agent_clock(channel, timedelta(minutes=-5))
    assert agent.now() == channel.now() - timedelta(minutes=5)
    channel.advance(timedelta(hours=25))
    assert agent.now() == channel.now() - timedelta(minutes=5)


async def test_an_offset_booking_agent_reads_yesterdays_date_and_diverges() -> None:
    # The recording started at midnight; five minutes behind, the agent is still on 31 December.
    result = await replay_fixture(
        Runner(RunOptions()), _happy(), skew=parse_skew("agent-offset=-5m")
    )
    assert result.status == "diverged"
    [divergence] = result.divergences
    assert "system prompt differs" in divergence
    assert "2025-12-31" in divergence
