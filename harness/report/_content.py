"""What a message looks like in a chat bubble, read from its payload.

The HTML report draws each inbound message and each send as a bubble; this
module turns a webhook message object or a Graph API request body into the
parts of that bubble (label, header, text, footer, buttons, list rows),
tolerating any shape: a body the simulator rejected is still drawn.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from pydantic import JsonValue

from harness.trace import InboundMessage, OutboundSend

__all__ = ["Button", "Content", "ListSection", "inbound_content", "send_content"]

_MEDIA = ("image", "video", "audio", "document", "sticker")


@dataclass
class Button:
    """A reply button, a call-to-action link or a list row, as drawn under a bubble."""

    title: str
    id: str = ""
    description: str = ""


@dataclass
class ListSection:
    """One titled section of an interactive list, with its rows."""

    title: str
    rows: list[Button] = field(default_factory=list)


@dataclass
class Content:
    """The drawable parts of one message."""

    text: str = ""
    label: str = ""
    header: str = ""
    footer: str = ""
    buttons: list[Button] = field(default_factory=list)
    list_button: str = ""
    sections: list[ListSection] = field(default_factory=list)


def _get(value: JsonValue, *keys: str) -> JsonValue:
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _str(value: JsonValue) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _items(value: JsonValue) -> list[JsonValue]:
    return list(value) if isinstance(value, list) else []


def _location(value: JsonValue) -> str:
    name = " · ".join(_str(_get(value, key)) for key in ("name", "address") if _get(value, key))
    where = f"{_str(_get(value, 'latitude'))}, {_str(_get(value, 'longitude'))}"
    return f"📍 {name} ({where})" if name else f"📍 {where}"


def _media(kind: str, value: JsonValue, caption: str | None) -> Content:
    text = caption or _str(_get(value, "caption")) or _str(_get(value, "filename"))
    if not text:
        text = _str(_get(value, "link")) or _str(_get(value, "id"))
    return Content(text=text, label=kind)


def _interactive(inter: JsonValue, text: str) -> Content:
    kind = _str(_get(inter, "type")) or "interactive"
    action = _get(inter, "action")
    header = _get(inter, "header")
    header_text = _str(_get(header, "text"))
    if not header_text and _get(header, "type"):
        header_text = f"[{_str(_get(header, 'type'))}]"
    content = Content(
        text=text or _str(_get(inter, "body", "text")),
        label=f"interactive · {kind}",
        header=header_text,
        footer=_str(_get(inter, "footer", "text")),
    )
    if kind == "button":
        for button in _items(_get(action, "buttons")):
            reply = _get(button, "reply")
            content.buttons.append(Button(_str(_get(reply, "title")), _str(_get(reply, "id"))))
    elif kind == "list":
        content.list_button = _str(_get(action, "button")) or "Options"
        for section in _items(_get(action, "sections")):
            rows = [
                Button(
                    _str(_get(row, "title")),
                    _str(_get(row, "id")),
                    _str(_get(row, "description")),
                )
                for row in _items(_get(section, "rows"))
            ]
            content.sections.append(ListSection(_str(_get(section, "title")), rows))
    else:
        parameters = _get(action, "parameters")
        title = _str(_get(parameters, "display_text")) or _str(_get(parameters, "flow_cta"))
        if title:
            content.buttons.append(Button(title, description=_str(_get(parameters, "url"))))
    return content


def _template(template: JsonValue, text: str) -> Content:
    name = _str(_get(template, "name")) or "?"
    language = _str(_get(template, "language", "code"))
    label = f"template · {name}" + (f" ({language})" if language else "")
    params: list[str] = []
    for component in _items(_get(template, "components")):
        for parameter in _items(_get(component, "parameters")):
            kind = _str(_get(parameter, "type"))
            value = _get(parameter, kind) if kind and kind != "text" else _get(parameter, "text")
            if value is not None:
                params.append(_str(value))
    if not text and params:
        text = "parameters: " + ", ".join(params)
    return Content(text=text, label=label)


def send_content(send: OutboundSend) -> Content:
    """The bubble parts of a message the agent sent, from its Graph API request body."""
    request: JsonValue = send.request
    text = send.text or ""
    kind = send.type
    if kind == "text":
        return Content(text=text or _str(_get(request, "text", "body")))
    if kind == "interactive":
        return _interactive(_get(request, "interactive"), text)
    if kind == "template":
        return _template(_get(request, "template"), text)
    if kind in _MEDIA:
        return _media(kind, _get(request, kind), send.text)
    if kind == "reaction":
        emoji = _str(_get(request, "reaction", "emoji"))
        return Content(text=emoji or "(reaction removed)", label="reaction")
    if kind == "location":
        return Content(text=text or _location(_get(request, "location")), label="location")
    return Content(text=text or _str(_get(request, kind)), label=kind)


def inbound_content(message: InboundMessage) -> Content:
    """The bubble parts of a message a user sent, from its webhook message object."""
    body: JsonValue = message.body
    text = message.text or ""
    kind = message.type
    label = ""
    if kind == "text":
        text = text or _str(_get(body, "text", "body"))
    elif kind == "interactive":
        reply_kind = _str(_get(body, "interactive", "type"))
        label = {"button_reply": "tapped a button", "list_reply": "picked from a list"}.get(
            reply_kind, f"interactive · {reply_kind or '?'}"
        )
    elif kind == "button":
        label = "tapped a template button"
        text = text or _str(_get(body, "button", "text"))
    elif kind in _MEDIA:
        return _media(kind, _get(body, kind), message.text)
    elif kind == "reaction":
        label = "reaction"
        text = _str(_get(body, "reaction", "emoji")) or "(reaction removed)"
    elif kind == "location":
        label = "location"
        text = text or _location(_get(body, "location"))
    else:
        label = kind
    return Content(text=text, label=label)
