"""Anthropic's Messages API on the wire: what the model endpoint reads and writes.

A request's key is its JSON body without the volatile params and without
``stream``, so a streamed and an unstreamed request for the same thing share
one recording, and a request an SDK sends over HTTP keys the same as the one
:class:`~harness.llm_recorder.RecordingLLMClient` sees in-process. An answer
is written from an :class:`~harness.llm.LLMResponse`, as one JSON message or
as the server-sent events that add up to it (message_start, a
content_block_start/delta/stop for each block, message_delta, message_stop).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, Final

from harness.llm import LLMResponse, TextBlock, ToolUseBlock, Usage

__all__ = [
    "ANTHROPIC_ERROR_TYPES",
    "anthropic_error",
    "anthropic_events",
    "anthropic_message",
    "check_anthropic_request",
    "parse_anthropic_message",
]

#: The error ``type`` the Messages API gives each status.
ANTHROPIC_ERROR_TYPES: Final[Mapping[int, str]] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    529: "overloaded_error",
}
_PIECE: Final = 16  # characters of text (or tool input JSON) per streamed delta


def check_anthropic_request(body: object) -> str | None:
    """What is wrong with a Messages API request body, in one line; None when it is usable."""
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    if not isinstance(body.get("model"), str):
        return "model: Field required (a string)"
    if not isinstance(body.get("messages"), list):
        return "messages: Field required (a list)"
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool):
        return "max_tokens: Field required (an integer)"
    return None


def parse_anthropic_message(data: Mapping[str, Any]) -> LLMResponse:
    """A Messages API answer as an :class:`LLMResponse` (text and tool_use blocks kept)."""
    content: list[TextBlock | ToolUseBlock] = []
    for block in data.get("content") or []:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text":
            content.append(TextBlock(text=str(block.get("text", ""))))
        elif block.get("type") == "tool_use":
            raw_input = block.get("input")
            content.append(
                ToolUseBlock(
                    id=str(block.get("id", "")),
                    name=str(block.get("name", "")),
                    input=dict(raw_input) if isinstance(raw_input, Mapping) else {},
                )
            )
    usage = data.get("usage") if isinstance(data.get("usage"), Mapping) else {}
    assert isinstance(usage, Mapping)
    return LLMResponse(
        id=str(data.get("id", "")),
        model=str(data.get("model", "")),
        content=tuple(content),
        stop_reason=data.get("stop_reason"),
        usage=Usage(
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
        ),
    )


def anthropic_message(response: LLMResponse) -> dict[str, Any]:
    """``response`` as the Messages API writes a message."""
    return {
        "id": response.id,
        "type": "message",
        "role": "assistant",
        "model": response.model,
        "content": [block.model_dump() for block in response.content],
        "stop_reason": response.stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": response.usage.input_tokens,
            "output_tokens": response.usage.output_tokens,
        },
    }


def _pieces(text: str) -> list[str]:
    return [text[start : start + _PIECE] for start in range(0, len(text), _PIECE)] or [""]


def anthropic_events(response: LLMResponse) -> Iterator[bytes]:
    """The server-sent events of a streamed answer that adds up to ``response``."""
    message = anthropic_message(response)
    opening = {**message, "content": [], "stop_reason": None}
    opening["usage"] = {**message["usage"], "output_tokens": 0}
    yield _event("message_start", {"type": "message_start", "message": opening})
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            start = {**block, "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(block["text"])]
        else:
            start = {**block, "input": {}}
            arguments = json.dumps(block["input"], ensure_ascii=False)
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(arguments)]
        yield _event(
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        )
        for delta in deltas:
            yield _event(
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
        yield _event("content_block_stop", {"type": "content_block_stop", "index": index})
    yield _event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": response.stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": response.usage.output_tokens},
        },
    )
    yield _event("message_stop", {"type": "message_stop"})


def _event(name: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def anthropic_error(status: int, message: str) -> dict[str, Any]:
    """The Messages API's error body for ``status``."""
    kind = ANTHROPIC_ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}
