"""Keyed pseudonyms for the people in a recorded chat, so its fixture can be committed.

A :class:`Pseudonymizer` learns who appears in a record (the fields where
Meta's payloads and the trace name a user) and replaces each of them,
wherever it occurs in any string of the record, by a pseudonym:

- a phone number or wa_id by digits of the same length, its formatting kept
  (``+55 11 98765-4321`` and ``5511987654321`` get the same digits);
- a business-scoped user id (``US.1349...``) by the same country letters, a
  dot and as many digits;
- a profile or contact name by ``User <5 digits>``;
- a message id (``wamid.…``, which embeds the user's number) by another
  ``wamid.`` id.

A pseudonym is an HMAC-SHA256 of the value under the key, so the same value
always gets the same pseudonym (across records, and across fixtures made
with the same key), and nobody without the key can compute which real value
is behind one. The business's own numbers (``metadata``'s
``display_phone_number`` and ``phone_number_id``, and those given as
``keep``) are left alone: replays need them and they identify no user.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable, Mapping
from typing import Any, Final, TypeVar

from channels.whatsapp.ids import is_bsuid

__all__ = ["Pseudonymizer", "new_pseudonym_key"]

_T = TypeVar("_T")

# Keys whose string value names a user: a phone number or wa_id, or a business-scoped id.
_USER_KEYS: Final = frozenset(
    {
        "wa_id",
        "from",
        "to",
        "recipient_id",
        "input",
        "phone",
        "user_id",
        "from_user_id",
        "recipient_user_id",
        "recipient",
        "parent_user_id",
        "user",
    }
)
# Parts of a name, in a profile or in a shared contact card's ``name`` object.
_NAME_PARTS: Final = frozenset(
    {"name", "username", "formatted_name", "first_name", "last_name", "middle_name"}
)
_PHONE_NOISE: Final = re.compile(r"[\s().\-]")
_PHONE: Final = re.compile(r"\+?[0-9]{5,15}")
_DATE: Final = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_WAMID_PREFIX: Final = "wamid."
_WAMID: Final = re.compile(r"wamid\.[A-Za-z0-9+/=_\-]+")
# Names shorter than this are replaced where they fill a field, but not inside other text,
# where "Al" or "Jo" would also hit unrelated words.
_MIN_NAME_IN_TEXT: Final = 3


def new_pseudonym_key() -> str:
    """A fresh random key (64 hex digits) for a run that was given none."""
    return secrets.token_hex(32)


def _digits_of(value: str) -> str | None:
    """The digits of a phone number as people write it, or None if it is not one."""
    if _DATE.match(value.strip()):
        return None
    compact = _PHONE_NOISE.sub("", value.strip())
    if _PHONE.fullmatch(compact) is None:
        return None
    return compact.removeprefix("+")


class Pseudonymizer:
    """Replaces users' numbers, ids, names and message ids by keyed pseudonyms.

    Use :meth:`learn` on data that names users (a webhook body, a send body)
    and :meth:`apply` on every record before it is written; ``apply`` learns
    from the record first, so a record that introduces a user is covered too.
    ``keep`` lists numbers never to replace (the business's own).
    """

    def __init__(self, key: str | bytes, *, keep: Iterable[str] = ()) -> None:
        raw = key.encode("utf-8") if isinstance(key, str) else bytes(key)
        if not raw:
            raise ValueError("a pseudonym key can't be empty")
        self._key = raw
        self._keep: set[str] = set()
        self._table: dict[str, str] = {}  # real value -> pseudonym
        self._names: dict[str, str] = {}  # pseudonym -> real name, to keep names apart
        self._pattern: re.Pattern[str] | None = None
        self._stale = False
        for number in keep:
            self.keep(number)

    # -- the pseudonyms -----------------------------------------------------------

    def _digest(self, kind: str, value: str) -> bytes:
        return hmac.new(self._key, f"{kind}:{value}".encode(), hashlib.sha256).digest()

    def _digits(self, kind: str, value: str, length: int) -> str:
        number = int.from_bytes(self._digest(kind, value), "big")
        # The first digit is never 0, so the pseudonym still reads as a number.
        first = str(1 + number % 9)
        rest = str(number // 9).zfill(length)[-(length - 1) :] if length > 1 else ""
        return first + rest

    def phone(self, value: str) -> str:
        """The pseudonym of a phone number or wa_id: as many digits, the same formatting."""
        digits = _digits_of(value)
        if digits is None or digits in self._keep:
            return value
        fake = iter(self._digits("phone", digits, len(digits)))
        return "".join(next(fake) if c.isdigit() else c for c in value)

    def bsuid(self, value: str) -> str:
        """The pseudonym of a business-scoped user id: ``CC.`` and as many digits."""
        country, _, digits = value.partition(".")
        return f"{country}.{self._digits('bsuid', value, len(digits))}"

    def name(self, value: str) -> str:
        """The pseudonym of a person's name: ``User <5 digits>``, distinct per name."""
        found = self._table.get(value)
        if found is not None:
            return found
        salt = 0
        while True:
            number = int.from_bytes(self._digest(f"name{salt or ''}", value), "big")
            candidate = f"User {10000 + number % 90000}"
            if self._names.get(candidate, value) == value:
                self._names[candidate] = value
                return candidate
            salt += 1

    def wamid(self, value: str) -> str:
        """The pseudonym of a message id: ``wamid.`` and 43 base64url characters."""
        digest = base64.urlsafe_b64encode(self._digest("wamid", value)).decode().rstrip("=")
        return _WAMID_PREFIX + digest

    # -- learning who appears -------------------------------------------------------

    def keep(self, number: str) -> None:
        """Never replace this number (one of the business's own)."""
        digits = _digits_of(number)
        self._keep.add(digits if digits is not None else number)

    def _add(self, real: str, fake: str) -> None:
        if real and real != fake and real not in self._table:
            self._table[real] = fake
            self._stale = True

    def _learn_phone(self, value: str) -> None:
        digits = _digits_of(value)
        if digits is None or digits in self._keep:
            return
        self._add(value, self.phone(value))
        self._add(digits, self.phone(digits))
        self._add("+" + digits, "+" + self.phone(digits))

    def _learn_user(self, value: str) -> None:
        if is_bsuid(value):
            self._add(value, self.bsuid(value))
        else:
            self._learn_phone(value)

    def _learn_name(self, value: str) -> None:
        if value.strip():
            self._add(value, self.name(value))

    def learn(self, data: Any) -> None:
        """Note every user, name and message id that ``data`` (JSON-like) mentions."""
        self._learn_keep(data)
        self._learn(data, parent="")

    def _learn_keep(self, data: Any) -> None:
        if isinstance(data, Mapping):
            metadata = data.get("metadata")
            if isinstance(metadata, Mapping):
                for key in ("display_phone_number", "phone_number_id"):
                    if isinstance(metadata.get(key), str):
                        self.keep(metadata[key])
            for value in data.values():
                self._learn_keep(value)
        elif isinstance(data, list | tuple):
            for value in data:
                self._learn_keep(value)

    def _learn(self, data: Any, parent: str) -> None:
        if isinstance(data, list | tuple):
            for value in data:
                self._learn(value, parent)
            return
        if not isinstance(data, Mapping):
            if isinstance(data, str):
                self._learn_wamids(data)
            return
        # A participant or a contact: a name next to a wa_id or user_id.
        person = "wa_id" in data or "user_id" in data
        for key, value in data.items():
            if not isinstance(value, str):
                self._learn(value, str(key))
            elif key in _USER_KEYS or (key == "id" and person):
                self._learn_user(value)
            elif key in _NAME_PARTS and (parent in ("profile", "name") or person):
                self._learn_name(value)
            else:
                self._learn_wamids(value)

    def _learn_wamids(self, text: str) -> None:
        if _WAMID_PREFIX in text:
            for match in _WAMID.finditer(text):
                self._add(match.group(0), self.wamid(match.group(0)))

    # -- replacing -----------------------------------------------------------------------

    def _compiled(self) -> re.Pattern[str] | None:
        if self._stale or self._pattern is None:
            parts: list[str] = []
            for real in sorted(self._table, key=len, reverse=True):
                if real in self._names.values() and len(real) < _MIN_NAME_IN_TEXT:
                    continue
                escaped = re.escape(real)
                if real[-1].isdigit():  # a number: not inside a longer number
                    parts.append(rf"(?<![0-9]){escaped}(?![0-9])")
                elif real.startswith(_WAMID_PREFIX):
                    parts.append(rf"{escaped}(?![A-Za-z0-9+/=_\-])")
                else:  # a name: whole words only
                    parts.append(rf"(?<!\w){escaped}(?!\w)")
            self._pattern = re.compile("|".join(parts)) if parts else None
            self._stale = False
        return self._pattern

    def replace(self, text: str) -> str:
        """``text`` with every value learned so far replaced by its pseudonym."""
        exact = self._table.get(text)
        if exact is not None:
            return exact
        pattern = self._compiled()
        if pattern is None:
            return text
        return pattern.sub(lambda m: self._table[m.group(0)], text)

    def apply(self, data: _T, *, learn: bool = True) -> _T:
        """A copy of JSON-like ``data`` with every user pseudonymized.

        With ``learn`` (the default), who ``data`` names is learned first; pass
        False for data of no WhatsApp shape (a tool's arguments, a model
        request), where a key such as ``from`` may hold anything.
        """
        if learn:
            self.learn(data)
        return self._walk(data)  # type: ignore[no-any-return]  # same JSON shape as given

    def _walk(self, data: Any) -> Any:
        if isinstance(data, str):
            return self.replace(data)
        if isinstance(data, Mapping):
            return {
                (self.replace(k) if isinstance(k, str) else k): self._walk(v)
                for k, v in data.items()
            }
        if isinstance(data, list):
            return [self._walk(v) for v in data]
        if isinstance(data, tuple):
            return tuple(self._walk(v) for v in data)
        return data
