"""Tool results in a model request, and a request with some of them set aside.

An agent whose tools the harness does not answer (they run behind the
agent's own instrumentation, reported by OpenTelemetry spans, or are not
wrapped at all) runs them for real in a replay, and the world answers them
afresh: a booking service hands out the next booking id, a clock tells a
later time. The model request that carries such a result back to the model
then differs from the recorded one only inside that result, and a replay
that keyed on the whole request would diverge though the agent did nothing
differently. :func:`set_aside` blanks those results, so a replay can match
the request on everything the agent chose; the results themselves are kept
to say what the world answered differently.

Both wire shapes are read: Anthropic's (a ``tool_use`` block in an
assistant message, a ``tool_result`` block answering its id) and OpenAI's
chat completions (an assistant's ``tool_calls``, a ``tool`` message
answering its id).
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["SET_ASIDE", "ToolResult", "set_aside"]

#: What stands in for a result set aside.
SET_ASIDE: Final = "(a tool result the recording cannot answer: set aside)"


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One tool result a request carries: the tool's name and what it answered."""

    name: str
    content: Any


def _call_names(messages: list[Any]) -> dict[str, str]:
    """Each tool call id in ``messages`` and the name of the tool it called."""
    names: dict[str, str] = {}
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        content = message.get("content")
        if isinstance(content, list):  # Anthropic: tool_use blocks
            for block in content:
                if isinstance(block, Mapping) and block.get("type") == "tool_use":
                    names[str(block.get("id"))] = str(block.get("name"))
        for call in message.get("tool_calls") or ():  # OpenAI: an assistant's tool_calls
            if isinstance(call, Mapping):
                function = call.get("function")
                if isinstance(function, Mapping):
                    names[str(call.get("id"))] = str(function.get("name"))
    return names


def set_aside(
    body: Mapping[str, Any], answered: Collection[str]
) -> tuple[dict[str, Any], list[ToolResult]] | None:
    """``body`` with the results of tools not in ``answered`` blanked, and those results.

    None when the request carries no such result (there is nothing to set
    aside). A result whose tool call is not in the request is set aside too:
    nothing says the recording answers it.
    """
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    names = _call_names(messages)
    found: list[ToolResult] = []
    copied: list[Any] | None = None
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            continue
        if message.get("role") == "tool":  # OpenAI
            name = names.get(str(message.get("tool_call_id")), "")
            if name in answered:
                continue
            copied = copied if copied is not None else copy.deepcopy(messages)
            found.append(ToolResult(name, message.get("content")))
            copied[i]["content"] = SET_ASIDE
            continue
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for j, block in enumerate(content):
            if not isinstance(block, Mapping) or block.get("type") != "tool_result":
                continue
            name = names.get(str(block.get("tool_use_id")), "")
            if name in answered:
                continue
            copied = copied if copied is not None else copy.deepcopy(messages)
            found.append(ToolResult(name, block.get("content")))
            copied[i]["content"][j]["content"] = SET_ASIDE
    if copied is None:
        return None
    return {**body, "messages": copied}, found
