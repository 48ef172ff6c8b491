"""How two conversations differ, turn by turn: a recording against its replay, or two runs.

:func:`diff_conversations` pairs the turns of conversation A with those of B
and compares what matters in each pair: the user's messages (type, text,
tapped reply id), the agent's tool calls (name, arguments, failures), the
agent's messages (type, text, header and footer, interactive options,
template name, language and parameters) and how far each got (refused,
sent, delivered, read, failed with which codes). What changes from run to
run without meaning anything is ignored: message ids (wamids), delivery ids
and attempts, latency, model-call keys and token counts, and virtual times
unless ``compare_times=True``.

Turns are paired by their index; when both conversations have the same
users, by each user's own turn count, so two users' turns that swapped
places in time still pair up. The result is a frozen :class:`ConversationDiff`
of :class:`TurnDiff` rows whose ``changes`` are ready-to-print lines such as
``reply 2 text differs: 'Booked for 8pm' -> 'Booked for 9pm'``. The
comparison is pure and deterministic: the same pair gives the same lines.

The result's models are in :mod:`~harness.replay.diff.result`, the pairing in
:mod:`~harness.replay.diff.conversations`; private modules hold how values are
written, how a sent message is read and how the parts of a turn compare.
"""

from __future__ import annotations

from harness.replay.diff.conversations import (
    diff_conversations,
)
from harness.replay.diff.result import (
    ConversationDiff,
    TurnDiff,
    TurnStatus,
)

__all__ = [
    "ConversationDiff",
    "TurnDiff",
    "TurnStatus",
    "diff_conversations",
]
