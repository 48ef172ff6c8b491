"""What every payload from Meta shares: the base model, timestamps and parse errors.

Meta adds fields to its webhooks without notice, so every model here keeps
unknown fields (``extra="allow"``) and dumps them back unchanged. The concepts
built on this base live one per module: inbound messages in ``messages``,
delivery statuses in ``statuses``, the webhook envelope in ``envelope`` and
Meta's error objects in ``errors``.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Annotated, Any, TypeAlias, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    model_serializer,
)

from harness.exceptions import ChannelError

__all__ = [
    "MetaModel",
    "PayloadError",
    "Timestamp",
    "TimestampLike",
    "format_timestamp",
    "load_json",
    "validate",
]

Timestamp = Annotated[str, StringConstraints(pattern=r"^[0-9]+$")]
"""Unix seconds as Meta writes them: a string of digits."""

TimestampLike: TypeAlias = int | float | str | datetime
"""What builders accept as a timestamp; see ``format_timestamp``."""

_T = TypeVar("_T")


class PayloadError(ChannelError, ValueError):
    """A webhook (or part of one) that does not have Meta's shape.

    ``path`` names the offending place in JSON-path style, for instance
    ``entry[0].changes[0].value.messages[0].text.body``; it is empty when the
    body as a whole is wrong (not JSON, not an object).
    """

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class MetaModel(BaseModel):
    """Base of every model of a payload Meta sends.

    Unknown fields are kept and dumped back; declared optional fields that are
    ``None`` are left out of a dump, because Meta omits absent fields rather than
    sending ``null``. Keys are dumped under Meta's names (``from``, not ``from_``)
    and in declaration order, which follows Meta's samples.
    """

    model_config = ConfigDict(
        extra="allow",
        frozen=True,
        validate_by_alias=True,
        validate_by_name=True,
        serialize_by_alias=True,
    )

    @model_serializer(mode="wrap")
    def _omit_absent(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            values = self.__dict__
            for name, key in _dumped_names(type(self)):
                if values.get(name, data) is None:
                    data.pop(key, None)
        return data

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready dict Meta would send for this model."""
        data: dict[str, Any] = self.model_dump(mode="json")
        return data


@functools.cache
def _dumped_names(model: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    """Each declared field of ``model`` with the key it is dumped under."""
    return tuple(
        (name, field.serialization_alias or field.alias or name)
        for name, field in model.model_fields.items()
    )


def format_timestamp(value: TimestampLike) -> str:
    """Return ``value`` as Meta writes a timestamp: a string of unix seconds.

    Accepts unix seconds (an int, a float, which is truncated, or a digit string)
    or a timezone-aware datetime; a naive datetime is refused because its
    instant is ambiguous.
    """
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"timestamp {value.isoformat()} has no timezone")
        value = value.timestamp()
    if isinstance(value, str):
        if not value.isascii() or not value.isdigit():
            raise ValueError(f"timestamp {value!r} is not a string of unix seconds")
        return str(int(value))
    if isinstance(value, bool) or not math.isfinite(value) or value < 0:
        raise ValueError(f"timestamp {value!r} is not a non-negative number of unix seconds")
    return str(int(value))


def load_json(body: bytes | bytearray | str, *, what: str = "webhook body") -> dict[str, Any]:
    """Decode a JSON object from raw bytes or text, or raise ``PayloadError``."""
    try:
        data = json.loads(body)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError alike
        raise PayloadError(f"{what} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise PayloadError(f"{what} must be a JSON object, not {type(data).__name__}")
    return data


def validate(adapter: TypeAdapter[_T], data: Mapping[str, Any], *, what: str, root: str = "") -> _T:
    """Validate ``data`` with ``adapter``, turning a failure into a one-line ``PayloadError``.

    The error names the JSON path of the first problem (prefixed with ``root``),
    what is wrong there, and how many more problems there are.
    """
    try:
        return adapter.validate_python(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        first = errors[0]
        path = _json_path(first["loc"], root)
        problem = str(first["msg"])
        if first["type"] != "missing":
            problem += f" (got {_short_repr(first.get('input'))})"
        if len(errors) > 1:
            problem += f"; and {len(errors) - 1} more problem(s)"
        where = f" at {path}" if path else ""
        raise PayloadError(f"invalid {what}{where}: {problem}", path=path) from None


def _json_path(loc: Sequence[int | str], root: str) -> str:
    """Render a pydantic error location as a JSON path.

    Locations also hold the tags of our discriminated unions, which have no
    place in the JSON; they are spelled ``<tag>`` so they can be left out.
    """
    path = root
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif not (part.startswith("<") and part.endswith(">")):
            path += f".{part}" if path else part
    return path


def _short_repr(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
