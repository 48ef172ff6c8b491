"""Meta's size limits on send bodies, and how a model field declares that one applies to it.

A field names its limit once, with :class:`Limit` in its annotation
(``Annotated[str, Limit("button_title")]``). That one mark does both jobs:
validation reads the number from the :class:`SendContext` it is given (so a
scenario may change a limit without new models), and the JSON Schema carries
``maxLength`` or ``maxItems``, written for Meta's defaults and rewritten by
:func:`apply_limits` for any other :class:`SendLimits`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, get_origin

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler, ValidationInfo
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

__all__ = [
    "DEFAULT_LIMITS",
    "LIMIT_KEY",
    "Limit",
    "SendContext",
    "SendLimits",
    "apply_limits",
    "context_of",
]


@dataclass(frozen=True, slots=True)
class SendLimits:
    """Meta's size limits on send bodies (facts document, section 8), in code points or items.

    The defaults are Meta's; a scenario may tighten or loosen them (older
    documentation gives lists a 1024-character body, for instance).
    """

    text_body: int = 4096
    caption: int = 1024
    """Image per Meta; video and document assumed the same."""
    callback_data: int = 512
    filename: int = 255
    header_text: int = 60
    footer_text: int = 60
    button_body: int = 1024
    interactive_body: int = 1024
    """The body of the other interactive kinds (``cta_url``, ``flow``, ``product`` ...)."""
    buttons: int = 3
    button_id: int = 256
    button_title: int = 20
    list_body: int = 4096
    list_button: int = 20
    sections: int = 10
    rows: int = 10
    """Rows in all sections together."""
    section_title: int = 24
    row_id: int = 200
    row_title: int = 24
    row_description: int = 72
    template_name: int = 512


DEFAULT_LIMITS: Final = SendLimits()
"""Meta's limits as documented."""

LIMIT_KEY: Final = "x-limit"
"""The JSON Schema keyword naming a field's limit until :func:`apply_limits` resolves it."""


@dataclass(frozen=True, slots=True)
class SendContext:
    """What validating a send needs besides the body: the limits, and which media ids exist.

    ``media_exists`` tells whether a media id may be sent; any id passes when
    it is ``None``.
    """

    limits: SendLimits = DEFAULT_LIMITS
    media_exists: Callable[[str], bool] | None = field(default=None, compare=False)


def context_of(info: ValidationInfo) -> SendContext:
    """The :class:`SendContext` a validation was given (Meta's defaults when none was)."""
    context = info.context
    return context if isinstance(context, SendContext) else SendContext()


@dataclass(frozen=True, slots=True)
class Limit:
    """Annotation: the string's length, or the array's item count, is bounded by one limit.

    ``name`` is a :class:`SendLimits` field. Lengths count Unicode code points.
    """

    name: str

    def __post_init__(self) -> None:
        if not hasattr(DEFAULT_LIMITS, self.name):
            raise ValueError(f"SendLimits has no limit named {self.name!r}")

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        # Checked before the items are, as Meta does: five buttons are too
        # many whatever they hold. A value of the wrong type is left to the
        # type's own check.
        kind = get_origin(source) or source
        if kind not in (str, list):
            raise TypeError(f"a Limit bounds a str or a list, not {source!r}")
        return core_schema.with_info_before_validator_function(
            lambda value, info: self._check(value, info) if type(value) is kind else value,
            handler(source),
        )

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        json_schema = handler(schema)
        keyword = "maxItems" if json_schema.get("type") == "array" else "maxLength"
        json_schema[keyword] = getattr(DEFAULT_LIMITS, self.name)
        json_schema[LIMIT_KEY] = self.name
        return json_schema

    def _check(self, value: Any, info: ValidationInfo) -> Any:
        most: int = getattr(context_of(info).limits, self.name)
        if len(value) <= most:
            return value
        if isinstance(value, str):
            problem = f"must be at most {most} characters, got {len(value)}"
        else:
            problem = f"must hold at most {most} items, got {len(value)}"
        raise PydanticCustomError("send_invalid", "{problem}", {"problem": problem})


def apply_limits(schema: Any, limits: SendLimits) -> Any:
    """A copy of a generated JSON Schema with every :class:`Limit` set from ``limits``."""
    if isinstance(schema, list):
        return [apply_limits(item, limits) for item in schema]
    if not isinstance(schema, dict):
        return schema
    resolved = {key: apply_limits(value, limits) for key, value in schema.items()}
    name = resolved.pop(LIMIT_KEY, None)
    if isinstance(name, str):
        keyword = "maxItems" if resolved.get("type") == "array" else "maxLength"
        resolved[keyword] = getattr(limits, name)
    return resolved
