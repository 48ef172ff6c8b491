"""A bot that blocks an abusive user, run as scenarios: in-process and at a URL.

The bot (``tests/bots/moderator.py``) says goodbye to a user who insults it,
then blocks them through Meta's Block Users API. The scenario checks with
``expect: {blocked: ...}`` that it did, and the trace shows the user's next
message dropped, never delivered.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from starlette.applications import Starlette

from channels.whatsapp.config import SimulatorConfig
from harness.channel import AgentEnvironment
from harness.results import ScenarioResult
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import Scenario, parse_scenario
from harness.trace import BlockChange, DroppedMessage, InboundMessage
from tests.bots import moderator
from tests.bots.loopback import free_port, serve_in_process

HERE = "tests.integration.test_blocking"
DEFAULTS = SimulatorConfig()


def _factory(**extra: str) -> Callable[[AgentEnvironment], Starlette]:
    def build(env: AgentEnvironment) -> Starlette:
        return moderator.create_app({**env.settings, **extra}, client=env.http_client)

    return build


moderator_bot = _factory()
careless_bot = _factory(BOT_NO_BLOCK="1")

ABUSE = parse_scenario(
    """
name: an abusive user is blocked
users:
  - {name: Ana, wa_id: "5511987654321"}
steps:
  - say: hello
  - expect: {reply_contains: "You said: hello", blocked: false}
  - say: you idiot
  - expect: {reply_contains: Goodbye, blocked: true}
  - say: are you still there?
  - expect: {replies: 0, blocked: true}
invariants: [sends_valid, every_inbound_answered]
"""
)


async def _in_process(factory: str, scenario: Scenario) -> ScenarioResult:
    run = await Runner(RunOptions(target=f"{HERE}:{factory}", concurrency=1)).run([scenario])
    return run.scenarios[0]


def _checks(result: ScenarioResult) -> None:
    assert result.status == "passed", [v.headline() for v in result.violations] or result.error
    conversation = result.conversation
    assert conversation is not None
    user = conversation.participants[0].id
    said = [e.text for e in conversation.events if isinstance(e, InboundMessage)]
    assert said == ["hello", "you idiot"]
    [dropped] = [e for e in conversation.events if isinstance(e, DroppedMessage)]
    assert (dropped.user, dropped.text) == (user, "are you still there?")
    [block] = [e for e in conversation.events if isinstance(e, BlockChange)]
    assert (block.user, block.blocked, block.error) == (user, True, None)
    assert [r.text for r in conversation.replies()] == ["You said: hello", "Goodbye."]


async def test_in_process_the_blocked_users_next_message_never_reaches_the_bot() -> None:
    _checks(await _in_process("moderator_bot", ABUSE))


async def test_a_bot_that_never_blocks_fails_the_expectation_naming_the_user() -> None:
    result = await _in_process("careless_bot", ABUSE)
    assert result.status == "failed"
    messages = [v.message for v in result.violations]
    assert messages == [
        "the agent has not blocked Ana",
        "expected 0 replies, got 1",  # the message came through, and was answered
        "the agent has not blocked Ana",
    ]
    assert all(v.kind == "expectation" for v in result.violations)
    conversation = result.conversation
    assert conversation is not None
    assert not [e for e in conversation.events if isinstance(e, DroppedMessage)]


NOT_BLOCKED = parse_scenario(
    """
name: a polite user stays unblocked, or not
users: [{name: Ana, wa_id: "5511987654321"}]
steps:
  - say: you are stupid
  - expect: {blocked: false}
"""
)


async def test_expecting_no_block_fails_when_the_bot_blocks() -> None:
    result = await _in_process("moderator_bot", NOT_BLOCKED)
    assert [v.message for v in result.violations] == ["the agent has blocked Ana"]
    assert result.violations[0].events  # it points at the block in the trace


@pytest.mark.network
async def test_at_a_url_the_block_reaches_the_scenarios_simulator() -> None:
    graph_port = free_port()
    settings = {
        "WHATSAPP_ACCESS_TOKEN": DEFAULTS.access_token,
        "WHATSAPP_PHONE_NUMBER_ID": DEFAULTS.phone_number_id,
        "WHATSAPP_GRAPH_URL": f"http://127.0.0.1:{graph_port}",
    }
    async with serve_in_process(moderator.create_app(settings)) as url:
        options = RunOptions(
            target_url=f"{url}/webhook",
            channel_options={"graph_url": f"http://127.0.0.1:{graph_port}", "serve_graph": True},
            quiet=0.6,
            expect_timeout=5.0,
            concurrency=2,
        )
        run = await Runner(options).run([ABUSE, ABUSE])
    for result in run.scenarios:
        _checks(result)
    users = {r.conversation.participants[0].id for r in run.scenarios if r.conversation}
    assert len(users) == 2  # each scenario blocked its own user, through one Graph API
