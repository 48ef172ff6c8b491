"""Send-body validation: every type, every limit at its edge, and the codes Meta answers."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from channels.whatsapp.errors import GraphAPIError
from channels.whatsapp.templates import TemplateRegistry, TemplateSpec
from channels.whatsapp.validation import (
    SendLimits,
    SendValidator,
    ValidatedSend,
    normalize_wa_id,
    parse_json_body,
)

SENDS = Path(__file__).resolve().parents[2] / "data" / "whatsapp" / "sends"
PHONE = "100200300400500"
KNOWN_MEDIA = "1479537139650973"


def load_send(name: str) -> dict[str, Any]:
    """A valid send body from ``tests/data/whatsapp/sends``, fresh each call."""
    data: dict[str, Any] = json.loads((SENDS / f"{name}.json").read_text(encoding="utf-8"))
    return data


def send_names() -> list[str]:
    """The names of every valid send body on disk."""
    return sorted(path.stem for path in SENDS.glob("*.json"))


_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def set_path(body: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``body`` with the field at ``path`` (``a.b[1].c``) set to ``value``."""
    result = copy.deepcopy(body)
    steps = [key if key else int(index) for key, index in _STEP.findall(path)]
    target: Any = result
    for step in steps[:-1]:
        target = target[step]
    target[steps[-1]] = value
    return result


def drop_path(body: dict[str, Any], path: str) -> dict[str, Any]:
    """A copy of ``body`` without the field at ``path``."""
    result = copy.deepcopy(body)
    steps = [key if key else int(index) for key, index in _STEP.findall(path)]
    target: Any = result
    for step in steps[:-1]:
        target = target[step]
    del target[steps[-1]]
    return result


@pytest.fixture
def validator() -> SendValidator:
    return SendValidator(media_exists=lambda media_id: media_id == KNOWN_MEDIA)


def ok(validator: SendValidator, body: object) -> ValidatedSend:
    return validator.validate(PHONE, body)


def fails(validator: SendValidator, body: object, code: int, path: str) -> GraphAPIError:
    with pytest.raises(GraphAPIError) as info:
        validator.validate(PHONE, body)
    assert info.value.code == code, info.value.details
    assert info.value.details.startswith(f"{path}:"), info.value.details
    return info.value


def buttons(count: int) -> list[dict[str, Any]]:
    return [{"type": "reply", "reply": {"id": f"b{i}", "title": f"B{i}"}} for i in range(count)]


def rows(count: int, prefix: str = "r") -> list[dict[str, Any]]:
    return [{"id": f"{prefix}{i}", "title": f"Row {i}"} for i in range(count)]


# -- every sample body is valid -------------------------------------------------


@pytest.mark.parametrize("name", send_names())
def test_sample_sends_are_valid(validator: SendValidator, name: str) -> None:
    body = load_send(name)
    send = ok(validator, body)
    assert send.body == body
    assert send.phone_number_id == PHONE


def test_validated_text_send_holds_its_parts(validator: SendValidator) -> None:
    send = ok(validator, load_send("text_reply"))
    assert (send.action, send.type, send.to, send.recipient) == (
        "message",
        "text",
        "5511987654321",
        None,
    )
    assert (send.input, send.text, send.context_id) == ("5511987654321", "see above", "wamid.IN_1")
    assert send.biz_opaque_callback_data == "order-42"
    assert send.user == "5511987654321"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("interactive_button", {"interactive_type": "button", "text": "Keep 9am?"}),
        ("interactive_list", {"interactive_type": "list", "text": "Pick one"}),
        ("interactive_cta_url", {"interactive_type": "cta_url", "text": "Track your order"}),
        ("template", {"template_name": "order_update", "template_language": "en_US"}),
        ("image_link", {"media_link": "https://example.com/menu.jpg", "text": "Menu"}),
        ("document_link", {"text": "Your invoice"}),
        ("reaction", {"message_id": "wamid.IN_1", "text": "👍"}),
        ("reaction_removed", {"message_id": "wamid.IN_1", "text": ""}),
        ("location", {"text": "HQ"}),
        ("mark_read", {"action": "mark_read", "message_id": "wamid.IN_1", "type": None}),
        ("typing", {"action": "typing", "message_id": "wamid.IN_1"}),
        ("text_bsuid", {"recipient": "BR.1234567890", "to": None, "input": "BR.1234567890"}),
    ],
)
def test_validated_sends_expose_their_fields(
    validator: SendValidator, name: str, expected: dict[str, Any]
) -> None:
    send = ok(validator, load_send(name))
    assert {key: getattr(send, key) for key in expected} == expected


def test_media_by_known_id(validator: SendValidator) -> None:
    body = set_path(load_send("image_link"), "image", {"id": KNOWN_MEDIA, "caption": "x"})
    assert ok(validator, body).media_id == KNOWN_MEDIA


def test_missing_type_means_text(validator: SendValidator) -> None:
    send = ok(validator, drop_path(load_send("text"), "type"))
    assert send.type == "text"


# -- the request as a whole (100) ------------------------------------------------


@pytest.mark.parametrize("body", [[], "text", 3, None, True])
def test_body_must_be_an_object(validator: SendValidator, body: object) -> None:
    with pytest.raises(GraphAPIError) as info:
        validator.validate(PHONE, body)
    error = info.value
    assert (error.code, error.http_status) == (100, 400)
    assert error.details.startswith("the request body must be a JSON object")
    assert error.message.startswith("(#100) ")


def test_messaging_product_is_required(validator: SendValidator) -> None:
    fails(validator, drop_path(load_send("text"), "messaging_product"), 100, "messaging_product")
    wrong = set_path(load_send("text"), "messaging_product", "instagram")
    fails(validator, wrong, 100, "messaging_product")


def test_unknown_top_level_key_is_named(validator: SendValidator) -> None:
    error = fails(validator, {**load_send("text"), "zz_extra": 1, "priority": 2}, 100, "priority")
    assert "priority" in error.message


def test_read_receipt_rejects_message_keys(validator: SendValidator) -> None:
    fails(validator, {**load_send("mark_read"), "type": "text"}, 100, "type")


@pytest.mark.parametrize(
    "raw", [b"", b"{", b"\xff\xfe\x00", b"NaN", b'{"a": Infinity}', b"[" * 100_000]
)
def test_parse_json_body_refuses_what_is_not_json(raw: bytes) -> None:
    with pytest.raises(GraphAPIError) as info:
        parse_json_body(raw)
    assert info.value.code == 100


def test_parse_json_body_reads_json() -> None:
    assert parse_json_body(b'{"a": [1, 2.5, "\\u00e9"]}') == {"a": [1, 2.5, "é"]}


# -- recipients ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "wa_id"),
    [
        ("+5511987654321", "5511987654321"),
        ("+55 11 98765-4321", "5511987654321"),
        ("15550001111", "15550001111"),
        (" 1-555-000-1111 ", "15550001111"),
        ("12345", "12345"),
        ("123456789012345", "123456789012345"),
        ("1234", None),
        ("1234567890123456", None),
        ("++15550001111", None),
        ("1555+0001111", None),
        # Meta takes parentheses as well (its description of numbers: "+1 (631) 555-1000")
        ("+1 (631) 555-1000", "16315551000"),
        ("(555) 0001111", "5550001111"),
        ("+1 (631) 555-1000 ext", None),
        ("+1 [631] 555-1000", None),
        ("", None),
        ("١٢٣٤٥٦٧", None),
    ],
)
def test_normalize_wa_id(raw: str, wa_id: str | None) -> None:
    assert normalize_wa_id(raw) == wa_id


def test_to_wins_over_recipient(validator: SendValidator) -> None:
    send = ok(validator, {**load_send("text"), "recipient": "BR.1234567890"})
    assert (send.to, send.recipient, send.input) == ("5511987654321", None, "+5511987654321")


def test_a_number_written_with_parentheses_is_taken(validator: SendValidator) -> None:
    # kapso-whatsapp-cloud-api passes a number on as its user wrote it
    send = ok(validator, {**load_send("text"), "to": "+55 (11) 98765-4321"})
    assert (send.to, send.input) == ("5511987654321", "+55 (11) 98765-4321")


def test_a_recipient_is_required(validator: SendValidator) -> None:
    fails(validator, drop_path(load_send("text"), "to"), 131008, "to")


@pytest.mark.parametrize(
    ("key", "value"),
    [("to", "not-a-number"), ("to", 5511987654321), ("recipient", "br.123"), ("recipient", 7)],
)
def test_bad_recipients(validator: SendValidator, key: str, value: object) -> None:
    body = drop_path(load_send("text"), "to")
    fails(validator, {**body, key: value}, 131009, key)


def test_group_send(validator: SendValidator) -> None:
    body = {**load_send("text"), "recipient_type": "group", "to": "Y2FwaV9ncm91cDox"}
    send = ok(validator, body)
    assert (send.group_id, send.to, send.recipient, send.user) == (
        "Y2FwaV9ncm91cDox",
        None,
        None,
        None,
    )
    fails(validator, {**body, "recipient_type": "channel"}, 131009, "recipient_type")


# -- types ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["poll", "order", "TEXT", ""])
def test_unknown_type_is_131051(validator: SendValidator, kind: str) -> None:
    fails(validator, set_path(load_send("text"), "type", kind), 131051, "type")


def test_type_must_be_a_string(validator: SendValidator) -> None:
    fails(validator, set_path(load_send("text"), "type", ["text"]), 131009, "type")


def test_type_object_is_required(validator: SendValidator) -> None:
    fails(validator, drop_path(load_send("text"), "text"), 131008, "text")
    fails(validator, set_path(load_send("text"), "text", "hi"), 131009, "text")


def test_text_body_limits(validator: SendValidator) -> None:
    body = load_send("text")
    ok(validator, set_path(body, "text.body", "x" * 4096))
    fails(validator, set_path(body, "text.body", "x" * 4097), 131009, "text.body")
    fails(validator, set_path(body, "text.body", ""), 131009, "text.body")
    fails(validator, drop_path(body, "text.body"), 131008, "text.body")
    fails(validator, set_path(body, "text.preview_url", "yes"), 131009, "text.preview_url")


def test_context_needs_a_message_id(validator: SendValidator) -> None:
    body = load_send("text_reply")
    fails(validator, set_path(body, "context", {}), 131008, "context.message_id")
    fails(validator, set_path(body, "context", "wamid.X"), 131009, "context")


def test_callback_data_limit(validator: SendValidator) -> None:
    body = load_send("text_reply")
    ok(validator, set_path(body, "biz_opaque_callback_data", "x" * 512))
    fails(
        validator,
        set_path(body, "biz_opaque_callback_data", "x" * 513),
        131009,
        "biz_opaque_callback_data",
    )


# -- reply buttons -------------------------------------------------------------

BUTTONS = "interactive.action.buttons"


@pytest.mark.parametrize(
    ("path", "limit"),
    [
        (f"{BUTTONS}[1].reply.title", 20),
        (f"{BUTTONS}[1].reply.id", 256),
        ("interactive.body.text", 1024),
        ("interactive.footer.text", 60),
        ("interactive.header.text", 60),
    ],
)
def test_button_text_limits(validator: SendValidator, path: str, limit: int) -> None:
    body = load_send("interactive_button")
    ok(validator, set_path(body, path, "x" * limit))
    error = fails(validator, set_path(body, path, "x" * (limit + 1)), 131009, path)
    assert f"at most {limit} characters" in error.details


def test_button_count(validator: SendValidator) -> None:
    body = load_send("interactive_button")
    ok(validator, set_path(body, BUTTONS, buttons(3)))
    fails(validator, set_path(body, BUTTONS, buttons(4)), 131009, BUTTONS)
    fails(validator, set_path(body, BUTTONS, []), 131009, BUTTONS)
    fails(validator, drop_path(body, BUTTONS), 131008, BUTTONS)


def test_button_titles_and_ids_are_unique(validator: SendValidator) -> None:
    body = load_send("interactive_button")
    fails(
        validator,
        set_path(body, f"{BUTTONS}[1].reply.title", "Keep"),
        131009,
        f"{BUTTONS}[1].reply.title",
    )
    fails(
        validator,
        set_path(body, f"{BUTTONS}[1].reply.id", "keep"),
        131009,
        f"{BUTTONS}[1].reply.id",
    )


def test_button_shape(validator: SendValidator) -> None:
    body = load_send("interactive_button")
    fails(validator, set_path(body, f"{BUTTONS}[0].type", "url"), 131009, f"{BUTTONS}[0].type")
    fails(validator, set_path(body, f"{BUTTONS}[0]", "keep"), 131009, f"{BUTTONS}[0]")
    fails(validator, drop_path(body, f"{BUTTONS}[0].reply"), 131008, f"{BUTTONS}[0].reply")
    fails(validator, drop_path(body, "interactive.body"), 131008, "interactive.body")
    fails(validator, drop_path(body, "interactive.action"), 131008, "interactive.action")


def test_button_headers(validator: SendValidator) -> None:
    body = load_send("interactive_button_image_header")
    ok(validator, body)
    for kind in ("video", "document"):
        ok(
            validator,
            set_path(body, "interactive.header", {"type": kind, kind: {"id": KNOWN_MEDIA}}),
        )
    header = {"type": "image", "image": {"id": "999"}}
    fails(
        validator,
        set_path(body, "interactive.header", header),
        131009,
        "interactive.header.image.id",
    )
    header = {"type": "location"}
    fails(
        validator, set_path(body, "interactive.header", header), 131009, "interactive.header.type"
    )
    header = {"type": "image", "image": {"link": "https://e.com/a.jpg", "caption": "no"}}
    fails(
        validator,
        set_path(body, "interactive.header", header),
        100,
        "interactive.header.image.caption",
    )


# -- lists ---------------------------------------------------------------------

SECTIONS = "interactive.action.sections"


@pytest.mark.parametrize(
    ("path", "limit"),
    [
        ("interactive.action.button", 20),
        (f"{SECTIONS}[1].title", 24),
        (f"{SECTIONS}[1].rows[0].title", 24),
        (f"{SECTIONS}[1].rows[0].description", 72),
        (f"{SECTIONS}[1].rows[0].id", 200),
        ("interactive.body.text", 4096),
        ("interactive.header.text", 60),
        ("interactive.footer.text", 60),
    ],
)
def test_list_text_limits(validator: SendValidator, path: str, limit: int) -> None:
    body = load_send("interactive_list")
    ok(validator, set_path(body, path, "x" * limit))
    fails(validator, set_path(body, path, "x" * (limit + 1)), 131009, path)


def test_list_counts(validator: SendValidator) -> None:
    body = load_send("interactive_list")
    ten = [{"title": f"S{i}", "rows": rows(1, f"s{i}r")} for i in range(10)]
    ok(validator, set_path(body, SECTIONS, ten))
    eleven = [*ten, {"title": "S10", "rows": rows(1, "x")}]
    fails(validator, set_path(body, SECTIONS, eleven), 131009, SECTIONS)
    split = [{"title": "A", "rows": rows(6, "a")}, {"title": "B", "rows": rows(4, "b")}]
    ok(validator, set_path(body, SECTIONS, split))
    split[1]["rows"] = rows(5, "b")
    fails(validator, set_path(body, SECTIONS, split), 131009, f"{SECTIONS}[1].rows[4]")
    fails(validator, set_path(body, SECTIONS, []), 131009, SECTIONS)
    fails(validator, set_path(body, f"{SECTIONS}[0].rows", []), 131009, f"{SECTIONS}[0].rows")


def test_list_row_ids_are_unique_across_sections(validator: SendValidator) -> None:
    body = set_path(load_send("interactive_list"), f"{SECTIONS}[1].rows[1].id", "express")
    fails(validator, body, 131009, f"{SECTIONS}[1].rows[1].id")


def test_list_section_titles(validator: SendValidator) -> None:
    body = load_send("interactive_list")
    fails(validator, drop_path(body, f"{SECTIONS}[0].title"), 131008, f"{SECTIONS}[0].title")
    single = set_path(body, SECTIONS, [{"rows": rows(2)}])
    ok(validator, single)


def test_list_header_is_text_only(validator: SendValidator) -> None:
    body = load_send("interactive_list")
    header = {"type": "image", "image": {"link": "https://example.com/a.jpg"}}
    fails(
        validator, set_path(body, "interactive.header", header), 131009, "interactive.header.type"
    )


def test_list_limits_are_configurable() -> None:
    old_docs = SendValidator(limits=SendLimits(list_body=1024))
    body = set_path(load_send("interactive_list"), "interactive.body.text", "x" * 1025)
    fails(old_docs, body, 131009, "interactive.body.text")


def test_other_interactive_types(validator: SendValidator) -> None:
    body = load_send("interactive_cta_url")
    fails(validator, drop_path(body, "interactive.action"), 131008, "interactive.action")
    fails(validator, set_path(body, "interactive.type", "poll"), 131009, "interactive.type")
    fails(validator, drop_path(body, "interactive.type"), 131008, "interactive.type")


# -- templates -----------------------------------------------------------------


def test_unknown_template_is_132001(validator: SendValidator) -> None:
    error = fails(
        validator, set_path(load_send("template"), "template.name", "nope"), 132001, "template.name"
    )
    assert error.http_status == 404


def test_unknown_template_language_is_132001(validator: SendValidator) -> None:
    body = set_path(load_send("template"), "template.language.code", "pt_BR")
    error = fails(validator, body, 132001, "template.name")
    assert "en_US" in error.details


def test_template_parameter_count(validator: SendValidator) -> None:
    body = load_send("template")
    fails(
        validator,
        set_path(body, "template.components[0].parameters", []),
        132000,
        "template.components",
    )
    two = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    fails(
        validator,
        set_path(body, "template.components[0].parameters", two),
        132000,
        "template.components",
    )
    reminder = set_path(body, "template.name", "appointment_reminder")
    ok(validator, set_path(reminder, "template.components[0].parameters", two))


def test_template_shape(validator: SendValidator) -> None:
    body = load_send("template")
    fails(validator, drop_path(body, "template.name"), 131008, "template.name")
    fails(validator, drop_path(body, "template.language.code"), 131008, "template.language.code")
    fails(validator, set_path(body, "template.components", {}), 131009, "template.components")
    param = "template.components[0].parameters[0]"
    fails(validator, drop_path(body, f"{param}.text"), 131008, f"{param}.text")


def test_custom_template_registry() -> None:
    registry = TemplateRegistry([TemplateSpec("promo", "pt_BR", header_params=1)])
    validator = SendValidator(templates=registry)
    template = {
        "name": "promo",
        "language": {"code": "pt_BR"},
        "components": [
            {
                "type": "header",
                "parameters": [{"type": "image", "image": {"link": "https://e.com/a.png"}}],
            }
        ],
    }
    body = {"messaging_product": "whatsapp", "to": "5511987654321", "type": "template"}
    ok(validator, {**body, "template": template})
    fails(
        validator,
        {**body, "template": {**template, "components": []}},
        132000,
        "template.components",
    )
    assert [spec.name for spec in registry] == ["promo"]


# -- media ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["image", "audio", "video", "document", "sticker"])
def test_media_reference(validator: SendValidator, kind: str) -> None:
    body = {"messaging_product": "whatsapp", "to": "5511987654321", "type": kind}
    ok(validator, {**body, kind: {"id": KNOWN_MEDIA}})
    fails(validator, {**body, kind: {"id": "42"}}, 131009, f"{kind}.id")
    fails(validator, {**body, kind: {}}, 131008, f"{kind}.id")
    both = {"id": KNOWN_MEDIA, "link": "https://example.com/a"}
    fails(validator, {**body, kind: both}, 131009, kind)
    fails(validator, {**body, kind: {"link": "ftp://example.com/a"}}, 131009, f"{kind}.link")
    fails(validator, {**body, kind: {"link": "https://"}}, 131009, f"{kind}.link")
    fails(validator, {**body, kind: {"link": "http://[::1"}}, 131009, f"{kind}.link")


@pytest.mark.parametrize("kind", ["image", "video", "document"])
def test_caption_limit(validator: SendValidator, kind: str) -> None:
    body = {"messaging_product": "whatsapp", "to": "5511987654321", "type": kind}
    ok(validator, {**body, kind: {"id": KNOWN_MEDIA, "caption": "x" * 1024}})
    fails(
        validator,
        {**body, kind: {"id": KNOWN_MEDIA, "caption": "x" * 1025}},
        131009,
        f"{kind}.caption",
    )


@pytest.mark.parametrize("kind", ["audio", "sticker"])
def test_no_caption_on_audio_or_sticker(validator: SendValidator, kind: str) -> None:
    body = {"messaging_product": "whatsapp", "to": "5511987654321", "type": kind}
    fails(validator, {**body, kind: {"id": KNOWN_MEDIA, "caption": "hi"}}, 100, f"{kind}.caption")


def test_filename_only_on_documents(validator: SendValidator) -> None:
    body = set_path(load_send("image_link"), "image.filename", "a.jpg")
    fails(validator, body, 100, "image.filename")


# -- reactions, locations, contacts ----------------------------------------------


def test_reaction_rules(validator: SendValidator) -> None:
    body = load_send("reaction")
    fails(validator, drop_path(body, "reaction.message_id"), 131008, "reaction.message_id")
    fails(validator, drop_path(body, "reaction.emoji"), 131008, "reaction.emoji")
    quoted = {**body, "context": {"message_id": "wamid.IN_1"}}
    fails(validator, quoted, 131009, "context")


def test_location_and_contacts(validator: SendValidator) -> None:
    location = load_send("location")
    fails(validator, set_path(location, "location.latitude", 91), 131009, "location.latitude")
    fails(validator, set_path(location, "location.longitude", True), 131009, "location.longitude")
    fails(validator, drop_path(location, "location.longitude"), 131008, "location.longitude")
    ok(validator, set_path(location, "location.latitude", "37.5"))
    contacts = load_send("contacts")
    fails(
        validator,
        drop_path(contacts, "contacts[0].name.formatted_name"),
        131008,
        "contacts[0].name.formatted_name",
    )
    fails(validator, set_path(contacts, "contacts", []), 131009, "contacts")


# -- read receipts and typing ----------------------------------------------------


def test_read_receipt_rules(validator: SendValidator) -> None:
    body = load_send("typing")
    fails(validator, set_path(body, "status", "delivered"), 131009, "status")
    fails(validator, drop_path(body, "message_id"), 131008, "message_id")
    fails(
        validator, set_path(body, "typing_indicator.type", "audio"), 131009, "typing_indicator.type"
    )
    fails(validator, set_path(body, "typing_indicator", {}), 131008, "typing_indicator.type")


# -- nothing else ever escapes ---------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5)
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(
    name=st.sampled_from(send_names()),
    key=st.sampled_from(
        [
            "messaging_product",
            "to",
            "type",
            "text",
            "interactive",
            "template",
            "image",
            "context",
            "reaction",
            "location",
            "contacts",
            "status",
            "message_id",
            "typing_indicator",
        ]
    ),
    value=_json,
)
def test_validator_raises_only_graph_errors(name: str, key: str, value: object) -> None:
    """Any value in any top-level slot of a valid body: valid, or a Graph error, nothing else."""
    validator = SendValidator()
    error: GraphAPIError | None = None
    try:
        validator.validate(PHONE, {**load_send(name), key: value})
    except GraphAPIError as exc:
        error = exc
    if error is not None:
        assert 400 <= error.http_status < 500
        assert error.details
