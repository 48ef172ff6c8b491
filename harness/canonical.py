"""Canonical JSON: one text, and one sha256 key, for requests that are equal; and JSON read fast.

Keys are sorted and separators compact, so two requests built in a different
order, or with the same values in another dict, give the same key. orjson
does the work (it is several times faster than the standard library on long
conversations); the few values it refuses fall back to the standard library,
which agrees with it on everything else. :func:`parse_json` reads JSON the
same way round: orjson where it gives what the standard library would.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

import orjson

from harness.llm import json_default

__all__ = ["canonical_bytes", "canonical_json", "canonical_key", "parse_json"]

# orjson reads an integer outside [-2**63, 2**64) as a float. Any with 19 digits or fewer
# fits, save a negative one of 19; digit runs are found as 9s once every digit is made a 9
# (a regular expression would take longer than orjson's whole parse).
_NINES: Final = bytes.maketrans(b"0123456789", b"9" * 10)
_LONG_NUMBERS: Final = (b"9" * 20, b"-" + b"9" * 19)

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


def parse_json(data: bytes) -> Any:
    """The value of the JSON text ``data``: what ``json.loads(data.decode())`` gives, faster.

    orjson reads it unless it may hold what orjson reads otherwise (an integer
    past 64 bits, which it makes a float) or refuses (NaN, a lone surrogate
    escape, bad JSON): those go to the standard library, whose errors
    (``UnicodeDecodeError``, ``json.JSONDecodeError``) are raised as they are.
    """
    nines = data.translate(_NINES)
    if not any(run in nines for run in _LONG_NUMBERS):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data.decode("utf-8"))
