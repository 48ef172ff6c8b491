"""The agent's Graph API client: request shapes, Meta's errors, rate-limit retries."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import httpx
import pytest

from agents.booking import GraphClient, GraphError
from harness.clock import VirtualClock


class _Meta:
    def __init__(self, *answers: httpx.Response | Exception) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []
        self.times: list[Any] = []
        self.clock: VirtualClock | None = None

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.clock is not None:
            self.times.append(self.clock.now())
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]


OK = httpx.Response(200, json={"messaging_product": "whatsapp", "messages": [{"id": "wamid.X"}]})


def _error(code: Any, status: int = 400) -> httpx.Response:
    return httpx.Response(
        status,
        json={
            "error": {
                "message": "m",
                "code": code,
                "error_data": {"details": "d"},
                "fbtrace_id": "F",
            }
        },
    )


def _client(meta: _Meta, clock: VirtualClock | None = None, **kw: Any) -> GraphClient:
    clock = clock or VirtualClock()
    meta.clock = clock
    http = httpx.AsyncClient(transport=httpx.MockTransport(meta))
    return GraphClient(http, clock, access_token="T", phone_number_id="123", **kw)


async def test_text_buttons_template_and_read_receipt_bodies() -> None:
    meta = _Meta(OK)
    graph = _client(meta, graph_url="http://graph.test/", api_version="v25.0")
    result = await graph.send_text("15551234567", "hello")
    assert result.wamid == "wamid.X"
    assert result.attempts == 1
    await graph.send_text("US.13491208655302741918", "hi")
    await graph.send_buttons("15551234567", "Keep 9am?", [("keep", "Keep"), ("move", "Move")])
    await graph.send_template("15551234567", "appointment_reminder", "en_US", ["Friday", "20:00"])
    await graph.mark_read("wamid.IN")
    text, bsuid, buttons, template, read = meta.bodies()
    assert text == {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": "15551234567",
        "type": "text",
        "text": {"preview_url": False, "body": "hello"},
    }
    assert bsuid["recipient"] == "US.13491208655302741918"
    assert "to" not in bsuid
    assert buttons["interactive"]["action"]["buttons"][1] == {
        "type": "reply",
        "reply": {"id": "move", "title": "Move"},
    }
    assert template["template"] == {
        "name": "appointment_reminder",
        "language": {"code": "en_US"},
        "components": [
            {
                "type": "body",
                "parameters": [
                    {"type": "text", "text": "Friday"},
                    {"type": "text", "text": "20:00"},
                ],
            }
        ],
    }
    assert read == {
        "messaging_product": "whatsapp",
        "status": "read",
        "message_id": "wamid.IN",
        "typing_indicator": {"type": "text"},
    }
    assert str(meta.requests[0].url) == "http://graph.test/v25.0/123/messages"
    assert meta.requests[0].headers["authorization"] == "Bearer T"


@pytest.mark.parametrize(
    "buttons",
    [
        [],
        [("a", "A"), ("b", "B"), ("c", "C"), ("d", "D")],
        [("a", "Same"), ("b", "Same")],
        [("a", "x" * 21)],
        [("", "Title")],
    ],
)
async def test_buttons_outside_metas_limits_are_refused_before_sending(
    buttons: list[tuple[str, str]],
) -> None:
    meta = _Meta(OK)
    with pytest.raises(ValueError, match=r"button"):
        await _client(meta).send_buttons("15551234567", "body", buttons)
    assert meta.requests == []


async def test_errors_are_read_from_metas_envelope() -> None:
    meta = _Meta(_error("131009"))
    with pytest.raises(GraphError) as caught:
        await _client(meta).send_text("15551234567", "x")
    error = caught.value
    assert (error.code, error.details, error.http_status, error.fbtrace_id) == (
        131009,
        "d",
        400,
        "F",
    )
    assert not error.retryable
    assert len(meta.requests) == 1


async def test_an_answer_that_is_not_metas_envelope_is_still_an_error() -> None:
    meta = _Meta(httpx.Response(502, text="<html>bad gateway</html>"))
    with pytest.raises(GraphError, match="502") as caught:
        await _client(meta).send_text("15551234567", "x")
    assert caught.value.code is None


async def test_a_network_failure_is_a_graph_error() -> None:
    meta = _Meta(httpx.ConnectError("refused"))
    with pytest.raises(GraphError, match="could not reach") as caught:
        await _client(meta).send_text("15551234567", "x")
    assert caught.value.code is None


@pytest.mark.parametrize("code", [131056, 130429])
async def test_rate_limits_back_off_4_to_the_x_seconds_then_give_up(code: int) -> None:
    clock = VirtualClock(auto_advance=True)
    start = clock.now()
    meta = _Meta(_error(code))
    with pytest.raises(GraphError) as caught:
        await _client(meta, clock, retries=3, retry_base=1.0).send_text("15551234567", "x")
    assert caught.value.code == code
    assert caught.value.retryable
    offsets = [(t - start) / timedelta(seconds=1) for t in meta.times]
    assert offsets == [0, 1, 5, 21]


async def test_a_rate_limit_that_clears_is_invisible_to_the_caller() -> None:
    clock = VirtualClock(auto_advance=True)
    meta = _Meta(_error(131056, 429), OK)
    result = await _client(meta, clock).send_text("15551234567", "x")
    assert result.wamid == "wamid.X"
    assert result.attempts == 2
