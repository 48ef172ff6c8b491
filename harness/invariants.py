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
in :mod:`harness.builtin_invariants` and is registered on first lookup.

:class:`Transcript` renders events as the lines violations show
(``[turn 2] user Ana: yes please``) and knows each event's turn; the reports
print conversations with it too.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import re
import traceback
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Protocol, TypeAlias, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
)

from harness.clock import format_duration, parse_duration
from harness.exceptions import ConfigError
from harness.results import Violation
from harness.trace import (
    EVENT_ADAPTER,
    ClockJump,
    Conversation,
    DeliveryAttempt,
    ErrorInfo,
    Event,
    InboundMessage,
    LLMExchange,
    OutboundSend,
    StatusUpdate,
    ToolCall,
)

__all__ = [
    "BoundInvariant",
    "DurationParam",
    "Invariant",
    "InvariantFunction",
    "InvariantSpec",
    "NamedSpec",
    "Regex",
    "SpecLike",
    "Transcript",
    "bind",
    "check",
    "invariant",
    "parse_spec",
    "registered",
    "render_event",
    "resolve",
]

#: The shape of an invariant: the conversation, then keyword-only parameters.
InvariantFunction: TypeAlias = Callable[..., Iterable[Violation]]


class NamedSpec(Protocol):
    """Anything with a ``name`` and ``params``, such as a scenario's parsed invariant."""

    @property
    def name(self) -> str:
        """The invariant's name or import path."""
        ...

    @property
    def params(self) -> Mapping[str, Any]:
        """Its parameters as written."""
        ...


#: What a spec may be written as: a name, ``{name: params}``, ``{name:, params:}``, a pair.
SpecLike: TypeAlias = (
    "InvariantSpec | NamedSpec | str | tuple[str, Mapping[str, Any] | None] | Mapping[str, Any]"
)

_F = TypeVar("_F", bound=InvariantFunction)


def _brief(value: object) -> str:
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
        raise ConfigError(f"invariant {name!r} is not callable (got {_brief(function)})")
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
    got = _brief(given)
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

    @classmethod
    def of(cls, name: str, function: InvariantFunction) -> Invariant:
        """Wrap ``function`` as the invariant ``name``, checking its shape."""
        return cls(name=name, function=function, signature=_signature(name, function))

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


def _registry() -> dict[str, Invariant]:
    # The built-ins register themselves when their module is imported; importing
    # it here, not at the top, keeps the two modules free of an import cycle.
    import harness.builtin_invariants  # noqa: F401

    return _REGISTRY


def _where(function: Callable[..., Any]) -> str:
    module = getattr(function, "__module__", "?")
    return f"{module}:{getattr(function, '__qualname__', repr(function))}"


def invariant(name: str) -> Callable[[_F], _F]:
    """Register the decorated function as the invariant ``name``.

    The function is returned unchanged, so it can still be called directly.
    Its shape is checked now: the conversation first, keyword-only
    parameters after, whose annotations :meth:`Invariant.validate` enforces.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(
            f"invalid invariant name {name!r}: use letters, digits, '_' and '.' "
            "(a ':' is for import paths)"
        )

    def register(function: _F) -> _F:
        entry = Invariant.of(name, function)
        known = _REGISTRY.get(name)
        if known is not None and _where(known.function) != _where(function):
            raise ConfigError(
                f"invariant {name!r} is already registered by {_where(known.function)}"
            )
        _REGISTRY[name] = entry
        return function

    return register


def registered() -> list[str]:
    """The names of every registered invariant, built-ins included, sorted."""
    return sorted(_registry())


def _load_path(path: str) -> Invariant:
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"invariant {path!r}: an import path is package.module:function")
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
    for entry in _registry().values():  # a decorated function keeps its registered name
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
    registry = _registry()
    found = registry.get(name)
    if found is not None:
        return found
    close = difflib.get_close_matches(name, list(registry), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ConfigError(
        f"unknown invariant {name!r}; {hint}known invariants: {', '.join(sorted(registry))} "
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
        raise ConfigError(f"invariant {name!r}: params must be a mapping, got {_brief(params)}")
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
        raise ConfigError(f"an invariant spec is {_SHAPES}; got {_brief(obj)}")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"an invariant name must be non-empty text, got {_brief(name)}")
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
        """The invariant's violations; if it raises, one violation saying so."""
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

_MAX_TEXT = 160


def _clip(text: str, limit: int = _MAX_TEXT) -> str:
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return f"{flat[: limit - 1]}… (+{len(flat) - limit + 1} chars)"


def _value(value: Any) -> str:
    return repr(_clip(value, 60)) if isinstance(value, str) else _clip(repr(value), 60)


def _errors(errors: Iterable[ErrorInfo], *, details: bool = False) -> str:
    shown = []
    for error in errors:
        parts = (error.title, error.details) if details else (error.title,)
        words = ": ".join(part for part in parts if part)
        shown.append(f"{error.code} ({_clip(words, 100)})" if words else str(error.code))
    return "; ".join(shown)


def _body(event: Event, name: str, to: str) -> str:
    if isinstance(event, InboundMessage):
        who = f"user {name}" + (" (redelivered)" if event.duplicate else "")
        said = _clip(event.text) if event.text is not None else f"<{event.type}>"
        button = f" [button {event.reply_id}]" if event.reply_id is not None else ""
        return f"{who}: {said}{button}"
    if isinstance(event, OutboundSend):
        if not event.is_message:
            line = f"agent {event.type}{to}"
        else:
            notes = []
            if event.is_template:
                template = event.request.get("template")
                tname = template.get("name") if isinstance(template, dict) else None
                notes.append(f"template {tname}" if tname else "template")
            elif event.type != "text":
                notes.append(event.type)
            if event.in_window is False and not event.is_template:
                notes.append("window closed")
            head = "agent" + to + (f" ({', '.join(notes)})" if notes else "")
            line = f"{head}: {_clip(event.text)}" if event.text else head
        if event.error is not None:
            line += f" -> refused {_errors([event.error], details=True)}"
        return line
    if isinstance(event, ToolCall):
        args = ", ".join(f"{k}={_value(v)}" for k, v in event.args.items())
        line = f"tool {event.name}({args})"
        if event.error is not None:
            line += f" -> error: {_clip(event.error, 80)}"
        return line
    if isinstance(event, StatusUpdate):
        errors = f" {_errors(event.errors)}" if event.errors else ""
        return f"status {event.status}{errors}"
    if isinstance(event, LLMExchange):
        stop = f" (stop {event.stop_reason})" if event.stop_reason else ""
        return f"llm {event.model}{stop}"
    if isinstance(event, ClockJump):
        jumped = format_duration(event.at - event.previous, plus=True)
        return f"clock {jumped}" + (f" ({event.reason})" if event.reason else "")
    if isinstance(event, DeliveryAttempt):
        answer = str(event.status_code) if event.status_code is not None else "no answer"
        faults = f" [{', '.join(event.faults)}]" if event.faults else ""
        return f"delivery {event.delivery} attempt {event.attempt} -> {answer}{faults}"
    raise TypeError(f"not an event: {event!r}")  # pragma: no cover  # the union is closed


def render_event(
    event: Event,
    turn: int | None = None,
    *,
    names: Mapping[str, str] | None = None,
    recipient: bool = False,
) -> str:
    """One event as a line of the conversation, e.g. ``[turn 2] user Ana: yes please``.

    ``turn`` is the 0-based turn index, shown 1-based as
    :meth:`~harness.results.Violation.headline` shows it; ``names`` maps
    user keys to display names; ``recipient`` adds ``to <name>`` to the
    agent's sends, for conversations with several users.
    """
    user = event.user or ""
    name = (names or {}).get(user) or user or "?"
    to = f" to {name}" if recipient and event.user else ""
    prefix = f"[turn {turn + 1}] " if turn is not None else ""
    return prefix + _body(event, name, to)


class Transcript:
    """A conversation's event log as printable lines, with the turn of each event.

    Events are addressed by their index in ``conversation.events``, the
    index a :class:`~harness.results.Violation` lists in ``events``. Turns
    share the log's event objects; for a conversation loaded from JSON,
    where they are equal copies, each is matched to the log by value.
    """

    def __init__(self, conversation: Conversation) -> None:
        self.conversation = conversation
        self.events: tuple[Event, ...] = conversation.events
        self.names = {p.id: p.name for p in conversation.participants if p.name}
        users = {e.user for e in self.events if e.user is not None}
        self.recipient = len(users) > 1
        self._turn_at: list[int | None] = [None] * len(self.events)
        self._turn_events: list[list[int]] = []
        self._map_turns()

    def _map_turns(self) -> None:
        by_id: dict[int, int] = {}
        for i, event in enumerate(self.events):
            by_id.setdefault(id(event), i)
        by_value: dict[bytes, list[int]] | None = None
        claimed: set[int] = set()
        for turn in self.conversation.turns:
            indexes: list[int] = []
            for event in (*turn.inbound, *turn.actions):
                index = by_id.get(id(event))
                if index is None or index in claimed:
                    if by_value is None:
                        by_value = {}
                        for i, e in enumerate(self.events):
                            by_value.setdefault(EVENT_ADAPTER.dump_json(e), []).append(i)
                    free = [
                        i
                        for i in by_value.get(EVENT_ADAPTER.dump_json(event), [])
                        if i not in claimed
                    ]
                    if not free:
                        continue
                    index = free[0]
                claimed.add(index)
                indexes.append(index)
                self._turn_at[index] = turn.index
            self._turn_events.append(sorted(indexes))

    def turn(self, index: int) -> int | None:
        """The index of the turn event ``index`` belongs to (None before the first turn)."""
        return self._turn_at[index]

    def turn_events(self, turn: int) -> list[int]:
        """The log indexes of a turn's events, in log order."""
        return list(self._turn_events[turn])

    def user(self, index: int) -> str | None:
        """Whose conversation event ``index`` is part of: its user, else its turn's user."""
        event = self.events[index]
        if event.user is not None:
            return event.user
        turn = self._turn_at[index]
        return self.conversation.turns[turn].user if turn is not None else None

    def line(self, index: int) -> str:
        """Event ``index`` rendered as a line, with its turn."""
        return render_event(
            self.events[index], self._turn_at[index], names=self.names, recipient=self.recipient
        )

    def lines(self, indexes: Iterable[int] | None = None) -> list[str]:
        """Several events as lines (the whole log when ``indexes`` is None)."""
        chosen = range(len(self.events)) if indexes is None else indexes
        return [self.line(i) for i in chosen]

    def violation(
        self, rule: str, message: str, indexes: Sequence[int], *, turn: int | None = None
    ) -> Violation:
        """A violation showing events ``indexes`` (sorted, once each).

        ``turn`` defaults to the turn of the last of them, where it showed.
        """
        shown = sorted(set(indexes))
        if turn is None:
            turns = [t for t in (self._turn_at[i] for i in shown) if t is not None]
            turn = turns[-1] if turns else None
        return Violation(
            rule=rule,
            message=message,
            turn=turn,
            messages=tuple(self.lines(shown)),
            events=tuple(shown),
        )
