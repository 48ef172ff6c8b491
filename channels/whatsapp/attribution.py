"""Which scenario a model call or a span belongs to, when several scenarios share one server.

``harness run --target-url`` plays scenarios at once against one agent,
which reaches one harness server for all of them. A replay needs no
attribution (the key is the request), but a recording must file each call
under its scenario, and a span's tool call belongs in one scenario's trace.
The rules, first match wins:

1. the request or span names the scenario: an ``X-Harness-Scenario`` header
   on the model call (an SDK's default headers), a ``harness.scenario``
   attribute on the span (the agent copies the header its webhook carried);
2. a span's ``user.id`` (or ``enduser.id``) is a user of a running scenario;
3. only one scenario is running;
4. for a model call, the request quotes what a user of a running scenario
   wrote: the scenario whose user wrote the most recent message the request
   holds wins (agents put the user's words in the prompt);
5. in replay, the one running scenario whose recording holds the request's key.

Where none applies, the call can't be attributed: a model call then goes to
the scenario whose user wrote last, and a span is dropped (and counted).
That happens when an agent rewrites the user's words before asking its
model and two scenarios run at once, or when a span carries no user and no
scenario while several run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime

from harness.canonical import canonical_json
from harness.trace import Event, InboundMessage

__all__ = ["latest_quoted", "request_text"]


def request_text(messages: object) -> str:
    """The request's messages as one text, to look users' words up in."""
    return canonical_json(messages)


def latest_quoted(events: Iterable[Event], text: str) -> datetime | None:
    """When the latest user message that ``text`` quotes was received (None: it quotes none)."""
    for event in reversed(list(events)):
        if isinstance(event, InboundMessage) and not event.duplicate and event.text:
            # As the request's JSON writes the words: quotes and line breaks escaped.
            quoted = json.dumps(event.text, ensure_ascii=False)[1:-1]
            if quoted in text:
                return event.at
    return None
