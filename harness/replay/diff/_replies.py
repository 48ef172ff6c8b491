"""What a user sees of a message the agent sent, read from its Graph API request; how far it got.

Text, header and footer, interactive options and template parameters are
pulled out of the request body whatever its type, so two replies compare part by part.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from harness.replay.diff._text import canonical, scrub
from harness.trace import OutboundSend, StatusUpdate

__all__ = ["Reply", "read_reply"]

# How far a message got, from its status webhooks.
_PROGRESS = {"sent": 1, "delivered": 2, "read": 3, "played": 3}
# Request keys that point at other messages by id: which id is noise.
_VOLATILE_REQUEST_KEYS = frozenset({"context"})


def _get(value: JsonValue, *keys: str) -> JsonValue:
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _string(value: JsonValue) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else canonical(value)


def _list(value: JsonValue) -> list[JsonValue]:
    return list(value) if isinstance(value, list) else []


@dataclass(frozen=True)
class Reply:
    """What a user sees of one message the agent sent, and how far it got."""

    type: str
    text: str
    header: str
    footer: str
    options: tuple[str, ...]
    template: str
    parameters: tuple[str, ...]
    request: JsonValue
    state: str


def _option(reply: JsonValue) -> str:
    title, ident = _string(_get(reply, "title")), _string(_get(reply, "id"))
    return f"{title} [{ident}]" if ident else title


def _interactive_options(inter: JsonValue) -> tuple[str, ...]:
    action = _get(inter, "action")
    kind = _string(_get(inter, "type"))
    if kind == "button":
        return tuple(_option(_get(b, "reply")) for b in _list(_get(action, "buttons")))
    if kind == "list":
        options = [f"menu {_string(_get(action, 'button'))!r}"]
        for section in _list(_get(action, "sections")):
            prefix = _string(_get(section, "title"))
            for row in _list(_get(section, "rows")):
                options.append(f"{prefix}: {_option(row)}" if prefix else _option(row))
        return tuple(options)
    parameters = _get(action, "parameters")
    title = _string(_get(parameters, "display_text")) or _string(_get(parameters, "flow_cta"))
    url = _string(_get(parameters, "url"))
    return (f"{title} <{url}>" if url else title,) if title else ()


def _template_parameters(template: JsonValue) -> tuple[str, ...]:
    values: list[str] = []
    for component in _list(_get(template, "components")):
        for parameter in _list(_get(component, "parameters")):
            kind = _string(_get(parameter, "type"))
            value = _get(parameter, kind) if kind and kind != "text" else _get(parameter, "text")
            values.append(_string(value))
    return tuple(values)


def _state(send: OutboundSend, statuses: Sequence[StatusUpdate]) -> str:
    if send.error is not None:
        return f"refused {send.error.code}"
    failed = [s for s in statuses if s.status == "failed"]
    if failed:
        codes = ", ".join(str(e.code) for e in failed[-1].errors)
        return f"failed {codes}" if codes else "failed"
    reached = max((_PROGRESS.get(s.status, 0) for s in statuses), default=0)
    words = {rank: word for word, rank in _PROGRESS.items() if word != "played"}
    return words.get(reached, "no status")


def read_reply(send: OutboundSend, statuses: Sequence[StatusUpdate]) -> Reply:
    """What the user saw of ``send``, and how far it got by its ``statuses``."""
    request: JsonValue = send.request
    inter = _get(request, "interactive")
    template = _get(request, "template")
    text = send.text
    if text is None:
        text = _string(_get(request, "text", "body")) or _string(_get(inter, "body", "text"))
        text = text or _string(_get(request, send.type, "caption"))
    name = _string(_get(template, "name"))
    language = _string(_get(template, "language", "code"))
    return Reply(
        type=send.type,
        text=text,
        header=_string(_get(inter, "header", "text")),
        footer=_string(_get(inter, "footer", "text")),
        options=_interactive_options(inter) if inter is not None else (),
        template=f"{name} ({language})" if language else name,
        parameters=_template_parameters(template),
        request=scrub(request, _VOLATILE_REQUEST_KEYS),
        state=_state(send, statuses),
    )
