"""The agent's tools behind a recorder: :class:`ToolRecorder` runs them, or serves what they did.

A tool marked side-effecting never runs again on replay; one that failed
when recorded fails again with :class:`RecordedToolError`.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from pydantic import JsonValue

from harness.acting import _ACTING
from harness.canonical import canonical_json, canonical_key
from harness.divergence import Parts, clip, tool_differences, tool_parts
from harness.exceptions import ConfigError, HarnessError, RecordingError, UnknownTool
from harness.llm import json_default
from harness.records import ToolRecord
from harness.tape import OnMiss, RecordMode, Sink, _Clock, _Recorder
from harness.trace import ToolCall

__all__ = ["RecordedToolError", "ToolRecorder"]


class RecordedToolError(HarnessError, RuntimeError):
    """A tool call that failed when it was recorded, failing again on replay.

    The original exception can't be rebuilt from a fixture, so replay raises
    this with its recorded text (``"ValueError: no table free"``).
    """

    def __init__(self, tool: str, error: str) -> None:
        super().__init__(f"tool {tool!r} failed when recorded: {error}")
        self.tool = tool
        self.error = error


class ToolRecorder(_Recorder[ToolRecord, ToolRecord, ToolRecord]):
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

    def _answer(self, record: ToolRecord) -> ToolRecord:
        """The record itself: a replayed call reads its result or error, and its name."""
        return record

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
