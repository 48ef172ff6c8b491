"""One fake Graph API for every scenario of a run against an agent at a URL.

An agent in another process has one Graph API base URL, so the scenarios a
run plays against it at the same time must share one server. The
:class:`GraphRouter` serves it and hands each send to the simulator of the
scenario it belongs to, found by its recipient (``to`` or ``recipient``) or,
for read receipts and typing indicators, by the message it marks; so is a
block or unblock (``block_users``), by the users it names. Every
scenario's users are distinct, so the owner is never in doubt; a block
naming users of two scenarios is refused (100: one call per scenario), and
``GET block_users`` lists the users every running scenario blocked. Media
uploads, downloads and ``/openapi.json`` need no owner: the scenarios share
one media store.

A send for a scenario that has already ended is accepted as Meta would
accept it, and kept as *late* for that scenario (:meth:`GraphRouter.late`),
never credited to another one. A message to a number no scenario plays is
answered as Meta answers it (accepted, then a ``failed`` status with 131047,
delivered to the agent), and kept for the scenarios running when it came
(:meth:`GraphRouter.strays`, :mod:`channels.whatsapp.strays`).

The router also serves the model endpoint and the OTLP receiver
(:mod:`harness.endpoints`) for every scenario: a model call is answered from,
or recorded into, the recording of the scenario it belongs to, and a span's
events join that scenario's trace (:mod:`channels.whatsapp.attribution` says
how the scenario is found).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

from channels.whatsapp.account import business_account
from channels.whatsapp.attribution import most_recently_quoted, request_text
from channels.whatsapp.blocking import Blocklist
from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.errors import InvalidParameter, ParameterInvalid
from channels.whatsapp.forwarding import (
    Forwarder,
    RouteBook,
    read_body,
    recipients,
    replaying,
    routed_call,
)
from channels.whatsapp.graph import AcceptAll, SendOutcome, create_graph_app
from channels.whatsapp.ids import id_source, new_fbtrace_id, new_wamid
from channels.whatsapp.media import MediaStore
from channels.whatsapp.server import BackgroundServer
from channels.whatsapp.strays import StraySends, is_message_send
from channels.whatsapp.templates import TemplateRegistry
from channels.whatsapp.validation import ValidatedSend, normalize_wa_id
from harness.clock import Clock, SystemClock
from harness.endpoints import (
    ANTHROPIC_PATH,
    ANTHROPIC_UPSTREAM,
    OPENAI_PATH,
    OPENAI_UPSTREAM,
    OTLP_TRACES_PATH,
    ModelEndpoint,
    OTLPReceiver,
    Placer,
    Seat,
    on_clock,
    request_key,
)
from harness.recording import Recording
from harness.remote import SCENARIO_HEADER
from harness.results import StraySend
from harness.tape import RecordMode, Sink
from harness.trace import Event, InboundMessage, OutboundSend

__all__ = ["ROUTE_OPTIONS", "UPSTREAM_OPTIONS", "GraphRouter", "Owner"]

#: Channel options naming where recorded model calls go on to (passed to the router).
UPSTREAM_OPTIONS: Final = ("anthropic_upstream", "openai_upstream")
#: Channel options of a run whose Graph API plays one Meta with others: the address the
#: others reach it at, and the store that says who plays which user (see the forwarding module).
ROUTE_OPTIONS: Final = ("graph_advertise", "graph_routes")
_ENDPOINT_PATHS: Final = frozenset({ANTHROPIC_PATH, OPENAI_PATH, OTLP_TRACES_PATH})


@dataclass
class Owner:
    """A scenario the router serves: its Graph API app, and what it has ended with.

    ``recording`` is what its model calls record into or replay from,
    ``sink`` where its agent's reported calls go (``placed``, when given,
    takes them with the instants their spans started and ended), ``events`` its trace so far.
    """

    namespace: str
    app: ASGIApp
    clock: Clock
    active: bool = True
    late: list[Event] = field(default_factory=list)
    recording: Recording | None = None
    sink: Sink | None = None
    events: Sequence[Event] = ()
    blocklist: Blocklist | None = None
    placed: Placer | None = None


class _RunBlocklists(Blocklist):
    """What the run's own Graph API answers of blocks: every running scenario's users listed."""

    def __init__(self, owners: Callable[[], Sequence[Owner]], numbers: Sequence[str]) -> None:
        super().__init__(numbers=numbers)
        self._owners = owners

    def listed(self) -> list[dict[str, Any]]:
        """The users each running scenario blocked, scenario by scenario."""
        held = [o.blocklist for o in self._owners() if o.active and o.blocklist is not None]
        return [user for blocklist in held for user in blocklist.listed()]


class GraphRouter:
    """The Graph API server a run shares, routing each request to its scenario's simulator."""

    def __init__(
        self,
        config: SimulatorConfig,
        host: str,
        port: int,
        *,
        anthropic_upstream: str = ANTHROPIC_UPSTREAM,
        openai_upstream: str = OPENAI_UPSTREAM,
        routes: RouteBook | None = None,
        target_url: str | None = None,
        side_effects: Collection[str] = (),
    ) -> None:
        """``routes``: the book of the Graph APIs that play one Meta together (see
        :mod:`channels.whatsapp.forwarding`); this router's users are written in it.
        ``target_url``: the agent's webhook, where the statuses of its sends to numbers
        no scenario plays go. ``side_effects``: the tools with side effects, by name,
        among the agent's tool calls (reported by its spans, or seen by the model endpoint)."""
        self.config = config
        self.clock: Clock = SystemClock()
        #: The media every scenario of the run uploads to and downloads from.
        self.media = _OwnMedia(self.clock, public_url=config.public_url, rng=id_source())
        templates = TemplateRegistry.given(config.templates)
        self._shared_app = create_graph_app(
            access_tokens={config.access_token},
            phone_numbers={config.phone_number_id: config.display_phone_number},
            on_send=_NoScenarios(),
            media=self.media,
            clock=self.clock,
            templates=templates,
            public_url=config.public_url,
            account=business_account(config, templates),
            api_version=config.api_version,
            app_secret=config.app_secret,
            blocklist=_RunBlocklists(
                lambda: list(self._owners.values()),
                (config.phone_number_id, config.display_phone_number),
            ),
        )
        self._server = BackgroundServer(self, host, port)
        self._owners: dict[str, Owner] = {}  # by namespace
        self._by_user: dict[str, Owner] = {}
        self._by_wamid: dict[str, Owner] = {}
        self._last_ended: str | None = None
        self._strays = StraySends(
            config, self.media, target_url=target_url, in_flight=self._in_flight
        )
        #: Which of the agent's own calls the endpoints have seen (``llm``, ``tool``).
        self.observed: set[str] = set()
        # A call no running scenario can take is answered as a replay miss, never live.
        self._nobody = Recording(mode=RecordMode.REPLAY)
        # An agent's tool results, carried back to its model, say which tools it ran.
        self.model = ModelEndpoint(
            self._seat,
            anthropic_upstream=anthropic_upstream,
            openai_upstream=openai_upstream,
            derive_tools=True,
            side_effects=side_effects,
        )
        # Model spans of an agent whose calls come through the endpoint would count twice.
        self.otlp = OTLPReceiver(
            self._span_sink,
            routed=True,
            side_effects=side_effects,
            skip_model_spans=self.model.answered,
        )
        self._endpoints = Starlette(routes=[*self.model.routes(), *self.otlp.routes()])
        self.routes = routes
        self._forwarder: Forwarder | None = None
        self._app: ASGIApp = self._dispatch
        if routes is not None:
            self._forwarder = Forwarder(self._dispatch, routes, plays=self._plays)
            self._app = self._forwarder
            self.media.on_add = routes.claim_media

    @property
    def url(self) -> str:
        """Where the router listens."""
        return self._server.url

    async def start(self) -> None:
        """Start serving."""
        await self._server.start()

    async def stop(self) -> None:
        """Stop serving (and give this router's users back to the book)."""
        try:
            await self._server.stop()
            await self.model.aclose()
            await self._strays.aclose()
        finally:
            if self.routes is not None:
                await self.routes.release()
            if self._forwarder is not None:
                await self._forwarder.aclose()

    async def claim(self, namespace: str, users: Sequence[str]) -> None:
        """Write scenario ``namespace``'s ``users`` in the book: their sends come here."""
        if self.routes is not None:
            await self.routes.claim_users(namespace, users)

    def forget(self, namespace: str) -> None:
        """Drop an ended scenario altogether (a long-lived router keeps none it won't use).

        What still comes for its users is answered as for a stranger's number.
        """
        self._strays.forget(namespace)
        if self._last_ended == namespace:
            self._last_ended = None
        owner = self._owners.pop(namespace, None)
        if owner is None:
            return
        for index in (self._by_user, self._by_wamid):
            for key in [k for k, o in index.items() if o is owner]:
                del index[key]
        if self.routes is not None:
            self.routes.drop(namespace)

    def attach(
        self,
        namespace: str,
        app: ASGIApp,
        clock: Clock,
        users: list[str],
        *,
        recording: Recording | None = None,
        sink: Sink | None = None,
        events: Sequence[Event] = (),
        blocklist: Blocklist | None = None,
        placed: Placer | None = None,
    ) -> Owner:
        """Route sends to ``users`` (wa_ids and BSUIDs) to ``app``, a scenario's Graph API.

        Model calls and spans of the scenario go to ``recording`` and ``sink``
        (spans to ``placed``, if given, with the instants each started and ended);
        ``events`` is its trace as it grows (to tell its model calls apart);
        ``blocklist`` is the users it blocked, for the run's ``GET block_users``.
        """
        owner = Owner(
            namespace,
            app,
            clock,
            recording=recording,
            sink=sink,
            events=events,
            blocklist=blocklist,
            placed=placed,
        )
        self._owners[namespace] = owner
        for user in users:
            known = self._by_user.get(user)
            if known is not None and known.active and known is not owner:
                raise ValueError(
                    f"user {user} belongs to scenario {known.namespace} already; "
                    "scenarios that run at once need distinct users"
                )
            self._by_user[user] = owner
        return owner

    def message_sent(self, namespace: str, wamid: str) -> None:
        """A user's message of scenario ``namespace``: read receipts for it go there."""
        owner = self._owners.get(namespace)
        if owner is not None:
            self._by_wamid[wamid] = owner
            if self.routes is not None:
                self.routes.claim_wamid(namespace, wamid)

    def detach(self, namespace: str) -> None:
        """The scenario ended: what comes for it from now on is late."""
        owner = self._owners.get(namespace)
        if owner is not None:
            owner.active = False
            self._last_ended = namespace
        if self.routes is not None:
            self.routes.let_go(namespace)  # its entries expire soon after

    def late(self, namespace: str) -> list[Event]:
        """The sends that came for scenario ``namespace`` after it ended."""
        owner = self._owners.get(namespace)
        return [] if owner is None else list(owner.late)

    def strays(self, namespace: str) -> list[StraySend]:
        """The agent's messages to numbers no scenario plays, sent while ``namespace`` ran."""
        return self._strays.strays(namespace)

    def _in_flight(self) -> tuple[list[str], int]:
        """The scenarios running now, and how many (none: the one that ended last, and 0)."""
        running = [o.namespace for o in self._owners.values() if o.active]
        if running:
            return running, len(running)
        return ([self._last_ended] if self._last_ended is not None else []), 0

    def _running(self) -> list[Owner]:
        return [o for o in self._owners.values() if o.active and o.recording is not None]

    def _holding(self, running: Sequence[Owner], body: Mapping[str, Any]) -> list[Owner]:
        key = request_key(body)
        return [
            o
            for o in running
            if o.recording is not None and any(r.key == key for r in o.recording.llm_records)
        ]

    def _seat(self, body: Mapping[str, Any], headers: Mapping[str, str]) -> Seat:
        """The scenario a model call belongs to (see :mod:`channels.whatsapp.attribution`)."""
        self.observed.add("llm")
        running = self._running()
        named = self._owners.get(headers.get(SCENARIO_HEADER.lower(), ""))
        owner = named if named in running else None
        if owner is None and len(running) == 1:
            owner = running[0]
        if owner is None and running:
            text = request_text(body.get("messages"))
            quoting = most_recently_quoted([o.events for o in running], text)
            if quoting is not None:
                owner = running[quoting]
            else:
                key = request_key(body)
                holding = [
                    o
                    for o in running
                    if o.recording is not None
                    and any(r.key == key for r in o.recording.llm_records)
                ]
                owner = holding[0] if len(holding) == 1 else _latest_spoken(running)
        if owner is None or owner.recording is None:
            return self._nobody, None
        return owner.recording, owner.sink

    def _span_sink(self, attributes: Mapping[str, Any]) -> Placer | None:
        """Where a span's events go: its scenario's trace (None: no scenario takes it)."""
        self.observed.update(("llm", "tool"))  # an instrumented agent reports both
        running = [o for o in self._owners.values() if o.active]
        owner = self._owners.get(str(attributes.get("harness.scenario", "")))
        user = attributes.get("user.id") or attributes.get("enduser.id")
        if owner is None and user is not None:
            owner = self._by_user.get(normalize_wa_id(str(user)) or str(user))
        if owner is None and len(running) == 1:
            owner = running[0]
        if owner is None or not owner.active or owner.sink is None:
            return None
        sink, clock, trace, placed = owner.sink, owner.clock, owner.events, owner.placed

        def put(event: Event, started: float, ended: float) -> None:
            moved = on_clock(event, clock, trace[-1].at if trace else None)
            if placed is not None:
                placed(moved, started, ended)
            else:
                sink(moved)

        return put

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI: sends go to their scenario (or to the Graph API that plays their user)."""
        await self._app(scope, receive, send)

    async def _dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Sends go to their scenario, everything else to the shared Graph API."""
        if scope["type"] == "http" and scope["path"] in _ENDPOINT_PATHS:
            await self._endpoints(scope, receive, send)
            return
        if scope["type"] != "http" or not routed_call(scope["method"], scope["path"]):
            await self._shared_app(scope, receive, send)
            return
        body = await read_body(receive)
        owners = self._owners_of(body)
        if len(owners) > 1:  # a block naming users of several scenarios
            await _refuse_mixed(owners, send)
            return
        owner = owners[0] if owners else None
        replay = replaying(body)
        if owner is None and is_message_send(body):
            # A number no scenario plays: answered, and its status sent, as Meta would.
            await self._strays(scope, replay, send)
            return
        if owner is None or owner.active or not scope["path"].rstrip("/").endswith("/messages"):
            # A read receipt for no scenario's message: the shared app refuses it (131009).
            # A block goes to its scenario's blocklist, ended or not.
            await (owner.app if owner else self._shared_app)(scope, replay, send)
            return
        await self._answer_late(owner, body, send)

    def _owners_of(self, body: bytes) -> list[Owner]:
        """The scenarios whose users (or messages) a body names, each once, in order."""
        try:
            data = json.loads(body)
        except ValueError:
            return []
        return self._owners_in(recipients(data)) if isinstance(data, dict) else []

    def _owners_in(self, named: Sequence[tuple[str, str]]) -> list[Owner]:
        found: list[Owner] = []
        for kind, value in named:
            owner = (self._by_user if kind == "user" else self._by_wamid).get(value)
            if owner is not None and owner not in found:
                found.append(owner)
        return found

    def _plays(self, named: Sequence[tuple[str, str]]) -> bool:
        """Whether this router answers for what a request names itself (else: the book)."""
        media = [value for kind, value in named if kind == "media"]
        if media:
            return all(self.media.exists(m) for m in media)
        return bool(self._owners_in(named))

    async def _answer_late(self, owner: Owner, body: bytes, send: Send) -> None:
        data: Any = json.loads(body)
        to = data.get("to") or data.get("recipient")
        kind = str(data.get("type") or ("typing" if "typing_indicator" in data else "mark_read"))
        text = (data.get("text") or {}).get("body") if isinstance(data.get("text"), dict) else None
        receipt = data.get("status") == "read"
        wamid = None if receipt else new_wamid(_RNG, str(to or ""), outbound=True)
        owner.late.append(
            OutboundSend(
                at=owner.clock.now(),
                user=normalize_wa_id(to) if isinstance(to, str) and data.get("to") else to,
                type=kind,
                text=text if isinstance(text, str) else None,
                request=data,
                wamid=wamid,
            )
        )
        answer: dict[str, Any] = (
            {"success": True}
            if wamid is None
            else {
                "messaging_product": "whatsapp",
                "contacts": [{"input": to, "wa_id": normalize_wa_id(str(to)) or to}],
                "messages": [{"id": wamid}],
            }
        )
        payload = json.dumps(answer).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": payload})


class _NoScenarios(AcceptAll):
    """The shared Graph API's sends: what reaches it names no scenario's user or message.

    A read receipt or typing indicator for a message no scenario delivered
    is refused as the simulator refuses one for a message it never received
    (131009); other sends are accepted.
    """

    async def __call__(self, send: ValidatedSend) -> SendOutcome:
        """Refuse a receipt for an unknown message, else accept ``send``."""
        if send.action != "message":
            raise ParameterInvalid(
                details=f"message_id {send.message_id!r} is not a message this number received"
            )
        return await super().__call__(send)


class _OwnMedia(MediaStore):
    """The router's media store, telling the book of each file a user sends."""

    on_add: Callable[[str], None] | None = None

    def add(self, data: bytes, mime_type: str, **kwargs: Any) -> str:
        """Store a user's file (see :meth:`MediaStore.add`); the book hears of its id."""
        media_id = super().add(data, mime_type, **kwargs)
        if self.on_add is not None:
            self.on_add(media_id)
        return media_id


def _latest_spoken(owners: Sequence[Owner]) -> Owner:
    """The scenario whose user wrote last (the first one, if no one has written yet)."""

    def last(owner: Owner) -> float:
        said = [e.at for e in owner.events if isinstance(e, InboundMessage)]
        return max(said).timestamp() if said else float("-inf")

    return max(owners, key=last)


async def _refuse_mixed(owners: Sequence[Owner], send: Send) -> None:
    """Answer a block naming users of several scenarios: 100, one call per scenario."""
    named = ", ".join(o.namespace for o in owners)
    details = (
        f"block_users: the users named belong to different scenarios ({named}); block or"
        " unblock each scenario's users in a call of its own"
    )
    error = InvalidParameter(
        message=f"(#100) {details}", details=details, fbtrace_id=new_fbtrace_id(_RNG)
    )
    await send(
        {
            "type": "http.response.start",
            "status": error.http_status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(error.to_envelope()).encode()})


#: Ids for late answers: new in every run, like every id Meta hands out.
_RNG = id_source()
