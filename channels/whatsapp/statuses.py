"""Status webhooks: what happened to a message the business sent.

One ``Status`` model covers every value (``sent``, ``delivered``, ``read``,
``failed``, ``played``, and any Meta adds later); ``status()`` builds one.
``pricing`` rides on ``sent`` and on one of ``delivered``/``read``; a
``failed`` status carries ``errors``. Which statuses get pricing is the
simulator's decision, so the builder only adds what it is given.

``status_item`` and ``pricing_item`` build the same objects as JSON-ready
dicts, as the models would dump them: the simulator sends several statuses
for every message, and a model it builds only to dump at once costs more
than the rest of the status's way to the agent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias

from pydantic import TypeAdapter

from channels.whatsapp.errors import ErrorObject
from channels.whatsapp.payloads import (
    MetaModel,
    Timestamp,
    TimestampLike,
    format_timestamp,
    validate,
)

__all__ = [
    "Conversation",
    "ConversationOrigin",
    "Pricing",
    "Status",
    "StatusValue",
    "parse_status",
    "pricing",
    "pricing_item",
    "status",
    "status_item",
]

StatusValue: TypeAlias = Literal["sent", "delivered", "read", "failed", "played"]
"""The status values Meta documents; ``played`` is a voice message listened to."""


class Pricing(MetaModel):
    """How Meta bills the message (``pricing_model`` ``PMP`` since 2025-07-01)."""

    billable: bool | None = None
    pricing_model: str | None = None
    type: str | None = None
    category: str | None = None


class ConversationOrigin(MetaModel):
    """Where the conversation started (``service``, ``referral_conversion``...)."""

    type: str


class Conversation(MetaModel):
    """The conversation a status belongs to; Graph v24.0+ omits it outside free entry points."""

    id: str
    expiration_timestamp: Timestamp | None = None
    origin: ConversationOrigin | None = None


class Status(MetaModel):
    """One item of ``value.statuses``.

    ``recipient_user_id`` is the user's BSUID; ``biz_opaque_callback_data``
    echoes the value the send carried.
    """

    id: str
    status: str
    timestamp: Timestamp
    recipient_id: str | None = None
    recipient_user_id: str | None = None
    recipient_type: str | None = None
    recipient_participant_id: str | None = None
    recipient_identity_key_hash: str | None = None
    biz_opaque_callback_data: str | None = None
    conversation: Conversation | None = None
    pricing: Pricing | None = None
    errors: list[ErrorObject] | None = None

    @property
    def unix_time(self) -> int:
        """``timestamp`` as an int of unix seconds."""
        return int(self.timestamp)


_STATUS = TypeAdapter(Status)


def parse_status(data: Mapping[str, Any]) -> Status:
    """Parse one item of ``value.statuses``; raises ``PayloadError`` naming the bad field."""
    return validate(_STATUS, data, what="status")


def pricing(
    category: str = "service",
    *,
    type: str | None = None,
    billable: bool = True,
    pricing_model: str = "PMP",
) -> Pricing:
    """Build a ``pricing`` object.

    ``type`` defaults to ``free_customer_service`` for the ``service`` category
    (replies inside the customer-service window) and ``regular`` otherwise.
    """
    return Pricing(
        **pricing_item(category, type=type, billable=billable, pricing_model=pricing_model)
    )


def pricing_item(
    category: str = "service",
    *,
    type: str | None = None,
    billable: bool = True,
    pricing_model: str = "PMP",
) -> dict[str, Any]:
    """The ``pricing`` object of :func:`pricing`, as the JSON-ready dict it dumps to."""
    if type is None:
        type = "free_customer_service" if category == "service" else "regular"
    return {
        "billable": billable,
        "pricing_model": pricing_model,
        "type": type,
        "category": category,
    }


def status(
    wamid: str,
    status: StatusValue,
    timestamp: TimestampLike,
    recipient_id: str | None,
    *,
    recipient_user_id: str | None = None,
    pricing: Pricing | None = None,
    conversation: Conversation | None = None,
    errors: Sequence[ErrorObject] | None = None,
    biz_opaque_callback_data: str | None = None,
) -> Status:
    """Build a status for the business's message ``wamid``.

    A ``failed`` status needs ``errors`` (see ``errors.error_object``) and only
    it may have them; ``recipient_id`` may be ``None`` for a user known by BSUID
    alone.
    """
    _check_status(status, recipient_id, recipient_user_id, errors)
    return Status(
        id=wamid,
        status=status,
        timestamp=format_timestamp(timestamp),
        recipient_id=recipient_id,
        recipient_user_id=recipient_user_id,
        biz_opaque_callback_data=biz_opaque_callback_data,
        conversation=conversation,
        pricing=pricing,
        errors=None if errors is None else list(errors),
    )


def status_item(
    wamid: str,
    status: StatusValue,
    timestamp: TimestampLike,
    recipient_id: str | None,
    *,
    recipient_user_id: str | None = None,
    pricing: Mapping[str, Any] | None = None,
    conversation: Mapping[str, Any] | None = None,
    errors: Sequence[Mapping[str, Any]] | None = None,
    biz_opaque_callback_data: str | None = None,
) -> dict[str, Any]:
    """The status :func:`status` builds, as the JSON-ready dict its model dumps to.

    ``pricing``, ``conversation`` and ``errors`` are given as dicts already
    (:func:`pricing_item`; a model's ``to_dict()``); absent fields are left out.
    """
    _check_status(status, recipient_id, recipient_user_id, errors)
    item: dict[str, Any] = {"id": wamid, "status": status}
    item["timestamp"] = format_timestamp(timestamp)
    if recipient_id is not None:
        item["recipient_id"] = recipient_id
    if recipient_user_id is not None:
        item["recipient_user_id"] = recipient_user_id
    if biz_opaque_callback_data is not None:
        item["biz_opaque_callback_data"] = biz_opaque_callback_data
    if conversation is not None:
        item["conversation"] = dict(conversation)
    if pricing is not None:
        item["pricing"] = dict(pricing)
    if errors is not None:
        item["errors"] = [dict(e) for e in errors]
    return item


def _check_status(
    status: str, recipient_id: str | None, recipient_user_id: str | None, errors: object
) -> None:
    if recipient_id is None and recipient_user_id is None:
        raise ValueError("a status needs recipient_id (wa_id), recipient_user_id (BSUID) or both")
    if status == "failed" and not errors:
        raise ValueError("a failed status needs at least one error")
    if status != "failed" and errors:
        raise ValueError(f"only a failed status carries errors, not {status!r}")
