"""How an agent in another process joins a harness run: its calls reported, its time, its state.

An agent at a URL is a black box to the harness unless it says more. With
one setting, ``HARNESS_STORE_URL`` (the Redis the run uses, e.g.
``redis://127.0.0.1:6379/0``), an agent built with :class:`HarnessLink`:

- **reports** its model and tool calls: each is appended, as a trace event,
  to a log the run reads for the scenario it belongs to, so invariants and
  expectations about tools see them (a run against an agent that reports
  nothing refuses to check tools rather than pass blindly);
- **follows the harness's clock**: the run publishes, per scenario, how far
  its virtual time is from real time, and :attr:`HarnessLink.clock` reads it,
  so ``wait: 25h`` and clock skew reach the agent (a sleeping follow-up wakes);
- **says when it is working** on a scenario (:meth:`HarnessLink.working`), so
  the run knows when it has gone quiet instead of guessing from silence;
- **keeps each scenario's state apart**: every webhook the run sends carries
  ``X-Harness-Scenario``; :meth:`HarnessLink.wrap_app` reads it and
  :meth:`HarnessLink.scoped` prefixes the agent's store keys with it, so
  scenarios played at the same time never share bookings or counters.

The agent announces all of this when it starts (:meth:`HarnessLink.announce`),
so the run knows what it can observe. Outside a harness run nothing changes:
without the setting :meth:`HarnessLink.from_settings` returns None, and
webhooks without the header run unscoped, on real time.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta
from typing import Final

from pydantic import AwareDatetime, BaseModel, ConfigDict
from starlette.types import ASGIApp, Receive, Scope, Send

from harness.acting import current_user
from harness.clock import SystemClock
from harness.exceptions import ConfigError
from harness.recording import Recording
from harness.store import Store, open_store
from harness.trace import EVENT_ADAPTER, Event

__all__ = [
    "SCENARIO_HEADER",
    "STORE_SETTING",
    "AgentAnnouncement",
    "HarnessClock",
    "HarnessLink",
    "ScenarioScope",
    "ScopedStore",
    "agent_key",
    "clock_key",
    "current_scope",
    "events_key",
    "in_scope",
    "publish_offset",
    "read_announcement",
    "read_events",
    "working_key",
]

#: The header the run puts on every webhook: which scenario it belongs to.
SCENARIO_HEADER: Final = "X-Harness-Scenario"
#: The setting that joins an agent to harness runs: the run's store.
STORE_SETTING: Final = "HARNESS_STORE_URL"

# How often a sleeping agent looks for a jump of the harness's clock.
_POLL: Final = 0.1

_SCOPE: ContextVar[str | None] = ContextVar("harness_scenario_scope", default=None)


def agent_key(phone_number_id: str) -> str:
    """Where an agent serving ``phone_number_id`` announces itself."""
    return f"harness:agent:{phone_number_id}"


def events_key(scope: str) -> str:
    """The log of what an agent did for one scenario."""
    return f"harness:events:{scope}"


def working_key(scope: str) -> str:
    """How many pieces of an agent's work for one scenario are under way."""
    return f"harness:working:{scope}"


def clock_key(scope: str) -> str:
    """Where a scenario's clock offset (virtual minus real time, in seconds) is kept."""
    return f"harness:clock:{scope}"


def current_scope() -> str | None:
    """The scenario the current webhook (and the tasks it started) belongs to, if any."""
    return _SCOPE.get()


@contextmanager
def in_scope(scope: str | None) -> Iterator[None]:
    """Work for scenario ``scope`` inside (tasks started inside inherit it)."""
    token = _SCOPE.set(scope)
    try:
        yield
    finally:
        _SCOPE.reset(token)


class AgentAnnouncement(BaseModel):
    """What an agent joined to harness runs says about itself when it starts."""

    model_config = ConfigDict(frozen=True, extra="allow")

    #: The kinds of trace event it reports: ``llm``, ``tool``.
    reports: tuple[str, ...] = ()
    #: Whether it reads the harness's clock.
    clock: bool = False
    #: Whether it keeps each scenario's state apart.
    scoped: bool = False
    #: Whether it says when it is working on a scenario (so quiet is known, not guessed).
    work: bool = False
    at: AwareDatetime | None = None


async def read_announcement(store: Store, phone_number_id: str) -> AgentAnnouncement | None:
    """The announcement of the agent serving ``phone_number_id``, if one joined."""
    raw = await store.get(agent_key(phone_number_id))
    return None if raw is None else AgentAnnouncement.model_validate_json(raw)


async def publish_offset(store: Store, scope: str, offset: timedelta) -> None:
    """Tell agents following the harness's clock where scenario ``scope``'s time is."""
    await store.set(clock_key(scope), repr(offset.total_seconds()), ttl=7 * 24 * 3600.0)


async def read_events(store: Store, scope: str, start: int = 0) -> list[Event]:
    """The events an agent reported for scenario ``scope``, from index ``start``."""
    entries = await store.read_log(events_key(scope), start)
    return [EVENT_ADAPTER.validate_json(raw) for raw in entries]


class HarnessClock:
    """Real time, moved for each scenario as far as that scenario's virtual clock has jumped.

    ``now()`` reads the offset last seen for the current scope (no scope:
    real time); ``sleep`` waits in real time but wakes early when the
    scenario's clock jumps past its deadline.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._real = SystemClock()
        self._offsets: dict[str, float] = {}

    def now(self) -> datetime:
        """The current scenario's time."""
        scope = _SCOPE.get()
        offset = self._offsets.get(scope, 0.0) if scope else 0.0
        return self._real.now() + timedelta(seconds=offset)

    async def refresh(self, scope: str | None = None) -> None:
        """Read the scenario's offset from the store (the current scope by default)."""
        scope = scope or _SCOPE.get()
        if not scope:
            return
        raw = await self._store.get(clock_key(scope))
        if raw is not None:
            self._offsets[scope] = float(raw)

    async def sleep(self, seconds: float) -> None:
        """Wait until the scenario's time has moved ``seconds`` on, by real time or by a jump."""
        deadline = self.now() + timedelta(seconds=max(seconds, 0.0))
        while True:
            remaining = (deadline - self.now()).total_seconds()
            if remaining <= 0:
                await asyncio.sleep(0)
                return
            await asyncio.sleep(min(remaining, _POLL))
            await self.refresh()


class ScopedStore:
    """A store whose keys go under the current scenario's scope, when there is one."""

    def __init__(self, inner: Store) -> None:
        self._inner = inner

    @property
    def namespace(self) -> str:
        """The wrapped store's namespace (the scope is added per call)."""
        return self._inner.namespace

    def _key(self, key: str) -> str:
        scope = _SCOPE.get()
        return f"scenario:{scope}:{key}" if scope else key

    async def get(self, key: str) -> bytes | None:
        """As :meth:`Store.get`, in the current scope."""
        return await self._inner.get(self._key(key))

    async def set(self, key: str, value: bytes | str, *, ttl: float | None = None) -> None:
        """As :meth:`Store.set`, in the current scope."""
        await self._inner.set(self._key(key), value, ttl=ttl)

    async def set_if_absent(
        self, key: str, value: bytes | str, *, ttl: float | None = None
    ) -> bool:
        """As :meth:`Store.set_if_absent`, in the current scope."""
        return await self._inner.set_if_absent(self._key(key), value, ttl=ttl)

    async def delete(self, key: str) -> None:
        """As :meth:`Store.delete`, in the current scope."""
        await self._inner.delete(self._key(key))

    async def append(self, key: str, value: bytes | str) -> int:
        """As :meth:`Store.append`, in the current scope."""
        return await self._inner.append(self._key(key), value)

    async def read_log(self, key: str, start: int = 0, end: int | None = None) -> list[bytes]:
        """As :meth:`Store.read_log`, in the current scope."""
        return await self._inner.read_log(self._key(key), start, end)

    async def incr(self, key: str, amount: int = 1) -> int:
        """As :meth:`Store.incr`, in the current scope."""
        return await self._inner.incr(self._key(key), amount)

    async def close(self) -> None:
        """Close the wrapped store."""
        await self._inner.close()

    def with_namespace(self, namespace: str) -> ScopedStore:
        """The wrapped store's view under ``namespace``, still scoped per scenario."""
        return ScopedStore(self._inner.with_namespace(namespace))


class ScenarioScope:
    """ASGI middleware: each request runs in the scope its ``X-Harness-Scenario`` names.

    The scope's clock offset is read before the request is handled, so the
    agent sees the scenario's time from its first line on.
    """

    def __init__(self, app: ASGIApp, *, link: HarnessLink) -> None:
        self.app = app
        self.link = link

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the request in the named scenario's scope (unscoped without the header)."""
        named = None
        if scope["type"] == "http":
            for key, value in scope.get("headers", ()):
                if key == _HEADER:
                    named = value.decode("latin-1").strip() or None
                    break
        if named is None:
            await self.app(scope, receive, send)
            return
        with in_scope(named):
            await self.link.clock.refresh(named)
            await self.app(scope, receive, send)


_HEADER: Final = SCENARIO_HEADER.lower().encode()


class HarnessLink:
    """An agent's connection to harness runs, from ``HARNESS_STORE_URL``; see the module."""

    def __init__(self, store: Store, *, recording: Recording | None = None) -> None:
        self.store = store
        #: The clock to give the agent: follows each scenario's virtual time.
        self.clock = HarnessClock(store)
        #: Where the agent's recorders record or replay, when the run asks for it.
        self.recording = recording
        self._writes: set[asyncio.Task[int]] = set()

    @classmethod
    def from_settings(cls, settings: Mapping[str, str] | None = None) -> HarnessLink | None:
        """The link ``HARNESS_STORE_URL`` asks for (``os.environ`` by default), else None."""
        settings = os.environ if settings is None else settings
        url = settings.get(STORE_SETTING, "").strip()
        if not url:
            return None
        try:
            store = open_store(url)
        except ConfigError as exc:
            raise ConfigError(f"{STORE_SETTING}: {exc}") from None
        recording_settings = dict(settings)
        recording_settings.setdefault("HARNESS_RECORDING_URL", url)
        return cls(store, recording=Recording.from_settings(recording_settings))

    async def announce(
        self, phone_number_id: str, *, reports: tuple[str, ...] = ("llm", "tool")
    ) -> None:
        """Say, for the number this agent serves, what it reports and that it follows the clock."""
        announcement = AgentAnnouncement(
            reports=reports, clock=True, scoped=True, work=True, at=datetime.now(UTC)
        )
        await self.store.set(agent_key(phone_number_id), announcement.model_dump_json())

    def sink(self, event: Event) -> None:
        """Report one trace event (a model or tool call) to the run, for the current scenario."""
        scope = _SCOPE.get()
        if not scope:
            return
        if event.user is None and current_user() is not None:
            event = event.model_copy(update={"user": current_user()})
        data = EVENT_ADAPTER.dump_json(event)
        task = asyncio.get_running_loop().create_task(self.store.append(events_key(scope), data))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    @asynccontextmanager
    async def working(self) -> AsyncIterator[None]:
        """Say, for the current scenario, that the agent is at work until the block ends.

        Wrap each piece of background work (answering a burst, say) but not a
        timer set for hours from now: the run knows the agent is quiet when no
        work is under way, instead of guessing from silence.
        """
        scope = _SCOPE.get()
        if not scope:
            yield
            return
        key = working_key(scope)
        await self.store.incr(key)
        try:
            yield
        finally:
            # Even when the work is cancelled, the count must come down again.
            await asyncio.shield(self.store.incr(key, -1))

    async def working_on(self, scope: str) -> int:
        """How many pieces of work the agent has under way for scenario ``scope``."""
        raw = await self.store.get(working_key(scope))
        return int(raw) if raw else 0

    def scoped(self, store: Store) -> ScopedStore:
        """``store`` with each key under the current scenario's scope."""
        return ScopedStore(store)

    def wrap_app(self, app: ASGIApp) -> ASGIApp:
        """``app`` behind :class:`ScenarioScope`: each request runs in its scenario's scope."""
        return ScenarioScope(app, link=self)

    async def before_request(self, request: object) -> None:
        """An httpx ``request`` event hook: reports reach the run before what the agent sends.

        Give it to the client the agent sends its messages with
        (``event_hooks={"request": [link.before_request]}``), so a tool call the
        agent reports comes before the reply it sent about it in the trace.
        """
        await self.flush()

    async def flush(self) -> None:
        """Wait until every reported event is in the store."""
        while self._writes:
            await asyncio.gather(*list(self._writes))

    async def aclose(self) -> None:
        """Flush the reports and close the store."""
        await self.flush()
        await self.store.close()
