"""Record an agent's LLM and tool calls once; replay them offline, in order.

:class:`RecordingLLMClient` wraps an :class:`~harness.llm.LLMClient` and
:class:`ToolRecorder` wraps the agent's tools. Each runs in one of three
modes (:class:`RecordMode`): ``record`` calls through and keeps every answer,
``replay`` serves the kept answers without calling anything, ``passthrough``
calls through and keeps nothing.

A call is keyed by the sha256 of its canonical JSON (sorted keys, volatile
fields removed), and the answers to one key are served in the order they
were recorded, so a request asked twice gets its two answers. A replayed call
that was never recorded either raises :class:`~harness.exceptions.Divergence`
naming what differs from the nearest recorded call (``on_miss="raise"``) or
goes live and is recorded (``on_miss="live"``).
"""

from __future__ import annotations

import bisect
import hashlib
import inspect
import json
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from operator import itemgetter
from typing import Any, Generic, Literal, Protocol, TypeAlias, TypeVar

from pydantic import AwareDatetime, BaseModel, ConfigDict, JsonValue

from harness.canonical import canonical_bytes, canonical_json, canonical_key
from harness.divergence import (
    Parts,
    clip,
    llm_differences,
    llm_parts,
    message_text,
    quote,
    tool_differences,
    tool_parts,
)
from harness.exceptions import ConfigError, Divergence, HarnessError, RecordingError, UnknownTool
from harness.inflight import busy
from harness.llm import LLMClient, LLMResponse, SystemPrompt, json_default, request_body
from harness.trace import Event, LLMExchange, ToolCall

__all__ = [
    "VOLATILE_PARAMS",
    "LLMRecord",
    "OnMiss",
    "RecordMode",
    "RecordedToolError",
    "RecordingLLMClient",
    "Sink",
    "ToolRecord",
    "ToolRecorder",
    "acting_for",
    "current_user",
]

#: Request params left out of the key: they change from run to run without
#: changing what is asked (per-request ids and user tags, transport options).
VOLATILE_PARAMS: frozenset[str] = frozenset(
    {"extra_headers", "extra_query", "idempotency_key", "metadata", "request_id", "timeout"}
)

#: What a replay does with a call it has no recording for.
OnMiss: TypeAlias = Literal["raise", "live"]
_ON_MISS: tuple[OnMiss, ...] = ("raise", "live")

#: Receives one trace event per call (an LLM exchange or a tool call).
Sink: TypeAlias = Callable[[Event], None]

_NAMED_PARTS = frozenset({"model", "messages", "max_tokens", "system", "tools"})
_PREVIEW = 48
_MAX_LISTED = 4


_ACTING: ContextVar[str | None] = ContextVar("harness_acting_user", default=None)


@contextmanager
def acting_for(user: str) -> Iterator[None]:
    """Name the user an agent is working for, so its model and tool calls carry that user.

    An agent serving several users wraps each user's work in it (the tasks it
    starts inside inherit it); the recorders stamp their trace events with it.
    """
    token = _ACTING.set(user)
    try:
        yield
    finally:
        _ACTING.reset(token)


def current_user() -> str | None:
    """The user the agent is working for now, as :func:`acting_for` named it."""
    return _ACTING.get()


class RecordMode(StrEnum):
    """How a recorder treats calls: keep them, serve kept ones, or stay out of the way."""

    RECORD = "record"
    REPLAY = "replay"
    PASSTHROUGH = "passthrough"

    @classmethod
    def parse(cls, value: RecordMode | str) -> RecordMode:
        """The mode named ``value``; a :class:`ConfigError` listing the valid ones otherwise."""
        try:
            return cls(value)
        except ValueError:
            valid = ", ".join(mode.value for mode in cls)
            raise ConfigError(f"invalid record mode {value!r}; valid modes: {valid}") from None


def _parse_on_miss(value: str) -> OnMiss:
    for choice in _ON_MISS:
        if value == choice:
            return choice
    raise ConfigError(f"invalid on_miss {value!r}; valid values: {', '.join(_ON_MISS)}")


class RecordedToolError(HarnessError, RuntimeError):
    """A tool call that failed when it was recorded, failing again on replay.

    The original exception can't be rebuilt from a fixture, so replay raises
    this with its recorded text (``"ValueError: no table free"``).
    """

    def __init__(self, tool: str, error: str) -> None:
        super().__init__(f"tool {tool!r} failed when recorded: {error}")
        self.tool = tool
        self.error = error


class _Clock(Protocol):
    def now(self) -> datetime: ...


class _UTCClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LLMRecord(_Frozen):
    """One recorded LLM exchange: the canonical request and the answer, with model and tokens."""

    key: str
    request: dict[str, JsonValue]
    response: LLMResponse
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    recorded_at: AwareDatetime


class ToolRecord(_Frozen):
    """One recorded tool call: name, arguments, and the result or the error text."""

    key: str
    name: str
    args: dict[str, JsonValue]
    result: JsonValue = None
    error: str | None = None
    side_effect: bool = False
    recorded_at: AwareDatetime


_R = TypeVar("_R", LLMRecord, ToolRecord)
_T = TypeVar("_T")


class _Tape(Generic[_R]):
    """Recorded answers by key, each served once, in recorded order.

    The index used to find the nearest record on a miss is built on the
    first miss, so loading and serving stay O(1) per record.
    """

    def __init__(self, records: Iterable[_R], parts: Callable[[_R], Parts]) -> None:
        self._parts: Callable[[_R], Parts] = parts
        self.records: list[_R] = []
        self.plays: list[int] = []
        # A key recorded once maps to its position; only a key asked several times
        # needs a queue. Most keys are asked once, and a plain int keeps a large
        # recording small and the lookup flat.
        self._queues: dict[str, int | deque[int]] = {}
        self._counts: Counter[str] = Counter()
        self._index: dict[Hashable, list[int]] | None = None
        for record in records:
            self.add(record, played=False)

    def add(self, record: _R, *, played: bool) -> None:
        position = len(self.records)
        self.records.append(record)
        self.plays.append(1 if played else 0)
        self._counts[record.key] += 1
        if not played:
            waiting = self._queues.get(record.key)
            if waiting is None:
                self._queues[record.key] = position
            elif isinstance(waiting, int):
                self._queues[record.key] = deque((waiting, position))
            else:
                waiting.append(position)
        if self._index is not None:
            for part in self._parts(record):
                self._index.setdefault(part, []).append(position)

    def take(self, key: str) -> _R | None:
        waiting = self._queues.get(key)
        if waiting is None:
            return None
        if isinstance(waiting, int):
            position = waiting
            del self._queues[key]
        else:
            position = waiting.popleft()
            if not waiting:
                del self._queues[key]
        self.plays[position] += 1
        return self.records[position]

    def count(self, key: str) -> int:
        return self._counts[key]

    def unused(self) -> list[tuple[int, _R]]:
        return [
            (i, r) for i, (r, n) in enumerate(zip(self.records, self.plays, strict=True)) if not n
        ]

    def nearest(self, parts: Parts) -> tuple[int, _R] | None:
        """The record sharing the most (weighted) parts; unused and earlier ones win ties."""
        if not self.records:
            return None
        if self._index is None:
            self._index = {}
            for position, record in enumerate(self.records):
                for part in self._parts(record):
                    self._index.setdefault(part, []).append(position)
        scores: Counter[int] = Counter()
        for part, weight in parts.items():
            for position in self._index.get(part, ()):
                scores[position] += weight
        if not scores:
            best = next((i for i, n in enumerate(self.plays) if not n), 0)
        else:
            best = max(scores, key=lambda i: (scores[i], not self.plays[i], -i))
        return best, self.records[best]


class _Log(Generic[_T]):
    """What a recorder recorded this run, kept in the order the calls were made."""

    def __init__(self) -> None:
        self._next = 0
        self._items: list[tuple[int, _T]] = []

    def reserve(self) -> int:
        """A place in call order, taken before awaiting so concurrent calls stay ordered."""
        self._next += 1
        return self._next

    def put(self, seq: int, item: _T) -> None:
        bisect.insort(self._items, (seq, item), key=itemgetter(0))

    def items(self) -> list[_T]:
        return [item for _, item in self._items]


class _Recorder(Generic[_R, _T]):
    """What both recorders share: mode, miss policy, tape, log, clock and sink."""

    _noun = "call"

    def __init__(
        self,
        mode: RecordMode | str,
        records: Iterable[_R],
        on_miss: str,
        sink: Sink | None,
        clock: _Clock | None,
        on_record: Callable[[_R], None] | None,
    ) -> None:
        self.mode = RecordMode.parse(mode)
        self.on_miss: OnMiss = _parse_on_miss(on_miss)
        self._tape: _Tape[_R] = _Tape(records, self._parts)
        self._loaded = len(self._tape.records)
        self._log: _Log[_T] = _Log()
        self._sink = sink
        self._clock: _Clock = _UTCClock() if clock is None else clock
        self._on_record: Callable[[_R], None] | None = on_record

    def load(self, records: Iterable[_R]) -> None:
        """Add recorded answers to serve (a replica of an agent fetching them from a store)."""
        for record in records:
            self._tape.add(record, played=False)
            self._loaded += 1

    def _parts(self, record: _R) -> Parts:
        raise NotImplementedError

    def _materialize(self, item: _T) -> _R:
        raise NotImplementedError

    def _describe(self, record: _R) -> str:
        raise NotImplementedError

    @property
    def records(self) -> list[_R]:
        """Every record: those loaded for replay, then this run's, in call order."""
        return self._tape.records[: self._loaded] + self.new_records

    @property
    def new_records(self) -> list[_R]:
        """The records made in this run (live calls), in call order: what to append to a fixture."""
        return [self._materialize(item) for item in self._log.items()]

    def unused(self) -> list[_R]:
        """Loaded records that were never served."""
        return [record for _, record in self._tape.unused()]

    @property
    def all_played(self) -> bool:
        """True when every loaded record was served."""
        return not self._tape.unused()

    def report(self) -> str:
        """A few lines saying what was served, what went live, and what was never used."""
        unused = self._tape.unused()
        served = sum(1 for n in self._tape.plays[: self._loaded] if n)
        lines = [
            f"{type(self).__name__} ({self.mode.value}): {self._loaded} recorded {self._noun}s "
            f"loaded, {served} served, {len(unused)} unused; {len(self._log.items())} recorded "
            "this run"
        ]
        lines += [f"  unused #{i + 1}: {self._describe(record)}" for i, record in unused]
        return "\n".join(lines)

    def _keep(self, seq: int, item: _T) -> None:
        """File a record made this run; replay also marks it served, for the report."""
        self._log.put(seq, item)
        if self.mode is RecordMode.REPLAY or self._on_record is not None:
            record = self._materialize(item)
            if self.mode is RecordMode.REPLAY:
                self._tape.add(record, played=True)
            if self._on_record is not None:
                self._on_record(record)

    def _emit(self, event: Event) -> None:
        if self._sink is not None:
            self._sink(event)

    def _diverged(
        self,
        key: str,
        parts: Parts,
        differ: Callable[[_R], list[str]],
    ) -> Divergence:
        recorded = self._tape.count(key)
        if recorded:
            difference = f"asked {recorded + 1} times, recorded {recorded}"
            return Divergence(
                f"replay diverged: {self._noun} {difference} (key {key[:12]})",
                key=key,
                differences=(difference,),
            )
        found = self._tape.nearest(parts)
        if found is None:
            difference = f"nothing recorded: this recorder holds no {self._noun}s"
            return Divergence(
                f"replay diverged: {difference} (key {key[:12]})",
                key=key,
                differences=(difference,),
            )
        position, record = found
        differences = tuple(differ(record)) or ("differs in a way not itemised",)
        shown = "; ".join(differences[:_MAX_LISTED])
        if len(differences) > _MAX_LISTED:
            shown += f"; and {len(differences) - _MAX_LISTED} more"
        used = "unused" if not self._tape.plays[position] else "already served"
        return Divergence(
            f"replay diverged: {shown} (against recorded {self._noun} #{position + 1} of "
            f"{len(self._tape.records)}, {used}; key {key[:12]})",
            key=key,
            differences=differences,
        )


@dataclass(slots=True)
class _Pending:
    """An exchange recorded this run, kept as canonical text until someone reads it."""

    key: str
    text: str
    response: LLMResponse
    at: datetime
    record: LLMRecord | None = None


class RecordingLLMClient(_Recorder[LLMRecord, _Pending]):
    """An :class:`~harness.llm.LLMClient` that records, replays or passes through.

    ``inner`` is the real client; replay with ``on_miss="raise"`` needs none.
    ``volatile`` names params to leave out of the key besides
    :data:`VOLATILE_PARAMS`. ``sink`` receives an ``LLMExchange`` per call,
    stamped with ``clock.now()``; ``on_record`` receives each new record as
    it is made (to append to a fixture's llm.jsonl as you go; under
    concurrency that is completion order, while :attr:`records` keeps call
    order).
    """

    _noun = "LLM request"

    def __init__(
        self,
        inner: LLMClient | None,
        mode: RecordMode | str = RecordMode.RECORD,
        *,
        records: Iterable[LLMRecord] = (),
        on_miss: OnMiss = "raise",
        volatile: Iterable[str] = (),
        sink: Sink | None = None,
        clock: _Clock | None = None,
        on_record: Callable[[LLMRecord], None] | None = None,
    ) -> None:
        super().__init__(mode, records, on_miss, sink, clock, on_record)
        if inner is None and (self.mode is not RecordMode.REPLAY or self.on_miss == "live"):
            raise ConfigError(
                f"RecordingLLMClient in {self.mode.value} mode with on_miss={self.on_miss!r} "
                "needs an inner client to call"
            )
        self._inner = inner
        self.volatile = VOLATILE_PARAMS | frozenset(volatile)

    async def create(
        self,
        *,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        max_tokens: int,
        system: SystemPrompt | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **params: Any,
    ) -> LLMResponse:
        """Answer from the recording or the inner client, per the mode."""
        body = request_body(
            model=model,
            messages=messages,
            max_tokens=max_tokens,
            system=system,
            tools=tools,
            params=params,
            exclude=self.volatile,
        )
        raw = canonical_bytes(body)
        key = hashlib.sha256(raw).hexdigest()
        text = raw.decode()
        if self.mode is RecordMode.REPLAY:
            # No await between the lookup and the return: concurrent replays can't race.
            record = self._tape.take(key)
            if record is not None:
                self._emit_exchange(key, record.response, "recorded", None)
                return record.response
            if self.on_miss == "raise":
                now = json.loads(text)
                raise self._diverged(key, llm_parts(now), lambda r: llm_differences(r.request, now))
        assert self._inner is not None  # __init__ refuses a missing inner client for these modes
        seq = self._log.reserve() if self.mode is not RecordMode.PASSTHROUGH else 0
        # A real model takes real time: virtual time must not jump over the call.
        with busy(f"model call ({model})"):
            response = await self._inner.create(
                model=model,
                messages=messages,
                max_tokens=max_tokens,
                system=system,
                tools=tools,
                **params,
            )
        at = self._clock.now()
        if self.mode is not RecordMode.PASSTHROUGH:
            self._keep(seq, _Pending(key, text, response, at))
        self._emit_exchange(key, response, "live", at)
        return response

    def _emit_exchange(
        self,
        key: str,
        response: LLMResponse,
        source: Literal["live", "recorded"],
        at: datetime | None,
    ) -> None:
        if self._sink is None:
            return
        self._emit(
            LLMExchange(
                at=self._clock.now() if at is None else at,
                user=_ACTING.get(),
                key=key,
                model=response.model,
                stop_reason=response.stop_reason,
                input_tokens=response.usage.input_tokens,
                output_tokens=response.usage.output_tokens,
                source=source,
            )
        )

    def _materialize(self, item: _Pending) -> LLMRecord:
        if item.record is None:
            item.record = LLMRecord(
                key=item.key,
                request=json.loads(item.text),
                response=item.response,
                model=item.response.model,
                input_tokens=item.response.usage.input_tokens,
                output_tokens=item.response.usage.output_tokens,
                recorded_at=item.at,
            )
        return item.record

    def _parts(self, record: LLMRecord) -> Parts:
        return llm_parts(record.request)

    def _describe(self, record: LLMRecord) -> str:
        messages = record.request.get("messages")
        count = len(messages) if isinstance(messages, list) else 0
        last = quote(message_text(messages[-1])) if isinstance(messages, list) and messages else ""
        return f"{record.model}, {count} messages, last {last} (key {record.key[:12]})"


class ToolRecorder(_Recorder[ToolRecord, ToolRecord]):
    """The agent's tools, behind a recorder: side effects never run again on replay.

    Register each tool with :meth:`register`, saying whether it has side
    effects, and call it through :meth:`call`. Results must be JSON values
    (pydantic models are dumped); record mode returns the tool's own result,
    replay the recorded JSON. A tool that raises is recorded with its error
    text and the exception propagates; replay raises
    :class:`RecordedToolError` with that text. ``sink``, ``clock`` and
    ``on_record`` work as for :class:`RecordingLLMClient`.
    """

    _noun = "tool call"

    def __init__(
        self,
        mode: RecordMode | str = RecordMode.RECORD,
        *,
        records: Iterable[ToolRecord] = (),
        on_miss: OnMiss = "raise",
        sink: Sink | None = None,
        clock: _Clock | None = None,
        on_record: Callable[[ToolRecord], None] | None = None,
    ) -> None:
        super().__init__(mode, records, on_miss, sink, clock, on_record)
        self._tools: dict[str, tuple[Callable[..., Any], bool]] = {}

    def register(self, name: str, fn: Callable[..., Any], *, side_effect: bool) -> None:
        """Add a tool (a sync or async function taking keyword arguments)."""
        if name in self._tools:
            raise ConfigError(f"tool {name!r} is already registered")
        self._tools[name] = (fn, side_effect)

    def tools(self) -> tuple[str, ...]:
        """The registered tool names, in registration order."""
        return tuple(self._tools)

    def is_side_effecting(self, name: str) -> bool:
        """Whether the tool changes the world (books, sends, charges) when called."""
        return self._tool(name)[1]

    def _tool(self, name: str) -> tuple[Callable[..., Any], bool]:
        try:
            return self._tools[name]
        except KeyError:
            known = ", ".join(self._tools) or "none"
            raise UnknownTool(
                f"no tool named {name!r} is registered (registered: {known})"
            ) from None

    async def call(self, name: str, args: Mapping[str, Any] | None = None, /, **kwargs: Any) -> Any:
        """Call tool ``name`` with ``args`` (a mapping) or keyword arguments."""
        fn = self._tool(name)[0]
        if args is not None and kwargs:
            raise ConfigError("pass a tool's arguments as one mapping or as keywords, not both")
        arguments = dict(args) if args is not None else kwargs
        lenient = self.mode is RecordMode.PASSTHROUGH  # nothing is kept, so never refuse
        json_args: dict[str, JsonValue] = _as_json(arguments, f"tool {name!r} arguments", lenient)
        key = canonical_key({"args": json_args, "name": name})
        if self.mode is RecordMode.REPLAY:
            record = self._tape.take(key)
            if record is not None:
                self._emit_call(record, "recorded")
                if record.error is not None:
                    raise RecordedToolError(name, record.error)
                return record.result
            if self.on_miss == "raise":
                raise self._diverged(
                    key,
                    tool_parts(name, json_args),
                    lambda r: tool_differences(r.name, r.args, name, json_args),
                )
        seq = self._log.reserve()
        try:
            result = fn(**arguments)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:  # any failure of the tool is part of what happened
            self._finish(seq, key, name, json_args, None, f"{type(exc).__name__}: {exc}")
            raise
        json_result = _as_json(result, f"tool {name!r} result", lenient)
        self._finish(seq, key, name, json_args, json_result, None)
        return result

    def _finish(
        self,
        seq: int,
        key: str,
        name: str,
        args: dict[str, JsonValue],
        result: JsonValue,
        error: str | None,
    ) -> None:
        record = ToolRecord(
            key=key,
            name=name,
            args=args,
            result=result,
            error=error,
            side_effect=self.is_side_effecting(name),
            recorded_at=self._clock.now(),
        )
        if self.mode is not RecordMode.PASSTHROUGH:
            self._keep(seq, record)
        self._emit_call(record, "live")

    def _emit_call(self, record: ToolRecord, source: Literal["live", "recorded"]) -> None:
        if self._sink is None:
            return
        self._emit(
            ToolCall(
                at=self._clock.now() if source == "recorded" else record.recorded_at,
                user=_ACTING.get(),
                name=record.name,
                args=record.args,
                result=record.result,
                error=record.error,
                side_effect=self.is_side_effecting(record.name),
                source=source,
            )
        )

    def _materialize(self, item: ToolRecord) -> ToolRecord:
        return item

    def _parts(self, record: ToolRecord) -> Parts:
        return tool_parts(record.name, record.args)

    def _describe(self, record: ToolRecord) -> str:
        return f"{record.name}({clip(canonical_json(record.args))})"


def _as_json(value: Any, what: str, lenient: bool) -> Any:
    """``value`` as plain JSON data; what JSON can't hold is refused, or shown by repr."""
    try:
        return json.loads(canonical_json(value))
    except (TypeError, ValueError) as exc:
        if lenient:
            return json.loads(json.dumps(value, default=_repr_default))
        raise RecordingError(f"{what} can't be recorded as JSON: {exc}") from exc


def _repr_default(value: object) -> Any:
    try:
        return json_default(value)
    except TypeError:
        return repr(value)
