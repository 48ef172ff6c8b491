"""The building blocks of the send models: their base, field types, and how they fail.

Every rule a send must follow is written once, on a model; the checks and the
OpenAPI document both come from it. The pieces here keep that true where
plain Pydantic would not:

- :data:`Maybe` marks a field that may be left out but not given as ``null``:
  the models (and the OpenAPI document drawn from them) describe a body as
  written without nulls; the endpoint first reads a key given as ``null`` as
  left out (:func:`without_nulls`), as Graph reads a parameter given as
  ``null`` (a required one is then missing);
- :class:`Refused` marks a key that must not appear (a caption on audio);
- :class:`Dispatch` picks the model for an object by one of its fields
  (``interactive.type``), so a bad body gets the errors of the one model it
  meant, at paths without Pydantic's union tags;
- :func:`send_problem` raises an error at any path below the field being
  checked, for the rules that span fields (unique button titles), and
  :func:`checked_first` reports a rule read on the body as sent before the
  fields' own problems (no addressee at all).

Errors carry their Meta meaning in their type: ``send_request`` (100),
``send_missing`` (131008), ``send_invalid`` (131009) and ``send_type``
(131051), each with a ``problem`` in plain words.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NoReturn, TypeVar, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    ValidationError,
    ValidationInfo,
)
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import CoreSchema, InitErrorDetails, PydanticCustomError, core_schema

__all__ = [
    "Dispatch",
    "Matches",
    "Maybe",
    "NonEmpty",
    "Problem",
    "ProblemKind",
    "Refused",
    "SendJsonSchema",
    "SendModel",
    "checked_first",
    "json_kind",
    "literal_values",
    "send_problem",
    "without_nulls",
]

_T = TypeVar("_T")
_M = TypeVar("_M")

ProblemKind = Literal["send_request", "send_missing", "send_invalid", "send_type"]
"""How a rule's failure reads to Meta: 100, 131008, 131009 or 131051."""


class SendModel(BaseModel):
    """Base of every object inside a send body.

    Types are strict (``"1"`` is not a number, ``1`` is not a string, ``1``
    is not ``true``), as Meta's are. Keys the model does not name are
    ignored, because Meta adds optional fields without notice; the top level
    of a body refuses them instead (see ``MessageSend``).
    """

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


def json_kind(value: object) -> str:
    """The JSON name of a value's type: ``object``, ``array``, ``string``, ``number`` ..."""
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


def send_problem(kind: ProblemKind, text: str, *loc: str | int, value: object = None) -> NoReturn:
    """Raise a send error at ``loc`` (relative to the value being validated).

    Pydantic adds the path of the field being validated in front, so a model
    validator can point at ``buttons[1].reply.title`` below itself.
    """
    error = PydanticCustomError(kind, "{problem}", {"problem": text})
    details: InitErrorDetails = {"type": error, "loc": loc, "input": value}
    raise ValidationError.from_exception_data("send", [details])


Problem = tuple[ProblemKind, str, tuple[str | int, ...]]
"""A broken rule: how it reads to Meta, in words, and where (relative to the object)."""


def checked_first(found: Problem | None, data: Any, handler: Callable[[Any], _M]) -> _M:
    """Validate ``data`` with ``handler``, but report ``found`` before any other problem.

    For rules a model checks on the body as sent (a wrap validator), so that
    they come first as Meta reports them: no addressee, a media object with
    both an id and a link.
    """
    try:
        validated = handler(data)
    except ValidationError as exc:
        if found is None:
            raise
        raise _with_problem_first(found, exc) from None
    if found is not None:
        kind, text, loc = found
        send_problem(kind, text, *loc, value=data)
    return validated


def _with_problem_first(found: Problem, exc: ValidationError) -> ValidationError:
    kind, text, loc = found
    first: InitErrorDetails = {
        "type": PydanticCustomError(kind, "{problem}", {"problem": text}),
        "loc": loc,
        "input": None,
    }
    rest: list[InitErrorDetails] = []
    for error in exc.errors():
        ctx = error.get("ctx")
        known = not error["type"].startswith("send_")
        cause = error["type"] if known else PydanticCustomError(error["type"], "{problem}", ctx)
        again: InitErrorDetails = {"type": cause, "loc": error["loc"], "input": error["input"]}
        if known and ctx is not None:
            again["ctx"] = ctx
        rest.append(again)
    return ValidationError.from_exception_data(exc.title, [first, *rest])


class _NotNull:
    """Validate ``X | None`` as ``X``: ``None`` only ever comes from the default."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        [inner] = [arg for arg in get_args(source) if arg is not type(None)]
        return handler.generate_schema(inner)


Maybe = Annotated[_T | None, _NotNull()]
"""An optional field: absent means ``None``; a ``null`` is refused (the endpoint drops it first)."""


def without_nulls(value: Any) -> Any:
    """``value`` with every object key whose value is ``null`` left out, at any depth.

    Graph reads a parameter given as ``null`` as one not given: client
    libraries send ``"components": null`` for a template without parameters,
    and a ``null`` text is reported missing, not malformed. Returns ``value``
    itself when it holds no such key (the usual body: nothing is copied).
    A ``null`` inside an array is kept: it is an item, and a bad one.
    """
    if isinstance(value, dict):
        if not any(item is None or isinstance(item, (dict, list)) for item in value.values()):
            return value
        cleaned = {key: without_nulls(item) for key, item in value.items() if item is not None}
        if len(cleaned) == len(value) and all(cleaned[k] is value[k] for k in cleaned):
            return value
        return cleaned
    if isinstance(value, list):
        items = [without_nulls(item) for item in value]
        return value if all(new is old for new, old in zip(items, value, strict=True)) else items
    return value


NonEmpty = Annotated[str, Field(min_length=1)]
"""A string with at least one character."""


@dataclass(frozen=True, slots=True)
class Refused:
    """Annotation: this key must not appear here (100, "Unexpected key", with ``reason``).

    Declaring it keeps the key in the schema (as ``not: {}``) instead of
    silently ignoring it like any other unknown nested key. Graph refuses such
    a key with code 100 (a recorded answer: ``(#100) Unexpected key "caption"
    on param "audio".``).
    """

    reason: str

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        def refuse(value: object) -> NoReturn:
            raise PydanticCustomError("send_unexpected", "{problem}", {"problem": self.reason})

        return core_schema.no_info_plain_validator_function(refuse)

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {"not": {}, "description": self.reason}


@dataclass(frozen=True, slots=True)
class Matches:
    """Annotation: a string that matches ``pattern`` (131009 ``'<value>' <reason>`` if not).

    Pydantic checks the pattern with the same regular-expression engine as
    the JSON Schema validators the tests use, so the two agree on every value.
    """

    pattern: str
    reason: str

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        def check(value: Any, inner: core_schema.ValidatorFunctionWrapHandler) -> Any:
            try:
                return inner(value)
            except ValidationError as exc:
                if exc.errors()[0]["type"] != "string_pattern_mismatch":
                    raise
                text = f"{value!r} {self.reason}"
                raise PydanticCustomError("send_invalid", "{problem}", {"problem": text}) from None

        matching = core_schema.str_schema(pattern=self.pattern, strict=True)
        return core_schema.no_info_wrap_validator_function(check, matching)


class SendJsonSchema(GenerateJsonSchema):
    """Pydantic's JSON Schema, without field titles or ``null`` defaults.

    A :data:`Maybe` field defaults to ``None`` in Python, but in the body it
    may only be left out; a ``null`` default in the schema would say otherwise.
    """

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        if schema.get("default", ...) is None:
            return self.generate_inner(schema["schema"])
        return super().default_schema(schema)


def literal_values(model: type[BaseModel], name: str) -> tuple[str, ...]:
    """The values a ``Literal`` field of ``model`` allows."""
    annotation = model.model_fields[name].annotation
    return tuple(str(value) for value in get_args(annotation))


@dataclass(frozen=True, slots=True)
class Dispatch:
    """Annotation on a union of models: validate an object as the one its ``key`` names.

    Each member declares ``key`` as a ``Literal`` of the values it takes; the
    JSON Schema is the union's (``anyOf`` of the members). An object without
    ``key`` answers 131008 at ``key``, an unknown value 131009 naming it as
    ``what`` and listing the known ones.
    """

    key: str
    what: str

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        members: dict[str, type[BaseModel]] = {}
        for model in get_args(source):
            for value in literal_values(model, self.key):
                members[value] = model
        return core_schema.with_info_plain_validator_function(
            lambda value, info: self._validate(members, value, info),
            json_schema_input_schema=handler(source),
        )

    def _validate(
        self, members: Mapping[str, type[BaseModel]], value: Any, info: ValidationInfo
    ) -> BaseModel:
        if not isinstance(value, dict):
            send_problem("send_invalid", f"must be an object, not {json_kind(value)}", value=value)
        if self.key not in value:
            send_problem("send_missing", "required parameter is missing", self.key, value=value)
        tag = value[self.key]
        model = members.get(tag) if isinstance(tag, str) else None
        if model is None:
            if not isinstance(tag, str):
                send_problem(
                    "send_invalid", f"must be a string, not {json_kind(tag)}", self.key, value=tag
                )
            known = sorted(members)
            listed = ", ".join(known[:-1]) + f" or {known[-1]}" if len(known) > 1 else known[0]
            text = f"unknown {self.what} {tag!r}; it must be {listed}"
            send_problem("send_invalid", text, self.key, value=tag)
        return model.model_validate(value, context=info.context)
