"""Endpoints any agent can reach over HTTP, whatever it is written with.

The model endpoint (:mod:`harness.endpoints.model`) speaks Anthropic's
Messages API and OpenAI's Chat Completions, so an agent records and replays
by pointing its SDK's base URL at a harness server; the OTLP receiver
(:mod:`harness.endpoints.otlp`) turns the GenAI spans an agent already emits
into the run's model and tool events. Both are Starlette routes that
``harness serve``, ``harness proxy`` and ``harness run --target-url`` mount
(together, through :mod:`~harness.endpoints.mount`); the wire formats live in
:mod:`~harness.endpoints.anthropic_wire` and :mod:`~harness.endpoints.openai_wire`.

Names load on first use (see :mod:`harness.lazy`): a command that offers
the upstreams as defaults imports neither the endpoint nor Starlette.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_names

if TYPE_CHECKING:
    from harness.endpoints.anthropic_wire import *
    from harness.endpoints.model import *
    from harness.endpoints.mount import *
    from harness.endpoints.openai_wire import *
    from harness.endpoints.otlp import *
    from harness.endpoints.upstreams import *

#: The module that owns each public name.
_OWNERS: dict[str, str] = {
    "ANTHROPIC_ERROR_TYPES": "harness.endpoints.anthropic_wire",
    "ANTHROPIC_PATH": "harness.endpoints.model",
    "ANTHROPIC_UPSTREAM": "harness.endpoints.upstreams",
    "Endpoints": "harness.endpoints.mount",
    "MODEL_OPERATIONS": "harness.endpoints.otlp",
    "ModelEndpoint": "harness.endpoints.model",
    "OPENAI_PATH": "harness.endpoints.model",
    "OPENAI_UPSTREAM": "harness.endpoints.upstreams",
    "OTLPReceiver": "harness.endpoints.otlp",
    "OTLP_TRACES_PATH": "harness.endpoints.otlp",
    "Placer": "harness.endpoints.otlp",
    "Seat": "harness.endpoints.model",
    "Seating": "harness.endpoints.model",
    "Stamp": "harness.endpoints.mount",
    "anthropic_error": "harness.endpoints.anthropic_wire",
    "anthropic_events": "harness.endpoints.anthropic_wire",
    "anthropic_message": "harness.endpoints.anthropic_wire",
    "check_anthropic_request": "harness.endpoints.anthropic_wire",
    "check_openai_request": "harness.endpoints.openai_wire",
    "openai_chunks": "harness.endpoints.openai_wire",
    "openai_completion": "harness.endpoints.openai_wire",
    "on_clock": "harness.endpoints.otlp",
    "openai_error": "harness.endpoints.openai_wire",
    "parse_anthropic_message": "harness.endpoints.anthropic_wire",
    "parse_openai_completion": "harness.endpoints.openai_wire",
    "request_key": "harness.endpoints.model",
    "span_events": "harness.endpoints.otlp",
}

__all__ = sorted(_OWNERS)

_load, __dir__ = lazy_names(__name__, _OWNERS)

if not TYPE_CHECKING:
    # Hidden from type checkers: a visible module __getattr__ would make them
    # accept any name, typos included, as ``object``.
    __getattr__ = _load
