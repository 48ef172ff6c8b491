"""Statuses built as dicts are, byte for byte, what the status models dump."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from channels.whatsapp.envelope import build_webhook, contact, contact_item, webhook_body
from channels.whatsapp.errors import ReEngagementRequired
from channels.whatsapp.signing import serialize
from channels.whatsapp.statuses import (
    Conversation,
    ConversationOrigin,
    pricing,
    pricing_item,
    status,
    status_item,
)

AT = datetime(2026, 3, 1, 12, 0, 5, tzinfo=UTC)
CONVERSATION = Conversation(
    id="c1", expiration_timestamp="1772452805", origin=ConversationOrigin(type="service")
)
CASES: list[tuple[str, str | None, str | None, dict[str, Any]]] = [
    ("sent", "5511987654321", "BR.1", {"pricing": "service"}),
    ("delivered", "5511987654321", None, {"pricing": "utility", "conversation": True}),
    ("read", None, "BR.2", {"biz_opaque_callback_data": "tracking 7"}),
    ("read", "5511987654321", "BR.1", {}),
    ("failed", "5511987654321", "BR.1", {"errors": True, "biz_opaque_callback_data": "x"}),
]


@pytest.mark.parametrize(("name", "wa_id", "user_id", "extra"), CASES)
def test_a_status_built_as_a_dict_is_the_models_dump(
    name: Any, wa_id: str | None, user_id: str | None, extra: dict[str, Any]
) -> None:
    category = extra.get("pricing")
    errors = [ReEngagementRequired().to_error_object()] if extra.get("errors") else None
    conversation = CONVERSATION if extra.get("conversation") else None
    model = status(
        "wamid.X",
        name,
        AT,
        wa_id,
        recipient_user_id=user_id,
        pricing=None if category is None else pricing(category),
        conversation=conversation,
        errors=errors,
        biz_opaque_callback_data=extra.get("biz_opaque_callback_data"),
    )
    item = status_item(
        "wamid.X",
        name,
        AT,
        wa_id,
        recipient_user_id=user_id,
        pricing=None if category is None else pricing_item(category),
        conversation=None if conversation is None else conversation.to_dict(),
        errors=None if errors is None else [e.to_dict() for e in errors],
        biz_opaque_callback_data=extra.get("biz_opaque_callback_data"),
    )
    assert item == model.to_dict()
    ids: dict[str, Any] = {"waba_id": "W", "phone_number_id": "P", "display_phone_number": "1555"}
    from_models = build_webhook(statuses=[model], contacts=[contact(wa_id, user_id=user_id)], **ids)
    from_dicts = webhook_body(statuses=[item], contacts=[contact_item(wa_id, user_id)], **ids)
    assert serialize(from_dicts) == serialize(from_models)  # the signed bytes: key order too


def test_the_dict_builders_refuse_what_the_models_refuse() -> None:
    with pytest.raises(ValueError, match="recipient_id"):
        status_item("w", "sent", AT, None)
    with pytest.raises(ValueError, match="at least one error"):
        status_item("w", "failed", AT, "1")
    with pytest.raises(ValueError, match="only a failed status"):
        status_item("w", "read", AT, "1", errors=[{"code": 1}])
    with pytest.raises(ValueError, match="wa_id, user_id"):
        contact_item(None, None)
    with pytest.raises(ValueError, match="at least one"):
        webhook_body(waba_id="W", phone_number_id="P", display_phone_number="1", statuses=[])
