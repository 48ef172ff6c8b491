"""Meta's own request examples, and the sample sends, against the one source of the send rules.

Each example of the send endpoint in Meta's OpenAPI description (v23.0,
``tests/data/meta``) must be taken by the send models and by the schema
``/openapi.json`` serves; so must every sample in ``tests/data/whatsapp/sends``.
Meta's examples hold placeholders where a real value goes (``{{Recipient-Phone-Number}}``,
``<http(s)://audio-url>``); those are filled in first, and only those.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, Final

import pytest
import yaml
from pydantic import ValidationError

from channels.whatsapp.sends import SEND_REQUEST, graph_error_for
from tests.channels.whatsapp.conformance.defects import DEFECTS
from tests.channels.whatsapp.sends.served import served_request_schema
from tests.channels.whatsapp.test_validation import load_send, send_names

META: Final = Path(__file__).resolve().parents[3] / "data" / "meta"
_PLACEHOLDER: Final = re.compile(r"^<.*>$|^\{\{.*\}\}$|http\(s\)|^language-and-locale-code$")
_FILLED: Final = {
    "to": "+16505551234",
    "link": "https://example.com/media/1",
    "code": "en_US",
    "type": "text",  # a header's "<HEADER_TYPE>"
}

# Examples Meta documents that the simulator refuses on purpose: the error it
# answers (code and path) and why. They are listed with the file's other
# defects, in one place.
REFUSED: Final = {
    name: (*entry.refused_as, entry.wrong)
    for entry in DEFECTS
    if entry.refused_as is not None
    for name in entry.examples
}


@functools.cache
def meta_examples() -> dict[str, Any]:
    """The request examples of Meta's send endpoint, by name, as Meta wrote them."""
    text = (META / "meta-business-messaging-api_v23.0.yaml").read_text(encoding="utf-8")
    document = yaml.load(text, Loader=yaml.CSafeLoader)
    operation = document["paths"]["/{Version}/{Phone-Number-ID}/messages"]["post"]
    examples = operation["requestBody"]["content"]["application/json"]["examples"]
    return {name: example["value"] for name, example in examples.items()}


def filled(value: Any, key: str | None = None) -> Any:
    """``value`` with each placeholder under a key of ``_FILLED`` replaced by a real value."""
    if isinstance(value, dict):
        return {name: filled(item, name) for name, item in value.items()}
    if isinstance(value, list):
        return [filled(item, key) for item in value]
    if isinstance(value, str) and key in _FILLED and _PLACEHOLDER.search(value):
        return _FILLED[key]
    return value


def _taken() -> list[str]:
    return [example for example in sorted(meta_examples()) if example not in REFUSED]


def test_the_examples_are_read_and_the_refusals_name_real_ones() -> None:
    names = set(meta_examples())
    assert len(names) == 50
    assert set(REFUSED) <= names


def test_only_placeholders_are_filled_in() -> None:
    example = meta_examples()["Send Audio Message by URL"]
    assert example["to"] == "{{Recipient-Phone-Number}}"
    assert filled(example) == {
        **example,
        "to": "+16505551234",
        "audio": {"link": "https://example.com/media/1"},
    }
    untouched = meta_examples()["Send Reply Button"]["interactive"]["action"]["buttons"][0]
    assert filled(untouched) == untouched  # "<UNIQUE_BUTTON_ID_1>" is a fine id as it is


@pytest.mark.parametrize("name", _taken())
def test_meta_examples_are_taken_by_the_models_and_the_served_schema(name: str) -> None:
    body = filled(meta_examples()[name])
    SEND_REQUEST.validate_python(body)
    assert served_request_schema().is_valid(body)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_examples_refused_on_purpose_are_refused_both_ways(name: str) -> None:
    code, path, _reason = REFUSED[name]
    body = filled(meta_examples()[name])
    with pytest.raises(ValidationError) as info:
        SEND_REQUEST.validate_python(body)
    error = graph_error_for(info.value)
    assert (error.code, error.details.split(":")[0]) == (code, path)
    assert not served_request_schema().is_valid(body)


@pytest.mark.parametrize("name", send_names())
def test_sample_sends_are_taken_by_the_models_and_the_served_schema(name: str) -> None:
    body = load_send(name)
    SEND_REQUEST.validate_python(body)
    assert served_request_schema().is_valid(body)
