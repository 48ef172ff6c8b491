"""X-Hub-Signature-256: how Meta signs webhook bodies, and how a receiver checks them.

The header is ``sha256=`` and the lowercase hex HMAC-SHA256 of the raw POST
body, keyed with the app secret. The rule this module enforces: serialize
once, sign those bytes, send those bytes. ``SignedBody`` holds both, so a
redelivery resends the identical body and signature, as Meta's retries do
(clients dedupe on the raw bytes).

    harness.exceptions.SignatureError (ValueError)
    ├── SignatureMissing      no X-Hub-Signature-256 header
    ├── SignatureMalformed    not ``sha256=`` and 64 lowercase hex digits
    └── SignatureMismatch     well formed, but not the body's signature
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from dataclasses import FrozenInstanceError
from typing import Any

from harness.exceptions import SignatureError

__all__ = [
    "SIGNATURE_HEADER",
    "SignatureMalformed",
    "SignatureMismatch",
    "SignatureMissing",
    "SignedBody",
    "is_valid",
    "serialize",
    "sign",
    "verify",
]

SIGNATURE_HEADER = "X-Hub-Signature-256"
"""The header carrying the signature."""

_PREFIX = "sha256="
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")


class SignatureMissing(SignatureError):
    """The request has no X-Hub-Signature-256 header."""


class SignatureMalformed(SignatureError):
    """The header is not ``sha256=`` followed by 64 lowercase hex digits."""


class SignatureMismatch(SignatureError):
    """The header is well formed but does not sign this body with this secret."""


def serialize(payload: Mapping[str, Any]) -> bytes:
    """Encode a webhook payload as Meta does: compact JSON, non-ASCII as ``\\uXXXX``.

    Keys keep their order; ``/`` is not escaped; NaN and infinities are refused
    because they are not JSON.
    """
    return _ENCODER.encode(payload).encode("ascii")


# One encoder for every body: ``json.dumps`` with options builds a new one per call.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def _digest(body: bytes, app_secret: str | bytes) -> str:
    key = app_secret.encode("utf-8") if isinstance(app_secret, str) else app_secret
    if not key:
        raise ValueError("the app secret is empty; a webhook can't be signed or checked with it")
    return hmac.digest(key, body, hashlib.sha256).hex()


def sign(body: bytes, app_secret: str | bytes) -> str:
    """Return the X-Hub-Signature-256 value for ``body``: ``sha256=<lowercase hex>``."""
    return _PREFIX + _digest(body, app_secret)


def verify(body: bytes, header: str | None, app_secret: str | bytes) -> None:
    """Check that ``header`` signs ``body`` with ``app_secret``; raise ``SignatureError`` if not.

    The comparison runs in constant time. Each failure has its own subclass
    and message: missing header, malformed header, mismatch.
    """
    expected = _digest(body, app_secret)
    if header is None or header == "":
        raise SignatureMissing(f"the webhook has no {SIGNATURE_HEADER} header")
    if not header.startswith(_PREFIX):
        raise SignatureMalformed(f"{SIGNATURE_HEADER} does not start with {_PREFIX!r}")
    given = header[len(_PREFIX) :]
    if not _HEX_DIGEST.fullmatch(given):
        raise SignatureMalformed(
            f"{SIGNATURE_HEADER} is not {_PREFIX!r} followed by 64 lowercase hex digits"
        )
    if not hmac.compare_digest(given, expected):
        raise SignatureMismatch(
            f"{SIGNATURE_HEADER} does not match the body (wrong app secret, or the body changed)"
        )


def is_valid(body: bytes, header: str | None, app_secret: str | bytes) -> bool:
    """Tell whether ``header`` signs ``body`` with ``app_secret``."""
    try:
        verify(body, header, app_secret)
    except SignatureError:
        return False
    return True


class SignedBody:
    """A webhook body serialized once, with its signature; resend the same object to redeliver.

    ``SignedBody(body, signature)``, frozen, equal when both are. A well-formed
    signature (``sha256=`` and 64 lowercase hex digits) is kept as its 32
    bytes and written out when read: a run keeps the signed body of every
    webhook it delivered, and the text takes twice the room. Any other
    signature is kept as given.
    """

    __slots__ = ("_body", "_mac")
    __match_args__ = ("body", "signature")

    _body: bytes
    _mac: bytes | str

    def __init__(self, body: bytes, signature: str) -> None:
        object.__setattr__(self, "_body", body)
        packed: bytes | str = signature
        if signature.startswith(_PREFIX) and _HEX_DIGEST.fullmatch(signature, len(_PREFIX)):
            packed = bytes.fromhex(signature[len(_PREFIX) :])
        object.__setattr__(self, "_mac", packed)

    @property
    def body(self) -> bytes:
        """The bytes POSTed, exactly as signed."""
        return self._body

    @property
    def signature(self) -> str:
        """The X-Hub-Signature-256 value: ``sha256=`` and the lowercase hex HMAC of ``body``."""
        mac = self._mac
        return mac if isinstance(mac, str) else _PREFIX + mac.hex()

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, SignedBody)
        return (self.body, self.signature) == (other.body, other.signature)

    def __hash__(self) -> int:
        return hash((self.body, self.signature))

    def __repr__(self) -> str:
        return f"SignedBody(body={self.body!r}, signature={self.signature!r})"

    def __reduce__(self) -> tuple[type[SignedBody], tuple[bytes, str]]:
        return (SignedBody, (self.body, self.signature))

    @classmethod
    def create(cls, payload: Mapping[str, Any] | bytes, app_secret: str | bytes) -> SignedBody:
        """Serialize ``payload`` (unless it is already bytes) and sign the result."""
        body = payload if isinstance(payload, bytes) else serialize(payload)
        return cls(body=body, signature=sign(body, app_secret))

    def headers(self) -> dict[str, str]:
        """The headers of the POST carrying this body."""
        return {"Content-Type": "application/json", SIGNATURE_HEADER: self.signature}

    def verify(self, app_secret: str | bytes) -> None:
        """Check the signature against ``app_secret``; raise ``SignatureError`` if it fails."""
        verify(self.body, self.signature, app_secret)
