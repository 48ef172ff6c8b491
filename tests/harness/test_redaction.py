"""Redaction: secrets are masked by key, by shape and by value; token counts are not."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import harness.redaction
from harness.redaction import MIN_SUBSTRING, REDACTED, Redactor, is_sensitive_key, redact


def test_all_is_sorted() -> None:
    # isort order, as ruff keeps it: CONSTANTS, then Classes, then functions.
    names = harness.redaction.__all__
    assert names == sorted(names, key=lambda n: (not n.isupper(), not n[0].isupper(), n))


@pytest.mark.parametrize(
    "key",
    [
        "Authorization",
        "AUTHORIZATION",
        "authorization",
        "Proxy-Authorization",
        "x-api-key",
        "X-API-Key",
        "api_key",
        "apiKey",
        "ANTHROPIC_API_KEY",
        "openai.api-key",
        "access_token",
        "accessToken",
        "ACCESS_TOKEN",
        "app_secret",
        "appSecret",
        "client_secret",
        "verify_token",
        "hub.verify_token",
        "refresh_token",
        "token",
        "password",
        "db_password",
        "secret",
        "Cookie",
    ],
)
def test_sensitive_keys_are_redacted(key: str) -> None:
    assert is_sensitive_key(key)
    assert redact({key: "s3cr3t-value", "other": "kept"}) == {key: REDACTED, "other": "kept"}


@pytest.mark.parametrize(
    "key",
    [
        "input_tokens",
        "output_tokens",
        "max_tokens",
        "maxTokens",
        "cache_read_input_tokens",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.request.max_tokens",
        "tokens",
        "token_count",
        "secret_name",
        "key",
        "wamid",
        "x-hub-signature-256",
    ],
)
def test_counts_and_ordinary_keys_survive(key: str) -> None:
    assert not is_sensitive_key(key)
    assert redact({key: 1234}) == {key: 1234}
    assert redact({key: "abc-123"}) == {key: "abc-123"}


def test_redaction_recurses_through_dicts_lists_and_tuples() -> None:
    data = {
        "request": {
            "headers": {"Authorization": "Bearer EAAGabc123", "Content-Type": "application/json"},
            "json": {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 512},
        },
        "pairs": [("x-api-key", "sk-ant-123"), ("accept", "*/*")],
        "usage": {"input_tokens": 12, "output_tokens": 34},
    }
    assert redact(data) == {
        "request": {
            "headers": {"Authorization": REDACTED, "Content-Type": "application/json"},
            "json": {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 512},
        },
        # A pair is not a key: its value is only masked if it looks like a secret by itself.
        "pairs": [("x-api-key", "sk-ant-123"), ("accept", "*/*")],
        "usage": {"input_tokens": 12, "output_tokens": 34},
    }


def test_any_value_under_a_sensitive_key_is_replaced_but_empty_ones_are_kept() -> None:
    data = {"secret": {"nested": "x"}, "password": 1234, "token": None, "access_token": ""}
    assert redact(data) == {
        "secret": REDACTED,
        "password": REDACTED,
        "token": None,
        "access_token": "",
    }


def test_bearer_credentials_in_strings_are_masked() -> None:
    assert redact("Authorization: Bearer EAAG1234abcd") == f"Authorization: Bearer {REDACTED}"
    assert redact(["authorization", "bearer sk-ant-api03-xyz"]) == [
        "authorization",
        f"bearer {REDACTED}",
    ]
    assert redact("BEARER abcdefghijklmnopqrstuvwxyz") == f"BEARER {REDACTED}"


def test_prose_mentioning_a_bearer_is_left_alone() -> None:
    text = "I am the bearer of bad news, and the Bearer instruments are gone"
    assert redact(text) == text


def test_sensitive_query_parameters_are_masked() -> None:
    url = "https://graph.facebook.com/v21.0/me?fields=id&access_token=EAAGxyz123&max_tokens=5"
    assert redact(url) == (
        f"https://graph.facebook.com/v21.0/me?fields=id&access_token={REDACTED}&max_tokens=5"
    )
    handshake = "/webhook?hub.mode=subscribe&hub.verify_token=my-verify&hub.challenge=42"
    assert redact(handshake) == (
        f"/webhook?hub.mode=subscribe&hub.verify_token={REDACTED}&hub.challenge=42"
    )
    assert redact("client_secret=abc password=hunter2") == (
        f"client_secret={REDACTED} password={REDACTED}"
    )


def test_json_kept_as_text_is_masked_by_key() -> None:
    body = '{"access_token": "EAAG123", "token_type": "bearer", "expires_in": 3600}'
    assert json.loads(redact(body)) == {
        "access_token": REDACTED,
        "token_type": "bearer",
        "expires_in": 3600,
    }


def test_literal_secrets_are_masked_everywhere() -> None:
    redactor = Redactor({"appsecret-4242424242", "tok-0123456789abcdef", ""})
    data = {
        "text": "the secret is appsecret-4242424242!",
        "list": ["x", {"deep": "prefix-tok-0123456789abcdef-suffix"}],
        "appsecret-4242424242": "as a key",
        "count": 42,
    }
    assert redactor(data) == {
        "text": f"the secret is {REDACTED}!",
        "list": ["x", {"deep": f"prefix-{REDACTED}-suffix"}],
        REDACTED: "as a key",
        "count": 42,
    }


def test_a_longer_secret_is_masked_whole() -> None:
    short, long = "abcdefghijklmnop", "abcdefghijklmnopqrst"
    assert redact(f"key={long}", secrets=[short, long]) == f"key={REDACTED}"


def test_a_secret_too_short_to_be_a_credential_is_masked_only_as_a_whole_value() -> None:
    # Anyone could present "e" as a token; it must not blank out every "e" in a fixture.
    data = {"schema_version": 1, "text": "hello there", "token_used": "e", "list": ["e", "be"]}
    assert redact(data, secrets=["e"]) == {
        "schema_version": 1,
        "text": "hello there",
        "token_used": REDACTED,
        "list": [REDACTED, "be"],
    }
    assert len("e") < MIN_SUBSTRING


def test_empty_secrets_change_nothing() -> None:
    data = {"text": "hello", "n": [1, 2.5, True, None]}
    assert redact(data, secrets=["", ""]) == data


def test_redact_is_pure() -> None:
    data: dict[str, Any] = {"headers": {"Authorization": "Bearer abc123"}, "items": [{"a": 1}]}
    before = copy.deepcopy(data)
    out = redact(data)
    assert data == before
    assert out is not data
    assert out["items"] is not data["items"]


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=30)
    | st.sampled_from(["Bearer abc123", "a?access_token=xyz9&b=1", "max_tokens=5"])
)
json_keys = st.text(max_size=10) | st.sampled_from(
    ["Authorization", "x-api-key", "verify_token", "input_tokens", "max_tokens"]
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(json_keys, inner, max_size=4),
    max_leaves=15,
)


def _numbers(value: Any) -> list[int | float]:
    """Every number in JSON-like ``value``, at any depth."""
    if isinstance(value, dict):
        return [number for item in value.values() for number in _numbers(item)]
    if isinstance(value, list):
        return [number for item in value for number in _numbers(item)]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return [value]
    return []


@given(json_values)
def test_redaction_is_idempotent(value: Any) -> None:
    once = redact(value)
    assert redact(once) == once


@given(
    json_values,
    st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=MIN_SUBSTRING, max_size=40),
    st.lists(st.text(max_size=5), min_size=2, max_size=2),
)
def test_a_known_secret_never_survives(value: Any, secret: str, around: list[str]) -> None:
    assume(secret not in REDACTED)
    # Numbers pass through (redact's contract); one whose digits hold the secret is no leak.
    assume(not any(secret in json.dumps(number) for number in _numbers(value)))
    planted = {"data": value, "note": around[0] + secret + around[1], secret: [secret]}
    assert secret not in json.dumps(redact(planted, secrets=[secret]), ensure_ascii=False)
