"""The OpenAPI 3.1 document of the fake Graph API, served at ``/openapi.json``.

The request schemas are generated from the send models
(:mod:`channels.whatsapp.sends`), the same ones the server validates with,
under the same :class:`SendLimits`; so the document and the checks can't
drift apart. They say what is *valid* as far as JSON Schema can: a few rules
it can't (unique button titles, at most 10 rows across all sections, a media
id the store holds, a template the registry holds) are left to the server,
which answers them with Meta's error envelope like every other bad request.
The responses and paths are written here.

:func:`build_openapi` takes extra path items and component schemas, so the
harness can describe its own control endpoints (``/_harness/...``) in the
same document.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from channels.whatsapp._number_settings import number_paths, number_schemas
from channels.whatsapp._openapi_parts import (
    FIELDS,
    REF,
    VERSION,
    VERSION_PATTERN,
    change_operation,
    error_response,
    errors,
    json_body,
    obj,
    path_param,
    query,
    read_operation,
    ref,
)
from channels.whatsapp._registration import registration_paths, registration_schemas
from channels.whatsapp.blocking import block_paths, block_schemas
from channels.whatsapp.sends.limits import DEFAULT_LIMITS, SendLimits
from channels.whatsapp.sends.request import send_schemas

__all__ = ["GRAPH_API_VERSIONS", "VERSION_PATTERN", "build_openapi", "error_response", "json_body"]

GRAPH_API_VERSIONS: Final = tuple(f"v{major}.0" for major in range(19, 27))
"""The Graph API versions Meta's changelog lists for WhatsApp, v19.0 to v26.0 (any version is
served: an expired one is upgraded, as Meta upgrades it)."""


def _response_schemas() -> dict[str, Any]:
    """The schemas of what the endpoints answer (requests come from the send models)."""
    error = obj(
        ["message", "type", "code", "fbtrace_id"],
        message={"type": "string"},
        type={"type": "string"},
        code={"type": "integer"},
        error_subcode={"type": "integer"},
        error_data=obj(
            ["details"], messaging_product={"const": "whatsapp"}, details={"type": "string"}
        ),
        fbtrace_id={"type": "string"},
    )
    contact = obj(
        ["input"], input={"type": "string"}, wa_id={"type": "string"}, user_id={"type": "string"}
    )
    message = obj(
        ["id"],
        id={"type": "string", "pattern": "^wamid\\."},
        message_status={"type": "string"},
        group_id={"type": "string"},
    )
    return {
        "SendResponse": obj(
            ["messaging_product", "contacts", "messages"],
            messaging_product={"const": "whatsapp"},
            contacts={"type": "array", "items": contact},
            messages={"type": "array", "minItems": 1, "items": message},
        ),
        "Success": obj(["success"], success={"const": True}),
        "MediaUpload": {
            "type": "object",
            "required": ["file"],
            "properties": {
                "messaging_product": {
                    "const": "whatsapp",
                    "description": "Required, here or in the query string.",
                },
                "file": {
                    "type": "string",
                    "contentMediaType": "application/octet-stream",
                    "description": "The file, its part's Content-Type its MIME type.",
                },
                "type": {
                    "type": "string",
                    "description": "The file's MIME type, where its part names none.",
                },
            },
        },
        "MediaId": obj(["id"], id={"type": "string", "pattern": "^[0-9]+$"}),
        "MediaInfo": obj(
            ["messaging_product", "url", "mime_type", "sha256", "file_size", "id"],
            messaging_product={"const": "whatsapp"},
            url={"type": "string"},
            mime_type={"type": "string"},
            sha256={"type": "string", "pattern": "^[0-9a-f]{64}$"},
            file_size={"type": "string", "pattern": "^[0-9]+$"},
            id={"type": "string"},
        ),
        "GraphError": obj(["error"], error=error),
        "Node": obj(["id"], id={"type": "string"}),
        "Page": obj(
            ["data"],
            data={"type": "array", "items": {"type": "object"}},
            paging={"type": "object"},
            summary={"type": "object"},
        ),
        "BusinessProfile": obj(
            ["data"], data={"type": "array", "items": obj(["messaging_product"])}
        ),
        "BusinessProfileUpdate": {
            "type": "object",
            "required": ["messaging_product"],
            "additionalProperties": False,
            "properties": {
                "messaging_product": {"const": "whatsapp"},
                "about": {"type": "string", "minLength": 1, "maxLength": 139},
                "address": {"type": "string", "maxLength": 256},
                "description": {"type": "string", "maxLength": 256},
                "email": {"type": "string", "maxLength": 128},
                "vertical": {"type": "string"},
                "websites": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                "profile_picture_handle": {"type": "string", "minLength": 1},
            },
        },
    }


def _owner(description: str) -> dict[str, Any]:
    """The media endpoint's optional ``phone_number_id`` query parameter."""
    return {
        "name": "phone_number_id",
        "in": "query",
        "required": False,
        "description": description,
        "schema": {"type": "string"},
    }


_SEND_ERRORS = ("400", "401", "403", "404", "413", "500", "503")


def _paths() -> dict[str, Any]:
    phone = path_param("phone_number_id", "The business phone number's id.")
    media_id = path_param("media_id", "A media id from an upload or a webhook.")
    return {
        "/{version}/{phone_number_id}/messages": {
            "post": {
                "operationId": "sendMessage",
                "summary": "Send a message, mark one read, or show a typing indicator.",
                "parameters": [VERSION, phone],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": ref("SendRequest")}},
                },
                "responses": {
                    "200": json_body(
                        {"anyOf": [ref("SendResponse"), ref("Success")]},
                        "Accepted: the message's wamid, or success for a read receipt.",
                    ),
                    **errors(*_SEND_ERRORS),
                },
            }
        },
        "/{version}/{phone_number_id}/media": {
            "post": {
                "operationId": "uploadMedia",
                "summary": "Upload a file to send later by id.",
                "parameters": [
                    VERSION,
                    phone,
                    {
                        "name": "messaging_product",
                        "in": "query",
                        "required": False,
                        "description": "whatsapp, if the form does not carry it.",
                        "schema": {"const": "whatsapp"},
                    },
                ],
                "requestBody": {
                    "required": True,
                    "content": {"multipart/form-data": {"schema": ref("MediaUpload")}},
                },
                "responses": {
                    "200": json_body(ref("MediaId"), "The new media id."),
                    **errors("400", "401", "413", "500"),
                },
            }
        },
        "/{version}/{media_id}": {
            "get": {
                "operationId": "getMedia",
                "summary": "Media metadata, with a download URL valid for 5 minutes; or the"
                " business's phone number, its account or a template, by their ids.",
                "parameters": [
                    VERSION,
                    media_id,
                    _owner("Only answer if the media was uploaded on this number."),
                    FIELDS,
                ],
                "responses": {
                    "200": json_body(
                        {"anyOf": [ref("MediaInfo"), ref("Node")]},
                        "The media's metadata, or the node's fields.",
                    ),
                    **errors("400", "401", "404", "500"),
                },
            },
            "post": {
                "operationId": "updatePhoneNumberStatus",
                "summary": "For the business's number: its settings (pin, new_display_name,"
                " whatsapp_business_api_data, search_visibility, username, connection_status,"
                " webhook_url) and its own webhook URL (webhook_configuration:"
                " override_callback_uri, verify_token). The parameters may also come as"
                " query or form parameters.",
                "parameters": [VERSION, media_id],
                "requestBody": {
                    "required": False,
                    "content": {"application/json": {"schema": ref("PhoneNumberUpdate")}},
                },
                "responses": {
                    "200": json_body(ref("Success"), "Done."),
                    **errors("400", "401", "404", "500"),
                },
            },
            "delete": {
                "operationId": "deleteMedia",
                "summary": "Delete uploaded media.",
                "parameters": [
                    VERSION,
                    media_id,
                    _owner("Only delete the media if it was uploaded on this number."),
                ],
                "responses": {
                    "200": json_body(ref("Success"), "Deleted."),
                    **errors("400", "401", "404", "500"),
                },
            },
        },
        **_account_paths(phone),
        **number_paths(phone),
        **registration_paths(phone),
        **block_paths(phone),
        **_subscription_paths(),
        "/_media/{token}": {
            "get": {
                "operationId": "downloadMedia",
                "summary": "Download media through a URL from getMedia (needs the token).",
                "parameters": [path_param("token", "The URL's opaque token.")],
                "responses": {
                    "200": {
                        "description": "The file, with its MIME type.",
                        "content": {"*/*": {"schema": {"type": "string"}}},
                    },
                    **errors("401", "404", "500"),
                },
            }
        },
        "/openapi.json": {
            "get": {
                "operationId": "openapi",
                "summary": "This document.",
                "security": [],
                "responses": {"200": json_body({"type": "object"}, "The OpenAPI document.")},
            }
        },
    }


def _account_paths(phone: Mapping[str, Any]) -> dict[str, Any]:
    """The business account's read endpoints (:mod:`channels.whatsapp.account`)."""
    waba = path_param("waba_id", "The WhatsApp Business Account's id.")
    paging = [
        query("limit", "At most this many on a page (25 by default)."),
        query("after", "The page after this cursor."),
        query("before", "The page before this cursor."),
    ]
    page = {"200": json_body(ref("Page"), "A page of them."), **errors("400", "401", "500")}
    refused = {**errors("400", "401", "500")}
    return {
        "/{version}/{phone_number_id}/whatsapp_business_profile": {
            "get": read_operation(
                "getBusinessProfile",
                "The number's business profile.",
                [VERSION, phone, FIELDS],
                "BusinessProfile",
                "The profile.",
            ),
            "post": change_operation(
                "updateBusinessProfile",
                "Change the number's business profile.",
                [VERSION, phone],
                "BusinessProfileUpdate",
            ),
        },
        "/{version}/{waba_id}/phone_numbers": {
            "get": {
                "operationId": "getPhoneNumbers",
                "summary": "The account's phone numbers.",
                "parameters": [VERSION, waba, FIELDS, *paging],
                "responses": page,
            }
        },
        "/{version}/{waba_id}/message_templates": {
            "get": {
                "operationId": "getTemplates",
                "summary": "The account's message templates.",
                "parameters": [
                    VERSION,
                    waba,
                    FIELDS,
                    *paging,
                    *(query(key, f"Only templates of this {key}.") for key in _TEMPLATE_FILTERS),
                    query("summary", "true, or the counts to give (total_count ...)."),
                ],
                "responses": page,
            },
            "post": {
                "operationId": "createTemplate",
                "summary": "Refused: the simulator's templates are given, not created.",
                "parameters": [VERSION, waba],
                "responses": refused,
            },
            "delete": {
                "operationId": "deleteTemplate",
                "summary": "Refused: the simulator's templates are given, not deleted.",
                "parameters": [VERSION, waba],
                "responses": refused,
            },
        },
    }


_TEMPLATE_FILTERS: Final = ("name", "status", "language", "category")


def _subscription_paths() -> dict[str, Any]:
    """Where a bot registers its webhook URL (:mod:`channels.whatsapp.subscriptions`)."""
    app_id = path_param("app_id", "The app's id.", "^[0-9]+$")
    waba = path_param("waba_id", "The WhatsApp Business Account's id.")
    done = {"200": json_body(ref("Success"), "Done."), **errors("400", "401", "500")}
    token = {
        "operationId": "appAccessToken",
        "summary": "The app's access token, for its id and secret.",
        "security": [],
        "parameters": [
            query("grant_type", "client_credentials."),
            query("client_id", "The app's id."),
            query("client_secret", "The app's secret."),
        ],
        "responses": {
            "200": json_body(obj(["access_token"], access_token={"type": "string"}), "A token."),
            **errors("400", "500"),
        },
    }
    return {
        "/oauth/access_token": {"get": token},
        "/{version}/oauth/access_token": {
            "get": {
                **token,
                "operationId": "appAccessTokenVersioned",
                "parameters": [VERSION, *token["parameters"]],
            }
        },
        "/{version}/{app_id}/subscriptions": {
            "post": {
                "operationId": "subscribeApp",
                "summary": "The app's webhook URL (object, callback_url, verify_token, fields);"
                " checked with a verification GET. Takes the app's token.",
                "parameters": [VERSION, app_id],
                "responses": done,
            }
        },
        "/{version}/{waba_id}/subscribed_apps": {
            "get": {
                "operationId": "getSubscribedApps",
                "summary": "The apps subscribed to the account.",
                "parameters": [VERSION, waba],
                "responses": {
                    "200": json_body(ref("Page"), "The apps."),
                    **errors("400", "401", "500"),
                },
            },
            "post": {
                "operationId": "subscribeToAccount",
                "summary": "Subscribe the app; with override_callback_uri and verify_token, the"
                " account's own webhook URL.",
                "parameters": [VERSION, waba],
                "responses": done,
            },
            "delete": {
                "operationId": "unsubscribeFromAccount",
                "summary": "Unsubscribe the app.",
                "parameters": [VERSION, waba],
                "responses": done,
            },
        },
    }


def build_openapi(
    *,
    extra_paths: Mapping[str, Mapping[str, Any]] | None = None,
    extra_schemas: Mapping[str, Mapping[str, Any]] | None = None,
    limits: SendLimits = DEFAULT_LIMITS,
    server_url: str | None = None,
) -> dict[str, Any]:
    """The OpenAPI document of the fake Graph API, plus any extra paths and schemas.

    ``extra_paths`` are OpenAPI path items keyed by path (they may refer to
    ``#/components/schemas/GraphError``); a path that is already described
    raises ``ValueError`` rather than silently replacing it.
    """
    paths = _paths()
    for path, item in (extra_paths or {}).items():
        if path in paths:
            raise ValueError(f"the OpenAPI document already describes {path}")
        paths[path] = copy.deepcopy(dict(item))
    schemas = {
        **send_schemas(limits, ref_template=REF + "{model}"),
        **_response_schemas(),
        **number_schemas(),
        **registration_schemas(),
        **block_schemas(),
    }
    schemas.update({name: copy.deepcopy(dict(s)) for name, s in (extra_schemas or {}).items()})
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "Fake WhatsApp Cloud API (Graph API)",
            "version": "1.0.0",
            "description": (
                "The WhatsApp Cloud API endpoints a bot calls, as the harness's simulator"
                " serves them. Errors use Meta's Graph error envelope."
            ),
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "access_token": {"type": "apiKey", "in": "query", "name": "access_token"},
            },
        },
        "security": [{"bearer": []}, {"access_token": []}],
    }
    if server_url is not None:
        document["servers"] = [{"url": server_url}]
    return document
