"""What a bot sets on its number: its settings, its conversational automation, its commerce."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Final

import httpx
import pytest

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.openapi import build_openapi
from tests.support.documents import meta_request_examples, own_schema
from tests.support.graph_clients import simulator_graph
from tests.support.graph_errors import graph_error, no_such_object

CONFIG: Final = SimulatorConfig()
PHONE: Final = CONFIG.phone_number_id
AUTH: Final = {"Authorization": f"Bearer {CONFIG.access_token}"}
NUMBER: Final = f"/v25.0/{PHONE}"
AUTOMATION: Final = f"/v25.0/{PHONE}/conversational_automation"
COMMERCE: Final = f"/v25.0/{PHONE}/whatsapp_commerce_settings"


NUMBER_EXAMPLES: Final = meta_request_examples("/{Version}/{Phone-Number-ID}")
AUTOMATION_EXAMPLES: Final = meta_request_examples(
    "/{Version}/{Phone-Number-ID}/conversational_automation"
)


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with simulator_graph(CONFIG) as graph:
        yield graph


async def _fields(client: httpx.AsyncClient, fields: str) -> Any:
    response = await client.get(NUMBER, params={"fields": fields}, headers=AUTH)
    assert response.status_code == 200, response.text
    return response.json()


# -- POST /{phone_number_id}: Meta's updatePhoneNumberStatus ---------------------------------


@pytest.mark.parametrize("name", sorted(NUMBER_EXAMPLES))
async def test_the_number_takes_every_update_metas_description_gives(
    client: httpx.AsyncClient, name: str
) -> None:
    body = NUMBER_EXAMPLES[name]
    assert own_schema("PhoneNumberUpdate").is_valid(body)
    response = await client.post(NUMBER, json=body, headers=AUTH)
    assert response.json() == {"success": True}, response.text


async def test_a_new_display_name_is_taken_from_the_query_string_alone(
    client: httpx.AsyncClient,
) -> None:
    # @great-detail/whatsapp sends the name as a query parameter, without a body.
    response = await client.post(NUMBER, params={"new_display_name": "Ana's Bakery"}, headers=AUTH)
    assert response.json() == {"success": True}


async def test_a_pin_and_a_username_are_read_back_on_the_number(client: httpx.AsyncClient) -> None:
    assert await _fields(client, "is_pin_enabled,username") == {
        "id": PHONE,
        "is_pin_enabled": False,
    }
    form = {"pin": "123456", "username": "anasbakery"}
    assert (await client.post(NUMBER, data=form, headers=AUTH)).json() == {"success": True}
    shown = await _fields(client, "is_pin_enabled,username")
    assert shown == {"id": PHONE, "is_pin_enabled": True, "username": "anasbakery"}
    data = {"whatsapp_business_api_data": {"pin": "", "show_security_notifications": True}}
    assert (await client.post(NUMBER, json=data, headers=AUTH)).json() == {"success": True}
    assert (await _fields(client, "is_pin_enabled"))["is_pin_enabled"] is False


async def test_an_object_is_taken_as_json_text_from_a_form(client: httpx.AsyncClient) -> None:
    form = {"whatsapp_business_api_data": '{"pin": "654321"}'}
    assert (await client.post(NUMBER, data=form, headers=AUTH)).json() == {"success": True}
    assert (await _fields(client, "is_pin_enabled"))["is_pin_enabled"] is True


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"pin": "12345"}, "pin: must be a string of six digits"),
        ({"pin": 123456}, "pin: must be a string of six digits"),
        ({"new_display_name": "A"}, "new_display_name: must be a name of 2 to 75 characters"),
        ({"new_display_name": "A" * 76}, "new_display_name: must be a name of 2 to 75"),
        ({"search_visibility": "SHOWN"}, "search_visibility: must be one of VISIBLE, HIDDEN"),
        ({"connection_status": "ON"}, "connection_status: must be one of CONNECTED"),
        ({"username": ""}, "username: must be a non-empty string"),
        ({"webhook_url": "ftp://bot"}, "webhook_url: must be an http:// or https:// URL"),
        ({"whatsapp_business_api_data": "on"}, "whatsapp_business_api_data: must be an object"),
        (
            {"whatsapp_business_api_data": {"pin": "1"}},
            "whatsapp_business_api_data.pin: must be a string of six digits",
        ),
        (
            {"whatsapp_business_api_data": {"notify_user_change_number": "yes"}},
            "whatsapp_business_api_data.notify_user_change_number: must be true or false",
        ),
        (
            {"whatsapp_business_api_data": {"colour": "red"}},
            "whatsapp_business_api_data.colour: is not one of pin,",
        ),
        (
            {"username": "shop", "webhook_configuration": {"override_callback_uri": "https://x"}},
            "webhook_configuration.verify_token: required",
        ),
    ],
)
async def test_a_bad_setting_is_refused_naming_it_and_changes_nothing(
    client: httpx.AsyncClient, body: dict[str, Any], problem: str
) -> None:
    update = {"username": "kept_out", "pin": "111111", **body}
    response = await client.post(NUMBER, json=update, headers=AUTH)
    assert graph_error(response).startswith(problem)
    assert await _fields(client, "is_pin_enabled,username") == {
        "id": PHONE,
        "is_pin_enabled": False,
    }


@pytest.mark.parametrize("body", [{}, {"colour": "red"}, {"messaging_product": "whatsapp"}])
async def test_an_update_with_nothing_the_number_takes_names_what_it_takes(
    client: httpx.AsyncClient, body: dict[str, Any]
) -> None:
    details = graph_error(await client.post(NUMBER, json=body, headers=AUTH))
    assert details.startswith("nothing to change: give at least one of pin, new_display_name,")
    assert "webhook_configuration" in details


# -- conversational automation -----------------------------------------------------------


@pytest.mark.parametrize("name", sorted(AUTOMATION_EXAMPLES))
async def test_every_automation_metas_description_gives_is_set_and_read_back(
    client: httpx.AsyncClient, name: str
) -> None:
    body = AUTOMATION_EXAMPLES[name]
    assert own_schema("ConversationalAutomation").is_valid(body)
    assert (await client.post(AUTOMATION, json=body, headers=AUTH)).json() == {"success": True}
    read = (await client.get(AUTOMATION, headers=AUTH)).json()
    assert read == {"conversational_automation": body, "id": PHONE}


async def test_an_automation_update_changes_only_what_it_gives(client: httpx.AsyncClient) -> None:
    read = (await client.get(AUTOMATION, headers=AUTH)).json()
    empty = {"enable_welcome_message": False, "prompts": [], "commands": []}
    assert read == {"conversational_automation": empty, "id": PHONE}
    prompts = {"prompts": ["Opening hours?", "Do you deliver?"]}
    assert (await client.post(AUTOMATION, json=prompts, headers=AUTH)).json() == {"success": True}
    as_form = {"enable_welcome_message": "true"}
    assert (await client.post(AUTOMATION, data=as_form, headers=AUTH)).json() == {"success": True}
    read = (await client.get(AUTOMATION, headers=AUTH)).json()["conversational_automation"]
    assert read == {**empty, **prompts, "enable_welcome_message": True}


def _command(name: str = "help", description: str = "Get help") -> dict[str, str]:
    return {"command_name": name, "command_description": description}


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"prompts": ["a", "b", "c", "d"]}, "prompts: must be a list of at most 3 prompts"),
        ({"prompts": ["x" * 81]}, "prompts[0]: must be text of 80 at most"),
        ({"prompts": "hello"}, "prompts: must be a list of at most 3"),
        ({"commands": [_command()] * 31}, "commands: must be a list of at most 30 commands"),
        ({"commands": [_command("order-status")]}, "commands[0].command_name: required:"),
        ({"commands": [_command("x" * 31)]}, "commands[0].command_name: must be at most 30"),
        ({"commands": [_command(description="x" * 257)]}, "commands[0].command_description:"),
        ({"commands": [_command(), _command()]}, "commands[1].command_name: 'help' is given twice"),
        ({"commands": ["help"]}, "commands[0]: must be an object"),
        ({"enable_welcome_message": "yes"}, "enable_welcome_message: must be true or false"),
        ({}, "nothing to change: give at least one of enable_welcome_message, prompts, commands"),
    ],
)
async def test_a_bad_automation_is_refused_naming_the_field_and_changes_nothing(
    client: httpx.AsyncClient, body: dict[str, Any], problem: str
) -> None:
    update = {"prompts": ["kept out"], **body} if body else body
    response = await client.post(AUTOMATION, json=update, headers=AUTH)
    assert graph_error(response).startswith(problem)
    read = (await client.get(AUTOMATION, headers=AUTH)).json()["conversational_automation"]
    assert read["prompts"] == []


async def test_another_numbers_settings_are_unknown(client: httpx.AsyncClient) -> None:
    for path in ("/v25.0/123/conversational_automation", "/v25.0/123/whatsapp_commerce_settings"):
        no_such_object(await client.get(path, headers=AUTH), "123")
        assert (await client.get(path)).status_code == 401


# -- commerce settings -------------------------------------------------------------------


async def test_commerce_settings_start_as_metas_and_are_read_back(
    client: httpx.AsyncClient,
) -> None:
    [settings] = (await client.get(COMMERCE, headers=AUTH)).json()["data"]
    assert settings["id"].isdigit()
    assert settings == {"id": settings["id"], "is_cart_enabled": True, "is_catalog_visible": False}
    shown = await client.post(COMMERCE, params={"is_catalog_visible": "true"}, headers=AUTH)
    assert shown.json() == {"success": True}
    no_cart = await client.post(COMMERCE, json={"is_cart_enabled": False}, headers=AUTH)
    assert no_cart.json() == {"success": True}
    [read] = (await client.get(COMMERCE, headers=AUTH)).json()["data"]
    assert read == {**settings, "is_cart_enabled": False, "is_catalog_visible": True}


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({"is_cart_enabled": "false", "is_catalog_visible": "yes"}, "is_catalog_visible:"),
        ({}, "nothing to change: give at least one of is_cart_enabled, is_catalog_visible"),
    ],
)
async def test_a_bad_commerce_update_is_refused_and_changes_nothing(
    client: httpx.AsyncClient, params: dict[str, str], problem: str
) -> None:
    response = await client.post(COMMERCE, params=params, headers=AUTH)
    assert graph_error(response).startswith(problem)
    [read] = (await client.get(COMMERCE, headers=AUTH)).json()["data"]
    assert read["is_cart_enabled"] is True


# -- the document ------------------------------------------------------------------------


def test_the_document_describes_the_settings_as_meta_names_them() -> None:
    paths = build_openapi()["paths"]
    assert paths["/{version}/{media_id}"]["post"]["operationId"] == "updatePhoneNumberStatus"
    automation = paths["/{version}/{phone_number_id}/conversational_automation"]
    assert automation["post"]["operationId"] == "configureConversationalAutomation"
    commerce = paths["/{version}/{phone_number_id}/whatsapp_commerce_settings"]
    assert commerce["get"]["operationId"] == "getCommerceSettings"
    assert commerce["post"]["operationId"] == "setOrUpdateCommerceSettings"
    assert not own_schema("ConversationalAutomation").is_valid({"prompts": ["x"] * 4})
    assert not own_schema("BotCommand").is_valid(_command("x" * 31))
    assert not own_schema("PhoneNumberUpdate").is_valid({"pin": "12345"})
