"""The LLM seam: response models, and the Anthropic adapter driven through the real SDK.

The SDK talks to an in-process ``MockTransport`` that answers the JSON the
Messages API answers; nothing touches the network and no API key is real.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from pydantic import TypeAdapter

from harness.exceptions import ConfigError, LLMAPIError
from harness.llm import (
    AnthropicClient,
    ContentBlock,
    LLMRequest,
    LLMResponse,
    TextBlock,
    ToolUseBlock,
    Usage,
    request_body,
    sdk_http_module,
)

KEY = "sk-ant-test-0000"
MODEL = "claude-sonnet-4-6"
http = sdk_http_module()

Handler = Callable[[Any], Any]


def message_json(content: list[dict[str, Any]], stop_reason: str = "end_turn") -> dict[str, Any]:
    """A Messages API success body, as the API sends it."""
    return {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 412,
            "output_tokens": 37,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def error_json(error_type: str, message: str) -> dict[str, Any]:
    """A Messages API error body, as the API sends it."""
    return {"type": "error", "error": {"type": error_type, "message": message}}


TEXT_ANSWER = message_json([{"type": "text", "text": "Hello! How can I help you book a table?"}])
TOOL_ANSWER = message_json(
    [
        {"type": "text", "text": "Let me check Friday."},
        {
            "type": "tool_use",
            "id": "toolu_01A09q90qw90lq917835lq9",
            "name": "check_availability",
            "input": {"date": "2025-06-13", "party_size": 4},
        },
    ],
    stop_reason="tool_use",
)
TOOLS = [
    {
        "name": "check_availability",
        "description": "Free tables on a date.",
        "input_schema": {
            "type": "object",
            "properties": {"date": {"type": "string"}, "party_size": {"type": "integer"}},
            "required": ["date"],
        },
    }
]


def ours(body: dict[str, Any]) -> LLMResponse:
    """Our model of an API answer (without the fields the seam leaves out)."""
    return LLMResponse(
        id=body["id"],
        model=body["model"],
        content=body["content"],
        stop_reason=body["stop_reason"],
        usage=Usage(
            input_tokens=body["usage"]["input_tokens"],
            output_tokens=body["usage"]["output_tokens"],
        ),
    )


class Server:
    """Answers each request with the next planned response and keeps what was sent."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.requests: list[Any] = []

    def __call__(self, request: Any) -> Any:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def body(self, index: int = 0) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.requests[index].content)
        return body


def ok(body: dict[str, Any]) -> Any:
    return http.Response(200, json=body, headers={"request-id": "req_011CSHoEeqs5C35K2UUqR7Fy"})


@pytest.fixture
async def connect() -> AsyncIterator[Callable[..., AnthropicClient]]:
    """Builds AnthropicClients around a mock transport, and closes them afterwards."""
    made: list[AnthropicClient] = []

    def make(server: Server, **options: Any) -> AnthropicClient:
        transport = http.MockTransport(server)
        client = AnthropicClient(KEY, http_client=http.AsyncClient(transport=transport), **options)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()


def credential(request: Any) -> str | None:
    """The API key the SDK sent: ``x-api-key`` in older SDKs, a bearer token in 2.x."""
    if "x-api-key" in request.headers:
        value: str = request.headers["x-api-key"]
        return value
    authorization: str = request.headers.get("authorization", "")
    return authorization.removeprefix("Bearer ") if authorization.startswith("Bearer ") else None


async def test_text_answer_and_the_request_the_sdk_sent(
    connect: Callable[..., AnthropicClient],
) -> None:
    server = Server(ok(TEXT_ANSWER))
    client = connect(server)
    messages = [{"role": "user", "content": "hi, a table for 4 on Friday?"}]

    response = await client.create(
        model=MODEL, system="You book tables.", messages=messages, max_tokens=512
    )

    assert response == LLMResponse(
        id="msg_01XFDUDYJgAACzvnptvVoYEL",
        model=MODEL,
        content=(TextBlock(text="Hello! How can I help you book a table?"),),
        stop_reason="end_turn",
        usage=Usage(input_tokens=412, output_tokens=37),
    )
    assert response.text == "Hello! How can I help you book a table?"
    assert response.tool_uses == ()
    (request,) = server.requests
    assert request.method == "POST"
    assert request.url.path == "/v1/messages"
    assert credential(request) == KEY
    assert "anthropic-version" in request.headers
    assert server.body() == {
        "model": MODEL,
        "system": "You book tables.",
        "messages": messages,
        "max_tokens": 512,
    }


async def test_tool_use_answer_and_tools_in_the_request(
    connect: Callable[..., AnthropicClient],
) -> None:
    server = Server(ok(TOOL_ANSWER))
    client = connect(server)

    response = await client.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Friday for 4?"}],
        max_tokens=256,
        tools=TOOLS,
        tool_choice={"type": "auto"},
    )

    assert response.stop_reason == "tool_use"
    assert response.text == "Let me check Friday."
    assert response.tool_uses == (
        ToolUseBlock(
            id="toolu_01A09q90qw90lq917835lq9",
            name="check_availability",
            input={"date": "2025-06-13", "party_size": 4},
        ),
    )
    body = server.body()
    assert body["tools"] == TOOLS
    assert body["tool_choice"] == {"type": "auto"}
    assert body["max_tokens"] == 256


async def test_params_the_sdk_has_no_argument_for_still_reach_the_body(
    connect: Callable[..., AnthropicClient],
) -> None:
    server = Server(ok(TEXT_ANSWER))
    client = connect(server)

    await client.create(
        model=MODEL,
        messages=[{"role": "user", "content": "hi"}],
        max_tokens=64,
        temperature=0.2,
        top_k=5,
        stop_sequences=["\n\nHuman:"],
        metadata={"user_id": "u-123"},
    )

    body = server.body()
    assert body["temperature"] == 0.2
    assert body["top_k"] == 5
    assert body["stop_sequences"] == ["\n\nHuman:"]
    assert body["metadata"] == {"user_id": "u-123"}


async def test_response_blocks_sent_back_keep_their_type(
    connect: Callable[..., AnthropicClient],
) -> None:
    # The SDK serialises a pydantic model without its defaults, which would drop
    # ``type``; the adapter sends our blocks as the dicts the API expects.
    previous = ours(TOOL_ANSWER)
    server = Server(ok(TEXT_ANSWER))
    client = connect(server)

    await client.create(
        model=MODEL,
        messages=[
            {"role": "user", "content": "Friday for 4?"},
            {"role": "assistant", "content": previous.content},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
                        "content": "free: 19:30, 21:00",
                    }
                ],
            },
        ],
        max_tokens=64,
    )

    sent = server.body()["messages"][1]
    assert sent == previous.as_message()
    assert sent["content"][0] == {"type": "text", "text": "Let me check Friday."}
    assert sent["content"][1]["type"] == "tool_use"


async def test_api_error_becomes_llm_api_error(connect: Callable[..., AnthropicClient]) -> None:
    server = Server(
        http.Response(400, json=error_json("invalid_request_error", "max_tokens: Field required"))
    )
    client = connect(server)

    with pytest.raises(LLMAPIError) as caught:
        await client.create(model=MODEL, messages=[{"role": "user", "content": "x"}], max_tokens=1)

    assert caught.value.status_code == 400
    assert caught.value.error_type == "invalid_request_error"
    assert "max_tokens: Field required" in str(caught.value)
    assert len(server.requests) == 1  # a 400 is not retried


async def test_rate_limit_is_retried_by_the_sdk(connect: Callable[..., AnthropicClient]) -> None:
    limited = http.Response(
        429,
        json=error_json("rate_limit_error", "Number of request tokens has exceeded your limit."),
        headers={"retry-after-ms": "1", "retry-after": "0"},
    )
    server = Server(limited, ok(TEXT_ANSWER))
    client = connect(server, max_retries=2)

    response = await client.create(
        model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=32
    )

    assert len(server.requests) == 2
    assert server.body(0) == server.body(1)
    assert response.text == "Hello! How can I help you book a table?"


async def test_rate_limit_after_the_last_retry_is_an_error(
    connect: Callable[..., AnthropicClient],
) -> None:
    limited = http.Response(
        429, json=error_json("rate_limit_error", "slow down"), headers={"retry-after-ms": "1"}
    )
    server = Server(limited, limited)
    client = connect(server, max_retries=1)

    with pytest.raises(LLMAPIError) as caught:
        await client.create(model=MODEL, messages=[{"role": "user", "content": "x"}], max_tokens=1)

    assert (caught.value.status_code, caught.value.error_type) == (429, "rate_limit_error")
    assert len(server.requests) == 2


async def test_unreachable_api_is_a_connection_error(
    connect: Callable[..., AnthropicClient],
) -> None:
    server = Server(http.ConnectError("connection refused"))
    client = connect(server, max_retries=0)

    with pytest.raises(LLMAPIError) as caught:
        await client.create(model=MODEL, messages=[{"role": "user", "content": "x"}], max_tokens=1)

    assert caught.value.status_code is None
    assert caught.value.error_type == "connection_error"


async def test_blocks_outside_the_seam_are_dropped(
    connect: Callable[..., AnthropicClient],
) -> None:
    thinking = {"type": "thinking", "thinking": "They want Friday.", "signature": "c2ln"}
    server = Server(ok(message_json([thinking, {"type": "text", "text": "Friday it is."}])))
    client = connect(server)

    response = await client.create(
        model=MODEL, messages=[{"role": "user", "content": "Friday"}], max_tokens=8
    )

    assert response.content == (TextBlock(text="Friday it is."),)


async def test_streaming_is_refused(connect: Callable[..., AnthropicClient]) -> None:
    server = Server()
    client = connect(server)

    with pytest.raises(ConfigError, match="stream"):
        await client.create(
            model=MODEL, messages=[{"role": "user", "content": "x"}], max_tokens=1, stream=True
        )
    assert server.requests == []


async def test_a_prebuilt_sdk_client_is_used_as_is() -> None:
    import anthropic

    server = Server(ok(TEXT_ANSWER))
    sdk = anthropic.AsyncAnthropic(
        api_key=KEY, http_client=http.AsyncClient(transport=http.MockTransport(server))
    )
    client = AnthropicClient(client=sdk)
    try:
        assert client.sdk_client is sdk
        response = await client.create(
            model=MODEL, messages=[{"role": "user", "content": "x"}], max_tokens=1
        )
    finally:
        await client.aclose()
    assert response.text.startswith("Hello!")
    assert len(server.requests) == 1


def test_a_prebuilt_client_excludes_the_other_options() -> None:
    import anthropic

    with pytest.raises(ConfigError, match="either client"):
        AnthropicClient(KEY, client=anthropic.AsyncAnthropic(api_key=KEY))


def test_sdk_http_module_offers_a_mock_transport() -> None:
    module = sdk_http_module()
    assert module.__name__ in {"httpx", "httpx2"}
    assert hasattr(module, "MockTransport")
    assert hasattr(module, "AsyncClient")


def test_importing_the_harness_does_not_import_anthropic() -> None:
    code = (
        "import sys, harness.llm, harness.recorder; "
        "sys.exit(1 if 'anthropic' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_content_blocks_are_told_apart_by_type() -> None:
    adapter: TypeAdapter[ContentBlock] = TypeAdapter(ContentBlock)

    assert adapter.validate_python({"type": "text", "text": "hi"}) == TextBlock(text="hi")
    assert isinstance(
        adapter.validate_python({"type": "tool_use", "id": "t1", "name": "f", "input": {}}),
        ToolUseBlock,
    )
    with pytest.raises(ValueError, match="tool_use"):
        adapter.validate_python({"type": "image", "source": {}})


def test_response_round_trips_through_json() -> None:
    response = ours(TOOL_ANSWER)

    assert LLMResponse.model_validate_json(response.model_dump_json()) == response
    assert response.usage == Usage(input_tokens=412, output_tokens=37)
    assert response.as_message()["role"] == "assistant"


def test_request_body_and_model_agree() -> None:
    body = request_body(
        model=MODEL,
        messages=[{"role": "user", "content": "hi"}],
        max_tokens=16,
        system="sys",
        params={"temperature": 0.5, "metadata": {"user_id": "u"}},
        exclude={"metadata"},
    )

    assert body == {
        "model": MODEL,
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 16,
        "system": "sys",
        "temperature": 0.5,
    }
    request = LLMRequest.from_body(body)
    assert request.params == {"temperature": 0.5}
    assert request.tools is None
    assert request.body() == {**body, "messages": ({"role": "user", "content": "hi"},)}
