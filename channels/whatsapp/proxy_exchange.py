"""What passes through the recording proxy, as its app hands it to the recorder.

A :class:`WebhookDelivery` is one webhook POST from Meta as the proxy took
it; a :class:`GraphExchange` one Graph API call the agent made and the
answer it got.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

__all__ = ["GraphExchange", "WebhookDelivery", "parse_json_or_none"]


@dataclass(frozen=True, slots=True)
class WebhookDelivery:
    """One webhook POST as the proxy took it: its delivery id, attempt and items."""

    delivery: str
    attempt: int
    items: tuple[str, ...]
    user: str | None
    faults: tuple[str, ...]
    at: datetime
    digest: str


@dataclass(frozen=True, slots=True)
class GraphExchange:
    """One Graph API call the agent made through the proxy, and the upstream's answer.

    ``status_code`` is None when no answer came (``error`` says why; the
    agent then got the proxy's own 502 or 504, in ``response_body``).
    """

    method: str
    path: str
    at: datetime
    latency_ms: float
    request_body: bytes
    request_type: str
    status_code: int | None
    response_body: bytes
    response_type: str
    answered: int
    error: str | None = None


def parse_json_or_none(data: bytes) -> Any:
    """A body parsed as JSON, or None when it is not JSON."""
    try:
        return json.loads(data)
    except ValueError:
        return None
