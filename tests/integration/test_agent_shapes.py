"""Bots of every shape give the same, causal turns, in-process, at a URL and in another process.

The bots (``tests/bots``) are written as third parties write them: one
replies inside its webhook handler, one after its 200, one after a debounce
on real time, one answers every fragment of a burst, one says "One moment...",
shows the typing indicator and thinks for a second before it answers, and a
pizza bot dedupes redeliveries (or, with ``PIZZA_NO_DEDUPE=1``, does not). None of them uses
anything of the harness: in-process each gets the simulator's HTTP client and
nothing else.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from starlette.applications import Starlette

from channels.whatsapp.config import SimulatorConfig
from harness.channel import AgentEnvironment
from harness.results import ScenarioResult
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import Scenario, parse_scenario
from harness.trace import Conversation
from tests.bots import background, debounce, inline, per_fragment, pizza, thinking
from tests.bots.loopback import free_port, serve_in_process, started_process

HERE = "tests.integration.test_agent_shapes"
DEFAULTS = SimulatorConfig()


def _factory(module: ModuleType, **extra: str) -> Callable[[AgentEnvironment], Starlette]:
    """A third-party bot built in-process: its settings, and the simulator's client."""

    def build(env: AgentEnvironment) -> Starlette:
        app: Starlette = module.create_app({**env.settings, **extra}, client=env.http_client)
        return app

    return build


inline_bot = _factory(inline)
background_bot = _factory(background, BOT_REPLY_DELAY_SECONDS="0.2")
# Marks each message read, with "typing...", at once, then answers it 0.3 s later.
MARKS_READ = {"BOT_MARK_READ": "1", "BOT_REPLY_DELAY_SECONDS": "0.3"}
reading_bot = _factory(background, **MARKS_READ)
debounce_bot = _factory(debounce, BOT_DEBOUNCE_SECONDS="0.3")
per_fragment_bot = _factory(per_fragment)
pizza_bot = _factory(pizza)
careless_pizza_bot = _factory(pizza, PIZZA_NO_DEDUPE="1")
# Longer than the runner's quiet window at a URL (0.6 s): only the typing indicator says
# the bot is still at work.
THINKING = {"BOT_HOLDING": "One moment...", "BOT_THINK_SECONDS": "1.0"}
thinking_bot = _factory(thinking, **THINKING)
# The same, its model a synchronous SDK called through asyncio.to_thread: the loop is idle.
thread_thinking_bot = _factory(thinking, **THINKING, BOT_THINK_IN="thread")

TWO_TURNS = parse_scenario(
    """
name: two messages, two answers
users:
  - {name: Ana, wa_id: "5511987654321"}
steps:
  - say: hello there
  - expect: {reply_contains: hello there}
  - say: a second message
  - expect: {reply_contains: a second message}
invariants: [every_inbound_answered, one_reply_per_burst, sends_valid]
"""
)

BURST = parse_scenario(
    """
name: a burst of three quick messages
users:
  - {name: Ana, wa_id: "5511987654321"}
steps:
  - say: [I would like, a large one, with olives]
    gap: 0.1s
  - expect: {reply_contains: olives}
invariants: [one_reply_per_burst, every_inbound_answered]
"""
)

PIZZA = parse_scenario(
    """
name: a redelivered confirmation orders once
users:
  - {name: Ana, wa_id: "5511987654321"}
steps:
  - say: hi
  - expect: {reply_contains: size}
  - say: large
  - expect: {reply_contains: place the order}
  - tap: confirm
  - expect: {reply_contains: "placed: one large pizza"}
  - redeliver: last
  - expect: {replies: 0}
invariants: [every_inbound_answered, sends_valid]
"""
)


HOLDING = parse_scenario(
    """
name: a holding message, then the answer
users:
  - {name: Ana, wa_id: "5511987654321"}
steps:
  - say: hello there
  - expect: {reply_contains: One moment}
  - say: a second message
  - expect: {reply_contains: a second message}
invariants: [every_inbound_answered, sends_valid]
"""
)


def _bot_settings(graph_url: str, **extra: str) -> dict[str, str]:
    return {
        "WHATSAPP_APP_SECRET": DEFAULTS.app_secret,
        "WHATSAPP_VERIFY_TOKEN": DEFAULTS.verify_token,
        "WHATSAPP_ACCESS_TOKEN": DEFAULTS.access_token,
        "WHATSAPP_PHONE_NUMBER_ID": DEFAULTS.phone_number_id,
        "WHATSAPP_GRAPH_URL": graph_url,
        **extra,
    }


def _at_url(url: str, graph_port: int, **options: Any) -> RunOptions:
    return RunOptions(
        target_url=f"{url}/webhook",
        channel_options={"graph_url": f"http://127.0.0.1:{graph_port}", "serve_graph": True},
        quiet=0.6,
        expect_timeout=5.0,
        **options,
    )


async def _in_process(factory: str, scenario: Scenario) -> ScenarioResult:
    run = await Runner(RunOptions(target=f"{HERE}:{factory}", concurrency=1)).run([scenario])
    return run.scenarios[0]


@asynccontextmanager
async def _served(module: ModuleType, **extra: str) -> AsyncIterator[tuple[str, int]]:
    """The bot on a loopback port of this process, sending to a Graph API port to be served."""
    graph_port = free_port()
    app = module.create_app(_bot_settings(f"http://127.0.0.1:{graph_port}", **extra))
    async with serve_in_process(app) as url:
        yield url, graph_port


async def _at(module: ModuleType, scenario: Scenario, **extra: str) -> ScenarioResult:
    async with _served(module, **extra) as (url, graph_port):
        run = await Runner(_at_url(url, graph_port)).run([scenario])
    return run.scenarios[0]


def _shape(conversation: Conversation | None) -> list[tuple[list[str], list[str]]]:
    """Each turn as (what the user wrote, what the agent replied), in trace order."""
    assert conversation is not None
    return [
        ([m.text or "" for m in turn.messages], [r.text or "" for r in turn.replies])
        for turn in conversation.turns
    ]


def _ok(result: ScenarioResult) -> None:
    assert result.status == "passed", [v.headline() for v in result.violations] or result.error


EXPECTED_TWO_TURNS = [
    (["hello there"], ["You said: hello there"]),
    (["a second message"], ["You said: a second message"]),
]


@pytest.mark.parametrize("factory", ["inline_bot", "background_bot"])
async def test_in_process_a_reply_comes_after_the_message_it_answers(factory: str) -> None:
    result = await _in_process(factory, TWO_TURNS)
    _ok(result)
    assert _shape(result.conversation) == EXPECTED_TWO_TURNS
    events = result.conversation.events if result.conversation else ()
    kinds = [e.kind for e in events if e.kind in ("inbound", "send")]
    assert kinds == ["inbound", "send", "inbound", "send"]


@pytest.mark.network
@pytest.mark.parametrize("module", [inline, background], ids=["inline", "background"])
async def test_at_a_url_the_turns_are_the_same(module: ModuleType) -> None:
    extra = {"BOT_REPLY_DELAY_SECONDS": "0.2"} if module is background else {}
    result = await _at(module, TWO_TURNS, **extra)
    _ok(result)
    assert _shape(result.conversation) == EXPECTED_TWO_TURNS


@pytest.mark.network
async def test_a_bot_in_another_process_gives_the_same_turns() -> None:
    graph_port = free_port()
    env = _bot_settings(f"http://127.0.0.1:{graph_port}")
    async with started_process("tests.bots.inline", env=env) as (url, _process):
        run = await Runner(_at_url(url, graph_port)).run([TWO_TURNS])
    _ok(run.scenarios[0])
    assert _shape(run.scenarios[0].conversation) == EXPECTED_TWO_TURNS


EXPECTED_HOLDING = [
    (["hello there"], ["One moment...", "You said: hello there"]),
    (["a second message"], ["One moment...", "You said: a second message"]),
]


@pytest.mark.parametrize("factory", ["thinking_bot", "thread_thinking_bot"])
async def test_in_process_a_bot_that_thinks_in_real_time_is_waited_for(factory: str) -> None:
    result = await _in_process(factory, HOLDING)
    _ok(result)
    assert _shape(result.conversation) == EXPECTED_HOLDING


@pytest.mark.network
async def test_at_a_url_a_bot_showing_typing_is_waited_for_before_the_user_writes_again() -> None:
    # The user writes again once the bot has finished with the first message: its holding
    # message came at once, its answer a second later, with "typing..." up in between.
    result = await _at(thinking, HOLDING, **THINKING)
    _ok(result)
    assert _shape(result.conversation) == EXPECTED_HOLDING


async def test_in_process_a_debounce_on_real_time_answers_the_burst_once() -> None:
    result = await _in_process("debounce_bot", BURST)
    _ok(result)
    [turn] = result.conversation.turns if result.conversation else ()
    assert [m.text for m in turn.messages] == ["I would like", "a large one", "with olives"]
    assert len(turn.replies) == 1


@pytest.mark.network
async def test_at_a_url_a_debounce_answers_the_burst_once() -> None:
    result = await _at(debounce, BURST, BOT_DEBOUNCE_SECONDS="0.3")
    _ok(result)
    assert [len(t.replies) for t in result.conversation.turns] == [1]  # type: ignore[union-attr]


async def test_in_process_a_bot_answering_each_fragment_breaks_one_reply_per_burst() -> None:
    result = await _in_process("per_fragment_bot", BURST)
    assert result.status == "failed"
    assert [v.rule for v in result.violations] == ["one_reply_per_burst"]
    assert "a burst of 3 messages got 3 separate replies" in result.violations[0].message


@pytest.mark.network
async def test_at_a_url_a_bot_answering_each_fragment_breaks_one_reply_per_burst() -> None:
    result = await _at(per_fragment, BURST)
    assert result.status == "failed"
    assert [v.rule for v in result.violations] == ["one_reply_per_burst"]


async def test_in_process_receipts_for_each_fragment_do_not_split_the_burst() -> None:
    # Each fragment is marked read as it comes and answered on its own later: three
    # replies to one burst (one_reply_per_burst), but every fragment was answered.
    result = await _in_process("reading_bot", BURST)
    assert [v.rule for v in result.violations] == ["one_reply_per_burst"]
    assert [len(t.messages) for t in result.conversation.turns] == [3]  # type: ignore[union-attr]


@pytest.mark.network
async def test_at_a_url_receipts_for_each_fragment_do_not_split_the_burst() -> None:
    result = await _at(background, BURST, **MARKS_READ)
    assert [v.rule for v in result.violations] == ["one_reply_per_burst"]
    assert [len(t.messages) for t in result.conversation.turns] == [3]  # type: ignore[union-attr]


async def test_in_process_a_pizza_bot_that_dedupes_orders_once() -> None:
    _ok(await _in_process("pizza_bot", PIZZA))


async def test_in_process_a_pizza_bot_that_does_not_dedupe_is_caught() -> None:
    result = await _in_process("careless_pizza_bot", PIZZA)
    assert result.status == "failed"
    [violation] = result.violations
    assert violation.message == "expected 0 replies, got 1"
    # The failure shows the redelivered copy the bot answered, then its answer.
    assert violation.messages == (
        "[turn 3] user Ana (redelivered): Confirm [button confirm]",
        "[turn 3] agent mark_read",
        "[turn 3] agent: Order #2 placed: one large pizza.",
    )


@pytest.mark.network
@pytest.mark.parametrize("careless", [False, True], ids=["dedupes", "does-not-dedupe"])
async def test_at_a_url_the_pizza_bots_dedupe_is_judged(careless: bool) -> None:
    extra = {"PIZZA_NO_DEDUPE": "1"} if careless else {}
    result = await _at(pizza, PIZZA, **extra)
    if careless:
        assert [v.message for v in result.violations] == ["expected 0 replies, got 1"]
    else:
        _ok(result)


async def test_a_tool_check_over_a_bot_that_reports_no_tools_does_not_pass() -> None:
    # The pizza bot orders twice without its dedupe, but reports no tool calls:
    # a tool invariant must say it can't check, never pass on an empty list.
    scenario = PIZZA.model_copy(
        update={"invariants": (*PIZZA.invariants, *parse_scenario(_TOOL_CHECKS).invariants)}
    )
    result = await _in_process("careless_pizza_bot", scenario)
    unobserved = [v for v in result.violations if "can't be checked" in v.message]
    assert sorted(v.rule for v in unobserved) == [
        "action_only_after_confirmation",
        "no_repeated_side_effects",
    ]


_TOOL_CHECKS = """
name: tool checks
users: [{name: Ana, wa_id: "5511987654321"}]
steps: [{say: hi}]
invariants:
  - no_repeated_side_effects
  - action_only_after_confirmation: {tool: place_order, button: confirm}
"""


@pytest.mark.network
async def test_concurrent_scenarios_at_one_url_keep_their_users_apart() -> None:
    async with _served(pizza) as (url, graph_port):
        options = _at_url(url, graph_port, concurrency=4)
        run = await Runner(options).run([PIZZA] * 4)
    assert [r.status for r in run.scenarios] == ["passed"] * 4, [
        v.headline() for r in run.scenarios for v in r.violations
    ]
    users = {r.conversation.participants[0].wa_id for r in run.scenarios if r.conversation}
    assert len(users) == 4  # each scenario had numbers of its own


LATE = parse_scenario(
    """
name: the user writes and leaves
users: [{name: Ana, wa_id: "5511987654321"}]
steps:
  - say: anyone there?
"""
)

WAITS = parse_scenario(
    """
name: another user waits a while
users: [{name: Bo, wa_id: "4915112345678"}]
steps:
  - say: hello
  - expect: {reply_contains: hello}
  - wait: 2s
"""
)


@pytest.mark.network
async def test_a_reply_after_its_scenario_ended_is_late_on_that_scenario_only() -> None:
    async with _served(background, BOT_REPLY_DELAY_SECONDS="1.2") as (url, graph_port):
        options = _at_url(url, graph_port, concurrency=2)
        options = RunOptions(**{**options.__dict__, "quiet": 0.3})
        shown: list[tuple[str, str]] = []
        run = await Runner(options).run(
            [LATE, WAITS],
            on_result=lambda r: shown.append((r.name, r.status)),
            on_revised=lambda before, after: shown.append((after.name, f"now {after.status}")),
        )
    late, waited = run.scenarios
    # Reported as it ended, then told again once the late send made it fail.
    assert sorted(shown) == sorted(
        [(late.name, "passed"), (waited.name, "passed"), (late.name, "now failed")]
    )
    assert shown[-1] == (late.name, "now failed")
    assert [v.rule for v in late.violations] == ["late"]
    assert "You said: anyone there?" in late.violations[0].message
    _ok(waited)
    assert [r.text for r in waited.conversation.replies()] == ["You said: hello"]  # type: ignore[union-attr]


def test_each_scenario_gets_numbers_of_its_own_with_the_same_shape() -> None:
    from harness.channel import UserSpec
    from harness.suites.realtime import distinct_user

    ana = UserSpec("Ana", "5511987654321", "BR.1234567890")
    first, again, other = (
        distinct_user(ana, "run:0"),
        distinct_user(ana, "run:0"),
        distinct_user(ana, "run:1"),
    )
    assert first == again
    assert first != other
    assert first.wa_id is not None
    assert first.wa_id.startswith("55")
    assert len(first.wa_id) == 13
    assert first.bsuid is not None
    assert first.bsuid.startswith("BR.")
    assert distinct_user(UserSpec("Bo", "4915112345678"), "run:0").bsuid is not None


SLOW_COUNTED = parse_scenario(
    """
name: a count of replies from an agent slower than the quiet window
steps:
  - say: hello there
  - expect: {replies: 1}
  - say: a second message
  - expect: {replies: 1}
"""
)


@pytest.mark.network
async def test_at_a_url_a_count_of_replies_waits_for_them_before_judging_at_quiet() -> None:
    # The bot thinks 1.5 s, without "typing...", past the 0.6 s quiet window: the count is of
    # what must come, so it is waited for (up to the expect timeout), then judged at quiet.
    result = await _at(background, SLOW_COUNTED, BOT_REPLY_DELAY_SECONDS="1.5")
    _ok(result)
    assert _shape(result.conversation) == EXPECTED_TWO_TURNS


@pytest.mark.network
async def test_a_replay_at_a_url_lets_the_agent_answer_before_the_user_writes_again(
    tmp_path: Path,
) -> None:
    from harness.fixture import load_fixture
    from harness.replay.playback import replay_fixture
    from harness.replay.record import record_scenario

    out = tmp_path / "two_turns"
    recorded = await record_scenario(
        Runner(RunOptions(target=f"{HERE}:inline_bot", concurrency=1)), TWO_TURNS, out
    )
    _ok(recorded)
    # The same conversation replayed against a bot in its own server, answering 0.8 s after
    # its 200: the second message waits until it has answered the first, as in a run.
    async with _served(background, BOT_REPLY_DELAY_SECONDS="0.8") as (url, graph_port):
        options = _at_url(url, graph_port)
        options = RunOptions(**{**options.__dict__, "quiet": 1.5})
        result = await replay_fixture(Runner(options), load_fixture(out))
    assert result.status == "same", (result.error, result.changes)
    assert _shape(result.conversation) == EXPECTED_TWO_TURNS
