"""The fake Graph API over in-process HTTP: success shapes, Meta's error envelope, auth, paths."""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from channels.whatsapp.errors import (
    GraphAPIError,
    PairRateLimited,
    ReEngagementRequired,
    ThroughputLimited,
    Undeliverable,
)
from channels.whatsapp.graph import AcceptAll, SendOutcome, create_graph_app, success_body
from channels.whatsapp.ids import WAMID_PATTERN
from channels.whatsapp.media import MediaStore
from channels.whatsapp.validation import ValidatedSend
from harness.clock import VirtualClock
from tests.channels.whatsapp.test_validation import load_send, send_names, set_path
from tests.support.graph_errors import no_such_object, unknown_path

PHONE = "100200300400500"
TOKEN = "EAAG-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ENVELOPE_KEYS = {"message", "type", "code", "error_data", "fbtrace_id"}


def build_app(clock: VirtualClock, handler: Any, *, tokens: Any = None, **kwargs: Any) -> Starlette:
    return create_graph_app(
        access_tokens={TOKEN} if tokens is None else tokens,
        phone_numbers={PHONE: "15550001111"},
        on_send=handler,
        media=MediaStore(clock),
        clock=clock,
        **kwargs,
    )


def client_for(app: Starlette) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://graph.local")


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def handler() -> AcceptAll:
    return AcceptAll()


@pytest.fixture
async def client(clock: VirtualClock, handler: AcceptAll) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(build_app(clock, handler)) as http:
        yield http


async def send(
    client: httpx.AsyncClient, body: object, *, version: str = "v25.0", phone: str = PHONE
) -> httpx.Response:
    return await client.post(f"/{version}/{phone}/messages", json=body, headers=AUTH)


def envelope(response: httpx.Response, status: int, code: int) -> dict[str, Any]:
    """Check ``response`` is Meta's error envelope with ``code``; return its ``error``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"}
    error: dict[str, Any] = body["error"]
    assert error["code"] == code
    assert error["type"] == "OAuthException"
    assert isinstance(error["message"], str)
    assert error["message"]
    assert isinstance(error["fbtrace_id"], str)
    if code in (0, 190):  # Graph's own errors about the token carry no error_data
        assert set(error) - {"error_subcode"} == ENVELOPE_KEYS - {"error_data"}
        return error
    assert set(error) - {"error_subcode"} == ENVELOPE_KEYS
    assert set(error["error_data"]) == {"messaging_product", "details"}
    assert error["error_data"]["messaging_product"] == "whatsapp"
    assert isinstance(error["error_data"]["details"], str)
    assert error["fbtrace_id"]
    assert response.headers["x-fb-trace-id"] == error["fbtrace_id"]
    return error


# -- success shapes --------------------------------------------------------------


@pytest.mark.parametrize("name", send_names())
async def test_every_sample_send_succeeds(client: httpx.AsyncClient, name: str) -> None:
    body = load_send(name)
    response = await send(client, body)
    assert response.status_code == 200, response.text
    answer = response.json()
    if "status" in body:
        assert answer == {"success": True}
        return
    assert set(answer) == {"messaging_product", "contacts", "messages"}
    assert answer["messaging_product"] == "whatsapp"
    [contact] = answer["contacts"]
    [message] = answer["messages"]
    assert WAMID_PATTERN.fullmatch(message["id"])
    if "to" in body:
        assert contact == {"input": body["to"], "wa_id": body["to"].lstrip("+")}
    else:
        assert contact == {"input": body["recipient"], "user_id": body["recipient"]}
    expected = {"id", "message_status"} if body["type"] == "template" else {"id"}
    assert set(message) == expected
    if body["type"] == "template":
        assert message["message_status"] == "accepted"


async def test_text_send_exact_answer(client: httpx.AsyncClient, handler: AcceptAll) -> None:
    response = await send(client, load_send("text"))
    [recorded] = handler.sends
    assert response.json() == {
        "messaging_product": "whatsapp",
        "contacts": [{"input": "+5511987654321", "wa_id": "5511987654321"}],
        "messages": [{"id": response.json()["messages"][0]["id"]}],
    }
    assert (recorded.to, recorded.text, recorded.action) == (
        "5511987654321",
        "Link: https://example.com",
        "message",
    )


async def test_each_message_gets_a_fresh_wamid(client: httpx.AsyncClient) -> None:
    ids = {(await send(client, load_send("text"))).json()["messages"][0]["id"] for _ in range(5)}
    assert len(ids) == 5


async def test_to_wins_over_recipient(client: httpx.AsyncClient) -> None:
    body = {**load_send("text"), "to": "55 11 98765-4321", "recipient": "BR.1234567890"}
    answer = (await send(client, body)).json()
    assert answer["contacts"] == [{"input": "55 11 98765-4321", "wa_id": "5511987654321"}]


async def test_group_send_echoes_the_group(client: httpx.AsyncClient) -> None:
    body = {**load_send("text"), "recipient_type": "group", "to": "Y2FwaV9ncm91cDox"}
    answer = (await send(client, body)).json()
    assert answer["contacts"] == [{"input": "Y2FwaV9ncm91cDox"}]
    assert answer["messages"][0]["group_id"] == "Y2FwaV9ncm91cDox"


def test_success_body_uses_the_handlers_ids() -> None:
    body = load_send("text_bsuid")
    validated = ValidatedSend(PHONE, "message", body, type="text", input="BR.1", recipient="BR.1")
    outcome = SendOutcome(wamid="wamid.X", user_id="BR.2", message_status="held")
    assert success_body(validated, outcome) == {
        "messaging_product": "whatsapp",
        "contacts": [{"input": "BR.1", "user_id": "BR.2"}],
        "messages": [{"id": "wamid.X", "message_status": "held"}],
    }
    with pytest.raises(ValueError, match="wamid"):
        success_body(validated, SendOutcome())


# -- Meta's error envelope ------------------------------------------------------


async def test_over_limit_button_title_exact_envelope(client: httpx.AsyncClient) -> None:
    path = "interactive.action.buttons[1].reply.title"
    body = set_path(load_send("interactive_button"), path, "x" * 21)
    response = await send(client, body)
    error = envelope(response, 400, 131009)
    assert error == {
        "message": "(#131009) Parameter value is not valid",
        "type": "OAuthException",
        "code": 131009,
        "error_data": {
            "messaging_product": "whatsapp",
            "details": f"{path}: must be at most 20 characters, got 21",
        },
        "fbtrace_id": error["fbtrace_id"],
    }


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({**load_send("text"), "priority": "high"}, 400, 100),
        ({"to": "5511987654321", "text": {"body": "hi"}}, 400, 100),
        ({"messaging_product": "whatsapp", "text": {"body": "hi"}}, 400, 131008),
        (set_path(load_send("text"), "text.body", "x" * 4097), 400, 131009),
        (set_path(load_send("text"), "type", "poll"), 400, 131051),
        (set_path(load_send("template"), "template.name", "missing"), 404, 132001),
        (set_path(load_send("template"), "template.components", []), 400, 132000),
        (set_path(load_send("image_link"), "image", {"id": "404404"}), 400, 131009),
    ],
)
async def test_validation_errors_answer_their_codes(
    client: httpx.AsyncClient, body: dict[str, Any], status: int, code: int
) -> None:
    error = envelope(await send(client, body), status, code)
    assert error["message"].startswith(f"(#{code}) ")


@pytest.mark.parametrize("raw", [b"", b"not json", b"[1, 2]", b'"text"', b"\xff\xfe", b"NaN"])
async def test_bodies_that_are_not_objects_answer_100(
    client: httpx.AsyncClient, raw: bytes
) -> None:
    response = await client.post(f"/v25.0/{PHONE}/messages", content=raw, headers=AUTH)
    envelope(response, 400, 100)


class Refusing:
    """A send handler that refuses every message with one error."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def __call__(self, send: ValidatedSend) -> SendOutcome:
        raise self.error


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (Undeliverable(), 400, 131026),
        (ReEngagementRequired(), 400, 131047),
        (PairRateLimited(), 400, 131056),
        (ThroughputLimited(), 400, 130429),
        (GraphAPIError(131016), 503, 131016),
    ],
)
async def test_handler_errors_reach_the_bot(
    clock: VirtualClock, error: GraphAPIError, status: int, code: int
) -> None:
    async with client_for(build_app(clock, Refusing(error))) as client:
        found = envelope(await send(client, load_send("text")), status, code)
    assert found["error_data"]["details"] == error.details


async def test_a_bug_answers_131000_and_is_logged(
    clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    async with client_for(build_app(clock, Refusing(RuntimeError("boom")))) as client:
        with caplog.at_level(logging.ERROR, logger="channels.whatsapp.graph"):
            response = await send(client, load_send("text"))
    envelope(response, 500, 131000)
    assert "boom" in caplog.text


async def test_error_trace_ids_differ(client: httpx.AsyncClient) -> None:
    traces = {envelope(await send(client, {}), 400, 100)["fbtrace_id"] for _ in range(3)}
    assert len(traces) == 3


# -- auth and phone numbers -----------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": "Bearer "},
        {"Authorization": TOKEN},
    ],
)
async def test_a_valid_token_is_required(
    client: httpx.AsyncClient, handler: AcceptAll, headers: dict[str, str]
) -> None:
    url = f"/v25.0/{PHONE}/messages"
    response = await client.post(url, json=load_send("text"), headers=headers)
    error = envelope(response, 401, 190)
    if headers.get("Authorization") == "Bearer wrong":  # a token Graph can't read: its words
        assert error["message"] == "Invalid OAuth access token - Cannot parse access token"
    else:
        assert error["message"].startswith("Error validating access token")
    assert "invalid_token" in response.headers["www-authenticate"]
    assert handler.sends == []


async def test_token_as_query_parameter(client: httpx.AsyncClient) -> None:
    url = f"/v25.0/{PHONE}/messages"
    response = await client.post(url, json=load_send("text"), params={"access_token": TOKEN})
    assert response.status_code == 200


async def test_expired_token_answers_subcode_463(clock: VirtualClock, handler: AcceptAll) -> None:
    expiry = clock.now() + timedelta(hours=1)
    app = build_app(clock, handler, tokens={TOKEN: expiry, "forever": None})
    async with client_for(app) as client:
        assert (await send(client, load_send("text"))).status_code == 200
        clock.advance(3600)
        error = envelope(await send(client, load_send("text")), 401, 190)
        assert error["error_subcode"] == 463
        assert error["message"] == (  # Graph's words, in UTC
            f"Error validating access token: Session has expired on {expiry:%A, %d-%b-%y %H:%M:%S}"
            f" UTC. The current time is {clock.now():%A, %d-%b-%y %H:%M:%S} UTC."
        )
        url = f"/v25.0/{PHONE}/messages"
        response = await client.post(
            url, json=load_send("text"), headers={"Authorization": "Bearer forever"}
        )
        assert response.status_code == 200


async def test_unknown_phone_number_id(client: httpx.AsyncClient) -> None:
    # Graph's answer for a wrong phone_number_id, the usual misconfiguration
    no_such_object(await send(client, load_send("text"), phone="999"), "999", "post")


# -- versions and paths ------------------------------------------------------------


@pytest.mark.parametrize("version", ["v19.0", "v20.0", "v23.0", "v25.0", "v26.0"])
async def test_the_versions_metas_changelog_lists_are_served(
    client: httpx.AsyncClient, version: str
) -> None:
    assert (await send(client, load_send("text"), version=version)).status_code == 200


@pytest.mark.parametrize("version", ["v3.2", "v14.0", "v15.0", "v18.0", "v27.0"])
async def test_a_version_past_its_two_years_or_not_yet_listed_is_served(
    client: httpx.AsyncClient, version: str
) -> None:
    # Meta serves a call to an expired version with the oldest live one; libraries still
    # name v14.0 and v15.0 (whatsapp-cloud-api.md: accept any v<major>.<minor>).
    answer = await send(client, load_send("text"), version=version)
    assert answer.status_code == 200, answer.text
    assert answer.json()["messages"][0]["id"].startswith("wamid.")


@pytest.mark.parametrize(
    "version", ["v25", "latest", "25.0", "V25.0", "v25.0.1", "v٢٥.٠", "v25.0%0A"]
)
async def test_other_versions_are_refused(client: httpx.AsyncClient, version: str) -> None:
    # Graph takes a first segment that is not a version for an object's id, and what
    # follows it for path components it can't place.
    unknown_path(await send(client, load_send("text"), version=version), f"/{PHONE}/messages")


async def test_version_less_paths_are_served_at_the_apps_version(clock: VirtualClock) -> None:
    # Graph serves a call without a version at the app's version: here the one it is given.
    versions: list[str | None] = []

    async def note(send: ValidatedSend) -> SendOutcome:
        versions.append(send.api_version)
        return SendOutcome(wamid="wamid.versionless")

    app = build_app(clock, note, api_version="v23.0")
    async with client_for(app) as client:
        response = await client.post(f"/{PHONE}/messages", json=load_send("text"), headers=AUTH)
        assert response.status_code == 200, response.text
        number = await client.get(f"/{PHONE}", headers=AUTH)
        assert number.json()["id"] == PHONE
        unknown = await client.get("/1479537139650973", headers=AUTH)
        no_such_object(unknown, "1479537139650973")
        # A first segment that is neither a version nor an id is refused as an object.
        named = await client.post("/me/messages", json=load_send("text"), headers=AUTH)
        no_such_object(named, "me", "post")
        deeper = await client.post("/me/100/messages", json=load_send("text"), headers=AUTH)
        unknown_path(deeper, "/100/messages")
    assert versions == ["v23.0"]


async def test_unknown_paths_and_methods(client: httpx.AsyncClient) -> None:
    # As Graph answers them (third-party reports): 2500 past an object and its edge,
    # 100 with subcode 33 for an edge or a method the object does not take.
    unknown_path(await client.get("/v25.0", headers=AUTH), "/v25.0")
    unknown_path(await client.get("/v25.0/a/b/c", headers=AUTH), "/b/c")
    unknown_path(await client.post(f"/v25.0/{PHONE}/messages/x", headers=AUTH), "/messages/x")
    no_such_object(await client.get(f"/v25.0/{PHONE}/messages", headers=AUTH), PHONE)
    no_such_object(await client.put(f"/v25.0/{PHONE}", headers=AUTH), PHONE, "put")
    no_such_object(await client.post(f"/v25.0/{PHONE}/nothing", headers=AUTH), PHONE, "post")
    # The simulator's own paths answer as HTTP has it.
    response = await client.post("/openapi.json")
    envelope(response, 405, 100)
    assert response.headers["allow"] == "GET, HEAD"
    envelope(await client.get("/_nothing/here", headers=AUTH), 404, 100)


# -- serving while busy, and extension ---------------------------------------------


async def test_keeps_serving_while_a_send_is_in_flight(clock: VirtualClock) -> None:
    release = asyncio.Event()
    order: list[str] = []

    async def slow_first(send: ValidatedSend) -> SendOutcome:
        if send.text == "first":
            await release.wait()
        order.append(send.text or "")
        return SendOutcome(wamid=f"wamid.{send.text}")

    async with client_for(build_app(clock, slow_first)) as client:
        first = asyncio.create_task(send(client, set_path(load_send("text"), "text.body", "first")))
        second = await send(client, set_path(load_send("text"), "text.body", "second"))
        assert second.status_code == 200
        release.set()
        assert (await first).status_code == 200
    assert order == ["second", "first"]


async def test_extra_routes_come_first_and_are_documented(
    clock: VirtualClock, handler: AcceptAll
) -> None:
    async def outbox(request: Request) -> Response:
        return JSONResponse({"sends": len(handler.sends)})

    item = {"get": {"responses": {"200": {"description": "The outbox."}}}}
    app = build_app(
        clock,
        handler,
        routes=[Route("/_harness/outbox", outbox)],
        openapi_paths={"/_harness/outbox": item},
    )
    async with client_for(app) as client:
        assert (await client.get("/_harness/outbox")).json() == {"sends": 0}
        document = (await client.get("/openapi.json")).json()
    assert document["paths"]["/_harness/outbox"] == item
    assert "/{version}/{phone_number_id}/messages" in document["paths"]


async def test_answers_are_compact_json(client: httpx.AsyncClient) -> None:
    response = await send(client, load_send("reaction"))
    assert response.content == json.dumps(response.json(), separators=(",", ":")).encode()


# -- bad input never answers 500 ---------------------------------------------------

_FUZZ_CLOCK = VirtualClock()
_FUZZ_APP = build_app(_FUZZ_CLOCK, AcceptAll())

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=15), inner, max_size=6)
    ),
    max_leaves=30,
)


async def _post_raw(raw: bytes) -> httpx.Response:
    async with client_for(_FUZZ_APP) as client:
        return await client.post(
            f"/v25.0/{PHONE}/messages",
            content=raw,
            headers={**AUTH, "Content-Type": "application/json"},
        )


@settings(max_examples=200, deadline=None)
@given(value=_json)
async def test_arbitrary_json_answers_a_meta_error(value: object) -> None:
    response = await _post_raw(json.dumps(value).encode())
    assert 400 <= response.status_code < 500
    envelope(response, response.status_code, response.json()["error"]["code"])


@settings(max_examples=200, deadline=None)
@given(raw=st.binary(max_size=300))
async def test_arbitrary_bytes_answer_a_meta_error(raw: bytes) -> None:
    response = await _post_raw(raw)
    assert 400 <= response.status_code < 500
    envelope(response, response.status_code, response.json()["error"]["code"])


def _field_paths(value: object, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    found: list[tuple[str | int, ...]] = []
    items: list[tuple[str | int, object]] = []
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))
    for key, child in items:
        found.append((*prefix, key))
        found.extend(_field_paths(child, (*prefix, key)))
    return found


_WRONG = st.sampled_from([None, 0, -1, 1.5, 1e308, True, "", " ", [], {}, ["x"], {"x": 1}])
_LONG = st.builds(
    lambda char, n: char * n, st.sampled_from(["x", "é", "𝄞", " "]), st.integers(0, 5000)
)


@st.composite
def mutated_sends(draw: st.DrawFn) -> dict[str, Any]:
    """A valid sample send with one to three fields dropped, retyped or stretched."""
    body = load_send(draw(st.sampled_from(send_names())))
    for _ in range(draw(st.integers(1, 3))):
        paths = _field_paths(body)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent: Any = body
        for step in path[:-1]:
            parent = parent[step]
        key = path[-1]
        operation = draw(st.sampled_from(["drop", "wrong", "long", "any"]))
        if operation == "drop":
            del parent[key]
        else:
            strategy = {"wrong": _WRONG, "long": _LONG, "any": _json}[operation]
            parent[key] = copy.deepcopy(draw(strategy))  # _WRONG's lists are shared
    return body


@settings(max_examples=400, deadline=None)
@given(body=mutated_sends())
async def test_mutated_sends_never_fail_inside(body: dict[str, Any]) -> None:
    response = await _post_raw(json.dumps(body).encode())
    event(f"HTTP {response.status_code}")
    assert response.status_code < 500, response.text
    if response.status_code == 200:
        answer = response.json()
        assert answer == {"success": True} or WAMID_PATTERN.fullmatch(answer["messages"][0]["id"])
    else:
        envelope(response, response.status_code, response.json()["error"]["code"])
