"""Every webhook the simulator sends fits Meta's webhook schema (as corrected in ``defects``).

Also the sample webhooks under ``tests/data/whatsapp``, which the parsers are
tested on, and Meta's own webhook examples: what the listed corrections make
of the file must still take what Meta itself documents.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any, Final

import pytest

from tests.channels.whatsapp.conformance import spec
from tests.channels.whatsapp.conformance.defects import DEFECTS
from tests.channels.whatsapp.conformance.traffic import WEBHOOK_KINDS, recorded_traffic

SAMPLES: Final = Path(__file__).resolve().parents[3] / "data" / "whatsapp"
# Samples of a change Meta's file does not describe at all (its webhook covers the
# messages and group fields only): nothing to check them against.
NOT_DESCRIBED: Final = {"other_field_template_status.json": "message_template_status_update"}
_SCHEMAS: Final = "/components/schemas/"
_SYSTEM: Final = {"$ref": f"#{_SCHEMAS}SystemMessage"}


def sample_names() -> list[str]:
    """The sample webhooks Meta's file describes."""
    return sorted(p.name for p in SAMPLES.glob("*.json") if p.name not in NOT_DESCRIBED)


def meta_webhook_examples() -> dict[str, Any]:
    """Meta's webhook examples, by name, as the file has them."""
    operation = spec.as_written()["paths"]["/whatsapp/webhooks"]["post"]
    examples = operation["requestBody"]["content"]["application/json"]["examples"]
    return {name: example["value"] for name, example in examples.items()}


LISTED_EXAMPLES: Final = {name for entry in DEFECTS for name in entry.examples}


def explain(body: Any) -> list[str]:
    """Why a webhook fails the corrected file, told against the value schema it is meant for.

    ``oneOf`` only says that no branch matched; checking each change's value
    against the branch its content calls for names the field at fault.
    """
    found = spec.problems(spec.corrected_validator(spec.WEBHOOK), body)
    if not found:
        return []
    for entry in body.get("entry", []):
        for change in entry.get("changes", []):
            value = change.get("value", {})
            messages = value.get("messages") or [{}]
            if "statuses" in value:
                branch = "StatusMessageValue"
            elif messages[0].get("type") == "system":
                branch = "IncomingMessageValueSystem"
            else:
                branch = "IncomingMessageValueGeneral"
            checker = spec.corrected_validator(_SCHEMAS + branch)
            found += [f"{branch}: {line}" for line in spec.problems(checker, value)]
            for message in value.get("messages", []):
                schema = message_schema(message.get("type"))
                if schema is not None:
                    checker = spec.corrected_validator(schema)
                    found += [f"{schema}: {line}" for line in spec.problems(checker, message)]
    return found


@functools.cache
def message_schema(kind: object) -> str | None:
    """The corrected file's schema of an inbound message of type ``kind``, if it has one."""
    document = spec.corrected()
    branches = [*spec.resolve(document, f"{_SCHEMAS}IncomingMessage/oneOf"), _SYSTEM]
    for branch in branches:
        pointer = branch["$ref"][1:]
        own = spec.resolve(document, f"{pointer}/allOf/1/properties/type/enum")
        if isinstance(own, list) and kind in own:
            return str(pointer)
    return None


def test_the_traffic_holds_every_kind_of_webhook() -> None:
    assert sorted(recorded_traffic().webhooks) == sorted(WEBHOOK_KINDS)
    assert len(WEBHOOK_KINDS) == 30


@pytest.mark.parametrize("kind", WEBHOOK_KINDS)
def test_every_kind_of_webhook_the_simulator_sends_fits_metas_schema(kind: str) -> None:
    body = json.loads(recorded_traffic().webhooks[kind].body)
    assert explain(body) == []


def test_a_system_message_comes_without_contacts_as_metas_schema_demands() -> None:
    body = json.loads(recorded_traffic().webhooks["system_user_changed_number"].body)
    value = body["entry"][0]["changes"][0]["value"]
    assert "contacts" not in value
    assert value["messages"][0]["system"]["type"] == "user_changed_number"
    user = {"profile": {"name": "Ana"}, "wa_id": value["messages"][0]["from"]}
    value["contacts"] = [user]
    assert explain(body) != []


@pytest.mark.parametrize("name", sample_names())
def test_sample_webhooks_fit_metas_schema(name: str) -> None:
    body = json.loads((SAMPLES / name).read_text(encoding="utf-8"))
    assert explain(body) == []


@pytest.mark.parametrize("name", sorted(set(meta_webhook_examples()) - LISTED_EXAMPLES))
def test_metas_own_webhook_examples_fit_the_corrected_schema(name: str) -> None:
    assert explain(meta_webhook_examples()[name]) == []


@pytest.mark.parametrize("name", sorted(set(meta_webhook_examples()) & LISTED_EXAMPLES))
def test_the_webhook_examples_listed_as_defects_still_contradict_the_schema(name: str) -> None:
    assert explain(meta_webhook_examples()[name]) != []


def test_the_webhook_examples_are_read() -> None:
    examples = meta_webhook_examples()
    assert len(examples) == 16
    assert len(set(examples) & LISTED_EXAMPLES) == 3
