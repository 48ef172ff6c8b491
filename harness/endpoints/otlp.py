"""An OTLP/HTTP trace receiver that turns an agent's GenAI spans into trace events.

Most agent frameworks already emit OpenTelemetry spans named by the GenAI
semantic conventions. Pointed at a harness server
(``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://host:port/v1/traces``), an
agent's exporter posts them to ``POST /v1/traces``, in protobuf or JSON
(gzipped or not), and each span whose ``gen_ai.operation.name`` is
``execute_tool`` becomes a :class:`~harness.trace.ToolCall` (``gen_ai.tool.name``,
``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``, an error status
as its error), and each ``chat`` (or ``text_completion``,
``generate_content``) span an :class:`~harness.trace.LLMExchange` (model,
finish reason, token counts). Other spans are ignored. So invariants about
tools hold an agent to account that only has its usual instrumentation.

The protocol is read with the OpenTelemetry project's own message classes
(``opentelemetry-proto``). Which conversation a span belongs to is the
server's business: it gives a ``sink`` function of the span's attributes
(resource attributes merged under the span's own). A span's ``user.id`` (or
``enduser.id``) attribute names the user it acted for. The conventions have
no word for a side effect: a tool is side-effecting when its span says
``harness.tool.side_effect = true`` or its name is among ``side_effects``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import gzip
import json
import zlib
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Protocol

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from pydantic import JsonValue
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from harness.tape import Sink
from harness.trace import Event, LLMExchange, ToolCall

__all__ = [
    "MODEL_OPERATIONS",
    "OTLP_TRACES_PATH",
    "OTLPReceiver",
    "Placer",
    "on_clock",
    "span_events",
]

#: Where OTLP/HTTP exporters post traces.
OTLP_TRACES_PATH: Final = "/v1/traces"
#: The ``gen_ai.operation.name`` values that are a call to a model.
MODEL_OPERATIONS: Final = frozenset({"chat", "text_completion", "generate_content"})
_PROTOBUF: Final = "application/x-protobuf"
_SIDE_EFFECT: Final = "harness.tool.side_effect"

#: Where a trace takes an event an agent reported, with the wall-clock instants
#: (seconds since the epoch) its span started and ended: a span exported late
#: (batched, or flushed after the reply) can then be put back where its work
#: happened, and how late spans come can be learnt.
Placer = Callable[[Event, float, float], None]


class _BadExport(ValueError):
    """An export the receiver cannot read; its message says why, in one line."""


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [_value(item) for item in value.array_value.values]
    if which == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return getattr(value, which)


def _attributes(pairs: Iterator[KeyValue] | Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs}


def _json(value: Any) -> JsonValue:
    """A JSON-encoded attribute as the value it encodes; other values as they are."""
    if isinstance(value, str):
        try:
            decoded: JsonValue = json.loads(value)
        except ValueError:
            return value
        return decoded
    return value  # type: ignore[no-any-return]  # attribute values are JSON's own types


def _at(nanos: int) -> datetime:
    return datetime.fromtimestamp(nanos / 1e9, tz=UTC)


def span_events(
    span: Span, attributes: Mapping[str, Any], side_effects: Collection[str] = ()
) -> list[Event]:
    """The trace events one span stands for (none, for a span that is not a GenAI one).

    ``attributes`` are the span's attributes with its resource's beneath them.
    """
    operation = attributes.get("gen_ai.operation.name")
    user = attributes.get("user.id") or attributes.get("enduser.id")
    user = str(user) if user is not None else None
    at = _at(span.start_time_unix_nano or span.end_time_unix_nano)
    if operation == "execute_tool":
        name = str(attributes.get("gen_ai.tool.name") or span.name.removeprefix("execute_tool "))
        args = _json(attributes.get("gen_ai.tool.call.arguments"))
        failed = span.status.code == Status.STATUS_CODE_ERROR
        error = None
        if failed:
            error = span.status.message or str(attributes.get("error.type") or "error")
        marked = attributes.get(_SIDE_EFFECT)
        return [
            ToolCall(
                at=at,
                user=user,
                name=name,
                args=args if isinstance(args, dict) else {"arguments": args},
                result=_json(attributes.get("gen_ai.tool.call.result")),
                error=error,
                side_effect=bool(marked) if marked is not None else name in side_effects,
            )
        ]
    if operation in MODEL_OPERATIONS:
        reasons = attributes.get("gen_ai.response.finish_reasons")
        reason = reasons[0] if isinstance(reasons, list) and reasons else reasons
        model = attributes.get("gen_ai.response.model") or attributes.get("gen_ai.request.model")
        return [
            LLMExchange(
                at=at,
                user=user,
                key="otlp:" + span.trace_id.hex() + ":" + span.span_id.hex(),
                model=str(model or ""),
                stop_reason=str(reason) if reason is not None else None,
                input_tokens=int(attributes.get("gen_ai.usage.input_tokens") or 0),
                output_tokens=int(attributes.get("gen_ai.usage.output_tokens") or 0),
            )
        ]
    return []


class _Now(Protocol):
    def now(self) -> datetime: ...


def on_clock(event: Event, clock: _Now, not_before: datetime | None = None) -> Event:
    """``event`` (stamped by a span, in real time) moved onto ``clock``, its age kept.

    A span says when it started by the agent's wall clock; a trace whose clock
    is not the wall's (a replay starting at the recorded instant, a server whose
    clock was moved on) would put it among the wrong events. How long ago it
    started is what carries over, and it is never put before ``not_before`` (the
    trace's last event: a virtual clock stands still while the agent works, so
    its age would take it back past the message it answers).
    """
    age = max(datetime.now(UTC) - event.at, timedelta(0))
    at = clock.now() - age
    if not_before is not None and at < not_before:
        at = not_before
    return event.model_copy(update={"at": at})


def _hex_ids_to_base64(raw: Any) -> None:
    """OTLP/JSON writes trace and span ids in hex, where protobuf's JSON expects base64."""
    for resource_spans in raw.get("resourceSpans") or [] if isinstance(raw, dict) else []:
        for scope_spans in resource_spans.get("scopeSpans") or []:
            for span in scope_spans.get("spans") or []:
                for field in ("traceId", "spanId", "parentSpanId"):
                    value = span.get(field)
                    if isinstance(value, str) and value:
                        # Some exporters write base64 already: left as it is.
                        with contextlib.suppress(ValueError):
                            span[field] = base64.b64encode(bytes.fromhex(value)).decode()


def _decode(body: bytes, content_type: str, encoding: str) -> ExportTraceServiceRequest:
    if encoding == "gzip":
        try:
            body = gzip.decompress(body)
        except (OSError, EOFError, zlib.error) as exc:
            raise _BadExport(f"the body is not gzip: {exc}") from exc
    elif encoding == "deflate":
        try:
            body = zlib.decompress(body)
        except zlib.error as exc:
            raise _BadExport(f"the body is not deflate: {exc}") from exc
    export = ExportTraceServiceRequest()
    if content_type == _PROTOBUF:
        try:
            export.ParseFromString(body)
        except DecodeError as exc:
            raise _BadExport(f"the body is not an OTLP protobuf export: {exc}") from exc
        return export
    try:
        raw = json.loads(body)
        _hex_ids_to_base64(raw)
        json_format.ParseDict(raw, export, ignore_unknown_fields=True)
    except (ValueError, json_format.ParseError, binascii.Error) as exc:
        raise _BadExport(f"the body is not an OTLP JSON export: {exc}") from exc
    return export


class OTLPReceiver:
    """``POST /v1/traces`` as a Starlette route, handing each GenAI span's events to a sink.

    ``sink`` takes every event, or is a function from a span's attributes to
    the :data:`Placer` of the conversation it belongs to (None: the span is
    dropped), which puts the event on its trace's clock itself.
    ``skip_model_spans`` says when to leave model spans out (when the agent's
    calls already come through the model endpoint, they would count twice).
    ``clock`` is the trace's clock, when it is not the wall's, and ``trace``
    the trace so far (:func:`on_clock`). With ``placed``, each event goes there
    with the instants its span started and ended, instead of to ``sink``.
    """

    def __init__(
        self,
        sink: Sink | Callable[[Mapping[str, Any]], Placer | None],
        *,
        routed: bool = False,
        side_effects: Collection[str] = (),
        skip_model_spans: Callable[[], bool] | None = None,
        clock: _Now | None = None,
        trace: Sequence[Event] = (),
        placed: Placer | None = None,
    ) -> None:
        self._route: Callable[[Mapping[str, Any]], Placer | None]
        if routed:
            self._route = sink  # type: ignore[assignment]  # routed says sink is the router
        else:
            fixed: Placer = placed or self._sinking(sink)  # type: ignore[arg-type]  # not routed
            self._route = lambda _attributes: self._clocked(fixed)
        self._side_effects = frozenset(side_effects)
        self._skip_model_spans = skip_model_spans or (lambda: False)
        self._clock = clock
        self._trace = trace
        #: How many spans became events, and how many were dropped as belonging to no one.
        self.accepted = 0
        self.dropped = 0

    @staticmethod
    def _sinking(sink: Sink) -> Placer:
        return lambda event, _started, _ended: sink(event)

    def _clocked(self, placer: Placer) -> Placer:
        """``placer`` taking each event moved onto the trace's clock, if it has one."""
        clock, trace = self._clock, self._trace
        if clock is None:
            return placer

        def moved(event: Event, started: float, ended: float) -> None:
            last = trace[-1].at if trace else None
            placer(on_clock(event, clock, last), started, ended)

        return moved

    def routes(self) -> list[BaseRoute]:
        """``POST /v1/traces``, for a server to mount."""
        return [Route(OTLP_TRACES_PATH, self.traces, methods=["POST"])]

    async def traces(self, request: Request) -> Response:
        """Take one export; answer as an OTLP/HTTP collector does, in the request's encoding."""
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type not in (_PROTOBUF, "application/json"):
            return JSONResponse(
                {"code": 3, "message": f"unsupported content type {content_type or '(none)'}"},
                status_code=415,
            )
        encoding = request.headers.get("content-encoding", "").strip().lower()
        try:
            export = _decode(await request.body(), content_type, encoding)
        except _BadExport as exc:
            return JSONResponse({"code": 3, "message": str(exc)}, status_code=400)
        self.take(export)
        if content_type == _PROTOBUF:
            answer = ExportTraceServiceResponse().SerializeToString()
            return Response(answer, media_type=_PROTOBUF)
        return JSONResponse({})

    def take(self, export: ExportTraceServiceRequest) -> None:
        """Hand the events of every GenAI span in ``export`` to their sinks."""
        skip_models = self._skip_model_spans()
        for resource_spans in export.resource_spans:
            resource = _attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    attributes = {**resource, **_attributes(span.attributes)}
                    operation = attributes.get("gen_ai.operation.name")
                    if operation is None or (skip_models and operation in MODEL_OPERATIONS):
                        continue
                    events = span_events(span, attributes, self._side_effects)
                    sink = self._route(attributes) if events else None
                    if sink is None:
                        self.dropped += bool(events)
                        continue
                    started = (span.start_time_unix_nano or span.end_time_unix_nano) / 1e9
                    ended = (span.end_time_unix_nano or span.start_time_unix_nano) / 1e9
                    for event in events:
                        sink(event, started, ended)
                    self.accepted += 1
