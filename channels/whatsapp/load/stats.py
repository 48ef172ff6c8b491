"""What a load run counts: reply latencies, their percentiles, and a timeline.

Every reply latency is kept (8 bytes each, bounded by the plan's message cap),
so the percentiles are exact, not estimated. The timeline counts, second by
second of the run, what was sent, answered, lost or refused, and how the
latencies fell into :data:`LATENCY_BINS`: the report draws it as a histogram
of latency over time.

A turn whose reply the Graph API refused under Meta's rules (a limit, the
window) is not a lost reply: it is counted by the refusal's code, so a report
says "refused (130429)" where the agent hit the throughput limit.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["LATENCY_BINS", "LoadStats", "Second", "percentile"]

#: Upper edges of the latency bins, in seconds; a last bin holds what is slower.
LATENCY_BINS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) of ``values``, interpolating between ranks.

    Sorted values ``v[0..n-1]`` give ``v[k]`` at rank ``k = (n - 1) * q / 100``,
    and a straight line between neighbours when ``k`` falls between two: the
    usual definition (spreadsheets', and numpy's default). ``None`` when empty.
    """
    if not 0 <= q <= 100:
        raise ValueError(f"a percentile is between 0 and 100, not {q}")
    return _ranked(sorted(values), q)


def _ranked(ordered: Sequence[float], q: float) -> float | None:
    if not ordered:
        return None
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(slots=True)
class Second:
    """One second of the run: what happened in it, and its latencies by bin."""

    sent: int = 0
    replied: int = 0
    lost: int = 0
    refused: int = 0
    errors: int = 0
    bins: list[int] = field(default_factory=lambda: [0] * (len(LATENCY_BINS) + 1))


class LoadStats:
    """The tally of a run, fed by the users and the fake Graph API as things happen.

    Times are seconds on the event loop's clock; ``start`` is when the run began.
    """

    def __init__(self, start: float) -> None:
        self.start = start
        self.latencies: array[float] = array("d")
        self.acks: array[float] = array("d")
        self.sent = 0
        self.turns = 0
        self.replied = 0
        self.lost = 0
        self.duplicated = 0
        self.extra = 0
        self.late = 0
        self.unexpected = 0
        #: Webhook POSTs that failed, by reason (``HTTP 500``, ``timeout``, ``connection``).
        self.webhook_errors: Counter[str] = Counter()
        #: Sends the fake Graph API refused, by Meta's error code.
        self.refused: Counter[int] = Counter()
        #: Turns with no reply but a refused send (and none accepted later), by Meta's code.
        self.refused_turns: Counter[int] = Counter()
        #: Status webhooks the agent answered with a 2xx, by status (``sent``, ``read`` ...).
        self.statuses: Counter[str] = Counter()
        #: Status webhook POSTs that failed, by reason (as :attr:`webhook_errors`).
        self.status_errors: Counter[str] = Counter()
        #: Statuses still scheduled when the run ended, never sent.
        self.statuses_unsent = 0
        self.timeline: dict[int, Second] = {}
        #: When the last message was sent or reply came (throughput is counted up to it).
        self.last_event = start

    def _second(self, at: float) -> Second:
        index = max(int(at - self.start), 0)
        second = self.timeline.get(index)
        if second is None:
            second = self.timeline[index] = Second()
        return second

    def message_sent(self, at: float) -> None:
        """A user message was POSTed to the webhook."""
        self.sent += 1
        self.last_event = max(self.last_event, at)
        self._second(at).sent += 1

    def webhook_answered(self, took: float) -> None:
        """The webhook answered a POST with a 2xx after ``took`` seconds."""
        self.acks.append(took)

    def webhook_failed(self, at: float, reason: str) -> None:
        """A webhook POST failed (non-2xx answer, timeout, no connection)."""
        self.webhook_errors[reason] += 1
        self._second(at).errors += 1

    def send_refused(self, at: float, code: int) -> None:
        """The fake Graph API refused one of the agent's sends with Meta's ``code``."""
        self.refused[code] += 1
        self._second(at).errors += 1

    def reply(self, at: float, latency: float) -> None:
        """A turn got its first reply ``latency`` seconds after the user's last message."""
        self.replied += 1
        self.last_event = max(self.last_event, at)
        self.latencies.append(latency)
        second = self._second(at)
        second.replied += 1
        second.bins[bisect_left(LATENCY_BINS, latency)] += 1

    def turn_lost(self, at: float) -> None:
        """A turn got no reply within the reply timeout."""
        self.lost += 1
        self._second(at).lost += 1

    def turn_refused(self, at: float, code: int) -> None:
        """A turn got no reply within the reply timeout, its reply refused with ``code``."""
        self.refused_turns[code] += 1
        self._second(at).refused += 1

    def status_posted(self, at: float, status: str, failure: str | None) -> None:
        """A status webhook was POSTed: answered 2xx (``failure`` is ``None``) or not."""
        if failure is None:
            self.statuses[status] += 1
        else:
            self.status_errors[failure] += 1
            self._second(at).errors += 1

    def summary(self, elapsed: float) -> dict[str, Any]:
        """The figures of the run so far, as plain data (the JSON report's ``results``).

        Throughput is counted over the active part of the run: from its start to
        the last message or reply (not the wait for replies that never came).
        """
        active = max(min(elapsed, self.last_event - self.start), 1e-9)
        return {
            "elapsed_s": round(elapsed, 3),
            "active_s": round(active, 3),
            "messages_sent": self.sent,
            "turns": self.turns,
            "replies": self.replied,
            "lost_replies": self.lost,
            "duplicated_replies": self.duplicated,
            "extra_sends": self.extra,
            "late_replies": self.late,
            "unexpected_sends": self.unexpected,
            "webhook_errors": dict(sorted(self.webhook_errors.items())),
            "refused_sends": {str(code): n for code, n in sorted(self.refused.items())},
            "refused_turns": {str(code): n for code, n in sorted(self.refused_turns.items())},
            "statuses_answered": dict(sorted(self.statuses.items())),
            "status_webhook_errors": dict(sorted(self.status_errors.items())),
            "statuses_unsent": self.statuses_unsent,
            "errors": self.errors,
            "messages_per_s": round(self.sent / active, 2),
            "replies_per_s": round(self.replied / active, 2),
            "latency_s": _percentiles(self.latencies),
            "webhook_ack_s": _percentiles(self.acks),
        }

    @property
    def errors(self) -> int:
        """Failed webhook POSTs (messages and statuses) and refused sends."""
        webhooks = sum(self.webhook_errors.values()) + sum(self.status_errors.values())
        return webhooks + sum(self.refused.values())


def _percentiles(values: Sequence[float]) -> dict[str, float | None]:
    ordered = sorted(values)
    figures: dict[str, float | None] = {}
    for name, q in (("p50", 50), ("p95", 95), ("p99", 99), ("max", 100)):
        value = _ranked(ordered, q)
        figures[name] = None if value is None else round(value, 6)
    figures["mean"] = round(sum(values) / len(values), 6) if values else None
    return figures
