"""What the simulator tells the state it shares with other processes, and redelivery.

A mixin of :class:`~channels.whatsapp.simulator.WhatsAppSimulator`. With
``harness serve --redis`` the simulator's ``shared`` is a
:class:`~channels.whatsapp.shared.SharedMeta`, and each change it makes (an
event recorded, a user registered, a user's message made) is handed to it
here, to be written to Redis and told to the other processes. Without it
``shared`` is None and every hook returns at once.

Redelivering a user's message (Meta's byte-identical duplicate) lives here
too: on a shared server the signed bytes may have been sent by another
process, and are then read from Redis.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.delivery import Deliverer, PendingUpdate, WebhookTarget
from channels.whatsapp.faults import FaultDice
from channels.whatsapp.shared_delivery import SharedDeliverer
from channels.whatsapp.simuser import ReceivedMessage, SimUser
from harness.clock import Clock
from harness.exceptions import ConfigError
from harness.trace import Event

if TYPE_CHECKING:
    from channels.whatsapp.shared import SharedMeta

__all__ = ["SharedHooks"]


class SharedHooks:
    """The simulator's hooks into the shared state, and redelivery."""

    #: The state shared with other processes through Redis, once attached (``serve --redis``).
    shared: SharedMeta | None
    config: SimulatorConfig
    clock: Clock
    dice: FaultDice
    _inbound: dict[str, ReceivedMessage]
    _last_inbound: dict[str, str]

    def user(self, key: str) -> SimUser:
        """A registered user by wa_id or BSUID (the simulator defines it)."""
        raise NotImplementedError

    def record(self, event: Event) -> None:
        """Append an event to the log (the simulator defines it)."""
        raise NotImplementedError

    async def _ensure_handshake(self) -> None:
        raise NotImplementedError

    def _on_inbound_sending(self, update: PendingUpdate, delivery: str) -> None:
        raise NotImplementedError

    def _on_status_sending(self, update: PendingUpdate, delivery: str) -> None:
        raise NotImplementedError

    def _deliverer_or_fail(self) -> Deliverer:
        raise NotImplementedError

    def _deliverer_for(self, target: WebhookTarget) -> Deliverer:
        """What delivers to ``target``: here, or as jobs in Redis any process may send."""
        if self.shared is None:
            verify = self._ensure_handshake
            return Deliverer(target, self.config, self.clock, self.dice, self.record, verify=verify)
        hooks = {"message": self._on_inbound_sending, "status": self._on_status_sending}
        return SharedDeliverer(
            target,
            self.config,
            self.clock,
            self.dice,
            self.record,
            shared=self.shared,
            hooks=hooks,
            verify=self._ensure_handshake,
        )

    def _share_event(self, event: Event) -> None:
        """An event was recorded here."""
        if self.shared is not None:
            self.shared.event_recorded(event)

    def _share_user(self, user: SimUser) -> None:
        """A user was registered here."""
        if self.shared is not None:
            self.shared.user_added(user)

    async def _share_inbound(
        self, wamid: str, user: str, payload: Mapping[str, Any], burst: str
    ) -> None:
        """A user's message was made here: in Redis before the agent hears of its wamid."""
        if self.shared is not None:
            self.shared.inbound_added(wamid, user, payload, burst)
            await self.shared.flush()

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
        deliverer = self._deliverer_or_fail()
        if self.shared is not None:  # sent by another process, perhaps
            await self.shared.fetch_body(wamid, deliverer)
        if not deliverer.redeliver(wamid):
            raise ConfigError(
                f"message {wamid} is not one this server delivered (or still keeps),"
                " so it can't be redelivered"
            )
        return wamid

    def sender_of(self, wamid: str) -> str | None:
        """The user (as the trace names them) who sent message ``wamid``, if a user did."""
        found = self._inbound.get(wamid)
        return None if found is None else found.user.key
