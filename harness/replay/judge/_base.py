"""What the judge's modules share: their frozen model base and their one-line error text.

Long values and validation errors are shortened the same way wherever the
judge names them in an error.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationError

__all__ = ["Frozen", "describe", "shorten"]


class Frozen(BaseModel):
    """A frozen model that refuses unknown fields: the judge's own data."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(exc: ValidationError, limit: int = 3) -> str:
    """A validation error on one line: where, what, and the value it got, for a few errors."""
    errors = exc.errors()
    shown = []
    for error in errors[:limit]:
        where = ".".join(str(part) for part in error["loc"]) or "input"
        got = f" (got {shorten(repr(error['input']), 40)})" if error["type"] != "missing" else ""
        shown.append(f"{where}: {error['msg']}{got}")
    more = f"; and {len(errors) - limit} more" if len(errors) > limit else ""
    return "; ".join(shown) + more
