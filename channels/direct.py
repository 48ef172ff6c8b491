"""The direct channel: a scenario straight into the agent's core, with no HTTP at all.

The agent's factory is called with an :class:`~harness.channel.AgentEnvironment`
whose channel is ``direct``; what it returns must implement
:class:`~harness.agent.DirectAgent` (or be an app whose ``state.agent`` does).
Each user step becomes one ``handle_burst`` call, on a virtual clock. There
is no window, no delivery and no duplicate here: channel faults exist only
on channels that have them, which is the point of running a scenario both
ways.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from harness.agent import DirectAgent, DirectMessage, DirectReply, DirectTurn
from harness.agent_contract import build_agent
from harness.channel import AgentEnvironment, ChannelSetup, agent_clock, close_agent
from harness.clock import VirtualClock
from harness.exceptions import ConfigError, StepError
from harness.store import MemoryStore
from harness.trace import (
    ClockJump,
    Conversation,
    Event,
    InboundMessage,
    OutboundSend,
    Participant,
    ToolCall,
)

__all__ = ["DirectChannel", "find_direct_agent"]


def find_direct_agent(built: object) -> DirectAgent:
    """The :class:`DirectAgent` a factory returned, directly or as ``app.state.agent``."""
    if isinstance(built, DirectAgent):
        return built
    state = getattr(built, "state", None)
    agent = getattr(state, "agent", None)
    if isinstance(agent, DirectAgent):
        return agent
    raise ConfigError(
        f"the agent factory returned {type(built).__name__}, which offers no direct entry "
        "point (a handle_burst method, or app.state.agent with one)"
    )


class DirectChannel:
    """One scenario's conversation, straight into the agent's ``handle_burst``."""

    name = "direct"

    def __init__(self, setup: ChannelSetup) -> None:
        if setup.agent_factory is None:
            raise ConfigError("the direct channel runs agents in-process; give an agent factory")
        self.setup = setup
        self.clock = VirtualClock(
            setup.start, watch_real_timers=True, real_work_limit=setup.real_work_limit
        )
        self._observed: set[str] | None = None
        store = setup.store or MemoryStore(clock=self.clock)
        self.store = store.with_namespace(setup.namespace) if setup.namespace else store
        self.events: list[Event] = []
        self._agent: DirectAgent | None = None
        self._ids = itertools.count(1)
        self._users = {u.key: u for u in setup.users} | {u.name: u for u in setup.users}
        self._last_options: dict[str, tuple[tuple[str, str], ...]] = {}
        #: How long a user takes to read a reply before the next step.
        self.think_time = timedelta(seconds=5)

    def _record(self, event: Event) -> None:
        self.events.append(event)
        recording = self.setup.recording
        if recording is not None and recording.on_event is not None:
            recording.on_event(event)

    async def start(self) -> None:
        """Build the agent through its factory."""
        assert self.setup.agent_factory is not None  # checked in __init__
        env = AgentEnvironment(
            channel=self.name,
            settings=dict(self.setup.agent_settings),
            clock=agent_clock(self.clock, self.setup.agent_offset),
            store=self.store.with_namespace("agent"),
            http_client=None,
            sink=self._record,
            recording=self.setup.recording,
        )
        self._observed = env.observed
        self._agent = find_direct_agent(build_agent(self.setup.agent_factory, env))

    def _key(self, user: str) -> str:
        spec = self._users.get(user)
        if spec is None:
            raise ConfigError(f"no user {user!r} in this scenario")
        return spec.key

    async def say(self, user: str, texts: Sequence[str], *, gap: float = 1.0) -> None:
        """The burst reaches the agent as one call, after its gaps have passed."""
        messages = []
        for i, text in enumerate(texts):
            if i:
                await self.clock.run_until(self.clock.now() + timedelta(seconds=gap))
            messages.append(DirectMessage(text=text, at=self.clock.now()))
        await self._burst(self._key(user), messages)

    async def tap(self, user: str, choice: str) -> None:
        """The user picks one of the options the agent offered last."""
        key = self._key(user)
        for option_id, title in self._last_options.get(key, ()):
            if choice in (option_id, title):
                message = DirectMessage(type="reply", reply_id=option_id, text=title)
                await self._burst(key, [message], reply_id=option_id)
                return
        offered = ", ".join(repr(i) for i, _ in self._last_options.get(key, ())) or "none"
        raise StepError(f"no option {choice!r} among the agent's last choices ({offered})")

    async def send(
        self, user: str, message: Mapping[str, Any], *, data: bytes | None = None
    ) -> None:
        """Any other message type reaches the agent with its WhatsApp-shaped body (no file).

        A text (one that quotes another message, say) keeps its words in ``text`` too.
        """
        body = {k: v for k, v in message.items() if k != "type"}
        kind = str(message.get("type", "unknown"))
        content = message.get("text")
        text = content.get("body") if kind == "text" and isinstance(content, Mapping) else None
        direct = DirectMessage(type=kind, text=text if isinstance(text, str) else None, body=body)
        await self._burst(self._key(user), [direct])

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
        """No webhook to send verbatim (nor timestamp): the message goes in as the user sends it."""
        text = message.get("text")
        if message.get("type") == "text" and isinstance(text, Mapping):
            await self.say(user, [str(text.get("body", ""))])
            return
        await self.send(user, message, data=data)

    async def redeliver(self, user: str, index: int | None = None) -> None:
        """A channel fault; the direct channel has no deliveries to repeat, so nothing happens."""

    async def wait(self, seconds: float) -> None:
        """Virtual time passes; the agent's own timers fire on the way."""
        before = self.clock.now()
        await self.clock.run_until(before + timedelta(seconds=seconds), reason="wait")
        self._record(ClockJump(at=self.clock.now(), previous=before, reason=f"wait {seconds:g}s"))

    #: The agent runs in-process on the virtual clock: every step settles it.
    real_time = False

    async def wait_until(self, holds: Callable[[Conversation], bool], within: float) -> bool:
        """In-process the agent has already settled: whether ``holds`` holds now."""
        return holds(self.conversation())

    async def quiet(self, window: float, within: float) -> bool:
        """In-process the agent has already settled: it is quiet."""
        return True

    async def settle(self) -> None:
        """Let the agent's pending work run, then let the user take a few seconds to read.

        Nothing else takes time here, and without it every message of a
        conversation would carry the same instant, as if typed in one burst.
        """
        await self.clock.run_until(self.clock.now())
        await self.clock.run_until(self.clock.now() + self.think_time, reason="reading")

    async def run_until(self, when: datetime) -> None:
        """Move virtual time to ``when``, running the agent's timers on the way."""
        await self.clock.run_until(max(when, self.clock.now()), reason="replay")

    def now(self) -> datetime:
        """The channel's virtual time."""
        return self.clock.now()

    def conversation(self, *, finished: bool = False) -> Conversation:
        """The trace so far (in-process: everything arrives as it happens, ``finished`` or not)."""
        participants = tuple(
            Participant(id=u.key, name=u.name, wa_id=u.wa_id, user_id=u.bsuid)
            for u in self.setup.users
        )
        observed = None if self._observed is None else tuple(sorted(self._observed))
        return Conversation.from_events(
            self.events, channel=self.name, participants=participants, observed=observed
        )

    async def close(self) -> None:
        """Stop the agent's own pending work (timers, background tasks)."""
        await close_agent(self._agent)

    async def _burst(
        self, user: str, messages: list[DirectMessage], *, reply_id: str | None = None
    ) -> None:
        if self._agent is None:
            raise ConfigError("the direct channel was not started")
        for message in messages:
            self._record(
                InboundMessage(
                    at=message.at or self.clock.now(),
                    user=user,
                    wamid=f"direct.{next(self._ids)}",
                    type="interactive" if message.type == "reply" else message.type,
                    text=message.text,
                    reply_id=message.reply_id,
                    body=dict(message.body),
                )
            )
        marker = len(self.events)
        turn: DirectTurn = await self._agent.handle_burst(user, messages, now=self.clock.now())
        seen_tools = any(isinstance(e, ToolCall) for e in self.events[marker:])
        if not seen_tools:
            for call in turn.tool_calls:
                self._record(call.model_copy(update={"user": user}))
        for reply in turn.replies:
            self._record(self._send_event(user, reply))
            if reply.options:
                self._last_options[user] = tuple((o.id, o.title) for o in reply.options)

    def _send_event(self, user: str, reply: DirectReply) -> OutboundSend:
        request: dict[str, Any] = {"text": reply.text}
        if reply.options:
            request["options"] = [o.model_dump(exclude_none=True) for o in reply.options]
        if reply.template:
            request["template"] = reply.template
        return OutboundSend(
            at=self.clock.now(),
            user=user,
            type=reply.type,
            text=reply.text,
            request=request,
            wamid=f"direct.out.{next(self._ids)}",
        )
