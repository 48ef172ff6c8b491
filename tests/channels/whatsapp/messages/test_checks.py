"""The strict check of what Meta sends: its samples pass, a tap out of context does not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from channels.whatsapp.messages import INBOUND_TYPES, check_inbound
from channels.whatsapp.payloads import PayloadError

DATA = Path(__file__).resolve().parents[3] / "data" / "whatsapp"
SAMPLES = sorted(DATA.glob("message_*.json"))


def _item(path: Path) -> dict[str, Any]:
    payload = json.loads(path.read_text(encoding="utf-8"))
    item: dict[str, Any] = payload["entry"][0]["changes"][0]["value"]["messages"][0]
    return item


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.stem)
def test_every_sample_of_what_meta_sends_passes(path: Path) -> None:
    item = _item(path)
    assert check_inbound(item).to_dict() == item


def test_the_samples_cover_every_type_meta_sends_but_system() -> None:
    kinds = {_item(path)["type"] for path in SAMPLES}
    assert set(INBOUND_TYPES) - kinds == {"system"}


@pytest.mark.parametrize(
    "name",
    ["interactive_list_reply", "interactive_button_reply", "interactive_nfm_reply", "button"],
)
def test_a_tap_without_the_message_it_answers_is_refused(name: str) -> None:
    item = _item(DATA / f"message_{name}.json")
    del item["context"]
    with pytest.raises(PayloadError, match=r"^invalid message at context: required: a tap") as err:
        check_inbound(item)
    assert err.value.path == "context"


def test_a_quote_without_its_sender_is_refused() -> None:
    item = _item(DATA / "message_text_reply.json")
    del item["context"]["from"]
    with pytest.raises(PayloadError) as caught:
        check_inbound(item)
    assert caught.value.path == "context.from"


def test_an_unsupported_message_says_why() -> None:
    item = _item(DATA / "message_unsupported.json")
    del item["errors"]
    with pytest.raises(PayloadError, match=r"at errors: required: what Meta says"):
        check_inbound(item)


def test_fields_meta_may_add_pass() -> None:
    item = {**_item(DATA / "message_text.json"), "referral": {"source_type": "ad"}, "new": 1}
    assert check_inbound(item).to_dict() == item
