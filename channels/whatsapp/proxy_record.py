"""What the recording proxy writes: the fixture it builds as a chat goes.

:class:`ProxyRecorder` turns what passes through the proxy (webhooks in,
Graph API calls out) into trace events appended to the fixture as they
happen. Its settings are in :mod:`channels.whatsapp.proxy_settings`, what
the proxy hands it in :mod:`channels.whatsapp.proxy_exchange`; the proxy
app itself is in :mod:`channels.whatsapp.proxy`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import mimetypes
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final
from urllib.parse import urlsplit

from pydantic_core import to_jsonable_python

from channels.whatsapp.envelope import MessageUpdate, StatusUpdate, iter_updates, parse_webhook
from channels.whatsapp.errors import GraphAPIError
from channels.whatsapp.payloads import PayloadError
from channels.whatsapp.proxy_exchange import GraphExchange, WebhookDelivery, parse_json_or_none
from channels.whatsapp.proxy_settings import ProxySettings
from channels.whatsapp.pseudonyms import Pseudonymizer
from channels.whatsapp.summary import message_reply_id, message_text, outbound_text
from channels.whatsapp.validation import normalize_wa_id
from harness.canonical import canonical_key
from harness.clock import Clock, SystemClock
from harness.files import write_atomic
from harness.fixture import (
    CALL_LATENCY_ATTRIBUTE,
    META_FILE,
    FixtureMeta,
    FixtureWriter,
    make_span,
)
from harness.records import LLMRecord, ToolRecord
from harness.redaction import Redactor
from harness.replay.record import llm_span
from harness.trace import (
    Conversation,
    DeliveryAttempt,
    ErrorInfo,
    Event,
    InboundMessage,
    LLMExchange,
    OutboundSend,
    Participant,
    ToolCall,
)
from harness.trace import StatusUpdate as StatusEvent

__all__ = ["ProxyRecorder"]

_log = logging.getLogger("channels.whatsapp.proxy")
_MESSAGES: Final = re.compile(r"/v[0-9]+\.[0-9]+/[^/]+/messages")
_WINDOW: Final = timedelta(hours=24)
_MEDIA_TYPES: Final = frozenset({"image", "audio", "video", "document", "sticker"})
_BODY_LIMIT: Final = 64 * 1024  # characters of a body kept in a span


@dataclass(slots=True)
class _Seen:
    delivery: str
    attempt: int
    ok: bool


def _body_text(data: bytes, content_type: str) -> str:
    """A body as a span keeps it: JSON and text as text, anything else summarised."""
    base = content_type.split(";", 1)[0].strip().lower()
    if not data:
        return ""
    if base.endswith(("json", "x-www-form-urlencoded")) or base.startswith("text/"):
        text = data.decode("utf-8", "replace")
        return text if len(text) <= _BODY_LIMIT else text[:_BODY_LIMIT] + "…"
    digest = hashlib.sha256(data).hexdigest()[:16]
    return f"<{len(data)} bytes of {base or 'unknown type'}, sha256 {digest}…>"


def _envelopes(raw: Any) -> dict[str, dict[str, Any]]:
    """Each message's webhook ``value`` without the messages and statuses, by message id.

    That is what a replay sends around the message again: the sender's contact as
    Meta wrote it (with or without a profile), the business number, any errors.
    """
    found: dict[str, dict[str, Any]] = {}
    if not isinstance(raw, dict):
        return found
    for entry in raw.get("entry") or []:
        for change in (entry.get("changes") or []) if isinstance(entry, dict) else []:
            value = change.get("value") if isinstance(change, dict) else None
            if not isinstance(value, dict):
                continue
            around = {k: v for k, v in value.items() if k not in ("messages", "statuses")}
            for message in value.get("messages") or []:
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    found[message["id"]] = around
    return found


def _error_info(answer: Any, status: int) -> ErrorInfo:
    try:
        error = GraphAPIError.from_envelope(answer, http_status=status)
    except (PayloadError, ValueError, TypeError):
        return ErrorInfo(
            code=131000,
            title="Unexpected answer",
            message=f"the Graph API answered {status} without an error body",
            http_status=status,
        )
    return error.to_error_info()


class ProxyRecorder:
    """Writes what passes through the proxy into a fixture, one event at a time.

    Opens the fixture at once (``meta.json`` and the logs); every event is
    appended and flushed as it happens; :meth:`close` writes
    ``conversation.json`` and the final ``meta.json``. Everything written is
    pseudonymized (with a key) and redacted first.
    """

    def __init__(self, settings: ProxySettings, *, clock: Clock | None = None) -> None:
        self.settings = settings
        self.clock: Clock = clock or SystemClock()
        self.started = self.clock.now()
        business = [
            n for n in (settings.display_phone_number, settings.phone_number_id) if n is not None
        ]
        key = settings.pseudonymize_key
        self._pseudonyms = Pseudonymizer(key, keep=business) if key else None
        self._secrets = tuple(s for s in (settings.app_secret, settings.verify_token, key) if s)
        self._tokens: set[str] = set()
        self._redactor = Redactor(self._secrets)
        self._channel = {
            "phone_number_id": settings.phone_number_id,
            "waba_id": settings.waba_id,
            "display_phone_number": settings.display_phone_number,
        }
        self._model: str | None = None
        self._reported: dict[str, str] = {}
        #: Every event recorded, in the order it was written (real values, not pseudonyms).
        self.events: list[Event] = []
        #: The tool calls the model endpoint saw the agent make (by identity): left out of the
        #: conversation when the agent reports its tool calls itself (the same calls).
        self._seen_by_model: set[int] = set()
        self.participants: dict[str, Participant] = {}
        self._ids = itertools.count(1)
        self._bodies: dict[str, _Seen] = {}
        self._reached: set[str] = set()
        self._statuses: set[tuple[str, str]] = set()
        self._last_inbound: dict[str, datetime] = {}
        self._wamid_user: dict[str, str] = {}
        self._media_wamid: dict[str, str] = {}
        self._media_index: dict[str, str] = {}
        self._llm_count = 0
        self._closed = False
        self.writer = FixtureWriter(
            settings.out,
            self._meta(),
            overwrite=settings.overwrite,
            fsync=settings.fsync,
            secrets=self._secrets,
        )

    # -- writing ---------------------------------------------------------------------------

    def _meta(self) -> FixtureMeta:
        return FixtureMeta.model_validate(
            {
                "scenario": self.settings.name,
                "channel": "whatsapp",
                "recorded_at": self.started,
                "agent_version": self.settings.target,
                "model": self._model,
                "seed": 0,
                # What the agent reported of itself, then what the proxy was told (which wins).
                "agent_settings": {**self._reported, **self.settings.agent_settings},
                "channel_options": {k: v for k, v in self._channel.items() if v},
                "recorded_by": "harness proxy",
                "pseudonymized": self._pseudonyms is not None,
                "participants": [p.model_dump(mode="json") for p in self.participants.values()],
            }
        )

    def _write_meta(self) -> None:
        data = self._scrub(self._meta().model_dump(mode="json"), learn=False)
        text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
        write_atomic(self.settings.out / META_FILE, text)

    def agent_reported(self, settings: Mapping[str, str]) -> None:
        """The agent's own settings, as it reported them through the store: into ``meta.json``."""
        if dict(settings) != self._reported:
            self._reported = dict(settings)
            self._write_meta()

    def learn_token(self, token: str) -> None:
        """Note an access token the agent used, so it is masked wherever it would be written."""
        if token and token not in self._tokens:
            self._tokens.add(token)
            self._redactor = Redactor((*self._secrets, *self._tokens))

    def knows_token(self, token: str) -> bool:
        """Whether ``token`` is one the agent used and the Graph API accepted before."""
        return token in self._tokens

    def _learn(self, data: Any) -> None:
        if self._pseudonyms is not None:
            self._pseudonyms.learn(data)

    def _scrub(self, data: Any, *, learn: bool = True) -> Any:
        """Pseudonymize (learning who ``data`` names, if asked), then redact."""
        if self._pseudonyms is not None:
            data = self._pseudonyms.apply(data, learn=learn)
        return self._redactor(data)

    def _record(self, event: Event) -> None:
        self.events.append(event)
        # The agent's own events hold its tools' arguments: any shape, nothing to learn from.
        learn = not isinstance(event, ToolCall | LLMExchange)
        data = to_jsonable_python(event, by_alias=True)
        self.writer.append("events", self._scrub(data, learn=learn))

    # -- Meta-facing ------------------------------------------------------------------------

    def webhook(self, body: bytes, at: datetime) -> WebhookDelivery:
        """Record the updates of a verified webhook POST; returns what its delivery is."""
        digest = hashlib.sha256(body).hexdigest()
        seen = self._bodies.get(digest)
        faults: tuple[str, ...]
        if seen is not None and not seen.ok:  # Meta trying again after a refusal
            delivery, attempt, faults = seen.delivery, seen.attempt + 1, ("retry",)
        else:
            delivery, attempt = f"d{next(self._ids)}", 1
            faults = ("duplicate",) if seen is not None else ()
        self._bodies[digest] = _Seen(delivery, attempt, ok=False)
        raw = parse_json_or_none(body)
        self._learn(raw)
        envelopes = _envelopes(raw)
        items: list[str] = []
        user: str | None = None
        try:
            updates = list(iter_updates(parse_webhook(body)))
        except PayloadError as exc:  # signed by Meta, so forwarded all the same
            _log.warning("a webhook the proxy could not read was forwarded as is: %s", exc)
            updates = []
        for update in updates:
            if isinstance(update, MessageUpdate | StatusUpdate):
                self._learn_business(update)
            if isinstance(update, MessageUpdate):
                envelope = envelopes.get(str(update.message.to_dict().get("id", "")))
                item, who = self._inbound(update, delivery, at, envelope)
            elif isinstance(update, StatusUpdate):
                item, who = self._status(update, delivery, at)
            else:
                continue
            items.append(item)
            user = user or who
        return WebhookDelivery(delivery, attempt, tuple(items), user, faults, at, digest)

    def _learn_business(self, update: MessageUpdate | StatusUpdate) -> None:
        found = {
            "phone_number_id": update.metadata.phone_number_id,
            "waba_id": update.waba_id,
            "display_phone_number": update.metadata.display_phone_number,
        }
        missing = {k: v for k, v in found.items() if not self._channel.get(k)}
        if missing:
            self._channel.update(missing)
            self._write_meta()

    def _inbound(
        self,
        update: MessageUpdate,
        delivery: str,
        at: datetime,
        envelope: dict[str, Any] | None = None,
    ) -> tuple[str, str]:
        message = update.message.to_dict()
        contact = update.contact
        wa_id = message.get("from") or (contact.wa_id if contact else None)
        bsuid = message.get("from_user_id") or (contact.user_id if contact else None)
        user = str(wa_id or bsuid or "")
        name = contact.profile.name if contact and contact.profile else None
        known = self.participants.get(user)
        participant = Participant(
            id=user,
            name=name or (known.name if known else ""),
            wa_id=wa_id or (known.wa_id if known else None),
            user_id=bsuid or (known.user_id if known else None),
        )
        if participant != known:  # in meta.json at once: conversation.json comes at the end
            self.participants[user] = participant
            self._write_meta()
        wamid = str(message.get("id", ""))
        kind = str(message.get("type", "unknown"))
        media = message.get(kind)
        if kind in _MEDIA_TYPES and isinstance(media, Mapping) and media.get("id"):
            self._media_wamid[str(media["id"])] = wamid
        self._record(
            InboundMessage(
                at=at,
                user=user,
                wamid=wamid,
                type=kind,
                text=message_text(message),
                reply_id=message_reply_id(message),
                context_id=(message.get("context") or {}).get("id"),
                body=message,
                delivery=delivery,
                duplicate=wamid in self._reached,
                envelope=envelope,
            )
        )
        self._reached.add(wamid)
        self._wamid_user[wamid] = user
        self._last_inbound[user] = at
        return wamid, user

    def _status(self, update: StatusUpdate, delivery: str, at: datetime) -> tuple[str, str]:
        item = update.status
        contact = update.contact
        user = (
            item.recipient_id
            or item.recipient_user_id
            or (contact.wa_id or contact.user_id if contact else None)
            or self._wamid_user.get(item.id, "")
        )
        if (item.id, item.status) not in self._statuses:  # Meta's duplicates are recorded once
            self._statuses.add((item.id, item.status))
            errors = tuple(
                ErrorInfo(
                    code=e.code,
                    title=e.title or "",
                    message=e.message or "",
                    details=(e.error_data.details or "") if e.error_data else "",
                )
                for e in item.errors or []
            )
            self._record(
                StatusEvent(
                    at=at,
                    user=user,
                    wamid=item.id,
                    status=item.status,
                    errors=errors,
                    delivery=delivery,
                )
            )
        return f"{item.id}:{item.status}", user

    def delivered(
        self,
        delivery: WebhookDelivery,
        status_code: int | None,
        error: str | None,
        latency_ms: float,
    ) -> None:
        """Record how the agent answered a webhook POST (no status code: it did not answer)."""
        self._bodies[delivery.digest] = _Seen(
            delivery.delivery, delivery.attempt, ok=status_code == 200
        )
        self._record(
            DeliveryAttempt(
                at=delivery.at,
                user=delivery.user,
                delivery=delivery.delivery,
                attempt=delivery.attempt,
                items=delivery.items,
                status_code=status_code,
                error=error,
                latency_ms=latency_ms,
                faults=delivery.faults,
            )
        )

    # -- Graph-facing ---------------------------------------------------------------------------

    def graph(self, exchange: GraphExchange) -> None:
        """Record a Graph API call: a send as a trace event, every call as a span."""
        request, answer = (
            parse_json_or_none(exchange.request_body),
            parse_json_or_none(exchange.response_body),
        )
        self._learn(request)
        self._learn(answer)
        if exchange.method == "POST" and _MESSAGES.fullmatch(exchange.path):
            self._send(exchange, request, answer)
        start = int(exchange.at.timestamp() * 1e9)
        attributes: dict[str, Any] = {
            "http.request.method": exchange.method,
            "url.path": exchange.path,
            "server.address": urlsplit(self.settings.upstream_graph).hostname or "",
            "http.response.status_code": exchange.answered,
            CALL_LATENCY_ATTRIBUTE: exchange.latency_ms,
            "harness.graph.request_body": _body_text(exchange.request_body, exchange.request_type),
            "harness.graph.response_body": _body_text(
                exchange.response_body, exchange.response_type
            ),
        }
        if exchange.error is not None:
            attributes["error.type"] = exchange.error
        span = make_span(
            f"{exchange.method} {exchange.path}",
            trace_id=secrets.token_hex(16),
            span_id=secrets.token_hex(8),
            start_time_unix_nano=start,
            end_time_unix_nano=start + int(exchange.latency_ms * 1e6),
            attributes=attributes,
            status="OK" if exchange.answered < 400 else "ERROR",
            status_message=exchange.error or "",
            kind="CLIENT",
        )
        self.writer.append("spans", self._scrub(span))

    def _send(self, exchange: GraphExchange, request: Any, answer: Any) -> None:
        body: dict[str, Any] = (
            request
            if isinstance(request, dict)
            else {"raw": exchange.request_body.decode("utf-8", "replace")}
        )
        kind = str(body.get("type", "text"))
        user: str | None = None
        if body.get("status") == "read":
            kind = "typing" if "typing_indicator" in body else "mark_read"
            user = self._wamid_user.get(str(body.get("message_id", "")))
        elif isinstance(body.get("to"), str):
            user = normalize_wa_id(body["to"]) or body["to"]
        elif isinstance(body.get("recipient"), str):
            user = body["recipient"]
        wamid: str | None = None
        error: ErrorInfo | None = None
        if exchange.answered == 200:
            messages = answer.get("messages") if isinstance(answer, dict) else None
            if isinstance(messages, list) and messages and isinstance(messages[0], dict):
                found = messages[0].get("id")
                wamid = str(found) if found is not None else None
        else:
            error = _error_info(answer, exchange.answered)
        in_window: bool | None = None
        message = kind not in ("mark_read", "typing")
        if message and user is not None and user in self._last_inbound:
            in_window = exchange.at - self._last_inbound[user] < _WINDOW
        self._record(
            OutboundSend(
                at=exchange.at,
                user=user,
                type=kind,
                text=outbound_text(body) if message else None,
                request=body,
                wamid=wamid,
                error=error,
                in_window=in_window,
            )
        )
        if wamid is not None and user is not None:
            self._wamid_user[wamid] = user

    def media(self, media_id: str, data: bytes, mime_type: str) -> None:
        """Keep the file behind a user's media message, so a replay sends the same bytes."""
        wamid = self._media_wamid.get(media_id)
        if wamid is None or not data:
            return
        stored = self._scrub(wamid)
        extension = mimetypes.guess_extension(mime_type.split(";")[0].strip()) or ".bin"
        name = hashlib.sha256(stored.encode()).hexdigest()[:16] + extension
        self._media_index[stored] = self.writer.add_media(name, data)
        text = json.dumps(dict(sorted(self._media_index.items())), indent=2) + "\n"
        write_atomic(self.settings.out / "media" / "index.json", text)

    # -- the agent's own recordings -------------------------------------------------------------

    def add_llm(self, record: LLMRecord) -> None:
        """Add one of the agent's model exchanges: ``llm.jsonl``, its span and its event."""
        data = record.model_dump(mode="json")
        key = record.key
        if self._pseudonyms is not None:
            data = self._pseudonyms.apply(data, learn=False)
            # The key is the hash of the request; a replay hashes the pseudonymized one.
            key = data["key"] = canonical_key(data["request"])
        self.writer.append("llm", self._redactor(data))
        self._model = self._model or record.model
        self._llm_count += 1
        span = llm_span(record, self._llm_count, self.settings.name, key=key)
        self.writer.append("spans", span)
        self._record(
            LLMExchange(
                at=record.recorded_at,
                key=key,
                model=record.response.model,
                stop_reason=record.response.stop_reason,
                input_tokens=record.input_tokens,
                output_tokens=record.output_tokens,
                provider=record.provider,
            )
        )

    def add_event(self, event: Event) -> None:
        """Add one of the agent's calls it reported as an OpenTelemetry span: its event."""
        self._record(event)

    def _reports_tools(self) -> bool:
        """Whether the agent reported any tool call itself (a span, a tool record)."""
        seen = self._seen_by_model
        return any(isinstance(e, ToolCall) and id(e) not in seen for e in self.events)

    def add_seen_tool(self, event: Event) -> None:
        """Add a tool call the agent's request to its model showed it made: its event."""
        self._seen_by_model.add(id(event))
        self._record(event)

    def add_tool(self, record: ToolRecord) -> None:
        """Add one of the agent's tool calls: ``tools.jsonl`` and its event."""
        data = record.model_dump(mode="json")
        if self._pseudonyms is not None:
            data = self._pseudonyms.apply(data, learn=False)
            data["key"] = canonical_key({"args": data["args"], "name": data["name"]})
        self.writer.append("tools", self._redactor(data))
        self._record(
            ToolCall(
                at=record.recorded_at,
                name=record.name,
                args=record.args,
                result=record.result,
                error=record.error,
                side_effect=record.side_effect,
            )
        )

    # -- the end --------------------------------------------------------------------------

    def conversation(self) -> Conversation:
        """The conversation so far, events in time order (real values, not pseudonyms).

        When the agent reports its tool calls itself, the ones its model
        requests showed are the same calls: left out.
        """
        reports = self._reports_tools()
        kept = [e for e in self.events if not (reports and id(e) in self._seen_by_model)]
        events = sorted(kept, key=lambda e: e.at)
        return Conversation.from_events(
            events,
            id=self.settings.name,
            scenario=self.settings.name,
            channel="whatsapp",
            participants=tuple(self.participants.values()),
        )

    def close(self) -> None:
        """Write ``conversation.json`` and the final ``meta.json``, then close the logs."""
        if self._closed:
            return
        self._closed = True
        try:
            # Everyone in it was learned as they came, and its tool calls hold arguments of
            # any shape: nothing to learn from it as a whole.
            conversation = self.conversation().model_dump(mode="json")
            self.writer.write_conversation(self._scrub(conversation, learn=False))
            if self._reports_tools():  # the model's view of its calls is in the log twice
                kept = [e for e in self.events if id(e) not in self._seen_by_model]
                self.writer.replace_log(
                    "events",
                    [self._scrub(to_jsonable_python(e, by_alias=True), learn=False) for e in kept],
                )
            self._write_meta()
        finally:
            self.writer.close()
