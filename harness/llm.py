"""The LLM seam: a one-method client shaped like Anthropic's Messages API.

Agents talk to a language model only through :class:`LLMClient`, so the
harness can put a recorder (or a fake) in front of the real thing.
:class:`AnthropicClient` adapts the ``anthropic`` SDK; this is the only module
that imports it, and only when an adapter is built, so the rest of the harness
loads without it.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

from harness.exceptions import ConfigError, LLMAPIError, LLMError
from harness.providers import ANTHROPIC

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = [
    "AnthropicClient",
    "ContentBlock",
    "LLMClient",
    "LLMRequest",
    "LLMResponse",
    "SystemPrompt",
    "TextBlock",
    "ToolUseBlock",
    "Usage",
    "json_default",
    "request_body",
    "sdk_http_module",
]

#: A system prompt: plain text, or a list of Anthropic text blocks.
SystemPrompt: TypeAlias = str | Sequence[Mapping[str, Any]]

#: The parts of a request that have their own argument; everything else is a param.
_NAMED_PARTS = frozenset({"model", "messages", "max_tokens", "system", "tools"})


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TextBlock(_Frozen):
    """A block of text the model wrote."""

    type: Literal["text"] = "text"
    text: str


class ToolUseBlock(_Frozen):
    """The model asking for a tool to be called with ``input`` as its arguments."""

    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]


#: One block of a response's content, told apart by ``type``.
ContentBlock: TypeAlias = Annotated[TextBlock | ToolUseBlock, Field(discriminator="type")]


class Usage(_Frozen):
    """Tokens the call consumed, as the provider counted them."""

    input_tokens: int = 0
    output_tokens: int = 0


class LLMResponse(_Frozen):
    """The model's answer: content blocks, why it stopped, and token usage."""

    id: str
    model: str
    content: tuple[ContentBlock, ...] = ()
    stop_reason: str | None = None
    usage: Usage = Usage()

    @property
    def text(self) -> str:
        """The text blocks joined together (empty when the model only called tools)."""
        return "".join(block.text for block in self.content if isinstance(block, TextBlock))

    @property
    def tool_uses(self) -> tuple[ToolUseBlock, ...]:
        """The tool calls the model asked for, in order."""
        return tuple(block for block in self.content if isinstance(block, ToolUseBlock))

    def as_message(self) -> dict[str, Any]:
        """This answer as an assistant message, ready to append to the next request."""
        return {"role": "assistant", "content": [block.model_dump() for block in self.content]}


def request_body(
    *,
    model: str,
    messages: Sequence[Mapping[str, Any]],
    max_tokens: int,
    system: SystemPrompt | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    params: Mapping[str, Any] | None = None,
    exclude: frozenset[str] | set[str] = frozenset(),
) -> dict[str, Any]:
    """The request as one flat dict shaped like the Messages API body.

    ``system`` and ``tools`` are left out when None, and params named in
    ``exclude`` are dropped. Values are not copied: serialise the result
    before the caller can change them.
    """
    body: dict[str, Any] = {"model": model, "messages": messages, "max_tokens": max_tokens}
    if system is not None:
        body["system"] = system
    if tools is not None:
        body["tools"] = tools
    if params:
        for name, value in params.items():
            if name not in exclude:
                body[name] = value
    return body


class LLMRequest(_Frozen):
    """A Messages API request as data: what a recorder keys and compares on."""

    model: str
    messages: tuple[dict[str, Any], ...]
    max_tokens: int
    system: str | tuple[dict[str, Any], ...] | None = None
    tools: tuple[dict[str, Any], ...] | None = None
    params: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> LLMRequest:
        """Read a request back from its flat body form (see :func:`request_body`)."""
        return cls(
            model=body["model"],
            messages=body["messages"],
            max_tokens=body["max_tokens"],
            system=body.get("system"),
            tools=body.get("tools"),
            params={k: v for k, v in body.items() if k not in _NAMED_PARTS},
        )

    def body(self, *, exclude: frozenset[str] | set[str] = frozenset()) -> dict[str, Any]:
        """The flat body form, without the params named in ``exclude``."""
        return request_body(
            model=self.model,
            messages=self.messages,
            max_tokens=self.max_tokens,
            system=self.system,
            tools=self.tools,
            params=self.params,
            exclude=exclude,
        )


class LLMClient(Protocol):
    """Anything that answers a Messages API request; agents depend on this alone."""

    async def create(
        self,
        *,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        max_tokens: int,
        system: SystemPrompt | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **params: Any,
    ) -> LLMResponse:
        """Send one request and return the model's answer."""
        ...


def json_default(value: object) -> Any:
    """A ``json.dumps`` fallback for the objects that turn up in requests and tool results.

    Pydantic models (ours and the SDK's) become their JSON dict, dropping
    None fields the way the API ignores them; dates become ISO strings.
    """
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _plain(value: Any) -> Any:
    """Deep-convert models to dicts and tuples to lists, leaving other values alone."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    return value


def sdk_http_module() -> ModuleType:
    """The HTTP module whose ``AsyncClient`` the installed ``anthropic`` SDK takes.

    ``anthropic`` 2.x is built on ``httpx2``, older releases on ``httpx``; use
    this to build an ``http_client`` (for instance around a ``MockTransport``).
    """
    from anthropic import _base_client  # the SDK exposes no public way to ask this

    for name in ("httpx2", "httpx"):
        module = getattr(_base_client, name, None)
        if isinstance(module, ModuleType):
            return module
    raise LLMError("the installed anthropic SDK uses neither httpx2 nor httpx")


class AnthropicClient:
    """:class:`LLMClient` backed by ``anthropic.AsyncAnthropic``.

    Pass ``client`` to wrap an SDK client you built, or ``api_key``,
    ``http_client`` (an ``AsyncClient`` from :func:`sdk_http_module`),
    ``max_retries`` and ``base_url`` to have one built. The SDK retries 429s
    and 5xx itself; what still fails becomes :class:`LLMAPIError`. Params the
    SDK has no argument for travel in the request body as they are.
    Content blocks other than text and tool_use (thinking, server tools) are
    outside this seam and are dropped from the response.
    """

    #: Who answers (:mod:`harness.providers`): Anthropic's Messages API.
    provider = ANTHROPIC

    def __init__(
        self,
        api_key: str | None = None,
        *,
        client: AsyncAnthropic | None = None,
        http_client: Any = None,  # an httpx2 or httpx AsyncClient, per sdk_http_module()
        max_retries: int = 2,
        base_url: str | None = None,
    ) -> None:
        import anthropic

        if client is not None:
            if api_key is not None or http_client is not None or base_url is not None:
                raise ConfigError(
                    "AnthropicClient takes either client= or api_key/http_client/base_url, not both"
                )
        else:
            client = anthropic.AsyncAnthropic(
                api_key=api_key, http_client=http_client, max_retries=max_retries, base_url=base_url
            )
        self._client = client
        self._accepted: frozenset[str] | None = None

    @property
    def sdk_client(self) -> AsyncAnthropic:
        """The wrapped ``AsyncAnthropic`` client."""
        return self._client

    async def aclose(self) -> None:
        """Close the SDK client and its HTTP connections."""
        await self._client.close()

    def _accepted_arguments(self) -> frozenset[str]:
        # Each SDK release knows a different set of params; ask it once.
        if self._accepted is None:
            names = inspect.signature(self._client.messages.create).parameters
            self._accepted = frozenset(names)
        return self._accepted

    async def create(
        self,
        *,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        max_tokens: int,
        system: SystemPrompt | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **params: Any,
    ) -> LLMResponse:
        """Send the request through the SDK and convert its ``Message``."""
        if params.get("stream"):
            raise ConfigError("AnthropicClient.create does not stream; drop stream=True")
        accepted = self._accepted_arguments()
        kwargs: dict[str, Any] = {}
        extra_body: dict[str, Any] = dict(params.pop("extra_body", None) or {})
        for name, value in params.items():
            if name in accepted:
                kwargs[name] = value
            else:
                extra_body[name] = _plain(value)
        if extra_body:
            kwargs["extra_body"] = extra_body
        if system is not None:
            kwargs["system"] = _plain(system)
        if tools is not None:
            kwargs["tools"] = _plain(tools)
        import anthropic  # already loaded by __init__; named here for its error classes

        try:
            message = await self._client.messages.create(
                model=model, messages=_plain(messages), max_tokens=max_tokens, **kwargs
            )
        except anthropic.APIStatusError as exc:
            error_type = _error_field(exc.body, "type")
            detail = _error_field(exc.body, "message") or str(exc)
            raise LLMAPIError(
                f"Anthropic API answered {exc.status_code} ({error_type or 'unknown error'}): "
                f"{detail}",
                status_code=exc.status_code,
                error_type=error_type,
            ) from exc
        except anthropic.APITimeoutError as exc:
            raise LLMAPIError("Anthropic API request timed out", error_type="timeout") from exc
        except anthropic.APIConnectionError as exc:
            raise LLMAPIError(
                f"could not reach the Anthropic API: {exc}", error_type="connection_error"
            ) from exc
        except anthropic.APIError as exc:
            raise LLMAPIError(
                f"Anthropic API answered something unusable: {exc}", error_type="invalid_response"
            ) from exc
        return _from_sdk_message(message)


def _error_field(body: object, name: str) -> str | None:
    """``body["error"][name]`` from Anthropic's error JSON, when it is there."""
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping):
            value = error.get(name)
            if isinstance(value, str):
                return value
    return None


def _from_sdk_message(message: Any) -> LLMResponse:
    content: list[TextBlock | ToolUseBlock] = []
    for block in message.content:
        if block.type == "text":
            content.append(TextBlock(text=block.text))
        elif block.type == "tool_use":
            content.append(ToolUseBlock(id=block.id, name=block.name, input=_plain(block.input)))
    usage = message.usage
    return LLMResponse(
        id=message.id,
        model=message.model,
        content=tuple(content),
        stop_reason=message.stop_reason,
        usage=Usage(input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0),
    )
