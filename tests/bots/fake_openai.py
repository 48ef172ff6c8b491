"""A fake OpenAI Chat Completions API that answers from a script, as the real one writes answers.

``POST /v1/chat/completions`` answers with the next step: a :class:`Say` (an
assistant message, finish reason ``stop``) or a :class:`Call` (one or more
function tool calls, finish reason ``tool_calls``), as a ``chat.completion``
object. It answers unstreamed requests only (a request asking for a stream
gets a 400), which is all the harness's model endpoint sends upstream.
Every request is kept, its ``Authorization`` header redacted. Nothing here
imports the harness.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.bots.loopback import serve_in_process

__all__ = ["Call", "FakeOpenAI", "Say", "serve_fake_openai"]


@dataclass(frozen=True)
class Say:
    """An assistant message of text."""

    text: str


@dataclass(frozen=True)
class Call:
    """A function tool call with JSON arguments."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None


OpenAIStep: TypeAlias = Say | Call


def _error(status: int, message: str) -> Response:
    body = {
        "error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}
    }
    return JSONResponse(body, status_code=status)


class FakeOpenAI:
    """The fake server: :attr:`app` serves it, :attr:`requests` holds bodies and headers."""

    def __init__(self, script: Sequence[OpenAIStep]) -> None:
        self.script = list(script)
        self.requests: list[tuple[dict[str, Any], dict[str, str]]] = []
        self.app = Starlette(
            routes=[Route("/v1/chat/completions", self._completions, methods=["POST"])]
        )

    async def _completions(self, request: Request) -> Response:
        body = json.loads(await request.body())
        headers = {
            k: "[redacted]" if k == "authorization" else v for k, v in request.headers.items()
        }
        self.requests.append((body, headers))
        if "authorization" not in request.headers:
            return _error(401, "You didn't provide an API key.")
        if body.get("stream"):
            return _error(400, "fake_openai answers unstreamed requests only")
        if len(self.requests) > len(self.script):
            return _error(400, "fake_openai: the script is used up")
        step = self.script[len(self.requests) - 1]
        number = len(self.requests)
        message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
        if isinstance(step, Say):
            message["content"], finish = step.text, "stop"
        else:
            call_id = step.id or f"call_fake_{number:04d}"
            function = {"name": step.name, "arguments": json.dumps(dict(step.arguments))}
            message["tool_calls"] = [{"id": call_id, "type": "function", "function": function}]
            finish = "tool_calls"
        asked = len(json.dumps(body["messages"])) // 4 + 1
        said = len(json.dumps(message)) // 4 + 1
        return JSONResponse(
            {
                "id": f"chatcmpl-fake{number:04d}",
                "object": "chat.completion",
                "created": 1_767_225_600 + number,
                "model": body["model"],
                "choices": [
                    {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
                ],
                "usage": {
                    "prompt_tokens": asked,
                    "completion_tokens": said,
                    "total_tokens": asked + said,
                },
            }
        )


@asynccontextmanager
async def serve_fake_openai(
    script: Sequence[OpenAIStep],
) -> AsyncIterator[tuple[str, FakeOpenAI]]:
    """Serve a :class:`FakeOpenAI` on loopback; yields its base URL (with ``/v1``) and the fake."""
    fake = FakeOpenAI(script)
    async with serve_in_process(fake.app) as url:
        yield f"{url}/v1", fake
