"""The runner, through a fake channel: steps in order, expectations, invariants, failures, reports.

The fake channel's sessions record every call the runner makes and answer
with a tiny scripted agent built by :func:`fake_agent_factory`, the target
the runner imports by path. Nothing here sleeps in real time: the sessions
run on virtual clocks, and in the concurrency test the runner's worker
threads wait for each other at a barrier, which only times out when the
runner fails to run that many scenarios at once.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import pytest
from pydantic import JsonValue

from harness.agent import DirectOption, DirectReply, DirectTurn
from harness.channel import AgentEnvironment, ChannelSession, ChannelSetup
from harness.clock import VirtualClock
from harness.exceptions import ConfigError, ScenarioError, StepError
from harness.plugins import ChannelPlugin
from harness.results import ScenarioResult
from harness.store import MemoryStore
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import Scenario, parse_scenario
from harness.suites.target import DEFAULT_TARGET, load_target, settings_from
from harness.trace import Conversation, Event, InboundMessage, OutboundSend, ToolCall

TARGET = "tests.harness.suites.test_runner:fake_agent_factory"
#: Not a factory, for load_target's "not callable" error.
NOT_CALLABLE = "an agent factory's name, not an agent factory"
#: How long a worker thread waits for the others before the test fails (never, when it passes).
THREAD_TIMEOUT = 10.0
TWO_USERS = """\
users:
  - {name: Ana, wa_id: "15550001111"}
  - {name: Ben, wa_id: "15550002222"}
"""


class FakeAgent:
    """Answers a burst by its words: echo, offer buttons, book, answer twice, stay silent, crash."""

    def __init__(self, env: AgentEnvironment) -> None:
        self.env = env

    def answer(self, user: str, texts: Sequence[str], now: datetime) -> DirectTurn:
        said = " / ".join(texts)
        if "crash" in said:
            raise RuntimeError("the agent exploded")
        if "misconfigured" in said:
            raise ConfigError("the fake agent is misconfigured")
        if "silence" in said:
            return DirectTurn()
        if "offer" in said:
            options = (
                DirectOption(id="confirm", title="Confirm"),
                DirectOption(id="no", title="No"),
            )
            return DirectTurn(
                replies=(DirectReply(type="interactive", text="Friday?", options=options),)
            )
        if "book" in said or "confirm" in said:
            call = ToolCall(
                at=now, user=user, name="book_appointment", args={"date": "2026-01-09", "party": 4}
            )
            return DirectTurn(replies=(DirectReply(text="Booked for Friday."),), tool_calls=(call,))
        if "twice" in said:
            return DirectTurn(replies=(DirectReply(text="One."), DirectReply(text="Two.")))
        return DirectTurn(replies=(DirectReply(text=f"you said: {said}"),))


def fake_agent_factory(env: AgentEnvironment) -> FakeAgent:
    """The target the runner imports by path."""
    return FakeAgent(env)


class FakeSession:
    """A :class:`~harness.channel.ChannelSession` that records the calls it gets."""

    name = "fake"

    def __init__(self, setup: ChannelSetup, channel: FakeChannel) -> None:
        self.setup = setup
        self.channel = channel
        self.calls: list[tuple[Any, ...]] = []
        self.clock = VirtualClock()
        self.events: list[Event] = []
        self.keys = {u.name: u.key for u in setup.users}
        self.options: dict[str, list[str]] = {}
        self.env: AgentEnvironment | None = None
        self.agent: FakeAgent | None = None
        self.closed = False
        self._ids = itertools.count(1)

    #: The agent runs in-process on the virtual clock: every step settles it.
    real_time = False

    async def wait_until(self, holds: Callable[[Conversation], bool], within: float) -> bool:
        """In-process the agent has already settled: whether ``holds`` holds now."""
        return holds(self.conversation())

    async def quiet(self, window: float, within: float) -> bool:
        """In-process the agent has already settled: it is quiet."""
        return True

    async def send_recorded(
        self,
        user: str,
        message: Mapping[str, Any],
        envelope: Mapping[str, Any],
        *,
        message_id: str,
        data: bytes | None = None,
        ahead: timedelta = timedelta(0),
    ) -> None:
        """Not used by these tests: the runner never replays."""
        raise NotImplementedError

    async def start(self) -> None:
        self.calls.append(("start",))
        store = self.setup.store or MemoryStore(clock=self.clock)
        if self.setup.namespace:
            store = store.with_namespace(self.setup.namespace)
        self.env = AgentEnvironment(
            channel=self.name,
            settings=dict(self.setup.agent_settings),
            clock=self.clock,
            store=store,
            sink=self.events.append,
        )
        factory = self.setup.agent_factory or fake_agent_factory
        self.agent = factory(self.env)
        self.channel.opened(self)

    async def say(self, user: str, texts: Sequence[str], *, gap: float = 1.0) -> None:
        self.calls.append(("say", user, tuple(texts), gap))
        for i, text in enumerate(texts):
            if i:
                self.clock.advance(gap)
            self._inbound(user, "text", text)
        self._answer(user, list(texts))

    async def tap(self, user: str, choice: str) -> None:
        self.calls.append(("tap", user, choice))
        if choice not in self.options.get(user, []):
            offered = ", ".join(self.options.get(user, [])) or "none"
            raise StepError(f"no button {choice!r} offered (offered: {offered})")
        self._inbound(user, "interactive", choice)
        self._answer(user, [choice])

    async def send(
        self, user: str, message: Mapping[str, Any], *, data: bytes | None = None
    ) -> None:
        self.calls.append(("send", user, dict(message)))
        self._inbound(user, str(message["type"]), None)
        self._answer(user, [f"<{message['type']}>"])

    async def redeliver(self, user: str, index: int | None = None) -> None:
        self.calls.append(("redeliver", user, index))

    async def wait(self, seconds: float) -> None:
        self.calls.append(("wait", seconds))
        self.clock.advance(seconds)

    async def settle(self) -> None:
        self.calls.append(("settle",))
        self.clock.advance(10)

    async def run_until(self, when: datetime) -> None:
        self.calls.append(("run_until", when))
        self.clock.set(max(when, self.clock.now()))

    def now(self) -> datetime:
        return self.clock.now()

    def conversation(self, *, finished: bool = False) -> Conversation:
        return Conversation.from_events(self.events, channel=self.name)

    async def close(self) -> None:
        self.calls.append(("close",))
        self.closed = True
        self.channel.closed(self)
        if self.channel.fail_close:
            raise OSError("the agent's socket is gone")

    def _inbound(self, user: str, kind: str, text: str | None) -> None:
        self.events.append(
            InboundMessage(
                at=self.clock.now(),
                user=self.keys[user],
                wamid=f"fake.in.{next(self._ids)}",
                type=kind,
                text=text,
            )
        )

    def _answer(self, user: str, texts: list[str]) -> None:
        assert self.agent is not None
        key = self.keys[user]
        turn = self.agent.answer(key, texts, self.clock.now())
        self.events.extend(turn.tool_calls)
        for reply in turn.replies:
            self.events.append(
                OutboundSend(
                    at=self.clock.now(),
                    user=key,
                    type=reply.type,
                    text=reply.text,
                    wamid=f"fake.out.{next(self._ids)}",
                )
            )
            if reply.options:
                self.options[user] = [o.id for o in reply.options]


class FakeChannel:
    """The fake channel's factory: keeps every session it built, and how many were open at once.

    The runner may run sessions on worker threads, hence the lock. With
    ``together`` the first that many sessions wait for each other once open,
    which only a runner running that many at once gets past; with
    ``last_of=n`` the session of the scenario with seed 0 closes only after
    the ``n - 1`` others have.
    """

    def __init__(
        self, *, fail_close: bool = False, together: int = 1, last_of: int | None = None
    ) -> None:
        self.sessions: list[FakeSession] = []
        self.open = 0
        self.most_open = 0
        self.fail_close = fail_close
        self.together = together
        self.last_of = last_of
        self._lock = threading.Lock()
        self._barrier = threading.Barrier(together)
        self._others_closed = threading.Event()
        self._closed = 0

    def __call__(self, setup: ChannelSetup) -> FakeSession:
        session = FakeSession(setup, self)
        _: ChannelSession = session  # mypy checks the fake against the protocol
        with self._lock:
            self.sessions.append(session)
        return session

    def opened(self, session: FakeSession) -> None:
        with self._lock:
            self.open += 1
            self.most_open = max(self.most_open, self.open)
            index = self.sessions.index(session)
        if index < self.together:
            self._barrier.wait(timeout=THREAD_TIMEOUT)

    def closed(self, session: FakeSession) -> None:
        held = self.last_of is not None and session.setup.seed == 0
        with self._lock:
            self.open -= 1
            if not held:
                self._closed += 1
                if self.last_of is not None and self._closed == self.last_of - 1:
                    self._others_closed.set()
        if held:
            assert self._others_closed.wait(timeout=THREAD_TIMEOUT)

    @property
    def plugin(self) -> ChannelPlugin:
        return ChannelPlugin(name="fake", description="Records what the runner does.", factory=self)

    @property
    def session(self) -> FakeSession:
        [only] = self.sessions
        return only


def _runner(channel: FakeChannel, **options: Any) -> Runner:
    options.setdefault("target", TARGET)
    return Runner(RunOptions(channel="fake", **options), plugins={"fake": channel.plugin})


async def _run(text: str, **options: Any) -> tuple[ScenarioResult, FakeChannel, Scenario]:
    channel = FakeChannel()
    scenario = parse_scenario(text)
    run = await _runner(channel, **options).run([scenario])
    [result] = run.scenarios
    return result, channel, scenario


def _steps(scenario: Scenario) -> list[dict[str, JsonValue]]:
    return [step.to_data() for step in scenario.steps]


# -- playing steps -------------------------------------------------------------------


async def test_steps_reach_the_session_in_order_with_their_details() -> None:
    result, channel, _ = await _run(
        TWO_USERS
        + """\
steps:
  - say: [hi, offer me a table]
    gap: 3s
  - tap: confirm
  - send: image
    caption: the menu
  - send: audio
  - send: {type: location, location: {latitude: 1.5, longitude: 2.5}}
  - say: hello
    as: Ben
  - redeliver: 1
    as: Ben
  - redeliver: last
    as: Ana
  - wait: 25h
  - advance: 1.5h
  - expect: {replies: 0}
    within: 30s
"""
    )
    assert result.status == "passed", result.violations
    assert channel.session.calls == [
        ("start",),
        ("say", "Ana", ("hi", "offer me a table"), 3.0),
        ("settle",),
        ("tap", "Ana", "confirm"),
        ("settle",),
        ("send", "Ana", {"type": "image", "image": {"caption": "the menu"}}),
        ("settle",),
        ("send", "Ana", {"type": "audio", "audio": {}}),
        ("settle",),
        ("send", "Ana", {"type": "location", "location": {"latitude": 1.5, "longitude": 2.5}}),
        ("settle",),
        ("say", "Ben", ("hello",), 1.0),
        ("settle",),
        ("redeliver", "Ben", 1),
        ("settle",),
        ("redeliver", "Ana", None),
        ("settle",),
        ("wait", 90000.0),
        ("wait", 5400.0),
        ("wait", 30.0),
        ("close",),
    ]
    assert channel.session.closed
    assert result.reproduce == ""
    assert result.error is None


async def test_the_session_is_set_up_from_the_scenario_and_the_options() -> None:
    result, channel, _ = await _run(
        TWO_USERS
        + """\
seed: 7
faults: {duplicate: 0.5}
agent: {regressions: [no_dedupe, ignore_window], strict: true, retries: 2}
steps:
  - say: hi
""",
        agent_settings={"retries": "5"},
        channel_options={"app_secret": "s3cret"},
    )
    setup = channel.session.setup
    assert [(u.name, u.wa_id, u.bsuid) for u in setup.users] == [
        ("Ana", "15550001111", None),
        ("Ben", "15550002222", None),
    ]
    assert setup.seed == result.seed == 7
    assert setup.faults == {"duplicate": 0.5}
    assert result.faults == {"duplicate": 0.5}
    assert setup.agent_factory is fake_agent_factory
    assert setup.target_url is None
    assert setup.agent_settings == {
        "regressions": "no_dedupe,ignore_window",
        "strict": "true",
        "retries": "5",  # the command line wins over the scenario
    }
    assert setup.options == {"app_secret": "s3cret"}
    assert setup.store is not None
    assert setup.namespace
    assert channel.session.env is not None
    assert channel.session.env.settings == setup.agent_settings


async def test_expect_steps_see_what_happened_since_the_last_user_step() -> None:
    result, _, _ = await _run(
        """\
steps:
  - say: hello
  - say: book friday please
  - wait: 1h
  - expect:
      reply_contains: booked
      reply_not_contains: hello
      tool_called: {name: book_appointment, args: {party: "4"}}
      replies: 1
  - expect:
      reply_contains: hello
"""
    )
    assert result.status == "failed"
    [violation] = result.violations
    assert violation.kind == "expectation"
    assert violation.rule == "expect"
    assert violation.message == "no reply contains 'hello'"
    assert (violation.step, violation.line, violation.turn) == (4, 10, 1)
    assert violation.messages == (
        "[turn 2] tool book_appointment(date='2026-01-09', party=4)",
        "[turn 2] agent: Booked for Friday.",
    )


async def test_expect_steps_take_the_acting_user_and_the_start_of_the_step() -> None:
    result, _, _ = await _run(
        TWO_USERS
        + """\
steps:
  - say: [hello, there]
    gap: 3s
  - expect: {replies: 1, no_reply_within: 2s}
  - expect: {no_reply_within: 4s}
  - expect: {replies: 0}
    as: Ben
"""
    )
    # The reply came with the last message of the burst, 3 s after the step began.
    [violation] = result.violations
    assert violation.message == "the agent replied within 4s (1 message)"
    assert violation.step == 2


# -- invariants, failures and errors ---------------------------------------------------


async def test_invariants_run_over_the_whole_conversation() -> None:
    result, _, scenario = await _run(
        """\
invariants:
  - every_inbound_answered
  - one_reply_per_burst
steps:
  - say: hello
  - say: [twice, please]
  - say: thanks
"""
    )
    assert result.status == "failed"
    [violation] = result.violations
    assert violation.kind == "invariant"
    assert violation.rule == "one_reply_per_burst"
    assert violation.turn == 1
    assert violation.line == 3
    assert result.conversation is not None
    assert len(result.conversation.turns) == 3
    again = parse_scenario(result.reproduce)
    assert _steps(again) == _steps(scenario)[:2]
    assert [i.name for i in again.invariants] == ["one_reply_per_burst"]


async def test_a_step_error_fails_that_step_and_nothing_after_it_is_played() -> None:
    result, channel, scenario = await _run(
        """\
invariants:
  - every_inbound_answered
  - one_reply_per_burst
steps:
  - say: silence
  - tap: confirm
  - say: never played
  - expect: {replies: 5}
"""
    )
    assert result.status == "failed"
    assert result.error is None
    step_failure, unanswered = result.violations
    assert step_failure.kind == "expectation"
    assert step_failure.rule == "tap"
    assert step_failure.message == (
        "no button 'confirm' offered (offered: none) (the rest of the scenario was not played)"
    )
    assert (step_failure.step, step_failure.line, step_failure.turn) == (1, 6, None)
    # The invariants still ran, over what was played.
    assert unanswered.rule == "every_inbound_answered"
    assert channel.session.calls == [
        ("start",),
        ("say", "user", ("silence",), 1.0),
        ("settle",),
        ("tap", "user", "confirm"),
        ("close",),
    ]
    again = parse_scenario(result.reproduce)
    assert _steps(again) == _steps(scenario)[:2]
    assert [i.name for i in again.invariants] == ["every_inbound_answered"]


async def test_a_crashing_agent_gives_an_error_result_with_its_message() -> None:
    result, channel, scenario = await _run(
        """\
steps:
  - say: hello
  - say: crash now
  - say: never played
"""
    )
    assert result.status == "error"
    assert result.error == "RuntimeError: the agent exploded"
    assert result.violations == ()
    assert result.conversation is not None
    assert [m.text for m in result.conversation.inbound()] == ["hello", "crash now"]
    assert [c[0] for c in channel.session.calls] == ["start", "say", "settle", "say", "close"]
    assert _steps(parse_scenario(result.reproduce)) == _steps(scenario)


async def test_a_harness_error_from_the_session_is_reported_as_is() -> None:
    result, channel, _ = await _run("steps:\n  - say: misconfigured\n")
    assert result.status == "error"
    assert result.error == "the fake agent is misconfigured"
    assert channel.session.closed


async def test_a_close_that_fails_is_reported_after_the_result() -> None:
    channel = FakeChannel(fail_close=True)
    run = await _runner(channel).run([parse_scenario("steps:\n  - say: hello\n")])
    [result] = run.scenarios
    assert result.status == "error"
    assert result.error == "closing the agent failed: OSError: the agent's socket is gone"
    assert result.conversation is not None
    assert len(result.conversation.replies()) == 1


async def test_reproduce_stops_at_the_first_failed_expectation() -> None:
    result, _, scenario = await _run(
        TWO_USERS
        + """\
name: stops early
invariants:
  - every_inbound_answered
  - one_reply_per_burst
steps:
  - say: hello
  - expect: {reply_contains: goodbye}
  - say: more
    as: Ben
  - expect: {replies: 2}
    as: Ben
"""
    )
    assert [v.step for v in result.violations] == [1, 3]
    again = parse_scenario(result.reproduce)
    assert again.name == "stops early"
    assert again.users == scenario.users
    assert _steps(again) == _steps(scenario)[:2]
    assert again.invariants == ()


async def test_reproduce_keeps_an_invariant_named_by_import_path() -> None:
    result, _, _ = await _run(
        """\
invariants:
  - tests.harness.suites.custom_invariants:quiet_agent: {limit: 0}
steps:
  - say: hello
"""
    )
    [violation] = result.violations
    assert violation.rule == "custom_quiet_agent"
    again = parse_scenario(result.reproduce)
    assert [i.name for i in again.invariants] == [
        "tests.harness.suites.custom_invariants:quiet_agent"
    ]


async def test_a_step_without_as_is_taken_by_the_first_user() -> None:
    result, channel, _ = await _run(
        TWO_USERS
        + """\
steps:
  - say: hi
    as: Ben
  - say: hello
  - expect: {replies: 1, reply_contains: "you said: hello"}
  - redeliver: last
"""
    )
    assert result.status == "passed", result.violations
    assert channel.session.calls[1:] == [
        ("say", "Ben", ("hi",), 1.0),
        ("settle",),
        ("say", "Ana", ("hello",), 1.0),
        ("settle",),
        ("redeliver", "Ana", None),
        ("settle",),
        ("close",),
    ]


# -- running many --------------------------------------------------------------------


@pytest.mark.parametrize("concurrency", [1, 5])
async def test_results_come_back_in_input_order(concurrency: int) -> None:
    count = 8
    if concurrency == 1:
        channel = FakeChannel()
    else:  # the first scenario finishes last, though it starts first
        channel = FakeChannel(together=concurrency, last_of=count)
    scenarios = [
        parse_scenario(f"name: s{i}\nseed: {i}\nsteps:\n  - say: hello {i}\n") for i in range(count)
    ]
    finished: list[str] = []
    run = await _runner(channel, concurrency=concurrency, seed=3).run(
        scenarios, on_result=lambda r: finished.append(r.name)
    )
    names = [s.name for s in scenarios]
    assert [r.name for r in run.scenarios] == names
    assert [r.seed for r in run.scenarios] == list(range(count))
    assert [r.status for r in run.scenarios] == ["passed"] * count, run.scenarios[0].error
    assert [len(r.conversation.replies()) for r in run.scenarios if r.conversation] == [1] * count
    assert channel.most_open == concurrency
    if concurrency == 1:
        assert finished == names
    else:
        assert sorted(finished) == names
        assert finished[-1] == "s0"
    assert len({s.setup.namespace for s in channel.sessions}) == count
    assert (run.target, run.channel, run.seed) == (TARGET, "fake", 3)
    assert run.ok
    assert run.passed == count


async def test_the_runners_seed_is_used_when_the_scenario_has_none() -> None:
    result, channel, _ = await _run("steps:\n  - say: hi\n", seed=11)
    assert result.seed == channel.session.setup.seed == 11


async def test_against_a_url_scenarios_run_one_at_a_time_without_a_factory() -> None:
    channel = FakeChannel()
    runner = _runner(channel, target=None, target_url="http://127.0.0.1:9/webhook", concurrency=5)
    assert runner.factory is None
    assert runner.target == "http://127.0.0.1:9/webhook"
    scenarios = [parse_scenario(f"name: s{i}\nsteps:\n  - say: hi\n") for i in range(3)]
    run = await runner.run(scenarios)
    assert [r.status for r in run.scenarios] == ["passed"] * 3
    assert channel.most_open == 1
    assert {s.setup.target_url for s in channel.sessions} == {"http://127.0.0.1:9/webhook"}
    assert {s.setup.agent_factory for s in channel.sessions} == {None}


async def test_run_scenario_alone_binds_the_invariants_itself() -> None:
    channel = FakeChannel()
    scenario = parse_scenario("invariants: [every_inbound_answered]\nsteps:\n  - say: silence\n")
    result = await _runner(channel).run_scenario(scenario)
    assert [v.rule for v in result.violations] == ["every_inbound_answered"]
    assert result.channel == "fake"


# -- configuration -------------------------------------------------------------------


async def test_bad_invariant_parameters_raise_before_anything_runs() -> None:
    channel = FakeChannel()
    good = parse_scenario("steps:\n  - say: hi\n")
    bad = parse_scenario(
        "invariants:\n  - one_reply_per_burst: {max_replies: 0}\nsteps:\n  - say: hi\n"
    )
    message = r"^<scenario>:2: invariants\[0\]: invariant 'one_reply_per_burst': parameter 'max_"
    with pytest.raises(ScenarioError, match=message):
        await _runner(channel).run([good, bad])
    assert channel.sessions == []


def test_concurrency_below_one_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"^--concurrency must be at least 1, not 0$"):
        _runner(FakeChannel(), concurrency=0)


def test_target_and_target_url_together_are_refused() -> None:
    with pytest.raises(ConfigError, match="give --target or --target-url, not both"):
        _runner(FakeChannel(), target_url="http://127.0.0.1:9/")


def test_an_unknown_channel_lists_the_known_ones() -> None:
    fake = FakeChannel().plugin
    with pytest.raises(ConfigError) as given:
        Runner(RunOptions(channel="telegram", target=TARGET), plugins={"fake": fake})
    assert str(given.value) == "--channel 'telegram': unknown channel (fake)"
    with pytest.raises(ConfigError) as installed:
        Runner(RunOptions(channel="telegram", target=TARGET))
    assert str(installed.value) == "--channel 'telegram': unknown channel (direct, whatsapp)"
    with pytest.raises(ConfigError, match=r"unknown channel \(none installed\)"):
        Runner(RunOptions(channel="fake", target=TARGET), plugins={})


def test_without_a_target_the_reference_agent_is_run() -> None:
    from agents.booking import agent_factory

    runner = Runner(RunOptions(channel="fake"), plugins={"fake": FakeChannel().plugin})
    assert runner.factory is agent_factory
    assert runner.target == DEFAULT_TARGET


def test_load_target_imports_the_factory() -> None:
    assert load_target(TARGET) is fake_agent_factory


@pytest.mark.parametrize(
    ("path", "message"),
    [
        pytest.param(
            "tests.harness.suites.test_runner",
            "--target 'tests.harness.suites.test_runner': expected package.module:attribute",
            id="no-colon",
        ),
        pytest.param(
            ":fake_agent_factory",
            "--target ':fake_agent_factory': expected package.module:attribute",
            id="no-module",
        ),
        pytest.param(
            "tests.harness.suites.test_runner:",
            "--target 'tests.harness.suites.test_runner:': expected package.module:attribute",
            id="no-attribute",
        ),
        pytest.param(
            "tests.harness.no_such_module:factory",
            "--target 'tests.harness.no_such_module:factory': can't import "
            "tests.harness.no_such_module: No module named 'tests.harness.no_such_module'",
            id="missing-module",
        ),
        pytest.param(
            "tests.harness.suites.test_runner:no_such_factory",
            "--target 'tests.harness.suites.test_runner:no_such_factory': "
            "tests.harness.suites.test_runner has no 'no_such_factory'",
            id="missing-attribute",
        ),
        pytest.param(
            "tests.harness.suites.test_runner:NOT_CALLABLE",
            "--target 'tests.harness.suites.test_runner:NOT_CALLABLE': "
            "NOT_CALLABLE is not callable",
            id="not-callable",
        ),
    ],
)
def test_load_target_errors_are_one_line(path: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_target(path)
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)
    # Nothing chained: the command line shows this line and no traceback.
    assert caught.value.__cause__ is None
    assert caught.value.__context__ is None or caught.value.__suppress_context__
    with pytest.raises(ConfigError, match=r"^--target "):
        Runner(RunOptions(channel="fake", target=path), plugins={"fake": FakeChannel().plugin})


def test_settings_from_writes_every_value_as_text() -> None:
    agent: dict[str, Any] = {
        "on": True,
        "off": False,
        "regressions": ["no_dedupe", "ignore_window"],
        "pair": ("a", 1),
        "none": [],
        "tables": 3,
        "ratio": 0.5,
        "name": "Casa Lucia",
    }
    assert settings_from(agent) == {
        "on": "true",
        "off": "false",
        "regressions": "no_dedupe,ignore_window",
        "pair": "a,1",
        "none": "",
        "tables": "3",
        "ratio": "0.5",
        "name": "Casa Lucia",
    }
    assert settings_from({}) == {}
