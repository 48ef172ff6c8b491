"""Every answer the fake Graph API gives fits the schema Meta's file gives it.

Sends answer MessageResponsePayload; read receipts and typing indicators
MarkMessageResponsePayload; uploads, media metadata and deletions the inline
schemas of their operations; errors of every kind GraphAPIError, the file's
standard Graph API error (see ``defects`` for why those two are taken from
components no operation refers to).
"""

from __future__ import annotations

import pytest

from tests.channels.whatsapp.conformance import spec
from tests.channels.whatsapp.conformance.traffic import ANSWER_KINDS, recorded_traffic

# The HTTP status of each error the traffic provokes.
ERROR_STATUSES = {
    "error_invalid_parameter": (400, 131009),
    "error_missing_parameter": (400, 131008),
    "error_unknown_type": (400, 131051),
    "error_template_not_found": (404, 132001),
    "error_bad_token": (401, 190),
    "error_no_payments": (403, 10),
    "error_unknown_media": (400, 100),
    "error_unknown_path": (400, 2500),
    "error_wrong_method": (400, 100),
}


def test_the_traffic_holds_every_kind_of_answer() -> None:
    assert sorted(recorded_traffic().answers) == sorted(ANSWER_KINDS)
    assert len(ANSWER_KINDS) == 17


@pytest.mark.parametrize("kind", sorted(ANSWER_KINDS))
def test_every_answer_of_the_fake_graph_api_fits_metas_schema(kind: str) -> None:
    answer = recorded_traffic().answers[kind]
    checker = spec.corrected_validator(ANSWER_KINDS[kind])
    assert spec.problems(checker, answer.body) == []
    expected = ERROR_STATUSES.get(kind)
    if expected is None:
        assert answer.status == 200
    else:
        assert (answer.status, answer.body["error"]["code"]) == expected


def test_media_metadata_fits_meta_only_with_file_size_as_a_string() -> None:
    body = dict(recorded_traffic().answers["media_url"].body)
    checker = spec.corrected_validator(ANSWER_KINDS["media_url"])
    assert body["file_size"].isdigit()
    assert not checker.is_valid({**body, "file_size": int(body["file_size"])})


def test_a_send_answer_echoes_the_bsuid_it_was_sent_to() -> None:
    answer = recorded_traffic().answers["sent_to_bsuid"].body
    [contact] = answer["contacts"]
    assert contact["input"] == contact["user_id"]
    assert "wa_id" not in contact
