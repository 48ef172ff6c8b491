"""X-Hub-Signature-256: serialization, signing and verification, checked against openssl."""

from __future__ import annotations

import copy
import dataclasses
import gc
import json
import os
import pickle
import shutil
import subprocess
import tracemalloc
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from channels.whatsapp.signing import (
    SIGNATURE_HEADER,
    SignatureMalformed,
    SignatureMismatch,
    SignatureMissing,
    SignedBody,
    is_valid,
    serialize,
    sign,
    verify,
)
from harness.exceptions import ChannelError, SignatureError

SECRET = "s3cr3t-app-secret"

# Computed once, independently of this code, with:
#   printf '%s' "$BODY" | openssl dgst -sha256 -hmac "s3cr3t-app-secret"
VECTOR_BODY = (
    b'{"object":"whatsapp_business_account","entry":[{"id":"1029384756473829","changes":'
    b'[{"value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":'
    b'"15550001111","phone_number_id":"100200300400500"},"messages":[{"from":"5511987654321",'
    b'"id":"wamid.SIM_IN_1","timestamp":"1767225600","type":"text","text":{"body":'
    b'"Ol\\u00e1 \\ud83d\\udc4d"}}]},"field":"messages"}]}]}'
)
VECTOR_SIGNATURE = "sha256=b851b860c87b1d0b2cb4a4c688abb6a386d29e451da5835f2358d493ab9a4817"

VECTOR_PAYLOAD: dict[str, Any] = {
    "object": "whatsapp_business_account",
    "entry": [
        {
            "id": "1029384756473829",
            "changes": [
                {
                    "value": {
                        "messaging_product": "whatsapp",
                        "metadata": {
                            "display_phone_number": "15550001111",
                            "phone_number_id": "100200300400500",
                        },
                        "messages": [
                            {
                                "from": "5511987654321",
                                "id": "wamid.SIM_IN_1",
                                "timestamp": "1767225600",
                                "type": "text",
                                "text": {"body": "Olá 👍"},
                            }
                        ],
                    },
                    "field": "messages",
                }
            ],
        }
    ],
}


def _openssl_signature(body: bytes, secret: str) -> str:
    """The header value openssl computes for ``body``, fed through printf as the docs show."""
    openssl = shutil.which("openssl")
    if openssl is None:
        message = "openssl is not installed, so there is no independent HMAC to compare with"
        if os.environ.get("HARNESS_REQUIRE_OPENSSL"):
            pytest.fail(message + " (CI installs it)")
        pytest.skip(message)
    result = subprocess.run(
        ["sh", "-c", 'printf "%s" "$BODY" | openssl dgst -sha256 -hmac "$SECRET"'],
        env={"BODY": body.decode("ascii"), "SECRET": secret, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        check=True,
        text=True,
    )
    return "sha256=" + result.stdout.strip().rsplit(" ", 1)[-1]


def test_hard_coded_vector() -> None:
    assert sign(VECTOR_BODY, SECRET) == VECTOR_SIGNATURE
    verify(VECTOR_BODY, VECTOR_SIGNATURE, SECRET)


def test_serialize_reproduces_the_vector_body() -> None:
    assert serialize(VECTOR_PAYLOAD) == VECTOR_BODY
    assert SignedBody.create(VECTOR_PAYLOAD, SECRET).signature == VECTOR_SIGNATURE


@pytest.mark.parametrize(
    ("body", "secret"),
    [
        pytest.param(VECTOR_BODY, SECRET, id="vector"),
        pytest.param(serialize({"text": {"body": "hola"}}), "abc", id="ascii"),
        pytest.param(
            serialize({"text": {"body": "São Paulo, 東京, Ελλάδα 🎉"}}), SECRET, id="non-ascii"
        ),
        pytest.param(
            serialize({"url": "https://lookaside.fbsbx.com/a/?mid=1&x=2"}), "k", id="slashes"
        ),
        pytest.param(b"{}", "p\u00e4ss w\u00f6rd", id="non-ascii-secret"),
    ],
)
def test_signature_matches_openssl(body: bytes, secret: str) -> None:
    assert sign(body, secret) == _openssl_signature(body, secret)


def test_serialize_is_compact_ascii_and_keeps_key_order() -> None:
    body = serialize({"z": 1, "a": [1, 2], "text": "é👍", "url": "https://x.example/a/b"})
    assert body == b'{"z":1,"a":[1,2],"text":"\\u00e9\\ud83d\\udc4d","url":"https://x.example/a/b"}'


def test_serialize_refuses_nan() -> None:
    with pytest.raises(ValueError, match="JSON"):
        serialize({"latitude": float("nan")})


def test_signature_is_sha256_prefix_and_lowercase_hex() -> None:
    signature = sign(b"payload", SECRET)
    assert signature.startswith("sha256=")
    digest = signature.removeprefix("sha256=")
    assert len(digest) == 64
    assert digest == digest.lower()
    int(digest, 16)


def test_bytes_and_text_secrets_agree() -> None:
    assert sign(b"x", "clé") == sign(b"x", "clé".encode())


@pytest.mark.parametrize("secret", ["", b""])
def test_empty_secret_is_refused(secret: str | bytes) -> None:
    with pytest.raises(ValueError, match="app secret is empty"):
        sign(b"x", secret)
    with pytest.raises(ValueError, match="app secret is empty"):
        verify(b"x", sign(b"x", "k"), secret)


@pytest.mark.parametrize("header", [None, ""])
def test_missing_header(header: str | None) -> None:
    with pytest.raises(SignatureMissing, match="no X-Hub-Signature-256 header"):
        verify(VECTOR_BODY, header, SECRET)


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        (VECTOR_SIGNATURE.removeprefix("sha256="), "does not start with 'sha256='"),
        ("sha1=" + "0" * 40, "does not start with 'sha256='"),
        ("SHA256=" + "0" * 64, "does not start with 'sha256='"),
        ("sha256=" + "0" * 63, "64 lowercase hex digits"),
        ("sha256=" + "g" * 64, "64 lowercase hex digits"),
        (VECTOR_SIGNATURE.upper().replace("SHA256=", "sha256="), "64 lowercase hex digits"),
        (VECTOR_SIGNATURE + " ", "64 lowercase hex digits"),
    ],
)
def test_malformed_header(header: str, reason: str) -> None:
    with pytest.raises(SignatureMalformed, match=reason):
        verify(VECTOR_BODY, header, SECRET)


def test_mismatch_on_other_secret_or_changed_body() -> None:
    with pytest.raises(SignatureMismatch, match="does not match the body"):
        verify(VECTOR_BODY, VECTOR_SIGNATURE, "another-secret")
    with pytest.raises(SignatureMismatch):
        verify(VECTOR_BODY + b" ", VECTOR_SIGNATURE, SECRET)


def test_signature_errors_belong_to_the_harness_tree() -> None:
    for cls in (SignatureMissing, SignatureMalformed, SignatureMismatch):
        assert issubclass(cls, SignatureError)
        assert issubclass(cls, ChannelError)
        assert issubclass(cls, ValueError)


def test_is_valid() -> None:
    assert is_valid(VECTOR_BODY, VECTOR_SIGNATURE, SECRET)
    assert not is_valid(VECTOR_BODY, None, SECRET)
    assert not is_valid(VECTOR_BODY, "sha256=nothex", SECRET)
    assert not is_valid(VECTOR_BODY, VECTOR_SIGNATURE, "wrong")


def test_signed_body_headers_and_redelivery() -> None:
    signed = SignedBody.create(VECTOR_PAYLOAD, SECRET)
    assert signed.headers() == {
        "Content-Type": "application/json",
        SIGNATURE_HEADER: VECTOR_SIGNATURE,
    }
    signed.verify(SECRET)
    # Signing the same payload again gives the identical bytes and signature.
    assert SignedBody.create(VECTOR_PAYLOAD, SECRET) == signed
    with pytest.raises(dataclasses.FrozenInstanceError):
        signed.body = b"{}"  # type: ignore[misc]  # frozen on purpose


@given(body=st.binary(max_size=64), secret=st.binary(min_size=1, max_size=16))
def test_a_signed_body_gives_back_the_signature_it_was_given(body: bytes, secret: bytes) -> None:
    signature = sign(body, secret)
    signed = SignedBody(body, signature)
    assert (signed.body, signed.signature) == (body, signature)
    assert signed == SignedBody.create(body, secret)
    assert hash(signed) == hash(SignedBody(body, signature))
    assert repr(signed) == f"SignedBody(body={body!r}, signature={signature!r})"
    assert pickle.loads(pickle.dumps(signed)) == signed
    assert copy.deepcopy(signed) == signed
    match signed:
        case SignedBody(kept, mac):
            assert (kept, mac) == (body, signature)
    assert signed != SignedBody(body, signature.upper())  # not well formed: kept as given
    assert SignedBody(body, signature.upper()).signature == signature.upper()
    assert SignedBody(body, "sha256=nothex").signature == "sha256=nothex"
    with pytest.raises(dataclasses.FrozenInstanceError):
        signed.signature = "sha256=" + "0" * 64  # type: ignore[misc]  # frozen on purpose


def test_a_signed_body_keeps_its_signature_as_bytes_not_text() -> None:
    body = serialize(VECTOR_PAYLOAD)
    bodies = [SignedBody.create(body, SECRET) for _ in range(200)]  # first-use caches
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        bodies = [SignedBody.create(body, SECRET) for _ in range(2000)]
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert all(b.signature == VECTOR_SIGNATURE for b in bodies)
    # The object and the 32 bytes of the HMAC (about 115 bytes); as the header's 71
    # characters, the signature alone takes 120.
    assert (after - before) / len(bodies) < 150


def test_signed_body_from_bytes_signs_them_as_given() -> None:
    raw = b'{"a": 1}'  # not our serialization: signed exactly as given
    signed = SignedBody.create(raw, SECRET)
    assert signed.body == raw
    assert signed.signature == sign(raw, SECRET)
    with pytest.raises(SignatureMismatch):
        SignedBody(VECTOR_BODY, sign(raw, SECRET)).verify(SECRET)


secrets = st.text(min_size=1, max_size=64) | st.binary(min_size=1, max_size=64)


@given(body=st.binary(max_size=2048), secret=secrets)
def test_sign_verify_round_trip(body: bytes, secret: str | bytes) -> None:
    verify(body, sign(body, secret), secret)
    assert is_valid(body, sign(body, secret), secret)


@given(body=st.binary(min_size=1, max_size=512), secret=secrets, data=st.data())
def test_any_bit_flip_in_the_body_fails(
    body: bytes, secret: str | bytes, data: st.DataObject
) -> None:
    header = sign(body, secret)
    index = data.draw(st.integers(0, len(body) - 1))
    bit = data.draw(st.integers(0, 7))
    flipped = bytearray(body)
    flipped[index] ^= 1 << bit
    with pytest.raises(SignatureMismatch):
        verify(bytes(flipped), header, secret)


@given(body=st.binary(max_size=512), secret=secrets, data=st.data())
def test_any_bit_flip_in_the_signature_fails(
    body: bytes, secret: str | bytes, data: st.DataObject
) -> None:
    header = sign(body, secret)
    index = data.draw(st.integers(0, len(header) - 1))
    bit = data.draw(st.integers(0, 7))
    flipped = header[:index] + chr(ord(header[index]) ^ (1 << bit)) + header[index + 1 :]
    with pytest.raises(SignatureError):
        verify(body, flipped, secret)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=30,
)


@given(payload=st.dictionaries(st.text(), json_values, max_size=8))
def test_serialize_is_deterministic_ascii_json(payload: dict[str, Any]) -> None:
    body = serialize(payload)
    assert body == serialize(payload)
    assert body.isascii()
    assert json.loads(body) == payload
    assert sign(body, SECRET) == sign(serialize(payload), SECRET)
