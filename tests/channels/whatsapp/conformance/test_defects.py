"""The list of Meta's defects is true, and the tests correct the file by exactly that much.

Each correction must still find, in Meta's file, what the entry says is
there (a fixed file fails here, and the entry goes); each correction that
loosens the file must be needed (without it, something Meta or the simulator
really sends fails); the one that tightens it must catch what it is meant
to. Entries without a correction are checked against the file directly.
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

import pytest

from tests.channels.whatsapp.conformance import spec
from tests.channels.whatsapp.conformance.defects import (
    ABSENT,
    DEFECTS,
    Correction,
    SpecDefect,
    defect,
)
from tests.channels.whatsapp.conformance.test_requests import UPLOADS
from tests.channels.whatsapp.conformance.test_webhooks import (
    LISTED_EXAMPLES,
    SAMPLES,
    meta_webhook_examples,
    sample_names,
)
from tests.channels.whatsapp.conformance.traffic import ANSWER_KINDS, recorded_traffic
from tests.channels.whatsapp.sends.test_meta_examples import filled, meta_examples


def _corrections() -> list[Any]:
    return [
        pytest.param(entry, correction, id=f"{entry.key}:{index}")
        for entry in DEFECTS
        for index, correction in enumerate(entry.corrections)
    ]


def _loosening() -> list[str]:
    return [entry.key for entry in DEFECTS if entry.corrections and not entry.tightens]


@functools.cache
def corpus() -> list[tuple[str, str, Any]]:
    """Everything the tests check against the file: (label, schema pointer, instance)."""
    traffic = recorded_traffic()
    items = [
        (f"webhook {kind}", spec.WEBHOOK, json.loads(delivery.body))
        for kind, delivery in traffic.webhooks.items()
    ]
    items += [
        (f"sample {name}", spec.WEBHOOK, json.loads((SAMPLES / name).read_text(encoding="utf-8")))
        for name in sample_names()
    ]
    items += [
        (f"Meta's example {name}", spec.WEBHOOK, body)
        for name, body in meta_webhook_examples().items()
        if name not in LISTED_EXAMPLES
    ]
    items += [
        (f"answer {kind}", ANSWER_KINDS[kind], answer.body)
        for kind, answer in traffic.answers.items()
    ]
    return items


def test_every_entry_says_what_is_wrong_and_what_we_follow() -> None:
    keys = [entry.key for entry in DEFECTS]
    assert len(keys) == len(set(keys)) == 20
    for entry in DEFECTS:
        assert entry.wrong.strip(), entry.key
        assert entry.follow.strip(), entry.key
        assert entry.refused_as is None or entry.examples, entry.key
    assert defect("no-played-status").key == "no-played-status"
    with pytest.raises(KeyError, match="no such defect"):
        defect("a-made-up-defect")


@pytest.mark.parametrize(("entry", "correction"), _corrections())
def test_every_correction_still_finds_its_defect_in_metas_file(
    entry: SpecDefect, correction: Correction
) -> None:
    assert spec.resolve(spec.as_written(), correction.at) == correction.spec
    assert correction.ours != correction.spec


@pytest.mark.parametrize("key", _loosening())
def test_every_loosening_correction_is_needed(key: str) -> None:
    document = spec.corrected(without=[key])
    checkers: dict[str, Any] = {}
    refused = []
    for label, pointer, instance in corpus():
        if pointer not in checkers:
            checkers[pointer] = spec.validator(document, pointer)
        if not checkers[pointer].is_valid(instance):
            refused.append(label)
    assert refused, f"nothing the tests check needs the correction of {key}"


def test_the_corrected_file_takes_the_whole_corpus() -> None:
    failing = [
        label
        for label, pointer, instance in corpus()
        if not spec.corrected_validator(pointer).is_valid(instance)
    ]
    assert failing == []
    assert len(corpus()) == 30 + 30 + 13 + 17  # webhooks, samples, Meta's examples, answers


def test_the_reply_shapes_meta_names_in_a_discriminator_are_applied() -> None:
    key = "reply-shapes-only-in-a-discriminator"
    assert defect(key).tightens
    body = json.loads(recorded_traffic().webhooks["button_reply"].body)
    message = body["entry"][0]["changes"][0]["value"]["messages"][0]
    del message["interactive"]["button_reply"]["title"]
    assert not spec.corrected_validator(spec.WEBHOOK).is_valid(body)
    assert spec.validator(spec.corrected(without=[key]), spec.WEBHOOK).is_valid(body)


def test_a_correction_refuses_a_file_that_no_longer_has_its_defect() -> None:
    correction = defect("no-played-status").corrections[0]
    document = spec.as_written()
    spec.apply(document, correction)
    with pytest.raises(AssertionError, match="no longer holds the defect"):
        spec.apply(document, correction)
    fresh = spec.as_written()
    added = Correction("/components/schemas/Statuses/x-note", ABSENT, "added")
    spec.apply(fresh, added)
    assert fresh["components"]["schemas"]["Statuses"]["x-note"] == "added"
    with pytest.raises(KeyError, match="no such defect"):
        spec.corrected(without=["a-made-up-defect"])


def test_metas_send_schemas_refuse_every_request_example_of_the_file() -> None:
    assert not defect("send-schemas-refuse-every-body").corrections
    checker = spec.validator(spec.as_written(), "/components/schemas/Message")
    examples = meta_examples()
    assert [name for name in examples if checker.is_valid(filled(examples[name]))] == []
    reaction = spec.as_written()["components"]["schemas"]["ReactionMessage"]
    base = spec.resolve(spec.as_written(), "/components/schemas/BaseMessageProperties")
    assert reaction["allOf"][0]["$ref"].endswith("/BaseMessageProperties")
    assert "context" in base["properties"]


def test_no_operation_refers_to_the_read_receipt_answer() -> None:
    document = spec.as_written()
    assert "MarkMessageResponsePayload" in document["components"]["schemas"]
    assert "MarkMessageResponsePayload" not in json.dumps(document["paths"])


@pytest.mark.parametrize(
    ("path", "method"),
    [
        ("/{Version}/{Phone-Number-ID}/messages", "post"),
        ("/{Version}/{Phone-Number-ID}/media", "post"),
        ("/{Version}/{Media-ID}", "get"),
        ("/{Version}/{Media-ID}", "delete"),
    ],
)
def test_the_send_and_media_operations_describe_no_error_answers(path: str, method: str) -> None:
    assert defect("send-errors-not-described").follow
    assert set(spec.as_written()["paths"][path][method]["responses"]) == {"200"}


def test_every_example_an_entry_names_is_one_of_metas() -> None:
    known = {*meta_examples(), *meta_webhook_examples(), *UPLOADS}
    named = {name for entry in DEFECTS for name in entry.examples}
    assert named <= known
    assert len(named) == 8


def test_the_file_is_read_as_written_every_time() -> None:
    first = spec.as_written()
    first["components"]["schemas"].clear()
    assert spec.as_written()["components"]["schemas"]
    assert copy.deepcopy(spec.corrected()) == spec.corrected()
