"""A fake Anthropic Messages API that answers from a script, slowly, like the real one.

Agents under test point the official ``anthropic`` SDK at it
(``AsyncAnthropic(base_url=url, api_key="test-key")``). ``POST /v1/messages``
answers with the next step of a script, a list of steps or a function of the
request body: a :class:`Text` reply, a :class:`ToolUse` reply, a scripted
:class:`Failure` (a 429 with ``retry-after`` that the SDK retries, a 500 ...)
or a :class:`Hang` that never answers (for timeouts). Each answer waits a real
delay first (default 0.3 s; a step may set its own), because model calls take
time and a harness must cope with that. ``"stream": true`` gets the Messages
API's server-sent events (message_start, content_block_start/delta/stop,
message_delta, message_stop). Every request is recorded, body and headers, with
the API key redacted: ``fake.requests`` in-process, ``GET /_fake/requests``
over HTTP.

In-process: ``async with serve_fake_anthropic([Text("hi")]) as (url, fake)``.
As a process: ``python -m tests.bots.fake_anthropic --port 8010 --delay 0.3
--script script.json``, the script a JSON list of steps such as
``{"text": "hi"}``, ``{"tool_use": {"name": "find_slots", "input": {}}}``,
``{"status": 429, "retry_after": 1}``, ``{"hang": true}``, each with an
optional ``"delay"``. Nothing here imports the harness.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.bots.loopback import serve_in_process

__all__ = [
    "DEFAULT_DELAY",
    "Blocks",
    "Failure",
    "FakeAnthropic",
    "Hang",
    "RecordedRequest",
    "Script",
    "Step",
    "Text",
    "ToolUse",
    "load_script",
    "main",
    "parse_step",
    "serve_fake_anthropic",
]

DEFAULT_DELAY = 0.3
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_SECRET_HEADERS = ("x-api-key", "authorization")


@dataclass(frozen=True)
class Text:
    """A reply of one text block (stop reason ``end_turn``); ``delay`` None: the server's."""

    text: str
    delay: float | None = None


@dataclass(frozen=True)
class ToolUse:
    """A reply of one ``tool_use`` block (stop reason ``tool_use``); the id is made up if None."""

    name: str
    input: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None
    delay: float | None = None


@dataclass(frozen=True)
class Blocks:
    """A reply of several content blocks as the API writes them (text and tool_use)."""

    content: Sequence[Mapping[str, Any]]
    delay: float | None = None


@dataclass(frozen=True)
class Failure:
    """An error answer in the API's error shape, with ``retry-after`` (seconds) when given."""

    status: int
    retry_after: float | None = None
    message: str = "scripted failure"
    delay: float | None = None


@dataclass(frozen=True)
class Hang:
    """No answer at all, until the server shuts down: for a client's timeout."""


Step: TypeAlias = Text | ToolUse | Blocks | Failure | Hang
Script: TypeAlias = Sequence[Step] | Callable[[dict[str, Any]], Step]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as received: its JSON body, its headers (keys redacted), when it came."""

    body: dict[str, Any]
    headers: dict[str, str]
    received_at: float  # time.monotonic() of the serving process


class FakeAnthropic:
    """The fake model server; :attr:`app` is the Starlette app, :attr:`requests` what it got."""

    def __init__(self, script: Script, *, delay: float = DEFAULT_DELAY) -> None:
        self.script = script
        self.delay = delay
        self.requests: list[RecordedRequest] = []
        self._next = 0  # index of the next scripted step
        self._answers = 0
        self._released = asyncio.Event()
        self.app = Starlette(
            routes=[
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/_fake/requests", self._recorded),
            ]
        )

    def release(self) -> None:
        """Let every hanging request end (with a 529), as when the server goes away."""
        self._released.set()

    def _step_for(self, body: dict[str, Any]) -> Step | None:
        if callable(self.script):
            return self.script(body)
        if self._next >= len(self.script):
            return None
        self._next += 1
        return self.script[self._next - 1]

    async def _messages(self, request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except ValueError:
            return _error(400, "the request body is not JSON")
        if not isinstance(body, dict):
            return _error(400, "the request body must be a JSON object")
        headers = {
            name: "[redacted]" if name in _SECRET_HEADERS else value
            for name, value in request.headers.items()
        }
        self.requests.append(RecordedRequest(body, headers, time.monotonic()))
        if not any(name in request.headers for name in _SECRET_HEADERS):
            return _error(401, "x-api-key header is required")
        for required in ("model", "max_tokens", "messages"):
            if required not in body:
                return _error(400, f"{required}: Field required")
        step = self._step_for(body)
        if step is None:
            count = len(self.script) if isinstance(self.script, Sequence) else 0
            return _error(400, f"fake_anthropic: the script's {count} steps are used up")
        if isinstance(step, Hang):
            await self._released.wait()
            return _error(529, "fake_anthropic: released while hanging")
        await asyncio.sleep(self.delay if step.delay is None else step.delay)
        if isinstance(step, Failure):
            return _error(step.status, step.message, retry_after=step.retry_after)
        message = self._message(body, step)
        ids = {"request-id": f"req_fake_{self._answers:04d}"}
        if body.get("stream"):
            return StreamingResponse(_sse(message), media_type="text/event-stream", headers=ids)
        return JSONResponse(message, headers=ids)

    def _message(self, body: dict[str, Any], step: Text | ToolUse | Blocks) -> dict[str, Any]:
        self._answers += 1
        block: dict[str, Any]
        content: list[dict[str, Any]] | None = None
        if isinstance(step, Blocks):
            content = [dict(b) for b in step.content]
            uses = any(b.get("type") == "tool_use" for b in content)
            block, stop, said = content[0], "tool_use" if uses else "end_turn", json.dumps(content)
        elif isinstance(step, Text):
            block, stop, said = {"type": "text", "text": step.text}, "end_turn", step.text
        else:
            tool_id = step.id or f"toolu_fake_{self._answers:04d}"
            arguments = dict(step.input)
            block = {"type": "tool_use", "id": tool_id, "name": step.name, "input": arguments}
            stop, said = "tool_use", json.dumps(arguments)
        asked = json.dumps([body.get("system"), body["messages"], body.get("tools")])
        return {
            "id": f"msg_fake_{self._answers:04d}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content if content is not None else [block],
            "stop_reason": stop,
            "stop_sequence": None,
            # about four characters a token, as a rough stand-in for a tokenizer
            "usage": {"input_tokens": len(asked) // 4 + 1, "output_tokens": len(said) // 4 + 1},
        }

    async def _recorded(self, request: Request) -> Response:
        return JSONResponse({"requests": [asdict(recorded) for recorded in self.requests]})


def _error(status: int, message: str, *, retry_after: float | None = None) -> Response:
    kind = _ERROR_TYPES.get(status, "api_error")
    headers = {"request-id": "req_fake_error"}
    if retry_after is not None:
        headers["retry-after"] = f"{retry_after:g}"
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return JSONResponse(body, status_code=status, headers=headers)


def _pieces(text: str, size: int = 8) -> list[str]:
    return [text[start : start + size] for start in range(0, len(text), size)]


def _events(message: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The Messages API's stream events that add up to ``message``."""
    usage = message["usage"]
    opening = {
        **message,
        "content": [],
        "stop_reason": None,
        "usage": {**usage, "output_tokens": 1},
    }
    yield {"type": "message_start", "message": opening}
    yield {"type": "ping"}
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield {
                "type": "content_block_start",
                "index": index,
                "content_block": {**block, "text": ""},
            }
            deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(block["text"])]
        else:
            yield {
                "type": "content_block_start",
                "index": index,
                "content_block": {**block, "input": {}},
            }
            partial = _pieces(json.dumps(block["input"]))
            deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in partial]
        for delta in deltas:
            yield {"type": "content_block_delta", "index": index, "delta": delta}
        yield {"type": "content_block_stop", "index": index}
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    yield {
        "type": "message_delta",
        "delta": stop,
        "usage": {"output_tokens": usage["output_tokens"]},
    }
    yield {"type": "message_stop"}


async def _sse(message: dict[str, Any]) -> AsyncIterator[bytes]:
    for event in _events(message):
        yield f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def parse_step(raw: Mapping[str, Any]) -> Step:
    """One script step from its JSON form (see the module docstring)."""
    delay = raw.get("delay")
    if "text" in raw:
        return Text(str(raw["text"]), delay=delay)
    if "tool_use" in raw:
        tool = raw["tool_use"]
        return ToolUse(tool["name"], tool.get("input", {}), id=tool.get("id"), delay=delay)
    if "status" in raw:
        message = raw.get("message", "scripted failure")
        return Failure(int(raw["status"]), raw.get("retry_after"), message, delay=delay)
    if raw.get("hang"):
        return Hang()
    raise ValueError(f"a step needs one of text, tool_use, status or hang, not {sorted(raw)}")


def load_script(path: Path) -> list[Step]:
    """The steps of a JSON script file; a bad step is named by file and index."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(raw, list):
        raise ValueError(f"{path}: a script is a JSON list of steps")
    steps = []
    for index, item in enumerate(raw):
        try:
            steps.append(parse_step(item))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"{path}: step {index}: {exc}") from exc
    return steps


@asynccontextmanager
async def serve_fake_anthropic(
    script: Script, *, delay: float = DEFAULT_DELAY, port: int = 0
) -> AsyncIterator[tuple[str, FakeAnthropic]]:
    """Serve a :class:`FakeAnthropic` on loopback; yields its base URL and the fake."""
    fake = FakeAnthropic(script, delay=delay)
    async with serve_in_process(fake.app, port=port) as url:
        try:
            yield url, fake
        finally:
            fake.release()


def main(argv: Sequence[str] | None = None) -> None:
    """Serve the fake on 127.0.0.1 from a script file."""
    parser = argparse.ArgumentParser(description="A fake Anthropic Messages API.")
    parser.add_argument("--port", type=int, default=8010)
    parser.add_argument("--delay", type=float, default=DEFAULT_DELAY)
    parser.add_argument("--script", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        script = load_script(args.script)
    except (OSError, ValueError) as exc:
        parser.exit(2, f"fake_anthropic: {exc}\n")
    fake = FakeAnthropic(script, delay=args.delay)
    uvicorn.run(
        fake.app, host="127.0.0.1", port=args.port, log_level="warning", timeout_graceful_shutdown=1
    )


if __name__ == "__main__":
    main()
