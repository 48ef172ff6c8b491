"""Webhook payloads: data files, the envelope, parsing, malformed bodies, batching, updates."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TypedDict

import pytest

from channels.whatsapp.envelope import (
    MAX_UPDATES_PER_WEBHOOK,
    Change,
    ErrorUpdate,
    MessageUpdate,
    OtherChange,
    StatusUpdate,
    Update,
    batch_webhooks,
    build_webhook,
    contact,
    iter_updates,
    parse_webhook,
)
from channels.whatsapp.messages import (
    AudioMessage,
    ButtonMessage,
    ButtonReplyInteractive,
    ContactsMessage,
    DocumentMessage,
    ImageMessage,
    InteractiveMessage,
    ListReplyInteractive,
    LocationMessage,
    MessageBase,
    ReactionMessage,
    StickerMessage,
    TextMessage,
    UnknownInteractive,
    UnknownMessage,
    UnsupportedMessage,
    VideoMessage,
    parse_message,
    reaction,
    text_message,
)
from channels.whatsapp.payloads import PayloadError, format_timestamp
from channels.whatsapp.signing import serialize
from channels.whatsapp.statuses import (
    ConversationOrigin,
    parse_status,
    status,
)
from harness.exceptions import ChannelError

DATA = Path(__file__).parents[2] / "data" / "whatsapp"
DATA_FILES = sorted(DATA.glob("*.json"))

WABA = "1029384756473829"


class _Number(TypedDict):
    phone_number_id: str
    display_phone_number: str


NUMBER = _Number(phone_number_id="100200300400500", display_phone_number="15550001111")
ANA = contact("5511987654321", "Ana", user_id="BR.40654240771908059031")


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
    return data


def _value(data: dict[str, Any]) -> dict[str, Any]:
    value: dict[str, Any] = data["entry"][0]["changes"][0]["value"]
    return value


def _only_update(body: dict[str, Any] | bytes) -> Update:
    updates = list(iter_updates(parse_webhook(body)))
    assert len(updates) == 1
    return updates[0]


# Data files: every one parses and dumps back to the same JSON.


def test_there_is_a_data_file_per_type_and_status() -> None:
    names = {path.stem for path in DATA_FILES}
    kinds = {"text", "interactive_button_reply", "interactive_list_reply", "button", "image"}
    kinds |= {"audio", "video", "document", "sticker", "location", "contacts", "reaction"}
    kinds |= {"unsupported"}
    assert {f"message_{kind}" for kind in kinds} <= names
    assert {f"status_{s}" for s in ("sent", "delivered", "read", "failed", "played")} <= names
    assert {"batched", "bsuid_username_only", "unknown_fields", "value_errors"} <= names


@pytest.mark.parametrize("path", DATA_FILES, ids=[p.stem for p in DATA_FILES])
def test_data_file_round_trips(path: Path) -> None:
    raw = path.read_bytes()
    original = json.loads(raw)
    parsed = parse_webhook(raw)
    assert parsed.to_dict() == original
    assert parse_webhook(original) == parsed
    assert parse_webhook(serialize(parsed.to_dict())) == parsed


EXPECTED_MESSAGE_CLASS: dict[str, type[MessageBase]] = {
    "message_text": TextMessage,
    "message_text_reply": TextMessage,
    "message_text_forwarded": TextMessage,
    "message_interactive_button_reply": InteractiveMessage,
    "message_interactive_list_reply": InteractiveMessage,
    "message_interactive_nfm_reply": InteractiveMessage,
    "message_button": ButtonMessage,
    "message_image": ImageMessage,
    "message_audio": AudioMessage,
    "message_video": VideoMessage,
    "message_document": DocumentMessage,
    "message_sticker": StickerMessage,
    "message_location": LocationMessage,
    "message_contacts": ContactsMessage,
    "message_reaction": ReactionMessage,
    "message_reaction_removed": ReactionMessage,
    "message_unsupported": UnsupportedMessage,
    "message_order": UnknownMessage,
    "bsuid_username_only": TextMessage,
    "unknown_fields": TextMessage,
}


@pytest.mark.parametrize(("name", "cls"), EXPECTED_MESSAGE_CLASS.items())
def test_data_file_message_class(name: str, cls: type[MessageBase]) -> None:
    update = _only_update(_load(name))
    assert isinstance(update, MessageUpdate)
    assert type(update.message) is cls
    assert update.waba_id == WABA
    assert update.metadata.phone_number_id == "100200300400500"
    assert update.contact is not None
    assert update.contact.profile is not None


def test_interactive_kinds() -> None:
    def interactive(name: str) -> object:
        update = _only_update(_load(name))
        assert isinstance(update, MessageUpdate)
        assert isinstance(update.message, InteractiveMessage)
        return update.message.interactive

    button = interactive("message_interactive_button_reply")
    assert isinstance(button, ButtonReplyInteractive)
    assert (button.button_reply.id, button.button_reply.title) == ("keep", "Keep")
    row = interactive("message_interactive_list_reply")
    assert isinstance(row, ListReplyInteractive)
    assert row.list_reply.description == "1-2 days"
    flow = interactive("message_interactive_nfm_reply")
    assert isinstance(flow, UnknownInteractive)
    assert flow.type == "nfm_reply"
    assert flow.model_extra is not None
    assert "flow_token" in flow.model_extra["nfm_reply"]["response_json"]


def test_unknown_type_keeps_its_fields() -> None:
    update = _only_update(_load("message_order"))
    assert isinstance(update, MessageUpdate)
    message = update.message
    assert isinstance(message, UnknownMessage)
    assert message.type == "order"
    assert message.model_extra is not None
    assert message.model_extra["order"]["product_items"][0]["quantity"] == 1


def test_unknown_fields_survive_at_every_level() -> None:
    original = _load("unknown_fields")
    payload = parse_webhook(original)
    assert payload.model_extra == {"api_version": "v26.0"}
    entry = payload.entry[0]
    assert entry.model_extra == {"time": 1777033200}
    change = entry.changes[0]
    assert isinstance(change, Change)
    assert change.model_extra == {"delivery_attempt": 1}
    message = change.value.messages[0] if change.value.messages else None
    assert isinstance(message, TextMessage)
    assert message.model_extra == {
        "sentiment": {"score": 0.8, "labels": ["positive"]},
        "edited": None,
    }
    assert message.text.model_extra == {"lang_hint": "pt"}
    assert message.context is not None
    assert message.context.model_extra is not None
    assert "referred_product" in message.context.model_extra
    dumped = payload.to_dict()
    assert dumped == original
    assert _value(dumped)["messages"][0]["edited"] is None  # an unknown null stays a null


def test_reaction_removal_forms() -> None:
    added = _only_update(_load("message_reaction"))
    removed = _only_update(_load("message_reaction_removed"))
    assert isinstance(added, MessageUpdate)
    assert isinstance(removed, MessageUpdate)
    assert isinstance(added.message, ReactionMessage)
    assert isinstance(removed.message, ReactionMessage)
    assert added.message.reaction.emoji == "👍"
    assert removed.message.reaction.emoji is None
    emptied = reaction("wamid.R", "1", 1, "wamid.B", "")
    assert emptied.to_dict()["reaction"] == {"message_id": "wamid.B", "emoji": ""}


def test_bsuid_username_only_user() -> None:
    update = _only_update(_load("bsuid_username_only"))
    assert isinstance(update, MessageUpdate)
    assert update.message.from_ is None
    assert update.message.from_user_id == "US.89940993587850994356"
    assert update.contact is not None
    assert update.contact.wa_id is None
    assert update.contact.profile is not None
    assert update.contact.profile.username == "jo.travels"
    assert (
        "from" not in _value(parse_webhook(_load("bsuid_username_only")).to_dict())["messages"][0]
    )


def test_value_errors_sample() -> None:
    updates = list(iter_updates(parse_webhook(_load("value_errors"))))
    assert [type(u) for u in updates] == [MessageUpdate, ErrorUpdate]
    message, error = updates
    assert isinstance(message, MessageUpdate)
    assert isinstance(error, ErrorUpdate)
    # An interactive message without its interactive object is kept, not refused.
    assert type(message.message) is UnknownMessage
    assert message.message.type == "interactive"
    assert error.error.code == 131000
    assert error.error.error_data is not None
    assert error.error.error_data.details == "Unsupported webhook payload"


@pytest.mark.parametrize("name", ["sent", "delivered", "read", "failed", "played"])
def test_status_files(name: str) -> None:
    update = _only_update(_load(f"status_{name}"))
    assert isinstance(update, StatusUpdate)
    assert update.status.status == name
    assert update.status.recipient_user_id == "BR.40654240771908059031"
    assert update.contact is not None
    assert update.contact.user_id == "BR.40654240771908059031"
    assert update.contact.wa_id == update.status.recipient_id
    assert (update.status.pricing is not None) == (name in ("sent", "delivered"))
    assert (update.status.errors is not None) == (name == "failed")


def test_status_with_conversation_and_no_contacts() -> None:
    update = _only_update(_load("status_sent_conversation"))
    assert isinstance(update, StatusUpdate)
    assert update.contact is None
    assert update.status.conversation is not None
    assert update.status.conversation.origin == ConversationOrigin(type="service")
    assert update.status.biz_opaque_callback_data == "order-42"


def test_other_fields_are_kept_but_yield_no_updates() -> None:
    payload = parse_webhook(_load("other_field_template_status"))
    change = payload.entry[0].changes[0]
    assert isinstance(change, OtherChange)
    assert change.field == "message_template_status_update"
    assert change.value["event"] == "APPROVED"
    assert list(iter_updates(payload)) == []


def test_batched_file_updates_in_order_with_their_contacts() -> None:
    updates = list(iter_updates(parse_webhook(_load("batched"))))
    kinds = [type(u).__name__ for u in updates]
    assert kinds == ["MessageUpdate"] * 3 + ["StatusUpdate"] * 2 + ["MessageUpdate"]
    senders = []
    for update in updates:
        assert not isinstance(update, ErrorUpdate)
        assert update.contact is not None
        if isinstance(update, MessageUpdate):
            assert update.contact.wa_id == update.message.from_
            senders.append(update.contact.profile.name if update.contact.profile else None)
    assert senders == ["Ana", "Bruno", "Ana", "Chen"]
    assert updates[-1].waba_id == "2039485761029384"
    assert updates[-1].metadata.phone_number_id == "200300400500600"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1767225600, "1767225600"),
        (1767225600.9, "1767225600"),
        ("1767225600", "1767225600"),
        (datetime(2026, 1, 1, tzinfo=UTC), "1767225600"),
        (datetime(2026, 1, 1, 1, tzinfo=timezone(timedelta(hours=1))), "1767225600"),
    ],
)
def test_format_timestamp(value: int | float | str | datetime, expected: str) -> None:
    assert format_timestamp(value) == expected


@pytest.mark.parametrize("value", [datetime(2026, 1, 1), "12:00", "-5", -1, float("inf"), True])
def test_format_timestamp_refusals(value: int | float | str | datetime) -> None:
    with pytest.raises(ValueError, match="timestamp"):
        format_timestamp(value)


# Malformed webhooks: one line, naming the JSON path.


@pytest.mark.parametrize(
    ("body", "path", "text"),
    [
        (b"{not json", "", "webhook body is not valid JSON"),
        (b"\xff\xfe\x00", "", "webhook body is not valid JSON"),
        (b"[1, 2]", "", "must be a JSON object, not list"),
        (
            b'{"object": "page", "entry": []}',
            "object",
            "Input should be 'whatsapp_business_account'",
        ),
        (b'{"object": "whatsapp_business_account"}', "entry", "Field required"),
    ],
)
def test_malformed_bodies(body: bytes, path: str, text: str) -> None:
    with pytest.raises(PayloadError, match=text) as caught:
        parse_webhook(body)
    assert caught.value.path == path
    assert "\n" not in str(caught.value)


def _broken(edit: str) -> dict[str, Any]:
    data = _load("message_text")
    value = _value(data)
    message = value["messages"][0]
    if edit == "no metadata":
        del value["metadata"]
    elif edit == "no body":
        del message["text"]["body"]
    elif edit == "int timestamp":
        message["timestamp"] = 1767225600
    elif edit == "list body":
        message["text"] = {"body": ["a"]}
    elif edit == "second message":
        value["messages"].append({"from": "1", "type": "image", "image": {"id": "1"}})
    return data


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        ("no metadata", "entry[0].changes[0].value.metadata"),
        ("no body", "entry[0].changes[0].value.messages[0].text.body"),
        ("int timestamp", "entry[0].changes[0].value.messages[0].timestamp"),
        ("list body", "entry[0].changes[0].value.messages[0].text.body"),
        ("second message", "entry[0].changes[0].value.messages[1].id"),
    ],
)
def test_malformed_webhook_names_the_json_path(edit: str, path: str) -> None:
    with pytest.raises(PayloadError) as caught:
        parse_webhook(_broken(edit))
    error = caught.value
    assert error.path == path
    assert str(error).startswith(f"invalid webhook at {path}: ")
    assert isinstance(error, ChannelError)
    assert isinstance(error, ValueError)


def test_parse_single_items() -> None:
    image = {"id": "1", "mime_type": "image/png"}
    with pytest.raises(PayloadError, match=r"invalid message at image\.sha256: Field required"):
        parse_message({"from": "1", "id": "w", "timestamp": "1", "type": "image", "image": image})
    with pytest.raises(PayloadError, match=r"invalid status at timestamp: String should match"):
        parse_status({"id": "w", "status": "sent", "timestamp": "soon"})
    assert parse_status({"id": "w", "status": "deleted", "timestamp": "1"}).status == "deleted"


# Batching several updates into one POST.


def _single_webhooks() -> list[dict[str, Any]]:
    bruno = contact("5521998877665", "Bruno", user_id="BR.19384992699730674786")
    other_number = _Number(phone_number_id="200300400500600", display_phone_number="15550002222")
    return [
        build_webhook(
            waba_id=WABA,
            **NUMBER,
            contacts=[ANA],
            messages=[text_message("wamid.1", "5511987654321", 10, "oi")],
        ),
        build_webhook(
            waba_id=WABA,
            **NUMBER,
            contacts=[bruno],
            messages=[text_message("wamid.2", "5521998877665", 10, "olá")],
        ),
        build_webhook(
            waba_id=WABA,
            **NUMBER,
            contacts=[contact("5511987654321")],
            statuses=[status("wamid.B1", "read", 11, "5511987654321")],
        ),
        build_webhook(
            waba_id=WABA,
            **NUMBER,
            contacts=[ANA],
            messages=[text_message("wamid.3", "5511987654321", 11, "às 15h")],
        ),
        build_webhook(
            waba_id="999",
            **other_number,
            contacts=[ANA],
            messages=[text_message("wamid.4", "5511987654321", 12, "x")],
        ),
    ]


@pytest.mark.parametrize("how", ["entries", "changes", "items"])
def test_batching_keeps_every_update_in_order(how: Any) -> None:
    singles = _single_webhooks()
    expected = [u for body in singles for u in iter_updates(parse_webhook(body))]
    batched = batch_webhooks(singles, how=how)
    assert list(iter_updates(parse_webhook(serialize(batched)))) == expected


def test_batching_levels() -> None:
    singles = _single_webhooks()
    by_entries = parse_webhook(batch_webhooks(singles, how="entries"))
    assert [e.id for e in by_entries.entry] == [WABA] * 4 + ["999"]
    by_changes = parse_webhook(batch_webhooks(singles, how="changes"))
    assert [len(e.changes) for e in by_changes.entry] == [4, 1]
    by_items = parse_webhook(batch_webhooks(singles, how="items"))
    changes = by_items.entry[0].changes
    # Neighbouring messages of one number share a value; a status between them splits it.
    assert [
        len(c.value.messages or c.value.statuses or []) for c in changes if isinstance(c, Change)
    ] == [2, 1, 1]
    first = changes[0]
    assert isinstance(first, Change)
    assert [m.id for m in first.value.messages or []] == ["wamid.1", "wamid.2"]
    assert [c.wa_id for c in first.value.contacts or []] == ["5511987654321", "5521998877665"]


def test_batching_limit() -> None:
    messages = [text_message(f"wamid.{i}", "1", 1, "x") for i in range(500)]
    half = build_webhook(waba_id=WABA, **NUMBER, messages=messages)
    assert len(list(iter_updates(parse_webhook(batch_webhooks([half, half]))))) == 1000
    with pytest.raises(ValueError, match=f"at most {MAX_UPDATES_PER_WEBHOOK} updates"):
        batch_webhooks([half, half, _single_webhooks()[0]])
    with pytest.raises(ValueError, match="nothing to batch"):
        batch_webhooks([])
