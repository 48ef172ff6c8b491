"""How the fake Graph API reads a body: its type, its size, its JSON, before trusting any of it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.types import Message, Scope

from channels.whatsapp._request_body import BadBody, decode_json, nul_in
from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.control import control_app
from channels.whatsapp.graph import AcceptAll
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.clock import VirtualClock
from tests.channels.whatsapp.test_graph import AUTH, PHONE, build_app, client_for, envelope
from tests.channels.whatsapp.test_validation import load_send

MIB = 1024 * 1024
MESSAGES = f"/v25.0/{PHONE}/messages"
MEDIA = f"/v25.0/{PHONE}/media"


@pytest.fixture
async def graph() -> AsyncIterator[tuple[httpx.AsyncClient, AcceptAll]]:
    handler = AcceptAll()
    async with client_for(build_app(VirtualClock(), handler)) as client:
        yield client, handler


# -- decoding --------------------------------------------------------------------


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_decode_to_json_or_a_one_line_bad_body_error(raw: bytes) -> None:
    try:
        decode_json(raw)
    except BadBody as exc:
        message = str(exc)
    else:
        return
    assert message
    assert "\n" not in message


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_json_decodes_to_what_was_written_unless_it_holds_half_a_surrogate_pair(
    value: object,
) -> None:
    raw = json.dumps(value).encode()
    if _surrogate_in(value):
        with pytest.raises(BadBody, match="holds half of a UTF-16 surrogate pair"):
            decode_json(raw)
    else:
        assert decode_json(raw) == value


def _surrogate_in(value: object) -> bool:
    if isinstance(value, str):
        return any(0xD800 <= ord(char) <= 0xDFFF for char in value)
    if isinstance(value, dict):
        return any(_surrogate_in(key) or _surrogate_in(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_surrogate_in(item) for item in value)
    return False


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b'{"text": {"body": "a\\udfff"}}', "the string at 'text.body' holds half of a UTF-16"),
        (b'{"\\ud800": 1}', "a key at the top level holds half of a UTF-16 surrogate pair"),
        (b'{"a": "\xff"}', "the body is not UTF-8 (at byte 8)"),
        (b"[" * 65 + b"]" * 65, "the body nests more than 64 levels deep"),
        (b"[" * 100_000 + b"]" * 100_000, "the body nests more than 64 levels deep"),
        (b'{"a": NaN}', "NaN is not valid JSON"),
    ],
)
def test_what_no_text_can_carry_is_not_json(raw: bytes, problem: str) -> None:
    with pytest.raises(BadBody) as info:
        decode_json(raw)
    assert str(info.value).startswith(problem)


def test_a_pair_of_surrogates_is_one_character_and_welcome() -> None:
    assert decode_json(b'{"t": "\\ud83d\\ude00"}') == {"t": "\U0001f600"}
    assert decode_json(b"[" * 64 + b"]" * 64) is not None


def test_the_first_nul_is_found_by_its_path() -> None:
    assert nul_in({"text": {"body": "ok"}, "to": "1"}) is None
    assert nul_in({"text": {"body": "a\0b"}}) == "text.body"
    assert nul_in({"rows": [{"id": "x"}, {"id": "\0"}]}) == "rows[1].id"
    assert nul_in("\0") == ""


# -- what a send may be ------------------------------------------------------------


@pytest.mark.parametrize("content_type", ["text/plain", "application/xml", None])
async def test_a_send_neither_json_nor_form_fields_answers_100_naming_the_type(
    graph: tuple[httpx.AsyncClient, AcceptAll], content_type: str | None
) -> None:
    client, handler = graph
    headers = {**AUTH, **({"Content-Type": content_type} if content_type else {})}
    body = json.dumps(load_send("text"))
    error = envelope(await client.post(MESSAGES, content=body, headers=headers), 400, 100)
    shown = repr(content_type) if content_type else "missing"
    assert error["error_data"]["details"].startswith(f"the Content-Type is {shown}: a send is")
    assert handler.sends == []


async def test_a_send_written_as_form_fields_is_the_same_send(
    graph: tuple[httpx.AsyncClient, AcceptAll],
) -> None:
    client, handler = graph
    body = load_send("interactive_button")
    fields = {k: json.dumps(v) if isinstance(v, dict) else v for k, v in body.items()}
    form = await client.post(MESSAGES, data=fields, headers=AUTH)
    assert form.status_code == 200, form.text
    parts = await client.post(
        MESSAGES, files={k: (None, v) for k, v in fields.items()}, headers=AUTH
    )
    assert parts.status_code == 200, parts.text
    assert [send.body for send in handler.sends] == [body, body]


@pytest.mark.parametrize("kind", ["contacts", "text", "interactive_button"])
async def test_a_message_object_given_as_its_json_text_in_a_json_body_is_that_object(
    graph: tuple[httpx.AsyncClient, AcceptAll], kind: str
) -> None:
    # As Graph reads a form field; whatsapp-api-js writes a contacts message this way.
    client, handler = graph
    body = load_send(kind)
    field = body["type"]
    written = {**body, field: json.dumps(body[field]), "context": json.dumps({"message_id": "x"})}
    answer = await client.post(MESSAGES, json=written, headers=AUTH)
    assert answer.status_code == 200, answer.text
    assert [send.body for send in handler.sends] == [{**body, "context": {"message_id": "x"}}]


async def test_other_fields_holding_json_text_keep_it_as_text(
    graph: tuple[httpx.AsyncClient, AcceptAll],
) -> None:
    client, handler = graph
    body = {**load_send("text"), "biz_opaque_callback_data": '{"order": 7}'}
    answer = await client.post(MESSAGES, json=body, headers=AUTH)
    assert answer.status_code == 200, answer.text
    assert [send.body for send in handler.sends] == [body]


@pytest.mark.parametrize("text", ["[{'name': 'Ana'}]", "Ana Lima", "[]"])
async def test_a_message_object_as_text_that_is_not_one_is_refused_naming_the_field(
    graph: tuple[httpx.AsyncClient, AcceptAll], text: str
) -> None:
    client, handler = graph
    body = {**load_send("contacts"), "contacts": text}
    error = envelope(await client.post(MESSAGES, json=body, headers=AUTH), 400, 131009)
    assert error["error_data"]["details"].startswith("contacts"), error
    assert handler.sends == []


async def test_a_form_field_that_is_not_json_answers_100(
    graph: tuple[httpx.AsyncClient, AcceptAll],
) -> None:
    client, _ = graph
    fields = {"messaging_product": "whatsapp", "to": "5511987654321", "text": "{body"}
    error = envelope(await client.post(MESSAGES, data=fields, headers=AUTH), 400, 100)
    assert error["error_data"]["details"].startswith("text: not valid JSON")


@pytest.mark.parametrize(
    ("path", "where"),
    [
        (("text", "body"), "text.body"),
        (("interactive", "action", "buttons", 0, "reply", "title"), "interactive.action.buttons"),
    ],
)
async def test_a_nul_character_in_a_send_answers_131009_naming_the_field(
    graph: tuple[httpx.AsyncClient, AcceptAll], path: tuple[str | int, ...], where: str
) -> None:
    client, handler = graph
    body: Any = load_send(path[0] if path[0] == "text" else "interactive_button")
    target = body
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = "Ke\0ep"
    error = envelope(await client.post(MESSAGES, json=body, headers=AUTH), 400, 131009)
    assert error["error_data"]["details"].startswith(where)
    assert error["error_data"]["details"].endswith(": must not hold the NUL character (U+0000)")
    assert handler.sends == []


# -- how much is read ----------------------------------------------------------------


def _scope(path: str, headers: list[tuple[bytes, bytes]]) -> Scope:
    return {
        "type": "http",
        "method": "POST",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"authorization", AUTH["Authorization"].encode()), *headers],
        "http_version": "1.1",
        "scheme": "http",
        "server": ("graph.local", 80),
        "client": ("test", 1),
        "root_path": "",
    }


@pytest.mark.parametrize(
    ("path", "content_type", "status", "code"),
    [
        (MESSAGES, b"application/json", 413, 100),
        (MEDIA, b"multipart/form-data; boundary=x", 413, 131053),
    ],
)
async def test_a_declared_length_over_the_limit_is_refused_before_any_byte_is_read(
    path: str, content_type: bytes, status: int, code: int
) -> None:
    app = build_app(VirtualClock(), AcceptAll())
    read: list[int] = []

    async def receive() -> Message:
        read.append(1)
        return {"type": "http.request", "body": b"\0" * 1024, "more_body": True}

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    headers = [(b"content-type", content_type), (b"content-length", b"9" * 40)]
    await app(_scope(path, headers), receive, send)
    assert (sent[0]["status"], read) == (status, [])
    assert json.loads(sent[1]["body"])["error"]["code"] == code


async def _endless(pulled: list[int], total_mib: int) -> AsyncIterator[bytes]:
    for _ in range(total_mib):
        pulled.append(1)
        yield b"\0" * MIB


async def test_a_send_that_outgrows_its_limit_is_refused_as_it_streams_in(
    graph: tuple[httpx.AsyncClient, AcceptAll],
) -> None:
    client, handler = graph
    pulled: list[int] = []
    headers = {**AUTH, "Content-Type": "application/json"}
    answer = await client.post(MESSAGES, content=_endless(pulled, 50), headers=headers)
    error = envelope(answer, 413, 100)
    assert error["error_data"]["details"] == (
        "the request body is over the limit of 1048576 bytes for a send"
    )
    assert len(pulled) <= 2
    assert handler.sends == []


async def test_an_upload_over_the_largest_file_is_refused_as_it_streams_in(
    graph: tuple[httpx.AsyncClient, AcceptAll],
) -> None:
    client, _ = graph
    pulled: list[int] = []
    headers = {**AUTH, "Content-Type": "multipart/form-data; boundary=b"}

    async def form() -> AsyncIterator[bytes]:
        yield (
            b'--b\r\nContent-Disposition: form-data; name="messaging_product"\r\n\r\nwhatsapp\r\n'
            b'--b\r\nContent-Disposition: form-data; name="file"; filename="big.pdf"\r\n'
            b"Content-Type: application/pdf\r\n\r\n"
        )
        async for chunk in _endless(pulled, 200):
            yield chunk

    error = envelope(await client.post(MEDIA, content=form(), headers=headers), 413, 131053)
    assert error["error_data"]["details"].startswith("file: the upload is over 105906176 bytes")
    assert len(pulled) <= 102  # 100 MiB, the largest document, and 1 MiB for the form


# -- through the simulator -----------------------------------------------------------


async def test_half_a_surrogate_pair_in_a_send_is_refused_and_the_trace_stays_readable() -> None:
    config = SimulatorConfig()
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=control_app(sim)), base_url="http://sim"
    ) as client:
        raw = json.dumps(load_send("text")).replace('"body": "', '"body": "\\udfff')
        answer = await client.post(
            f"/v25.0/{config.phone_number_id}/messages",
            content=raw,
            headers={"Authorization": f"Bearer {config.access_token}", **_JSON},
        )
        assert envelope(answer, 400, 100)["error_data"]["details"].startswith(
            "the request body is not valid JSON (the string at 'text.body' holds half"
        )
        for path in ("/_harness/outbox", "/_harness/events", "/_harness/conversation"):
            assert (await client.get(path)).status_code == 200, path
        [refused] = (await client.get("/_harness/events")).json()["events"]
        assert refused["error"]["code"] == 100
    await sim.aclose()


async def test_a_send_outside_the_window_with_no_agent_is_accepted_as_meta_accepts_it() -> None:
    config = SimulatorConfig()
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    sim.add_user("5511987654321", "Ana")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=control_app(sim)), base_url="http://sim"
    ) as client:
        answer = await client.post(
            f"/v25.0/{config.phone_number_id}/messages",
            json={**load_send("text"), "to": "5511987654321"},
            headers={"Authorization": f"Bearer {config.access_token}"},
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["messages"][0]["id"].startswith("wamid.")
        # the failed status (131047) has no webhook to go to: the send stays in the trace
        await client.post("/_harness/advance", json={"duration": "1m"})
        events = (await client.get("/_harness/events")).json()["events"]
        assert [(e["kind"], e.get("in_window")) for e in events if e["kind"] != "clock"] == [
            ("send", False)
        ]
    await sim.aclose()


_JSON = {"Content-Type": "application/json"}
