"""OpenAI's Chat Completions on the wire: what the model endpoint reads and writes.

An answer is kept as an :class:`~harness.llm.LLMResponse`, the shape every
recording shares: the assistant's text becomes a text block, each tool call
a tool_use block (its JSON arguments parsed into ``input``), and the finish
reason the stop reason Anthropic gives the same outcome (``stop`` is
``end_turn``, ``tool_calls`` is ``tool_use``, ``length`` is ``max_tokens``),
so invariants and reports read one vocabulary. Written back, the mapping is
reversed; a completion is answered as one JSON object or as
``chat.completion.chunk`` server-sent events ending in ``data: [DONE]``.
Only the first choice is kept (``n`` above 1 is answered with one choice).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from typing import Any, Final

from harness.llm import LLMResponse, TextBlock, ToolUseBlock, Usage

__all__ = [
    "check_openai_request",
    "openai_chunks",
    "openai_completion",
    "openai_error",
    "parse_openai_completion",
]

_TO_STOP: Final[Mapping[str, str]] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
_TO_FINISH: Final[Mapping[str, str]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}
# Arguments that are not a JSON object are kept whole under this name, and given back as they were.
_RAW_ARGUMENTS: Final = "__arguments__"
_PIECE: Final = 16
_ERROR_TYPES: Final[Mapping[int, str]] = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    404: "invalid_request_error",
    429: "rate_limit_exceeded",
    500: "server_error",
}


def check_openai_request(body: object) -> str | None:
    """What is wrong with a Chat Completions request body, in one line; None when usable."""
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    if not isinstance(body.get("model"), str):
        return "model: a string is required"
    if not isinstance(body.get("messages"), list):
        return "messages: a list is required"
    return None


def _arguments(raw: object) -> dict[str, Any]:
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {_RAW_ARGUMENTS: raw}


def parse_openai_completion(data: Mapping[str, Any]) -> LLMResponse:
    """A Chat Completions answer as an :class:`LLMResponse` (its first choice)."""
    choices = data.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], Mapping) else {}
    message = choice.get("message") if isinstance(choice.get("message"), Mapping) else {}
    assert isinstance(message, Mapping)
    content: list[TextBlock | ToolUseBlock] = []
    if isinstance(message.get("content"), str) and message["content"]:
        content.append(TextBlock(text=message["content"]))
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        content.append(
            ToolUseBlock(
                id=str(call.get("id", "")),
                name=str(function.get("name", "")),
                input=_arguments(function.get("arguments")),
            )
        )
    finish = choice.get("finish_reason")
    usage = data.get("usage") if isinstance(data.get("usage"), Mapping) else {}
    assert isinstance(usage, Mapping)
    return LLMResponse(
        id=str(data.get("id", "")),
        model=str(data.get("model", "")),
        content=tuple(content),
        stop_reason=_TO_STOP.get(finish, finish) if isinstance(finish, str) else None,
        usage=Usage(
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
        ),
    )


def _finish(response: LLMResponse) -> str | None:
    stop = response.stop_reason
    return _TO_FINISH.get(stop, stop) if stop is not None else None


def _tool_calls(response: LLMResponse) -> list[dict[str, Any]]:
    calls = []
    for use in response.tool_uses:
        raw = use.input.get(_RAW_ARGUMENTS) if set(use.input) == {_RAW_ARGUMENTS} else None
        arguments = raw if isinstance(raw, str) else json.dumps(use.input, ensure_ascii=False)
        calls.append(
            {
                "id": use.id,
                "type": "function",
                "function": {"name": use.name, "arguments": arguments},
            }
        )
    return calls


def _usage(response: LLMResponse) -> dict[str, int]:
    used = response.usage
    return {
        "prompt_tokens": used.input_tokens,
        "completion_tokens": used.output_tokens,
        "total_tokens": used.input_tokens + used.output_tokens,
    }


def openai_completion(response: LLMResponse, *, created: int | None = None) -> dict[str, Any]:
    """``response`` as a ``chat.completion`` object."""
    message: dict[str, Any] = {"role": "assistant", "content": response.text or None}
    calls = _tool_calls(response)
    if calls:
        message["tool_calls"] = calls
    return {
        "id": response.id,
        "object": "chat.completion",
        "created": int(time.time()) if created is None else created,
        "model": response.model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": _finish(response), "logprobs": None}
        ],
        "usage": _usage(response),
    }


def openai_chunks(
    response: LLMResponse, *, include_usage: bool = False, created: int | None = None
) -> Iterator[bytes]:
    """The server-sent events of a streamed completion that adds up to ``response``."""
    head = {
        "id": response.id,
        "object": "chat.completion.chunk",
        "created": int(time.time()) if created is None else created,
        "model": response.model,
    }

    def chunk(delta: Mapping[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return _data({**head, "choices": [choice]})

    yield chunk({"role": "assistant", "content": ""})
    text = response.text
    for start in range(0, len(text), _PIECE):
        yield chunk({"content": text[start : start + _PIECE]})
    for index, call in enumerate(_tool_calls(response)):
        function = call["function"]
        opening = {**call, "index": index, "function": {"name": function["name"], "arguments": ""}}
        yield chunk({"tool_calls": [opening]})
        arguments = function["arguments"]
        for start in range(0, len(arguments), _PIECE):
            piece = {"index": index, "function": {"arguments": arguments[start : start + _PIECE]}}
            yield chunk({"tool_calls": [piece]})
    yield chunk({}, _finish(response))
    if include_usage:
        yield _data({**head, "choices": [], "usage": _usage(response)})
    yield b"data: [DONE]\n\n"


def _data(value: Mapping[str, Any]) -> bytes:
    return f"data: {json.dumps(value, ensure_ascii=False)}\n\n".encode()


def openai_error(status: int, message: str, code: str | None = None) -> dict[str, Any]:
    """Chat Completions' error body for ``status``."""
    kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}
