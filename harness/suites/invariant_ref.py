"""An invariant as a scenario names it: a name, `{name: {params}}` or the long form.

The loader keeps the name, the parameters and the line; the invariant
registry (:mod:`harness.suites.registry`) checks that the name is known and
the parameters fit, before the run starts.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final

from pydantic import AfterValidator, BeforeValidator, Field, JsonValue, model_validator
from pydantic.json_schema import JsonSchemaValue, SkipJsonSchema
from pydantic_core import CoreSchema

from harness.suites.steps import ScenarioPart
from harness.suites.yamlpos import describe

__all__ = ["InvariantRef"]

_INVARIANT_NAME: Final = r"^[A-Za-z_][\w.]*(:[A-Za-z_]\w*)?$"


def _invariant_name(name: str) -> str:
    if re.fullmatch(_INVARIANT_NAME, name) is None:
        raise ValueError(
            f"{name!r} is not an invariant name: expected a registered name such as "
            "never_reasks, or an import path such as package.module:attr"
        )
    return name


def _invariant_shape(value: object) -> object:
    if isinstance(value, str):
        return {"name": value}
    if not isinstance(value, dict):
        raise ValueError(f"expected an invariant name or mapping, got {describe(value)}")
    if "name" in value:
        return value
    if len(value) != 1:
        keys = ", ".join(map(str, value)) or "none"
        raise ValueError(
            "expected {rule: {params}} with one key, or {name: rule, params: {...}}; "
            f"got keys: {keys}"
        )
    ((name, params),) = value.items()
    return {"name": name, "params": {} if params is None else params}


_INVARIANT_SCHEMA: Final[JsonSchemaValue] = {
    "anyOf": [
        {"type": "string", "pattern": _INVARIANT_NAME},
        {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "pattern": _INVARIANT_NAME},
                "params": {"type": ["object", "null"]},
            },
            "additionalProperties": False,
        },
        {
            "type": "object",
            "minProperties": 1,
            "maxProperties": 1,
            "propertyNames": {"pattern": _INVARIANT_NAME},
            "additionalProperties": {"type": ["object", "null"]},
            "not": {"required": ["name"]},
        },
    ],
    "description": "An invariant: a name, {name: {params}} or {name: ..., params: {...}}.",
}


class InvariantRef(ScenarioPart):
    """An invariant named in a scenario, with its parameters (checked by the registry)."""

    name: Annotated[str, AfterValidator(_invariant_name)]
    params: Annotated[dict[str, JsonValue], BeforeValidator(lambda v: {} if v is None else v)] = (
        Field(default_factory=dict)
    )
    #: The 1-based line of the invariant in its file (``None`` when built in code).
    line: SkipJsonSchema[int | None] = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: object) -> object:
        return _invariant_shape(value)

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema, handler: Any) -> JsonSchemaValue:
        """The three YAML shapes an invariant may take."""
        return dict(_INVARIANT_SCHEMA)

    def to_data(self) -> JsonValue:
        """The shortest shape that reads back the same."""
        if not self.params:
            return self.name
        if self.name == "name":  # {name: {...}} would read as the long form
            return {"name": self.name, "params": self.params}
        return {self.name: self.params}
