"""A number's registration: register, deregister, and the verification code."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Final

import httpx
import pytest

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.openapi import build_openapi
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.clock import VirtualClock
from harness.trace import OutboundSend
from tests.support.documents import meta_request_examples, own_schema
from tests.support.graph_clients import simulator_graph
from tests.support.graph_errors import graph_error, no_such_object

CONFIG: Final = SimulatorConfig()
PHONE: Final = CONFIG.phone_number_id
AUTH: Final = {"Authorization": f"Bearer {CONFIG.access_token}"}
BASE: Final = f"/v25.0/{PHONE}"
TEXT: Final = {"messaging_product": "whatsapp", "to": "5511987654321", "text": {"body": "hi"}}


def _examples(operation: str) -> dict[str, Any]:
    """The request examples of the ``POST`` of ``operation`` in Meta's description."""
    examples = meta_request_examples(f"/{{Version}}/{{Phone-Number-ID}}/{operation}")
    return {f"{operation}:{name}": value for name, value in examples.items()}


EXAMPLES: Final = {**_examples("register"), **_examples("request_code"), **_examples("verify_code")}
SCHEMAS: Final = {
    "register": "RegisterRequest",
    "request_code": "RequestCodeRequest",
    "verify_code": "VerifyCodeRequest",
}


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with simulator_graph(CONFIG) as graph:
        yield graph


async def _post(client: httpx.AsyncClient, operation: str, body: object = None) -> httpx.Response:
    return await client.post(f"{BASE}/{operation}", json=body, headers=AUTH)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
async def test_every_request_metas_description_gives_is_taken(
    client: httpx.AsyncClient, name: str
) -> None:
    operation = name.split(":")[0]
    assert own_schema(SCHEMAS[operation]).is_valid(EXAMPLES[name])
    response = await _post(client, operation, EXAMPLES[name])
    assert response.json() == {"success": True}, response.text


async def test_a_deregistered_number_sends_nothing_until_it_registers(
    client: httpx.AsyncClient,
) -> None:
    assert (await client.post(f"{BASE}/messages", json=TEXT, headers=AUTH)).status_code == 200
    assert (await _post(client, "deregister")).json() == {"success": True}
    refused = await client.post(f"{BASE}/messages", json=TEXT, headers=AUTH)
    assert refused.json()["error"]["message"].startswith("(#133010)")
    graph_error(refused, 400, 133010)
    # Deregistering again: Meta's own example of a number not registered.
    again = (await _post(client, "deregister")).json()["error"]
    assert (again["code"], again["error_subcode"]) == (100, 2207051)
    registered = await _post(client, "register", {"messaging_product": "whatsapp", "pin": "246810"})
    assert registered.json() == {"success": True}
    assert (await client.post(f"{BASE}/messages", json=TEXT, headers=AUTH)).status_code == 200


async def test_registering_needs_the_two_step_pin_once_there_is_one(
    client: httpx.AsyncClient,
) -> None:
    assert (await client.post(BASE, json={"pin": "135791"}, headers=AUTH)).json()["success"]
    wrong = await _post(client, "register", {"messaging_product": "whatsapp", "pin": "000000"})
    graph_error(wrong, 400, 133005)
    right = await _post(client, "register", {"messaging_product": "whatsapp", "pin": "135791"})
    assert right.json() == {"success": True}
    # A PIN turned off (empty) is no longer asked for; the next registration sets one again.
    assert (await client.post(BASE, json={"pin": ""}, headers=AUTH)).json()["success"]
    new = await _post(client, "register", {"messaging_product": "whatsapp", "pin": "000000"})
    assert new.json() == {"success": True}
    number = (await client.get(BASE, params={"fields": "is_pin_enabled"}, headers=AUTH)).json()
    assert number["is_pin_enabled"] is True


@pytest.mark.parametrize(
    ("operation", "body", "field"),
    [
        ("register", {"pin": "123456"}, "messaging_product"),
        ("register", {"messaging_product": "whatsapp"}, "pin"),
        ("register", {"messaging_product": "whatsapp", "pin": "12345"}, "pin"),
        ("register", {"messaging_product": "whatsapp", "pin": 123456}, "pin"),
        ("register", {"messaging_product": "whatsapp", "pin": "123456", "tier": "X"}, "tier"),
        (
            "register",
            {"messaging_product": "whatsapp", "pin": "123456", "backup": {"password": "p"}},
            "backup",
        ),
        (
            "register",
            {"messaging_product": "whatsapp", "pin": "123456", "data_localization_region": "de"},
            "data_localization_region",
        ),
        ("request_code", {"code_method": "EMAIL", "language": "en_US"}, "code_method"),
        ("request_code", {"code_method": "SMS", "language": "English"}, "language"),
        ("request_code", {"code_method": "SMS", "language": "en US"}, "language"),
        ("request_code", {"code_method": "SMS"}, "language"),
        ("verify_code", {}, "code"),
        ("verify_code", {"code": "12-456"}, "code"),
    ],
)
async def test_a_bad_request_is_refused_naming_the_field_and_changes_nothing(
    client: httpx.AsyncClient, operation: str, body: dict[str, Any], field: str
) -> None:
    assert graph_error(await _post(client, operation, body)).startswith(f"{field}:")
    assert (await client.post(f"{BASE}/messages", json=TEXT, headers=AUTH)).status_code == 200


async def test_form_fields_and_the_query_string_are_read_as_graph_reads_them(
    client: httpx.AsyncClient,
) -> None:
    form = await client.post(
        f"{BASE}/request_code", data={"code_method": "VOICE", "language": "pt_BR"}, headers=AUTH
    )
    assert form.json() == {"success": True}
    query = await client.post(f"{BASE}/verify_code", params={"code": "654321"}, headers=AUTH)
    assert query.json() == {"success": True}
    # Meta's own Node SDK asks in "en"; its description takes xx_XX, xx-XX and longer locales.
    for language in ("en", "pt-BR", "zh_Hant_TW"):
        body = {"code_method": "SMS", "language": language}
        assert (await _post(client, "request_code", body)).json() == {"success": True}


async def test_another_number_and_a_missing_token_are_refused_first(
    client: httpx.AsyncClient,
) -> None:
    body = {"messaging_product": "whatsapp", "pin": "123456"}
    no_such_object(await client.post("/v25.0/42/register", json=body, headers=AUTH), "42", "post")
    assert (await client.post(f"{BASE}/register", json=body)).status_code == 401
    # A method the endpoint does not take: Graph's answer about the number.
    no_such_object(await client.get(f"{BASE}/deregister", headers=AUTH), PHONE)


def test_the_document_names_the_operations_as_meta_does() -> None:
    paths = build_openapi()["paths"]
    names = {
        operation: paths[f"/{{version}}/{{phone_number_id}}/{operation}"]["post"]["operationId"]
        for operation in ("register", "deregister", "request_code", "verify_code")
    }
    assert names == {
        "register": "registerWhatsAppBusinessPhoneNumber",
        "deregister": "deregisterPhoneNumber",
        "request_code": "requestVerificationCode",
        "verify_code": "verifyPhoneNumberCode",
    }
    assert not own_schema("RegisterRequest").is_valid({"messaging_product": "whatsapp", "pin": "1"})


async def test_a_send_refused_for_want_of_registration_is_in_the_trace() -> None:
    # The agent's trace says why it went silent: its send, refused with 133010.
    sim = WhatsAppSimulator(CONFIG, clock=VirtualClock())
    try:
        async with sim.graph_client() as client:
            assert (await _post(client, "deregister")).json() == {"success": True}
            body = {**TEXT, "type": "text"}
            refused = await client.post(f"{BASE}/messages", json=body, headers=AUTH)
            graph_error(refused, 400, 133010)
        [send] = [e for e in sim.conversation().events if isinstance(e, OutboundSend)]
        assert send.error is not None
        assert (send.error.code, send.text) == (133010, "hi")
    finally:
        await sim.aclose()


@pytest.mark.parametrize(
    ("path", "headers", "code"),
    [
        (f"{BASE}/messages", {"Authorization": "Bearer not-the-token"}, 190),
        ("/v25.0/999/messages", AUTH, 100),  # a phone_number_id of no business
    ],
)
async def test_a_send_refused_for_its_token_or_number_is_in_the_trace(
    path: str, headers: dict[str, str], code: int
) -> None:
    # A misconfigured agent: every send refused before its body is read. The trace says so,
    # so that sends_valid names the refusal instead of the agent seeming to say nothing.
    sim = WhatsAppSimulator(CONFIG, clock=VirtualClock())
    try:
        async with sim.graph_client() as client:
            refused = await client.post(path, json={**TEXT, "type": "text"}, headers=headers)
            assert refused.json()["error"]["code"] == code
        [send] = [e for e in sim.conversation().events if isinstance(e, OutboundSend)]
        assert send.error is not None
        assert (send.error.code, send.text, send.user) == (code, "hi", "5511987654321")
    finally:
        await sim.aclose()
