"""The pieces the fake Graph API's OpenAPI document is written with.

:mod:`channels.whatsapp.openapi` assembles the document; the modules that
serve an endpoint and describe it beside their own checks
(:mod:`channels.whatsapp._number_settings`) write their operations with
these same pieces.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "ERROR_STATUSES",
    "FIELDS",
    "REF",
    "VERSION",
    "VERSION_PATTERN",
    "change_operation",
    "error_response",
    "errors",
    "json_body",
    "obj",
    "path_param",
    "query",
    "read_operation",
    "ref",
]

VERSION_PATTERN: Final = r"^v[0-9]+\.[0-9]+$"
"""What the ``{version}`` path segment must look like (``v25.0``)."""
REF: Final = "#/components/schemas/"
"""Where the document's component schemas are referred to."""
ERROR_STATUSES: Final = {
    "400": "A bad request, or one Meta refuses (rate limits answer 400 with their code).",
    "401": "The access token is missing, unknown or expired (code 190).",
    "403": "The business lacks a permission or is blocked.",
    "404": "Not found: an unknown template (132001), or a path no endpoint serves.",
    "413": "The body is over the size limit: 1 MiB for a send, 101 MiB for an upload.",
    "500": "Something went wrong inside the simulator (131000).",
    "503": "The service is unavailable (131016).",
}
"""What each error status an operation may answer means."""


def ref(name: str) -> dict[str, str]:
    """A reference to the component schema ``name``."""
    return {"$ref": REF + name}


def json_body(schema: Mapping[str, Any], description: str) -> dict[str, Any]:
    """A response (or request body) object holding JSON described by ``schema``."""
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def error_response(description: str) -> dict[str, Any]:
    """A response object carrying Meta's Graph error envelope."""
    return json_body(ref("GraphError"), description)


def errors(*statuses: str) -> dict[str, Any]:
    """The error responses of ``statuses``, each described as :data:`ERROR_STATUSES` says."""
    return {status: error_response(ERROR_STATUSES[status]) for status in statuses}


def read_operation(
    operation_id: str, summary: str, parameters: list[Any], schema: str, described: str
) -> dict[str, Any]:
    """A ``GET`` answering the component schema ``schema``, or Meta's usual errors."""
    return {
        "operationId": operation_id,
        "summary": summary,
        "parameters": parameters,
        "responses": {"200": json_body(ref(schema), described), **errors("400", "401", "500")},
    }


def change_operation(
    operation_id: str, summary: str, parameters: list[Any], body: str | None = None
) -> dict[str, Any]:
    """A ``POST`` taking the component schema ``body`` as JSON (if any), answering success."""
    operation: dict[str, Any] = {
        "operationId": operation_id,
        "summary": summary,
        "parameters": parameters,
    }
    if body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": ref(body)}},
        }
    operation["responses"] = {
        "200": json_body(ref("Success"), "Changed."),
        **errors("400", "401", "500"),
    }
    return operation


def obj(required: list[str], **properties: Any) -> dict[str, Any]:
    """An object schema with ``properties``, of which ``required`` must be given."""
    return {"type": "object", "required": required, "properties": properties}


def path_param(
    name: str,
    description: str,
    pattern: str | None = None,
    choices: tuple[str, ...] = (),
) -> dict[str, Any]:
    """A required path parameter: a non-empty string, of ``pattern`` or one of ``choices``."""
    schema: dict[str, Any] = {"type": "string", "minLength": 1}
    if pattern is not None:
        schema["pattern"] = pattern
    if choices:
        schema["enum"] = list(choices)
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": description,
        "schema": schema,
    }


def query(name: str, description: str, schema: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An optional query parameter (a string unless ``schema`` says otherwise)."""
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": dict(schema) if schema is not None else {"type": "string"},
    }


VERSION: Final = path_param(
    "version",
    "A Graph API version, such as v25.0. A version past its two years is served by the oldest"
    " one still live, as Meta does.",
    VERSION_PATTERN,
)
"""The ``{version}`` path parameter every Graph path starts with."""
FIELDS: Final = query("fields", "The fields to answer, comma-separated (id is always given).")
"""The ``fields`` query parameter of a read."""
