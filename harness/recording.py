"""How a run records or replays an agent's seams, and the one call an agent makes to join in.

A :class:`Recording` travels with a run (in the
:class:`~harness.channel.AgentEnvironment` an in-process agent is built
with). The agent wraps its model client and builds its tool registry
through it, with :func:`wrap` and :func:`wrap_tools`, and gets recorders in
the run's mode: recording into the fixture being written, replaying the
fixture being replayed, or passing through. The recording keeps every
recorder it made, so the run can collect new records, unused ones, and the
divergences a replay ran into even when the agent caught the error and
carried on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from harness.exceptions import Divergence
from harness.llm import LLMClient, LLMResponse, SystemPrompt
from harness.recorder import (
    LLMRecord,
    OnMiss,
    RecordingLLMClient,
    RecordMode,
    ToolRecord,
    ToolRecorder,
)

__all__ = ["Recording", "wrap", "wrap_tools"]


class _Watched(RecordingLLMClient):
    """A recording client that also tells its :class:`Recording` about divergences."""

    def __init__(self, recording: Recording, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._recording = recording

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
        """Answer as the recorder does; note a divergence before raising it."""
        try:
            return await super().create(
                model=model,
                messages=messages,
                max_tokens=max_tokens,
                system=system,
                tools=tools,
                **params,
            )
        except Divergence as exc:
            self._recording.diverged(exc, self._clock.now())
            raise


class _WatchedTools(ToolRecorder):
    """A tool recorder that also tells its :class:`Recording` about divergences."""

    def __init__(self, recording: Recording, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._recording = recording

    async def call(self, name: str, args: Mapping[str, Any] | None = None, /, **kwargs: Any) -> Any:
        """Call as the recorder does; note a divergence before raising it."""
        try:
            return await super().call(name, args, **kwargs)
        except Divergence as exc:
            self._recording.diverged(exc, self._clock.now())
            raise


@dataclass
class Recording:
    """The recorders of one run: their mode, what they replay, and where new records go.

    ``on_llm_record`` and ``on_tool_record`` are called with each new record
    as it is made (a fixture writer appends them to its logs).
    """

    mode: RecordMode = RecordMode.PASSTHROUGH
    on_miss: OnMiss = "raise"
    llm_records: Sequence[LLMRecord] = ()
    tool_records: Sequence[ToolRecord] = ()
    on_llm_record: Callable[[LLMRecord], None] | None = None
    on_tool_record: Callable[[ToolRecord], None] | None = None
    clients: list[RecordingLLMClient] = field(default_factory=list)
    tool_recorders: list[ToolRecorder] = field(default_factory=list)
    divergences: list[Divergence] = field(default_factory=list)
    #: When each divergence happened, on the run's clock (to find its turn).
    divergence_times: list[datetime] = field(default_factory=list)

    def diverged(self, error: Divergence, at: datetime) -> None:
        """Note a request the recording could not answer, and when it was asked."""
        self.divergences.append(error)
        self.divergence_times.append(at)

    def llm(
        self, inner: LLMClient | None, *, sink: Any = None, clock: Any = None
    ) -> RecordingLLMClient:
        """A recorder around ``inner`` in this run's mode."""
        # Replaying without misses going live needs no model at all.
        needs_inner = self.mode is not RecordMode.REPLAY or self.on_miss == "live"
        client = _Watched(
            self,
            inner if needs_inner else None,
            self.mode,
            records=self.llm_records,
            on_miss=self.on_miss,
            sink=sink,
            clock=clock,
            on_record=self.on_llm_record,
        )
        self.clients.append(client)
        return client

    def tools(self, *, sink: Any = None, clock: Any = None) -> ToolRecorder:
        """A tool recorder in this run's mode (register the tools on it)."""
        recorder = _WatchedTools(
            self,
            self.mode,
            records=self.tool_records,
            on_miss=self.on_miss,
            sink=sink,
            clock=clock,
            on_record=self.on_tool_record,
        )
        self.tool_recorders.append(recorder)
        return recorder

    def unused(self) -> list[LLMRecord | ToolRecord]:
        """Recorded answers no recorder was asked for (replay only)."""
        found: list[LLMRecord | ToolRecord] = []
        for client in self.clients:
            found.extend(client.unused())
        for recorder in self.tool_recorders:
            found.extend(recorder.unused())
        return found


def wrap(client: LLMClient, env: Any = None) -> RecordingLLMClient:
    """Wrap an agent's model client for the harness: the one call an agent makes.

    ``env`` is the :class:`~harness.channel.AgentEnvironment` the agent was
    built with (or anything with ``recording``, ``sink`` and ``clock``); with
    no recording in it (or no ``env``), the client passes through and still
    reports each call to the sink.
    """
    recording = getattr(env, "recording", None)
    sink, clock = getattr(env, "sink", None), getattr(env, "clock", None)
    if isinstance(recording, Recording):
        return recording.llm(client, sink=sink, clock=clock)
    return RecordingLLMClient(client, RecordMode.PASSTHROUGH, sink=sink, clock=clock)


def wrap_tools(env: Any = None) -> ToolRecorder:
    """A tool registry for the harness, in the run's mode; see :func:`wrap`."""
    recording = getattr(env, "recording", None)
    sink, clock = getattr(env, "sink", None), getattr(env, "clock", None)
    if isinstance(recording, Recording):
        return recording.tools(sink=sink, clock=clock)
    return ToolRecorder(RecordMode.PASSTHROUGH, sink=sink, clock=clock)
