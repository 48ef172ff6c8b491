"""The WhatsApp channel for the runner: a scenario's conversation through the simulator.

The agent is built in-process (an ASGI app from its factory, sending to the
fake Graph API through an in-process client) or reached at a URL (sending to
the fake Graph API served on a loopback port). Everything runs on the
simulator's virtual clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import httpx

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.faults import FaultProfile
from channels.whatsapp.server import BackgroundServer
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.channel import AgentEnvironment, ChannelSetup, agent_clock, close_agent
from harness.clock import VirtualClock
from harness.exceptions import ConfigError
from harness.store import MemoryStore
from harness.trace import Conversation

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
        self._graph_url: str | None = options.pop("graph_url", None)
        self._serve_graph = bool(options.pop("serve_graph", False))
        self._server: BackgroundServer | None = None
        config = SimulatorConfig(**options)
        if self._graph_url:
            config = config.model_copy(update={"public_url": self._graph_url})
        self.config = config
        faults = FaultProfile.parse(_fault_spec(setup.faults))
        faults = faults.model_copy(update={"seed": setup.seed})
        store = setup.store or MemoryStore()
        self.store = store.with_namespace(setup.namespace) if setup.namespace else store
        # An agent in another process runs on real time and reads the webhook
        # timestamps, so its conversation starts now; in-process, at a fixed instant.
        start = setup.start
        if start is None and setup.target_url:
            start = datetime.now(UTC).replace(microsecond=0)
        self.clock = VirtualClock(start)
        self.sim = WhatsAppSimulator(
            config, clock=self.clock, store=self.store, faults=faults, seed=setup.seed
        )
        self._client: httpx.AsyncClient | None = None
        self._app: Any = None
        self._names: dict[str, str] = {}
        for user in setup.users:
            added = self.sim.add_user(user.wa_id, user.name, user_id=user.bsuid)
            self._names[user.name] = added.key

    async def start(self) -> None:
        """Build the in-process agent (or connect to the remote one)."""
        if self.setup.target_url is not None:
            if self._serve_graph:
                url = httpx.URL(self.config.public_url)
                self._server = BackgroundServer(self.sim.graph_app, url.host, url.port or 80)
                await self._server.start()
            self.sim.connect(self.setup.target_url)
            return
        assert self.setup.agent_factory is not None  # checked in __init__
        self._client = self.sim.graph_client()
        env = AgentEnvironment(
            channel=self.name,
            settings={
                **agent_settings(self.config, self.config.public_url),
                **self.setup.agent_settings,
            },
            clock=agent_clock(self.sim.clock, self.setup.agent_offset),
            store=self.store.with_namespace("agent"),
            http_client=self._client,
            sink=self.sim.record,
            recording=self.setup.recording,
        )
        self._app = self.setup.agent_factory(env)
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
        """The user sends any message type; media without bytes gets a small sample."""
        kind = str(message.get("type", ""))
        media = message.get(kind)
        if kind in MEDIA_SAMPLES and (
            data is not None or not isinstance(media, Mapping) or "id" not in media
        ):
            sample, mime = MEDIA_SAMPLES[kind]
            data = sample if data is None else data
            extra = dict(media) if isinstance(media, Mapping) else {}
            await self.sim.send_media(
                self._user(user),
                kind,
                data,
                mime_type=str(extra.get("mime_type", mime)),
                caption=extra.get("caption"),
                filename=extra.get("filename"),
            )
            return
        await self.sim.receive(self._user(user), message)

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

    async def wait(self, seconds: float) -> None:
        """Virtual time passes."""
        await self.sim.advance(seconds, reason=f"wait {seconds:g}s")

    async def settle(self) -> None:
        """Run until the agent is quiet."""
        await self.sim.settle()

    async def run_until(self, when: datetime) -> None:
        """Move virtual time to ``when``, running what falls due, without settling."""
        await self.sim.run_until(when)

    def media(self, wamid: str) -> tuple[bytes, str] | None:
        """The bytes and MIME type of the media a user's message carried, if any."""
        return self.sim.inbound_media(wamid)

    def now(self) -> datetime:
        """The simulator's virtual time."""
        return self.sim.clock.now()

    def conversation(self) -> Conversation:
        """The trace so far."""
        return self.sim.conversation(channel=self.name)

    async def close(self) -> None:
        """Stop the in-process agent's own work, then close the connections."""
        await close_agent(self._app)
        await self.sim.aclose()
        if self._server is not None:
            await self._server.stop()
        if self._client is not None:
            await self._client.aclose()


def _fault_spec(faults: object) -> Any:
    if faults is None or isinstance(faults, str):
        return faults
    if isinstance(faults, Mapping):
        return dict(faults)
    raise ConfigError(f"a fault profile is a preset name or a mapping, not {faults!r}")
