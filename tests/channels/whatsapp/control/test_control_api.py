"""The control API under ``/_harness/``: what each endpoint takes, answers and refuses."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import jsonschema_rs
import pytest

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.control import control_app
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.clock import VirtualClock
from tests.channels.whatsapp.echo_bot import BotConfig, EchoBot

WA_ID = "5511987654321"


def _simulator(*, with_agent: bool = True) -> WhatsAppSimulator:
    config = SimulatorConfig()
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    if with_agent:
        bot = BotConfig(
            app_secret=config.app_secret,
            verify_token=config.verify_token,
            access_token=config.access_token,
            phone_number_id=config.phone_number_id,
            graph_url=config.public_url,
        )
        sim.connect(EchoBot(bot, sim.graph_client()).app())
    sim.add_user(WA_ID, "Ana")
    return sim


@pytest.fixture
async def sim() -> AsyncIterator[WhatsAppSimulator]:
    simulator = _simulator()
    yield simulator
    await simulator.aclose()


@pytest.fixture
async def client(sim: WhatsAppSimulator) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=control_app(sim))
    async with httpx.AsyncClient(transport=transport, base_url="http://sim") as http:
        yield http


async def refused(response: httpx.Response, status: int) -> str:
    """The message of a control error answer, after checking its status and shape."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message"}
    message: str = body["error"]["message"]
    return message


# -- what the endpoints do ---------------------------------------------------------


async def test_a_registered_user_is_answered_with_its_ids(client: httpx.AsyncClient) -> None:
    answer = await client.post("/_harness/users", json={"wa_id": "15550001111", "name": "Bo"})
    assert answer.status_code == 201
    body = answer.json()
    assert (body["wa_id"], body["name"]) == ("15550001111", "Bo")
    assert body["user_id"].startswith("US.")
    by_bsuid = await client.post("/_harness/users", json={"user_id": "BR.42"})
    # no name given: a profile name all the same, as every WhatsApp user has one
    assert by_bsuid.json() == {
        "wa_id": None,
        "user_id": "BR.42",
        "name": "User 42",
        "on_whatsapp": True,
    }


async def test_inbound_text_reaches_the_agent_and_its_reply_the_outbox(
    client: httpx.AsyncClient,
) -> None:
    answer = await client.post("/_harness/inbound", json={"user": WA_ID, "text": "hello"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["wamid"].startswith("wamid.")
    outbox = (await client.get("/_harness/outbox")).json()["messages"]
    assert [m["text"]["body"] for m in outbox if m.get("type") == "text"] == ["echo: hello"]


async def test_inbound_takes_a_whole_message_object(client: httpx.AsyncClient) -> None:
    message = {"type": "location", "location": {"latitude": 1.5, "longitude": 2.5}}
    answer = await client.post("/_harness/inbound", json={"user": WA_ID, "message": message})
    assert answer.status_code == 200, answer.text


async def test_a_new_phone_number_may_write_in(
    client: httpx.AsyncClient, sim: WhatsAppSimulator
) -> None:
    answer = await client.post("/_harness/inbound", json={"user": "15559990000", "text": "hi"})
    assert answer.status_code == 200, answer.text
    assert sim.user("15559990000").wa_id == "15559990000"


async def test_a_tap_picks_a_button_of_the_last_menu(client: httpx.AsyncClient) -> None:
    await client.post("/_harness/inbound", json={"user": WA_ID, "text": "menu"})
    answer = await client.post("/_harness/tap", json={"user": WA_ID, "choice": "Keep"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["wamid"].startswith("wamid.")


async def test_redeliver_sends_the_last_message_again(client: httpx.AsyncClient) -> None:
    first = (await client.post("/_harness/inbound", json={"user": WA_ID, "text": "x"})).json()
    again = await client.post("/_harness/redeliver", json={"user": WA_ID})
    assert again.json() == {"wamid": first["wamid"]}
    by_id = await client.post("/_harness/redeliver", json={"wamid": first["wamid"]})
    assert by_id.json() == {"wamid": first["wamid"]}


async def test_advance_moves_the_clock(client: httpx.AsyncClient) -> None:
    before = (await client.get("/_harness/clock")).json()["now"]
    moved = await client.post("/_harness/advance", json={"duration": "25h"})
    assert moved.status_code == 200
    assert moved.json()["now"] > before
    assert (await client.get("/_harness/clock")).json() == moved.json()


async def test_events_are_read_from_an_index(client: httpx.AsyncClient) -> None:
    await client.post("/_harness/inbound", json={"user": WA_ID, "text": "x"})
    everything = (await client.get("/_harness/events")).json()
    later = (await client.get("/_harness/events", params={"since": 2})).json()
    assert later["events"] == everything["events"][2:]
    assert later["next"] == everything["next"] == len(everything["events"])


# -- what they refuse (400: bad input; 409: not possible now) -----------------------


# (path, body, message, the OpenAPI document refuses it too)
BAD_FIELDS: list[tuple[str, dict[str, Any], str, bool]] = [
    ("/_harness/users", {"name": "Bo"}, "give wa_id, user_id (BSUID) or both", True),
    ("/_harness/inbound", {"text": "hi"}, "field 'user' is required", True),
    (
        "/_harness/inbound",
        {"user": 5511987654321, "text": "hi"},
        "field 'user' must be a str",
        True,
    ),
    ("/_harness/inbound", {"user": WA_ID}, "field 'text' is required", True),
    ("/_harness/inbound", {"user": WA_ID, "text": ["hi"]}, "field 'text' must be a str", True),
    ("/_harness/inbound", {"user": WA_ID, "message": "hi"}, "field 'message' must be a dict", True),
    ("/_harness/tap", {"user": WA_ID}, "field 'choice' is required", True),
    ("/_harness/tap", {"user": WA_ID, "choice": 1}, "field 'choice' must be a str", True),
    ("/_harness/redeliver", {"wamid": 7}, "field 'wamid' must be a str", True),
    ("/_harness/redeliver", {}, "redeliver needs a wamid or a user", False),
    ("/_harness/advance", {}, "field 'duration' is required", True),
    ("/_harness/advance", {"duration": 90}, "field 'duration' must be a str", True),
    ("/_harness/advance", {"duration": "-5m"}, "field 'duration' can't be negative", False),
]


@pytest.mark.parametrize(("path", "body", "message", "shape"), BAD_FIELDS)
async def test_bad_fields_answer_400_naming_the_field(
    client: httpx.AsyncClient, path: str, body: dict[str, Any], message: str, shape: bool
) -> None:
    assert await refused(await client.post(path, json=body), 400) == message


async def test_a_duration_that_does_not_parse_is_named(client: httpx.AsyncClient) -> None:
    message = await refused(await client.post("/_harness/advance", json={"duration": "soon"}), 400)
    assert message.startswith("bad duration 'soon'")


async def test_an_unknown_user_name_is_refused(client: httpx.AsyncClient) -> None:
    answer = await client.post("/_harness/inbound", json={"user": "ana", "text": "hi"})
    assert (await refused(answer, 400)).startswith("no simulated user 'ana'")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"{", "the body is not valid JSON: "),
        (b"[1]", "the body must be a JSON object"),
        (b'"text"', "the body must be a JSON object"),
    ],
)
async def test_a_body_that_is_not_a_json_object_answers_400(
    client: httpx.AsyncClient, raw: bytes, message: str
) -> None:
    answer = await client.post("/_harness/inbound", content=raw)
    assert (await refused(answer, 400)).startswith(message)


async def test_since_must_be_a_count(client: httpx.AsyncClient) -> None:
    answer = await client.get("/_harness/events", params={"since": "-1"})
    assert await refused(answer, 400) == "query parameter 'since' must be a non-negative integer"


async def test_a_tap_with_nothing_to_tap_answers_409(client: httpx.AsyncClient) -> None:
    answer = await client.post("/_harness/tap", json={"user": WA_ID, "choice": "Yes"})
    assert "no buttons or list to tap" in await refused(answer, 409)


async def test_an_inbound_message_without_an_agent_answers_409() -> None:
    sim = _simulator(with_agent=False)
    transport = httpx.ASGITransport(app=control_app(sim))
    async with httpx.AsyncClient(transport=transport, base_url="http://sim") as client:
        answer = await client.post("/_harness/inbound", json={"user": WA_ID, "text": "hi"})
        assert "no agent to deliver to" in await refused(answer, 409)
    await sim.aclose()


# -- the document describes them ----------------------------------------------------


async def test_the_document_describes_the_control_endpoints(client: httpx.AsyncClient) -> None:
    document = (await client.get("/openapi.json")).json()
    control = {path for path in document["paths"] if path.startswith("/_harness/")}
    assert control == {
        "/_harness/users",
        "/_harness/inbound",
        "/_harness/tap",
        "/_harness/redeliver",
        "/_harness/advance",
        "/_harness/clock",
        "/_harness/outbox",
        "/_harness/events",
        "/_harness/conversation",
    }
    for path in control:
        for operation in document["paths"][path].values():
            for ref in _refs(operation):
                assert (
                    ref.removeprefix("#/components/schemas/") in document["components"]["schemas"]
                )


def _refs(value: object) -> list[str]:
    if isinstance(value, dict):
        found = [value["$ref"]] if isinstance(value.get("$ref"), str) else []
        return found + [ref for item in value.values() for ref in _refs(item)]
    if isinstance(value, list):
        return [ref for item in value for ref in _refs(item)]
    return []


def _request_schema(document: dict[str, Any], path: str) -> jsonschema_rs.Validator:
    schema = document["paths"][path]["post"]["requestBody"]["content"]["application/json"]
    root = {**schema["schema"], "components": document["components"]}
    return jsonschema_rs.Draft202012Validator(root)


@pytest.mark.parametrize(("path", "body", "message", "shape"), BAD_FIELDS)
async def test_the_document_refuses_what_the_endpoint_refuses_for_its_shape(
    client: httpx.AsyncClient, path: str, body: dict[str, Any], message: str, shape: bool
) -> None:
    """One model checks each body and describes it: a badly shaped body fails both ways."""
    document = (await client.get("/openapi.json")).json()
    assert _request_schema(document, path).is_valid(body) is not shape


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/_harness/users", {"wa_id": "15550001111", "name": "Bo"}),
        ("/_harness/users", {"user_id": "BR.42", "wa_id": None}),
        ("/_harness/inbound", {"user": WA_ID, "text": "hello"}),
        ("/_harness/inbound", {"user": WA_ID, "message": {"type": "text"}}),
        ("/_harness/tap", {"user": WA_ID, "choice": "Keep"}),
        ("/_harness/redeliver", {"user": WA_ID}),
        ("/_harness/advance", {"duration": "25h"}),
    ],
)
async def test_the_document_takes_the_bodies_the_endpoints_take(
    client: httpx.AsyncClient, path: str, body: dict[str, Any]
) -> None:
    document = (await client.get("/openapi.json")).json()
    assert _request_schema(document, path).is_valid(body)
