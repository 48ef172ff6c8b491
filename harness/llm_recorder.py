"""A model client behind a recorder: :class:`RecordingLLMClient` records, replays, passes through.

A request is keyed by the sha256 of its canonical JSON with the volatile
params (:data:`VOLATILE_PARAMS`) left out, so two runs asking the same thing
share a key.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, Literal, TypeAlias

from harness.acting import _ACTING
from harness.canonical import canonical_bytes
from harness.clock import OffsetClock, VirtualClock, virtual_base
from harness.divergence import Parts, clip, llm_differences, llm_parts, message_text, quote
from harness.exceptions import ConfigError
from harness.inflight import busy
from harness.llm import LLMClient, LLMResponse, SystemPrompt, request_body
from harness.providers import provider_of
from harness.records import LLMRecord
from harness.tape import OnMiss, RecordMode, Sink, _Clock, _Recorder
from harness.tool_results import ToolResult, set_aside
from harness.trace import LLMExchange

__all__ = ["VOLATILE_PARAMS", "RecordingLLMClient"]

#: Request params left out of the key: they change from run to run without
#: changing what is asked (per-request ids and user tags, transport options).
VOLATILE_PARAMS: frozenset[str] = frozenset(
    {"extra_headers", "extra_query", "idempotency_key", "metadata", "request_id", "timeout"}
)


# What a replay serves of a recorded exchange: the response, the seconds the model took
# (None: none), and who answered.
_Answer: TypeAlias = tuple[LLMResponse, float | None, str | None]


class _Inner(Enum):
    """Who answers a live call when the caller does not say: the inner client."""

    CLIENT = "inner client"


@dataclass(slots=True)
class _Pending:
    """An exchange recorded this run, kept as canonical text until someone reads it."""

    key: str
    text: str
    response: LLMResponse
    at: datetime
    latency_ms: float | None = None
    provider: str | None = None
    waited_s: float | None = None
    record: LLMRecord | None = None


class RecordingLLMClient(_Recorder[LLMRecord, _Pending, _Answer]):
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
        #: The tools whose results the recording answers (None: not known, and every request
        #: must match a recorded one exactly). A replay that finds no exact match takes a
        #: request that differs only in other tools' results: they ran for real, and the
        #: world answered them afresh (see :mod:`harness.tool_results`).
        self.answered_tools: frozenset[str] | None = None
        #: What the world answered differently in such a replay: when, and a line saying it.
        self.set_aside_notes: list[tuple[datetime, str]] = []
        # A recorded request with those results blanked: its key and the results (None: none).
        self._blanked: dict[int, tuple[str, list[ToolResult]] | None] = {}

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

        async def call() -> LLMResponse:
            assert self._inner is not None  # __init__ refuses a missing inner client here
            return await self._inner.create(
                model=model,
                messages=messages,
                max_tokens=max_tokens,
                system=system,
                tools=tools,
                **params,
            )

        return await self.exchange(body, call)

    async def exchange(
        self,
        body: Mapping[str, Any],
        call: Callable[[], Awaitable[LLMResponse]],
        *,
        provider: str | _Inner | None = _Inner.CLIENT,
    ) -> LLMResponse:
        """Answer the request ``body`` (already without volatile params) per the mode.

        ``call`` asks the real model when the mode says so; the harness's model
        endpoint uses this with the body an SDK sent, so a request keys the
        same whether it came through :meth:`create` or over HTTP. ``provider``
        names who ``call`` asks (None: not known); by default, the inner client's
        provider.
        """
        raw = canonical_bytes(body)
        key = hashlib.sha256(raw).hexdigest()
        text = raw.decode()
        if self.mode is RecordMode.REPLAY:
            # No await between the lookup and the return: concurrent replays can't race.
            answer = self._tape.take(key)
            if answer is None and self.answered_tools is not None:
                answer = self._take_blanked(body, self.answered_tools)
            if answer is not None:
                response, latency, recorded_by = answer
                sleep = getattr(self._clock, "sleep", None)
                if latency is not None and sleep is not None:
                    # The call took this long on the recording's clock: on the run's clock it
                    # takes as long again, so what happened meanwhile keeps its place.
                    await sleep(latency)
                self._emit_exchange(key, response, "recorded", None, recorded_by)
                return response
            if self.on_miss == "raise":
                now = self._compared(json.loads(text))
                raise self._diverged(
                    key, llm_parts(now), lambda r: llm_differences(self._compared(r.request), now)
                )
        seq = self._log.reserve() if self.mode is not RecordMode.PASSTHROUGH else 0
        # A real model takes real time: virtual time must not jump over the call.
        # How long the call takes on the run's clock, where it is virtual (on real time: its
        # latency).
        clock = self._clock
        virtual = virtual_base(clock) if isinstance(clock, VirtualClock | OffsetClock) else None
        started, asked = time.monotonic(), virtual.now() if virtual is not None else None
        with busy(f"model call ({body.get('model')})"):
            response = await call()
        at = self._clock.now()
        latency = round((time.monotonic() - started) * 1000, 1)
        waited = None
        if virtual is not None and asked is not None:
            waited = (virtual.now() - asked).total_seconds()
        if provider is _Inner.CLIENT:
            provider = provider_of(self._inner)
        if self.mode is not RecordMode.PASSTHROUGH:
            self._keep(seq, _Pending(key, text, response, at, latency, provider, waited))
        self._emit_exchange(key, response, "live", at, provider)
        return response

    def _compared(self, request: dict[str, Any]) -> dict[str, Any]:
        """``request`` as a divergence compares it: without the results a replay sets aside.

        Naming a tool result the world answered differently would hide what
        the agent changed.
        """
        if self.answered_tools is None:
            return request
        blanked = set_aside(request, self.answered_tools)
        return request if blanked is None else blanked[0]

    def _take_blanked(self, body: Mapping[str, Any], answered: frozenset[str]) -> _Answer | None:
        """The first waiting record asking what ``body`` asks, but for results it can't answer."""
        mine = set_aside(body, answered)
        if mine is None:
            return None
        blanked, results = mine
        wanted = hashlib.sha256(canonical_bytes(blanked)).hexdigest()

        def matches(position: int, record: LLMRecord) -> bool:
            if position not in self._blanked:
                theirs = set_aside(record.request, answered)
                self._blanked[position] = None
                if theirs is not None:
                    self._blanked[position] = (
                        hashlib.sha256(canonical_bytes(theirs[0])).hexdigest(),
                        theirs[1],
                    )
            entry = self._blanked[position]
            return entry is not None and entry[0] == wanted

        found = self._tape.take_first(matches)
        if found is None:
            return None
        position, answer = found
        entry = self._blanked[position]
        assert entry is not None  # it matched
        for recorded, now in zip(entry[1], results, strict=True):
            if recorded.content == now.content:
                continue
            line = (
                f"{now.name or 'a tool'} answered {_shown(now.content)} where the recording has "
                f"{_shown(recorded.content)}: it ran for real (the recording holds no answer for "
                "it), and the model calls were matched without its result"
            )
            if all(line != noted for _, noted in self.set_aside_notes):
                self.set_aside_notes.append((self._clock.now(), line))
        return answer

    @property
    def provider(self) -> str | None:
        """Who answers live requests (the inner client's provider); None without one."""
        return None if self._inner is None else provider_of(self._inner)

    def _emit_exchange(
        self,
        key: str,
        response: LLMResponse,
        source: Literal["live", "recorded"],
        at: datetime | None,
        provider: str | None,
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
                provider=provider,
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
                latency_ms=item.latency_ms,
                provider=item.provider,
                waited_s=item.waited_s,
            )
        return item.record

    def _answer(self, record: LLMRecord) -> _Answer:
        """The recorded response, how many seconds it took (None: no time), who answered."""
        if record.waited_s is not None:
            return record.response, record.waited_s or None, record.provider
        latency = record.latency_ms / 1000 if record.latency_ms else None
        return record.response, latency, record.provider

    def _parts(self, record: LLMRecord) -> Parts:
        return llm_parts(record.request)

    def _describe(self, record: LLMRecord) -> str:
        messages = record.request.get("messages")
        count = len(messages) if isinstance(messages, list) else 0
        last = quote(message_text(messages[-1])) if isinstance(messages, list) and messages else ""
        return f"{record.model}, {count} messages, last {last} (key {record.key[:12]})"


def _shown(content: Any) -> str:
    """A tool result as one short line."""
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return clip(text)
