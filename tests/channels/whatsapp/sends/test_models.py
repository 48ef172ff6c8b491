"""The send models' own rules: what they take, which problem they report first, their schema."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from channels.whatsapp.errors import GraphAPIError
from channels.whatsapp.sends import (
    DEFAULT_LIMITS,
    LIMIT_KEY,
    SEND_REQUEST,
    InteractiveSend,
    Limit,
    ReadReceipt,
    SendContext,
    SendLimits,
    TextSend,
    apply_limits,
    graph_error_for,
    json_path,
    normalize_wa_id,
    send_schemas,
    without_nulls,
)
from tests.channels.whatsapp.test_validation import drop_path, load_send, set_path


def error_of(body: object, context: SendContext | None = None) -> GraphAPIError:
    """The error Meta would answer ``body`` with, from the models alone."""
    with pytest.raises(ValidationError) as info:
        SEND_REQUEST.validate_python(body, context=context)
    return graph_error_for(info.value)


def where(error: GraphAPIError) -> tuple[int, str]:
    return error.code, error.details.split(": ")[0]


# -- what they take ------------------------------------------------------------------


def test_a_body_is_validated_as_the_model_its_type_names() -> None:
    assert isinstance(SEND_REQUEST.validate_python(load_send("text")), TextSend)
    assert isinstance(SEND_REQUEST.validate_python(load_send("interactive_list")), InteractiveSend)
    assert isinstance(SEND_REQUEST.validate_python(load_send("typing")), ReadReceipt)


@pytest.mark.parametrize(
    "kind",
    ["order_details", "order_status", "cta_url", "flow", "carousel", "request_contact_info"],
)
def test_the_other_interactive_kinds_need_only_an_action(kind: str) -> None:
    body = set_path(load_send("interactive_cta_url"), "interactive.type", kind)
    SEND_REQUEST.validate_python(body)


def test_a_document_header_keeps_its_filename_but_no_other_media_has_one() -> None:
    # The header's document is a media object, whose filename is for documents only.
    document = {"type": "document", "document": {"link": "https://e.com/d.pdf"}}
    named = set_path(document, "document.filename", "menu.pdf")
    body = set_path(load_send("interactive_button"), "interactive.header", named)
    sent = SEND_REQUEST.validate_python(body)
    assert isinstance(sent, InteractiveSend)
    header: Any = sent.interactive.header
    assert header.document.filename == "menu.pdf"
    image = {"type": "image", "image": {"link": "https://e.com/a.jpg", "filename": "a.jpg"}}
    refused = error_of(set_path(body, "interactive.header", image))
    assert where(refused) == (100, "interactive.header.image.filename")
    assert refused.details.endswith("only documents have a filename")
    assert refused.message == (
        '(#100) Unexpected key "filename" on param "interactive.header.image".'
    )
    long_name = set_path(body, "interactive.header.document.filename", "x" * 256)
    assert where(error_of(long_name)) == (131009, "interactive.header.document.filename")
    captioned = set_path(body, "interactive.header.document.caption", "no")
    assert where(error_of(captioned)) == (100, "interactive.header.document.caption")


def test_nested_keys_meta_adds_are_ignored_but_top_level_ones_refused() -> None:
    SEND_REQUEST.validate_python(set_path(load_send("text"), "text.new_field", 1))
    assert where(error_of({**load_send("text"), "new_field": 1})) == (100, "new_field")


def test_a_key_left_out_is_fine_but_null_is_not_to_the_models() -> None:
    # The endpoint reads a null as the key left out before the models see the body.
    assert where(error_of({**load_send("text"), "context": None})) == (131009, "context")
    assert "not null" in error_of({**load_send("text"), "context": None}).details


def test_limits_count_code_points() -> None:
    path = "interactive.action.buttons[0].reply.title"
    SEND_REQUEST.validate_python(set_path(load_send("interactive_button"), path, "𝄞" * 20))
    error = error_of(set_path(load_send("interactive_button"), path, "𝄞" * 21))
    assert error.details == f"{path}: must be at most 20 characters, got 21"


def test_limits_come_from_the_context() -> None:
    body = set_path(load_send("text"), "text.body", "x" * 11)
    SEND_REQUEST.validate_python(body)
    loose = SendContext(SendLimits(text_body=10))
    assert error_of(body, loose).details == "text.body: must be at most 10 characters, got 11"


def test_the_media_store_is_asked_through_the_context() -> None:
    body = set_path(load_send("image_link"), "image", {"id": "42"})
    SEND_REQUEST.validate_python(body)
    stored = SendContext(media_exists=lambda media_id: media_id == "7")
    assert where(error_of(body, stored)) == (131009, "image.id")


@pytest.mark.parametrize(
    ("to", "recipient"),
    [("15550001111", "br.1"), ("15550001111", 7)],
)
def test_a_recipient_beside_a_phone_number_must_still_be_one(to: str, recipient: object) -> None:
    body = {**load_send("text"), "to": to, "recipient": recipient}
    assert where(error_of(body)) == (131009, "recipient")


@pytest.mark.parametrize(
    ("latitude", "taken"),
    [("37.5", True), ("-90", True), ("90.0", True), ("90.5", False), ("1e1", False), (" 1", False)],
)
def test_quoted_coordinates_are_plain_decimals_in_range(latitude: str, taken: bool) -> None:
    body = set_path(load_send("location"), "location.latitude", latitude)
    if taken:
        SEND_REQUEST.validate_python(body)
    else:
        assert where(error_of(body)) == (131009, "location.latitude")


def test_a_phone_number_of_many_spaces_is_refused_at_once() -> None:
    # The pattern would backtrack for ages in Python's own engine.
    assert normalize_wa_id(" " * 100_000 + "x") is None
    assert where(error_of(set_path(load_send("text"), "to", " " * 100_000))) == (131009, "to")


# -- which problem comes first -----------------------------------------------------------


def test_the_request_as_a_whole_comes_before_the_type() -> None:
    body = {**drop_path(load_send("text"), "messaging_product"), "type": "poll"}
    assert where(error_of(body)) == (100, "messaging_product")
    assert where(error_of({**load_send("text"), "type": "poll", "zz": 1})) == (100, "zz")


def test_of_several_unknown_keys_the_first_in_order_is_named() -> None:
    assert where(error_of({**load_send("text"), "zz": 1, "aa": 2})) == (100, "aa")


def test_a_body_that_forgot_its_type_hears_its_own_object_is_missing_first() -> None:
    body = drop_path(load_send("interactive_button"), "type")
    assert where(error_of(body)) == (131008, "text")
    assert where(error_of({**load_send("text"), "interactive": {}})) == (100, "interactive")


def test_a_missing_addressee_comes_before_the_content() -> None:
    body = set_path(drop_path(load_send("text"), "to"), "text.body", "")
    assert where(error_of(body)) == (131008, "to")


def test_media_with_both_id_and_link_is_named_before_the_rest() -> None:
    body = set_path(load_send("image_link"), "image", {"id": "1", "link": "x", "caption": 3})
    assert where(error_of(body)) == (131009, "image")


def test_a_count_over_the_limit_comes_before_the_items() -> None:
    buttons = [{"type": "reply", "reply": {"id": "a"}}] * 4
    body = set_path(load_send("interactive_button"), "interactive.action.buttons", buttons)
    assert where(error_of(body)) == (131009, "interactive.action.buttons")


# -- the pieces ----------------------------------------------------------------------


def test_json_paths() -> None:
    assert json_path(["interactive", "action", "buttons", 1, "reply", "title"]) == (
        "interactive.action.buttons[1].reply.title"
    )
    assert json_path([]) == ""
    assert json_path(["contacts", 0]) == "contacts[0]"


def test_a_limit_must_name_one_of_the_send_limits() -> None:
    with pytest.raises(ValueError, match="no limit named 'button_titel'"):
        Limit("button_titel")


def test_the_schema_carries_the_limits_it_is_given() -> None:
    default = send_schemas()
    assert default["ReplyChoice"]["properties"]["title"]["maxLength"] == 20
    assert default["ButtonAction"]["properties"]["buttons"]["maxItems"] == 3
    loose = send_schemas(SendLimits(button_title=30, buttons=5))
    assert loose["ReplyChoice"]["properties"]["title"]["maxLength"] == 30
    assert loose["ButtonAction"]["properties"]["buttons"]["maxItems"] == 5
    assert LIMIT_KEY not in str(loose)


def test_each_call_gets_schemas_of_its_own() -> None:
    first = send_schemas()
    first["ReplyChoice"]["properties"]["title"]["maxLength"] = 99
    del first["TextSend"]
    again = send_schemas()
    assert again["ReplyChoice"]["properties"]["title"]["maxLength"] == 20
    assert "TextSend" in again
    assert send_schemas(ref_template="#/$defs/{model}")["SendRequest"] != again["SendRequest"]


def test_apply_limits_leaves_the_rest_alone() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"rows": {"type": "array", "maxItems": 10, LIMIT_KEY: "rows"}},
    }
    resolved = apply_limits(schema, SendLimits(rows=4))
    assert resolved == {"type": "object", "properties": {"rows": {"type": "array", "maxItems": 4}}}
    assert schema["properties"]["rows"][LIMIT_KEY] == "rows"  # a copy: the input is untouched
    assert apply_limits(schema, DEFAULT_LIMITS)["properties"]["rows"]["maxItems"] == 10


def test_every_send_model_is_in_the_schemas() -> None:
    schemas = send_schemas()
    refs = {
        ref.removeprefix("#/components/schemas/")
        for ref in _refs(schemas)
        if ref.startswith("#/components/schemas/")
    }
    assert refs <= set(schemas)
    assert {"SendRequest", "TextSend", "ReadReceipt", "ListAction"} <= set(schemas)


def _refs(value: object) -> list[str]:
    if isinstance(value, dict):
        found = [value["$ref"]] if isinstance(value.get("$ref"), str) else []
        return found + [ref for item in value.values() for ref in _refs(item)]
    if isinstance(value, list):
        return [ref for item in value for ref in _refs(item)]
    return []


def test_without_nulls_copies_only_what_held_a_null() -> None:
    body = load_send("interactive_button")
    assert without_nulls(body) is body
    nulled = {**body, "context": None, "interactive": {**body["interactive"], "footer": None}}
    cleaned = without_nulls(nulled)
    kept = {k: v for k, v in body["interactive"].items() if k != "footer"}
    assert cleaned == {**body, "interactive": kept}
    assert cleaned["interactive"]["action"] is body["interactive"]["action"]
    assert without_nulls({"items": [None, {"a": None}]}) == {"items": [None, {}]}
