"""``GET /_harness/conversation``: everyone's conversation, or one user's with ``?user=``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from channels.whatsapp.control import control_app
from tests.channels.whatsapp.control.test_control_api import WA_ID, _simulator, refused

BEN = "15550002222"


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    sim = _simulator()  # Ana, at WA_ID
    transport = httpx.ASGITransport(app=control_app(sim))
    async with httpx.AsyncClient(transport=transport, base_url="http://sim") as http:
        await http.post("/_harness/users", json={"wa_id": BEN, "name": "Ben"})
        await http.post("/_harness/inbound", json={"user": WA_ID, "text": "hi, Ana here"})
        await http.post("/_harness/inbound", json={"user": BEN, "text": "and Ben"})
        yield http
    await sim.aclose()


async def _read(client: httpx.AsyncClient, **params: str) -> dict[str, Any]:
    answer = await client.get("/_harness/conversation", params=params)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def _users(conversation: dict[str, Any]) -> set[str | None]:
    return {event["user"] for event in conversation["events"]}


async def test_without_a_user_the_conversation_is_everyones(client: httpx.AsyncClient) -> None:
    everyone = await _read(client)
    assert [p["name"] for p in everyone["participants"]] == ["Ana", "Ben"]
    assert _users(everyone) >= {WA_ID, BEN}
    assert [turn["user"] for turn in everyone["turns"]] == [WA_ID, BEN]


async def test_a_user_reads_their_own_conversation_alone(client: httpx.AsyncClient) -> None:
    ana = await _read(client, user=WA_ID)
    assert [p["name"] for p in ana["participants"]] == ["Ana"]
    assert _users(ana) == {WA_ID}
    [turn] = ana["turns"]
    assert turn["user"] == WA_ID
    assert [m["text"] for m in turn["inbound"]] == ["hi, Ana here"]
    assert any(e["kind"] == "send" and e["text"] == "echo: hi, Ana here" for e in ana["events"])
    assert not any("Ben" in str(e.get("text")) for e in ana["events"])
    # by BSUID, the same conversation
    bsuid = ana["participants"][0]["user_id"]
    assert await _read(client, user=bsuid) == ana


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"usr": WA_ID},
            "query parameter 'usr' is not one /_harness/conversation takes (did you mean"
            " 'user'?); it takes 'user'",
        ),
        ({"since": "0"}, "query parameter 'since' is not one /_harness/conversation takes;"),
        (
            {"user": "15559990000"},
            "query parameter 'user': no simulated user '15559990000' (a wa_id or BSUID"
            " registered with POST /_harness/users, or that has written in)",
        ),
        ({"user": "Ana"}, "query parameter 'user': no simulated user 'Ana' ("),
        ({"user": ""}, "query parameter 'user': no simulated user '' ("),
        ({"user": [WA_ID, BEN]}, "query parameter 'user' is given 2 times: give one user"),
    ],
)
async def test_a_parameter_or_user_the_read_does_not_know_answers_400(
    client: httpx.AsyncClient, params: dict[str, Any], message: str
) -> None:
    answer = await client.get("/_harness/conversation", params=params)
    assert (await refused(answer, 400)).startswith(message)


async def test_the_document_describes_the_user_parameter(client: httpx.AsyncClient) -> None:
    document = (await client.get("/openapi.json")).json()
    operation = document["paths"]["/_harness/conversation"]["get"]
    assert [(p["name"], p["in"], p["required"]) for p in operation["parameters"]] == [
        ("user", "query", False)
    ]
    assert "400" in operation["responses"]
