"""How a diff writes a difference: values clipped and quoted, long texts cut to what changed.

Also the masking of what differs from run to run without meaning anything
(message ids), so the comparisons see only what does.
"""

from __future__ import annotations

import json
from datetime import datetime

from pydantic import JsonValue

__all__ = [
    "canonical",
    "count_line",
    "json_changes",
    "pair",
    "plural",
    "scrub",
    "show",
    "text_pair",
    "time_line",
]

_WAMID = "wamid."
_CLIP = 70
_CONTEXT = 20


def plural(n: int, noun: str) -> str:
    """``1 turn``, ``2 turns``, ``3 replies``."""
    if n == 1:
        return f"1 {noun}"
    return f"{n} {noun[:-1]}ies" if noun.endswith("y") else f"{n} {noun}s"


def count_line(noun: str, a: int, b: int) -> str:
    """``a: 2 replies, b: 1``."""
    return f"a: {plural(a, noun)}, b: {b}"


def _clip(text: str, limit: int = _CLIP) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def show(value: JsonValue) -> str:
    """A value as a diff line shows it: a string quoted, anything else as compact JSON, clipped."""
    if isinstance(value, str):
        return repr(_clip(value))
    return _clip(json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":")))


def _quote_window(text: str, start: int, end: int) -> str:
    inner = repr(text[start:end])
    return ("…" if start > 0 else "") + inner + ("…" if end < len(text) else "")


def pair(a: str, b: str) -> str:
    """``'x' -> 'y'``; long texts shrink to the part that differs, with some context."""
    if len(a) <= _CLIP and len(b) <= _CLIP:
        return f"{a!r} -> {b!r}"
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(a), len(b)) - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    start = max(prefix - _CONTEXT, 0)
    end_a = min(len(a) - suffix + _CONTEXT, len(a), start + _CLIP)
    end_b = min(len(b) - suffix + _CONTEXT, len(b), start + _CLIP)
    return f"{_quote_window(a, start, end_a)} -> {_quote_window(b, start, end_b)}"


def _optional(value: str | None) -> str:
    return "(none)" if value is None else repr(_clip(value))


def text_pair(a: str | None, b: str | None) -> str:
    """:func:`pair` for texts that may be missing, shown as ``(none)``."""
    if a is None or b is None:
        return f"{_optional(a)} -> {_optional(b)}"
    return pair(a, b)


def canonical(value: JsonValue) -> str:
    """A JSON value as text that two equal values share and two different ones don't."""
    # json, not ==: True == 1 and 1 == 1.0 in Python, but they are different JSON
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def json_changes(a: JsonValue, b: JsonValue, path: str = "") -> list[str]:
    """What differs between two JSON values, one entry per leaf: ``slot '20:00' -> '21:00'``."""
    if canonical(a) == canonical(b):
        return []
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for key in sorted(set(a) | set(b)):
            where = f"{path}.{key}" if path else key
            if key not in b:
                out.append(f"{where} only in a ({show(a[key])})")
            elif key not in a:
                out.append(f"{where} only in b ({show(b[key])})")
            else:
                out.extend(json_changes(a[key], b[key], where))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            c
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for c in json_changes(x, y, f"{path}[{i}]")
        ]
    where = f"{path} " if path else ""
    if isinstance(a, str) and isinstance(b, str):
        return [f"{where}{pair(a, b)}"]
    return [f"{where}{show(a)} -> {show(b)}"]


def scrub(value: JsonValue, drop: frozenset[str] = frozenset()) -> JsonValue:
    """A JSON value with message ids masked and, at the top level, ``drop`` keys removed."""
    if isinstance(value, str):
        return "<wamid>" if value.startswith(_WAMID) else value
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def _time(at: datetime, other: datetime) -> str:
    fmt = "%H:%M:%S" if at.date() == other.date() else "%Y-%m-%d %H:%M:%S"
    if at.microsecond or other.microsecond:
        fmt += ".%f"
    return at.strftime(fmt)


def time_line(what: str, a: datetime, b: datetime) -> list[str]:
    """``what time differs: 18:00:00 -> 18:00:05``, or nothing when the times are equal."""
    if a == b:
        return []
    return [f"{what} time differs: {_time(a, b)} -> {_time(b, a)}"]
