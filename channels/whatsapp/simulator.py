"""The WhatsApp simulator: Meta's side of a conversation, on a virtual clock.

:class:`WhatsAppSimulator` plays the users' phones and Meta's servers. It
sends the agent signed webhooks (the users' messages and the statuses of what
the agent sent), serves the fake Graph API the agent sends to, keeps each
user's customer-service window, enforces Meta's limits, and logs everything
as trace events.

Time is the simulator's clock, usually a :class:`~harness.clock.VirtualClock`
that the simulator moves itself: :meth:`WhatsAppSimulator.settle` runs it
through whatever is due soon (deliveries, statuses, retries, the agent's own
sleeps) until the conversation is quiet; :meth:`WhatsAppSimulator.advance`
jumps over a long silence, waking everything due on the way.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import itertools
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx
from starlette.routing import BaseRoute
from starlette.types import ASGIApp

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.delivery import (
    AsgiTarget,
    Deliverer,
    PendingUpdate,
    UrlTarget,
    WebhookTarget,
    handshake,
)
from channels.whatsapp.envelope import build_webhook, contact
from channels.whatsapp.errors import (
    GraphAPIError,
    ParameterInvalid,
    ReEngagementRequired,
    Undeliverable,
)
from channels.whatsapp.faults import FaultDice, FaultProfile, split_fragments
from channels.whatsapp.graph import SendOutcome, create_graph_app
from channels.whatsapp.ids import new_bsuid, new_wamid
from channels.whatsapp.limits import PairRateLimiter, ThroughputLimiter
from channels.whatsapp.media import MediaStore
from channels.whatsapp.messages import (
    Context,
    button_reply,
    list_reply,
    parse_message,
)
from channels.whatsapp.statuses import pricing, status
from channels.whatsapp.summary import interactive_options, message_reply_id, message_text
from channels.whatsapp.validation import TemplateRegistry, ValidatedSend, normalize_wa_id
from channels.whatsapp.window import SessionWindows
from harness.clock import Clock, VirtualClock
from harness.exceptions import ConfigError, DeliveryError, StepError
from harness.store import MemoryStore, Store
from harness.trace import (
    ClockJump,
    Conversation,
    ErrorInfo,
    Event,
    InboundMessage,
    OutboundSend,
    Participant,
    StatusUpdate,
)

__all__ = ["SimUser", "WhatsAppSimulator"]


@dataclass(frozen=True, slots=True)
class SimUser:
    """A simulated WhatsApp user: a phone number (wa_id), a business-scoped id, a name.

    ``wa_id`` may be None for a username-only user, who is known by BSUID alone.
    """

    wa_id: str | None
    user_id: str
    name: str = ""

    @property
    def key(self) -> str:
        """How the trace names this user: the wa_id, else the BSUID."""
        return self.wa_id if self.wa_id is not None else self.user_id

    def participant(self) -> Participant:
        """The user as a trace participant."""
        return Participant(id=self.key, name=self.name, wa_id=self.wa_id, user_id=self.user_id)


@dataclass(slots=True)
class _Sent:
    """A message the agent sent, as the simulator remembers it."""

    wamid: str
    user: SimUser | None
    send: ValidatedSend
    at: datetime


class WhatsAppSimulator:
    """Meta's side of the conversation: webhooks to the agent, the Graph API for its replies."""

    def __init__(
        self,
        config: SimulatorConfig | None = None,
        *,
        clock: Clock | None = None,
        store: Store | None = None,
        faults: FaultProfile | None = None,
        seed: int = 0,
        templates: TemplateRegistry | None = None,
        sink: Callable[[Event], None] | None = None,
        media: MediaStore | None = None,
    ) -> None:
        self.config = config or SimulatorConfig()
        self.clock: Clock = clock or VirtualClock()
        base_store = store or MemoryStore(clock=self.clock)
        self.store = base_store.with_namespace(f"wa:{self.config.phone_number_id}")
        self.faults = faults or FaultProfile(seed=seed)
        self.dice = FaultDice(self.faults)
        self._rng = random.Random(f"{seed}:ids")
        self._sink = sink
        #: Every trace event so far, in the order it happened.
        self.events: list[Event] = []
        #: Every accepted send body, in order, as the agent sent it.
        self.outbox: list[dict[str, Any]] = []
        self.windows = SessionWindows(self.store, self.clock, length=self.config.window_seconds)
        self.media = media or MediaStore(self.clock, public_url=self.config.public_url)
        self.pair_limit = PairRateLimiter(self.clock, enabled=self.config.rate_limits)
        self.throughput = ThroughputLimiter(
            self.clock, mps=int(self.config.throughput_mps), enabled=self.config.rate_limits
        )
        self.templates = templates or TemplateRegistry.default()
        #: The fake Graph API (``channels.whatsapp.control.control_app`` adds the control API).
        self.graph_app = self.build_graph_app()
        #: When set (by :meth:`run_paced`), virtual time follows real time.
        self.paced = False
        #: Told the wamid of each message a user sends (a shared Graph API routes by it).
        self.on_inbound: Callable[[str], None] | None = None
        self._users: dict[str, SimUser] = {}
        self._sent: dict[str, _Sent] = {}
        self._inbound: dict[str, tuple[SimUser, dict[str, Any]]] = {}
        self._last_inbound: dict[str, str] = {}
        self._sent_items: set[str] = set()
        self._burst_of: dict[str, str] = {}
        self._burst_ids = itertools.count(1)
        self._status_seen: set[tuple[str, str]] = set()
        self._target: WebhookTarget | None = None
        self._deliverer: Deliverer | None = None
        self._handshaken = False
        self._last_activity = self.clock.now()
        self._remote = False

    # -- wiring -------------------------------------------------------------

    def connect(self, agent: ASGIApp | str | WebhookTarget) -> None:
        """Point the simulator at the agent: an ASGI app, a webhook URL, or a target."""
        if isinstance(agent, str):
            target: WebhookTarget = UrlTarget(agent, timeout=self.config.webhook_timeout)
            self._remote = True
        elif hasattr(agent, "post") and hasattr(agent, "get") and hasattr(agent, "description"):
            target = agent  # type: ignore[assignment]  # a WebhookTarget, checked structurally
        else:
            target = AsgiTarget(
                agent, self.config.webhook_path, timeout=self.config.webhook_timeout
            )
        self._target = target
        self._deliverer = Deliverer(target, self.config, self.clock, self.dice, self.record)
        self._handshaken = False

    def build_graph_app(
        self,
        routes: Sequence[BaseRoute] = (),
        *,
        openapi_paths: Mapping[str, Any] | None = None,
        openapi_schemas: Mapping[str, Any] | None = None,
    ) -> ASGIApp:
        """The fake Graph API bound to this simulator, with ``routes`` served beside it."""
        return create_graph_app(
            access_tokens={self.config.access_token},
            phone_numbers={self.config.phone_number_id: self.config.display_phone_number},
            on_send=self._on_send,
            media=self.media,
            clock=self.clock,
            templates=self.templates,
            public_url=self.config.public_url,
            routes=routes,
            openapi_paths=openapi_paths,
            openapi_schemas=openapi_schemas,
            on_refuse=self._on_refuse,
        )

    @property
    def deliverer(self) -> Deliverer | None:
        """What delivers webhooks to the connected agent (None before :meth:`connect`)."""
        return self._deliverer

    def graph_transport(self) -> httpx.AsyncBaseTransport:
        """A transport that reaches the fake Graph API in-process."""
        return httpx.ASGITransport(app=self.graph_app)

    def graph_client(self, **kwargs: Any) -> httpx.AsyncClient:
        """An ``httpx.AsyncClient`` for an in-process agent, aimed at the fake Graph API."""
        kwargs.setdefault("base_url", self.config.public_url)
        return httpx.AsyncClient(transport=self.graph_transport(), **kwargs)

    async def aclose(self) -> None:
        """Cancel what is still scheduled and close the connection to the agent."""
        if self._deliverer is not None:
            await self._deliverer.aclose()
        if self._target is not None:
            await self._target.aclose()

    def record(self, event: Event) -> None:
        """Append an event to the log (the agent's recorders use this too)."""
        self.events.append(event)
        self._last_activity = self.clock.now()
        if self._sink is not None:
            self._sink(event)

    # -- users ------------------------------------------------------------------

    def add_user(self, wa_id: str | None, name: str = "", *, user_id: str | None = None) -> SimUser:
        """Register a user; a BSUID is made up when none is given."""
        user = SimUser(wa_id=wa_id, user_id=user_id or new_bsuid(self._rng), name=name)
        self._users[user.key] = user
        if user.wa_id is not None:
            self._users[user.wa_id] = user
        self._users[user.user_id] = user
        return user

    def user(self, key: str) -> SimUser:
        """A registered user by wa_id or BSUID."""
        try:
            return self._users[key]
        except KeyError:
            raise ConfigError(f"no simulated user {key!r}; add it with add_user()") from None

    @property
    def users(self) -> list[SimUser]:
        """Every registered user, once each."""
        return list({u.user_id: u for u in self._users.values()}.values())

    # -- the user's side ------------------------------------------------------

    async def receive(
        self,
        user: SimUser | str,
        message: Mapping[str, Any],
        *,
        timestamp: datetime | None = None,
        burst: str | None = None,
    ) -> str:
        """A user sends a message of any type; returns its wamid.

        ``message`` is Meta's message object without ``id``, ``from`` and
        ``timestamp`` (the simulator fills them in), e.g.
        ``{"type": "location", "location": {"latitude": 1.0, "longitude": 2.0}}``.
        Messages given the same ``burst`` were typed as one burst (each message
        is a burst of its own otherwise).
        """
        who = user if isinstance(user, SimUser) else self.user(user)
        await self._ensure_handshake()
        now = self.clock.now()
        wamid = new_wamid(self._rng, who.wa_id or "")
        item: dict[str, Any] = {}
        if who.wa_id is not None:
            item["from"] = who.wa_id
        item["from_user_id"] = who.user_id
        item["id"] = wamid
        item["timestamp"] = str(int((timestamp or now).timestamp()))
        item.update({k: v for k, v in message.items() if k not in {"id", "from", "timestamp"}})
        parsed = parse_message(item)  # a clear error for a malformed message, before sending
        payload = build_webhook(
            waba_id=self.config.waba_id,
            phone_number_id=self.config.phone_number_id,
            display_phone_number=self.config.display_phone_number,
            messages=[parsed],
            contacts=[contact(who.wa_id, who.name or None, user_id=who.user_id)],
        )
        self._inbound[wamid] = (who, payload)
        self._burst_of[wamid] = burst or f"burst-{next(self._burst_ids)}"
        if self.on_inbound is not None:
            self.on_inbound(wamid)
        self._last_inbound[who.key] = wamid
        await self.windows.touch(who.key, now)
        self._deliverer_or_fail().enqueue(
            PendingUpdate(
                kind="message",
                item_id=wamid,
                user=who.key,
                payload=payload,
                due=now,
                on_sending=self._on_inbound_sending,
            )
        )
        self._last_activity = now
        return wamid

    async def say(
        self, user: SimUser | str, text: str | Sequence[str], *, gap: float = 1.0
    ) -> list[str]:
        """A user types one message, or a burst of several ``gap`` seconds apart.

        With the ``fragment`` fault a single text may arrive as a burst of fragments.
        """
        if isinstance(text, str):
            if self.dice.roll("fragment", self.faults.fragment):
                texts = split_fragments(text, self.dice)
                gap = self.faults.fragment_gap
            else:
                texts = [text]
        else:
            texts = list(text)
        wamids: list[str] = []
        first_second: datetime | None = None
        burst = f"burst-{next(self._burst_ids)}"
        for i, body in enumerate(texts):
            if i:
                await self._pass(gap, "burst gap")
            stamp = first_second if self.faults.same_second else None
            message = {"type": "text", "text": {"body": body}}
            wamids.append(await self.receive(user, message, timestamp=stamp, burst=burst))
            first_second = first_second or self.clock.now()
        return wamids

    async def tap(self, user: SimUser | str, choice: str) -> str:
        """A user taps a reply button or picks a list row of the last interactive message.

        ``choice`` is the button or row id, or its title.
        """
        who = user if isinstance(user, SimUser) else self.user(user)
        sent = self._last_interactive(who)
        if sent is None:
            raise StepError(f"the agent sent user {who.key} no buttons or list to tap")
        interactive = dict(sent.send.body.get("interactive") or {})
        options = interactive_options(interactive)
        for option_id, title, description in options:  # noqa: B007  # used after the loop
            if choice in (option_id, title):
                break
        else:
            listed = ", ".join(f"{i!r} ({t})" for i, t, _ in options)
            raise StepError(f"no button or row {choice!r} in the agent's last choices: {listed}")
        context = Context(from_=self.config.display_phone_number, id=sent.wamid)
        now = self.clock.now()
        if interactive.get("type") == "list":
            built = list_reply(
                "x",
                who.wa_id,
                now,
                option_id,
                title,
                description=description,
                context=context,
                from_user_id=who.user_id,
            )
        else:
            built = button_reply(
                "x", who.wa_id, now, option_id, title, context=context, from_user_id=who.user_id
            )
        message = (
            built.to_dict()
            if hasattr(built, "to_dict")
            else built.model_dump(by_alias=True, exclude_none=True)
        )
        return await self.receive(who, message)

    async def send_media(
        self,
        user: SimUser | str,
        kind: str,
        data: bytes,
        *,
        mime_type: str,
        caption: str | None = None,
        filename: str | None = None,
    ) -> str:
        """A user sends an image, audio, video, document or sticker; the agent can download it."""
        media_id = self.media.add(data, mime_type)
        obj: dict[str, Any] = {
            "mime_type": mime_type,
            "sha256": base64.b64encode(hashlib.sha256(data).digest()).decode(),
            "id": media_id,
        }
        if caption is not None:
            obj["caption"] = caption
        if filename is not None:
            obj["filename"] = filename
        if kind == "audio":
            obj["voice"] = mime_type.startswith("audio/ogg")
        return await self.receive(user, {"type": kind, kind: obj})

    async def redeliver(
        self, wamid: str | None = None, *, user: SimUser | str | None = None
    ) -> str:
        """Deliver a user's message again with identical bytes and signature (Meta's duplicate)."""
        if wamid is None:
            if user is None:
                raise ConfigError("redeliver needs a wamid or a user")
            key = user.key if isinstance(user, SimUser) else self.user(user).key
            wamid = self._last_inbound.get(key)
            if wamid is None:
                raise ConfigError(f"user {key} has sent nothing to redeliver")
        if not self._deliverer_or_fail().redeliver(wamid):
            raise ConfigError(f"message {wamid} was never delivered, so it can't be redelivered")
        return wamid

    # -- time -----------------------------------------------------------------

    async def settle(self, *, quiet: float = 60.0, real_quiet: float | None = None) -> None:
        """Run the conversation until nothing more is due soon.

        Virtual time moves through every deadline that falls within ``quiet``
        seconds of the last thing that happened (a delivery, a send, a
        status), so replies, statuses and prompt retries all land; later
        deadlines wait for :meth:`advance`. For an agent in another process,
        the simulator also waits ``real_quiet`` real seconds (0.3 by default)
        with nothing in flight, since it can't see that agent's work.
        """
        if real_quiet is None:
            real_quiet = 0.3 if self._remote else 0.0
        clock = self.clock
        if self.paced:
            await self._quiesce(max(real_quiet, 0.05))
            return
        while True:
            await self._quiesce(real_quiet)
            if not isinstance(clock, VirtualClock):
                return
            nxt = clock.next_event()
            if nxt is None or (nxt - self._last_activity).total_seconds() > quiet:
                return
            await clock.run_until(nxt, reason="settle")

    async def advance(self, seconds: float | timedelta, *, reason: str = "wait") -> None:
        """Let ``seconds`` of virtual time pass, waking everything due on the way."""
        clock = self.clock
        if not isinstance(clock, VirtualClock):
            raise ConfigError("advance needs a VirtualClock")
        delta = seconds if isinstance(seconds, timedelta) else timedelta(seconds=seconds)
        before = clock.now()
        await self._quiesce(0.3 if self._remote else 0.0)
        await clock.run_until(before + delta, reason=reason)
        self.record(ClockJump(at=clock.now(), previous=before, reason=reason))
        await self.settle()

    async def run_paced(self, *, tick: float = 0.05) -> None:
        """Move virtual time along with real time until cancelled (for ``harness serve``).

        Statuses and retries then come at their real pace; :meth:`advance`
        still jumps ahead at once.
        """
        clock = self.clock
        if not isinstance(clock, VirtualClock):
            raise ConfigError("pacing needs a VirtualClock")
        self.paced = True
        loop = asyncio.get_running_loop()
        last = loop.time()
        try:
            while True:
                await asyncio.sleep(tick)
                now = loop.time()
                await clock.run_until(clock.now() + timedelta(seconds=now - last), reason="paced")
                last = now
        finally:
            self.paced = False

    async def run_until(self, when: datetime) -> None:
        """Move virtual time to ``when``, running what falls due on the way (no settling)."""
        clock = self.clock
        if not isinstance(clock, VirtualClock):
            raise ConfigError("run_until needs a VirtualClock")
        if when > clock.now():
            await clock.run_until(when, reason="replay")
        else:
            await clock.run_until(clock.now())

    def inbound_media(self, wamid: str) -> tuple[bytes, str] | None:
        """The bytes and MIME type of the media a user's message carried, if any."""
        found = self._inbound.get(wamid)
        if found is None:
            return None
        item = found[1]["entry"][0]["changes"][0]["value"]["messages"][0]
        media = item.get(item.get("type", ""))
        if not isinstance(media, Mapping) or "id" not in media:
            return None
        stored = self.media.get(str(media["id"]))
        return None if stored is None else (stored.data, stored.mime_type)

    async def _pass(self, seconds: float, reason: str) -> None:
        """Let time pass between two user actions, running what falls due meanwhile."""
        clock = self.clock
        if self.paced:
            await asyncio.sleep(seconds)  # virtual time follows real time: let it pass
        elif isinstance(clock, VirtualClock):
            await clock.run_until(clock.now() + timedelta(seconds=seconds), reason=reason)
        else:
            await clock.sleep(seconds)

    async def _quiesce(self, real_quiet: float) -> None:
        clock = self.clock
        while True:
            if isinstance(clock, VirtualClock):
                await clock.run_until(clock.now())
            else:
                await asyncio.sleep(0)
            if self._deliverer is None or not self._deliverer.in_flight:
                break
            await asyncio.sleep(0.001)  # a POST to a remote agent is on the wire
        if real_quiet <= 0:
            return
        loop = asyncio.get_running_loop()
        quiet_since = loop.time()
        marker = len(self.events)
        while loop.time() - quiet_since < real_quiet:
            await asyncio.sleep(min(0.05, real_quiet))
            busy = self._deliverer is not None and self._deliverer.in_flight > 0
            if busy or len(self.events) != marker:
                marker = len(self.events)
                quiet_since = loop.time()

    # -- the conversation so far -------------------------------------------------

    def conversation(self, **fields: Any) -> Conversation:
        """The trace so far as a :class:`~harness.trace.Conversation`."""
        fields.setdefault("channel", "whatsapp")
        fields.setdefault("participants", tuple(u.participant() for u in self.users))
        return Conversation.from_events(self.events, **fields)

    # -- internals ------------------------------------------------------------------

    def _deliverer_or_fail(self) -> Deliverer:
        if self._deliverer is None:
            raise DeliveryError("the simulator has no agent to deliver to; connect one first")
        return self._deliverer

    async def _ensure_handshake(self) -> None:
        if self._handshaken or not self.config.handshake:
            return
        deliverer = self._deliverer_or_fail()
        await handshake(deliverer.target, self.config.verify_token, self._rng)
        self._handshaken = True

    def _on_inbound_sending(self, update: PendingUpdate, delivery: str) -> None:
        """A user's message goes out to the agent: it enters the trace now (a copy: a duplicate)."""
        who, payload = self._inbound[update.item_id]
        item = payload["entry"][0]["changes"][0]["value"]["messages"][0]
        duplicate = update.item_id in self._sent_items
        self._sent_items.add(update.item_id)
        self.record(
            InboundMessage(
                at=self.clock.now(),
                user=who.key,
                wamid=update.item_id,
                type=item["type"],
                text=message_text(item),
                reply_id=message_reply_id(item),
                context_id=(item.get("context") or {}).get("id"),
                body=item,
                delivery=delivery,
                duplicate=duplicate,
                burst=self._burst_of.get(update.item_id),
            )
        )

    def _on_status_sending(self, update: PendingUpdate, delivery: str) -> None:
        item = update.payload["entry"][0]["changes"][0]["value"]["statuses"][0]
        key = (item["id"], item["status"])
        if key in self._status_seen:
            return
        self._status_seen.add(key)
        self.record(
            StatusUpdate(
                at=self.clock.now(),
                user=update.user,
                wamid=item["id"],
                status=item["status"],
                errors=tuple(
                    ErrorInfo(
                        code=int(e["code"]),
                        title=e.get("title", ""),
                        message=e.get("message", ""),
                        details=(e.get("error_data") or {}).get("details", ""),
                    )
                    for e in item.get("errors") or []
                ),
                delivery=delivery,
            )
        )

    def _last_interactive(self, who: SimUser) -> _Sent | None:
        for sent in reversed(self._sent.values()):
            if sent.user is who and sent.send.type == "interactive":
                return sent
        return None

    async def _on_send(self, send: ValidatedSend) -> SendOutcome:
        """The fake Graph API accepted a well-formed send: apply Meta's rules to it."""
        now = self.clock.now()
        if send.action != "message":
            return await self._on_read(send, now)
        key = send.user or ""
        who = self._users.get(key)
        self.throughput.check(self.config.phone_number_id)
        if who is not None:
            self.pair_limit.check(who.key)
        in_window = await self.windows.is_open(who.key) if who is not None else False
        template = send.type == "template"
        if (
            who is not None
            and not in_window
            and not template
            and self.config.window_error == "sync"
        ):
            raise ReEngagementRequired()
        wamid = new_wamid(self._rng, who.wa_id or "" if who else "", outbound=True)
        self._sent[wamid] = _Sent(wamid=wamid, user=who, send=send, at=now)
        self.outbox.append(dict(send.body))
        self._record_send(send, who, wamid, None, in_window if who else None)
        if who is None:
            self._schedule_failure(wamid, send, key, Undeliverable())
        elif not in_window and not template:
            self._schedule_failure(wamid, send, who.key, ReEngagementRequired())
        elif send.type == "reaction" and send.message_id not in self._inbound:
            self._schedule_failure(
                wamid,
                send,
                who.key,
                ParameterInvalid(
                    details="The message a reaction targets does not exist or is too old."
                ),
            )
        else:
            self._schedule_lifecycle(wamid, send, who, template)
        return SendOutcome(
            wamid=wamid,
            wa_id=who.wa_id if who else send.to,
            user_id=who.user_id if who and send.to is None else None,
        )

    def _on_refuse(
        self, phone_number_id: str, body: Mapping[str, Any], error: GraphAPIError
    ) -> None:
        """The Graph API refused a send: it goes in the trace with Meta's error."""
        to, recipient = body.get("to"), body.get("recipient")
        key = normalize_wa_id(to) if isinstance(to, str) else None
        if key is None and isinstance(recipient, str):
            key = recipient
        if key is None and isinstance(body.get("message_id"), str):
            inbound = self._inbound.get(body["message_id"])
            key = inbound[0].key if inbound else None
        who = self._users.get(key or "")
        kind = body.get("type") if isinstance(body.get("type"), str) else None
        if body.get("status") == "read":
            kind = "typing" if "typing_indicator" in body else "mark_read"
        text = None
        if kind == "text" and isinstance(body.get("text"), Mapping):
            raw_text = body["text"].get("body")
            text = raw_text if isinstance(raw_text, str) else None
        self.record(
            OutboundSend(
                at=self.clock.now(),
                user=who.key if who else key,
                type=str(kind or "unknown"),
                text=text,
                request=_json_safe(body),
                error=error.to_error_info(),
                in_window=None,
            )
        )

    async def _on_read(self, send: ValidatedSend, now: datetime) -> SendOutcome:
        target = self._inbound.get(send.message_id or "")
        if target is None:
            error = ParameterInvalid(
                details=f"message_id {send.message_id!r} is not a message this number received"
            )
            raise error
        who = target[0]
        self._record_send(send, who, None, None, None)
        return SendOutcome(wamid=None)

    def _record_send(
        self,
        send: ValidatedSend,
        who: SimUser | None,
        wamid: str | None,
        error: ErrorInfo | None,
        in_window: bool | None,
    ) -> None:
        kind = send.type or "message"
        if send.action == "mark_read":
            kind = "mark_read"
        elif send.action == "typing":
            kind = "typing"
        self.record(
            OutboundSend(
                at=self.clock.now(),
                user=who.key if who else send.user,
                type=kind,
                text=send.text,
                request=dict(send.body),
                wamid=wamid,
                error=error,
                in_window=in_window,
            )
        )

    def _status_payload(self, item: Any, who_key: str) -> dict[str, Any]:
        who = self._users.get(who_key)
        contacts = []
        if who is not None:
            contacts = [contact(who.wa_id, None, user_id=who.user_id)]
        return build_webhook(
            waba_id=self.config.waba_id,
            phone_number_id=self.config.phone_number_id,
            display_phone_number=self.config.display_phone_number,
            statuses=[item],
            contacts=contacts,
        )

    def _enqueue_status(
        self, wamid: str, who_key: str, item: Any, due: datetime, faults: tuple[str, ...] = ()
    ) -> None:
        self._deliverer_or_fail().enqueue(
            PendingUpdate(
                kind="status",
                item_id=f"{wamid}:{item.status}",
                user=who_key,
                payload=self._status_payload(item, who_key),
                due=due,
                faults=faults,
                on_sending=self._on_status_sending,
            )
        )

    def _schedule_failure(
        self, wamid: str, send: ValidatedSend, who_key: str, error: GraphAPIError
    ) -> None:
        delay = self.config.statuses.sent or 0.0
        due = self.clock.now() + timedelta(seconds=delay)
        who = self._users.get(who_key)
        item = status(
            wamid,
            "failed",
            due,
            who.wa_id if who else who_key,
            recipient_user_id=who.user_id if who else None,
            errors=[error.to_error_object()],
            biz_opaque_callback_data=send.biz_opaque_callback_data,
        )
        self._enqueue_status(wamid, who_key, item, due)

    def _schedule_lifecycle(
        self, wamid: str, send: ValidatedSend, who: SimUser, template: bool
    ) -> None:
        timing = self.config.statuses
        faults = self.faults
        plan: list[tuple[str, float]] = []
        for name, delay in (
            ("sent", timing.sent),
            ("delivered", timing.delivered),
            ("read", timing.read),
        ):
            if delay is None:
                continue
            if send.type == "reaction" and name != "sent":
                continue  # a reaction you send only ever gets "sent"
            plan.append((name, delay))
        if any(n == "read" for n, _ in plan) and self.dice.roll(
            "skip-delivered", faults.skip_delivered
        ):
            plan = [(n, d) for n, d in plan if n != "delivered"]
        if self.dice.roll("status-order", faults.status_out_of_order):
            delays = [d for _, d in plan]
            plan = [(n, d) for (n, _), d in zip(plan, reversed(delays), strict=True)]
            marks: tuple[str, ...] = ("out_of_order",)
        else:
            marks = ()
        category = "utility" if template else "service"
        priced = {"sent"} | ({"delivered"} if any(n == "delivered" for n, _ in plan) else {"read"})
        for name, delay in plan:
            if self.dice.roll("status-missing", faults.status_missing):
                continue
            extra: tuple[str, ...] = marks
            if self.dice.roll("status-late", faults.status_late):
                delay += faults.status_late_delay
                extra = (*extra, "late_status")
            due = self.clock.now() + timedelta(seconds=delay)
            item = status(
                wamid,
                name,  # type: ignore[arg-type]  # one of the literal status values
                due,
                who.wa_id,
                recipient_user_id=who.user_id,
                pricing=pricing(category) if name in priced else None,
                biz_opaque_callback_data=send.biz_opaque_callback_data,
            )
            self._enqueue_status(wamid, who.key, item, due, extra)


def _json_safe(body: Mapping[str, Any]) -> dict[str, Any]:
    """The body as plain JSON data (it came from ``json.loads``, so it already is)."""
    return {str(k): v for k, v in body.items()}
