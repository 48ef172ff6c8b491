"""The control API under ``/_harness/``: what each endpoint takes, answers and refuses."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import jsonschema_rs
import pytest
from starlette.types import Message, Scope

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
    (
        "/_harness/clear",
        {"events_before": -1},
        "field 'events_before': Input should be greater than or equal to 0",
        True,
    ),
    (
        "/_harness/clear",
        {"outbox_before": "3"},
        "field 'outbox_before': Input should be a valid integer",
        True,
    ),
    ("/_harness/clear", {"messages": 1}, "field 'messages': Input should be a valid boolean", True),
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
        "/_harness/media",
        "/_harness/advance",
        "/_harness/clock",
        "/_harness/outbox",
        "/_harness/events",
        "/_harness/conversation",
        "/_harness/export",
        "/_harness/clear",
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


# -- a user's message, as Meta sends it ----------------------------------------------


async def test_a_reaction_names_the_agents_reply_by_reference(
    client: httpx.AsyncClient, sim: WhatsAppSimulator
) -> None:
    await client.post("/_harness/inbound", json={"user": WA_ID, "text": "hello"})
    await client.post("/_harness/inbound", json={"user": WA_ID, "text": "again"})
    first, last = [s.wamid for s in sim.conversation().replies(WA_ID)]
    bare = {"type": "reaction", "reaction": {"emoji": "👍"}}
    named = {"type": "reaction", "reaction": {"message_id": "reply 1", "emoji": "❤️"}}
    for message in (bare, named):
        answer = await client.post("/_harness/inbound", json={"user": WA_ID, "message": message})
        assert answer.status_code == 200, answer.text
    reactions = [m.body["reaction"] for m in sim.conversation().inbound(WA_ID)[-2:]]
    assert reactions == [
        {"message_id": last, "emoji": "👍"},
        {"message_id": first, "emoji": "❤️"},
    ]


async def test_a_list_reply_is_put_in_the_context_of_the_list_it_answers(
    client: httpx.AsyncClient, sim: WhatsAppSimulator
) -> None:
    await client.post("/_harness/inbound", json={"user": WA_ID, "text": "menu"})
    [buttons] = [s for s in sim.conversation().replies(WA_ID) if s.type == "interactive"]
    tap = {"type": "button_reply", "button_reply": {"id": "keep", "title": "Keep"}}
    message = {"type": "interactive", "interactive": tap}
    answer = await client.post("/_harness/inbound", json={"user": WA_ID, "message": message})
    assert answer.status_code == 200, answer.text
    delivered = sim.conversation().inbound(WA_ID)[-1].body
    assert delivered["context"] == {"from": sim.config.display_phone_number, "id": buttons.wamid}


# (message, what the 400 says)
REFUSED_MESSAGES: list[tuple[dict[str, Any], str]] = [
    (
        {"type": "interactive", "interactive": {"type": "list_reply", "list_reply": {"id": "a"}}},
        "invalid message at interactive.list_reply.title: Field required",
    ),
    (
        {"type": "interactive", "interactive": {"type": "list_reply"}},
        "invalid message at interactive.list_reply: required: the list_reply object",
    ),
    (
        {
            "type": "interactive",
            "interactive": {"type": "list_reply", "list_reply": {"id": "a", "title": "A"}},
        },
        "context: the agent has sent user 5511987654321 no buttons or list to answer",
    ),
    (
        {"type": "reaction", "reaction": {"message_id": "last reply", "emoji": "👍"}},
        "invalid message at reaction.message_id: 'last reply' is not a message reference: "
        "expected last_reply, reply N (the agent's N-th message, from 1) or a wamid",
    ),
    (
        {"type": "reaction", "reaction": {"emoji": "👍"}},
        "reaction.message_id: last_reply: the agent has sent this user no message yet",
    ),
    (
        {"type": "text", "text": {"body": "that"}, "context": {"id": "wamid.NOT_HERE"}},
        "invalid message at context.id: no message wamid.NOT_HERE in the chat with user "
        "5511987654321",
    ),
    (
        {"type": "image", "image": {"id": "123"}},
        "invalid message at image.id: no media '123' (upload the file first: "
        "POST /_harness/media; a user's media lasts 7 days)",
    ),
    ({"type": "selfie"}, "invalid message at type: expected a type Meta sends (text, interactive"),
]


@pytest.mark.parametrize(("message", "error"), REFUSED_MESSAGES)
async def test_a_message_meta_would_never_send_answers_400_saying_what_is_wrong(
    client: httpx.AsyncClient, message: dict[str, Any], error: str
) -> None:
    answer = await client.post("/_harness/inbound", json={"user": WA_ID, "message": message})
    assert (await refused(answer, 400)).startswith(error)


# -- media a user sends ------------------------------------------------------------


JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF a photo of the menu"


async def test_an_uploaded_file_reaches_the_agent_byte_for_byte(
    client: httpx.AsyncClient, sim: WhatsAppSimulator
) -> None:
    uploaded = await client.post(
        "/_harness/media", content=JPEG, headers={"Content-Type": "image/jpeg"}
    )
    assert uploaded.status_code == 201, uploaded.text
    media = uploaded.json()
    digest = base64.b64encode(hashlib.sha256(JPEG).digest()).decode()
    assert media == {
        "id": media["id"],
        "mime_type": "image/jpeg",
        "sha256": digest,
        "file_size": len(JPEG),
    }
    message = {"type": "image", "image": {"id": media["id"], "caption": "the menu"}}
    answer = await client.post("/_harness/inbound", json={"user": WA_ID, "message": message})
    assert answer.status_code == 200, answer.text
    image = sim.conversation().inbound(WA_ID)[-1].body["image"]
    assert image == {
        "id": media["id"],
        "mime_type": "image/jpeg",
        "sha256": digest,
        "caption": "the menu",
    }
    # the agent asked GET /{version}/{media-id}, then fetched the URL it was given
    assert sim.conversation().replies(WA_ID)[-1].text == f"got {len(JPEG)} bytes"


async def test_a_voice_note_and_a_named_document_keep_what_meta_reports(
    client: httpx.AsyncClient, sim: WhatsAppSimulator
) -> None:
    voice = await client.post(
        "/_harness/media", content=b"OggS voice", headers={"Content-Type": "audio/ogg; codecs=opus"}
    )
    pdf = await client.post(
        "/_harness/media?filename=menu.pdf",
        content=b"%PDF-1.7 menu",
        headers={"Content-Type": "application/pdf"},
    )
    for kind, upload in (("audio", voice), ("document", pdf)):
        message = {"type": kind, kind: {"id": upload.json()["id"]}}
        answer = await client.post("/_harness/inbound", json={"user": WA_ID, "message": message})
        assert answer.status_code == 200, answer.text
    bodies: list[dict[str, Any]] = [m.body for m in sim.conversation().inbound(WA_ID)[-2:]]
    audio, document = bodies
    assert (audio["audio"]["mime_type"], audio["audio"]["voice"]) == (
        "audio/ogg; codecs=opus",
        True,
    )
    assert document["document"]["filename"] == "menu.pdf"


@pytest.mark.parametrize(
    ("content_type", "size", "limit"),
    [
        ("image/png", 5 * 1024 * 1024 + 1, "5242880 bytes for image media"),
        ("audio/mpeg", 16 * 1024 * 1024 + 1, "16777216 bytes for audio media"),
        ("video/mp4", 16 * 1024 * 1024 + 1, "16777216 bytes for video media"),
        ("image/webp", 100 * 1024 + 1, "102400 bytes for a static sticker"),
    ],
)
async def test_a_file_over_whatsapps_limit_for_its_type_answers_413(
    client: httpx.AsyncClient, content_type: str, size: int, limit: str
) -> None:
    answer = await client.post(
        "/_harness/media", content=b"\0" * size, headers={"Content-Type": content_type}
    )
    assert await refused(answer, 413) == f"the file is over WhatsApp's limit of {limit}"
    fits = await client.post(
        "/_harness/media", content=b"\0" * (size - 1), headers={"Content-Type": content_type}
    )
    assert fits.status_code == 201, fits.text


async def test_an_oversized_body_is_refused_before_it_is_read_whole(
    client: httpx.AsyncClient,
) -> None:
    pulled = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal pulled
        for _ in range(1000):  # a gigabyte, were it all read
            pulled += 1
            yield b"\0" * (1024 * 1024)

    answer = await client.post(
        "/_harness/media", content=endless(), headers={"Content-Type": "image/jpeg"}
    )
    assert await refused(answer, 413) == (
        "the file is over WhatsApp's limit of 5242880 bytes for image media"
    )
    assert pulled <= 7


async def test_a_declared_length_over_the_limit_is_refused_before_any_byte_is_read() -> None:
    sim = _simulator(with_agent=False)
    app = control_app(sim)
    read: list[bytes] = []

    async def receive() -> Message:
        read.append(b"chunk")
        return {"type": "http.request", "body": b"\0" * 1024, "more_body": True}

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    scope: Scope = {
        "type": "http",
        "method": "POST",
        "path": "/_harness/media",
        "raw_path": b"/_harness/media",
        "query_string": b"",
        "headers": [(b"content-type", b"video/mp4"), (b"content-length", b"999999999")],
        "http_version": "1.1",
        "scheme": "http",
        "server": ("sim", 80),
        "client": ("test", 1),
        "root_path": "",
    }
    await app(scope, receive, send)
    assert sent[0]["status"] == 413
    assert read == []
    await sim.aclose()


@pytest.mark.parametrize(
    ("headers", "body", "message"),
    [
        (
            {"Content-Type": "image/gif"},
            b"GIF89a",
            "header 'Content-Type' is 'image/gif'; a user's",
        ),
        ({}, b"bytes", "header 'Content-Type' is missing; a user's file is one of: application/"),
        ({"Content-Type": "image/jpeg"}, b"", "the body is empty: send the file's bytes"),
    ],
)
async def test_an_upload_without_a_known_type_or_bytes_answers_400(
    client: httpx.AsyncClient, headers: dict[str, str], body: bytes, message: str
) -> None:
    answer = await client.post("/_harness/media", content=body, headers=headers)
    assert (await refused(answer, 400)).startswith(message)


async def test_the_document_describes_the_upload_and_its_limits(client: httpx.AsyncClient) -> None:
    operation = (await client.get("/openapi.json")).json()["paths"]["/_harness/media"]["post"]
    content = operation["requestBody"]["content"]
    assert {"image/jpeg", "audio/ogg", "application/pdf", "image/webp", "video/mp4"} <= set(content)
    assert content["image/jpeg"]["schema"] == {"type": "string", "format": "binary"}
    assert set(operation["responses"]) == {"201", "400", "401", "413"}
    assert [p["name"] for p in operation["parameters"]] == ["filename"]
