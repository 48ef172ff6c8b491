"""The two OpenAPI documents tests read: the simulator's own, and Meta's description."""

from __future__ import annotations

from typing import Any

import jsonschema_rs

from channels.whatsapp.openapi import build_openapi
from tests.channels.whatsapp.conformance import spec

__all__ = ["meta_request_examples", "own_schema"]


def own_schema(name: str) -> jsonschema_rs.Validator:
    """A validator of the component schema ``name`` of the simulator's own document."""
    document = build_openapi()
    root = {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
    return jsonschema_rs.Draft202012Validator(root)


def meta_request_examples(path: str) -> dict[str, Any]:
    """The request examples of the ``POST`` at ``path`` in Meta's description, by name."""
    post = spec.as_written()["paths"][path]["post"]
    examples: dict[str, Any] = post["requestBody"]["content"]["application/json"]["examples"]
    return {name: example["value"] for name, example in examples.items()}
