"""Who answered a model request: the live API, an offline stand-in, or a recording of either.

A conversation's model calls name the model the agent asked for
(``claude-sonnet-4-6``), and the answer may come from somewhere else: a
deterministic stand-in that answers from rules with no model at all (the
booking agent's ``ScriptedModel``, used when there is no API key), or a
recording replayed. Reports and spans must say which, plainly.

A model client says who it is with a ``provider`` attribute: :data:`ANTHROPIC`
for :class:`~harness.llm.AnthropicClient` (Anthropic's Messages API, or a
server speaking it at ``base_url``), :data:`STAND_IN` for an offline
stand-in. The model endpoint names the provider it forwards to:
:data:`ANTHROPIC` or :data:`OPENAI` for their own APIs, nothing (None) for
another upstream. A client that says nothing is named by its class. The recorders
put the provider on each :class:`~harness.trace.LLMExchange` and
:class:`~harness.records.LLMRecord`, and an exchange answered from a
recording keeps the provider that answered when it was recorded (``source``
says it was replayed).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from harness.trace import LLMExchange

__all__ = [
    "ANTHROPIC",
    "NOT_RECORDED",
    "OPENAI",
    "STAND_IN",
    "ModelCount",
    "answered_by",
    "describe_provider",
    "exchange_label",
    "model_counts",
    "provider_of",
    "span_provider_attributes",
]

#: Anthropic's Messages API, live (:class:`~harness.llm.AnthropicClient`).
ANTHROPIC: Final = "anthropic"
#: OpenAI's Chat Completions API, live (through the model endpoint).
OPENAI: Final = "openai"
#: Why a replay's model endpoint refused a call (the ``error`` of its exchange): the
#: recording has no answer to it, and a pinned replay asks no provider.
NOT_RECORDED: Final = "refused: not in the recording"
#: A deterministic offline stand-in: rules that answer in the shape of a model, no model at all.
STAND_IN: Final = "offline-stand-in"

_NAMES: Final = {
    ANTHROPIC: "the Anthropic API",
    OPENAI: "the OpenAI API",
    STAND_IN: "the offline stand-in (no model)",
}


def provider_of(client: object) -> str:
    """Who answers ``client``'s requests: its ``provider`` attribute, else its class's name."""
    provider = getattr(client, "provider", None)
    return provider if isinstance(provider, str) and provider else type(client).__name__


def describe_provider(provider: str | None) -> str:
    """A provider named as reports name it: ``the offline stand-in (no model)``."""
    if provider is None:
        return "an unrecorded provider"
    return _NAMES.get(provider, provider)


def answered_by(provider: str | None, model: str) -> str:
    """Who answered a request for ``model``, in a few words.

    ``claude-sonnet-4-6 via the Anthropic API``; for a stand-in, the
    stand-in first: ``the offline stand-in (no model), asked for claude-sonnet-4-6``.
    """
    who = describe_provider(provider)
    return f"{who}, asked for {model}" if provider == STAND_IN else f"{model} via {who}"


def exchange_label(exchange: LLMExchange) -> str:
    """Who answered one model call (:func:`answered_by`), ``recorded: ...`` when replayed."""
    said = answered_by(exchange.provider, exchange.model)
    return f"recorded: {said}" if exchange.source == "recorded" else said


@dataclass(frozen=True)
class ModelCount:
    """How many model calls of a run one provider answered for one model, live or replayed.

    ``source`` is ``live``, ``recorded``, or ``refused`` for calls a replay
    refused (``provider`` is then None: none was asked).
    """

    provider: str | None
    model: str
    source: str
    calls: int

    @property
    def label(self) -> str:
        """``57 model calls: the offline stand-in (no model), asked for claude-sonnet-4-6``.

        Calls a replay refused say so: ``3 model calls refused: not in the recording
        (asked for claude-sonnet-4-6)``.
        """
        noun = "model call" if self.calls == 1 else "model calls"
        if self.source == "refused":
            return f"{self.calls} {noun} {NOT_RECORDED} (asked for {self.model})"
        replayed = " replayed from a recording" if self.source == "recorded" else ""
        return f"{self.calls} {noun}{replayed}: {answered_by(self.provider, self.model)}"


def model_counts(exchanges: Iterable[LLMExchange]) -> list[ModelCount]:
    """The model calls of a run counted by who answered, for which model, live or replayed.

    A call that got no answer (its ``error`` says why) is not counted, but for
    one a replay refused, counted as ``refused`` (no provider answered it).

    Most common first.
    """
    counts = Counter(
        (e.provider, e.model, e.source) if e.error is None else (None, e.model, "refused")
        for e in exchanges
        if e.error is None or e.error == NOT_RECORDED
    )
    return [
        ModelCount(provider, model, source, calls)
        for (provider, model, source), calls in counts.most_common()
    ]


def span_provider_attributes(provider: str | None, source: str) -> dict[str, str]:
    """The span attributes that name who answered an exchange, and how.

    ``gen_ai.provider.name`` (and the older ``gen_ai.system``) is the
    provider's name, ``unknown`` when the record does not say;
    ``harness.llm.source`` is ``live`` for an answer the provider gave then,
    ``recorded`` for one replayed from an earlier recording.
    """
    name = provider or "unknown"
    return {
        "gen_ai.provider.name": name,
        "gen_ai.system": name,
        "harness.llm.provider": describe_provider(provider),
        "harness.llm.source": source,
    }
