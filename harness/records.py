"""What the recorders keep: one recorded model exchange, one recorded tool call.

These are the lines of a fixture's ``llm.jsonl`` and ``tools.jsonl``, and what
a store holds for an agent in another process.
"""

from __future__ import annotations

from pydantic import AwareDatetime, BaseModel, ConfigDict, JsonValue

from harness.llm import LLMResponse

__all__ = ["LLMRecord", "ToolRecord"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LLMRecord(_Frozen):
    """One recorded LLM exchange: the canonical request and the answer, with model and tokens."""

    key: str
    request: dict[str, JsonValue]
    response: LLMResponse
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    recorded_at: AwareDatetime
    #: How long the model took to answer, in real milliseconds.
    latency_ms: float | None = None
    #: How long the call took on the run's clock, in seconds: a replay takes as long on its
    #: own. In-process, virtual time stands still while a model answers (0); under ``harness
    #: serve`` it follows real time. None in recordings made before it was kept: a replay then
    #: takes ``latency_ms``.
    waited_s: float | None = None
    #: Who answered (:mod:`harness.providers`); None in recordings made before it was kept.
    provider: str | None = None


class ToolRecord(_Frozen):
    """One recorded tool call: name, arguments, and the result or the error text."""

    key: str
    name: str
    args: dict[str, JsonValue]
    result: JsonValue = None
    error: str | None = None
    side_effect: bool = False
    recorded_at: AwareDatetime
