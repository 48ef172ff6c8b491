"""With several users in one conversation, the agent's model and tool calls name their user."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.acting import acting_for
from harness.suites.runner import Runner, RunOptions
from harness.suites.scenario import load_scenario
from harness.tape import RecordMode
from harness.tool_recorder import ToolRecorder
from harness.trace import LLMExchange, ToolCall

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "booking" / "cancel_booking.yaml"


@pytest.mark.parametrize("channel", ["whatsapp", "direct"])
async def test_each_tool_and_model_call_carries_the_user_it_served(channel: str) -> None:
    result = await Runner(RunOptions(channel=channel)).run_scenario(load_scenario(SCENARIO))
    assert result.status == "passed", [v.headline() for v in result.violations]
    conversation = result.conversation
    assert conversation is not None
    calls = [e for e in conversation.events if isinstance(e, ToolCall | LLMExchange)]
    assert calls
    assert all(e.user is not None for e in calls)
    users = {t.user for t in conversation.turns}
    assert len(users) == 2
    for turn in conversation.turns:
        assert all(call.user == turn.user for call in turn.tool_calls)


async def test_acting_for_names_the_user_and_restores_the_one_before() -> None:
    seen: list[str | None] = []
    tools = ToolRecorder(RecordMode.PASSTHROUGH, sink=lambda e: seen.append(e.user))
    tools.register("ping", lambda: "pong", side_effect=False)
    with acting_for("ana"):
        await tools.call("ping")
        with acting_for("bo"):
            await tools.call("ping")
        await tools.call("ping")
    await tools.call("ping")
    assert seen == ["ana", "bo", "ana", None]
