"""The conversation as the judge reads it: what the user lived through, one event a line.

Messages are shown whole (the suites' transcript clips them), and no line
carries a time of day, so a replay renders the same lines and hits the
recorded verdict.
"""

from __future__ import annotations

from typing import Final

from harness.canonical import canonical_json
from harness.replay.judge._base import shorten
from harness.suites.transcript import Transcript, render_event
from harness.trace import (
    ClockJump,
    Conversation,
    Event,
    InboundMessage,
    OutboundSend,
    StatusUpdate,
    ToolCall,
)

__all__ = ["render_transcript"]

# render_event shows a message's text clipped to one line; the judge must read it whole.
# A private-use character goes through render_event untouched and is swapped for the text.
_TEXT_SLOT: Final = "\ue000"


def _shown(event: Event) -> bool:
    """Whether the judge sees an event: what the user lived through, not channel mechanics."""
    if isinstance(event, InboundMessage):
        return not event.duplicate  # a redelivered copy is the channel's doing, not the user's
    if isinstance(event, OutboundSend):
        return event.is_message  # refused sends too: the user waited for them in vain
    if isinstance(event, StatusUpdate):
        return event.status == "failed"
    return isinstance(event, ToolCall | ClockJump)


def render_transcript(conversation: Conversation) -> list[str]:
    """The conversation as the judge reads it, one event a line (messages in full).

    User and agent messages (refused sends included), tool calls with their
    results, failed statuses and clock jumps, in log order; redelivered
    copies, receipts, typing, deliveries and model calls are left out. No
    line carries a time of day, so a replay renders the same lines.
    """
    transcript = Transcript(conversation)
    lines: list[str] = []
    for index, event in enumerate(transcript.events):
        if not _shown(event):
            continue
        turn = transcript.turn(index)
        names, recipient = transcript.names, transcript.recipient
        if isinstance(event, InboundMessage | OutboundSend) and event.text:
            slotted = event.model_copy(update={"text": _TEXT_SLOT})
            full = "\n    ".join(event.text.strip().splitlines())
            line = render_event(slotted, turn, names=names, recipient=recipient)
            line = line.replace(_TEXT_SLOT, full, 1)
        else:
            line = render_event(event, turn, names=names, recipient=recipient)
        if isinstance(event, ToolCall) and event.error is None:
            line += f" -> {shorten(canonical_json(event.result), 300)}"
        elif isinstance(event, StatusUpdate):
            send = conversation.send_for(event.wamid)
            if send is not None and send.text:
                line += f" (the agent's message {shorten(repr(send.text.strip()), 80)})"
        lines.append(line)
    return lines
