"""Meta's error codes: the table, the two shapes they travel in, and the named exceptions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from channels.whatsapp import errors
from channels.whatsapp.error_codes import ERROR_CODES, ERROR_DOCS_URL, ErrorCode, spec_for
from channels.whatsapp.errors import (
    AuthError,
    ErrorObject,
    GenericError,
    GraphAPIError,
    InvalidParameter,
    NoSuchObject,
    PairRateLimited,
    ParameterInvalid,
    ParameterMissing,
    RateLimited,
    ReEngagementRequired,
    TemplateNotFound,
    ThroughputLimited,
    Undeliverable,
    UnknownPath,
    UnsupportedMessageType,
    error_envelope,
    error_object,
    graph_error,
)
from channels.whatsapp.payloads import PayloadError
from harness.exceptions import ChannelError

DATA = Path(__file__).parents[2] / "data" / "whatsapp"


def _named_classes() -> list[type[GraphAPIError]]:
    found = [getattr(errors, name) for name in errors.__all__]
    return [
        c
        for c in found
        if isinstance(c, type) and issubclass(c, GraphAPIError) and c.__dict__.get("codes")
    ]


def test_table_and_enum_agree() -> None:
    assert set(ERROR_CODES) == {int(code) for code in ErrorCode}
    for code in ErrorCode:
        assert code.spec.code == code
        assert code.spec.delivery in ("sync", "async", "both")
        assert 400 <= code.spec.http_status < 600
        assert code.spec.title
        assert code.spec.details


@pytest.mark.parametrize(
    ("code", "status"),
    [
        # Section 9 defaults: rate limits answer 400 with the code in the body.
        (4, 400),
        (80007, 400),
        (130429, 400),
        (131048, 400),
        (131056, 400),
        (131000, 500),
        (132001, 404),
        (190, 401),
        (0, 401),
        (10, 403),
        (100, 400),
        (131016, 503),
    ],
)
def test_http_status_defaults(code: int, status: int) -> None:
    assert spec_for(code).http_status == status
    assert graph_error(code).http_status == status


@pytest.mark.parametrize(
    ("code", "delivery"),
    [(131047, "async"), (131026, "async"), (131056, "sync"), (131051, "both"), (100, "sync")],
)
def test_usual_delivery(code: int, delivery: str) -> None:
    assert spec_for(code).delivery == delivery


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        (131047, ReEngagementRequired),
        (131056, PairRateLimited),
        (130429, ThroughputLimited),
        (100, InvalidParameter),
        (131008, ParameterMissing),
        (131009, ParameterInvalid),
        (131026, Undeliverable),
        (131051, UnsupportedMessageType),
        (132001, TemplateNotFound),
        (190, AuthError),
        (0, AuthError),
        (131000, GenericError),
    ],
)
def test_graph_error_picks_the_named_exception(code: int, cls: type[GraphAPIError]) -> None:
    exc = graph_error(code)
    assert type(exc) is cls
    assert exc.code == code
    assert isinstance(exc, ChannelError)


def test_every_named_class_is_reached_from_its_codes() -> None:
    classes = _named_classes()
    assert len(classes) >= 20
    for cls in classes:
        for code in cls.codes:
            assert type(graph_error(code)) is cls
        default = cls()
        assert default.code == cls.codes[0]
        assert default.title == spec_for(cls.codes[0]).title
    assert {code for cls in classes for code in cls.codes} == set(ERROR_CODES)


def test_rate_limits_share_a_base() -> None:
    for code in (4, 80007, 130429, 131048, 131056):
        assert isinstance(graph_error(code), RateLimited)
    assert not isinstance(graph_error(131047), RateLimited)


def test_unknown_code_gets_the_root_class_and_generic_defaults() -> None:
    exc = graph_error(999999)
    assert type(exc) is GraphAPIError
    assert exc.http_status == 400
    assert exc.title == "Unknown error"
    assert exc.message == "(#999999) Unknown error"


def test_code_is_checked_against_the_class() -> None:
    with pytest.raises(TypeError, match="needs an error code"):
        GraphAPIError()
    with pytest.raises(ValueError, match="stands for codes"):
        ReEngagementRequired(131056)


def test_message_is_one_line_with_code_and_details() -> None:
    exc = PairRateLimited()
    assert str(exc) == (
        "(#131056) (Business Account, Consumer Account) pair rate limit hit: Message failed to"
        " send because there were too many messages sent from this phone number to the same"
        " phone number in a short period of time."
    )
    assert "\n" not in str(exc)


def test_graph_envelope_has_metas_shape_and_key_order() -> None:
    body = PairRateLimited(fbtrace_id="AbCdEf123").to_envelope()
    assert body == {
        "error": {
            "message": "(#131056) (Business Account, Consumer Account) pair rate limit hit",
            "type": "OAuthException",
            "code": 131056,
            "error_data": {
                "messaging_product": "whatsapp",
                "details": (
                    "Message failed to send because there were too many messages sent from"
                    " this phone number to the same phone number in a short period of time."
                ),
            },
            "fbtrace_id": "AbCdEf123",
        }
    }
    assert list(body["error"]) == ["message", "type", "code", "error_data", "fbtrace_id"]
    assert json.dumps(body).count("null") == 0


def test_expired_token_keeps_its_subcode() -> None:
    body = AuthError(error_subcode=463).to_envelope()
    assert body["error"]["code"] == 190
    assert body["error"]["error_subcode"] == 463
    assert list(body["error"])[:4] == ["message", "type", "code", "error_subcode"]


def test_overrides_reach_the_envelope() -> None:
    exc = InvalidParameter(details="Unexpected key 'foo' on param 'text'.", http_status=400)
    assert exc.to_envelope()["error"]["error_data"]["details"] == (
        "Unexpected key 'foo' on param 'text'."
    )
    assert error_envelope(100, message="custom").error.message == "custom"


def test_failed_status_error_object_matches_the_data_file() -> None:
    data = json.loads((DATA / "status_failed.json").read_text(encoding="utf-8"))
    expected = data["entry"][0]["changes"][0]["value"]["statuses"][0]["errors"][0]
    assert ReEngagementRequired().to_error_object().to_dict() == expected
    assert error_object(131047, href=ERROR_DOCS_URL).to_dict() == expected


def test_inbound_error_objects() -> None:
    unsupported = error_object(131051).to_dict()
    assert unsupported == {
        "code": 131051,
        "title": "Message type unknown",
        "message": "Message type unknown",
        "error_data": {"details": "Message type is currently not supported."},
    }
    value_error = error_object(131000, details="Unsupported webhook payload", with_message=False)
    assert value_error.to_dict() == {
        "code": 131000,
        "title": "Something went wrong",
        "error_data": {"details": "Unsupported webhook payload"},
    }


@pytest.mark.parametrize("code", sorted(ERROR_CODES))
def test_envelope_round_trip(code: int) -> None:
    original = graph_error(code, details=f"details for {code}", fbtrace_id="T1")
    again = GraphAPIError.from_envelope(original.to_envelope(), http_status=original.http_status)
    assert type(again) is type(original)
    if not original.with_data:  # Graph's own errors carry their words in the message alone
        assert again.details == again.message == original.message
        original.details = again.details
    assert (again.code, again.details, again.message, again.fbtrace_id) == (
        original.code,
        original.details,
        original.message,
        original.fbtrace_id,
    )
    assert again.to_envelope() == original.to_envelope()


def test_error_object_round_trip() -> None:
    original = ReEngagementRequired(details="late")
    again = GraphAPIError.from_error_object(original.to_error_object())
    assert type(again) is ReEngagementRequired
    assert again.details == "late"


def test_from_envelope_keeps_unknown_fields_and_rejects_other_shapes() -> None:
    body = {
        "error": {"message": "m", "type": "OAuthException", "code": "131056", "is_transient": True}
    }
    exc = GraphAPIError.from_envelope(body)
    assert type(exc) is PairRateLimited  # the code is int-castable, as clients expect
    with pytest.raises(PayloadError, match=r"at error\.code: Field required"):
        GraphAPIError.from_envelope({"error": {"message": "m"}})


def test_error_object_model_keeps_unknown_fields() -> None:
    data = {"code": 131060, "title": "Message unavailable", "new_field": {"x": [1]}}
    assert ErrorObject.model_validate(data).to_dict() == data


def test_graph_says_no_such_object_in_its_own_shape() -> None:
    # A wrong phone_number_id, or a method the object does not take: third parties
    # report Graph's answer as a GraphMethodException, subcode 33, without error_data.
    error = NoSuchObject.about("POST", "123")
    body = error.to_envelope()["error"]
    assert (body["type"], body["code"], body["error_subcode"]) == ("GraphMethodException", 100, 33)
    assert "error_data" not in body
    assert body["message"].startswith("Unsupported post request. Object with ID '123' does not")
    assert isinstance(error, InvalidParameter)
    assert error.http_status == 400
    again = GraphAPIError.from_envelope(error.to_envelope())
    assert type(again) is NoSuchObject
    assert again.message == error.message
    # Code 100 without the subcode is still the plain invalid parameter.
    assert type(GraphAPIError.from_envelope(graph_error(100).to_envelope())) is InvalidParameter


def test_unknown_path_components() -> None:
    body = UnknownPath.after("/a/b").to_envelope()["error"]
    assert body == {
        "message": "Unknown path components: /a/b",
        "type": "OAuthException",
        "code": 2500,
    }
