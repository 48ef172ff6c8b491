"""Endpoints any agent can reach over HTTP, whatever it is written with.

The model endpoint (:mod:`harness.endpoints.model`) speaks Anthropic's
Messages API and OpenAI's Chat Completions, so an agent records and replays
by pointing its SDK's base URL at a harness server; the OTLP receiver
(:mod:`harness.endpoints.otlp`) turns the GenAI spans an agent already emits
into the run's model and tool events. Both are Starlette routes that
``harness serve``, ``harness proxy`` and ``harness run --target-url`` mount
(together, through :mod:`~harness.endpoints.mount`); the wire formats live in
:mod:`~harness.endpoints.anthropic_wire` and :mod:`~harness.endpoints.openai_wire`.
"""

from __future__ import annotations

from harness.endpoints.anthropic_wire import (
    ANTHROPIC_ERROR_TYPES,
    anthropic_error,
    anthropic_events,
    anthropic_message,
    check_anthropic_request,
    parse_anthropic_message,
)
from harness.endpoints.model import (
    ANTHROPIC_PATH,
    ANTHROPIC_UPSTREAM,
    OPENAI_PATH,
    OPENAI_UPSTREAM,
    ModelEndpoint,
    Seat,
    Seating,
    request_key,
)
from harness.endpoints.mount import Endpoints, Stamp
from harness.endpoints.openai_wire import (
    check_openai_request,
    openai_chunks,
    openai_completion,
    openai_error,
    parse_openai_completion,
)
from harness.endpoints.otlp import MODEL_OPERATIONS, OTLP_TRACES_PATH, OTLPReceiver, span_events

__all__ = [
    "ANTHROPIC_ERROR_TYPES",
    "ANTHROPIC_PATH",
    "ANTHROPIC_UPSTREAM",
    "MODEL_OPERATIONS",
    "OPENAI_PATH",
    "OPENAI_UPSTREAM",
    "OTLP_TRACES_PATH",
    "Endpoints",
    "ModelEndpoint",
    "OTLPReceiver",
    "Seat",
    "Seating",
    "Stamp",
    "anthropic_error",
    "anthropic_events",
    "anthropic_message",
    "check_anthropic_request",
    "check_openai_request",
    "openai_chunks",
    "openai_completion",
    "openai_error",
    "parse_anthropic_message",
    "parse_openai_completion",
    "request_key",
    "span_events",
]
