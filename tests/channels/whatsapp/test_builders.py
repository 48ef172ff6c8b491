"""Builders: Meta's exact shape, refusals of what Meta never sends, and parse(build(x)) == x."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path
from typing import Any, TypedDict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from channels.whatsapp.envelope import (
    Contact,
    MessageUpdate,
    StatusUpdate,
    WebhookPayload,
    build_webhook,
    contact,
    iter_updates,
    parse_webhook,
)
from channels.whatsapp.error_codes import ERROR_DOCS_URL
from channels.whatsapp.errors import ErrorObject, error_object
from channels.whatsapp.ids import new_bsuid, new_media_id, new_wamid
from channels.whatsapp.messages import (
    ContactCard,
    ContactEmail,
    ContactName,
    ContactOrg,
    ContactPhone,
    Context,
    InboundMessage,
    audio,
    button_reply,
    contact_card,
    contacts_message,
    document,
    image,
    list_reply,
    location,
    parse_message,
    reaction,
    sticker,
    template_button,
    text_message,
    unsupported,
    video,
)
from channels.whatsapp.signing import serialize
from channels.whatsapp.statuses import (
    Conversation,
    ConversationOrigin,
    Status,
    StatusValue,
    pricing,
    status,
)

DATA = Path(__file__).parents[2] / "data" / "whatsapp"

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


# Builders produce Meta's exact shape: same keys, same order, same bytes.


def _ctx(index: int) -> Context:
    ids = [
        "wamid.HBgNNTUxMTk4NzY1NDMyMRUCABEYEjkzM0JBRTFDQTZFRDNCOEM5QgA=",
        "wamid.HBgNNTUxMTk4NzY1NDMyMRUCABEYEjFEMDlBOTM5REEwQTYxMzUzMwA=",
        "wamid.HBgNNTUxMTk4NzY1NDMyMRUCABEYEjE0QjkwRDRCRENDN0Q3NDUwQwA=",
        "wamid.HBgNNTUxMTk4NzY1NDMyMRUCABEYEjg0NzAwOEZEOEE0MjUxOEFBMQA=",
    ]
    return Context(from_="15550001111", id=ids[index])


def _rebuild_message(name: str) -> InboundMessage:
    """Build, with the builders, the message a data file holds."""
    m = _value(_load(name))["messages"][0]
    w, f, ts = m["id"], m.get("from"), int(m["timestamp"])
    if name == "message_text":
        return text_message(w, f, ts, m["text"]["body"])
    if name == "message_text_reply":
        return text_message(w, f, ts, m["text"]["body"], context=_ctx(0))
    if name == "message_text_forwarded":
        return text_message(w, f, ts, m["text"]["body"], context=Context(forwarded=True))
    if name == "message_interactive_button_reply":
        return button_reply(w, f, ts, "keep", "Keep", context=_ctx(1))
    if name == "message_interactive_list_reply":
        return list_reply(w, f, ts, "express", "Express", description="1-2 days", context=_ctx(2))
    if name == "message_button":
        return template_button(w, f, ts, "CONFIRM", "Confirm", context=_ctx(3))
    if name == "message_image":
        i = m["image"]
        return image(w, f, ts, i["id"], i["sha256"], caption=i["caption"], url=i["url"])
    if name == "message_audio":
        a = m["audio"]
        return audio(w, f, ts, a["id"], a["sha256"], voice=True)
    if name == "message_video":
        v = m["video"]
        return video(w, f, ts, v["id"], v["sha256"], caption=v["caption"])
    if name == "message_document":
        d = m["document"]
        return document(
            w, f, ts, d["id"], d["sha256"], filename=d["filename"], caption=d["caption"]
        )
    if name == "message_sticker":
        return sticker(w, f, ts, m["sticker"]["id"], m["sticker"]["sha256"])
    if name == "message_location":
        loc = m["location"]
        return location(
            w,
            f,
            ts,
            loc["latitude"],
            loc["longitude"],
            name=loc["name"],
            address=loc["address"],
            url=loc["url"],
        )
    if name == "message_contacts":
        card = ContactCard(
            emails=[ContactEmail(email="bia@example.com", type="WORK")],
            name=ContactName(
                formatted_name="Beatriz Souza", first_name="Beatriz", last_name="Souza"
            ),
            org=ContactOrg(company="Clínica Sorriso"),
            phones=[ContactPhone(phone="+55 11 91234-5678", wa_id="5511912345678", type="CELL")],
        )
        return contacts_message(w, f, ts, [card])
    if name == "message_reaction":
        return reaction(w, f, ts, m["reaction"]["message_id"], "👍")
    if name == "message_reaction_removed":
        return reaction(w, f, ts, m["reaction"]["message_id"], None)
    if name == "message_unsupported":
        return unsupported(w, f, ts, "poll")
    if name == "bsuid_username_only":
        return text_message(w, None, ts, m["text"]["body"], from_user_id=m["from_user_id"])
    raise AssertionError(name)


REBUILT = [
    "message_text",
    "message_text_reply",
    "message_text_forwarded",
    "message_interactive_button_reply",
    "message_interactive_list_reply",
    "message_button",
    "message_image",
    "message_audio",
    "message_video",
    "message_document",
    "message_sticker",
    "message_location",
    "message_contacts",
    "message_reaction",
    "message_reaction_removed",
    "message_unsupported",
    "bsuid_username_only",
]


@pytest.mark.parametrize("name", REBUILT)
def test_builders_reproduce_the_data_file_bytes(name: str) -> None:
    original = _load(name)
    value = _value(original)
    contacts = [Contact.model_validate(c) for c in value["contacts"]]
    built = build_webhook(
        waba_id=WABA, **NUMBER, messages=[_rebuild_message(name)], contacts=contacts
    )
    assert serialize(built) == serialize(original)


@pytest.mark.parametrize("name", ["sent", "delivered", "read", "failed", "played"])
def test_status_builder_reproduces_the_data_file_bytes(name: str) -> None:
    original = _load(f"status_{name}")
    s = _value(original)["statuses"][0]
    errors = [error_object(131047, href=ERROR_DOCS_URL)] if name == "failed" else None
    built_status = status(
        s["id"],
        name,  # type: ignore[arg-type]  # the parametrized names are StatusValues
        int(s["timestamp"]),
        s["recipient_id"],
        recipient_user_id=s["recipient_user_id"],
        pricing=pricing("service") if "pricing" in s else None,
        errors=errors,
    )
    both_ids = contact("5511987654321", user_id="BR.40654240771908059031")
    built = build_webhook(waba_id=WABA, **NUMBER, statuses=[built_status], contacts=[both_ids])
    assert serialize(built) == serialize(original)


def test_conversation_status_and_value_errors_rebuilt() -> None:
    original = _load("status_sent_conversation")
    s = _value(original)["statuses"][0]
    conversation = Conversation(
        id=s["conversation"]["id"],
        expiration_timestamp=s["conversation"]["expiration_timestamp"],
        origin=ConversationOrigin(type="service"),
    )
    built_status = status(
        s["id"],
        "sent",
        int(s["timestamp"]),
        s["recipient_id"],
        pricing=pricing(),
        conversation=conversation,
        biz_opaque_callback_data="order-42",
    )
    built = build_webhook(waba_id=WABA, **NUMBER, statuses=[built_status])
    assert serialize(built) == serialize(original)

    original = _load("value_errors")
    message = parse_message(_value(original)["messages"][0])
    error = error_object(131000, details="Unsupported webhook payload", with_message=False)
    built = build_webhook(
        waba_id=WABA, **NUMBER, messages=[message], contacts=[ANA], errors=[error]
    )
    assert serialize(built) == serialize(original)


def test_envelope_key_order_and_no_nulls() -> None:
    message = text_message("wamid.A", "5511987654321", 1767225600, "hola")
    built = build_webhook(waba_id=WABA, **NUMBER, messages=[message], contacts=[ANA])
    assert list(built) == ["object", "entry"]
    assert list(built["entry"][0]) == ["id", "changes"]
    assert list(built["entry"][0]["changes"][0]) == ["value", "field"]
    value = _value(built)
    assert list(value) == ["messaging_product", "metadata", "contacts", "messages"]
    assert list(value["messages"][0]) == ["from", "id", "timestamp", "type", "text"]
    assert value["messages"][0]["timestamp"] == "1767225600"
    assert not _has_null(json.loads(serialize(built)))


def test_build_value_refusals() -> None:
    message = text_message("wamid.A", "1", 1, "x")
    sent = status("wamid.B", "sent", 1, "1")
    with pytest.raises(ValueError, match="separate changes"):
        build_webhook(waba_id=WABA, **NUMBER, messages=[message], statuses=[sent])
    with pytest.raises(ValueError, match="at least one message"):
        build_webhook(waba_id=WABA, **NUMBER)


def test_builders_refuse_what_meta_never_sends() -> None:
    with pytest.raises(ValueError, match="needs a sender"):
        text_message("wamid.A", None, 1, "x")
    with pytest.raises(ValueError, match="at least one card"):
        contacts_message("wamid.A", "1", 1, [])
    with pytest.raises(ValueError, match="needs at least one error"):
        status("wamid.A", "failed", 1, "1")
    with pytest.raises(ValueError, match="only a failed status"):
        status("wamid.A", "sent", 1, "1", errors=[error_object(131047)])
    with pytest.raises(ValueError, match="recipient_id"):
        status("wamid.A", "sent", 1, None)
    with pytest.raises(ValueError, match="contact needs"):
        contact(None, "Ana")


def test_unsupported_builder_defaults() -> None:
    message = unsupported("wamid.U", "1", 5)
    assert message.errors == [error_object(131051)]
    assert "unsupported" not in message.to_dict()


def test_contact_card_builder() -> None:
    card = contact_card("Chandler Bing", "+1 555-555-5555", wa_id="15555555555")
    assert card.to_dict() == {
        "name": {"formatted_name": "Chandler Bing"},
        "phones": [{"phone": "+1 555-555-5555", "wa_id": "15555555555", "type": "CELL"}],
    }
    assert contact_card("No Phone").to_dict() == {"name": {"formatted_name": "No Phone"}}


def test_pricing_defaults() -> None:
    assert pricing().to_dict() == {
        "billable": True,
        "pricing_model": "PMP",
        "type": "free_customer_service",
        "category": "service",
    }
    assert pricing("marketing").type == "regular"


# Properties: parse(build(x)) == x for every inbound type and status.

digits = st.from_regex(r"[1-9][0-9]{6,14}", fullmatch=True)
words = st.text(max_size=40)
media_ids = st.integers(0, 2**32).map(lambda seed: new_media_id(random.Random(seed)))
wamids = st.integers(0, 2**32).map(lambda seed: new_wamid(random.Random(seed), "15550001111"))
bsuids = st.integers(0, 2**32).map(lambda seed: new_bsuid(random.Random(seed), "BR"))
timestamps = st.integers(0, 2**34)
sha256s = st.binary(min_size=32, max_size=32).map(lambda b: base64.b64encode(b).decode())
contexts = (
    st.none()
    | st.builds(Context, from_=digits, id=wamids)
    | st.sampled_from([Context(forwarded=True), Context(frequently_forwarded=True)])
)


@st.composite
def inbound_messages(draw: st.DrawFn) -> InboundMessage:
    """Any inbound message the builders make, of any type."""
    from_ = draw(st.none() | digits)
    user_id = draw(bsuids) if from_ is None else draw(st.none() | bsuids)
    w, ts, ctx = draw(wamids), draw(timestamps), draw(contexts)
    some = st.none() | words
    match draw(st.sampled_from(INBOUND_KINDS)):
        case "text":
            return text_message(w, from_, ts, draw(words), context=ctx, from_user_id=user_id)
        case "button_reply":
            return button_reply(
                w, from_, ts, draw(words), draw(words), context=ctx, from_user_id=user_id
            )
        case "list_reply":
            return list_reply(
                w,
                from_,
                ts,
                draw(words),
                draw(words),
                description=draw(some),
                context=ctx,
                from_user_id=user_id,
            )
        case "template_button":
            return template_button(
                w, from_, ts, draw(words), draw(words), context=ctx, from_user_id=user_id
            )
        case "image":
            return image(
                w,
                from_,
                ts,
                draw(media_ids),
                draw(sha256s),
                caption=draw(some),
                url=draw(some),
                context=ctx,
                from_user_id=user_id,
            )
        case "audio":
            return audio(
                w,
                from_,
                ts,
                draw(media_ids),
                draw(sha256s),
                voice=draw(st.none() | st.booleans()),
                from_user_id=user_id,
            )
        case "video":
            return video(
                w,
                from_,
                ts,
                draw(media_ids),
                draw(sha256s),
                caption=draw(some),
                context=ctx,
                from_user_id=user_id,
            )
        case "document":
            return document(
                w,
                from_,
                ts,
                draw(media_ids),
                draw(sha256s),
                filename=draw(some),
                caption=draw(some),
                from_user_id=user_id,
            )
        case "sticker":
            return sticker(
                w,
                from_,
                ts,
                draw(media_ids),
                draw(sha256s),
                animated=draw(st.booleans()),
                from_user_id=user_id,
            )
        case "location":
            return location(
                w,
                from_,
                ts,
                draw(st.floats(-90, 90)),
                draw(st.floats(-180, 180)),
                name=draw(some),
                address=draw(some),
                context=ctx,
                from_user_id=user_id,
            )
        case "contacts":
            card = st.builds(contact_card, words, st.none() | words)
            cards = draw(st.lists(card, min_size=1, max_size=3))
            return contacts_message(w, from_, ts, cards, from_user_id=user_id)
        case "reaction":
            emoji = draw(st.sampled_from([None, "", "👍", "❤️"]))
            return reaction(w, from_, ts, draw(wamids), emoji, from_user_id=user_id)
        case _:
            kind = draw(st.none() | st.sampled_from(["poll", "event", "view_once"]))
            return unsupported(w, from_, ts, kind, from_user_id=user_id)


INBOUND_KINDS = [
    "text",
    "button_reply",
    "list_reply",
    "template_button",
    "image",
    "audio",
    "video",
    "document",
    "sticker",
    "location",
    "contacts",
    "reaction",
    "unsupported",
]


@given(messages=st.lists(inbound_messages(), min_size=1, max_size=4))
def test_parse_build_round_trip_for_messages(messages: list[InboundMessage]) -> None:
    body = serialize(build_webhook(waba_id=WABA, **NUMBER, messages=messages, contacts=[ANA]))
    parsed = [u.message for u in iter_updates(parse_webhook(body)) if isinstance(u, MessageUpdate)]
    assert parsed == messages
    assert [type(m) for m in parsed] == [type(m) for m in messages]
    assert not _has_null(json.loads(body))  # absent fields are left out, never written as null


@given(message=inbound_messages())
def test_parse_message_round_trip(message: InboundMessage) -> None:
    assert parse_message(message.to_dict()) == message


status_values: list[StatusValue] = ["sent", "delivered", "read", "failed", "played"]


@st.composite
def statuses(draw: st.DrawFn) -> Status:
    """Any status the builder makes."""
    value = draw(st.sampled_from(status_values))
    recipient = draw(st.none() | digits)
    user_id = draw(bsuids) if recipient is None else draw(st.none() | bsuids)
    errors: list[ErrorObject] | None = None
    if value == "failed":
        codes = st.sampled_from([131047, 131026, 131049, 131009, 131000])
        errors = [error_object(draw(codes), href=draw(st.none() | st.just(ERROR_DOCS_URL)))]
    priced = value in ("sent", "delivered", "read") and draw(st.booleans())
    return status(
        draw(wamids),
        value,
        draw(timestamps),
        recipient,
        recipient_user_id=user_id,
        pricing=pricing(draw(st.sampled_from(["service", "utility", "marketing"])))
        if priced
        else None,
        errors=errors,
        biz_opaque_callback_data=draw(st.none() | words),
    )


@given(items=st.lists(statuses(), min_size=1, max_size=4))
def test_parse_build_round_trip_for_statuses(items: list[Status]) -> None:
    body = serialize(build_webhook(waba_id=WABA, **NUMBER, statuses=items))
    parsed = [u.status for u in iter_updates(parse_webhook(body)) if isinstance(u, StatusUpdate)]
    assert parsed == items


def test_payload_models_are_frozen() -> None:
    message = text_message("wamid.A", "1", 1, "x")
    with pytest.raises(ValueError, match="frozen"):
        message.id = "wamid.B"  # type: ignore[misc]  # frozen on purpose
    assert isinstance(parse_webhook(_load("message_text")), WebhookPayload)


def test_builder_options_reach_the_payload() -> None:
    user = "BR.40654240771908059031"
    forwarded = Context(frequently_forwarded=True)
    url = "https://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=1"
    built = [
        image("w", "1", 1, "11", "c2hh", mime_type="image/png", url=url, from_user_id=user),
        audio("w", "1", 1, "12", "c2hh", voice=False, url=url, context=forwarded),
        video("w", "1", 1, "13", "c2hh", mime_type="video/3gpp", url=url),
        document("w", "1", 1, "14", "c2hh", mime_type="text/csv", url=url),
        sticker("w", "1", 1, "15", "c2hh", animated=True, url=url),
        location("w", "1", 1, 1.5, -2.25),
    ]
    dumped = [message.to_dict() for message in built]
    assert dumped[0]["from_user_id"] == user
    assert dumped[0]["image"] == {
        "id": "11",
        "mime_type": "image/png",
        "sha256": "c2hh",
        "url": url,
    }
    assert dumped[1]["context"] == {"frequently_forwarded": True}
    assert dumped[1]["audio"] == {
        "id": "12",
        "mime_type": "audio/ogg; codecs=opus",
        "sha256": "c2hh",
        "voice": False,
        "url": url,
    }
    assert dumped[2]["video"] == {
        "id": "13",
        "mime_type": "video/3gpp",
        "sha256": "c2hh",
        "url": url,
    }
    assert dumped[3]["document"]["mime_type"] == "text/csv"
    assert dumped[4]["sticker"] == {
        "id": "15",
        "mime_type": "image/webp",
        "sha256": "c2hh",
        "animated": True,
        "url": url,
    }
    assert dumped[5]["location"] == {"latitude": 1.5, "longitude": -2.25}


def _has_null(value: object) -> bool:
    """Whether a JSON value holds a null anywhere (a text that reads "null" is no null)."""
    if value is None:
        return True
    if isinstance(value, dict):
        return any(_has_null(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_null(v) for v in value)
    return False
