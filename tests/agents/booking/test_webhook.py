"""The webhook app: handshake, signatures, dedupe, bursts, buttons, statuses, odd messages."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agents.booking import UNSUPPORTED_TEXT, StateStore, sign, verify_signature
from agents.booking.webhook import MissingSignature
from harness.clock import VirtualClock
from harness.exceptions import SignatureError, StoreUnavailable
from harness.store import MemoryStore
from tests.agents.booking.support import (
    SECRET,
    USER,
    Harness,
    button_payload,
    make_settings,
    message_payload,
    status_payload,
    text_payload,
)


@pytest.fixture
async def h() -> AsyncIterator[Harness]:
    harness = Harness()
    yield harness
    await harness.aclose()


async def test_handshake_answers_the_challenge_with_the_right_token(h: Harness) -> None:
    params = {
        "hub.mode": "subscribe",
        "hub.challenge": "1158201444",
        "hub.verify_token": "test-verify",
    }
    response = await h.client.get("/webhook", params=params)
    assert response.status_code == 200
    assert response.text == "1158201444"


@pytest.mark.parametrize(
    "params",
    [
        {"hub.mode": "subscribe", "hub.challenge": "1", "hub.verify_token": "wrong"},
        {"hub.mode": "unsubscribe", "hub.challenge": "1", "hub.verify_token": "test-verify"},
        {"hub.mode": "subscribe", "hub.challenge": "1"},
    ],
)
async def test_handshake_refuses_a_wrong_token_or_mode(h: Harness, params: dict[str, str]) -> None:
    response = await h.client.get("/webhook", params=params)
    assert response.status_code == 403
    assert "1" not in response.text


async def test_a_post_without_signature_is_401(h: Harness) -> None:
    body = json.dumps(text_payload("wamid.A", "hi")).encode()
    response = await h.client.post("/webhook", content=body)
    assert response.status_code == 401
    await h.run()
    assert h.graph.requests == []


@pytest.mark.parametrize("header", ["sha256=" + "0" * 64, "sha1=abc", "garbage"])
async def test_a_post_with_a_wrong_signature_is_403(h: Harness, header: str) -> None:
    body = json.dumps(text_payload("wamid.A", "hi")).encode()
    response = await h.client.post(
        "/webhook", content=body, headers={"X-Hub-Signature-256": header}
    )
    assert response.status_code == 403
    await h.run()
    assert h.graph.requests == []


async def test_a_body_signed_with_another_secret_is_403(h: Harness) -> None:
    response = await h.post(text_payload("wamid.A", "hi"), secret="not-the-secret")
    assert response.status_code == 403


def test_signature_matches_an_independent_hmac() -> None:
    # printf '%s' '{"a":1}' | openssl dgst -sha256 -hmac test-app-secret
    expected = "sha256=a9076adb7408d26443ef1902aaae098b7ab6b934eddfa6fc1338cd0153ddda4d"
    assert sign(SECRET, b'{"a":1}') == expected
    verify_signature(SECRET, b'{"a":1}', expected)
    with pytest.raises(SignatureError):
        verify_signature(SECRET, b'{"a":2}', expected)
    with pytest.raises(MissingSignature):
        verify_signature(SECRET, b"{}", None)


async def test_a_signed_body_that_is_not_json_is_400(h: Harness) -> None:
    body = b"not json"
    response = await h.client.post(
        "/webhook", content=body, headers={"X-Hub-Signature-256": sign(SECRET, body)}
    )
    assert response.status_code == 400


async def test_a_message_is_answered_after_the_debounce_and_marked_read(h: Harness) -> None:
    response = await h.post(text_payload("wamid.A", "hello"))
    assert response.status_code == 200
    await h.run(1.0)
    assert h.graph.messages == []  # still inside the debounce window
    await h.run(5.0)
    assert h.agent.idle
    [receipt] = h.graph.receipts
    assert receipt["message_id"] == "wamid.A"
    assert receipt["typing_indicator"] == {"type": "text"}
    [reply] = h.graph.messages
    assert reply["to"] == USER
    assert "Which day" in reply["text"]["body"]
    assert h.graph.headers[0]["authorization"] == "Bearer test-token"
    assert h.graph.urls[0] == "http://graph.test/v25.0/100200300400500/messages"


async def test_three_quick_messages_get_one_answer(h: Harness) -> None:
    for i, text in enumerate(["hi", "I'd like a table", "friday at 8pm"]):
        await h.post(text_payload(f"wamid.{i}", text))
        await h.run(1.0)
    await h.run(10.0)
    [reply] = h.graph.messages
    assert reply["type"] == "interactive"
    assert "Friday 2 January at 20:00" in reply["interactive"]["body"]["text"]
    [receipt] = h.graph.receipts
    assert receipt["message_id"] == "wamid.2"


async def test_a_proposal_comes_with_confirm_and_change_buttons(h: Harness) -> None:
    await h.post(text_payload("wamid.1", "a table on friday at 8pm please"))
    await h.run()
    [proposal] = h.graph.messages
    buttons = proposal["interactive"]["action"]["buttons"]
    assert [(b["reply"]["id"], b["reply"]["title"]) for b in buttons] == [
        ("confirm", "Confirm"),
        ("change", "Change"),
    ]
    assert all(len(b["reply"]["title"]) <= 20 for b in buttons)
    assert await h.agent.calendar.bookings_of(USER) == []


async def test_confirm_books_and_a_redelivered_confirm_is_dropped(h: Harness) -> None:
    await h.post(text_payload("wamid.1", "friday at 8pm"))
    await h.run()
    tap = button_payload("wamid.2", "confirm", "Confirm", context="wamid.OUT1")
    await h.post(tap)
    await h.run()
    await h.post(tap)  # Meta redelivers the identical update
    await h.run(30)
    bookings = await h.agent.calendar.bookings_of(USER)
    assert [b["slot"] for b in bookings] == ["20:00"]
    proposal, booked = h.graph.bodies()
    assert proposal.endswith("Shall I confirm it?")
    assert booked.startswith("Booked!")


async def test_no_dedupe_books_again_on_a_redelivered_confirm() -> None:
    h = Harness(settings=make_settings(regressions="no_dedupe"))
    try:
        await h.post(text_payload("wamid.1", "friday at 8pm"))
        await h.run()
        tap = button_payload("wamid.2", "confirm", "Confirm", context="wamid.OUT1")
        await h.post(tap)
        await h.run()
        await h.post(tap)
        await h.run(30)
        assert len(await h.agent.calendar.bookings_of(USER)) == 2
    finally:
        await h.aclose()


async def test_a_second_tap_on_confirm_does_not_book_twice(h: Harness) -> None:
    await h.post(text_payload("wamid.1", "friday at 8pm"))
    await h.run()
    await h.post(button_payload("wamid.2", "confirm", "Confirm", context="wamid.OUT1"))
    await h.run()
    await h.post(button_payload("wamid.3", "confirm", "Confirm", context="wamid.OUT1"))
    await h.run()
    assert len(await h.agent.calendar.bookings_of(USER)) == 1
    assert "already booked" in h.graph.bodies()[-1]


async def test_a_tap_on_an_older_proposal_does_not_confirm_a_newer_one(h: Harness) -> None:
    await h.post(text_payload("wamid.1", "friday at 8pm"))
    await h.run()
    await h.post(text_payload("wamid.2", "saturday at 8pm instead"))
    await h.run()
    await h.post(button_payload("wamid.3", "confirm", "Confirm", context="wamid.OUT1"))
    await h.run()
    assert await h.agent.calendar.bookings_of(USER) == []
    assert h.graph.messages[-1]["type"] == "interactive"  # asked again, with fresh buttons


async def test_unsupported_messages_get_a_polite_answer(h: Harness) -> None:
    kinds: list[dict[str, Any]] = [
        {"type": "image", "image": {"id": "1", "mime_type": "image/jpeg", "sha256": "x"}},
        {"type": "location", "location": {"latitude": 1.0, "longitude": 2.0}},
        {"type": "sticker", "sticker": {"id": "2", "mime_type": "image/webp"}},
        {"type": "reaction", "reaction": {"message_id": "wamid.OUT1", "emoji": "👍"}},
        {"type": "audio", "audio": {"id": "3", "mime_type": "audio/ogg"}},
        {"type": "unsupported", "unsupported": {"type": "poll"}, "errors": [{"code": 131051}]},
    ]
    for i, message in enumerate(kinds):
        await h.post(message_payload(f"wamid.{i}", message))
        await h.run()
    assert h.graph.bodies() == [UNSUPPORTED_TEXT] * len(kinds)


async def test_updates_for_another_phone_number_are_ignored(h: Harness) -> None:
    response = await h.post(text_payload("wamid.1", "hi", phone_number_id="999"))
    assert response.status_code == 200
    await h.run()
    assert h.graph.requests == []


async def test_failed_statuses_are_recorded_once_with_their_codes(h: Harness) -> None:
    error = {
        "code": 131047,
        "title": "Re-engagement message",
        "error_data": {"details": "more than 24 hours"},
    }
    payload = status_payload("wamid.OUT9", "failed", errors=[error])
    await h.post(payload)
    await h.post(payload)
    await h.post(status_payload("wamid.OUT9", "delivered"))
    await h.run()
    [failure] = await h.agent.states.failures(USER)
    assert (failure.wamid, failure.code, failure.details) == (
        "wamid.OUT9",
        131047,
        "more than 24 hours",
    )
    assert isinstance(h.agent.states, StateStore)
    assert h.graph.requests == []


class _Broken:
    async def create(self, **kwargs: Any) -> Any:
        raise RuntimeError("a bug in the model client")


async def test_a_failure_in_background_work_is_kept_for_the_caller() -> None:
    h = Harness(llm=_Broken())
    await h.post(text_payload("wamid.1", "hello"))
    await h.run()
    [error] = h.agent.errors
    assert "a bug in the model client" in str(error)
    await h.aclose(expect_errors=True)


@pytest.mark.parametrize("depth", [40, 1_000, 100_000])
async def test_a_signed_body_nested_absurdly_deep_is_400_not_a_crash(
    h: Harness, depth: int
) -> None:
    body = b'{"a":' * depth + b"1" + b"}" * depth
    response = await h.client.post(
        "/webhook", content=body, headers={"X-Hub-Signature-256": sign(SECRET, body)}
    )
    assert response.status_code == 400
    assert "nested" in response.text


async def test_a_message_holding_half_a_surrogate_pair_is_answered_once(h: Harness) -> None:
    # JSON can escape a lone surrogate; Python can't encode it as UTF-8 to store it.
    payload = text_payload("wamid.S", "a table \udfff for two")
    body = json.dumps(payload).encode()
    assert b"\\udfff" in body
    response = await h.client.post(
        "/webhook", content=body, headers={"X-Hub-Signature-256": sign(SECRET, body)}
    )
    assert response.status_code == 200
    await h.run()
    assert h.agent.errors == []
    assert len(h.graph.messages) == 1
    await h.post(payload)  # Meta's redelivery of it is still dropped
    await h.run()
    assert len(h.graph.messages) == 1


class _Flaky:
    """A model client that fails every time: each message leaves one background failure."""

    async def create(self, **kwargs: Any) -> Any:
        raise RuntimeError("down")


async def test_the_agent_keeps_only_its_latest_background_failures() -> None:
    h = Harness(llm=_Flaky())
    for n in range(130):
        await h.post(text_payload(f"wamid.{n}", "hello", user=f"55119{n:08d}"))
    await h.run()
    assert len(h.agent.errors) == 100
    await h.aclose(expect_errors=True)


def test_the_verify_token_never_reaches_the_servers_access_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    make_app = Harness  # building the app installs the filter on uvicorn's access log
    make_app()
    access = logging.getLogger("uvicorn.access")
    line = "/webhook?hub.mode=subscribe&hub.verify_token=s3cret-token&hub.challenge=42"
    with caplog.at_level(logging.INFO, logger="uvicorn.access"):
        access.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5", "GET", line, "1.1", 200)
    [record] = caplog.records
    assert "s3cret-token" not in record.getMessage()
    assert "hub.verify_token=[REDACTED]&hub.challenge=42" in record.getMessage()


class _StoreDownOnce(MemoryStore):
    """A store whose first increment fails, as Redis does when it restarts mid-request."""

    failed = False

    async def incr(self, key: str, amount: int = 1) -> int:
        if not self.failed:
            self.failed = True
            raise StoreUnavailable("Redis restarting")
        return await super().incr(key, amount)


async def test_a_message_the_agent_failed_to_take_in_is_taken_on_redelivery() -> None:
    clock = VirtualClock()
    h = Harness(clock=clock, store=_StoreDownOnce(clock=clock))
    payload = text_payload("wamid.R", "hello")
    await h.post(payload)
    await h.run()
    assert h.graph.messages == []  # lost this time ...
    await h.post(payload)  # ... so Meta's redelivery is not dropped as seen
    await h.run()
    assert len(h.graph.messages) == 1
    await h.aclose(expect_errors=True)
