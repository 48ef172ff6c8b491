"""The send models and the schema ``/openapi.json`` serves agree on which bodies are valid.

Both come from the same models, so for any body the models take, the schema
must take it, and the other way round. The only exceptions are the rules
JSON Schema can't say, named here: unique button ids and titles, unique row
ids, at most 10 rows across a list's sections, and which interactive kinds
need a header or take none (one model holds those kinds; the media store and the
template registry are not the models' business, so they are left out).
Two families of bodies test it: the sample sends with fields dropped,
retyped or stretched at random, and bodies built at the edges of every
limit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import pytest
from hypothesis import event, find, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from channels.whatsapp.sends import SEND_REQUEST
from tests.channels.whatsapp.sends.served import served_request_schema
from tests.channels.whatsapp.test_graph import mutated_sends

# The problems only the server can find (the models word them so).
INEXPRESSIBLE: Final = (
    "is used twice",
    "rows in all its sections",
    "needs a header",
    "takes no header",
)


def models_verdict(body: object) -> tuple[bool, list[str]]:
    """Whether the models take ``body``, and the problems they found if not."""
    try:
        SEND_REQUEST.validate_python(body)
    except ValidationError as exc:
        return False, [error["msg"] for error in exc.errors()]
    return True, []


def schema_should_take(body: object) -> bool:
    """What the schema must say of ``body``: yes if the models take it or refuse it only
    for rules JSON Schema can't say."""
    taken, problems = models_verdict(body)
    return taken or all(any(rule in p for rule in INEXPRESSIBLE) for p in problems)


def check_agreement(body: object) -> None:
    expected = schema_should_take(body)
    event("valid" if expected else "invalid")
    assert served_request_schema().is_valid(body) is expected, models_verdict(body)


# -- family 1: the samples, mutated --------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(body=mutated_sends())
def test_models_and_schema_agree_on_mutated_samples(body: dict[str, Any]) -> None:
    check_agreement(body)


# -- family 2: bodies at the edges of every limit -------------------------------------
#
# Each body is valid but for up to two chosen fields, each set just outside its
# limit, to a wrong type, or left out; valid fields sit at either end of theirs.

_WRONG: Final[tuple[Any, ...]] = (None, 0, 1.5, True, [], {}, ["x"])
_ABSENT: Final = object()
_CHARS = st.sampled_from(["x", "é", "𝄞", " "])


def _sized(*sizes: int) -> st.SearchStrategy[str]:
    return st.builds(lambda char, size: char * size, _CHARS, st.sampled_from(sizes))


class Fields:
    """Draws each field valid, or invalid if it is the one to break (and, half the time,
    one more drawn at random)."""

    def __init__(self, draw: st.DrawFn, names: list[str], breaking: str) -> None:
        self.draw = draw
        another = draw(st.sampled_from(names)) if draw(st.booleans()) else "nothing"
        self.broken = {breaking, another} - {"nothing"}

    def pick(
        self, name: str, valid: st.SearchStrategy[Any], invalid: st.SearchStrategy[Any]
    ) -> Any:
        """A value for field ``name``."""
        return self.draw(invalid if name in self.broken else valid)

    def text(self, name: str, limit: int, least: int = 1) -> Any:
        """A string of ``least`` or ``limit`` code points, or one just outside, or no string."""
        outside = [size for size in (least - 1, limit + 1) if size >= 0]
        wrong = st.one_of(_sized(*outside), st.sampled_from([*_WRONG, _ABSENT]))
        return self.pick(name, _sized(least, limit), wrong)

    def count(self, name: str, limit: int) -> int:
        """How many items: 1 or ``limit``, or 0 or ``limit + 1``."""
        return int(self.pick(name, st.sampled_from([1, limit]), st.sampled_from([0, limit + 1])))

    def one_of(self, name: str, valid: list[Any], invalid: list[Any]) -> Any:
        """One of ``valid``, or one of ``invalid``."""
        return self.pick(name, st.sampled_from(valid), st.sampled_from(invalid))

    def envelope(self) -> dict[str, Any]:
        """The fields every message shares."""
        addressee = self.one_of(
            "addressee",
            [
                {"to": "+55 11 98765-4321"},
                {"to": " 1-555-000-1111 "},
                {"recipient": "BR.1234567"},
                {"to": "15550001111", "recipient": "US.1"},
                {"recipient_type": "group", "to": "g" * 256},
            ],
            [
                {"to": "1234"},
                {"to": "call me"},
                {"to": 5511987654321},
                {"to": "15550001111", "recipient": "br.1"},
                {},
                {"recipient_type": "group", "to": "g" * 257},
                {"recipient_type": "group", "recipient": "BR.1"},
                {"recipient_type": "channel", "to": "15550001111"},
            ],
        )
        return {
            **obj(
                messaging_product=self.one_of("product", ["whatsapp"], [_ABSENT, "sms"]),
                biz_opaque_callback_data=self.text("callback", 512, least=0),
            ),
            **addressee,
            **self.one_of("extra", [{}], [{"priority": "high"}, {"status": "read"}]),
        }


def obj(**fields: Any) -> dict[str, Any]:
    """An object of the fields that are not left out."""
    return {key: value for key, value in fields.items() if value is not _ABSENT}


_ENVELOPE = ["product", "addressee", "callback", "extra"]


TEXT_FIELDS: Final = [*_ENVELOPE, "body", "preview", "type"]


@st.composite
def text_messages(draw: st.DrawFn, breaking: str) -> dict[str, Any]:
    f = Fields(draw, TEXT_FIELDS, breaking)
    text = obj(body=f.text("body", 4096), preview_url=f.one_of("preview", [True, _ABSENT], [1]))
    typed = f.one_of("type", [{"type": "text"}, {}], [{"type": "Text"}, {"type": 1}])
    return {**f.envelope(), **typed, "text": text}


BUTTON_FIELDS: Final = [*_ENVELOPE, "buttons", "title", "id", "header", "body", "footer"]


@st.composite
def button_messages(draw: st.DrawFn, breaking: str) -> dict[str, Any]:
    f = Fields(draw, BUTTON_FIELDS, breaking)
    buttons = []
    for i in range(f.count("buttons", 3)):
        title = f.text("title", 20) if i == 0 else f"Option {i}"  # unique: JSON Schema can't say
        reply = obj(id=f.text("id", 256) if i == 0 else f"b{i}", title=title)
        buttons.append({"type": "reply", "reply": reply})
    header = f.one_of(
        "header",
        [
            _ABSENT,
            {"type": "text", "text": "x" * 60},
            {"type": "image", "image": {"link": "https://e.com/a.jpg"}},
            {"type": "document", "document": {"id": "1479537139650973"}},
        ],
        [
            {"type": "text", "text": "x" * 61},
            {"type": "image", "image": {"id": "1", "caption": "no"}},
            {"type": "location"},
            {"text": "no type"},
        ],
    )
    interactive = obj(
        type="button",
        header=header,
        body=obj(text=f.text("body", 1024)),
        footer=obj(text=f.text("footer", 60)),
        action={"buttons": buttons},
    )
    return {**f.envelope(), "type": "interactive", "interactive": interactive}


LIST_FIELDS: Final = [*_ENVELOPE, "rows", "title", "row", "description", "button"]


@st.composite
def list_messages(draw: st.DrawFn, breaking: str) -> dict[str, Any]:
    f = Fields(draw, LIST_FIELDS, breaking)
    # One section holds up to 11 rows; two hold 10 at most together, so the
    # total across sections (a rule JSON Schema can't say) is never broken.
    sizes = draw(st.sampled_from([[f.count("rows", 10)], [5, 5], [1, 1]]))
    sections = [
        obj(
            # Untitled is fine for a lone section only: a rule across fields.
            title=f.one_of("title", ["S", "x" * 24], [_ABSENT, _ABSENT, "", "x" * 25])
            if at == 0
            else "Later",
            rows=[
                obj(
                    id=f"s{at}r{row}",
                    title=f.text("row", 24) if row == 0 else "Row",
                    description=f.text("description", 72, least=0),
                )
                for row in range(size)
            ],
        )
        for at, size in enumerate(sizes)
    ]
    interactive = {
        "type": "list",
        "body": {"text": "Pick one"},
        "action": obj(button=f.text("button", 20), sections=sections),
    }
    return {**f.envelope(), "type": "interactive", "interactive": interactive}


MEDIA_FIELDS: Final = [*_ENVELOPE, "source", "caption", "filename"]


@st.composite
def media_messages(draw: st.DrawFn, breaking: str) -> dict[str, Any]:
    kind = draw(st.sampled_from(["image", "audio", "video", "document", "sticker"]))
    f = Fields(draw, MEDIA_FIELDS, breaking)
    source = f.one_of(
        "source",
        [{"id": "1479537139650973"}, {"link": "https://example.com/a"}, {"link": "HTTP://e.com"}],
        [{"link": "ftp://e.com/a"}, {"link": "https://"}, {"id": "1", "link": "https://e.com"}, {}],
    )
    captioned = kind in ("image", "video", "document")
    media = {
        **source,
        **obj(
            caption=f.text("caption", 1024, least=0) if captioned else _ABSENT,
            filename=f.text("filename", 255) if kind == "document" else _ABSENT,
        ),
    }
    if "caption" in f.broken and not captioned:
        media["caption"] = "only images, videos and documents have one"
    return {**f.envelope(), "type": kind, kind: media}


LOCATION_FIELDS: Final = [*_ENVELOPE, "latitude", "longitude"]


@st.composite
def location_messages(draw: st.DrawFn, breaking: str) -> dict[str, Any]:
    f = Fields(draw, LOCATION_FIELDS, breaking)
    location = obj(
        latitude=f.one_of("latitude", [0, 90, -90, "37.5", "-90.0"], [90.5, "90.5", "1e1", True]),
        longitude=f.one_of("longitude", [180, -180.0, "-122.1477"], [181, " 1", None, _ABSENT]),
        name="HQ",
    )
    return {**f.envelope(), "type": "location", "location": location}


TEMPLATE_FIELDS: Final = [*_ENVELOPE, "name", "language", "parameter"]


@st.composite
def template_messages(draw: st.DrawFn, breaking: str) -> dict[str, Any]:
    f = Fields(draw, TEMPLATE_FIELDS, breaking)
    parameter = f.one_of(
        "parameter",
        [
            {"type": "text", "text": "#42"},
            {"type": "text", "parameter_name": "order", "text": "#42"},
            {"type": "currency", "currency": {"code": "USD"}},
        ],
        [{"type": "text"}, {"type": ""}, {"text": "#42"}, "#42"],
    )
    template = obj(
        name=f.text("name", 512),
        language=f.one_of("language", [{"code": "en_US"}], [{"code": "x" * 17}, {}, "en_US"]),
        components=[{"type": "body", "parameters": [parameter]}],
    )
    return {**f.envelope(), "type": "template", "template": template}


READ_FIELDS: Final = ["status", "message", "typing", "to"]


@st.composite
def read_receipts(draw: st.DrawFn, breaking: str) -> dict[str, Any]:
    f = Fields(draw, READ_FIELDS, breaking)
    return obj(
        messaging_product="whatsapp",
        status=f.one_of("status", ["read"], ["delivered", _ABSENT]),
        message_id=f.text("message", 64),
        typing_indicator=f.one_of("typing", [_ABSENT, {"type": "text"}], [{"type": "audio"}, {}]),
        to=f.one_of("to", [_ABSENT, "15550001111"], [7]),
    )


FAMILIES: Final[dict[str, tuple[Callable[[str], st.SearchStrategy[Any]], list[str]]]] = {
    "text": (text_messages, TEXT_FIELDS),
    "buttons": (button_messages, BUTTON_FIELDS),
    "list": (list_messages, LIST_FIELDS),
    "media": (media_messages, MEDIA_FIELDS),
    "location": (location_messages, LOCATION_FIELDS),
    "template": (template_messages, TEMPLATE_FIELDS),
    "read": (read_receipts, READ_FIELDS),
}
EDGE_CASES: Final = [
    pytest.param(kind, field, id=f"{kind}-{field}")
    for kind, (_, fields) in FAMILIES.items()
    for field in ["nothing", *fields]
]


@pytest.mark.parametrize(("kind", "breaking"), EDGE_CASES)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_models_and_schema_agree_at_the_limits(
    kind: str, breaking: str, data: st.DataObject
) -> None:
    """Each field of each kind is broken in turn (with one more, drawn, now and then)."""
    build, _ = FAMILIES[kind]
    check_agreement(data.draw(build(breaking)))


@pytest.mark.slow
def test_the_edge_family_holds_valid_and_invalid_bodies_of_each_kind() -> None:
    """Not a family of refusals only: each kind yields bodies the models take, and refuse."""
    for build, _ in FAMILIES.values():
        whole = build("nothing")
        find(whole, lambda body: models_verdict(body)[0], settings=settings(database=None))
        find(whole, lambda body: not models_verdict(body)[0], settings=settings(database=None))
