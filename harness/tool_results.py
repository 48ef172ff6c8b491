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

The same reading shows which tools an agent ran (:func:`answered_calls`):
a result carried back to the model is a call the agent made, with the
arguments the model asked for, so an agent whose model calls come through
the harness has its tool calls seen without any instrumentation.

Both wire shapes are read: Anthropic's (a ``tool_use`` block in an
assistant message, a ``tool_result`` block answering its id) and OpenAI's
chat completions (an assistant's ``tool_calls``, a ``tool`` message
answering its id).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["SET_ASIDE", "AnsweredCall", "ToolResult", "answered_calls", "set_aside"]

#: What stands in for a result set aside.
SET_ASIDE: Final = "(a tool result the recording cannot answer: set aside)"


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One tool result a request carries: the tool's name and what it answered."""

    name: str
    content: Any


def _call_names(messages: list[Any]) -> dict[str, str]:
    """Each tool call id in ``messages`` and the name of the tool it called."""
    return {call: name for call, (name, _args) in _asked(messages).items()}


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


@dataclass(frozen=True, slots=True)
class AnsweredCall:
    """A tool call a request shows: the model asked for it, the agent gave back its result."""

    id: str
    name: str
    args: dict[str, Any]
    result: Any
    failed: bool = False


def _asked(messages: list[Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Each tool call id the model asked for in ``messages``, with its tool and arguments."""
    asked: dict[str, tuple[str, dict[str, Any]]] = {}
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        content = message.get("content")
        if isinstance(content, list):  # Anthropic: tool_use blocks
            for block in content:
                if isinstance(block, Mapping) and block.get("type") == "tool_use":
                    given = block.get("input")
                    args = dict(given) if isinstance(given, Mapping) else {"input": given}
                    asked[str(block.get("id"))] = (str(block.get("name")), args)
        for call in message.get("tool_calls") or ():  # OpenAI: arguments as JSON text
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping):
                raw = function.get("arguments")
                parsed = _parsed(raw)
                args = parsed if isinstance(parsed, dict) else {"arguments": raw}
                asked[str(call.get("id"))] = (str(function.get("name")), args)
    return asked


def _parsed(value: Any) -> Any:
    """A result as the tool gave it: JSON text read back, text blocks joined, else as it is."""
    if isinstance(value, list) and all(
        isinstance(b, Mapping) and b.get("type") == "text" for b in value
    ):
        value = "".join(str(b.get("text", "")) for b in value)
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def answered_calls(body: Mapping[str, Any], skip: Collection[str] = ()) -> list[AnsweredCall]:
    """Every tool call whose result ``body`` carries back to the model, in the request's order.

    A result whose call is not in the request (cut from the history) is left
    out: nothing says which tool gave it; so are the calls whose ids are in
    ``skip`` (seen in an earlier request of the conversation: each request
    carries the whole history again).
    """
    messages = body.get("messages")
    if not isinstance(messages, list):
        return []
    asked = _asked(messages)
    found: list[AnsweredCall] = []
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        if message.get("role") == "tool":  # OpenAI
            call = str(message.get("tool_call_id"))
            if call in asked and call not in skip:
                name, args = asked[call]
                found.append(AnsweredCall(call, name, args, _parsed(message.get("content"))))
            continue
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, Mapping) or block.get("type") != "tool_result":
                continue
            call = str(block.get("tool_use_id"))
            if call in asked and call not in skip:
                name, args = asked[call]
                result = _parsed(block.get("content"))
                found.append(AnsweredCall(call, name, args, result, bool(block.get("is_error"))))
    return found
