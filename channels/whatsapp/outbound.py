"""Meta's rules for what the agent sends: window, limits, statuses, refusals in the trace.

A mixin of :class:`~channels.whatsapp.simulator.WhatsAppSimulator`. The fake
Graph API hands each well-formed send to :meth:`OutboundRules._on_send`: a
send (or read receipt) to a user the business blocked is refused
(:mod:`channels.whatsapp.blocking`), the throughput and pair-rate limits
apply, a free-form message outside the 24-hour window fails (on a status,
or at once if so configured), a reaction to an unknown message fails with
131009, and an accepted message
gets its sent, delivered and read statuses on the clock, with the fault
profile's late, missing or reordered ones. Refused sends enter the trace
with Meta's error.

A number the simulator was not told about is a WhatsApp user who never
wrote (registered on the spot, window closed: a free-form message fails
with 131047); only a user registered as not on WhatsApp fails with 131026.
Every status webhook carries the user in ``contacts``: the wa_id, and the
BSUID unless the number has no WhatsApp account. Statuses of a send made
through Graph API v23.0 or older carry its ``conversation`` (Meta dropped
the object from v24.0 on, outside free entry points).
"""

from __future__ import annotations

import random
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from channels.whatsapp.blocking import Blocklist, user_blocked
from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.delivery import Deliverer, PendingUpdate
from channels.whatsapp.envelope import contact_item, webhook_body
from channels.whatsapp.errors import (
    GraphAPIError,
    ParameterInvalid,
    ReEngagementRequired,
    Undeliverable,
)
from channels.whatsapp.faults import FaultDice, FaultProfile
from channels.whatsapp.graph import SendOutcome
from channels.whatsapp.ids import new_conversation_id, new_wamid
from channels.whatsapp.limits import PairRateLimiter, ThroughputLimiter
from channels.whatsapp.payloads import format_timestamp
from channels.whatsapp.simuser import ReceivedMessage, SentMessage, SimUser
from channels.whatsapp.statuses import (
    Conversation,
    ConversationOrigin,
    pricing_item,
    status_item,
)
from channels.whatsapp.validation import ValidatedSend, normalize_wa_id
from channels.whatsapp.window import SessionWindows
from harness.clock import Clock
from harness.trace import ErrorInfo, Event, OutboundSend, StatusUpdate

if TYPE_CHECKING:
    from channels.whatsapp.shared import SharedMeta

__all__ = ["OutboundRules"]


class OutboundRules:
    """What happens to each send the fake Graph API accepts or refuses."""

    config: SimulatorConfig
    clock: Clock
    faults: FaultProfile
    dice: FaultDice
    outbox: list[dict[str, Any]]
    windows: SessionWindows
    blocklist: Blocklist
    pair_limit: PairRateLimiter
    throughput: ThroughputLimiter
    _rng: random.Random
    _users: dict[str, SimUser]
    _sent: dict[str, SentMessage]
    _inbound: dict[str, ReceivedMessage]
    #: The statuses the agent was sent, as ``wamid:status``: a redelivered one is not news.
    _status_seen: set[str]
    #: The open conversation of each (user, category): its id and when it expires.
    _conversations: dict[tuple[str, str], tuple[str, datetime]]
    _deliverer: Deliverer | None
    shared: SharedMeta | None
    #: ``_on_status_sending``, bound once: every status on its way carries it.
    _status_sending: Callable[[PendingUpdate, str], None]

    def record(self, event: Event) -> None:
        """Append an event to the log (the simulator defines it)."""
        raise NotImplementedError

    def add_user(
        self,
        wa_id: str | None,
        name: str = "",
        *,
        user_id: str | None = None,
        on_whatsapp: bool = True,
    ) -> SimUser:
        """Register a user (the simulator defines it)."""
        raise NotImplementedError

    def _deliverer_or_fail(self) -> Deliverer:
        raise NotImplementedError

    def _on_status_sending(self, update: PendingUpdate, delivery: str) -> None:
        item = update.payload["entry"][0]["changes"][0]["value"]["statuses"][0]
        key = update.item_id  # ``wamid:status``, the string its deliveries name it by
        if key in self._status_seen:
            return
        self._status_seen.add(key)
        self.record(
            # Built from values of the declared types: the model's validation would only copy.
            StatusUpdate.model_construct(
                at=self.clock.now(),
                user=update.user,
                wamid=str(item["id"]),
                status=str(item["status"]),
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

    def _last_interactive(self, who: SimUser) -> SentMessage | None:
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
        if self.shared is not None:  # what another process did a moment ago, if not heard yet
            await self.shared.fetch_user(key)
            await self.shared.fetch_message(send.message_id or "")
        who = self._users.get(key)
        if who is None and send.to is not None:
            who = self.add_user(send.to)  # a WhatsApp user who never wrote: window closed
        if who is not None and self.blocklist.holds(who.key):
            raise user_blocked()
        if self.shared is not None:
            await self.shared.check_limits(who.key if who is not None else None)
        else:
            self.throughput.check(self.config.phone_number_id)
            if who is not None:
                self.pair_limit.check(who.key)
        reachable = who is not None and who.on_whatsapp
        in_window = await self.windows.is_open(who.key) if reachable and who else False
        template = send.type == "template"
        if reachable and not in_window and not template and self.config.window_error == "sync":
            raise ReEngagementRequired()
        wamid = new_wamid(self._rng, who.wa_id or "" if who else "", outbound=True)
        send = _sharing_strings(send, who)
        self._sent[wamid] = SentMessage(wamid=wamid, user=who, send=send, at=now)
        self.outbox.append(_request(send))
        if self.shared is not None:
            self.shared.sent_added(self._sent[wamid])
            self.shared.outbox_added(send.body)
        self._record_send(send, who, wamid, None, in_window if reachable else None)
        if who is None or not who.on_whatsapp:
            self._schedule_failure(wamid, send, who.key if who else key, Undeliverable())
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
        if self.shared is not None:  # in Redis before the agent hears of the wamid
            await self.shared.flush()
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
            key = inbound.user.key if inbound else None
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
        if self.shared is not None:
            await self.shared.fetch_message(send.message_id or "")
        target = self._inbound.get(send.message_id or "")
        if target is None:
            error = ParameterInvalid(
                details=f"message_id {send.message_id!r} is not a message this number received"
            )
            raise error
        who = target.user
        if self.blocklist.holds(who.key):  # a receipt for a blocked user's earlier message
            raise user_blocked()
        self._record_send(send, who, None, None, None)
        if self.shared is not None:  # a typing indicator holds calls waiting in other processes
            await self.shared.flush()
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
            # Built from the validated send (its body is the request's parsed JSON, its other
            # values of their declared types): validating would only copy them.
            OutboundSend.model_construct(
                at=self.clock.now(),
                user=who.key if who else send.user,
                type=kind,
                text=send.text,
                request=_request(send),
                wamid=wamid,
                error=error,
                in_window=in_window,
            )
        )

    def _recipient(self, who_key: str) -> tuple[str | None, str | None]:
        """The user a status is about, as (wa_id, BSUID).

        Both ids, on failed statuses too: whether Meta leaves the BSUID out
        for a number with no WhatsApp account is unconfirmed, and clients read
        ``contacts[0].user_id`` on every status.
        """
        who = self._users.get(who_key)
        if who is None:
            return None, who_key  # a BSUID the business was never given
        return who.wa_id, who.user_id

    def _status_payload(self, item: dict[str, Any], who_key: str) -> dict[str, Any]:
        wa_id, user_id = self._recipient(who_key)
        return webhook_body(
            waba_id=self.config.waba_id,
            phone_number_id=self.config.phone_number_id,
            display_phone_number=self.config.display_phone_number,
            statuses=[item],
            contacts=[contact_item(wa_id, user_id)],
        )

    def _enqueue_status(
        self,
        wamid: str,
        who_key: str,
        item: dict[str, Any],
        due: datetime,
        faults: tuple[str, ...] = (),
    ) -> None:
        if self._deliverer is None:  # no agent is connected: the status has nowhere to go
            return
        self._deliverer.enqueue(
            PendingUpdate(
                kind="status",
                item_id=f"{wamid}:{item['status']}",
                user=who_key,
                payload=self._status_payload(item, who_key),
                due=due,
                faults=faults,
                on_sending=self._status_sending,
            )
        )

    def _schedule_failure(
        self, wamid: str, send: ValidatedSend, who_key: str, error: GraphAPIError
    ) -> None:
        delay = self.config.statuses.sent or 0.0
        due = self.clock.now() + timedelta(seconds=delay)
        wa_id, user_id = self._recipient(who_key)
        item = status_item(
            wamid,
            "failed",
            due,
            wa_id,
            recipient_user_id=user_id,
            errors=[error.to_error_object().to_dict()],
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
        opened = self._conversation(who.key, category) if _has_conversations(send) else None
        for name, delay in plan:
            if self.dice.roll("status-missing", faults.status_missing):
                continue
            extra: tuple[str, ...] = marks
            if self.dice.roll("status-late", faults.status_late):
                delay += faults.status_late_delay
                extra = (*extra, "late_status")
            due = self.clock.now() + timedelta(seconds=delay)
            item = status_item(
                wamid,
                name,  # type: ignore[arg-type]  # one of the literal status values
                due,
                who.wa_id,
                recipient_user_id=who.user_id,
                pricing=pricing_item(category) if name in priced else None,
                conversation=None if opened is None else _conversation_of(opened, category, name),
                biz_opaque_callback_data=send.biz_opaque_callback_data,
            )
            self._enqueue_status(wamid, who.key, item, due, extra)

    def _conversation(self, who_key: str, category: str) -> tuple[str, datetime]:
        """The user's open conversation of this category, or a new one, open for 24 hours."""
        now = self.clock.now()
        found = self._conversations.get((who_key, category))
        if found is None or found[1] <= now:
            found = (new_conversation_id(self._rng), now + timedelta(hours=24))
            self._conversations[(who_key, category)] = found
        return found


_VERSION = re.compile(r"v(\d+)\.\d+")
# The last Graph API version whose statuses carry ``conversation`` outside free entry points.
_LAST_WITH_CONVERSATION = 23


def _has_conversations(send: ValidatedSend) -> bool:
    """Whether the statuses of ``send`` carry ``conversation`` (sent through v23.0 or older)."""
    found = _VERSION.fullmatch(send.api_version or "")
    return found is not None and int(found.group(1)) <= _LAST_WITH_CONVERSATION


def _conversation_of(opened: tuple[str, datetime], category: str, name: str) -> dict[str, Any]:
    """A status's ``conversation``: ``expiration_timestamp`` rides on ``sent`` only."""
    conversation_id, expires = opened
    return Conversation(
        id=conversation_id,
        expiration_timestamp=format_timestamp(expires) if name == "sent" else None,
        origin=ConversationOrigin(type=category),
    ).to_dict()


# The body's fields whose strings every send repeats: the product, the type, the recipient.
_SHARED_FIELDS = ("messaging_product", "recipient_type", "type", "to", "recipient")
_SHARED_SUMMARY = ("type", "to", "input", "recipient")


def _sharing_strings(send: ValidatedSend, who: SimUser | None) -> ValidatedSend:
    """``send`` holding the strings the simulator holds already, where equal: its own are let go.

    The recipient becomes the user's own wa_id or BSUID, the product and the
    type one string for every send. Equal strings for equal strings: the
    request, the trace and the outbox read the same values, and the send is
    kept for as long as the run.
    """
    body = send.body
    if type(body) is not dict:
        return send
    pool: dict[str, str] = {"whatsapp": "whatsapp", "individual": "individual"}
    if send.type is not None:
        pool[send.type] = sys.intern(send.type)  # a type the validation knows: one of a few
    if who is not None:
        for own in (who.wa_id, who.user_id):
            if own is not None:
                pool[own] = own
    for name in _SHARED_FIELDS:
        value = body.get(name)
        if isinstance(value, str) and value in pool:
            body[name] = pool[value]
    changes: dict[str, Any] = {}
    for name in _SHARED_SUMMARY:
        value = getattr(send, name)
        if isinstance(value, str) and value in pool and pool[value] is not value:
            changes[name] = pool[value]
    return replace(send, **changes) if changes else send


def _request(send: ValidatedSend) -> dict[str, Any]:
    """The send's body as the trace and the outbox keep it: the request's parsed JSON itself.

    Nothing changes a send once validated, so the two and the send itself hold one dict
    (a copy where the body is some other mapping).
    """
    body = send.body
    return body if type(body) is dict else dict(body)


def _json_safe(body: Mapping[str, Any]) -> dict[str, Any]:
    """The body as plain JSON data (it came from ``json.loads``, so it already is)."""
    return {str(k): v for k, v in body.items()}
