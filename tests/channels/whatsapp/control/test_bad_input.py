"""No request, however wrong, breaks the control API: it answers 4xx and keeps answering after.

Each case here once answered 500, or was taken and then made the readers
(``/outbox``, ``/events``, ``/conversation``) answer 500 for the rest of
the server's life. The property at the end sends any JSON to every endpoint.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from channels.whatsapp.control import control_app
from channels.whatsapp.simulator import WhatsAppSimulator
from tests.channels.whatsapp.control.test_control_api import WA_ID, _simulator, refused

READERS = ("/_harness/outbox", "/_harness/events", "/_harness/conversation", "/_harness/clock")
DATA = Path(__file__).parents[3] / "data" / "whatsapp"


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


async def still_answering(client: httpx.AsyncClient) -> None:
    for path in READERS:
        answer = await client.get(path)
        assert answer.status_code == 200, f"{path}: {answer.text}"


async def post_raw(client: httpx.AsyncClient, path: str, raw: bytes) -> httpx.Response:
    return await client.post(path, content=raw, headers={"Content-Type": "application/json"})


# -- the cases that broke it ---------------------------------------------------------


async def test_half_a_surrogate_pair_is_refused_and_the_readers_keep_answering(
    client: httpx.AsyncClient,
) -> None:
    raw = json.dumps({"user": WA_ID, "text": "a\udfff"}).encode()  # written as \udfff
    message = await refused(await post_raw(client, "/_harness/inbound", raw), 400)
    assert message == (
        "the body is not valid JSON: the string at 'text' holds half of a UTF-16 surrogate"
        " pair (\\udfff), which is not text"
    )
    await still_answering(client)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"wa_id": 0}, "field 'wa_id' must be a str"),
        ({"wa_id": [WA_ID]}, "field 'wa_id' must be a str"),
        ({"wa_id": "0"}, "field 'wa_id' must be 5 to 15 digits, got '0'"),
        ({"wa_id": "1" * 300}, "field 'wa_id' must be 5 to 15 digits, got '" + "1" * 40 + "...'"),
        ({"wa_id": "١٢٣٤٥٦٧"}, "field 'wa_id' must be 5 to 15 digits, got '١٢٣٤٥٦٧'"),
        ({"wa_id": "+5511987654321"}, "field 'wa_id' must be 5 to 15 digits, got '+5511987654321'"),
        ({"user_id": "br.1"}, "field 'user_id' must be a BSUID: two capital letters, a dot and"),
    ],
)
async def test_a_user_meta_could_never_have_is_refused(
    client: httpx.AsyncClient, body: dict[str, Any], message: str
) -> None:
    assert (await refused(await client.post("/_harness/users", json=body), 400)).startswith(message)
    await still_answering(client)


@pytest.mark.parametrize("user", ["1" * 300, "١٢٣٤٥٦٧", "1234"])
async def test_only_a_phone_number_writes_in_unannounced(
    client: httpx.AsyncClient, user: str
) -> None:
    answer = await client.post("/_harness/inbound", json={"user": user, "text": "hi"})
    message = await refused(answer, 400)
    assert message.startswith("no simulated user '")
    assert message.endswith(
        ": register it with POST /_harness/users, or write as a new phone number (5 to 15 digits)"
    )
    await still_answering(client)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"user": "\xff"}', "the body is not valid JSON: the body is not UTF-8 (at byte 11)"),
        (
            b"[" * 100_000 + b"]" * 100_000,
            "the body is not valid JSON: the body nests more than 64",
        ),
        (b'{"user": NaN}', "the body is not valid JSON: NaN is not valid JSON"),
    ],
)
async def test_a_body_that_is_not_json_text_answers_400(
    client: httpx.AsyncClient, raw: bytes, message: str
) -> None:
    for path in ("/_harness/users", "/_harness/inbound", "/_harness/advance"):
        assert (await refused(await post_raw(client, path, raw), 400)).startswith(message)
    await still_answering(client)


async def test_a_nul_character_is_refused_naming_the_field(client: httpx.AsyncClient) -> None:
    message = {"type": "text", "text": {"body": "a\0b"}}
    answer = await client.post("/_harness/inbound", json={"user": WA_ID, "message": message})
    assert await refused(answer, 400) == (
        "field 'message.text.body' holds a NUL character (U+0000), which no message carries"
    )


async def test_a_json_body_over_1_mib_answers_413(client: httpx.AsyncClient) -> None:
    body = {"user": WA_ID, "text": "x" * (1024 * 1024)}
    answer = await client.post("/_harness/inbound", json=body)
    assert await refused(answer, 413) == "the body is over the limit of 1048576 bytes"
    await still_answering(client)


@pytest.mark.parametrize("since", ["9" * 5000, "99999999999999999999", "1" + "0" * 18])
async def test_a_since_past_every_event_reads_none(client: httpx.AsyncClient, since: str) -> None:
    await client.post("/_harness/inbound", json={"user": WA_ID, "text": "hi"})
    events = (await client.get("/_harness/events")).json()
    answer = await client.get("/_harness/events", params={"since": since})
    assert answer.json() == {"events": [], "first": 0, "next": events["next"], "dropped": 0}


@pytest.mark.parametrize("since", ["٣", "1.5", "0x10"])
async def test_a_since_that_is_not_ascii_digits_answers_400(
    client: httpx.AsyncClient, since: str
) -> None:
    answer = await client.get("/_harness/events", params={"since": since})
    assert await refused(answer, 400) == "query parameter 'since' must be a non-negative integer"


@pytest.mark.parametrize("path", ["/_harness/outbox", "/_harness/events"])
@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"sinse": "3"},
            "query parameter 'sinse' is not one {path} takes (did you mean 'since'?);"
            " it takes 'since', 'wait', 'user'",
        ),
        (
            {"since": "0", "limit": "10"},
            "query parameter 'limit' is not one {path} takes; it takes 'since', 'wait', 'user'",
        ),
    ],
    ids=["misspelt", "unknown"],
)
async def test_a_parameter_the_outbox_or_the_event_log_does_not_take_answers_400_naming_it(
    client: httpx.AsyncClient, path: str, params: dict[str, str], message: str
) -> None:
    await client.post("/_harness/inbound", json={"user": WA_ID, "text": "hi"})
    answer = await client.get(path, params=params)
    assert await refused(answer, 400) == message.format(path=path)
    assert (await client.get(path, params={"since": "0", "wait": "0", "user": WA_ID})).is_success


@pytest.mark.parametrize("duration", ["9999999d", "999999999d"])
async def test_a_jump_past_any_date_answers_400_and_the_clock_stays(
    client: httpx.AsyncClient, duration: str
) -> None:
    before = (await client.get("/_harness/clock")).json()
    answer = await client.post("/_harness/advance", json={"duration": duration})
    assert await refused(answer, 400) == (
        f"field 'duration': {duration} would take the clock past 9000, further than a date can go"
    )
    assert (await client.get("/_harness/clock")).json() == before
    await still_answering(client)
    assert (await client.post("/_harness/advance", json={"duration": "2000000d"})).is_success


# -- the control token -----------------------------------------------------------------


async def test_with_a_token_every_control_endpoint_wants_it(sim: WhatsAppSimulator) -> None:
    transport = httpx.ASGITransport(app=control_app(sim, token="s3cret"))
    async with httpx.AsyncClient(transport=transport, base_url="http://sim") as client:
        for authorization in (None, "Bearer wrong", "s3cret", "Bearer s3cret2", "Basic s3cret"):
            headers = {"Authorization": authorization} if authorization else {}
            for path in READERS:
                answer = await client.get(path, headers=headers)
                assert await refused(answer, 401) == (
                    "this server has a control token: send it as 'Authorization: Bearer <token>'"
                )
                assert answer.headers["www-authenticate"].startswith("Bearer")
            inbound = await client.post(
                "/_harness/inbound", json={"user": WA_ID, "text": "hi"}, headers=headers
            )
            assert inbound.status_code == 401
        assert sim.events == []
        good = {"Authorization": "Bearer s3cret"}
        inbound = await client.post(
            "/_harness/inbound", json={"user": WA_ID, "text": "hi"}, headers=good
        )
        assert inbound.status_code == 200, inbound.text
        for path in READERS:
            assert (await client.get(path, headers=good)).status_code == 200
        # the document stays open, and the Graph API keeps its own access token
        assert (await client.get("/openapi.json")).status_code == 200
        graph = await client.post(
            f"/v25.0/{sim.config.phone_number_id}/messages",
            json={"messaging_product": "whatsapp", "to": WA_ID, "text": {"body": "hi"}},
            headers={"Authorization": f"Bearer {sim.config.access_token}"},
        )
        assert graph.status_code == 200, graph.text


async def test_the_document_says_the_token_is_optional_and_what_its_absence_answers(
    client: httpx.AsyncClient,
) -> None:
    document = (await client.get("/openapi.json")).json()
    for path, item in document["paths"].items():
        if path.startswith("/_harness/"):
            for operation in item.values():
                assert operation["security"] == [{}, {"bearer": []}]
                assert "401" in operation["responses"]


# -- any JSON, any endpoint ----------------------------------------------------------


def _inbound_messages() -> list[dict[str, Any]]:
    """The messages of the sample webhooks, as the control API takes them (no id, from, time)."""
    found = []
    for path in sorted(DATA.glob("message_*.json")):
        payload = json.loads(path.read_text(encoding="utf-8"))
        message = payload["entry"][0]["changes"][0]["value"]["messages"][0]
        found.append({k: v for k, v in message.items() if k not in ("id", "from", "timestamp")})
    return found


_text = st.text(st.characters(exclude_categories=()), max_size=12)  # surrogates and NUL too
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=12,
)
_users = st.one_of(
    st.just(WA_ID),
    st.just(WA_ID),
    st.sampled_from(["15550001111", "US.123", "0", "1" * 300]),
    _text,
)


def _mutated(message: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """``message`` with one of its values, anywhere in it, replaced by any JSON."""
    paths: list[tuple[Any, ...]] = []

    def walk(value: object, at: tuple[Any, ...]) -> None:
        paths.append(at)
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, (*at, key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, (*at, index))

    walk(message, ())

    def replace(path: tuple[Any, ...], new: object) -> dict[str, Any]:
        if not path:
            return new if isinstance(new, dict) else message
        copy = json.loads(json.dumps(message))
        target = copy
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = new
        return copy  # type: ignore[no-any-return]  # a copy of a message object

    return st.builds(replace, st.sampled_from(paths), _json)


_messages = st.sampled_from(_inbound_messages())
_bodies = st.one_of(
    st.tuples(
        st.just("/_harness/inbound"),
        st.fixed_dictionaries(
            {"user": _users, "text": st.text(min_size=1, max_size=30) | _text | _json}
        ),
    ),
    st.tuples(
        st.just("/_harness/inbound"),
        st.fixed_dictionaries({"user": _users, "message": _messages | _messages.flatmap(_mutated)}),
    ),
    st.tuples(
        st.just("/_harness/users"),
        st.fixed_dictionaries(
            {}, optional={"wa_id": _json | _users, "user_id": _json, "name": _json}
        ),
    ),
    st.tuples(
        st.just("/_harness/tap"), st.fixed_dictionaries({"user": _users, "choice": _json | _text})
    ),
    st.tuples(
        st.just("/_harness/redeliver"),
        st.fixed_dictionaries({}, optional={"user": _users, "wamid": _json}),
    ),
    st.tuples(
        st.just("/_harness/advance"),
        st.fixed_dictionaries({"duration": _json | st.from_regex(r"-?[0-9.e]{1,30}[dhms]?")}),
    ),
    st.tuples(
        st.sampled_from(["/_harness/users", "/_harness/inbound", "/_harness/redeliver"]), _json
    ),
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(request=_bodies)
async def test_any_json_answers_2xx_or_4xx_and_the_server_keeps_answering(
    request: tuple[str, object],
) -> None:
    path, body = request
    sim = _simulator()
    transport = httpx.ASGITransport(app=control_app(sim))
    async with httpx.AsyncClient(transport=transport, base_url="http://sim") as client:
        await client.post("/_harness/inbound", json={"user": WA_ID, "text": "menu"})
        answer = await post_raw(client, path, json.dumps(body).encode())
        event(f"{path} {answer.status_code}")
        assert answer.status_code < 500, answer.text
        if answer.status_code >= 400:
            await refused(answer, answer.status_code)
        await still_answering(client)
        after = await client.post("/_harness/inbound", json={"user": WA_ID, "text": "again"})
        assert after.status_code == 200, after.text
    await sim.aclose()
