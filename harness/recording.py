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

import asyncio
import json
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from harness.exceptions import ConfigError, Divergence
from harness.llm import LLMClient, LLMResponse
from harness.llm_recorder import RecordingLLMClient, _Inner
from harness.records import LLMRecord, ToolRecord
from harness.store import Store, open_store
from harness.tape import OnMiss, RecordMode
from harness.tool_recorder import ToolRecorder
from harness.trace import Event

__all__ = [
    "Recording",
    "fetch_records",
    "publish_records",
    "store_key",
    "wrap",
    "wrap_tools",
]


class _Watched(RecordingLLMClient):
    """A recording client that also tells its :class:`Recording` about divergences."""

    def __init__(self, recording: Recording, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._recording = recording

    async def exchange(
        self,
        body: Mapping[str, Any],
        call: Callable[[], Awaitable[LLMResponse]],
        *,
        provider: str | _Inner | None = _Inner.CLIENT,
    ) -> LLMResponse:
        """Answer as the recorder does; note a divergence before raising it."""
        await self._recording.ensure_loaded()
        try:
            return await super().exchange(body, call, provider=provider)
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
        await self._recording.ensure_loaded()
        try:
            return await super().call(name, args, **kwargs)
        except Divergence as exc:
            self._recording.diverged(exc, self._clock.now())
            raise


@dataclass
class Recording:
    """The recorders of one run: their mode, what they replay, and where new records go.

    ``on_llm_record`` and ``on_tool_record`` are called with each new record
    as it is made (a fixture writer appends them to its logs); ``on_event``
    with each event of the channel's trace as it happens, so a recording cut
    short keeps everything up to that moment.
    """

    mode: RecordMode = RecordMode.PASSTHROUGH
    on_miss: OnMiss = "raise"
    llm_records: Sequence[LLMRecord] = ()
    tool_records: Sequence[ToolRecord] = ()
    on_llm_record: Callable[[LLMRecord], None] | None = None
    on_tool_record: Callable[[ToolRecord], None] | None = None
    on_event: Callable[[Event], None] | None = None
    #: The simulated users' model exchanges: a stream of their own, apart from the agent's
    #: (a fixture's ``users.jsonl``), recorded and replayed in this recording's mode.
    user_llm_records: Sequence[LLMRecord] = ()
    on_user_llm_record: Callable[[LLMRecord], None] | None = None
    clients: list[RecordingLLMClient] = field(default_factory=list)
    user_clients: list[RecordingLLMClient] = field(default_factory=list)
    tool_recorders: list[ToolRecorder] = field(default_factory=list)
    divergences: list[Divergence] = field(default_factory=list)
    #: When each divergence happened, on the run's clock (to find its turn).
    divergence_times: list[datetime] = field(default_factory=list)

    #: Where the records live for an agent in another process: a store and a fixture id.
    store: Store | None = None
    fixture_id: str = ""
    #: The agent's own settings a replay needs to behave as it did (none of them secret).
    agent_settings: Mapping[str, str] = field(default_factory=dict)
    _loaded: bool = False
    _writes: set[asyncio.Task[object]] = field(default_factory=set)

    @classmethod
    def in_store(
        cls, store: Store, fixture_id: str, mode: RecordMode | str, *, on_miss: OnMiss = "raise"
    ) -> Recording:
        """A recording kept in ``store`` under ``fixture_id``, shared by every replica of an agent.

        In replay mode each recorder fetches the recorded answers before its
        first call; in record mode each new record is appended to the store.
        """
        recording = cls(
            mode=RecordMode.parse(mode), on_miss=on_miss, store=store, fixture_id=fixture_id
        )
        if recording.mode is RecordMode.RECORD:
            recording.on_llm_record = recording._keep("llm")
            recording.on_tool_record = recording._keep("tools")
        return recording

    @classmethod
    def from_settings(cls, settings: Mapping[str, str]) -> Recording | None:
        """The recording an agent in another process is told to use, if any.

        ``HARNESS_RECORD_MODE`` (record, replay or passthrough),
        ``HARNESS_RECORDING_URL`` (the store, e.g. ``redis://host:6379/0``) and
        ``HARNESS_FIXTURE_ID`` (which recording): set them on every replica.
        """
        mode = settings.get("HARNESS_RECORD_MODE", "").strip()
        if not mode or mode == RecordMode.PASSTHROUGH.value:
            return None
        url = settings.get("HARNESS_RECORDING_URL", "").strip()
        fixture_id = settings.get("HARNESS_FIXTURE_ID", "").strip()
        if not url or not fixture_id:
            raise ConfigError(
                "HARNESS_RECORD_MODE needs HARNESS_RECORDING_URL and HARNESS_FIXTURE_ID"
            )
        on_miss = settings.get("HARNESS_ON_MISS", "raise").strip() or "raise"
        if on_miss not in ("raise", "live"):
            raise ConfigError(f"HARNESS_ON_MISS={on_miss!r}: expected raise or live")
        return cls.in_store(open_store(url), fixture_id, mode, on_miss=on_miss)  # type: ignore[arg-type]  # checked just above

    def _keep(self, log: str) -> Callable[[Any], None]:
        def keep(record: LLMRecord | ToolRecord) -> None:
            assert self.store is not None  # only set up for a store-backed recording
            loop = asyncio.get_running_loop()
            writes: list[Coroutine[Any, Any, object]] = [
                self.store.append(store_key(self.fixture_id, log), record.model_dump_json())
            ]
            if self.agent_settings:
                # With each record, the agent says how it was set up, for the fixture.
                settings = json.dumps(dict(self.agent_settings), sort_keys=True)
                writes.append(self.store.set(store_key(self.fixture_id, "settings"), settings))
            for write in writes:
                task = loop.create_task(write)
                self._writes.add(task)
                task.add_done_callback(self._writes.discard)

        return keep

    def report_settings(self, settings: Mapping[str, str]) -> None:
        """The agent's settings a replay needs (``BOOKING_DEBOUNCE_SECONDS=0.2``), no secrets.

        A recording kept in a store publishes them with its records, and
        ``harness proxy`` writes them into the fixture's ``meta.json``, where
        ``harness replay`` reads them back.
        """
        self.agent_settings = dict(settings)

    async def ensure_loaded(self) -> None:
        """Fetch the recorded answers from the store, once, before the first call."""
        if self._loaded or self.store is None or self.mode is not RecordMode.REPLAY:
            return
        self._loaded = True
        llm, tools = await fetch_records(self.store, self.fixture_id)
        for client in self.clients:
            client.load(llm)
            client.answered_tools = frozenset(record.name for record in tools)
        for recorder in self.tool_recorders:
            recorder.load(tools)

    async def flush(self) -> None:
        """Wait until every record made so far is in the store."""
        while self._writes:
            await asyncio.gather(*list(self._writes))

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
        if self.mode is RecordMode.REPLAY:
            # The tools the recording answers; the others ran for real (harness.tool_results).
            client.answered_tools = frozenset(record.name for record in self.tool_records)
        self.clients.append(client)
        return client

    def user_llm(self, inner: LLMClient | None, *, clock: Any = None) -> RecordingLLMClient:
        """A recorder around a simulated user's model, on the users' own stream.

        Its exchanges are not the agent's: they reach no sink (the trace holds
        the agent's model calls only) and are kept in ``user_llm_records``.
        """
        needs_inner = self.mode is not RecordMode.REPLAY or self.on_miss == "live"
        client = _Watched(
            self,
            inner if needs_inner else None,
            self.mode,
            records=self.user_llm_records,
            on_miss=self.on_miss,
            clock=clock,
            on_record=self.on_user_llm_record,
        )
        self.user_clients.append(client)
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

    def set_aside_notes(self) -> list[tuple[datetime, str]]:
        """What the world answered the agent's own tools differently in a replay, when and how.

        A tool the recording cannot answer runs for real in a replay; where its
        result differed from the recorded one, the model calls were matched
        without it (:mod:`harness.tool_results`), and each such result is a line.
        """
        return sorted(
            (note for client in self.clients for note in client.set_aside_notes),
            key=lambda note: note[0],
        )

    def unused(self) -> list[LLMRecord | ToolRecord]:
        """Recorded answers no recorder was asked for (replay only)."""
        found: list[LLMRecord | ToolRecord] = []
        for client in (*self.clients, *self.user_clients):
            found.extend(client.unused())
        for recorder in self.tool_recorders:
            found.extend(recorder.unused())
        return found


def _recording_of(env: Any) -> Recording | None:
    if isinstance(env, Recording):
        return env
    recording = getattr(env, "recording", None)
    return recording if isinstance(recording, Recording) else None


def _observe(env: Any, kind: str) -> None:
    """Tell the channel the agent's calls of ``kind`` will reach its sink from now on."""
    observed = getattr(env, "observed", None)
    if isinstance(observed, set) and getattr(env, "sink", None) is not None:
        observed.add(kind)


def wrap(client: LLMClient, env: Any = None) -> RecordingLLMClient:
    """Wrap an agent's model client for the harness: the one call an agent makes.

    ``env`` is the :class:`~harness.channel.AgentEnvironment` the agent was
    built with (or anything with ``recording``, ``sink`` and ``clock``), or a
    :class:`Recording` itself (an agent in another process gets one from
    :meth:`Recording.from_settings`); with no recording, the client passes
    through and still reports each call to the sink.
    """
    _check_client(client)
    recording = _recording_of(env)
    sink, clock = getattr(env, "sink", None), getattr(env, "clock", None)
    _observe(env, "llm")
    if recording is not None:
        return recording.llm(client, sink=sink, clock=clock)
    return RecordingLLMClient(client, RecordMode.PASSTHROUGH, sink=sink, clock=clock)


def _check_client(client: object) -> None:
    """Refuse a provider's own SDK client at once: it answers in its own types, not LLMResponse."""
    vendor = type(client).__module__.partition(".")[0]
    if vendor in ("anthropic", "openai"):
        hint = (
            "harness.llm.AnthropicClient(client=your_client)"
            if vendor == "anthropic"
            else "an LLMClient of your own around it"
        )
        raise ConfigError(
            f"wrap() takes a harness.llm.LLMClient (create(...) -> LLMResponse), not {vendor}'s "
            f"{type(client).__name__}: wrap {hint}, or leave the SDK as it is and point its "
            "base URL at the harness's model endpoint (docs/how-to/any-agent.md)"
        )


def wrap_tools(env: Any = None) -> ToolRecorder:
    """A tool registry for the harness, in the run's mode; see :func:`wrap`."""
    recording = _recording_of(env)
    sink, clock = getattr(env, "sink", None), getattr(env, "clock", None)
    _observe(env, "tool")
    if recording is not None:
        return recording.tools(sink=sink, clock=clock)
    return ToolRecorder(RecordMode.PASSTHROUGH, sink=sink, clock=clock)


def store_key(fixture_id: str, log: str) -> str:
    """Where a recording's ``llm`` or ``tools`` log lives in a store."""
    return f"recording:{fixture_id}:{log}"


async def publish_records(
    store: Store,
    fixture_id: str,
    llm: Sequence[LLMRecord] = (),
    tools: Sequence[ToolRecord] = (),
) -> None:
    """Put a fixture's recorded answers in ``store`` for replicas replaying ``fixture_id``."""
    for log, records in (("llm", llm), ("tools", tools)):
        key = store_key(fixture_id, log)
        await store.delete(key)
        for record in records:
            await store.append(key, record.model_dump_json())


async def fetch_records(store: Store, fixture_id: str) -> tuple[list[LLMRecord], list[ToolRecord]]:
    """The recorded answers kept in ``store`` for ``fixture_id``."""
    llm = [
        LLMRecord.model_validate_json(raw)
        for raw in await store.read_log(store_key(fixture_id, "llm"))
    ]
    tools = [
        ToolRecord.model_validate_json(raw)
        for raw in await store.read_log(store_key(fixture_id, "tools"))
    ]
    return llm, tools
