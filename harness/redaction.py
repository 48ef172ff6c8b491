"""Scrub secrets from data before it is written to a fixture.

A fixture is meant to be committed, so nothing that grants access may land in
one: header values such as ``Authorization`` and ``x-api-key``, access and
verify tokens, app secrets, passwords. :func:`redact` walks JSON-like data
(dicts, lists, tuples, strings) and returns a scrubbed copy:

- the value under a sensitive key is replaced by :data:`REDACTED`;
- in any string, the credential after ``Bearer``, the value of a sensitive
  query parameter (``?access_token=...``) and of a sensitive pair in JSON kept
  as text (``"app_secret": "..."``) are masked;
- literal secret values the run knows (its real app secret and tokens) are
  masked wherever they occur, in keys as well as values, if they are long
  enough to be real credentials (:data:`MIN_SUBSTRING` characters); a shorter
  one is masked only where a whole value equals it, so a one-letter "secret"
  cannot blank out every word that contains that letter.

Keys that only count tokens (``max_tokens``, ``gen_ai.usage.input_tokens``)
are left alone: a key is sensitive by its last word, so ``verify_token`` is
and ``input_tokens`` is not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final, TypeVar

__all__ = ["MIN_SUBSTRING", "REDACTED", "Redactor", "is_sensitive_key", "redact"]

#: What a redacted value is replaced by.
REDACTED: Final = "[REDACTED]"
#: How long a known secret must be to be masked inside longer text (access
#: tokens and app secrets are far longer; verify tokens are chosen by people).
MIN_SUBSTRING: Final = 16

_T = TypeVar("_T")

# Whole keys (normalised to snake_case) that always hold a secret.
_SENSITIVE_KEYS: Final = frozenset(
    {
        "authorization",
        "proxy_authorization",
        "x_api_key",
        "api_key",
        "apikey",
        "cookie",
        "set_cookie",
    }
)
# A key whose last word is one of these holds a secret: access_token, verify_token,
# app_secret, client_secret, db_password ... but not input_tokens or secret_name.
_SENSITIVE_LAST_WORDS: Final = frozenset({"token", "secret", "password", "passwd", "apikey"})

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_WORD_SEPARATORS = re.compile(r"[\s.\-_]+")

# "Bearer <credential>": the credential must look like one (a digit or one of
# -._~+/= in it, or 20+ characters), so prose such as "the bearer of bad news"
# stays as written.
_BEARER = re.compile(r"(?i)\b(bearer\s+)([A-Za-z0-9\-._~+/]+=*)")
# name=value pairs, as in query strings and form bodies; the name decides.
_PARAM = re.compile(r"(?<![A-Za-z0-9_.\-])([A-Za-z][A-Za-z0-9_.\-]*)=([^&\s#;\"'<>]+)")
# "name": "value" pairs, as in a JSON body kept as text.
_JSON_PAIR = re.compile(r'"((?:[^"\\]|\\.)*)"(\s*:\s*)"(?:[^"\\]|\\.)*"')


def is_sensitive_key(key: str) -> bool:
    """Whether the value under ``key`` is a secret (case, ``-``, ``.`` and camelCase agnostic)."""
    snake = _CAMEL_BOUNDARY.sub("_", key).lower()
    words = [w for w in _WORD_SEPARATORS.split(snake) if w]
    if not words:
        return False
    if "_".join(words) in _SENSITIVE_KEYS:
        return True
    return words[-1] in _SENSITIVE_LAST_WORDS or words[-2:] == ["api", "key"]


def _looks_like_credential(text: str) -> bool:
    return len(text) >= 20 or any(c.isdigit() or c in "-._~+/=" for c in text)


def _mask_bearer(match: re.Match[str]) -> str:
    if not _looks_like_credential(match.group(2)):
        return match.group(0)
    return match.group(1) + REDACTED


def _mask_param(match: re.Match[str]) -> str:
    if not is_sensitive_key(match.group(1)):
        return match.group(0)
    return f"{match.group(1)}={REDACTED}"


def _mask_json_pair(match: re.Match[str]) -> str:
    if not is_sensitive_key(match.group(1)):
        return match.group(0)
    return f'"{match.group(1)}"{match.group(2)}"{REDACTED}"'


class Redactor:
    """A redaction pass that also masks a set of literal secret values.

    Give it the secrets the run actually holds (the app secret, the access
    and verify tokens); empty strings are ignored, so unset settings can be
    passed as they are. Calling the redactor returns a scrubbed copy.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        given = {s for s in secrets if s}
        # Longest first, so a secret that contains another is masked whole.
        known = sorted((s for s in given if len(s) >= MIN_SUBSTRING), key=len, reverse=True)
        self._literals = re.compile("|".join(map(re.escape, known))) if known else None
        self._whole = frozenset(s for s in given if len(s) < MIN_SUBSTRING)

    def __call__(self, obj: _T) -> _T:
        """A copy of ``obj`` with every secret replaced by :data:`REDACTED`."""
        return self._walk(obj)  # type: ignore[no-any-return]  # same JSON shape as given

    def redact_string(self, text: str) -> str:
        """``text`` with bearer credentials, sensitive parameters and known secrets masked."""
        if text in self._whole:
            return REDACTED
        if self._literals is not None:
            text = self._literals.sub(REDACTED, text)
        text = _BEARER.sub(_mask_bearer, text)
        text = _JSON_PAIR.sub(_mask_json_pair, text)
        return _PARAM.sub(_mask_param, text)

    def _walk(self, obj: Any) -> Any:
        if isinstance(obj, str):
            return self.redact_string(obj)
        if isinstance(obj, dict):
            return {
                (self.redact_string(k) if isinstance(k, str) else k): (
                    REDACTED
                    if isinstance(k, str) and is_sensitive_key(k) and v not in (None, "")
                    else self._walk(v)
                )
                for k, v in obj.items()
            }
        if isinstance(obj, list):
            return [self._walk(v) for v in obj]
        if isinstance(obj, tuple):
            return tuple(self._walk(v) for v in obj)
        return obj


def redact(obj: _T, *, secrets: Iterable[str] = ()) -> _T:
    """A scrubbed copy of JSON-like ``obj``; ``secrets`` are literal values to mask too.

    Pure: the argument is never modified. Non-string scalars pass through,
    unless they sit under a sensitive key.
    """
    return Redactor(secrets)(obj)
