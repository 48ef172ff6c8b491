"""Canonical JSON: one text, and one sha256 key, for requests that are equal.

Keys are sorted and separators compact, so two requests built in a different
order, or with the same values in another dict, give the same key. orjson
does the work (it is several times faster than the standard library on long
conversations); the few values it refuses fall back to the standard library,
which agrees with it on everything else.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import orjson

from harness.llm import json_default

__all__ = ["canonical_bytes", "canonical_json", "canonical_key"]

_ORJSON_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=json_default
)


def canonical_bytes(value: Any) -> bytes:
    """``value`` as canonical JSON bytes."""
    try:
        return orjson.dumps(value, default=json_default, option=_ORJSON_OPTIONS)
    except orjson.JSONEncodeError:
        # Beyond orjson (integers past 64 bits...): the standard library agrees on the rest.
        return _CANONICAL.encode(value).encode()


def canonical_json(value: Any) -> str:
    """``value`` as compact JSON with sorted keys: equal requests give equal text."""
    return canonical_bytes(value).decode()


def canonical_key(value: Any) -> str:
    """The sha256 hex digest of :func:`canonical_json` of ``value``."""
    return hashlib.sha256(canonical_bytes(value)).hexdigest()
