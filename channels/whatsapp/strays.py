"""Sends to numbers no scenario of a run plays: answered as Meta answers them, and reported.

An agent at a URL sends every scenario's replies to one fake Graph API (the
:class:`~channels.whatsapp.router.GraphRouter`), which hands each send to the
scenario whose user it addresses. A bot that answers a number of its own
configuration (a ``RECIPIENT_WAID``) rather than the sender addresses none.
Meta takes such a send (200 and a wamid), and fails it a moment later on a
``failed`` status webhook with 131047: the number never wrote, so it has no
open customer-service window. :class:`StraySends` does the same with a
simulator of its own, as ``harness serve`` does (the rules are
:mod:`channels.whatsapp.outbound`'s: a number it was not told about is a
WhatsApp user who never wrote), delivering its statuses, signed, to the
agent's URL like every other webhook.

Each such send is also kept for the report, on the scenario that was running
when it came, or on each of them when several were (and on the one that
ended last when none was): the scenario's own checks then fail with "no
answer", and :class:`~harness.results.StraySend` says where the answer went.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from starlette.types import Receive, Scope, Send

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.media import MediaStore
from channels.whatsapp.simulator import WhatsAppSimulator
from channels.whatsapp.url_target import UrlTarget
from harness._tasks import cancel_until_done
from harness.clock import VirtualClock
from harness.results import StraySend
from harness.trace import ErrorInfo, Event, OutboundSend, StatusUpdate

__all__ = ["InFlight", "StraySends", "is_message_send"]

#: The scenarios a stray send goes on: their namespaces, and how many were running
#: (0: none was, and the namespaces name the one that ended last).
InFlight = Callable[[], tuple[Sequence[str], int]]


def is_message_send(body: bytes) -> bool:
    """Whether a send's body is a message (not a read receipt or typing indicator).

    A body that is not a JSON object counts as a message: the Graph API then
    answers it with Meta's error, as it would any send.
    """
    try:
        data = json.loads(body)
    except ValueError:
        return True
    return not isinstance(data, dict) or data.get("status") != "read"


class StraySends:
    """The Graph API for numbers no scenario plays, and which scenarios each send went on.

    ``in_flight`` names the scenarios running when a send comes; ``target_url``
    is the agent's webhook, where the sends' statuses go (None: nowhere). The
    simulator is built, and starts following real time, at the first such send.
    """

    def __init__(
        self,
        config: SimulatorConfig,
        media: MediaStore,
        *,
        target_url: str | None,
        in_flight: InFlight,
    ) -> None:
        self.config = config
        self.media = media
        self.target_url = target_url
        self._in_flight = in_flight
        self._sim: WhatsAppSimulator | None = None
        self._pacer: asyncio.Task[None] | None = None
        self._kept: dict[str, list[tuple[OutboundSend, int]]] = {}  # by namespace

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI: the fake Graph API answers the send as Meta would, for a number who never wrote."""
        await self._simulator().graph_app(scope, receive, send)

    def strays(self, namespace: str) -> list[StraySend]:
        """The sends kept for scenario ``namespace``, each with what became of it so far."""
        events = self._sim.events if self._sim is not None else []
        statuses: dict[str, StatusUpdate] = {}
        for event in events:
            if isinstance(event, StatusUpdate):
                statuses[event.wamid] = event  # the latest one of each message
        return [
            StraySend(
                to=sent.user or "?",
                type=sent.type,
                text=sent.text,
                at=sent.at,
                wamid=sent.wamid,
                outcome=_outcome(sent, statuses.get(sent.wamid or "")),
                running=running,
            )
            for sent, running in self._kept.get(namespace, [])
        ]

    def forget(self, namespace: str) -> None:
        """Drop what was kept for scenario ``namespace`` (a long-lived router keeps no old news)."""
        self._kept.pop(namespace, None)

    async def aclose(self) -> None:
        """Stop following real time and drop the statuses still on their way."""
        if self._pacer is not None:
            await cancel_until_done(self._pacer)
            self._pacer = None
        if self._sim is not None:
            await self._sim.aclose()

    def _simulator(self) -> WhatsAppSimulator:
        if self._sim is None:
            clock = VirtualClock(datetime.now(UTC).replace(microsecond=0))
            sim = WhatsAppSimulator(self.config, clock=clock, media=self.media, sink=self._saw)
            if self.target_url is not None:
                # The run's scenarios verify the webhook; Meta verifies a subscription once.
                target = UrlTarget(self.target_url, timeout=self.config.webhook_timeout)
                sim.connect(target, verified=True)
            self._pacer = asyncio.get_running_loop().create_task(
                sim.run_paced(), name="pace the sends to numbers no scenario plays"
            )
            self._sim = sim
        return self._sim

    def _saw(self, event: Event) -> None:
        """A send enters the simulator's trace: keep it for the scenarios running now."""
        if not isinstance(event, OutboundSend) or not event.is_message or event.user is None:
            return
        namespaces, running = self._in_flight()
        for namespace in namespaces:
            self._kept.setdefault(namespace, []).append((event, running))


def _outcome(sent: OutboundSend, status: StatusUpdate | None) -> str:
    """What became of a send: ``accepted, then failed: 131047 (Re-engagement message)``."""
    if sent.error is not None:
        return f"refused: {_error(sent.error)}"
    if status is None:
        return "accepted"
    if status.status == "failed":
        return "accepted, then failed: " + ", ".join(_error(e) for e in status.errors)
    return f"accepted, then {status.status}"


def _error(error: ErrorInfo) -> str:
    return f"{error.code} ({error.title})" if error.title else str(error.code)
