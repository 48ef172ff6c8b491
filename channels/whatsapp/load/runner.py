"""A load run: many users at once against an agent's webhook, on the real clock.

:func:`run_load` serves the fake Graph API the agent sends to, starts one
task per user, and lets them play their templates until the run's time is
up or its message cap is reached (:class:`Gate` hands out every message, at
the plan's rate). It then waits for the turns still open (each at most the
reply timeout) and for the statuses already scheduled to go out, and returns
the tally. Nothing is kept per message but its latency, so memory grows with
the users, not with the run's length.

The Graph API applies Meta's rules on the real clock
(:class:`~channels.whatsapp.load.rules.MetaRules`): each user message opens
its user's window when it is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.graph import create_graph_app
from channels.whatsapp.ids import id_source
from channels.whatsapp.load.inbox import Inbox
from channels.whatsapp.load.plan import LoadPlan
from channels.whatsapp.load.rules import MetaRules
from channels.whatsapp.load.stats import LoadStats
from channels.whatsapp.load.statuses import StatusSender
from channels.whatsapp.load.users import LoadUser
from channels.whatsapp.load.webhooks import WebhookPoster
from channels.whatsapp.media import MediaStore
from channels.whatsapp.server import BackgroundServer
from channels.whatsapp.templates import TemplateRegistry
from harness.clock import SystemClock
from harness.exceptions import ConfigError

__all__ = ["Gate", "LoadResult", "check_target", "run_load"]

# How often the progress callback is called, in seconds.
_TICK = 0.5
# The most status lanes (tasks POSTing statuses one at a time) a run has.
_STATUS_LANES = 32


class Gate:
    """Hands out the run's messages: at most ``rate`` a second, ``limit`` in all, until ``end``.

    Each message gets the next free slot on a schedule ``1/rate`` apart; a
    user waits for its slot. Once the cap is reached, or the next slot falls
    after the end (or :meth:`close` was called), every user is told to stop.
    """

    def __init__(self, rate: float, limit: int, end: float) -> None:
        self.step = 1.0 / rate
        self.limit = limit
        self.end = end
        self.given = 0
        self._next = 0.0
        self.closed = False
        self._closing: asyncio.Event | None = None

    def close(self) -> None:
        """Give no more messages (the run is being stopped early)."""
        self.closed = True
        if self._closing is not None:
            self._closing.set()

    async def wait_closed(self) -> None:
        """Return once :meth:`close` was called."""
        if self.closed:
            return
        if self._closing is None:
            self._closing = asyncio.Event()
        await self._closing.wait()

    async def pause(self, seconds: float) -> None:
        """Sleep ``seconds`` (a user thinking), but no later than the run's end or its close."""
        loop = asyncio.get_running_loop()
        seconds = min(seconds, self.end - loop.time())
        if seconds <= 0 or self.closed:
            return
        if self._closing is None:
            self._closing = asyncio.Event()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._closing.wait()

    async def take(self) -> bool:
        """Wait for the next message's slot; ``False`` once the run is over."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        slot = max(now, self._next)
        # A slot a rounding error short of the end is at the end: out.
        if self.closed or self.given >= self.limit or slot >= self.end - 1e-9:
            return False
        self._next = slot + self.step
        self.given += 1
        if slot > now:
            await asyncio.sleep(slot - now)
        return not self.closed


@dataclass(frozen=True)
class LoadResult:
    """What a load run measured, with the plan it followed."""

    plan: LoadPlan
    stats: LoadStats
    elapsed: float
    graph_url: str
    stopped_early: bool = False
    #: The simulator settings the run's Graph API followed (limits, window, statuses).
    config: SimulatorConfig = field(default_factory=SimulatorConfig)

    @property
    def failed(self) -> bool:
        """Whether a reply was lost or duplicated, or a webhook or send failed."""
        return bool(self.stats.lost or self.stats.duplicated or self.stats.errors)

    def summary(self) -> dict[str, Any]:
        """The run's figures as plain data (see :meth:`LoadStats.summary`)."""
        return self.stats.summary(self.elapsed)


async def _play(
    user: LoadUser, gate: Gate, poster: WebhookPoster, plan: LoadPlan, rules: MetaRules
) -> None:
    loop = asyncio.get_running_loop()
    stats = user.stats
    while True:
        for turn in user.template.turns:
            opened = False
            for position, text in enumerate(turn.texts):
                if position and turn.gap:
                    await gate.pause(turn.gap)
                if not await gate.take():
                    if opened:
                        await user.answered(plan.reply_timeout)
                    return
                if not opened:
                    user.start_turn()
                    opened = True
                choice = user.choice(text) if turn.kind == "tap" else None
                at = loop.time()
                user.posting(at)
                stats.message_sent(at)
                await rules.opened(user.wa_id)
                # Built for the call alone: no name holds it while the user waits and thinks.
                failure = await poster.post(poster.body(user.wa_id, text, choice), user)
                if failure is None:
                    stats.webhook_answered(loop.time() - user.last_post)
                else:
                    stats.webhook_failed(loop.time(), failure)
            await user.answered(plan.reply_timeout)
            if plan.think:
                await gate.pause(plan.think)


async def check_target(url: str, config: SimulatorConfig) -> None:
    """Fail with one line (:class:`ConfigError`) if nothing answers at ``url``.

    Any HTTP answer will do: it is the verification handshake, which an agent
    may refuse; what matters is that something listens.
    """
    async with aiohttp.ClientSession() as session:
        await _reachable(session, url, config)


async def _reachable(session: aiohttp.ClientSession, url: str, config: SimulatorConfig) -> None:
    query = {"hub.mode": "subscribe", "hub.verify_token": config.verify_token, "hub.challenge": "1"}
    try:
        async with session.get(url, params=query, timeout=aiohttp.ClientTimeout(total=10)):
            pass
    except (TimeoutError, aiohttp.ClientError) as exc:
        reason = str(exc) or type(exc).__name__
        raise ConfigError(f"--target-url {url}: no answer ({reason})") from None


async def run_load(
    plan: LoadPlan,
    config: SimulatorConfig,
    *,
    graph_host: str = "127.0.0.1",
    graph_port: int = 0,
    on_tick: Callable[[LoadStats, float], None] | None = None,
    on_ready: Callable[[str], None] | None = None,
    gate: Gate | None = None,
) -> LoadResult:
    """Play ``plan`` against its target; see the module. ``on_tick`` sees the tally twice a second.

    ``on_ready`` is told the fake Graph API's URL once it listens; ``gate``
    (made here if not given) is the caller's handle to stop the run early.
    """
    loop = asyncio.get_running_loop()
    stats = LoadStats(loop.time())
    users = {
        plan.wa_id(n): LoadUser(n, plan.wa_id(n), plan.template(n), stats)
        for n in range(plan.users)
    }
    rules = MetaRules(config)
    inbox = Inbox(users, stats, loop.time, rng=id_source(purpose="load sends"), rules=rules)
    clock = SystemClock()
    public_url = f"http://{graph_host}:{graph_port}"
    app = create_graph_app(
        access_tokens={config.access_token},
        phone_numbers={config.phone_number_id: config.display_phone_number},
        on_send=inbox,
        media=MediaStore(clock, public_url=public_url, rng=id_source()),
        clock=clock,
        public_url=public_url,
        on_refuse=inbox.refused,
        templates=TemplateRegistry.given(config.templates),
    )
    # The load run's Graph API reads no client address: no proxy headers to look at.
    server = BackgroundServer(app, graph_host, graph_port, proxy_headers=False)
    connector = aiohttp.TCPConnector(limit=plan.connections)
    async with aiohttp.ClientSession(connector=connector) as session:
        await _reachable(session, plan.target_url, config)
        await server.start()
        try:
            if on_ready is not None:
                on_ready(server.url)
            poster = WebhookPoster(
                session,
                plan.target_url,
                config,
                timeout=plan.webhook_timeout,
                rng=id_source(purpose="load messages"),
                connections=plan.connections,
            )
            if plan.statuses:
                lanes = min(plan.connections, _STATUS_LANES)
                inbox.statuses = StatusSender(poster, config, stats, lanes=lanes)
                inbox.statuses.start()
            start = loop.time()
            stats.start = start
            if gate is None:
                gate = Gate(plan.rate, plan.max_messages, start + plan.duration)
            else:
                gate.end = start + plan.duration
            ticker = loop.create_task(_tick(stats, start, on_tick)) if on_tick else None
            try:
                await asyncio.gather(*(_play(u, gate, poster, plan, rules) for u in users.values()))
                if inbox.statuses is not None:
                    until = _statuses_until(plan, config, gate)
                    await inbox.statuses.finish(until, stop=gate.wait_closed)
            finally:
                if inbox.statuses is not None:
                    await inbox.statuses.finish(None)
                if ticker is not None:
                    ticker.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await ticker
            elapsed = loop.time() - start
        finally:
            await server.stop()
    if on_tick is not None:
        on_tick(stats, elapsed)
    return LoadResult(plan, stats, elapsed, server.url, stopped_early=gate.closed, config=config)


def _statuses_until(plan: LoadPlan, config: SimulatorConfig, gate: Gate) -> float | None:
    """How long the end of a run waits for its last statuses: none after Ctrl-C.

    Every send is in by now, so its statuses fall due within the longest
    delay; the last of them may then take the webhook timeout.
    """
    if gate.closed:
        return None
    timing = config.statuses
    longest = max(
        (d for d in (timing.sent, timing.delivered, timing.read) if d is not None), default=0.0
    )
    return asyncio.get_running_loop().time() + longest + plan.webhook_timeout


async def _tick(
    stats: LoadStats, start: float, on_tick: Callable[[LoadStats, float], None]
) -> None:
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(_TICK)
        on_tick(stats, loop.time() - start)
