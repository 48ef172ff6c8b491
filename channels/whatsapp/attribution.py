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
   holds wins (agents put the user's words in the prompt); words that users
   of several running scenarios wrote ("yes") tell nothing apart, so they
   count only when the request quotes nothing else;
5. in replay, the one running scenario whose recording holds the request's key.

Where none applies, the call can't be attributed: a model call then goes to
the scenario whose user wrote last, and a span is dropped (and counted).
That happens when an agent rewrites the user's words before asking its
model and two scenarios run at once, or when a span carries no user and no
scenario while several run.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from datetime import datetime

from harness.canonical import canonical_json
from harness.trace import Event, InboundMessage

__all__ = ["latest_quoted", "most_recently_quoted", "request_text"]


def request_text(messages: object) -> str:
    """The request's messages as one text, to look users' words up in."""
    return canonical_json(messages)


def latest_quoted(
    events: Iterable[Event], text: str, shared: Collection[str] = ()
) -> datetime | None:
    """When the latest user message that ``text`` quotes was received (None: it quotes none).

    Messages whose words are in ``shared`` are passed over.
    """
    for event in reversed(list(events)):
        if isinstance(event, InboundMessage) and not event.duplicate and event.text:
            if event.text in shared:
                continue
            # As the request's JSON writes the words: quotes and line breaks escaped.
            quoted = json.dumps(event.text, ensure_ascii=False)[1:-1]
            if quoted in text:
                return event.at
    return None


def _said(events: Iterable[Event]) -> set[str]:
    return {e.text for e in events if isinstance(e, InboundMessage) and e.text and not e.duplicate}


def most_recently_quoted(traces: Sequence[Sequence[Event]], text: str) -> int | None:
    """Which of ``traces`` holds the latest user message ``text`` quotes (rule 4), if any.

    Words that users of more than one trace wrote are passed over, unless
    nothing else is quoted.
    """
    counts: dict[str, int] = {}
    for trace in traces:
        for said in _said(trace):
            counts[said] = counts.get(said, 0) + 1
    shared = {said for said, n in counts.items() if n > 1}
    for passed_over in (shared, set()):
        quoted = [
            (at, i) for i, t in enumerate(traces) if (at := latest_quoted(t, text, passed_over))
        ]
        if quoted:
            return max(quoted)[1]
    return None
