"""Ids that look like Meta's, drawn from a ``random.Random``.

Meta's ids are opaque to bots, so only their outward form matters: a wamid is
``wamid.`` followed by base64, media ids are digit strings, business-scoped
user ids (BSUID) are a country code, a dot and digits. The wamid blob mimics
the layout seen in Meta's samples (the user's number, then a hex message key)
so that ids read naturally in logs; nothing may depend on that layout.

Meta never hands out an id twice, and bots rely on it (a dedupe store keyed
on the wamid outlives a restart), so :func:`id_source` draws from fresh
entropy unless a seed is given, and then from the seed and the run id
together. A user's BSUID is not drawn at all: :func:`bsuid_for` derives it
from the number, so a number keeps its BSUID and two numbers never share one.
"""

from __future__ import annotations

import base64
import hashlib
import random
import re
import secrets
import string
from collections.abc import Callable

__all__ = [
    "BSUID_PATTERN",
    "WAMID_PATTERN",
    "bsuid_for",
    "bulk_wamid",
    "country_of",
    "id_source",
    "is_bsuid",
    "is_wamid",
    "new_bsuid",
    "new_conversation_id",
    "new_fbtrace_id",
    "new_media_id",
    "new_wamid",
]

WAMID_PATTERN = re.compile(r"wamid\.[A-Za-z0-9+/_-]+={0,2}")
"""What a wamid looks like: ``wamid.`` and a base64 blob."""

BSUID_PATTERN = re.compile(r"[A-Z]{2}\.[0-9]+")
"""What a business-scoped user id looks like, e.g. ``US.13491208655302741918``."""

_HEX = "0123456789ABCDEF"
_HEX_BITS = len(_HEX).bit_length()  # the bits random.Random.choice draws to pick one of them
_TRACE_ALPHABET = string.ascii_letters + string.digits + "_-"

# Calling codes of the countries with the most WhatsApp users, and their ISO alpha-2 codes.
_COUNTRIES = {
    "1": "US", "7": "RU", "20": "EG", "27": "ZA", "30": "GR", "31": "NL", "32": "BE",
    "33": "FR", "34": "ES", "36": "HU", "39": "IT", "40": "RO", "41": "CH", "43": "AT",
    "44": "GB", "45": "DK", "46": "SE", "47": "NO", "48": "PL", "49": "DE", "51": "PE",
    "52": "MX", "53": "CU", "54": "AR", "55": "BR", "56": "CL", "57": "CO", "58": "VE",
    "60": "MY", "61": "AU", "62": "ID", "63": "PH", "64": "NZ", "65": "SG", "66": "TH",
    "81": "JP", "82": "KR", "84": "VN", "86": "CN", "90": "TR", "91": "IN", "92": "PK",
    "94": "LK", "98": "IR", "212": "MA", "213": "DZ", "216": "TN", "233": "GH",
    "234": "NG", "254": "KE", "255": "TZ", "256": "UG", "351": "PT", "353": "IE",
    "358": "FI", "380": "UA", "420": "CZ", "502": "GT", "503": "SV", "504": "HN",
    "506": "CR", "507": "PA", "591": "BO", "593": "EC", "595": "PY", "598": "UY",
    "852": "HK", "880": "BD", "886": "TW", "961": "LB", "962": "JO", "965": "KW",
    "966": "SA", "971": "AE", "972": "IL", "974": "QA",
}  # fmt: skip


def id_source(seed: int | None = None, run_id: str = "", purpose: str = "ids") -> random.Random:
    """Where a simulator draws its ids for ``purpose`` from.

    Without a seed: fresh entropy, so no two runs or processes share an id.
    With one: derived from the seed, the run id and the purpose, so the same
    three draw the same ids and another run id draws others.
    """
    if seed is None:
        return random.Random(secrets.randbits(128))
    return random.Random(f"{seed}:{run_id}:{purpose}" if run_id else f"{seed}:{purpose}")


def country_of(wa_id: str) -> str:
    """The ISO alpha-2 country of a phone number, by its calling code (``US`` if unknown)."""
    digits = wa_id.lstrip("+")
    for length in (3, 2, 1):
        found = _COUNTRIES.get(digits[:length])
        if found is not None:
            return found
    return "US"


def bsuid_for(wa_id: str, business: str = "") -> str:
    """The business-scoped user id of the user with number ``wa_id``.

    Derived, not drawn: the same number (for the same ``business``) always
    gets the same one, different numbers get different ones, and the prefix
    is the number's country.
    """
    digest = hashlib.sha256(f"bsuid:{business}:{wa_id}".encode()).digest()
    number = int.from_bytes(digest[:16], "big")
    return f"{country_of(wa_id)}.{10**19 + number % (9 * 10**19)}"


def new_wamid(rng: random.Random, wa_id: str = "", *, outbound: bool = False) -> str:
    """Return a fresh wamid drawn from ``rng``.

    ``wa_id`` is the user's number the message is exchanged with; ``outbound``
    picks the shorter key Meta's send responses show. Equal ``rng`` states
    give equal ids.
    """
    key_length = 18 if outbound else 20
    if type(rng) is random.Random:
        key = _hex_key(rng.getrandbits, key_length)
    else:  # a generator of its own kind may draw its choices otherwise
        key = "".join(rng.choice(_HEX) for _ in range(key_length))
    return _wamid(wa_id, key, outbound)


def _hex_key(getrandbits: Callable[[int], int], length: int) -> str:
    """``length`` of ``random.Random.choice(_HEX)``, drawn as it draws them, without its calls.

    It takes the smallest number of bits that can hold ``len(_HEX)`` and draws
    again while the number is out of range; the same draws give the same key.
    """
    chars = []
    for _ in range(length):
        drawn = getrandbits(_HEX_BITS)
        while drawn >= len(_HEX):
            drawn = getrandbits(_HEX_BITS)
        chars.append(_HEX[drawn])
    return "".join(chars)


def bulk_wamid(rng: random.Random, wa_id: str = "", *, outbound: bool = False) -> str:
    """A wamid like :func:`new_wamid`'s, its key drawn from ``rng`` at once.

    For a run that makes thousands a second and never replays them (a load
    run): equal ``rng`` states give equal ids here too, but not the ids
    :func:`new_wamid` would have drawn, so recorded runs keep that one.
    """
    key_length = 18 if outbound else 20
    return _wamid(wa_id, f"{rng.getrandbits(4 * key_length):0{key_length}X}", outbound)


def _wamid(wa_id: str, key: str, outbound: bool) -> str:
    number = wa_id.encode("ascii")
    kind = b"\x11" if outbound else b"\x12"
    blob = (
        b"\x1c\x18"
        + bytes([len(number)])
        + number
        + b"\x15\x02\x00"
        + kind
        + b"\x18"
        + bytes([len(key)])
        + key.encode("ascii")
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


def new_conversation_id(rng: random.Random) -> str:
    """Return a fresh conversation id (32 lowercase hex digits) for a status's ``conversation``."""
    return "".join(rng.choice("0123456789abcdef") for _ in range(32))


def new_fbtrace_id(rng: random.Random) -> str:
    """Return a fresh ``fbtrace_id`` for a Graph API error body."""
    return "".join(rng.choice(_TRACE_ALPHABET) for _ in range(27))


def is_wamid(value: str) -> bool:
    """Tell whether ``value`` has the outward form of a wamid."""
    return WAMID_PATTERN.fullmatch(value) is not None


def is_bsuid(value: str) -> bool:
    """Tell whether ``value`` has the outward form of a business-scoped user id."""
    return BSUID_PATTERN.fullmatch(value) is not None
