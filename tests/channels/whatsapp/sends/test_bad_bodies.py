"""A table of bad send bodies and the error Meta answers each with, checked three ways.

Each body must get its code, HTTP status and JSON path from the checks (the
send models, with the template registry and the media store) and from the
HTTP endpoint. The table also says whether the served OpenAPI schema refuses
the body too: it must, for every rule about the body's shape, since both come
from the same models; only the rules JSON Schema can't say (unique titles,
rows across sections, what the media store and the template registry hold)
are left to the server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import ValidationError

from channels.whatsapp.errors import GraphAPIError
from channels.whatsapp.sends import SEND_REQUEST, SendContext, graph_error_for
from channels.whatsapp.validation import SendValidator
from tests.channels.whatsapp.sends.served import (
    graph_app,
    graph_client,
    post_send,
    served_request_schema,
)
from tests.channels.whatsapp.test_validation import drop_path, load_send, set_path


@dataclass(frozen=True)
class Bad:
    """A bad body, the code and path of its error, and whether JSON Schema can tell."""

    body: Any
    code: int
    path: str
    status: int = 400
    schema_refuses: bool = True


def _two_sections(first: int, second: int) -> list[dict[str, Any]]:
    return [
        {"title": title, "rows": [{"id": f"{title}{i}", "title": f"Row {i}"} for i in range(count)]}
        for title, count in (("a", first), ("b", second))
    ]


_BUTTONS = "interactive.action.buttons"
_SECTIONS = "interactive.action.sections"
_TEXT = load_send("text")
_BUTTON = load_send("interactive_button")
_LIST = load_send("interactive_list")
_IMAGE = load_send("image_link")
_AUDIO = {"messaging_product": "whatsapp", "to": "5511987654321", "type": "audio"}
_TEMPLATE = load_send("template")
_READ = load_send("mark_read")
_TYPING = load_send("typing")
_PARAMETER = "template.components[0].parameters[0]"
_CTA = load_send("interactive_cta_url")
# Rules outside the models: the template registry's, and the business's payment set-up.
_BEYOND_MODELS = (10, 132000, 132001)

BAD: dict[str, Bad] = {
    # the request as a whole (100)
    "not an object": Bad([_TEXT], 100, ""),
    "no messaging_product": Bad(drop_path(_TEXT, "messaging_product"), 100, "messaging_product"),
    "another product": Bad(set_path(_TEXT, "messaging_product", "sms"), 100, "messaging_product"),
    "an unknown key": Bad({**_TEXT, "priority": "high"}, 100, "priority"),
    "a read receipt with a type": Bad({**_READ, "type": "text"}, 100, "type"),
    "a text with an image too": Bad(
        {**_TEXT, "image": {"link": "https://e.com/a.jpg"}}, 100, "image"
    ),
    # the message type (131051, 131009)
    "an unknown type": Bad(set_path(_TEXT, "type", "poll"), 131051, "type"),
    "a type that is not a string": Bad(set_path(_TEXT, "type", 3), 131009, "type"),
    # the addressee
    "nobody to send to": Bad(drop_path(_TEXT, "to"), 131008, "to"),
    "a group without its id": Bad(
        {**drop_path(_TEXT, "to"), "recipient_type": "group"}, 131008, "to"
    ),
    "a phone number that is not one": Bad(set_path(_TEXT, "to", "call me"), 131009, "to"),
    "a phone number as a number": Bad(set_path(_TEXT, "to", 5511987654321), 131009, "to"),
    "a malformed BSUID": Bad(
        {**drop_path(_TEXT, "to"), "recipient": "br.123"}, 131009, "recipient"
    ),
    "an unknown recipient type": Bad(
        {**_TEXT, "recipient_type": "channel"}, 131009, "recipient_type"
    ),
    "a group id too long": Bad({**_TEXT, "recipient_type": "group", "to": "g" * 257}, 131009, "to"),
    # the fields every message may have
    "a quote without its message id": Bad(
        set_path(load_send("text_reply"), "context", {}), 131008, "context.message_id"
    ),
    "a quote that is not an object": Bad(
        set_path(load_send("text_reply"), "context", "wamid.IN_1"), 131009, "context"
    ),
    "callback data too long": Bad(
        {**_TEXT, "biz_opaque_callback_data": "x" * 513}, 131009, "biz_opaque_callback_data"
    ),
    # text
    "a text message without its text": Bad(drop_path(_TEXT, "text"), 131008, "text"),
    "a text of 4097 characters": Bad(set_path(_TEXT, "text.body", "x" * 4097), 131009, "text.body"),
    "an empty text": Bad(set_path(_TEXT, "text.body", ""), 131009, "text.body"),
    "preview_url as a string": Bad(
        set_path(_TEXT, "text.preview_url", "yes"), 131009, "text.preview_url"
    ),
    # media
    "an image without id or link": Bad(set_path(_IMAGE, "image", {}), 131008, "image.id"),
    "an image with id and link": Bad(
        set_path(_IMAGE, "image", {"id": "1", "link": "https://e.com/a.jpg"}), 131009, "image"
    ),
    "an ftp link": Bad(set_path(_IMAGE, "image.link", "ftp://e.com/a.jpg"), 131009, "image.link"),
    "a caption of 1025 characters": Bad(
        set_path(_IMAGE, "image.caption", "x" * 1025), 131009, "image.caption"
    ),
    "audio with a caption": Bad(
        {**_AUDIO, "audio": {"link": "https://e.com/a.ogg", "caption": "hi"}},
        100,  # Graph's recorded answer: (#100) Unexpected key "caption" on param "audio".
        "audio.caption",
    ),
    "an image with a filename": Bad(
        set_path(_IMAGE, "image.filename", "a.jpg"), 100, "image.filename"
    ),
    "a media id the store does not hold": Bad(
        set_path(_IMAGE, "image", {"id": "404404"}), 131009, "image.id", schema_refuses=False
    ),
    # reply buttons
    "an unknown interactive type": Bad(
        set_path(_BUTTON, "interactive.type", "poll"), 131009, "interactive.type"
    ),
    "an interactive message without its type": Bad(
        drop_path(_BUTTON, "interactive.type"), 131008, "interactive.type"
    ),
    "a button title of 21 characters": Bad(
        set_path(_BUTTON, f"{_BUTTONS}[1].reply.title", "x" * 21),
        131009,
        f"{_BUTTONS}[1].reply.title",
    ),
    "four buttons": Bad(
        set_path(_BUTTON, _BUTTONS, [_BUTTON["interactive"]["action"]["buttons"][0]] * 4),
        131009,
        _BUTTONS,
    ),
    "no buttons": Bad(set_path(_BUTTON, _BUTTONS, []), 131009, _BUTTONS),
    "a url button": Bad(
        set_path(_BUTTON, f"{_BUTTONS}[0].type", "url"), 131009, f"{_BUTTONS}[0].type"
    ),
    "two buttons with one title": Bad(
        set_path(_BUTTON, f"{_BUTTONS}[1].reply.title", "Keep"),
        131009,
        f"{_BUTTONS}[1].reply.title",
        schema_refuses=False,
    ),
    "a location header": Bad(
        set_path(_BUTTON, "interactive.header", {"type": "location"}),
        131009,
        "interactive.header.type",
    ),
    "a header image with a caption": Bad(
        set_path(
            _BUTTON,
            "interactive.header",
            {"type": "image", "image": {"link": "https://e.com/a.jpg", "caption": "no"}},
        ),
        100,
        "interactive.header.image.caption",
    ),
    # lists
    "a list with an image header": Bad(
        set_path(
            _LIST, "interactive.header", {"type": "image", "image": {"link": "https://e.com/a"}}
        ),
        131009,
        "interactive.header.type",
    ),
    "eleven sections": Bad(
        set_path(
            _LIST,
            _SECTIONS,
            [{"title": f"S{i}", "rows": [{"id": f"r{i}", "title": "R"}]} for i in range(11)],
        ),
        131009,
        _SECTIONS,
    ),
    "eleven rows across two sections": Bad(
        set_path(_LIST, _SECTIONS, _two_sections(6, 5)),
        131009,
        f"{_SECTIONS}[1].rows[4]",
        schema_refuses=False,
    ),
    "one row id in two sections": Bad(
        set_path(_LIST, f"{_SECTIONS}[1].rows[1].id", "express"),
        131009,
        f"{_SECTIONS}[1].rows[1].id",
        schema_refuses=False,
    ),
    "an untitled section among two": Bad(
        drop_path(_LIST, f"{_SECTIONS}[0].title"), 131008, f"{_SECTIONS}[0].title"
    ),
    "a row description of 73 characters": Bad(
        set_path(_LIST, f"{_SECTIONS}[0].rows[0].description", "x" * 73),
        131009,
        f"{_SECTIONS}[0].rows[0].description",
    ),
    "a list button label of 21 characters": Bad(
        set_path(_LIST, "interactive.action.button", "x" * 21), 131009, "interactive.action.button"
    ),
    "a cta_url without its action": Bad(
        drop_path(load_send("interactive_cta_url"), "interactive.action"),
        131008,
        "interactive.action",
    ),
    # templates
    "a template without a name": Bad(
        drop_path(_TEMPLATE, "template.name"), 131008, "template.name"
    ),
    "a language code of 17 characters": Bad(
        set_path(_TEMPLATE, "template.language.code", "x" * 17), 131009, "template.language.code"
    ),
    "a text parameter without its text": Bad(
        drop_path(_TEMPLATE, f"{_PARAMETER}.text"), 131008, f"{_PARAMETER}.text"
    ),
    "a template the registry lacks": Bad(
        set_path(_TEMPLATE, "template.name", "nope"),
        132001,
        "template.name",
        status=404,
        schema_refuses=False,
    ),
    "a template in a language it lacks": Bad(
        set_path(_TEMPLATE, "template.language.code", "pt_BR"),
        132001,
        "template.name",
        status=404,
        schema_refuses=False,
    ),
    "an unknown template with a language code of 17 characters": Bad(
        set_path(set_path(_TEMPLATE, "template.name", "nope"), "template.language.code", "x" * 17),
        132001,
        "template.name",
        status=404,
    ),
    "an unknown template without a language": Bad(
        drop_path(set_path(_TEMPLATE, "template.name", "nope"), "template.language"),
        132001,
        "template.name",
        status=404,
    ),
    "a template given too few parameters": Bad(
        set_path(_TEMPLATE, "template.components[0].parameters", []),
        132000,
        "template.components",
        schema_refuses=False,
    ),
    # the other interactive kinds: what Meta's description says of every kind
    "a call-to-action footer without text": Bad(
        set_path(_CTA, "interactive.footer", {}), 131008, "interactive.footer.text"
    ),
    "a call-to-action footer of 61 characters": Bad(
        set_path(_CTA, "interactive.footer", {"text": "x" * 61}), 131009, "interactive.footer.text"
    ),
    "a call-to-action header of 61 characters": Bad(
        set_path(_CTA, "interactive.header", {"type": "text", "text": "x" * 61}),
        131009,
        "interactive.header.text",
    ),
    "a call-to-action header of an unknown type": Bad(
        set_path(_CTA, "interactive.header", {"type": "sticker"}), 131009, "interactive.header.type"
    ),
    "a call-to-action body of 1025 characters": Bad(
        set_path(_CTA, "interactive.body.text", "x" * 1025), 131009, "interactive.body.text"
    ),
    "a product list without a header": Bad(
        set_path(_CTA, "interactive.type", "product_list"),
        131008,
        "interactive.header",
        schema_refuses=False,
    ),
    "a single product with a header": Bad(
        set_path(
            set_path(_CTA, "interactive.type", "product"),
            "interactive.header",
            {"type": "text", "text": "Our pick"},
        ),
        131009,
        "interactive.header",
        schema_refuses=False,
    ),
    # payments: the default business has no payment configuration
    "an order_details message": Bad(
        set_path(_CTA, "interactive.type", "order_details"),
        10,
        "interactive.type",
        status=403,
        schema_refuses=False,
    ),
    "an order_status message": Bad(
        set_path(_CTA, "interactive.type", "order_status"),
        10,
        "interactive.type",
        status=403,
        schema_refuses=False,
    ),
    # reactions, locations, contacts
    "a reaction that quotes": Bad(
        {**load_send("reaction"), "context": {"message_id": "wamid.IN_1"}}, 131009, "context"
    ),
    "a reaction without its emoji": Bad(
        drop_path(load_send("reaction"), "reaction.emoji"), 131008, "reaction.emoji"
    ),
    "a latitude of 91": Bad(
        set_path(load_send("location"), "location.latitude", 91), 131009, "location.latitude"
    ),
    "a quoted latitude of 91": Bad(
        set_path(load_send("location"), "location.latitude", "91"), 131009, "location.latitude"
    ),
    "a longitude that is true": Bad(
        set_path(load_send("location"), "location.longitude", True), 131009, "location.longitude"
    ),
    "no contacts": Bad(set_path(load_send("contacts"), "contacts", []), 131009, "contacts"),
    "a contact without a formatted name": Bad(
        drop_path(load_send("contacts"), "contacts[0].name.formatted_name"),
        131008,
        "contacts[0].name.formatted_name",
    ),
    # read receipts and typing indicators
    "a status other than read": Bad(set_path(_READ, "status", "delivered"), 131009, "status"),
    "a read receipt without its message": Bad(drop_path(_READ, "message_id"), 131008, "message_id"),
    "an audio typing indicator": Bad(
        set_path(_TYPING, "typing_indicator.type", "audio"), 131009, "typing_indicator.type"
    ),
    "a typing indicator without its type": Bad(
        set_path(_TYPING, "typing_indicator", {}), 131008, "typing_indicator.type"
    ),
}
CASES = [pytest.param(bad, id=name) for name, bad in BAD.items()]


def _check(code: int, status: int, details: str, bad: Bad) -> None:
    assert (code, status) == (bad.code, bad.status), details
    if bad.path:
        assert details.startswith(f"{bad.path}: "), details
    else:
        assert details.startswith("the request body must be a JSON object"), details


@pytest.mark.parametrize("bad", CASES)
def test_the_checks_answer_each_bad_body_with_its_code(bad: Bad) -> None:
    validator = SendValidator(media_exists=lambda media_id: False)  # as the app's empty store
    with pytest.raises(GraphAPIError) as info:
        validator.validate("100200300400500", bad.body)
    _check(info.value.code, info.value.http_status, info.value.details, bad)


@pytest.mark.parametrize(
    "bad",
    [pytest.param(bad, id=name) for name, bad in BAD.items() if bad.code not in _BEYOND_MODELS],
)
def test_the_models_alone_refuse_each_bad_body_with_its_code(bad: Bad) -> None:
    """Every rule but the template registry's and the payment set-up's is the models' own."""
    context = SendContext(media_exists=lambda media_id: False)
    with pytest.raises(ValidationError) as info:
        SEND_REQUEST.validate_python(bad.body, context=context)
    error = graph_error_for(info.value)
    _check(error.code, error.http_status, error.details, bad)


@pytest.mark.parametrize("bad", CASES)
async def test_the_endpoint_answers_each_bad_body_with_its_code(bad: Bad) -> None:
    async with graph_client(graph_app()) as client:
        response = await post_send(client, bad.body)
    error = response.json()["error"]
    _check(error["code"], response.status_code, error["error_data"]["details"], bad)


@pytest.mark.parametrize("bad", CASES)
def test_the_served_schema_refuses_every_badly_shaped_body(bad: Bad) -> None:
    assert served_request_schema().is_valid(bad.body) is not bad.schema_refuses


def test_the_table_covers_every_code() -> None:
    codes = {bad.code for bad in BAD.values()}
    assert codes == {10, 100, 131008, 131009, 131051, 132000, 132001}


async def test_the_endpoint_reads_a_key_given_as_null_as_left_out() -> None:
    # Graph's reading: libraries send null for what they leave unset (a template without
    # parameters as "components": null); a required one given as null is missing.
    template = {**load_send("template"), "template": {"name": "hello_world",
                "language": {"code": "en_US"}, "components": None}}  # fmt: skip
    unset = [template, {**_TEXT, "context": None, "biz_opaque_callback_data": None},
             set_path(_TEXT, "text.preview_url", None)]  # fmt: skip
    async with graph_client(graph_app()) as client:
        for body in unset:
            response = await post_send(client, body)
            assert response.status_code == 200, response.text
        response = await post_send(client, set_path(_TEXT, "text", None))
    error = response.json()["error"]
    assert (response.status_code, error["code"]) == (400, 131008)
    assert error["error_data"]["details"].startswith("text: ")
    # The models describe a body written without nulls (as the OpenAPI document does).
    with pytest.raises(ValidationError):
        SEND_REQUEST.validate_python(template)


@pytest.mark.parametrize("kind", ["order_details", "order_status"])
def test_a_business_with_payments_may_send_order_messages(kind: str) -> None:
    body = set_path(_CTA, "interactive.type", kind)
    send = SendValidator(payments=True).validate("100200300400500", body)
    assert send.interactive_type == kind


def test_a_known_template_with_a_malformed_language_code_is_still_a_bad_parameter() -> None:
    body = set_path(_TEMPLATE, "template.language.code", "x" * 17)
    with pytest.raises(GraphAPIError) as info:
        SendValidator().validate("100200300400500", body)
    assert (info.value.code, info.value.details.split(":")[0]) == (131009, "template.language.code")
