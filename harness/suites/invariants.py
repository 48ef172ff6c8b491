"""Invariants: properties a whole conversation must have, checked after it ran.

An invariant is a pure function of the trace,
``f(conversation, *, **params) -> Iterable[Violation]``, that yields nothing
when the property holds. :func:`invariant` registers one by name and checks
its keyword-only parameters against their annotations, so a scenario file
names it and passes parameters as YAML::

    invariants:
      - one_reply_per_burst
      - never_reasks: {pattern: "which (day|date)"}
      - {name: "mypkg.checks:no_emojis", params: {}}

A name with a colon is an import path (``package.module:function``): any
callable of that shape plugs in, decorated or not. :func:`check` runs a list
of such specs; an invariant that raises becomes a violation of its own rule,
so a bug in a user's invariant never stops a run. The built-in library lives
in :mod:`harness.suites.builtin_invariants` and
:mod:`harness.suites.redelivery_invariants`, and is registered on first lookup.

:class:`Transcript` renders events as the lines violations show
(``[turn 2] user Ana: yes please``) and knows each event's turn; the reports
print conversations with it too.
"""

from __future__ import annotations

import difflib
import importlib
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
)

import harness.suites.builtin_invariants  # the built-ins register on import
import harness.suites.redelivery_invariants  # noqa: F401
from harness.exceptions import ConfigError
from harness.results import Violation
from harness.suites.registry import (
    Invariant,
    brief,
    registry,
)
from harness.suites.target import importable
from harness.trace import (
    Conversation,
)

__all__ = [
    "BoundInvariant",
    "InvariantSpec",
    "NamedSpec",
    "SpecLike",
    "bind",
    "check",
    "parse_spec",
    "registered",
    "resolve",
    "unobserved",
]


class NamedSpec(Protocol):
    """Anything with a ``name`` and ``params``, such as a scenario's parsed invariant."""

    @property
    def name(self) -> str:
        """The invariant's name or import path."""

    @property
    def params(self) -> Mapping[str, Any]:
        """Its parameters as written."""


#: What a spec may be written as: a name, ``{name: params}``, ``{name:, params:}``, a pair.
SpecLike: TypeAlias = (
    "InvariantSpec | NamedSpec | str | tuple[str, Mapping[str, Any] | None] | Mapping[str, Any]"
)


def registered() -> list[str]:
    """The names of every registered invariant, built-ins included, sorted."""
    return sorted(registry())


def _load_path(path: str) -> Invariant:
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"invariant {path!r}: an import path is package.module:function")
    importable()  # the folder you run from, as for --target
    importlib.invalidate_caches()  # a module written a moment ago is found too
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any failure of a user's module, syntax errors included
        raise ConfigError(
            f"invariant {path!r}: can't import {module_name!r} ({type(exc).__name__}: {exc})"
        ) from None
    target: Any = module
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ConfigError(f"invariant {path!r}: {module_name!r} has no {attr!r}") from None
    if isinstance(target, Invariant):
        return target
    for entry in registry().values():  # a decorated function keeps its registered name
        if entry.function is target:
            return entry
    return Invariant.of(path, target)


def resolve(name_or_path: str) -> Invariant:
    """The invariant registered as ``name_or_path``, or the one it names by import path.

    An unknown name raises :class:`~harness.exceptions.ConfigError` listing
    the known ones; an import path that can't be loaded says why.
    """
    if not isinstance(name_or_path, str) or not name_or_path.strip():
        raise ConfigError(f"an invariant is named by text, got {name_or_path!r}")
    name = name_or_path.strip()
    if ":" in name:
        return _load_path(name)
    known = registry()
    found = known.get(name)
    if found is not None:
        return found
    close = difflib.get_close_matches(name, list(known), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ConfigError(
        f"unknown invariant {name!r}; {hint}known invariants: {', '.join(sorted(known))} "
        "(or give an import path, package.module:function)"
    )


# -- specs from YAML ---------------------------------------------------------------


class InvariantSpec(BaseModel):
    """One invariant named in a scenario, with its parameters as written.

    ``line`` is where the scenario file names it, if known; the violations
    it finds carry that line.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    params: dict[str, Any] = Field(default_factory=dict)
    line: int | None = None


_SHAPES = "a name, {name: {params}} or {name: ..., params: {...}}"


def _params_of(name: object, params: object) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise ConfigError(f"invariant {name!r}: params must be a mapping, got {brief(params)}")
    return dict(params)


def parse_spec(obj: object) -> InvariantSpec:
    """Read one invariant spec in any of the shapes YAML gives.

    ``"one_reply_per_burst"``; ``{"never_reasks": {"pattern": "..."}}``;
    ``{"name": "never_reasks", "params": {...}}``; or a ``(name, params)``
    pair; or any object with ``name`` and ``params`` attributes (and
    optionally ``line``), such as a scenario's parsed invariant. Anything
    else is a one-line :class:`~harness.exceptions.ConfigError`. Only the
    shape is checked here: :func:`bind` resolves the name and validates the
    parameters.
    """
    if isinstance(obj, InvariantSpec):
        return obj
    name: object
    params: object
    line = None
    if isinstance(getattr(obj, "name", None), str) and hasattr(obj, "params"):
        name, params = getattr(obj, "name"), getattr(obj, "params")  # noqa: B009  # duck-typed
        found_line = getattr(obj, "line", None)
        line = found_line if isinstance(found_line, int) else None
    elif isinstance(obj, str):
        name, params = obj, None
    elif isinstance(obj, tuple) and len(obj) == 2:
        name, params = obj
    elif isinstance(obj, Mapping) and "name" in obj and set(obj) <= {"name", "params"}:
        name, params = obj["name"], obj.get("params")
    elif isinstance(obj, Mapping) and len(obj) == 1:
        ((name, params),) = obj.items()
    elif isinstance(obj, Mapping) and "name" in obj:
        extra = sorted(str(k) for k in obj if k not in ("name", "params"))
        raise ConfigError(
            f"invariant {obj['name']!r}: unexpected key {extra[0]!r} "
            "(a spec has only name and params)"
        )
    else:
        raise ConfigError(f"an invariant spec is {_SHAPES}; got {brief(obj)}")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"an invariant name must be non-empty text, got {brief(name)}")
    return InvariantSpec(name=name.strip(), params=_params_of(name, params), line=line)


@dataclass(frozen=True)
class BoundInvariant:
    """An invariant resolved from a spec, with its parameters validated: ready to run."""

    invariant: Invariant
    params: Mapping[str, Any]
    spec: InvariantSpec

    @property
    def name(self) -> str:
        """The rule name its violations carry."""
        return self.invariant.name

    def run(self, conversation: Conversation) -> list[Violation]:
        """The invariant's violations; if it raises, one violation saying so.

        An invariant about calls the channel could not observe (tool calls of
        an agent that reports none) is not run: one violation says so.
        """
        unseen = [kind for kind in self.invariant.needs if not conversation.observes(kind)]
        if unseen:
            return [unobserved(self.name, unseen[0], line=self.spec.line)]
        try:
            found = list(self.invariant.function(conversation, **self.params))
            strays = [item for item in found if not isinstance(item, Violation)]
            if strays:
                raise TypeError(f"it yielded a {type(strays[0]).__name__}, not a Violation")
        except Exception as exc:  # a bug in an invariant is reported, never fatal to the run
            found = [_crash(self.name, exc)]
        line = self.spec.line
        if line is None:
            return found
        return [v if v.line is not None else v.model_copy(update={"line": line}) for v in found]


_WHAT = {"tool": "tool calls", "llm": "model calls"}


def unobserved(
    rule: str, kind: str, *, line: int | None = None, kind_of: str = "invariant"
) -> Violation:
    """The violation of a check about the agent's ``kind`` calls on a trace without them."""
    what = _WHAT.get(kind, f"{kind} calls")
    return Violation(
        kind=kind_of,  # type: ignore[arg-type]  # one of the two violation kinds
        rule=rule,
        message=(
            f"can't be checked: this run observed none of the agent's {what}. Build the "
            f"agent's recorders with harness.recording.wrap / wrap_tools, start an agent "
            f"at a URL with HARNESS_STORE_URL so it reports them, or point its SDK "
            f"(ANTHROPIC_BASE_URL, OPENAI_BASE_URL) or its OpenTelemetry exporter "
            f"(OTEL_EXPORTER_OTLP_ENDPOINT) at the harness's server"
        ),
        line=line,
    )


def _crash(name: str, exc: Exception) -> Violation:
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" ({Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    said = f": {detail}" if detail else ""
    return Violation(
        rule=name,
        message=f"the invariant itself failed with {type(exc).__name__}{said}{where}",
    )


def bind(spec: SpecLike) -> BoundInvariant:
    """Parse a spec, resolve its invariant and validate its parameters.

    Raises :class:`~harness.exceptions.ConfigError` for a bad spec, an unknown
    name, an import path that won't load or a bad parameter: the scenario
    loader calls this at load time, so bad input fails before anything runs.
    """
    parsed = parse_spec(spec)
    found = resolve(parsed.name)
    return BoundInvariant(invariant=found, params=found.validate(parsed.params), spec=parsed)


def check(conversation: Conversation, specs: Iterable[SpecLike]) -> list[Violation]:
    """Run every invariant in ``specs`` over ``conversation``; empty when all hold.

    All specs are bound first, so a bad one raises before any runs. The
    violations come in spec order, each invariant's in the order it found them.
    """
    bound = [bind(spec) for spec in specs]
    return [violation for each in bound for violation in each.run(conversation)]


# -- rendering ---------------------------------------------------------------------
