"""The contract between the runner and a channel: one conversation, played step by step.

The runner knows no channel by name. It asks the installed channel plugins
(:mod:`harness.plugins`) for a factory, hands it a :class:`ChannelSetup`, and
plays a scenario through the :class:`ChannelSession` it gets back. Every
session reports what happened as trace events, so invariants and reports
work the same whichever channel carried the conversation.

An in-process agent is built by calling its factory (named by import path)
with an :class:`AgentEnvironment`: the channel's credentials as settings
named like environment variables, and the seams (clock, HTTP client, store,
event sink) the agent should use.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

import httpx
from pydantic import JsonValue

from harness.clock import DEFAULT_REAL_WORK_LIMIT, Clock, OffsetClock
from harness.recording import Recording
from harness.results import StraySend
from harness.store import Store
from harness.trace import Conversation, Event

__all__ = [
    "AgentEnvironment",
    "AgentFactory",
    "ChannelSession",
    "ChannelSetup",
    "RecordedCall",
    "RunShared",
    "SettingsCheck",
    "UserSpec",
    "agent_clock",
    "close_agent",
    "settings_check",
]


@dataclass(frozen=True, slots=True)
class UserSpec:
    """A scripted user: a display name and a WhatsApp identity (wa_id, BSUID or both).

    ``on_whatsapp`` False: a number with no WhatsApp account, which can't be written to.
    """

    name: str
    wa_id: str | None = None
    bsuid: str | None = None
    on_whatsapp: bool = True

    @property
    def key(self) -> str:
        """How the trace names this user: the wa_id, else the BSUID, else the name."""
        return self.wa_id or self.bsuid or self.name


@dataclass(frozen=True)
class AgentEnvironment:
    """What the harness gives an in-process agent when it builds one.

    ``settings`` uses the names an agent reads from its environment
    (``WHATSAPP_APP_SECRET``, ``WHATSAPP_GRAPH_URL`` ... plus the scenario's
    own ``agent:`` settings), so the same agent configuration serves a
    staging deployment and an in-process run. ``http_client`` reaches the
    channel's fake API in-process; ``sink`` takes the agent's own trace
    events (tool calls, model calls) so they land in the conversation.
    """

    channel: str
    settings: Mapping[str, str]
    clock: Clock
    store: Store
    http_client: httpx.AsyncClient | None = None
    sink: Callable[[Event], None] | None = None
    recording: Recording | None = None
    #: Which of the agent's own calls reach ``sink`` (``llm``, ``tool``): the recorders
    #: the agent makes with :func:`harness.recording.wrap` and ``wrap_tools`` add theirs.
    observed: set[str] = field(default_factory=set)


#: Builds an agent under test: returns an ASGI app, or an object implementing
#: :class:`~harness.agent.DirectAgent` (or an app whose ``state.agent`` does). It is called
#: once per scenario, on that scenario's event loop, and must build a fresh agent (and
#: everything it holds) every time: :mod:`harness.agent_contract` checks it.
AgentFactory = Callable[[AgentEnvironment], Any]

#: What a factory may also carry, as ``factory.check_settings``: given a scenario's ``agent:``
#: settings (as the agent receives them, strings), it answers the problem with each setting
#: it does not know or can't use, by name (``{"regressions": "unknown regression 'x'"}``),
#: and nothing when all are fine. The runner asks it before the run, so a typo in a
#: scenario is an error naming its line instead of a setting silently ignored.
SettingsCheck = Callable[[Mapping[str, str]], Mapping[str, str]]


def settings_check(factory: AgentFactory | None) -> SettingsCheck | None:
    """The factory's ``check_settings`` (see :data:`SettingsCheck`), when it has one."""
    check = getattr(factory, "check_settings", None)
    return check if callable(check) else None


@dataclass(frozen=True)
class RecordedCall:
    """One call the agent made to the channel's API in a recorded chat, and how long it took."""

    method: str
    path: str
    latency_ms: float


@dataclass(frozen=True)
class ChannelSetup:
    """Everything a channel needs to carry one scenario's conversation.

    Exactly one of ``agent_factory`` (in-process) and ``target_url`` (an
    agent in another process) is set. ``options`` holds the channel's own
    settings from the command line (for WhatsApp: app secret, tokens, ids).
    ``recording`` is how the agent's seams record or replay; ``start`` is
    when the conversation's virtual clock starts (a fixed instant by default);
    ``agent_offset`` skews the clock an in-process agent sees against the
    channel's (``agent-offset=-5m``). ``namespace`` names this scenario of
    this run: its store keys go under it, and the ids the channel makes up
    follow from ``seed`` and it, so no two runs share an id.
    """

    users: Sequence[UserSpec]
    seed: int = 0
    faults: str | Mapping[str, JsonValue] | None = None
    agent_factory: AgentFactory | None = None
    target_url: str | None = None
    agent_settings: Mapping[str, str] = field(default_factory=dict)
    store: Store | None = None
    namespace: str = ""
    options: Mapping[str, Any] = field(default_factory=dict)
    recording: Recording | None = None
    start: datetime | None = None
    agent_offset: timedelta = timedelta(0)
    #: What the channel's run context (:attr:`ChannelPlugin.run_context`) shares between
    #: the scenarios of one run, such as one fake API server for an agent at a URL.
    shared: Any = None
    #: Real seconds the agent's real work (a model call ...) may take before the scenario
    #: ends with an error naming it (the virtual clock's ``real_work_limit``).
    real_work_limit: float = DEFAULT_REAL_WORK_LIMIT
    #: In a replay of a chat recorded live: the agent's calls to the channel's API, in the
    #: order made, so that an in-process agent's calls take as long as they did live.
    recorded_calls: Sequence[RecordedCall] = ()


class RunShared(Protocol):
    """What a channel keeps for a whole run, beyond any one scenario."""

    def late(self, namespace: str) -> list[Event]:
        """What the agent did for the scenario ``namespace`` after that scenario had ended."""
        ...

    def strays(self, namespace: str) -> list[StraySend]:
        """What the agent sent, while scenario ``namespace`` ran, to numbers none of its users has.

        Listed beside the scenario's verdict; the runner asks a run context that has it.
        """
        ...


class ChannelSession(Protocol):
    """One conversation through one channel, driven step by step on a virtual clock."""

    name: str

    @property
    def clock(self) -> Clock:
        """The conversation's clock (the runner makes it the one real work holds)."""
        ...

    async def start(self) -> None:
        """Build or connect the agent; nothing is sent yet."""
        ...

    async def say(self, user: str, texts: Sequence[str], *, gap: float = 1.0) -> None:
        """The user types one message, or a burst ``gap`` seconds apart."""
        ...

    async def tap(self, user: str, choice: str) -> None:
        """The user taps a button or list row (by id or title) of the last choice offered."""
        ...

    async def send(
        self, user: str, message: Mapping[str, Any], *, data: bytes | None = None
    ) -> None:
        """The user sends any message type (WhatsApp's message object, without ids).

        ``data`` is the file behind a media message (a sample is made up without it).
        """
        ...

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
        """Deliver a recorded message again as it was: ``message`` and ``envelope`` verbatim.

        Only what must change does: the message's id (``message_id``, the
        replay's name for it), its timestamp (now, plus ``ahead`` where the
        recorded sender's clock had moved ahead), and a media id for ``data``.
        A channel that can't send verbatim sends the message as the user would.
        """
        ...

    async def redeliver(self, user: str, index: int | None = None) -> None:
        """The channel delivers one of the user's messages again (the last by default)."""
        ...

    async def wait(self, seconds: float) -> None:
        """Virtual time passes; whatever falls due meanwhile happens."""
        ...

    async def settle(self) -> None:
        """Run until the agent has finished reacting (in-process), or got what was sent."""
        ...

    @property
    def real_time(self) -> bool:
        """True when the agent lives on real time (another process): expectations must wait."""
        ...

    async def wait_until(self, holds: Callable[[Conversation], bool], within: float) -> bool:
        """Wait until ``holds(trace)`` is true or ``within`` real seconds pass; the last answer."""
        ...

    async def quiet(self, window: float, within: float) -> bool:
        """Wait until the agent has done nothing for ``window`` real seconds (at most ``within``).

        False when the agent was still busy after ``within`` seconds.
        """
        ...

    async def run_until(self, when: datetime) -> None:
        """Move virtual time to ``when``, running what falls due on the way, without settling.

        A replay uses it to deliver each recorded message at its recorded
        instant, so that bursts and the agent's timers keep their timing.
        """
        ...

    def now(self) -> datetime:
        """The conversation's current (virtual) time."""
        ...

    def conversation(self, *, finished: bool = False) -> Conversation:
        """The trace so far, in the order things reached the harness.

        ``finished`` asks for the record of the whole conversation, once played:
        a channel that learns of the agent's work late (spans exported after the
        reply) puts it back where it happened. While a scenario plays, the
        order of arrival is kept, since readers count events from a point.
        """
        ...

    async def close(self) -> None:
        """Release the agent and the connections."""
        ...


def agent_clock(clock: Clock, offset: timedelta) -> Clock:
    """The clock an in-process agent sees: the channel's, skewed by ``offset`` if any."""
    return clock if not offset else OffsetClock(clock, offset)


async def close_agent(built: object) -> None:
    """Stop an in-process agent: its ``aclose()``, or that of the agent behind ``app.state``."""
    for candidate in (built, getattr(getattr(built, "state", None), "agent", None)):
        close = getattr(candidate, "aclose", None)
        if callable(close):
            result = close()
            if inspect.isawaitable(result):
                await result
            return
