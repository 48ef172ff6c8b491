"""The OpenAPI document, and a schemathesis run against the app it describes."""

from __future__ import annotations

import re
from typing import Any

import jsonschema_rs
import pytest
import schemathesis
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    response_schema_conformance,
    status_code_conformance,
)

from channels.whatsapp.graph import AcceptAll, create_graph_app
from channels.whatsapp.media import MediaStore
from channels.whatsapp.openapi import VERSION_PATTERN, build_openapi
from channels.whatsapp.validation import DEFAULT_LIMITS, SendLimits
from harness.clock import VirtualClock
from tests.channels.whatsapp.test_validation import load_send, send_names

PHONE = "100200300400500"
TOKEN = "EAAG-test-token"


def schema_validator(document: dict[str, Any], name: str) -> jsonschema_rs.Validator:
    """A JSON Schema validator for one component schema of ``document``."""
    root = {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    return jsonschema_rs.Draft202012Validator(root)


# -- the document -----------------------------------------------------------------


def test_every_endpoint_is_described() -> None:
    document = build_openapi()
    operations = {(method, path) for path, item in document["paths"].items() for method in item}
    assert operations == {
        ("post", "/{version}/{phone_number_id}/messages"),
        ("post", "/{version}/{phone_number_id}/media"),
        ("get", "/{version}/{media_id}"),
        ("delete", "/{version}/{media_id}"),
        ("get", "/{version}/{phone_number_id}/whatsapp_business_profile"),
        ("post", "/{version}/{phone_number_id}/whatsapp_business_profile"),
        ("get", "/{version}/{phone_number_id}/conversational_automation"),
        ("post", "/{version}/{phone_number_id}/conversational_automation"),
        ("get", "/{version}/{phone_number_id}/whatsapp_commerce_settings"),
        ("post", "/{version}/{phone_number_id}/whatsapp_commerce_settings"),
        ("get", "/{version}/{phone_number_id}/block_users"),
        ("post", "/{version}/{phone_number_id}/block_users"),
        ("delete", "/{version}/{phone_number_id}/block_users"),
        ("post", "/{version}/{phone_number_id}/register"),
        ("post", "/{version}/{phone_number_id}/deregister"),
        ("post", "/{version}/{phone_number_id}/request_code"),
        ("post", "/{version}/{phone_number_id}/verify_code"),
        ("get", "/{version}/{waba_id}/phone_numbers"),
        ("get", "/{version}/{waba_id}/message_templates"),
        ("post", "/{version}/{waba_id}/message_templates"),
        ("delete", "/{version}/{waba_id}/message_templates"),
        ("post", "/{version}/{media_id}"),
        ("get", "/oauth/access_token"),
        ("get", "/{version}/oauth/access_token"),
        ("post", "/{version}/{app_id}/subscriptions"),
        ("get", "/{version}/{waba_id}/subscribed_apps"),
        ("post", "/{version}/{waba_id}/subscribed_apps"),
        ("delete", "/{version}/{waba_id}/subscribed_apps"),
        ("get", "/_media/{token}"),
        ("get", "/openapi.json"),
    }
    assert document["openapi"].startswith("3.1")
    assert {"bearer", "access_token"} <= set(document["components"]["securitySchemes"])


@pytest.mark.parametrize("method", ["get", "delete"])
def test_the_media_endpoint_takes_the_owner_number_as_metas_does(method: str) -> None:
    operation = build_openapi()["paths"]["/{version}/{media_id}"][method]
    [owner] = [p for p in operation["parameters"] if p["name"] == "phone_number_id"]
    assert (owner["in"], owner["required"], owner["schema"]) == ("query", False, {"type": "string"})


def test_media_metadata_gives_the_file_size_as_a_string_of_digits() -> None:
    validator = schema_validator(build_openapi(), "MediaInfo")
    info = {
        "messaging_product": "whatsapp",
        "url": "http://graph.local/_media/x",
        "mime_type": "image/jpeg",
        "sha256": "0" * 64,
        "file_size": "303833",
        "id": "2621233374848975",
    }
    assert validator.is_valid(info)
    assert not validator.is_valid({**info, "file_size": 303833})


@pytest.mark.parametrize(
    ("version", "valid"),
    [
        ("v19.0", True),
        ("v25.0", True),
        ("v3.2", True),
        ("v25", False),
        ("latest", False),
        ("v25.0.1", False),
        ("25.0", False),
    ],
)
def test_version_pattern(version: str, valid: bool) -> None:
    assert (re.fullmatch(VERSION_PATTERN, version) is not None) == valid


@pytest.mark.parametrize("name", send_names())
def test_every_sample_send_fits_the_request_schema(name: str) -> None:
    assert schema_validator(build_openapi(), "SendRequest").is_valid(load_send(name))


def test_request_schema_follows_the_limits() -> None:
    body = load_send("interactive_button")
    body["interactive"]["action"]["buttons"][0]["reply"]["title"] = "x" * 21
    assert not schema_validator(build_openapi(), "SendRequest").is_valid(body)
    loose = build_openapi(limits=SendLimits(button_title=30))
    assert schema_validator(loose, "SendRequest").is_valid(body)
    assert DEFAULT_LIMITS.button_title == 20


def test_request_schema_takes_a_text_without_type() -> None:
    body = load_send("text")
    del body["type"]
    assert schema_validator(build_openapi(), "SendRequest").is_valid(body)


def test_request_schema_refuses_unknown_keys() -> None:
    validator = schema_validator(build_openapi(), "SendRequest")
    assert not validator.is_valid({**load_send("text"), "priority": "high"})
    assert not validator.is_valid({**load_send("mark_read"), "type": "text"})


def test_error_envelope_schema_fits_an_error() -> None:
    error = {
        "error": {
            "message": "(#131009) Parameter value is not valid",
            "type": "OAuthException",
            "code": 131009,
            "error_data": {"messaging_product": "whatsapp", "details": "text.body: too long"},
            "fbtrace_id": "AbCdEf123",
        }
    }
    validator = schema_validator(build_openapi(), "GraphError")
    assert validator.is_valid(error)
    del error["error"]["code"]
    assert not validator.is_valid(error)


def test_extra_paths_and_schemas() -> None:
    item: dict[str, Any] = {
        "get": {
            "responses": {
                "200": {
                    "description": "The outbox.",
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Outbox"}}
                    },
                }
            }
        }
    }
    document = build_openapi(
        extra_paths={"/_harness/outbox": item}, extra_schemas={"Outbox": {"type": "array"}}
    )
    assert document["paths"]["/_harness/outbox"] == item
    assert document["components"]["schemas"]["Outbox"] == {"type": "array"}
    item["get"]["summary"] = "changed later"
    assert "summary" not in document["paths"]["/_harness/outbox"]["get"]
    with pytest.raises(ValueError, match="already describes"):
        build_openapi(extra_paths={"/openapi.json": item})


def test_server_url() -> None:
    assert build_openapi(server_url="http://sim:8080")["servers"] == [{"url": "http://sim:8080"}]
    assert "servers" not in build_openapi()


# -- schemathesis against the app ------------------------------------------------------

_clock = VirtualClock()
_app = create_graph_app(
    access_tokens={TOKEN},
    phone_numbers={PHONE: "15550001111"},
    on_send=AcceptAll(),
    media=MediaStore(_clock),
    clock=_clock,
    app_secret="app-secret",
)
_config = schemathesis.Config.from_dict(
    {
        "seed": 20260218,
        "headers": {"Authorization": f"Bearer {TOKEN}"},
        # A known number lets generated bodies reach validation (unknown ones: test_graph.py).
        "parameters": {"phone_number_id": PHONE},
        "generation": {"max-examples": 40},
    }
)
schema = schemathesis.openapi.from_asgi("/openapi.json", _app, config=_config)


@pytest.mark.slow
@schema.parametrize()
def test_fake_graph_api_conforms_to_its_document(case: schemathesis.Case[Any]) -> None:
    """Positive and negative cases: never a 5xx, and every answer is documented.

    Not schemathesis's check that a method left undocumented answers 405:
    Graph answers 400 with subcode 33 there, as the simulator does
    (``test_graph.py``).
    """
    case.call_and_validate(
        checks=[
            not_a_server_error,
            status_code_conformance,
            content_type_conformance,
            response_schema_conformance,
            ignored_auth,
        ]
    )
