"""How a send body's validation errors become the errors Meta answers with.

Pydantic reports every problem it finds; Meta answers one. The one chosen
is the first of, in order: the request as a whole (a body that is not an
object, ``messaging_product``, a top-level key no message takes), then the
fields in the order the models hold them, depth first, then a top-level
object that belongs to another message type. Two rules are read on the body
as sent and so come before the fields of their object: a message must name
someone (``to`` or ``recipient``), and media has an id or a link, not both.
The other rules that span fields (unique button titles, rows in all
sections) are checked once every field of their object is valid, so they
come after its field errors.

Codes, where Meta's documentation is silent, follow one rule:

- 100: the request as a whole, and a key an object never takes (a caption
  on audio: ``Unexpected key "caption" on param "audio".``, as Graph words it);
- 131008: a required field is missing;
- 131009: a field has the wrong type or breaks a limit (the facts
  document's default for interactive limits), including a media id the
  store does not hold;
- 131051: a message ``type`` the API does not know.

Every error's ``details`` starts with the JSON path of the field, as in
``interactive.action.buttons[1].reply.title: must be at most 20 characters,
got 21``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from channels.whatsapp.errors import (
    GraphAPIError,
    InvalidParameter,
    ParameterInvalid,
    ParameterMissing,
    UnsupportedMessageType,
)
from channels.whatsapp.sends.fields import json_kind
from channels.whatsapp.sends.request import MESSAGE_KEYS

__all__ = ["graph_error_for", "json_path", "request_error"]

_EXPECTED: Final = {
    "string_type": "a string",
    "model_type": "an object",
    "dict_type": "an object",
    "list_type": "an array",
    "bool_type": "a boolean",
    "float_type": "a number",
    "int_type": "an integer",
}
_MISSING: Final = "required parameter is missing"


def json_path(loc: Sequence[str | int]) -> str:
    """A Pydantic error location as a JSON path: ``interactive.action.buttons[1].reply``."""
    path = ""
    for step in loc:
        path += f"[{step}]" if isinstance(step, int) else f".{step}" if path else str(step)
    return path


def request_error(path: str, problem: str) -> InvalidParameter:
    """The 100 error for the request as a whole, or one of its top-level keys."""
    details = f"{path}: {problem}" if path else problem
    return InvalidParameter(message=f"(#100) {details}", details=details)


def graph_error_for(exc: ValidationError) -> GraphAPIError:
    """The error Meta would answer a body with, from everything Pydantic found wrong with it."""
    errors = exc.errors(include_url=False)
    order = {id(error): index for index, error in enumerate(errors)}
    return _meta_error(min(errors, key=lambda error: _rank(error, order[id(error)])))


def _rank(error: ErrorDetails, index: int) -> tuple[int, str, int]:
    loc = error["loc"]
    if loc == ("messaging_product",):
        return (0, "", index)
    if error["type"] == "extra_forbidden" and len(loc) == 1:
        # Several unknown keys: name the first in sorted order. The object of
        # another message type comes last, so a body that forgot its ``type``
        # hears first that its own object is missing.
        return (3 if loc[0] in MESSAGE_KEYS else 1, str(loc[0]), index)
    return (2, "", index)


def _meta_error(error: ErrorDetails) -> GraphAPIError:
    kind = error["type"]
    loc = error["loc"]
    path = json_path(loc)
    ctx: dict[str, Any] = dict(error.get("ctx") or {})
    if kind == "send_request":
        return request_error(path, ctx["problem"])
    if loc == ("messaging_product",):
        return request_error(path, _MISSING if kind == "missing" else 'must be "whatsapp"')
    if kind == "extra_forbidden":
        return request_error(path, "not a valid parameter for this request")
    if kind == "send_unexpected" and len(loc) > 1:  # a key its object never takes: Graph's words
        message = f'(#100) Unexpected key "{loc[-1]}" on param "{json_path(loc[:-1])}".'
        return InvalidParameter(message=message, details=f"{path}: {ctx['problem']}")
    if kind == "send_type":
        return UnsupportedMessageType(details=f"{path}: {ctx['problem']}")
    if kind in ("missing", "send_missing"):
        return ParameterMissing(details=f"{path}: {ctx.get('problem', _MISSING)}")
    problem = _problem(kind, ctx, error["input"], error["msg"])
    return ParameterInvalid(details=f"{path}: {problem}" if path else problem)


def _problem(kind: str, ctx: dict[str, Any], value: Any, message: str) -> str:
    if kind in ("send_invalid", "send_unexpected"):
        return str(ctx["problem"])
    if kind in _EXPECTED:
        return f"must be {_EXPECTED[kind]}, not {json_kind(value)}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "string_too_long":
        return f"must be at most {ctx['max_length']} characters, got {len(value)}"
    if kind == "too_short":
        return f"must hold at least {ctx['min_length']} item(s)"
    if kind == "too_long":
        return f"must hold at most {ctx['max_length']} items, got {ctx['actual_length']}"
    if kind == "literal_error":
        return "must be " + str(ctx["expected"]).replace("'", '"')
    return message  # a check this module does not word yet: Pydantic's own words
