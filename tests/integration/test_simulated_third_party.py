"""A simulated user against a bot the harness knows nothing of.

The pizza bot (``tests/bots/pizza.py``) is written as a third party writes
one: its own wording, reply buttons it names itself, an order list it keeps.
The simulated user has to read what the phone shows (the question, then the
two buttons), answer from its agenda, and tap the button that completes its
goal; the bot must end with exactly one order, of the size the user asked for.
"""

from __future__ import annotations

import httpx
import pytest
from starlette.applications import Starlette

from harness.channel import AgentEnvironment
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import parse_scenario
from tests.bots import pizza
from tests.bots.loopback import free_port, started_process
from tests.integration.test_agent_shapes import _at_url, _bot_settings, _ok

SIMULATED_ORDER = parse_scenario(
    """
name: a simulated customer orders a pizza
seed: 3
users:
  - {name: Ana, wa_id: "5511987654321"}
steps:
  - simulate:
      persona: Ana, hungry, writes short messages.
      goal: order one large pizza and confirm it
      max_turns: 8
      stop_when: {reply_contains: placed}
      agenda:
        - hi, I want a pizza
        - large
      behaviour: {fragments: 0.0, typos: 0.0, taps: 1.0}
invariants: [every_inbound_answered, sends_valid]
"""
)

#: The order list of each pizza bot built in-process, in the order they were built.
BUILT: list[list[dict[str, object]]] = []


def pizza_bot(env: AgentEnvironment) -> Starlette:
    """The bot built in-process with the simulator's client; its order list kept in ``BUILT``."""
    app: Starlette = pizza.create_app(env.settings, client=env.http_client)
    BUILT.append(app.state.orders)
    return app


async def test_in_process_the_simulated_user_orders_once() -> None:
    BUILT.clear()
    run = await Runner(RunOptions(target=f"{__name__}:pizza_bot", concurrency=1)).run(
        [SIMULATED_ORDER]
    )
    result = run.scenarios[0]
    _ok(result)
    [orders] = BUILT
    assert [o["size"] for o in orders] == ["large"]
    assert result.simulated[-1] == "tap: Confirm"


@pytest.mark.network
async def test_at_a_url_in_another_process_the_simulated_user_orders_once() -> None:
    graph_port = free_port()
    env = _bot_settings(f"http://127.0.0.1:{graph_port}")
    async with started_process("tests.bots.pizza", env=env) as (url, _process):
        run = await Runner(_at_url(url, graph_port)).run([SIMULATED_ORDER])
        async with httpx.AsyncClient() as client:
            orders = (await client.get(f"{url}/orders")).json()["orders"]
    result = run.scenarios[0]
    _ok(result)
    assert result.conversation is not None
    [user] = result.conversation.participants
    assert orders == [{"id": 1, "user": user.wa_id, "size": "large"}]
    assert result.simulated[-1] == "tap: Confirm"
