"""What a channel can't play is skipped, and every skip is in the result with its reason."""

from __future__ import annotations

from harness.plugins import ChannelPlugin
from harness.results import Skip
from harness.suites.fit import ChannelFit, only_channels
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import parse_scenario
from harness.suites.steps import BaseStep, ExpectStep
from tests.harness.suites.test_runner import TARGET, FakeChannel

NO_REDELIVERY = "no deliveries to repeat here"
NO_STATUS = "no statuses here"
UNSUPPORTED = {"redeliver": NO_REDELIVERY, "expect.status": NO_STATUS}

SCENARIO = """\
steps:
  - say: offer me a table
  - expect: {replies: 1, status: read}
  - tap: confirm
  - expect: {reply_contains: Booked}
  - redeliver: last
  - expect: {replies: 0, tool_not_called: book_appointment}
  - wait: 1h
  - expect: {status: read}
  - say: thanks
  - expect: {replies: 1}
"""


def _played(fit: ChannelFit, text: str) -> list[BaseStep | None]:
    return [fit.step(step) for step in parse_scenario(text).steps]


def test_an_expect_left_with_nothing_it_can_check_is_skipped() -> None:
    fit = ChannelFit("direct", UNSUPPORTED)
    played = _played(fit, "steps:\n  - say: hi\n  - expect: {status: read}\n")
    assert played[1] is None
    assert fit.skipped == [Skip(what="expect.status", reason=NO_STATUS, step=1, line=3)]


def test_a_channel_that_can_play_everything_plays_every_step_unchanged() -> None:
    scenario = parse_scenario(SCENARIO)
    fit = ChannelFit("whatsapp", {})
    assert [fit.step(step) for step in scenario.steps] == list(scenario.steps)
    assert fit.skipped == []


def test_what_the_channel_cant_play_is_skipped_with_where_and_why() -> None:
    fit = ChannelFit("direct", UNSUPPORTED)
    played = _played(fit, SCENARIO)
    # the status expectation goes, the replies expectation stays
    second = played[1]
    assert isinstance(second, ExpectStep)
    assert second.expect.replies == 1
    assert second.expect.status is None
    assert played[4] is None  # the redelivery
    assert played[5] is None  # what followed it never happened here
    assert played[6] is not None  # waiting is for every channel
    assert played[7] is None  # still about the skipped redelivery: no user step since
    assert [p is None for p in played[8:]] == [False, False]
    assert fit.skipped == [
        Skip(what="expect.status", reason=NO_STATUS, step=1, line=3),
        Skip(what="redeliver", reason=NO_REDELIVERY, step=4, line=6),
        Skip(
            what="expect",
            reason="it checks what followed the skipped redeliver step at line 6",
            step=5,
            line=7,
        ),
        Skip(
            what="expect",
            reason="it checks what followed the skipped redeliver step at line 6",
            step=7,
            line=9,
        ),
    ]
    assert [s.headline() for s in fit.skipped[:2]] == [
        f"steps[1].expect.status (line 3): {NO_STATUS}",
        f"steps[4].redeliver (line 6): {NO_REDELIVERY}",
    ]


def test_a_scenario_tagged_for_another_installed_channel_is_skipped_whole() -> None:
    channels = {"whatsapp", "direct"}
    only = parse_scenario("tags: [booking, whatsapp-only]\nsteps:\n  - say: hi\n")
    assert only_channels(only, channels) == {"whatsapp"}
    assert ChannelFit("whatsapp", {}).scenario_skip(only, channels) is None
    assert ChannelFit("direct", {}).scenario_skip(only, channels) == Skip(
        what="scenario", reason="tagged whatsapp-only, so not played on the direct channel"
    )
    # a tag that names no installed channel is just a tag
    english = parse_scenario("tags: [english-only]\nsteps:\n  - say: hi\n")
    assert only_channels(english, channels) == set()
    assert ChannelFit("direct", {}).scenario_skip(english, channels) is None


# -- through the runner -------------------------------------------------------------------


def _runner(channel: FakeChannel, unsupported: dict[str, str]) -> Runner:
    plugin = ChannelPlugin(
        name="fake", description="A channel with gaps.", factory=channel, unsupported=unsupported
    )
    other = ChannelPlugin(name="other", description="Never used.", factory=FakeChannel())
    return Runner(
        RunOptions(channel="fake", target=TARGET), plugins={"fake": plugin, "other": other}
    )


async def test_the_runner_never_asks_the_channel_for_what_it_cant_play() -> None:
    channel = FakeChannel()
    run = await _runner(channel, UNSUPPORTED).run([parse_scenario(SCENARIO)])
    [result] = run.scenarios
    assert result.status == "passed", result.violations
    assert [s.what for s in result.skipped] == [
        "expect.status",
        "redeliver",
        "expect",
        "expect",
    ]
    calls = [call[0] for call in channel.session.calls]
    assert "redeliver" not in calls
    assert calls.count("say") == 2
    assert run.ok


async def test_a_failure_after_skipped_steps_names_its_own_step() -> None:
    channel = FakeChannel()
    text = SCENARIO.replace("expect: {replies: 1}\n", "expect: {replies: 2}\n")
    run = await _runner(channel, UNSUPPORTED).run([parse_scenario(text)])
    [result] = run.scenarios
    assert result.status == "failed"
    [violation] = result.violations
    assert (violation.step, violation.line, violation.message) == (
        9,
        11,
        "expected 2 replies, got 1",
    )
    assert "- say: thanks" in result.reproduce


async def test_a_scenario_for_another_channel_is_reported_skipped_not_passed() -> None:
    channel = FakeChannel()
    scenarios = [
        parse_scenario("name: elsewhere\ntags: [other-only]\nsteps:\n  - say: hi\n"),
        parse_scenario("name: here\ntags: [fake-only]\nsteps:\n  - say: hi\n"),
    ]
    run = await _runner(channel, {}).run(scenarios)
    elsewhere, here = run.scenarios
    assert (elsewhere.status, here.status) == ("skipped", "passed")
    assert elsewhere.skipped == (
        Skip(what="scenario", reason="tagged other-only, so not played on the fake channel"),
    )
    assert elsewhere.conversation is None
    assert len(channel.sessions) == 1  # nothing was built for the skipped one
    assert (run.passed, run.skipped, run.ok) == (1, 1, True)
