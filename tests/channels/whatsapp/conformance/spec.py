"""Meta's OpenAPI description, as written and as corrected, and validators built from it.

The document is registered whole under one URI, so every ``$ref`` in it
(``#/components/schemas/...``) resolves against the document itself, the way
an OpenAPI tool reads it; a validator is then a ``$ref`` to the schema wanted.
The corrections come from :data:`~tests.channels.whatsapp.conformance.defects.DEFECTS`
and nowhere else.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

import jsonschema_rs
import yaml

from tests.channels.whatsapp.conformance.defects import ABSENT, DEFECTS, Correction

META_FILE: Final = (
    Path(__file__).resolve().parents[3] / "data" / "meta" / "meta-business-messaging-api_v23.0.yaml"
)
SPEC_URI: Final = "https://graph.facebook.com/openapi/business-messaging-api-v23.0.json"
"""Where the document is registered; any absolute URI would do: validators never fetch."""

WEBHOOK: Final = "/components/schemas/WebhookPayload"
"""The schema of a whole webhook POST body."""


def _json_keys(value: Any) -> Any:
    # YAML reads the status codes of ``responses`` (200, 400) as ints; JSON keys are strings.
    if isinstance(value, dict):
        return {str(key): _json_keys(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_keys(item) for item in value]
    return value


@functools.cache
def _as_written() -> dict[str, Any]:
    text = META_FILE.read_text(encoding="utf-8")
    document: dict[str, Any] = _json_keys(yaml.load(text, Loader=yaml.CSafeLoader))
    return document


def as_written() -> dict[str, Any]:
    """Meta's document exactly as the file has it (a fresh copy)."""
    return copy.deepcopy(_as_written())


def _steps(pointer: str) -> list[str]:
    if not pointer.startswith("/"):
        raise ValueError(f"{pointer!r} is not a JSON pointer")
    return [part.replace("~1", "/").replace("~0", "~") for part in pointer[1:].split("/")]


def _walk(node: Any, steps: list[str]) -> Any:
    for step in steps:
        if isinstance(node, dict) and step in node:
            node = node[step]
        elif isinstance(node, list) and step.isdigit() and int(step) < len(node):
            node = node[int(step)]
        else:
            return ABSENT
    return node


def resolve(document: Any, pointer: str) -> Any:
    """The value at ``pointer`` in ``document``, or :data:`ABSENT` when nothing is there."""
    return _walk(document, _steps(pointer))


def apply(document: dict[str, Any], correction: Correction) -> None:
    """Put ``correction.ours`` at its pointer, after checking the file holds ``correction.spec``."""
    found = resolve(document, correction.at)
    if found != correction.spec:
        raise AssertionError(
            f"Meta's file no longer holds the defect at {correction.at}: {found!r}"
        )
    *parents, last = _steps(correction.at)
    parent = _walk(document, parents)
    if isinstance(parent, list):
        parent[int(last)] = copy.deepcopy(correction.ours)
    else:
        parent[last] = copy.deepcopy(correction.ours)


def corrected(without: Iterable[str] = ()) -> dict[str, Any]:
    """Meta's document with the listed corrections made, except those of the defects ``without``."""
    skipped = set(without)
    unknown = skipped - {defect.key for defect in DEFECTS}
    if unknown:
        raise KeyError(f"no such defect: {', '.join(sorted(unknown))}")
    document = as_written()
    for defect in DEFECTS:
        if defect.key not in skipped:
            for correction in defect.corrections:
                apply(document, correction)
    return document


def validator(document: dict[str, Any], pointer: str) -> jsonschema_rs.Validator:
    """A validator of the schema at ``pointer`` in ``document``, its ``$ref``s resolved there."""
    if resolve(document, pointer) is ABSENT:
        raise KeyError(f"Meta's document has nothing at {pointer}")
    registry = jsonschema_rs.Registry([(SPEC_URI, document)])
    # A pointer inside a URI is percent-encoded: path templates hold braces.
    fragment = quote(pointer, safe="/~")
    return jsonschema_rs.Draft202012Validator(
        {"$ref": f"{SPEC_URI}#{fragment}"}, registry=registry, offline=True
    )


@functools.cache
def corrected_validator(pointer: str) -> jsonschema_rs.Validator:
    """A validator of the schema at ``pointer`` in the corrected document (built once)."""
    return validator(corrected(), pointer)


def problems(checker: jsonschema_rs.Validator, instance: Any) -> list[str]:
    """Every reason ``instance`` fails, one line each (empty when it is valid)."""
    return [
        f"{'/'.join(map(str, error.instance_path)) or '(root)'}: {error.message}"
        for error in checker.iter_errors(instance)
    ]
