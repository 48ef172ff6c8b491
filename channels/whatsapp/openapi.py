"""The OpenAPI 3.1 document of the fake Graph API, served at ``/openapi.json``.

The request schemas are written from the same :class:`SendLimits` the
validator enforces, so a limit changes in one place. They describe what is
*valid*; a few rules JSON Schema can't say (unique button titles, at most 10
rows across all sections, a media id the store holds, a template the
registry holds) are left to the server, which answers them with Meta's
error envelope like every other bad request.

:func:`build_openapi` takes extra path items and component schemas, so the
harness can describe its own control endpoints (``/_harness/...``) in the
same document.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from channels.whatsapp.validation import (  # the loose set is shared, not public API
    _LOOSE_INTERACTIVE,
    DEFAULT_LIMITS,
    MESSAGE_TYPES,
    SendLimits,
)

__all__ = ["VERSION_PATTERN", "build_openapi", "error_response", "json_body"]

VERSION_PATTERN: Final = r"^v[0-9]+\.[0-9]+$"
"""What the ``{version}`` path segment must look like (``v25.0``)."""

_REF = "#/components/schemas/"
_ERROR_STATUSES: Final = {
    "400": "A bad request, or one Meta refuses (rate limits answer 400 with their code).",
    "401": "The access token is missing, unknown or expired (code 190).",
    "403": "The business lacks a permission or is blocked.",
    "404": "Not found: an unknown template (132001) or path.",
    "500": "Something went wrong inside the simulator (131000).",
    "503": "The service is unavailable (131016).",
}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": _REF + name}


def _string(max_len: int | None = None, *, min_len: int = 1) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "minLength": min_len}
    if max_len is not None:
        schema["maxLength"] = max_len
    return schema


def _object(required: list[str], **properties: Any) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": properties}


def _text_of(max_len: int) -> dict[str, Any]:
    return _object(["text"], text=_string(max_len))


def json_body(schema: Mapping[str, Any], description: str) -> dict[str, Any]:
    """A response (or request body) object holding JSON described by ``schema``."""
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def error_response(description: str) -> dict[str, Any]:
    """A response object carrying Meta's Graph error envelope."""
    return json_body(_ref("GraphError"), description)


def _media(limits: SendLimits, *, caption: bool, filename: bool) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "id": _string(),
        "link": {"type": "string", "pattern": "^https?://[^/?#\\s]+"},
    }
    if caption:
        properties["caption"] = _string(limits.caption, min_len=0)
    if filename:
        properties["filename"] = _string(limits.filename)
    return {
        "type": "object",
        "properties": properties,
        "oneOf": [{"required": ["id"]}, {"required": ["link"]}],
    }


def _button_message(limits: SendLimits) -> dict[str, Any]:
    header = {
        "type": "object",
        "required": ["type"],
        "properties": {
            "type": {"enum": ["text", "image", "video", "document"]},
            "text": _string(limits.header_text),
            "image": _ref("MediaObject"),
            "video": _ref("MediaObject"),
            "document": _ref("MediaObject"),
        },
    }
    reply = _object(
        ["id", "title"], id=_string(limits.button_id), title=_string(limits.button_title)
    )
    button = _object(["type", "reply"], type={"const": "reply"}, reply=reply)
    action = _object(
        ["buttons"],
        buttons={"type": "array", "minItems": 1, "maxItems": limits.buttons, "items": button},
    )
    return _object(
        ["type", "body", "action"],
        type={"const": "button"},
        header=header,
        body=_text_of(limits.button_body),
        footer=_text_of(limits.footer_text),
        action=action,
    )


def _list_message(limits: SendLimits) -> dict[str, Any]:
    row = _object(
        ["id", "title"],
        id=_string(limits.row_id),
        title=_string(limits.row_title),
        description=_string(limits.row_description, min_len=0),
    )
    section = _object(
        ["rows"],
        title=_string(limits.section_title),
        rows={"type": "array", "minItems": 1, "maxItems": limits.rows, "items": row},
    )
    action = _object(
        ["button", "sections"],
        button=_string(limits.list_button),
        sections={"type": "array", "minItems": 1, "maxItems": limits.sections, "items": section},
    )
    return _object(
        ["type", "body", "action"],
        type={"const": "list"},
        header=_object(["type", "text"], type={"const": "text"}, text=_string(limits.header_text)),
        body=_text_of(limits.list_body),
        footer=_text_of(limits.footer_text),
        action=action,
    )


def _contents(limits: SendLimits) -> dict[str, Any]:
    """The schema of the object each message type carries, by type."""
    parameter = _object(["type"], type=_string(), text={"type": "string"})
    component = _object(["type"], type=_string(), parameters={"type": "array", "items": parameter})
    other_interactive = _object(
        ["type", "action"],
        type={"enum": sorted(_LOOSE_INTERACTIVE)},
        action={"type": "object"},
    )
    contact = _object(["name"], name=_object(["formatted_name"], formatted_name=_string()))
    return {
        "text": _object(["body"], body=_string(limits.text_body), preview_url={"type": "boolean"}),
        "image": _ref("CaptionedMedia"),
        "video": _ref("CaptionedMedia"),
        "document": _media(limits, caption=True, filename=True),
        "audio": _ref("MediaObject"),
        "sticker": _ref("MediaObject"),
        "interactive": {"oneOf": [_ref("ButtonMessage"), _ref("ListMessage"), other_interactive]},
        "template": _object(
            ["name", "language"],
            name=_string(limits.template_name),
            language=_object(["code"], code=_string(16), policy={"type": "string"}),
            components={"type": "array", "items": component},
        ),
        "reaction": _object(
            ["message_id", "emoji"], message_id=_string(), emoji={"type": "string"}
        ),
        "location": _object(
            ["latitude", "longitude"],
            latitude={"type": "number", "minimum": -90, "maximum": 90},
            longitude={"type": "number", "minimum": -180, "maximum": 180},
            name={"type": "string"},
            address={"type": "string"},
        ),
        "contacts": {"type": "array", "minItems": 1, "items": contact},
    }


def _message_variant(kind: str, content: dict[str, Any], limits: SendLimits) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "messaging_product": {"const": "whatsapp"},
        "recipient_type": {"const": "individual"},
        "to": {"type": "string", "pattern": "^\\+?[0-9][0-9 -]{3,30}$"},
        "recipient": {"type": "string", "pattern": "^[A-Z]{2}\\.[0-9]+$"},
        "type": {"const": kind},
        kind: content,
        "biz_opaque_callback_data": _string(limits.callback_data, min_len=0),
    }
    if kind != "reaction":
        properties["context"] = _object(["message_id"], message_id=_string())
    # Meta's reference: a body without ``type`` is a text message.
    required = (
        ["messaging_product", kind] if kind == "text" else ["messaging_product", "type", kind]
    )
    return {
        "title": f"{kind} message",
        "type": "object",
        "required": required,
        "properties": properties,
        "additionalProperties": False,
        "anyOf": [{"required": ["to"]}, {"required": ["recipient"]}],
    }


def _schemas(limits: SendLimits) -> dict[str, Any]:
    contents = _contents(limits)
    mark_read = _object(
        ["messaging_product", "status", "message_id"],
        messaging_product={"const": "whatsapp"},
        status={"const": "read"},
        message_id=_string(),
        typing_indicator=_object(["type"], type={"const": "text"}),
        # Accepted and ignored, as some clients send them with a read receipt.
        to={"type": "string"},
        recipient={"type": "string"},
        recipient_type={"type": "string"},
    )
    mark_read["additionalProperties"] = False
    error = _object(
        ["message", "type", "code", "fbtrace_id"],
        message={"type": "string"},
        type={"type": "string"},
        code={"type": "integer"},
        error_subcode={"type": "integer"},
        error_data=_object(
            ["details"], messaging_product={"const": "whatsapp"}, details={"type": "string"}
        ),
        fbtrace_id={"type": "string"},
    )
    contact = _object(
        ["input"], input={"type": "string"}, wa_id={"type": "string"}, user_id={"type": "string"}
    )
    message = _object(
        ["id"],
        id={"type": "string", "pattern": "^wamid\\."},
        message_status={"type": "string"},
        group_id={"type": "string"},
    )
    return {
        "SendRequest": {
            "anyOf": [
                *(_message_variant(kind, contents[kind], limits) for kind in sorted(MESSAGE_TYPES)),
                _ref("MarkRead"),
            ]
        },
        "MarkRead": mark_read,
        "MediaObject": _media(limits, caption=False, filename=False),
        "CaptionedMedia": _media(limits, caption=True, filename=False),
        "ButtonMessage": _button_message(limits),
        "ListMessage": _list_message(limits),
        "SendResponse": _object(
            ["messaging_product", "contacts", "messages"],
            messaging_product={"const": "whatsapp"},
            contacts={"type": "array", "items": contact},
            messages={"type": "array", "minItems": 1, "items": message},
        ),
        "Success": _object(["success"], success={"const": True}),
        "MediaUpload": {
            "type": "object",
            "required": ["messaging_product", "file", "type"],
            "properties": {
                "messaging_product": {"const": "whatsapp"},
                "file": {"type": "string", "contentMediaType": "application/octet-stream"},
                "type": {"type": "string"},
            },
        },
        "MediaId": _object(["id"], id={"type": "string", "pattern": "^[0-9]+$"}),
        "MediaInfo": _object(
            ["messaging_product", "url", "mime_type", "sha256", "file_size", "id"],
            messaging_product={"const": "whatsapp"},
            url={"type": "string"},
            mime_type={"type": "string"},
            sha256={"type": "string", "pattern": "^[0-9a-f]{64}$"},
            file_size={"type": "integer", "minimum": 0},
            id={"type": "string"},
        ),
        "GraphError": _object(["error"], error=error),
    }


def _path_param(name: str, description: str, pattern: str | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "minLength": 1}
    if pattern is not None:
        schema["pattern"] = pattern
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": description,
        "schema": schema,
    }


def _errors(*statuses: str) -> dict[str, Any]:
    return {status: error_response(_ERROR_STATUSES[status]) for status in statuses}


_VERSION = _path_param("version", "A Graph API version, such as v25.0.", VERSION_PATTERN)
_SEND_ERRORS = ("400", "401", "403", "404", "500", "503")


def _paths() -> dict[str, Any]:
    phone = _path_param("phone_number_id", "The business phone number's id.")
    media_id = _path_param("media_id", "A media id from an upload or a webhook.")
    return {
        "/{version}/{phone_number_id}/messages": {
            "post": {
                "operationId": "sendMessage",
                "summary": "Send a message, mark one read, or show a typing indicator.",
                "parameters": [_VERSION, phone],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": _ref("SendRequest")}},
                },
                "responses": {
                    "200": json_body(
                        {"anyOf": [_ref("SendResponse"), _ref("Success")]},
                        "Accepted: the message's wamid, or success for a read receipt.",
                    ),
                    **_errors(*_SEND_ERRORS),
                },
            }
        },
        "/{version}/{phone_number_id}/media": {
            "post": {
                "operationId": "uploadMedia",
                "summary": "Upload a file to send later by id.",
                "parameters": [_VERSION, phone],
                "requestBody": {
                    "required": True,
                    "content": {"multipart/form-data": {"schema": _ref("MediaUpload")}},
                },
                "responses": {
                    "200": json_body(_ref("MediaId"), "The new media id."),
                    **_errors("400", "401", "500"),
                },
            }
        },
        "/{version}/{media_id}": {
            "get": {
                "operationId": "getMedia",
                "summary": "Media metadata, with a download URL valid for 5 minutes.",
                "parameters": [
                    _VERSION,
                    media_id,
                    {
                        "name": "phone_number_id",
                        "in": "query",
                        "required": False,
                        "description": "Only answer if the media was uploaded on this number.",
                        "schema": {"type": "string"},
                    },
                ],
                "responses": {
                    "200": json_body(_ref("MediaInfo"), "The media's metadata."),
                    **_errors("400", "401", "500"),
                },
            },
            "delete": {
                "operationId": "deleteMedia",
                "summary": "Delete uploaded media.",
                "parameters": [_VERSION, media_id],
                "responses": {
                    "200": json_body(_ref("Success"), "Deleted."),
                    **_errors("400", "401", "500"),
                },
            },
        },
        "/_media/{token}": {
            "get": {
                "operationId": "downloadMedia",
                "summary": "Download media through a URL from getMedia (needs the token).",
                "parameters": [_path_param("token", "The URL's opaque token.")],
                "responses": {
                    "200": {
                        "description": "The file, with its MIME type.",
                        "content": {"*/*": {"schema": {"type": "string"}}},
                    },
                    **_errors("401", "404", "500"),
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
    schemas = _schemas(limits)
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
