"""Validation of send bodies for ``POST /{version}/{phone_number_id}/messages``, with Meta's limits.

:class:`SendValidator` turns a decoded JSON body into a frozen
:class:`ValidatedSend`, or raises the :class:`GraphAPIError` Meta would answer
with. Every error's ``details`` starts with the JSON path of the offending
field (``interactive.action.buttons[1].reply.title: ...``). The codes follow
one rule, where Meta's documentation is silent:

- 100: the request as a whole: a body that is not a JSON object, a top-level
  key the endpoint does not know, ``messaging_product`` missing or not
  ``"whatsapp"`` (Graph checks these before the WhatsApp layer does);
- 131008: a required WhatsApp field is missing;
- 131009: a field has the wrong type or breaks a limit (the facts document's
  default for interactive limits), including a media id the store does not
  hold;
- 131051: a message ``type`` the API does not know;
- 132001 / 132000: a template the :class:`TemplateRegistry` does not hold in
  that language, or one given the wrong number of parameters.

Lengths are counted in Unicode code points. Locations and contacts get light
checks; interactive types other than ``button`` and ``list`` (``cta_url``,
``flow``, ``product``...) need only an ``action`` object. A missing ``type``
means ``text``, as in Meta's reference.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from channels.whatsapp.errors import (
    InvalidParameter,
    ParameterInvalid,
    ParameterMissing,
    TemplateNotFound,
    TemplateParamMismatch,
    UnsupportedMessageType,
)
from channels.whatsapp.ids import is_bsuid

__all__ = [
    "DEFAULT_LIMITS",
    "MESSAGE_TYPES",
    "SendAction",
    "SendLimits",
    "SendValidator",
    "TemplateRegistry",
    "TemplateSpec",
    "ValidatedSend",
    "normalize_wa_id",
    "parse_json_body",
]


@dataclass(frozen=True, slots=True)
class SendLimits:
    """Meta's size limits on send bodies (facts document, section 8), in code points or items.

    The defaults are Meta's; a scenario may tighten or loosen them (older
    documentation gives lists a 1024-character body, for instance).
    """

    text_body: int = 4096
    caption: int = 1024
    """Image per Meta; video and document assumed the same."""
    callback_data: int = 512
    filename: int = 255
    header_text: int = 60
    footer_text: int = 60
    button_body: int = 1024
    buttons: int = 3
    button_id: int = 256
    button_title: int = 20
    list_body: int = 4096
    list_button: int = 20
    sections: int = 10
    rows: int = 10
    """Rows in all sections together."""
    section_title: int = 24
    row_id: int = 200
    row_title: int = 24
    row_description: int = 72
    template_name: int = 512


DEFAULT_LIMITS: Final = SendLimits()
"""Meta's limits as documented."""
MESSAGE_TYPES: Final = frozenset(
    {"text", "image", "audio", "video", "document", "sticker", "interactive", "template",
     "reaction", "location", "contacts"}
)  # fmt: skip
"""The values of ``type`` the send API accepts; any other answers 131051."""

MEDIA_TYPES: Final = ("image", "audio", "video", "document", "sticker")
_MESSAGE_KEYS: Final = MESSAGE_TYPES | {
    "messaging_product", "recipient_type", "to", "recipient", "type", "context",
    "biz_opaque_callback_data",
}  # fmt: skip
_READ_KEYS: Final = frozenset(
    {"messaging_product", "status", "message_id", "typing_indicator", "to", "recipient",
     "recipient_type"}
)  # fmt: skip
_LOOSE_INTERACTIVE: Final = frozenset(
    {"cta_url", "flow", "product", "product_list", "catalog_message", "location_request_message",
     "address_message", "call_permission_request", "voice_call", "carousel"}
)  # fmt: skip
_BUTTON_HEADERS: Final = frozenset({"text", "image", "video", "document"})
_WA_ID: Final = re.compile(r"[0-9]{5,15}")
_WA_ID_NOISE: Final = re.compile(r"[ \-]")

SendAction = Literal["message", "mark_read", "typing"]
"""What a send asks for: a message, a read receipt, or a read receipt with a typing indicator."""


@dataclass(frozen=True, slots=True)
class ValidatedSend:
    """A send body that passed validation, with the parts the simulator and trace need.

    For an individual message exactly one of ``to`` (normalized wa_id) and
    ``recipient`` (BSUID) is set; ``input`` is what the body said, echoed in
    the response. ``text`` is the text body, caption, interactive body or
    reaction emoji. ``message_id`` is the message read or reacted to.
    """

    phone_number_id: str
    action: SendAction
    body: Mapping[str, Any]
    type: str | None = None
    recipient_type: Literal["individual", "group"] = "individual"
    input: str | None = None
    to: str | None = None
    recipient: str | None = None
    group_id: str | None = None
    text: str | None = None
    context_id: str | None = None
    message_id: str | None = None
    interactive_type: str | None = None
    template_name: str | None = None
    template_language: str | None = None
    media_id: str | None = None
    media_link: str | None = None
    biz_opaque_callback_data: str | None = None

    @property
    def user(self) -> str | None:
        """The user addressed: the wa_id, else the BSUID (``None`` for reads and groups)."""
        return self.to if self.to is not None else self.recipient


@dataclass(frozen=True, slots=True)
class TemplateSpec:
    """An approved message template in one language, and the parameters it takes."""

    name: str
    language: str
    body_params: int = 0
    header_params: int = 0
    category: str = "utility"


class TemplateRegistry:
    """The templates a business number has approved, by name and language code.

    A send naming a template or language it lacks answers 132001; one giving
    the body or header a different number of parameters answers 132000.
    """

    def __init__(self, templates: Iterable[TemplateSpec] = ()) -> None:
        self._specs: dict[tuple[str, str], TemplateSpec] = {}
        for spec in templates:
            self.add(spec)

    @classmethod
    def default(cls) -> TemplateRegistry:
        """A few templates most bots and samples use: ``hello_world`` and two utilities."""
        return cls(
            [
                TemplateSpec("hello_world", "en_US"),
                TemplateSpec("appointment_reminder", "en_US", body_params=2),
                TemplateSpec("order_update", "en_US", body_params=1),
            ]
        )

    def add(self, spec: TemplateSpec) -> None:
        """Approve ``spec`` (replacing any template of the same name and language)."""
        self._specs[spec.name, spec.language] = spec

    def get(self, name: str, language: str) -> TemplateSpec | None:
        """The template ``name`` in ``language``, or ``None``."""
        return self._specs.get((name, language))

    def __iter__(self) -> Iterator[TemplateSpec]:
        return iter(list(self._specs.values()))

    def check(self, name: str, language: str, params: Mapping[str, int]) -> TemplateSpec:
        """Return the template, or raise 132001 / 132000 as Meta would.

        ``params`` counts the parameters the send gave, by component type
        (``"body"``, ``"header"``; other components are not counted).
        """
        spec = self.get(name, language)
        if spec is None:
            languages = sorted(lang for (n, lang) in self._specs if n == name)
            known = f" (it exists in {', '.join(languages)})" if languages else ""
            raise TemplateNotFound(
                details=f"template.name: template {name!r} does not exist in {language}{known}"
            )
        for part, expected in (("body", spec.body_params), ("header", spec.header_params)):
            given = params.get(part, 0)
            if given != expected:
                raise TemplateParamMismatch(
                    details=f"template.components: {name} ({language}) expects {expected}"
                    f" {part} parameter(s), got {given}"
                )
        return spec


def parse_json_body(raw: bytes) -> object:
    """Decode a request body as JSON, or raise ``InvalidParameter`` (100).

    ``NaN`` and ``Infinity`` are not JSON and are refused; so is nesting too
    deep for the decoder.
    """

    def refuse(constant: str) -> object:
        raise ValueError(f"{constant} is not valid JSON")

    try:
        return json.loads(raw, parse_constant=refuse)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError alike
        problem = str(exc) if isinstance(exc, ValueError) else "nested too deeply"
        raise _param("", f"the request body is not valid JSON ({problem})") from None


def normalize_wa_id(value: str) -> str | None:
    """The wa_id for a phone number as bots write it (``+55 11 98765-4321``), or ``None``.

    A leading ``+``, spaces and dashes are dropped; what is left must be 5 to
    15 digits.
    """
    digits = _WA_ID_NOISE.sub("", value.strip())
    digits = digits.removeprefix("+")
    return digits if _WA_ID.fullmatch(digits) else None


def _param(path: str, problem: str) -> InvalidParameter:
    details = f"{path}: {problem}" if path else problem
    return InvalidParameter(message=f"(#100) {details}", details=details)


def _missing(path: str) -> ParameterMissing:
    return ParameterMissing(details=f"{path}: required parameter is missing")


def _invalid(path: str, problem: str) -> ParameterInvalid:
    return ParameterInvalid(details=f"{path}: {problem}")


def _kind(value: object) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number"
    )


def _obj(parent: Mapping[str, Any], key: str, path: str) -> dict[str, Any]:
    value = parent.get(key)
    if key not in parent:
        raise _missing(path)
    if not isinstance(value, dict):
        raise _invalid(path, f"must be an object, not {_kind(value)}")
    return value


def _opt_obj(parent: Mapping[str, Any], key: str, path: str) -> dict[str, Any] | None:
    return _obj(parent, key, path) if key in parent else None


def _str(
    parent: Mapping[str, Any], key: str, path: str, *, max_len: int | None = None, min_len: int = 1
) -> str:
    if key not in parent:
        raise _missing(path)
    value = parent[key]
    if not isinstance(value, str):
        raise _invalid(path, f"must be a string, not {_kind(value)}")
    if len(value) < min_len:
        raise _invalid(path, "must not be empty")
    if max_len is not None and len(value) > max_len:
        raise _invalid(path, f"must be at most {max_len} characters, got {len(value)}")
    return value


def _opt_str(
    parent: Mapping[str, Any], key: str, path: str, *, max_len: int | None = None, min_len: int = 1
) -> str | None:
    return _str(parent, key, path, max_len=max_len, min_len=min_len) if key in parent else None


def _list(
    parent: Mapping[str, Any], key: str, path: str, *, least: int = 1, most: int | None = None
) -> list[Any]:
    if key not in parent:
        raise _missing(path)
    value = parent[key]
    if not isinstance(value, list):
        raise _invalid(path, f"must be an array, not {_kind(value)}")
    if len(value) < least:
        raise _invalid(path, f"must hold at least {least} item(s)")
    if most is not None and len(value) > most:
        raise _invalid(path, f"must hold at most {most} items, got {len(value)}")
    return value


def _number(parent: Mapping[str, Any], key: str, path: str, low: float, high: float) -> float:
    if key not in parent:
        raise _missing(path)
    value = parent[key]
    if isinstance(value, str):  # Meta's samples sometimes quote coordinates
        try:
            value = float(value)
        except ValueError:
            raise _invalid(path, "must be a number") from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _invalid(path, f"must be a number, not {_kind(value)}")
    if not low <= value <= high:
        raise _invalid(path, f"must be between {low:g} and {high:g}")
    return float(value)


def _items(values: list[Any], path: str) -> list[tuple[dict[str, Any], str]]:
    """Each item of an array that must hold objects, with its path."""
    found = []
    for index, item in enumerate(values):
        if not isinstance(item, dict):
            raise _invalid(f"{path}[{index}]", f"must be an object, not {_kind(item)}")
        found.append((item, f"{path}[{index}]"))
    return found


def _unique(seen: set[str], value: str, path: str, what: str) -> None:
    if value in seen:
        raise _invalid(path, f"{what} {value!r} is used twice; each must be unique")
    seen.add(value)


class SendValidator:
    """Checks send bodies against Meta's rules, its templates and the media it holds.

    ``templates`` decides which templates exist (the default registry when
    ``None``); ``media_exists`` tells whether a media id may be sent (any id
    passes when ``None``).
    """

    def __init__(
        self,
        *,
        templates: TemplateRegistry | None = None,
        media_exists: Callable[[str], bool] | None = None,
        limits: SendLimits = DEFAULT_LIMITS,
    ) -> None:
        self.limits = limits
        self.templates = TemplateRegistry.default() if templates is None else templates
        self.media_exists = media_exists

    def validate(self, phone_number_id: str, body: object) -> ValidatedSend:
        """Validate one decoded body sent to ``phone_number_id``'s messages endpoint."""
        if not isinstance(body, dict):
            raise _param("", f"the request body must be a JSON object, not {_kind(body)}")
        if "messaging_product" not in body:
            raise _param("messaging_product", "required parameter is missing")
        if body["messaging_product"] != "whatsapp":
            raise _param("messaging_product", 'must be "whatsapp"')
        reading = "status" in body
        allowed = _READ_KEYS if reading else _MESSAGE_KEYS
        unknown = sorted(key for key in body if key not in allowed)
        if unknown:
            raise _param(unknown[0], "not a valid parameter for this request")
        if reading:
            return self._read(phone_number_id, body)
        return self._message(phone_number_id, body)

    def _read(self, phone_number_id: str, body: dict[str, Any]) -> ValidatedSend:
        if body["status"] != "read":
            raise _invalid("status", 'the only status a business can set is "read"')
        message_id = _str(body, "message_id", "message_id")
        indicator = _opt_obj(body, "typing_indicator", "typing_indicator")
        if indicator is not None and _str(indicator, "type", "typing_indicator.type") != "text":
            raise _invalid("typing_indicator.type", 'the only typing indicator is "text"')
        action: SendAction = "mark_read" if indicator is None else "typing"
        return ValidatedSend(phone_number_id, action, body, message_id=message_id)

    def _message(self, phone_number_id: str, body: dict[str, Any]) -> ValidatedSend:
        recipient_type = body.get("recipient_type", "individual")
        if recipient_type not in ("individual", "group"):
            raise _invalid("recipient_type", 'must be "individual" or "group"')
        kind = body.get("type", "text")
        if not isinstance(kind, str):
            raise _invalid("type", f"must be a string, not {_kind(kind)}")
        if kind not in MESSAGE_TYPES:
            raise UnsupportedMessageType(details=f"type: message type {kind!r} is not supported")
        who = self._addressee(body, recipient_type)
        context_id = None
        if "context" in body:
            if kind == "reaction":
                raise _invalid("context", "a reaction can't quote a message")
            context_id = _str(_obj(body, "context", "context"), "message_id", "context.message_id")
        callback = _opt_str(
            body,
            "biz_opaque_callback_data",
            "biz_opaque_callback_data",
            max_len=self.limits.callback_data,
            min_len=0,
        )
        parts = self._content(kind, body)
        return ValidatedSend(
            phone_number_id,
            "message",
            body,
            type=kind,
            recipient_type=recipient_type,
            context_id=context_id,
            biz_opaque_callback_data=callback,
            **who,
            **parts,
        )

    def _addressee(self, body: dict[str, Any], recipient_type: str) -> dict[str, str]:
        if recipient_type == "group":
            group = _str(body, "to", "to", max_len=256)
            return {"input": group, "group_id": group}
        if "to" in body:
            raw = _str(body, "to", "to")
            wa_id = normalize_wa_id(raw)
            if wa_id is None:
                raise _invalid("to", f"{raw!r} is not a phone number (5 to 15 digits)")
            return {"input": raw, "to": wa_id}
        if "recipient" in body:
            bsuid = _str(body, "recipient", "recipient")
            if not is_bsuid(bsuid):
                raise _invalid("recipient", f"{bsuid!r} is not a business-scoped user id")
            return {"input": bsuid, "recipient": bsuid}
        raise ParameterMissing(details="to: required parameter is missing (or give recipient)")

    def _content(self, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        if kind == "contacts":
            return self._contacts(_list(body, "contacts", "contacts"))
        content = _obj(body, kind, kind)
        if kind == "text":
            if "preview_url" in content and not isinstance(content["preview_url"], bool):
                raise _invalid("text.preview_url", "must be a boolean")
            return {"text": _str(content, "body", "text.body", max_len=self.limits.text_body)}
        if kind in MEDIA_TYPES:
            return self._media(content, kind, captioned=kind in ("image", "video", "document"))
        if kind == "interactive":
            return self._interactive(content)
        if kind == "template":
            return self._template(content)
        if kind == "reaction":
            message_id = _str(content, "message_id", "reaction.message_id")
            emoji = _str(content, "emoji", "reaction.emoji", min_len=0)
            return {"message_id": message_id, "text": emoji}
        _number(content, "latitude", "location.latitude", -90, 90)
        _number(content, "longitude", "location.longitude", -180, 180)
        _opt_str(content, "name", "location.name", min_len=0)
        _opt_str(content, "address", "location.address", min_len=0)
        return {"text": content.get("name")}

    def _media(self, content: dict[str, Any], path: str, *, captioned: bool) -> dict[str, Any]:
        if "id" in content and "link" in content:
            raise _invalid(path, "give the media id or a link, not both")
        if "id" in content:
            media_id = _str(content, "id", f"{path}.id")
            if self.media_exists is not None and not self.media_exists(media_id):
                raise _invalid(f"{path}.id", f"no media with id {media_id!r} (or it expired)")
            found: dict[str, Any] = {"media_id": media_id}
        elif "link" in content:
            link = _str(content, "link", f"{path}.link")
            try:
                url = urlsplit(link)
            except ValueError:  # an unbalanced IPv6 bracket, for one
                url = urlsplit("")
            if url.scheme not in ("http", "https") or not url.netloc:
                raise _invalid(f"{path}.link", "must be an http or https URL")
            found = {"media_link": link}
        else:
            raise _missing(f"{path}.id")
        if "caption" in content:
            if not captioned:
                raise _invalid(f"{path}.caption", f"{path} messages can't have a caption")
            found["text"] = _str(
                content, "caption", f"{path}.caption", max_len=self.limits.caption, min_len=0
            )
        if "filename" in content:
            if path != "document":
                raise _invalid(f"{path}.filename", "only documents have a filename")
            _str(content, "filename", f"{path}.filename", max_len=self.limits.filename)
        return found

    def _interactive(self, content: dict[str, Any]) -> dict[str, Any]:
        kind = _str(content, "type", "interactive.type")
        text: str | None
        if kind == "button":
            text = self._buttons(content)
        elif kind == "list":
            text = self._list_message(content)
        elif kind in _LOOSE_INTERACTIVE:
            _obj(content, "action", "interactive.action")
            body = _opt_obj(content, "body", "interactive.body")
            text = None if body is None else _opt_str(body, "text", "interactive.body.text")
        else:
            raise _invalid("interactive.type", f"unknown interactive type {kind!r}")
        return {"interactive_type": kind, "text": text}

    def _frame(self, content: dict[str, Any], body_max: int) -> str:
        """Check the footer and return the body text, shared by buttons and lists."""
        footer = _opt_obj(content, "footer", "interactive.footer")
        if footer is not None:
            _str(footer, "text", "interactive.footer.text", max_len=self.limits.footer_text)
        body = _obj(content, "body", "interactive.body")
        return _str(body, "text", "interactive.body.text", max_len=body_max)

    def _buttons(self, content: dict[str, Any]) -> str:
        header = _opt_obj(content, "header", "interactive.header")
        if header is not None:
            kind = _str(header, "type", "interactive.header.type")
            if kind not in _BUTTON_HEADERS:
                raise _invalid("interactive.header.type", "must be text, image, video or document")
            if kind == "text":
                _str(header, "text", "interactive.header.text", max_len=self.limits.header_text)
            else:
                media = _obj(header, kind, f"interactive.header.{kind}")
                self._media(media, f"interactive.header.{kind}", captioned=False)
        text = self._frame(content, body_max=self.limits.button_body)
        action = _obj(content, "action", "interactive.action")
        path = "interactive.action.buttons"
        titles: set[str] = set()
        ids: set[str] = set()
        for button, at in _items(_list(action, "buttons", path, most=self.limits.buttons), path):
            if _str(button, "type", f"{at}.type") != "reply":
                raise _invalid(f"{at}.type", 'must be "reply"')
            reply = _obj(button, "reply", f"{at}.reply")
            _unique(
                ids,
                _str(reply, "id", f"{at}.reply.id", max_len=self.limits.button_id),
                f"{at}.reply.id",
                "id",
            )
            title = _str(reply, "title", f"{at}.reply.title", max_len=self.limits.button_title)
            _unique(titles, title, f"{at}.reply.title", "title")
        return text

    def _list_message(self, content: dict[str, Any]) -> str:
        header = _opt_obj(content, "header", "interactive.header")
        if header is not None:
            if _str(header, "type", "interactive.header.type") != "text":
                raise _invalid("interactive.header.type", "a list header can only be text")
            _str(header, "text", "interactive.header.text", max_len=self.limits.header_text)
        text = self._frame(content, body_max=self.limits.list_body)
        action = _obj(content, "action", "interactive.action")
        _str(action, "button", "interactive.action.button", max_len=self.limits.list_button)
        path = "interactive.action.sections"
        sections = _items(_list(action, "sections", path, most=self.limits.sections), path)
        ids: set[str] = set()
        rows_seen = 0
        for section, at in sections:
            if len(sections) > 1 or "title" in section:
                _str(section, "title", f"{at}.title", max_len=self.limits.section_title)
            for row, row_at in _items(_list(section, "rows", f"{at}.rows"), f"{at}.rows"):
                rows_seen += 1
                if rows_seen > self.limits.rows:
                    raise _invalid(
                        row_at, f"a list holds at most {self.limits.rows} rows in all its sections"
                    )
                row_id = _str(row, "id", f"{row_at}.id", max_len=self.limits.row_id)
                _unique(ids, row_id, f"{row_at}.id", "row id")
                _str(row, "title", f"{row_at}.title", max_len=self.limits.row_title)
                _opt_str(
                    row,
                    "description",
                    f"{row_at}.description",
                    max_len=self.limits.row_description,
                    min_len=0,
                )
        return text

    def _template(self, content: dict[str, Any]) -> dict[str, Any]:
        name = _str(content, "name", "template.name", max_len=self.limits.template_name)
        language = _obj(content, "language", "template.language")
        code = _str(language, "code", "template.language.code", max_len=16)
        counts: dict[str, int] = {}
        if "components" in content:
            path = "template.components"
            for component, at in _items(_list(content, "components", path, least=0), path):
                kind = _str(component, "type", f"{at}.type")
                if "parameters" not in component:
                    continue
                params = _list(component, "parameters", f"{at}.parameters", least=0)
                for param, param_at in _items(params, f"{at}.parameters"):
                    if _str(param, "type", f"{param_at}.type") == "text":
                        _str(param, "text", f"{param_at}.text", min_len=0)
                counts[kind] = counts.get(kind, 0) + len(params)
        self.templates.check(name, code, counts)
        return {"template_name": name, "template_language": code}

    def _contacts(self, contacts: list[Any]) -> dict[str, Any]:
        for contact, at in _items(contacts, "contacts"):
            name = _obj(contact, "name", f"{at}.name")
            _str(name, "formatted_name", f"{at}.name.formatted_name")
            if "phones" in contact:
                _items(_list(contact, "phones", f"{at}.phones", least=0), f"{at}.phones")
        return {}
