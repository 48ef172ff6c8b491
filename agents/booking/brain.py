"""The Messages-API tool loop: ask the model, run the tools it asks for, repeat.

:class:`Brain` sends the system prompt, the conversation and the tool
schemas to an :class:`~harness.llm.LLMClient`, runs each ``tool_use`` block
through a :class:`~harness.recorder.ToolRecorder` (so the harness can record
or replay the tools), appends the ``tool_result`` blocks and asks again,
until the model answers with text or the round limit is reached.

A :class:`ToolPolicy` sees every call before it runs: it can add arguments
(the agent adds ``customer``) or answer in the tool's place. The booking
agent's confirmation gate is such a policy: an unconfirmed
``book_appointment`` never reaches the calendar, and so never shows up as
a side-effecting tool call in the trace.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agents.booking.tools import TOOL_SCHEMAS
from harness.clock import Clock
from harness.exceptions import Divergence, UnknownTool
from harness.llm import LLMClient, SystemPrompt, ToolUseBlock
from harness.tape import RecordMode
from harness.tool_recorder import ToolRecorder
from harness.trace import ToolCall

__all__ = ["FALLBACK_TEXT", "Brain", "BrainResult", "ToolDecision", "ToolPolicy"]

_log = logging.getLogger(__name__)

#: What the customer reads when the model gave no usable answer.
FALLBACK_TEXT = "Sorry, I got a bit lost there. Could you tell me again what you'd like to book?"


@dataclass(frozen=True)
class ToolDecision:
    """What to do with one tool call: run it with ``args``, or answer ``result`` instead."""

    args: dict[str, Any]
    result: dict[str, Any] | None = None


class ToolPolicy(Protocol):
    """Sees each tool call before and after it runs."""

    async def before(self, name: str, args: dict[str, Any]) -> ToolDecision:
        """Adjust the arguments, or answer in the tool's place."""
        ...

    async def after(self, name: str, args: dict[str, Any], result: Any, error: str | None) -> None:
        """Learn what the tool answered (``error`` is set when it failed)."""
        ...


@dataclass(frozen=True)
class BrainResult:
    """The model's final text, the messages the loop added, and the tools that ran."""

    text: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    rounds: int = 0
    exhausted: bool = False


class Brain:
    """Runs the tool loop for one turn; holds no per-user state of its own."""

    def __init__(
        self,
        llm: LLMClient,
        tools: ToolRecorder,
        clock: Clock,
        *,
        model: str,
        max_tokens: int = 1024,
        max_rounds: int = 8,
        schemas: Sequence[Mapping[str, Any]] = TOOL_SCHEMAS,
    ) -> None:
        self.llm = llm
        self.tools = tools
        self.clock = clock
        self.model = model
        self.max_tokens = max_tokens
        self.max_rounds = max_rounds
        self.schemas = [dict(schema) for schema in schemas]

    async def run(
        self,
        *,
        system: SystemPrompt,
        messages: Sequence[Mapping[str, Any]],
        user: str | None = None,
        policy: ToolPolicy | None = None,
    ) -> BrainResult:
        """Answer the conversation ``messages`` (ending with the user's turn).

        LLM errors propagate; tool errors go back to the model as
        ``is_error`` results, except a replay :class:`~harness.exceptions.Divergence`,
        which the harness must see.
        """
        added: list[dict[str, Any]] = []
        calls: list[ToolCall] = []
        for round_number in range(1, self.max_rounds + 1):
            response = await self.llm.create(
                model=self.model,
                system=system,
                messages=[*messages, *added],
                tools=self.schemas,
                max_tokens=self.max_tokens,
            )
            uses = response.tool_uses
            if not uses:
                text = response.text.strip()
                if not text:
                    text = FALLBACK_TEXT
                added.append({"role": "assistant", "content": [{"type": "text", "text": text}]})
                return BrainResult(text, added, calls, round_number)
            added.append(response.as_message())
            results = [await self._run_tool(use, user, policy, calls) for use in uses]
            added.append({"role": "user", "content": results})
        _log.warning("the model asked for tools %d times in a row; giving up", self.max_rounds)
        added.append({"role": "assistant", "content": [{"type": "text", "text": FALLBACK_TEXT}]})
        return BrainResult(FALLBACK_TEXT, added, calls, self.max_rounds, exhausted=True)

    async def _run_tool(
        self,
        use: ToolUseBlock,
        user: str | None,
        policy: ToolPolicy | None,
        calls: list[ToolCall],
    ) -> dict[str, Any]:
        args = dict(use.input)
        decision = await policy.before(use.name, args) if policy else ToolDecision(args)
        if decision.result is not None:
            return _tool_result(use.id, decision.result)
        result: Any = None
        error: str | None = None
        try:
            result = await self.tools.call(use.name, decision.args)
        except Divergence:
            raise
        except UnknownTool:
            error = f"there is no tool called {use.name!r}"
        except Exception as exc:  # a failing tool is reported to the model, not to the user
            error = str(exc) or type(exc).__name__
        calls.append(
            ToolCall(
                at=self.clock.now(),
                user=user,
                name=use.name,
                args=_json(decision.args),
                result=_json(result),
                error=error,
                side_effect=use.name in self.tools.tools()
                and self.tools.is_side_effecting(use.name),
                source="recorded" if self.tools.mode is RecordMode.REPLAY else "live",
            )
        )
        if policy is not None:
            await policy.after(use.name, decision.args, result, error)
        if error is not None:
            return _tool_result(use.id, {"error": error}, is_error=True)
        return _tool_result(use.id, result)


def _json(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _tool_result(tool_use_id: str, value: Any, *, is_error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": json.dumps(value, sort_keys=True, default=str),
    }
    if is_error:
        block["is_error"] = True
    return block
