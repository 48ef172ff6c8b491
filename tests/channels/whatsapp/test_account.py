"""The business account's read endpoints: the number, the account, its templates, its profile."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Final

import httpx
import pytest

from channels.whatsapp.account import display_number, template_id
from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.router import GraphRouter
from tests.bots.loopback import free_port
from tests.support.graph_clients import simulator_graph
from tests.support.graph_errors import graph_error, no_such_object, unknown_path

CONFIG: Final = SimulatorConfig(throughput_mps=1000)
PHONE: Final = CONFIG.phone_number_id
WABA: Final = CONFIG.waba_id
AUTH: Final = {"Authorization": f"Bearer {CONFIG.access_token}"}

ORDER_READY: Final = {
    "name": "order_ready",
    "language": "en_US",
    "status": "APPROVED",
    "category": "UTILITY",
    "components": [{"type": "BODY", "text": "Hi {{1}}, order {{2}} is ready."}],
}
WELCOME_PT: Final = {
    "name": "welcome",
    "language": "pt_BR",
    "status": "PAUSED",
    "category": "MARKETING",
    "id": "555000111222333",
    "components": [{"type": "BODY", "text": "Olá {{first_name}}!"}],
}


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with simulator_graph(CONFIG) as graph:
        yield graph


@pytest.fixture
async def own() -> AsyncIterator[httpx.AsyncClient]:
    """A simulator given the business's own templates, as Meta lists them."""
    config = SimulatorConfig(templates=(ORDER_READY, WELCOME_PT))
    async with simulator_graph(config) as graph:
        yield graph


async def _get(client: httpx.AsyncClient, path: str, **params: str) -> Any:
    response = await client.get(path, params=params, headers=AUTH)
    assert response.status_code == 200, response.text
    return response.json()


# -- the number and the account ----------------------------------------------------


@pytest.mark.parametrize(
    ("number", "shown"),
    [
        # The reads of Meta's OpenAPI description write numbers so (its webhooks give digits).
        ("16315555555", "+1 631-555-5555"),
        ("+1 (555) 123-4567", "+1 555-123-4567"),
        ("442012345678", "+44 20 1234 5678"),
        ("5511987654321", "+55 11 98765-4321"),
        ("123", "123"),  # no number libphonenumber can place: as written
    ],
)
def test_the_display_number_reads_in_the_international_format(number: str, shown: str) -> None:
    assert display_number(number) == shown


async def test_the_number_answers_metas_default_fields(client: httpx.AsyncClient) -> None:
    assert await _get(client, f"/v25.0/{PHONE}") == {
        "id": PHONE,
        "display_phone_number": "+1 555-000-1111",  # as Meta's examples write it on a read
        "verified_name": "Harness Test Business",
        "quality_rating": "GREEN",
    }


async def test_fields_choose_what_is_answered(client: httpx.AsyncClient) -> None:
    answer = await _get(client, f"/v25.0/{PHONE}", fields="throughput,code_verification_status")
    # id always; HIGH for a number upgraded past Meta's 80 messages a second
    assert answer == {
        "id": PHONE,
        "throughput": {"level": "HIGH"},
        "code_verification_status": "VERIFIED",
    }
    # A field Meta has but the simulator does not set is left out, not refused.
    assert await _get(client, f"/v25.0/{PHONE}", fields="health_status") == {"id": PHONE}


async def test_a_field_the_node_lacks_is_refused(client: httpx.AsyncClient) -> None:
    response = await client.get(f"/v25.0/{PHONE}", params={"fields": "colour"}, headers=AUTH)
    assert graph_error(response) == (
        "Tried accessing nonexisting field (colour) on node type (WhatsAppBusinessPhoneNumber)"
    )


async def test_the_account_and_its_numbers(client: httpx.AsyncClient) -> None:
    account = await _get(client, f"/v25.0/{WABA}")
    assert set(account) == {"id", "name", "timezone_id", "message_template_namespace"}
    assert account["id"] == WABA
    numbers = await _get(client, f"/v25.0/{WABA}/phone_numbers", fields="display_phone_number")
    assert numbers["data"] == [{"id": PHONE, "display_phone_number": "+1 555-000-1111"}]


@pytest.mark.parametrize("path", ["/v25.0/999/phone_numbers", "/v25.0/999/message_templates"])
async def test_another_account_is_unknown(client: httpx.AsyncClient, path: str) -> None:
    no_such_object(await client.get(path, headers=AUTH), "999")


@pytest.mark.parametrize(
    "path",
    [
        f"/v25.0/{PHONE}",
        f"/v25.0/{WABA}",
        f"/v25.0/{WABA}/phone_numbers",
        f"/v25.0/{WABA}/message_templates",
        f"/v25.0/{PHONE}/whatsapp_business_profile",
    ],
)
async def test_every_read_wants_a_valid_token(client: httpx.AsyncClient, path: str) -> None:
    graph_error(await client.get(path), 401, 190)
    graph_error(await client.get(path, headers={"Authorization": "Bearer nope"}), 401, 190)
    # Graph reads a first segment that is not a version as an object (2500 past its edge).
    wrong = await client.get(path.replace("v25.0", "v25"), headers=AUTH)
    rest = path.removeprefix("/v25.0")
    if rest.count("/") > 1:
        unknown_path(wrong, rest)
    else:
        no_such_object(wrong, "v25")


async def test_a_media_id_is_still_media(client: httpx.AsyncClient) -> None:
    # The number's and the account's ids share the path of media ids; others stay unknown.
    no_such_object(await client.get("/v25.0/123456789", headers=AUTH), "123456789")
    no_such_object(await client.delete(f"/v25.0/{PHONE}", headers=AUTH), PHONE, "delete")


# -- templates -----------------------------------------------------------------------


async def test_the_built_in_templates_are_listed(client: httpx.AsyncClient) -> None:
    listed = (await _get(client, f"/v25.0/{WABA}/message_templates"))["data"]
    names = [template["name"] for template in listed]
    assert names == ["hello_world", "appointment_reminder", "order_update"]
    hello = listed[0]
    assert hello["components"][0] == {"type": "HEADER", "format": "TEXT", "text": "Hello World"}
    assert listed[1]["components"] == [
        {
            "type": "BODY",
            "text": "{{1}} {{2}}",
            "example": {"body_text": [["sample 1", "sample 2"]]},
        }
    ]
    assert all(t["status"] == "APPROVED" and t["id"].isdigit() for t in listed)


async def test_every_listed_template_can_be_sent(own: httpx.AsyncClient) -> None:
    listed = (await _get(own, f"/v25.0/{WABA}/message_templates", status="APPROVED"))["data"]
    assert [t["name"] for t in listed] == ["order_ready"]
    send = {
        "messaging_product": "whatsapp",
        "to": "5511987654321",
        "type": "template",
        "template": {
            "name": "order_ready",
            "language": {"code": "en_US"},
            "components": [
                {
                    "type": "body",
                    "parameters": [{"type": "text", "text": "Ana"}, {"type": "text", "text": "7"}],
                }
            ],
        },
    }
    response = await own.post(f"/v25.0/{PHONE}/messages", json=send, headers=AUTH)
    assert response.status_code == 200, response.text


async def test_given_templates_are_listed_as_given(own: httpx.AsyncClient) -> None:
    listed = (await _get(own, f"/v25.0/{WABA}/message_templates"))["data"]
    ready, welcome = listed
    assert ready == {
        **{key: ORDER_READY[key] for key in ("name", "language", "status", "category")},
        "components": ORDER_READY["components"],
        "id": template_id("order_ready", "en_US"),
    }
    assert welcome["id"] == "555000111222333"  # its own id, kept
    fields = "name,parameter_format"
    named = (await _get(own, f"/v25.0/{WABA}/message_templates", fields=fields))["data"]
    assert [t["parameter_format"] for t in named] == ["POSITIONAL", "NAMED"]
    assert set(named[0]) == {"id", "name", "parameter_format"}


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ({"name": "welcome"}, ["welcome"]),
        ({"name": "welc"}, []),
        ({"status": "PAUSED"}, ["welcome"]),
        ({"status": "APPROVED,PAUSED"}, ["order_ready", "welcome"]),
        ({"language": "pt_BR"}, ["welcome"]),
        ({"category": "UTILITY"}, ["order_ready"]),
        ({"category": "AUTHENTICATION"}, []),
    ],
)
async def test_templates_are_filtered(
    own: httpx.AsyncClient, query: dict[str, str], names: list[str]
) -> None:
    listed = (await _get(own, f"/v25.0/{WABA}/message_templates", **query))["data"]
    assert [t["name"] for t in listed] == names


async def test_templates_come_a_page_at_a_time(own: httpx.AsyncClient) -> None:
    first = await _get(own, f"/v25.0/{WABA}/message_templates", limit="1")
    assert [t["name"] for t in first["data"]] == ["order_ready"]
    assert "previous" not in first["paging"]
    following = await own.get(first["paging"]["next"], headers=AUTH)
    second = following.json()
    assert [t["name"] for t in second["data"]] == ["welcome"]
    assert "next" not in second["paging"]
    after = second["paging"]["cursors"]["after"]
    assert (await _get(own, f"/v25.0/{WABA}/message_templates", after=after))["data"] == []
    before = second["paging"]["cursors"]["before"]
    back = await _get(own, f"/v25.0/{WABA}/message_templates", before=before, limit="1")
    assert [t["name"] for t in back["data"]] == ["order_ready"]


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ({"limit": "0"}, "limit: must be between 1 and 1000"),
        ({"limit": "ten"}, "limit: must be a whole number"),
        ({"after": "not-a-cursor!"}, "after: is not a cursor this endpoint gave"),
    ],
)
async def test_bad_paging_is_refused(
    own: httpx.AsyncClient, query: dict[str, str], problem: str
) -> None:
    path = f"/v25.0/{WABA}/message_templates"
    assert graph_error(await own.get(path, params=query, headers=AUTH)) == problem


async def test_the_summary_counts_templates(own: httpx.AsyncClient) -> None:
    path = f"/v25.0/{WABA}/message_templates"
    answer = await _get(own, path, summary="total_count,message_template_count", status="PAUSED")
    assert answer["summary"] == {"total_count": 1, "message_template_count": 2}
    everything = (await _get(own, path, summary="true"))["summary"]
    assert everything["message_template_limit"] == 6000
    assert everything["are_translations_complete"] is True
    response = await own.get(path, params={"summary": "colour"}, headers=AUTH)
    assert "nonexisting field (colour)" in graph_error(response)


async def test_a_template_is_read_by_its_id(own: httpx.AsyncClient) -> None:
    template = await _get(own, "/v25.0/555000111222333")
    assert (template["name"], template["language"], template["status"]) == (
        "welcome",
        "pt_BR",
        "PAUSED",
    )
    by_name = await _get(own, f"/v25.0/{template_id('order_ready', 'en_US')}", fields="name")
    assert by_name == {"id": template_id("order_ready", "en_US"), "name": "order_ready"}


@pytest.mark.parametrize("method", ["POST", "DELETE"])
async def test_templates_are_not_created_or_deleted(own: httpx.AsyncClient, method: str) -> None:
    path = f"/v25.0/{WABA}/message_templates"
    response = await own.request(method, path, params={"name": "welcome"}, headers=AUTH)
    assert "--templates" in graph_error(response)
    still = (await _get(own, path, name="welcome"))["data"]
    assert len(still) == 1


def test_template_ids_are_stable_and_distinct() -> None:
    assert template_id("a", "en_US") == template_id("a", "en_US")
    ids = {template_id(f"t{n}", "en_US") for n in range(500)}
    assert len(ids) == 500
    assert all(len(found) == 15 and found.isdigit() for found in ids)


# -- the business profile -----------------------------------------------------------


async def test_the_profile_is_read_and_changed(client: httpx.AsyncClient) -> None:
    path = f"/v25.0/{PHONE}/whatsapp_business_profile"
    [profile] = (await _get(client, path))["data"]
    assert profile == {
        "about": "Hey there! I am using WhatsApp.",
        "vertical": "UNDEFINED",
        "messaging_product": "whatsapp",
    }
    update = {
        "messaging_product": "whatsapp",
        "about": "Tables for two to ten",
        "vertical": "RESTAURANT",
        "websites": ["https://example.com"],
        "email": "book@example.com",
        "profile_picture_handle": "4:cGhvdG8=:aW1hZ2UvanBlZw==:abc",
    }
    response = await client.post(path, json=update, headers=AUTH)
    assert response.json() == {"success": True}
    [changed] = (await _get(client, path))["data"]
    assert changed["about"] == "Tables for two to ten"
    assert changed["websites"] == ["https://example.com"]
    assert changed["profile_picture_url"].startswith("https://pps.whatsapp.net/")
    [chosen] = (await _get(client, path, fields="vertical"))["data"]
    assert chosen == {"vertical": "RESTAURANT", "messaging_product": "whatsapp"}


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"about": "hi"}, 'messaging_product: required, and must be "whatsapp"'),
        ({"about": "x" * 140}, "about: must be at most 139 characters"),
        ({"about": " "}, "about: must not be empty"),
        ({"email": "not an address"}, "email: is not an email address"),
        ({"vertical": "SPACESHIPS"}, "vertical: must be one of"),
        ({"vertical": {"a": 1}}, "vertical: must be one of"),
        ({"websites": ["https://a", "https://b", "https://c"]}, "websites: must be a list"),
        ({"websites": ["example.com"]}, "websites[0]: must start with http:// or https://"),
        ({"colour": "blue"}, "colour: is not a field of the business profile"),
    ],
)
async def test_a_bad_profile_update_is_refused(
    client: httpx.AsyncClient, body: dict[str, Any], problem: str
) -> None:
    path = f"/v25.0/{PHONE}/whatsapp_business_profile"
    product = {} if "about" in body and body["about"] == "hi" else {"messaging_product": "whatsapp"}
    response = await client.post(path, json={**product, **body}, headers=AUTH)
    assert graph_error(response).startswith(problem)
    [profile] = (await _get(client, path))["data"]
    assert profile["about"] == "Hey there! I am using WhatsApp."  # nothing half-applied


async def test_a_profile_update_that_is_not_json_is_refused(client: httpx.AsyncClient) -> None:
    path = f"/v25.0/{PHONE}/whatsapp_business_profile"
    response = await client.post(path, content=b"{nope", headers=AUTH)
    assert "not valid JSON" in graph_error(response)


async def test_another_numbers_profile_is_unknown(client: httpx.AsyncClient) -> None:
    no_such_object(await client.get("/v25.0/42/whatsapp_business_profile", headers=AUTH), "42")


async def test_a_run_at_a_url_answers_for_the_account_too() -> None:
    # A bot at a URL reads its number and templates through the run's shared Graph API.
    config = SimulatorConfig(waba_id="777", templates=(ORDER_READY,))
    router = GraphRouter(config, "127.0.0.1", free_port())
    transport = httpx.ASGITransport(app=router)
    async with httpx.AsyncClient(transport=transport, base_url="http://graph.local") as client:
        number = await _get(client, f"/v25.0/{PHONE}", fields="verified_name")
        listed = await _get(client, "/v25.0/777/message_templates", fields="name")
    assert number == {"id": PHONE, "verified_name": "Harness Test Business"}
    assert [t["name"] for t in listed["data"]] == ["order_ready"]
