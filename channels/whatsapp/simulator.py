"""The WhatsApp simulator: Meta's side of a conversation, on a virtual clock.

:class:`WhatsAppSimulator` plays the users' phones and Meta's servers. It
sends the agent signed webhooks (the users' messages and the statuses of what
the agent sent), serves the fake Graph API the agent sends to, keeps each
user's customer-service window, enforces Meta's limits, and logs everything
as trace events.

Time is the simulator's clock, usually a :class:`~harness.clock.VirtualClock`
that the simulator moves itself (:mod:`channels.whatsapp.timekeeping`); what
happens to the agent's sends is Meta's rules (:mod:`channels.whatsapp.outbound`).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import httpx
from starlette.routing import BaseRoute
from starlette.types import ASGIApp

from channels.whatsapp.account import business_account
from channels.whatsapp.activity import Activity
from channels.whatsapp.asgi_target import AsgiTarget
from channels.whatsapp.blocking import Blocklist
from channels.whatsapp.composing import UserMessages
from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.delivery import (
    Deliverer,
    PendingUpdate,
    WebhookTarget,
    handshake,
)
from channels.whatsapp.envelope import Contact, build_webhook, contact, share_constants
from channels.whatsapp.errors import ErrorObject
from channels.whatsapp.faults import FaultDice, FaultProfile, split_fragments
from channels.whatsapp.graph import create_graph_app
from channels.whatsapp.ids import bsuid_for, id_source, new_bsuid, new_wamid
from channels.whatsapp.inprocess import InProcessClient
from channels.whatsapp.limits import PairRateLimiter, ThroughputLimiter
from channels.whatsapp.media import MediaStore, document_filename
from channels.whatsapp.messages import (
    Context,
    button_reply,
    list_reply,
    parse_message,
)
from channels.whatsapp.outbound import OutboundRules
from channels.whatsapp.retention import Retention, RetentionPolicy
from channels.whatsapp.sharing import SharedHooks
from channels.whatsapp.simuser import ReceivedMessage, SentMessage, SimUser
from channels.whatsapp.subscriptions import Registrar
from channels.whatsapp.summary import interactive_options, message_reply_id, message_text
from channels.whatsapp.templates import TemplateRegistry
from channels.whatsapp.timekeeping import Timekeeping
from channels.whatsapp.url_target import UrlTarget
from channels.whatsapp.window import SessionWindows
from harness.clock import Clock, VirtualClock
from harness.exceptions import ConfigError, DeliveryError, StepError
from harness.store import MemoryStore, Store
from harness.trace import (
    Conversation,
    Event,
    InboundMessage,
)

if TYPE_CHECKING:
    from channels.whatsapp.shared import SharedMeta

__all__ = ["WhatsAppSimulator"]


class WhatsAppSimulator(OutboundRules, Timekeeping, UserMessages, SharedHooks):
    """Meta's side of the conversation: webhooks to the agent, the Graph API for its replies.

    Ids (wamids, media ids) are new in every simulator unless ``seed`` is
    given; then they follow from the seed and ``run_id`` (see
    :func:`~channels.whatsapp.ids.id_source`), so a run can be played again
    with the same ids and no two runs share one. Fault dice use ``seed``
    (0 when none is given) unless ``faults`` carries its own. ``retention``
    bounds what it keeps of the past (:mod:`channels.whatsapp.retention`;
    everything by default).
    """

    def __init__(
        self,
        config: SimulatorConfig | None = None,
        *,
        clock: Clock | None = None,
        store: Store | None = None,
        faults: FaultProfile | None = None,
        seed: int | None = None,
        run_id: str = "",
        templates: TemplateRegistry | None = None,
        sink: Callable[[Event], None] | None = None,
        media: MediaStore | None = None,
        retention: RetentionPolicy | None = None,
    ) -> None:
        self.config = config or SimulatorConfig()
        self.clock: Clock = clock or VirtualClock()
        base_store = store or MemoryStore(clock=self.clock)
        self.store = base_store.with_namespace(f"wa:{self.config.phone_number_id}")
        self.faults = faults or FaultProfile(seed=0 if seed is None else seed)
        self.dice = FaultDice(self.faults)
        self._rng = id_source(seed, run_id)
        self._trace_rng = id_source(seed, run_id, "fbtrace")
        self._sink = sink
        #: Every trace event so far, in the order it happened.
        self.events: list[Event] = []
        #: Every accepted send body, in order, as the agent sent it.
        self.outbox: list[dict[str, Any]] = []
        self.windows = SessionWindows(self.store, self.clock, length=self.config.window_seconds)
        self.media = media or MediaStore(
            self.clock, public_url=self.config.public_url, rng=id_source(seed, run_id, "media")
        )
        self.pair_limit = PairRateLimiter(self.clock, enabled=self.config.rate_limits)
        self.throughput = ThroughputLimiter(
            self.clock, mps=int(self.config.throughput_mps), enabled=self.config.rate_limits
        )
        self.templates = templates or TemplateRegistry.given(self.config.templates)
        #: The users the business blocked (:mod:`channels.whatsapp.blocking`).
        self.blocklist = Blocklist(
            numbers={self.config.phone_number_id, self.config.display_phone_number},
            find=lambda key: self._users.get(key),
            windows=self.windows,
            clock=self.clock,
            record=self.record,
        )
        #: The fake Graph API (``channels.whatsapp.control.control_app`` adds the control API).
        self.graph_app = self.build_graph_app()
        #: When set (by :meth:`run_paced`), virtual time follows real time.
        self.paced = False
        #: Told the wamid of each message a user sends (a shared Graph API routes by it).
        self.on_inbound: Callable[[str], None] | None = None
        self._users: dict[str, SimUser] = {}
        self._sent: dict[str, SentMessage] = {}
        self._inbound: dict[str, ReceivedMessage] = {}
        self._last_inbound: dict[str, str] = {}
        self._sent_items: set[str] = set()
        self._burst_of: dict[str, str] = {}
        self._burst_ids = itertools.count(1)
        self._status_seen: set[str] = set()
        # The business number's ``metadata``, one dict for every user's message (see below).
        self._metadata: dict[str, Any] = {}
        self._conversations: dict[tuple[str, str], tuple[str, datetime]] = {}
        # Each update on its way carries what to call as it goes out: one bound method for all.
        self._inbound_sending = self._on_inbound_sending
        self._status_sending = self._on_status_sending
        self._target: WebhookTarget | None = None
        self._deliverer: Deliverer | None = None
        #: Set once the connected webhook has passed the verification handshake.
        self._verified = asyncio.Event()
        self._handshake_lock = asyncio.Lock()
        self._last_activity = self.clock.now()
        #: When each user's conversation last moved, in real time (for per-user quiet).
        self.activity = Activity()
        self._remote = False
        #: What the simulator keeps of the past, and the absolute indices of its logs.
        self.retention = Retention(self, retention)
        #: The state shared with other processes through Redis, once attached (``serve --redis``).
        self.shared: SharedMeta | None = None

    def set_faults(self, profile: FaultProfile) -> None:
        """The channel's faults from now on (a scenario's ``faults:`` step).

        The dice keep their seeded streams, so what follows is still fixed by the seed.
        """
        self.faults = profile
        self.dice.profile = profile

    # -- wiring -------------------------------------------------------------

    def connect(self, agent: ASGIApp | str | WebhookTarget, *, verified: bool = False) -> None:
        """Point the simulator at the agent: an ASGI app, a webhook URL, or a target.

        A target with a true ``remote`` attribute is across a network, as a URL is. ``verified``:
        it passed the verification GET (a registration); the same target again keeps its deliveries.
        """
        if agent is not self._target or self._deliverer is None:
            if isinstance(agent, str):
                target: WebhookTarget = UrlTarget(agent, timeout=self.config.webhook_timeout)
            elif not callable(agent) and all(
                hasattr(agent, name) for name in ("post", "get", "description")
            ):
                # A WebhookTarget, checked structurally (a FastAPI app has post, get too).
                target = agent
            else:
                timeout = self.config.webhook_timeout
                target = AsgiTarget(agent, self.config.webhook_path, timeout=timeout)
            self._remote = isinstance(agent, str) or getattr(agent, "remote", False) is True
            self._target = target
            self._deliverer = self._deliverer_for(target)
            self._verified = asyncio.Event()
        if verified:
            self._verified.set()

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
            rng=self._trace_rng,
            routes=routes,
            openapi_paths=openapi_paths,
            openapi_schemas=openapi_schemas,
            on_refuse=self._on_refuse,
            payments=self.config.payments,
            account=business_account(self.config, self.templates),
            api_version=self.config.api_version,
            app_secret=self.config.app_secret,
            on_callback=Registrar(self),
            blocklist=self.blocklist,
        )

    @property
    def deliverer(self) -> Deliverer | None:
        """What delivers webhooks to the connected agent (None before :meth:`connect`)."""
        return self._deliverer

    def graph_transport(self) -> httpx.AsyncBaseTransport:
        """A transport that reaches the fake Graph API in-process."""
        return httpx.ASGITransport(app=self.graph_app)

    def graph_client(self, **kwargs: Any) -> httpx.AsyncClient:
        """An ``httpx.AsyncClient`` for an in-process agent, aimed at the fake Graph API.

        Its requests reach the fake Graph API's app directly
        (:class:`~channels.whatsapp.inprocess.InProcessClient`).
        """
        kwargs.setdefault("base_url", self.config.public_url)
        return InProcessClient(self.graph_app, **kwargs)

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
        self.activity.note(event)
        if self._sink is not None:
            self._sink(event)
        self.retention.noted(event)
        self._share_event(event)

    # -- users ------------------------------------------------------------------

    def add_user(
        self,
        wa_id: str | None,
        name: str = "",
        *,
        user_id: str | None = None,
        on_whatsapp: bool = True,
    ) -> SimUser:
        """Register a user.

        Without a BSUID the user gets the one that belongs to the number
        (:func:`~channels.whatsapp.ids.bsuid_for`); without a name, a profile
        name made from the number, since Meta always shows one. ``on_whatsapp``
        False registers a number with no WhatsApp account (sends to it fail
        with 131026).
        """
        if not on_whatsapp and not wa_id:
            raise ConfigError("a user who is not on WhatsApp needs a wa_id (a phone number)")
        if user_id is None:
            user_id = bsuid_for(wa_id, self.config.waba_id) if wa_id else new_bsuid(self._rng)
        if not name:
            name = _profile_name(wa_id or user_id)
        user = SimUser(wa_id=wa_id, user_id=user_id, name=name, on_whatsapp=on_whatsapp)
        self._keep_user(user)
        self._share_user(user)
        return user

    def _keep_user(self, user: SimUser) -> None:
        self._users[user.key] = user
        if user.wa_id is not None:
            self._users[user.wa_id] = user
        self._users[user.user_id] = user

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
        ``{"type": "location", "location": {"latitude": 1.0, "longitude": 2.0}}``;
        it is completed and checked as Meta would pass it on (references such
        as ``last_reply``, a tap's ``context``, media details: see
        :meth:`~channels.whatsapp.composing.UserMessages.compose`). Messages
        given the same ``burst`` were typed as one burst (each message is a
        burst of its own otherwise).
        """
        who = user if isinstance(user, SimUser) else self.user(user)
        if not who.on_whatsapp:
            raise StepError(f"user {who.key} is not on WhatsApp, so they can't send messages")
        content = self.compose(who, message)
        await self._ensure_handshake()
        now = self.clock.now()
        wamid = new_wamid(self._rng, who.wa_id or "")
        item: dict[str, Any] = {}
        if who.wa_id is not None:
            item["from"] = who.wa_id
        item["from_user_id"] = who.user_id
        item["id"] = wamid
        item["timestamp"] = str(int((timestamp or now).timestamp()))
        item.update(content)
        # Meta sends a system message (a changed number...) without value.contacts.
        contacts = (
            []
            if item.get("type") == "system"
            else [contact(who.wa_id, who.name or None, user_id=who.user_id)]
        )
        return await self._deliver_item(who, item, contacts, (), burst)

    async def receive_recorded(
        self,
        user: SimUser | str,
        item: Mapping[str, Any],
        envelope: Mapping[str, Any],
        *,
        wamid: str,
        ahead: timedelta = timedelta(0),
    ) -> str:
        """Deliver a message as recorded: its item, its webhook's contacts (as is) and errors.

        Only ``id`` (what the replay calls it) and ``timestamp`` change: now,
        plus ``ahead`` (how far the recorded sender's clock ran ahead).
        """
        who = user if isinstance(user, SimUser) else self.user(user)
        await self._ensure_handshake()
        stamp = str(int((self.clock.now() + ahead).timestamp()))
        message = {**item, "id": wamid, "timestamp": stamp}
        contacts = [Contact.model_validate(c) for c in _list(envelope.get("contacts"))]
        errors = [ErrorObject.model_validate(e) for e in _list(envelope.get("errors"))]
        return await self._deliver_item(who, message, contacts, errors, None)

    async def _deliver_item(
        self,
        who: SimUser,
        item: dict[str, Any],
        contacts: Sequence[Contact],
        errors: Sequence[ErrorObject],
        burst: str | None,
    ) -> str:
        now = self.clock.now()
        wamid = str(item["id"])
        parsed = parse_message(item)  # a clear error for a malformed message, before sending
        if self.blocklist.drops(who, item, now):  # the business blocked them: Meta drops it
            return wamid
        payload = build_webhook(
            waba_id=self.config.waba_id,
            phone_number_id=self.config.phone_number_id,
            display_phone_number=self.config.display_phone_number,
            messages=[parsed],
            contacts=contacts,
            errors=errors,
        )
        self._metadata = share_constants(payload, self._metadata)
        self._inbound[wamid] = ReceivedMessage.of(who, payload)
        self._burst_of[wamid] = burst or f"burst-{next(self._burst_ids)}"
        await self._share_inbound(wamid, who.key, payload, self._burst_of[wamid])
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
                on_sending=self._inbound_sending,
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
        """A user sends an image, audio, video, document or sticker; the agent can download it.

        As in Meta's webhooks, a document always has a ``filename`` (``document``
        with the MIME type's extension when none is given); the MIME type, the
        digest, ``voice`` and ``animated`` are filled in from the stored file.
        """
        obj: dict[str, Any] = {"id": self.media.add(data, mime_type)}
        if caption is not None:
            obj["caption"] = caption
        if kind == "document" and filename is None:
            filename = document_filename(mime_type)
        if filename is not None:
            obj["filename"] = filename
        return await self.receive(user, {"type": kind, kind: obj})

    def inbound_media(self, wamid: str) -> tuple[bytes, str] | None:
        """The bytes and MIME type of the media a user's message carried, if any."""
        found = self._inbound.get(wamid)
        if found is None:
            return None
        item = found.item
        media = item.get(item.get("type", ""))
        if not isinstance(media, Mapping) or "id" not in media:
            return None
        stored = self.media.get(str(media["id"]))
        return None if stored is None else (stored.data, stored.mime_type)

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
        """Verify the webhook once, before the first delivery of any kind."""
        if self._verified.is_set() or not self.config.handshake:
            return
        async with self._handshake_lock:
            if self._verified.is_set():
                return  # another delivery did it while this one waited
            deliverer = self._deliverer_or_fail()
            await handshake(
                deliverer.target,
                self.config.verify_token,
                self._rng,
                clock=self.clock,
                record=self.record,
            )
            self._verified.set()

    def _on_inbound_sending(self, update: PendingUpdate, delivery: str) -> None:
        """A user's message goes out to the agent: it enters the trace now (a copy: a duplicate).

        Read from the update itself, which carries the webhook: a retry may go out after the
        simulator has forgotten the message (:mod:`channels.whatsapp.retention`).
        """
        payload = update.payload
        item = ReceivedMessage.item_of(payload)
        duplicate = update.sent or update.item_id in self._sent_items
        self._sent_items.add(update.item_id)
        update.sent = True
        self.record(
            # Built from the webhook's own values, each of its declared type (the message is a
            # model's JSON dump): validating would only copy them, and the trace keeps every
            # message. Nothing changes a webhook once built: its bytes are signed as they are.
            InboundMessage.model_construct(
                at=self.clock.now(),
                user=update.user,
                wamid=update.item_id,
                type=item["type"],
                text=message_text(item),
                reply_id=message_reply_id(item),
                context_id=(item.get("context") or {}).get("id"),
                body=item,
                delivery=delivery,
                duplicate=duplicate,
                burst=self._burst_of.get(update.item_id),
                envelope=_envelope(payload),
            )
        )


def _profile_name(key: str) -> str:
    """The profile name of a user registered without one: ``User`` and the number's last digits."""
    digits = "".join(c for c in key if c.isdigit())
    return f"User {digits[-4:] or key}"


def _list(value: object) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _envelope(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A webhook's ``value`` without its messages: what went around the message."""
    value = payload["entry"][0]["changes"][0]["value"]
    return {k: v for k, v in value.items() if k not in ("messages", "statuses")}
