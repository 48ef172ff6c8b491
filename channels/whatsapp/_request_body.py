"""Reading a request's body without trusting it: its size, its encoding and its JSON.

The fake Graph API and the control API take bodies from anyone who reaches
the port, so both read them here, and both refuse the same things the same
way:

- a body over a limit, by its ``Content-Length`` before a byte is read, and
  by counting while it streams in (a client may send more than it declared,
  or declare nothing), so a 200 MB body never sits in memory;
- JSON that is not UTF-8, nests deeper than :data:`MAX_DEPTH`, writes
  ``NaN`` or ``Infinity``, or holds half of a UTF-16 surrogate pair
  (``"\\udfff"``), which no UTF-8 text can carry and which would break
  every later attempt to write the body out again.

What is wrong is raised as :class:`BodyTooLarge` or :class:`BadBody`; each
API words it in its own error shape. :func:`nul_in` finds the NUL
characters no WhatsApp message carries. :func:`form_fields` reads a send
written as form fields, as Graph reads them, and
:func:`objects_written_as_text` reads the objects a JSON send gives as text;
:func:`graph_parameters` reads the parameters of a Graph call that is not a send.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import AsyncGenerator, Collection
from typing import Any, Final, cast
from urllib.parse import parse_qsl

from starlette.datastructures import Headers, UploadFile
from starlette.formparsers import MultiPartParser
from starlette.requests import Request

from channels.whatsapp.sends.problems import request_error

__all__ = [
    "FORM_TYPES",
    "JSON_BODY_LIMIT",
    "MAX_DEPTH",
    "BadBody",
    "BodyTooLarge",
    "as_seen",
    "decode_json",
    "form_fields",
    "graph_parameters",
    "limited_stream",
    "media_type",
    "nul_in",
    "objects_written_as_text",
    "read_limited",
    "upload_type",
    "where",
]

JSON_BODY_LIMIT: Final = 1024 * 1024
"""The largest JSON body either API reads (1 MiB: a send is a few kilobytes at most)."""
FORM_TYPES: Final = ("application/x-www-form-urlencoded", "multipart/form-data")
"""The form bodies Graph reads as fields."""
MAX_DEPTH: Final = 64
"""How deeply a JSON body may nest (Meta's deepest message object nests six levels)."""

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
# Past this many digits a Content-Length is over any limit (and int() would refuse it anyway).
_LONGEST_LENGTH: Final = 18
_MAX_FIELDS: Final = 64


class BodyTooLarge(Exception):
    """The body is over ``limit`` bytes (declared, or counted as it came in)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the body is over the limit of {limit} bytes")
        self.limit = limit


class BadBody(ValueError):
    """The body is not JSON (or form fields) either API takes; the message says why, and where."""


async def limited_stream(request: Request, limit: int) -> AsyncGenerator[bytes, None]:
    """The body's chunks as they arrive, raising :class:`BodyTooLarge` once past ``limit``.

    A declared ``Content-Length`` over the limit is refused before any byte
    is read.
    """
    declared = request.headers.get("content-length", "").strip()
    if (
        declared.isascii()
        and declared.isdigit()
        and (len(declared) > _LONGEST_LENGTH or int(declared) > limit)
    ):
        raise BodyTooLarge(limit)
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(limit)
        yield chunk


async def read_limited(request: Request, limit: int) -> bytes:
    """The whole body, or :class:`BodyTooLarge` as soon as it outgrows ``limit``."""
    data = bytearray()
    async for chunk in limited_stream(request, limit):
        data += chunk
    return bytes(data)


async def as_seen(request: Request) -> dict[str, Any]:
    """A refused request's body as it was sent: its JSON object, else ``{"raw": text}``.

    For the trace of a request refused before its body was read; never raises.
    """
    try:
        raw = await read_limited(request, JSON_BODY_LIMIT)
    except BodyTooLarge:
        return {"raw": ""}
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"raw": raw.decode("utf-8", "replace")}


def where(path: tuple[str | int, ...]) -> str:
    """A location in a JSON document as a path: ``message.text.body``, ``rows[2]``."""
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else f".{step}" if out else step
    return out


def decode_json(raw: bytes) -> object:
    """Decode ``raw`` as strict JSON in UTF-8, or raise :class:`BadBody` saying why."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadBody(f"the body is not UTF-8 (at byte {exc.start + 1})") from None

    def refuse(constant: str) -> object:
        raise ValueError(f"{constant} is not valid JSON")

    try:
        data = json.loads(text, parse_constant=refuse)
    except RecursionError:
        raise BadBody(f"the body nests more than {MAX_DEPTH} levels deep") from None
    except ValueError as exc:  # JSONDecodeError, or a constant refused above
        raise BadBody(str(exc)) from None
    _check_shape(data)
    return data


def _check_shape(data: object) -> None:
    """Refuse nesting past :data:`MAX_DEPTH` and lone surrogates, in keys and in values."""
    pending: list[tuple[object, tuple[str | int, ...]]] = [(data, ())]
    while pending:
        value, path = pending.pop()
        if isinstance(value, dict | list) and len(path) >= MAX_DEPTH:
            raise BadBody(f"the body nests more than {MAX_DEPTH} levels deep")
        if isinstance(value, str):
            _check_text(value, path)
        elif isinstance(value, dict):
            for key, item in value.items():
                _check_text(key, path, key=True)
                pending.append((item, (*path, key)))
        elif isinstance(value, list):
            pending.extend((item, (*path, index)) for index, item in enumerate(value))


def _check_text(text: str, path: tuple[str | int, ...], *, key: bool = False) -> None:
    found = _SURROGATE.search(text)
    if found is None:
        return
    place = repr(where(path)) if path else "the top level"
    what = "a key" if key else "the string"
    raise BadBody(
        f"{what} at {place} holds half of a UTF-16 surrogate pair "
        f"(\\u{ord(found.group()):04x}), which is not text"
    )


def nul_in(data: object) -> str | None:
    """The path of the first string (or key) holding a NUL character, or ``None``.

    The root itself is named ``""``.
    """
    pending: deque[tuple[object, tuple[str | int, ...]]] = deque([(data, ())])
    while pending:
        value, path = pending.popleft()
        if isinstance(value, str) and "\0" in value:
            return where(path)
        if isinstance(value, dict):
            for key, item in value.items():
                if "\0" in key:
                    return where((*path, key.replace("\0", "\\u0000")))
                pending.append((item, (*path, key)))
        elif isinstance(value, list):
            pending.extend((item, (*path, index)) for index, item in enumerate(value))
    return None


def media_type(headers: Headers) -> str:
    """The body's media type, lower case and without parameters (``""`` when not given)."""
    return headers.get("content-type", "").split(";", 1)[0].strip().lower()


async def form_fields(raw: bytes, headers: Headers) -> dict[str, object]:
    """A form body's fields, a value written as a JSON object or array decoded.

    Graph reads every field as a string and an object from its JSON, so
    ``text={"body": "hi"}`` is the text object. A field given twice keeps its
    last value; file parts are not fields. Raises :class:`BadBody`.
    """
    if media_type(headers) == "multipart/form-data":

        async def chunks() -> AsyncGenerator[bytes, None]:
            yield raw

        parser = MultiPartParser(headers, chunks(), max_files=0, max_fields=_MAX_FIELDS)
        try:
            form = await parser.parse()
        except Exception as exc:  # python-multipart raises several kinds on bad bodies
            raise BadBody(f"the multipart body can't be read ({exc})") from None
        items = [(key, value) for key, value in form.multi_items() if isinstance(value, str)]
    else:
        try:
            text = raw.decode("utf-8")
            items = parse_qsl(text, keep_blank_values=True, max_num_fields=_MAX_FIELDS)
        except UnicodeDecodeError:
            raise BadBody("the form body is not UTF-8") from None
        except ValueError as exc:  # too many fields
            raise BadBody(f"the form body can't be read ({exc})") from None
    body: dict[str, object] = {}
    for key, value in items:
        body[key] = value
        if _written_as_json(value):
            try:
                body[key] = decode_json(value.encode("utf-8"))
            except BadBody as exc:
                raise BadBody(f"{key}: not valid JSON ({exc})") from None
    return body


def objects_written_as_text(body: object, fields: Collection[str]) -> object:
    """``body`` with each of ``fields`` given as the JSON text of an object or array read.

    Graph reads a parameter the same way wherever it is written: as it reads
    ``text={"body": "hi"}`` from a form, it reads ``"contacts": "[{...}]"`` in
    a JSON body (whatsapp-api-js writes a contacts message so). Text that is
    not JSON is left as it is, for validation to refuse; ``body`` is not changed.
    """
    if not isinstance(body, dict):
        return body
    read = body
    for key in body.keys() & fields:
        value = body[key]
        if isinstance(value, str) and _written_as_json(value):
            try:
                decoded = decode_json(value.encode("utf-8"))
            except BadBody:
                continue
            if read is body:
                read = dict(body)
            read[key] = decoded
    return read


async def graph_parameters(
    request: Request, limit: int, objects: Collection[str] = ()
) -> dict[str, object]:
    """A call's parameters: the query string, then a JSON object or form body over it.

    Graph reads a parameter wherever it is written; each of ``objects`` may be
    given as its JSON text (in the query string too). A body over ``limit``
    bytes, or one that is not an object or form fields, answers 100.
    """
    given: dict[str, object] = dict(request.query_params)
    try:
        raw = await read_limited(request, limit)
    except BodyTooLarge:
        raise request_error("", f"the body is over {limit} bytes") from None
    if raw.strip():
        try:
            kind = media_type(request.headers)
            body = (
                decode_json(raw)
                if kind not in FORM_TYPES
                else await form_fields(raw, request.headers)
            )
        except BadBody as exc:
            raise request_error("", f"the body can't be read ({exc})") from None
        if not isinstance(body, dict):
            raise request_error("", "the body must be a JSON object or form fields")
        given.update(body)
    return cast("dict[str, object]", objects_written_as_text(given, objects))  # a dict stays one


def _written_as_json(value: str) -> bool:
    """Whether ``value`` is written as a JSON object or array (it may still not be JSON)."""
    return value.lstrip()[:1] in ("{", "[")


def upload_type(named: object, upload: UploadFile) -> str:
    """An upload's MIME type: its ``type`` field, else the Content-Type of its file part.

    Meta's own description of the endpoint has the file part carry the type
    (curl's ``-F 'file=@photo.jpg;type=image/jpeg'``); a ``type`` field, which
    older documents ask for, names it when given.
    """
    if named is not None:
        if not isinstance(named, str) or not named:
            raise request_error("type", "the file's MIME type, as text")
        return named
    part = media_type(upload.headers)
    if not part or part == "application/octet-stream":
        raise request_error(
            "file",
            "the file part names no MIME type (its Content-Type is "
            f"{repr(part) if part else 'missing'}): give it one, or a type field",
        )
    return part
