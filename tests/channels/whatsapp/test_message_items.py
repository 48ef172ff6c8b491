"""A user's message built as a dict (a load run's webhook) is, byte for byte, the models' dump."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.envelope import (
    build_webhook,
    contact,
    message_item,
    profile_contact_item,
    webhook_body,
)
from channels.whatsapp.ids import bulk_wamid
from channels.whatsapp.load.users import Choice
from channels.whatsapp.load.webhooks import WebhookPoster
from channels.whatsapp.messages import Context, button_reply, list_reply, text_message
from channels.whatsapp.signing import serialize

IDS: dict[str, Any] = {"waba_id": "W", "phone_number_id": "P", "display_phone_number": "1555"}
TEXTS = ["hello", "olá, ça va? 日本語 👋", 'quotes " and \\ back\nslash\t', "\u2028 /slash/ <b>"]
STAMP = 1772452805


@pytest.mark.parametrize("text", TEXTS)
def test_a_text_message_as_a_dict_is_the_models_dump(text: str) -> None:
    item = message_item("wamid.A", "5511987654321", STAMP, text)
    model = text_message("wamid.A", "5511987654321", STAMP, text)
    assert item == model.to_dict()
    who = contact("5511987654321", f"Ana {text}")
    from_models = build_webhook(messages=[model], contacts=[who], **IDS)
    from_dicts = webhook_body(
        messages=[item], contacts=[profile_contact_item("5511987654321", f"Ana {text}")], **IDS
    )
    assert serialize(from_dicts) == serialize(from_models)  # the signed bytes: key order too


@pytest.mark.parametrize("kind", ["button_reply", "list_reply"])
@pytest.mark.parametrize("title", TEXTS)
def test_a_tap_as_a_dict_is_the_models_dump(kind: str, title: str) -> None:
    context = Context(from_="15550001111", id="wamid.OFFER")
    build = button_reply if kind == "button_reply" else list_reply
    model = build("wamid.B", "5511987654321", STAMP, "choice-1", title, context=context)
    item = message_item(
        "wamid.B",
        "5511987654321",
        STAMP,
        "",
        context=("15550001111", "wamid.OFFER"),
        reply=(kind, "choice-1", title),
    )
    assert item == model.to_dict()
    assert serialize(item) == serialize(model.to_dict())


def test_the_load_runs_webhooks_are_the_models_dump() -> None:
    config = SimulatorConfig()
    poster = WebhookPoster(None, "http://agent", config, timeout=1, rng=random.Random(7))  # type: ignore[arg-type]
    again = random.Random(7)
    for text, choice in [
        ("hi there ✓", None),
        ("plain ASCII, with / and 'quotes'", None),
        ('a "quote", a \\ and a tab\t', None),
        ("delete \x7f and bell \x07", None),
        ("", Choice("button", "yes", "Yes ✓", "wamid.OFFER")),
        ("", Choice("list", "row-2", "Tuesday", "wamid.LIST")),
    ]:
        body = poster.body("15550000001", text, choice)
        wamid = bulk_wamid(again, "15550000001")
        sent = json.loads(body)["entry"][0]["changes"][0]["value"]["messages"][0]
        stamp = int(sent["timestamp"])
        model: Any
        if choice is None:
            model = text_message(wamid, "15550000001", stamp, text)
        else:
            build = button_reply if choice.kind == "button" else list_reply
            context = Context(from_=config.display_phone_number, id=choice.message_id)
            model = build(wamid, "15550000001", stamp, choice.id, choice.title, context=context)
        expected = build_webhook(
            waba_id=config.waba_id,
            phone_number_id=config.phone_number_id,
            display_phone_number=config.display_phone_number,
            messages=[model],
            contacts=[contact("15550000001", "Load user 15550000001")],
        )
        assert body == serialize(expected)


def test_messages_and_statuses_do_not_share_a_value() -> None:
    item = message_item("wamid.A", "1", STAMP, "x")
    with pytest.raises(ValueError, match="separate changes"):
        webhook_body(messages=[item], statuses=[{"id": "w"}], **IDS)
    with pytest.raises(ValueError, match="at least one"):
        webhook_body(**IDS)
