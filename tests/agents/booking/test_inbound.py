"""The agent's own webhook parser, over realistic payloads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agents.booking import parse_webhook

DATA = Path(__file__).resolve().parents[2] / "data" / "whatsapp"
PHONE = "100200300400500"


def _load(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def test_a_text_message() -> None:
    updates = parse_webhook(_load("message_text.json"), PHONE)
    [message] = updates.messages
    assert message.kind == "text"
    assert message.understood
    assert message.user == "5511987654321"
    assert message.name == "Ana"
    assert message.text == "Oi! Queria marcar um horário amanhã às 9h."
    assert message.wamid is not None
    assert message.wamid.startswith("wamid.")
    assert message.timestamp is not None
    assert int(message.timestamp.timestamp()) == 1777032000


@pytest.mark.parametrize(
    ("name", "reply_id"),
    [
        ("message_interactive_button_reply.json", "keep"),
        ("message_interactive_list_reply.json", None),
        ("message_button.json", None),
    ],
)
def test_taps_are_replies_with_their_id_title_and_context(name: str, reply_id: str | None) -> None:
    [message] = parse_webhook(_load(name), PHONE).messages
    assert message.kind == "reply"
    assert message.understood
    assert message.reply_id is not None
    assert message.text
    if reply_id is not None:
        assert message.reply_id == reply_id
        assert message.context_id is not None


@pytest.mark.parametrize(
    "name",
    [
        "message_image.json",
        "message_audio.json",
        "message_location.json",
        "message_sticker.json",
        "message_reaction.json",
        "message_unsupported.json",
        "message_contacts.json",
        "message_interactive_nfm_reply.json",
    ],
)
def test_other_kinds_are_kept_but_not_understood(name: str) -> None:
    [message] = parse_webhook(_load(name), PHONE).messages
    assert not message.understood


def test_a_failed_status_keeps_its_error_codes() -> None:
    updates = parse_webhook(_load("status_failed.json"), PHONE)
    [status] = updates.statuses
    assert status.status == "failed"
    assert status.errors
    assert status.errors[0][0] is not None


def test_a_username_only_user_is_known_by_bsuid() -> None:
    [message] = parse_webhook(_load("bsuid_username_only.json"), PHONE).messages
    assert "." in message.user  # a BSUID such as US.1234...


def test_batched_updates_are_all_read() -> None:
    updates = parse_webhook(_load("batched.json"), PHONE)
    assert len(updates.messages) + len(updates.statuses) > 1


def test_unknown_fields_are_ignored() -> None:
    updates = parse_webhook(_load("unknown_fields.json"), PHONE)
    assert updates.messages or updates.statuses


def test_updates_for_another_number_are_skipped() -> None:
    updates = parse_webhook(_load("message_text.json"), "999")
    assert updates.messages == []
    assert updates.foreign == 1


@pytest.mark.parametrize(
    "payload",
    [None, [], {"entry": "x"}, {"entry": [{"changes": [{"value": {"messages": [{"id": 1}]}}]}]}],
)
def test_malformed_payloads_yield_nothing_instead_of_failing(payload: Any) -> None:
    updates = parse_webhook(payload, "")
    assert updates.messages == []
    assert updates.statuses == []
