"""The WhatsApp channel for the runner: a scenario's conversation through the simulator.

The agent is built in-process (an ASGI app from its factory, sending to the
fake Graph API through an in-process client) or reached at a URL (sending to
the fake Graph API served on a loopback port). Everything runs on the
simulator's virtual clock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.faults import FaultProfile
from channels.whatsapp.latency import RecordedLatency
from channels.whatsapp.remote import RemoteSession
from channels.whatsapp.router import UPSTREAM_OPTIONS, GraphRouter
from channels.whatsapp.server import BackgroundServer
from channels.whatsapp.simulator import WhatsAppSimulator
from channels.whatsapp.templates import template_objects
from harness.agent_contract import build_agent
from harness.channel import AgentEnvironment, ChannelSetup, close_agent
from harness.clock import OffsetClock, VirtualClock
from harness.endpoints import Endpoints, Stamp
from harness.exceptions import ConfigError
from harness.recording import Recording
from harness.store import MemoryStore
from harness.trace import Conversation, Event, LLMExchange

__all__ = ["MEDIA_SAMPLES", "WhatsAppChannel", "agent_settings"]

#: Bytes sent when a scenario says ``send: image`` (or another media type) without data.
MEDIA_SAMPLES: dict[str, tuple[bytes, str]] = {
    "image": (b"\xff\xd8\xff\xe0 sample jpeg", "image/jpeg"),
    "audio": (b"OggS sample voice note", "audio/ogg; codecs=opus"),
    "video": (b"\x00\x00\x00\x18ftypmp42 sample", "video/mp4"),
    "document": (b"%PDF-1.4 sample", "application/pdf"),
    "sticker": (b"RIFF\x00\x00\x00\x00WEBPVP8 sample", "image/webp"),
}


def agent_settings(config: SimulatorConfig, graph_url: str) -> dict[str, str]:
    """The settings an agent needs to talk to this simulator, named like environment variables."""
    return {
        "WHATSAPP_GRAPH_URL": graph_url,
        "WHATSAPP_API_VERSION": config.api_version,
        "WHATSAPP_ACCESS_TOKEN": config.access_token,
        "WHATSAPP_PHONE_NUMBER_ID": config.phone_number_id,
        "WHATSAPP_APP_SECRET": config.app_secret,
        "WHATSAPP_VERIFY_TOKEN": config.verify_token,
    }


class WhatsAppChannel:
    """One scenario's conversation through the WhatsApp simulator."""

    name = "whatsapp"

    def __init__(self, setup: ChannelSetup) -> None:
        if (setup.agent_factory is None) == (setup.target_url is None):
            raise ConfigError("the WhatsApp channel needs an agent factory or a target URL")
        self.setup = setup
        options = dict(setup.options)
        # Where the model endpoint sends what it records: not the simulator's business.
        self._upstreams = {name: options.pop(name) for name in UPSTREAM_OPTIONS if name in options}
        self._side_effects = tuple(options.pop("side_effect_tools", ()))  # for the OTLP receiver
        self._endpoints: Endpoints | None = None
        self._graph_url: str | None = options.pop("graph_url", None)
        self._serve_graph = bool(options.pop("serve_graph", False))
        advertised = options.pop("graph_advertise", None)
        options.pop("graph_routes", None)  # the run's router keeps the book
        if options.get("templates") is not None:  # a file's path, or Meta's objects
            options["templates"] = template_objects(options["templates"])
        self._server: BackgroundServer | None = None
        config = SimulatorConfig(**options)
        if self._graph_url:
            config = config.model_copy(update={"public_url": advertised or self._graph_url})
        self.config = config
        faults = self._profile(setup.faults)
        if setup.target_url is not None and faults.clock_skew:
            raise ConfigError(_REMOTE_SKEW)
        store = setup.store or MemoryStore()
        self.store = store.with_namespace(setup.namespace) if setup.namespace else store
        # An agent in another process runs on real time and reads the webhook
        # timestamps, so its conversation starts now; in-process, at a fixed instant.
        start = setup.start
        if start is None and setup.target_url:
            start = datetime.now(UTC).replace(microsecond=0)
        # In-process, an agent that sleeps in real time (its own debounce, say) is waited
        # for; an agent at a URL is watched in real time anyway.
        self.clock = VirtualClock(
            start,
            watch_real_timers=setup.target_url is None,
            real_work_limit=setup.real_work_limit,
        )
        router = setup.shared if isinstance(setup.shared, GraphRouter) else None
        self._router = router
        self.sim = WhatsAppSimulator(
            config,
            clock=self.clock,
            store=self.store,
            faults=faults,
            seed=setup.seed,
            run_id=setup.namespace,
            media=router.media if router is not None else None,
            sink=self._saw,
        )
        self._remote: RemoteSession | None = None
        if setup.target_url is not None:
            self._remote = RemoteSession(
                self.sim,
                self.clock,
                setup.target_url,
                setup.namespace or f"scenario-{id(self):x}",
                setup.store,
                start=setup.start,
            )
        #: The clock an in-process agent sees: the channel's, skewed as the faults say.
        self._agent_clock = OffsetClock(self.clock, self._skew(faults))
        #: Which of the agent's own calls its recorders report (in-process agents).
        self._observed: set[str] | None = None
        self._client: httpx.AsyncClient | None = None
        self._app: Any = None
        self._names: dict[str, str] = {}
        for user in setup.users:
            added = self.sim.add_user(
                user.wa_id, user.name, user_id=user.bsuid, on_whatsapp=user.on_whatsapp
            )
            self._names[user.name] = added.key

    async def start(self) -> None:
        """Build the in-process agent (or connect to the remote one)."""
        if self._remote is not None:
            remote = self._remote
            if self._router is not None:
                users = [key for u in self.sim.users for key in (u.wa_id, u.user_id) if key]
                self._router.attach(
                    remote.scope,
                    remote.graph_app(),
                    self.clock,
                    users,
                    recording=self.setup.recording or Recording(),
                    sink=self.sim.record,
                    events=self.sim.events,
                    blocklist=self.sim.blocklist,
                    placed=remote.reported,
                )
                router = self._router
                self.sim.on_inbound = lambda wamid: router.message_sent(remote.scope, wamid)
                await router.claim(remote.scope, users)
            elif self._serve_graph:
                url = httpx.URL(self.config.public_url)
                self._endpoints = Endpoints.for_recording(
                    self.setup.recording or Recording(),
                    self.sim.record,
                    clock=Stamp(self.clock),
                    trace=self.sim.events,
                    placed=remote.reported,
                    derive_tools=True,
                    side_effects=self._side_effects,
                    **self._upstreams,
                )
                app = self._endpoints.around(remote.graph_app())
                self._server = BackgroundServer(app, url.host, url.port or 80)
                await self._server.start()
            await remote.start()
            return
        assert self.setup.agent_factory is not None  # checked in __init__
        if self.setup.recorded_calls:  # a chat recorded live: its Graph API took its time
            latency = RecordedLatency(
                self.sim.graph_transport(), self.setup.recorded_calls, self.sim.clock
            )
            self._client = httpx.AsyncClient(transport=latency, base_url=self.config.public_url)
        else:
            self._client = self.sim.graph_client()
        env = AgentEnvironment(
            channel=self.name,
            settings={
                **agent_settings(self.config, self.config.public_url),
                **self.setup.agent_settings,
            },
            clock=self._agent_clock,
            store=self.store.with_namespace("agent"),
            http_client=self._client,
            sink=self.sim.record,
            recording=self.setup.recording,
        )
        self._observed = env.observed
        self._app = build_agent(self.setup.agent_factory, env)
        self.sim.connect(self._app)

    def _user(self, user: str) -> str:
        """A scenario's user, by name (or by wa_id or BSUID)."""
        return self._names.get(user) or self.sim.user(user).key

    async def say(self, user: str, texts: Sequence[str], *, gap: float = 1.0) -> None:
        """The user types one message or a burst."""
        await self.sim.say(self._user(user), texts[0] if len(texts) == 1 else list(texts), gap=gap)

    async def tap(self, user: str, choice: str) -> None:
        """The user taps a button or list row of the last interactive message."""
        await self.sim.tap(self._user(user), choice)

    async def send(
        self, user: str, message: Mapping[str, Any], *, data: bytes | None = None
    ) -> None:
        """The user sends any message type; media without bytes gets a small sample.

        The simulator completes and checks the message as Meta would pass it
        on (:meth:`~channels.whatsapp.composing.UserMessages.compose`).
        """
        kind = str(message.get("type", ""))
        media = message.get(kind)
        if kind in MEDIA_SAMPLES and (
            data is not None or not isinstance(media, Mapping) or "id" not in media
        ):
            sample, mime = MEDIA_SAMPLES[kind]
            extra = dict(media) if isinstance(media, Mapping) else {}
            extra.setdefault("mime_type", mime)
            extra["id"] = self.sim.media.add(
                sample if data is None else data, str(extra["mime_type"])
            )
            message = {**message, kind: extra}
        await self.sim.receive(self._user(user), message)

    async def send_recorded(
        self,
        user: str,
        message: Mapping[str, Any],
        envelope: Mapping[str, Any],
        *,
        message_id: str,
        data: bytes | None = None,
        ahead: timedelta = timedelta(0),
    ) -> None:
        """A recorded message again, as Meta sent it: same item, same contacts.

        Its timestamp is now, ``ahead`` of the simulator's clock where Meta's had moved ahead.
        """
        item = dict(message)
        kind = str(item.get("type", ""))
        media = item.get(kind)
        if data is not None and kind in MEDIA_SAMPLES and isinstance(media, Mapping):
            mime = str(media.get("mime_type") or MEDIA_SAMPLES[kind][1])
            item[kind] = {**media, "id": self.sim.media.add(data, mime)}
        await self.sim.receive_recorded(
            self._user(user), item, envelope, wamid=message_id, ahead=ahead
        )

    async def redeliver(self, user: str, index: int | None = None) -> None:
        """Meta delivers one of the user's messages again, byte for byte."""
        key = self._user(user)
        if index is None:
            await self.sim.redeliver(user=key)
            return
        sent = [m.wamid for m in self.sim.conversation().inbound(key)]
        if not 1 <= index <= len(sent):
            raise ConfigError(
                f"user {user} has sent {len(sent)} messages; can't redeliver #{index}"
            )
        await self.sim.redeliver(sent[index - 1])

    def _profile(self, spec: object) -> FaultProfile:
        profile = FaultProfile.parse(_fault_spec(spec))
        return profile.model_copy(update={"seed": self.setup.seed})

    def _skew(self, faults: FaultProfile) -> timedelta:
        return self.setup.agent_offset + timedelta(seconds=faults.clock_skew)

    async def set_faults(self, spec: str | Mapping[str, Any] | None) -> None:
        """The channel's faults from now on: a preset name, a mapping of settings, or none.

        ``clock_skew`` moves the in-process agent's clock against the channel's.
        """
        profile = self._profile(spec)
        if self._remote is not None and profile.clock_skew:
            raise ConfigError(_REMOTE_SKEW)
        self.sim.set_faults(profile)
        self._agent_clock.offset = self._skew(profile)

    async def wait(self, seconds: float) -> None:
        """Virtual time passes (for an agent at a URL: its scenario's time jumps ahead)."""
        if self._remote is not None:
            await self._remote.jump(seconds, reason=f"wait {seconds:g}s")
            return
        await self.sim.advance(seconds, reason=f"wait {seconds:g}s")

    async def settle(self) -> None:
        """Run until the agent is quiet (at a URL: until what was sent has reached it)."""
        if self._remote is not None:
            await self._remote.delivered(self.config.webhook_timeout * 2)
            self.sim.raise_undelivered()
            return
        await self.sim.settle()

    @property
    def real_time(self) -> bool:
        """True for an agent at a URL, which lives on real time."""
        return self._remote is not None

    async def wait_until(self, holds: Callable[[Conversation], bool], within: float) -> bool:
        """Wait until ``holds(trace)`` is true (in-process: whether it is, once settled)."""
        if self._remote is not None:
            return await self._remote.wait_until(holds, within)
        return holds(self.conversation())

    async def quiet(self, window: float, within: float) -> bool:
        """Wait until the agent has gone quiet (in-process it already has, once settled)."""
        if self._remote is not None:
            return await self._remote.quiet(window, within)
        return True

    def _saw(self, event: Event) -> None:
        if self._remote is not None:
            self._remote.saw(event)
        recording = self.setup.recording
        if recording is not None and recording.on_event is not None:
            recording.on_event(event)

    async def run_until(self, when: datetime) -> None:
        """Move virtual time to ``when``, running what falls due, without settling."""
        await self.sim.run_until(when)

    def media(self, wamid: str) -> tuple[bytes, str] | None:
        """The bytes and MIME type of the media a user's message carried, if any."""
        return self.sim.inbound_media(wamid)

    def now(self) -> datetime:
        """The simulator's virtual time."""
        return self.sim.clock.now()

    def conversation(self, *, finished: bool = False) -> Conversation:
        """The trace so far, saying which of the agent's own calls could be seen.

        ``finished``: an agent at a URL may have reported calls late (spans
        batched past its reply); they are put back where their work happened.
        """
        if self._remote is not None:
            reported = self._remote.observed
            observed: tuple[str, ...] | None = reported
            seen = self._router.observed if self._router is not None else set()
            if self._endpoints is not None:
                seen = self._endpoints.observed()
            if "tool" not in seen and _model_answered(self.sim.events):
                seen = {*seen, "tool"}  # its tool results reach its model through the harness
            if not seen <= set(reported):
                # The agent's SDK or its spans reached the model endpoint or the OTLP receiver.
                observed = tuple(sorted({*reported, *seen}))
        else:
            observed = None if self._observed is None else tuple(sorted(self._observed))
        conversation = self.sim.conversation(channel=self.name, observed=observed)
        if finished and self._remote is not None:
            events = self._remote.in_order_of_work(conversation.events)
            if events is not conversation.events:
                conversation = Conversation.from_events(
                    events,
                    id=conversation.id,
                    scenario=conversation.scenario,
                    channel=conversation.channel,
                    participants=conversation.participants,
                    observed=conversation.observed,
                )
        return conversation

    async def close(self) -> None:
        """Stop the in-process agent's own work, then close the connections."""
        if self._remote is not None:
            await self._remote.close()
            if self._router is not None:
                self._router.detach(self._remote.scope)
        await close_agent(self._app)
        await self.sim.aclose()
        if self._server is not None:
            await self._server.stop()
        if self._endpoints is not None:
            await self._endpoints.aclose()
        if self._client is not None:
            await self._client.aclose()


_REMOTE_SKEW = "clock_skew: an agent at a URL keeps its own clock; skew it there"


def _model_answered(events: Sequence[Event]) -> bool:
    """True when the agent's model answered calls through the harness in this trace.

    Such an agent is seen running tools: each result it gives back to its
    model is a tool call in the trace (the model endpoint's ``derive_tools``).
    A conversation where it gave back none called none, as far as its model
    knows, and a check about tools can say so.
    """
    return any(isinstance(e, LLMExchange) and e.error is None for e in events)


def _fault_spec(faults: object) -> Any:
    if faults is None or isinstance(faults, str):
        return faults
    if isinstance(faults, Mapping):
        return dict(faults)
    raise ConfigError(f"a fault profile is a preset name or a mapping, not {faults!r}")
