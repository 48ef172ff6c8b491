"""Registering invariants: the decorator, the parameter types, and the registry itself.

:func:`invariant` registers a function by name and checks its shape (the
conversation first, keyword-only parameters after, whose annotations are
enforced when a scenario binds it). The built-in library registers itself
through it; :mod:`harness.suites.invariants` looks names up here.
"""

from __future__ import annotations

import difflib
import inspect
import re
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cached_property
from typing import Annotated, Any, TypeAlias, TypeVar

from pydantic import (
    AfterValidator,
    BeforeValidator,
    TypeAdapter,
    ValidationError,
)

from harness.durations import format_duration, parse_duration
from harness.exceptions import ConfigError
from harness.results import Violation
from harness.trace import OBSERVABLE_KINDS, Conversation

__all__ = [
    "DurationParam",
    "Invariant",
    "InvariantFunction",
    "Regex",
    "brief",
    "invariant",
    "registry",
]

#: The shape of an invariant: the conversation, then keyword-only parameters.
InvariantFunction: TypeAlias = Callable[..., Iterable[Violation]]


_F = TypeVar("_F", bound=InvariantFunction)


def brief(value: object) -> str:
    """A value as a short ``repr`` for an error message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _valid_regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression ({exc})") from None
    return value


def _duration(value: object) -> object:
    if isinstance(value, str | int | float | timedelta):
        delta = parse_duration(value)  # a ConfigError is a ValueError: pydantic reports it
        if delta < timedelta(0):
            raise ValueError("a duration can't be negative")
        return delta
    return value


#: A parameter holding a regular expression; checked when the spec is bound.
Regex: TypeAlias = Annotated[str, AfterValidator(_valid_regex)]
#: A parameter holding a duration: seconds as a number, or text such as ``"30s"`` or ``"2m"``.
DurationParam: TypeAlias = Annotated[timedelta, BeforeValidator(_duration)]


# -- invariants and their parameters -----------------------------------------------


@dataclass(frozen=True)
class _Param:
    name: str
    adapter: TypeAdapter[Any] | None
    required: bool
    default: Any


def _signature(name: str, function: Callable[..., Any]) -> inspect.Signature:
    """The function's signature, checked to have the invariant shape."""
    if not callable(function):
        raise ConfigError(f"invariant {name!r} is not callable (got {brief(function)})")
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"invariant {name!r}: can't read its signature ({exc})") from None
    params = list(signature.parameters.values())
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if not params or params[0].kind not in positional:
        raise ConfigError(f"invariant {name!r} must take the conversation as its first argument")
    for param in params[1:]:
        if param.kind is inspect.Parameter.POSITIONAL_ONLY and param.default is param.empty:
            raise ConfigError(f"invariant {name!r}: parameter {param.name!r} must be keyword-only")
    return signature


def _adapter(annotation: Any) -> TypeAdapter[Any] | None:
    if annotation is inspect.Parameter.empty or annotation is Any:
        return None
    try:
        return TypeAdapter(annotation)
    except Exception:  # a type pydantic can't check (an arbitrary class): accept anything
        return None


def _first_error(exc: ValidationError) -> str:
    error = exc.errors(include_url=False)[0]
    where = "".join(f"[{part!r}]" for part in error["loc"])
    said = str(error["msg"]).removeprefix("Value error, ")
    given = error.get("input")
    got = brief(given)
    shown = "" if isinstance(given, str) and got in said else f" (got {got})"
    return f"{where + ': ' if where else ''}{said}{shown}"


def _show(value: Any) -> str:
    if isinstance(value, timedelta):
        return repr(format_duration(value))
    if isinstance(value, tuple):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return repr(value)


@dataclass(frozen=True)
class Invariant:
    """A named invariant: its function, and the parameters it takes.

    :meth:`validate` turns parameters from YAML into the function's types, or
    raises a one-line :class:`~harness.exceptions.ConfigError` naming the
    invariant and the parameter.
    """

    name: str
    function: InvariantFunction = field(repr=False)
    signature: inspect.Signature = field(repr=False, compare=False)
    #: The kinds of the agent's own calls it reads (``tool``, ``llm``): on a trace whose
    #: channel could not observe them it can't pass, so it is not run.
    needs: tuple[str, ...] = ()

    @classmethod
    def of(cls, name: str, function: InvariantFunction, needs: tuple[str, ...] = ()) -> Invariant:
        """Wrap ``function`` as the invariant ``name``, checking its shape."""
        return cls(name=name, function=function, signature=_signature(name, function), needs=needs)

    @property
    def description(self) -> str:
        """The first line of the function's docstring."""
        doc = inspect.getdoc(self.function) or ""
        return doc.strip().splitlines()[0] if doc.strip() else ""

    @cached_property
    def _hints(self) -> dict[str, Any]:
        try:
            return typing.get_type_hints(self.function, include_extras=True)
        except Exception:  # unresolvable annotations: check only names, not types
            return {}

    @cached_property
    def _params(self) -> dict[str, _Param]:
        found: dict[str, _Param] = {}
        for param in list(self.signature.parameters.values())[1:]:
            if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                continue
            hint = self._hints.get(param.name, param.annotation)
            found[param.name] = _Param(
                name=param.name,
                adapter=None if isinstance(hint, str) else _adapter(hint),
                required=param.default is param.empty,
                default=None if param.default is param.empty else param.default,
            )
        return found

    @property
    def _open(self) -> bool:
        kinds = (p.kind for p in self.signature.parameters.values())
        return inspect.Parameter.VAR_KEYWORD in kinds

    @property
    def usage(self) -> str:
        """How to call it, e.g. ``never_reasks(pattern, fact=None)``."""
        parts = [
            p.name if p.required else f"{p.name}={_show(p.default)}" for p in self._params.values()
        ]
        if self._open:
            parts.append("**params")
        return f"{self.name}({', '.join(parts)})"

    def validate(self, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The parameters checked and converted to the function's types."""
        given = dict(params or {})
        checked: dict[str, Any] = {}
        for key, value in given.items():
            if not isinstance(key, str):
                raise ConfigError(
                    f"invariant {self.name!r}: parameter names must be text, got {key!r}"
                )
            param = self._params.get(key)
            if param is None:
                if self._open:
                    checked[key] = value
                    continue
                close = difflib.get_close_matches(key, list(self._params), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ConfigError(
                    f"invariant {self.name!r}: unknown parameter {key!r}{hint} "
                    f"(usage: {self.usage})"
                )
            if param.adapter is None:
                checked[key] = value
                continue
            try:
                checked[key] = param.adapter.validate_python(value)
            except ValidationError as exc:
                raise ConfigError(
                    f"invariant {self.name!r}: parameter {key!r}: {_first_error(exc)}"
                ) from None
        for param in self._params.values():
            if param.required and param.name not in checked:
                raise ConfigError(
                    f"invariant {self.name!r}: missing parameter {param.name!r} "
                    f"(usage: {self.usage})"
                )
        return checked

    def __call__(
        self, conversation: Conversation, params: Mapping[str, Any] | None = None
    ) -> list[Violation]:
        """Validate ``params`` and run the invariant; its own errors propagate."""
        found = list(self.function(conversation, **self.validate(params)))
        for item in found:
            if not isinstance(item, Violation):
                raise TypeError(f"it yielded a {type(item).__name__}, not a Violation")
        return found


# -- the registry ------------------------------------------------------------------

_REGISTRY: dict[str, Invariant] = {}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


def registry() -> dict[str, Invariant]:
    """Every invariant registered so far, by name (the built-ins once their module is imported)."""
    return _REGISTRY


def _where(function: Callable[..., Any]) -> str:
    module = getattr(function, "__module__", "?")
    return f"{module}:{getattr(function, '__qualname__', repr(function))}"


def invariant(name: str, *, needs: tuple[str, ...] = ()) -> Callable[[_F], _F]:
    """Register the decorated function as the invariant ``name``.

    The function is returned unchanged, so it can still be called directly.
    Its shape is checked now: the conversation first, keyword-only
    parameters after, whose annotations :meth:`Invariant.validate` enforces.
    ``needs`` names the agent's own calls it reads (``("tool",)`` for one
    about tool calls): where the channel could not observe them, a run reports
    that instead of letting the invariant pass on an empty list.
    """
    unknown = sorted(set(needs) - set(OBSERVABLE_KINDS))
    if unknown:
        raise ConfigError(
            f"invariant {name!r}: needs {unknown} are not observable kinds "
            f"({', '.join(OBSERVABLE_KINDS)})"
        )
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(
            f"invalid invariant name {name!r}: use letters, digits, '_' and '.' "
            "(a ':' is for import paths)"
        )

    def register(function: _F) -> _F:
        entry = Invariant.of(name, function, tuple(needs))
        known = _REGISTRY.get(name)
        if known is not None and _where(known.function) != _where(function):
            raise ConfigError(
                f"invariant {name!r} is already registered by {_where(known.function)}"
            )
        _REGISTRY[name] = entry
        return function

    return register
