"""How far a recorded chat's webhooks ran ahead of its arrivals: the sender's clock had moved.

A fixture keeps two times for each message the user sent: when it reached the
agent (the event's ``at``) and when its webhook says it was sent (the
message's ``timestamp``). Recorded in process, both come from one virtual
clock, and the timestamp is never later than the arrival. Recorded live by
``harness proxy``, ``at`` is the proxy's clock while the timestamp is the
sender's: Meta's, or that of a ``harness serve`` whose clock was moved with
its control API (``advance 25h``). A timestamp that runs further ahead of its
arrival than any before it means the sender's clock jumped in between; the
jump is in the timestamps the agent read, and nowhere in the arrivals, nor on
the agent's own clock.

A replay sends each message at its recorded arrival, stamped with the
replay's clock plus how far ahead the recording's webhooks had got by then
(:func:`moved_ahead`): an agent that judges a message's age by the timestamps
(a confirmation tapped 25 hours after it was asked for) sees the gaps it saw
live, while its own clock, which did not move live, does not move either.
A redelivery carries the timestamp of the message it repeats, as Meta's do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = ["moved_ahead", "webhook_time"]


def webhook_time(message: Mapping[str, Any]) -> datetime | None:
    """When a recorded message's webhook says it was sent (its ``timestamp``), if it says."""
    stamp = message.get("timestamp")
    if isinstance(stamp, bool) or not isinstance(stamp, str | int):
        return None
    try:
        return datetime.fromtimestamp(int(stamp), UTC)
    except (ValueError, OverflowError, OSError):
        return None


def moved_ahead(arrivals: Sequence[datetime], stamps: Sequence[datetime | None]) -> list[timedelta]:
    """How far the sender's clock had moved ahead of the arrivals by each message.

    ``arrivals[i]`` is when message ``i`` reached the agent and ``stamps[i]``
    its webhook's timestamp (None for a redelivery, or a message without
    one). The sender's clock counts as moved ahead by the most any timestamp
    so far ran ahead of its arrival; a timestamp at or behind its arrival (a
    message is sent before it arrives) moves nothing, and a clock never moves
    back.
    """
    ahead = timedelta(0)
    found: list[timedelta] = []
    for arrived, stamped in zip(arrivals, stamps, strict=True):
        if stamped is not None:
            ahead = max(ahead, stamped - arrived)
        found.append(ahead)
    return found
