"""Ids that look like Meta's, made deterministically from a seeded ``random.Random``.

Meta's ids are opaque to bots, so only their outward form matters: a wamid is
``wamid.`` followed by base64, media ids are digit strings, business-scoped
user ids (BSUID) are a country code, a dot and digits. The wamid blob mimics
the layout seen in Meta's samples (the user's number, then a hex message key)
so that ids read naturally in logs; nothing may depend on that layout.
"""

from __future__ import annotations

import base64
import random
import re
import string

__all__ = [
    "BSUID_PATTERN",
    "WAMID_PATTERN",
    "is_bsuid",
    "is_wamid",
    "new_bsuid",
    "new_fbtrace_id",
    "new_media_id",
    "new_wamid",
]

WAMID_PATTERN = re.compile(r"wamid\.[A-Za-z0-9+/_-]+={0,2}")
"""What a wamid looks like: ``wamid.`` and a base64 blob."""

BSUID_PATTERN = re.compile(r"[A-Z]{2}\.[0-9]+")
"""What a business-scoped user id looks like, e.g. ``US.13491208655302741918``."""

_HEX = "0123456789ABCDEF"
_TRACE_ALPHABET = string.ascii_letters + string.digits + "_-"


def new_wamid(rng: random.Random, wa_id: str = "", *, outbound: bool = False) -> str:
    """Return a fresh wamid drawn from ``rng``.

    ``wa_id`` is the user's number the message is exchanged with; ``outbound``
    picks the shorter key Meta's send responses show. Equal ``rng`` states
    give equal ids.
    """
    number = wa_id.encode("ascii")
    key_length = 18 if outbound else 20
    key = "".join(rng.choice(_HEX) for _ in range(key_length)).encode("ascii")
    kind = b"\x11" if outbound else b"\x12"
    blob = (
        b"\x1c\x18"
        + bytes([len(number)])
        + number
        + b"\x15\x02\x00"
        + kind
        + b"\x18"
        + bytes([len(key)])
        + key
        + b"\x00"
    )
    return "wamid." + base64.b64encode(blob).decode("ascii")


def new_media_id(rng: random.Random) -> str:
    """Return a fresh numeric media id (16 digits, like Meta's)."""
    return str(rng.randrange(10**15, 10**16))


def new_bsuid(rng: random.Random, country: str = "US") -> str:
    """Return a fresh business-scoped user id for a user in ``country`` (ISO alpha-2)."""
    if not re.fullmatch(r"[A-Z]{2}", country):
        raise ValueError(f"country {country!r} is not two capital letters")
    return f"{country}.{rng.randrange(10**19, 10**20)}"


def new_fbtrace_id(rng: random.Random) -> str:
    """Return a fresh ``fbtrace_id`` for a Graph API error body."""
    return "".join(rng.choice(_TRACE_ALPHABET) for _ in range(27))


def is_wamid(value: str) -> bool:
    """Tell whether ``value`` has the outward form of a wamid."""
    return WAMID_PATTERN.fullmatch(value) is not None


def is_bsuid(value: str) -> bool:
    """Tell whether ``value`` has the outward form of a business-scoped user id."""
    return BSUID_PATTERN.fullmatch(value) is not None
