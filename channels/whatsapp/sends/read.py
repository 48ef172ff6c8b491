"""Read receipts and typing indicators: ``{"status": "read", "message_id": ...}``.

Marking a message read marks the earlier ones too; adding
``typing_indicator`` shows "typing..." until the reply (or 25 s). Some
clients add the addressee, which Meta accepts and ignores.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict

from channels.whatsapp.sends.common import SendAction, SendSummary
from channels.whatsapp.sends.fields import Maybe, NonEmpty, SendModel

__all__ = ["ReadReceipt", "TypingIndicator"]


class TypingIndicator(SendModel):
    """``typing_indicator``: ``text`` is the only kind."""

    type: Literal["text"]


class ReadReceipt(SendModel):
    """A read receipt, with a typing indicator or without."""

    model_config = ConfigDict(extra="forbid")

    messaging_product: Literal["whatsapp"]
    status: Literal["read"]
    message_id: NonEmpty
    typing_indicator: Maybe[TypingIndicator] = None
    to: Maybe[str] = None
    recipient: Maybe[str] = None
    recipient_type: Maybe[str] = None

    @property
    def action(self) -> SendAction:
        """A read receipt (``mark_read``), or one with a typing indicator (``typing``)."""
        return "mark_read" if self.typing_indicator is None else "typing"

    def summary(self) -> SendSummary:
        """The message read."""
        return {"message_id": self.message_id}
