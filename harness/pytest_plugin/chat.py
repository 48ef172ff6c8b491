"""A conversation with the agent under test, played from a test: the ``whatsapp`` fixture.

The conversation runs on its channel's virtual clock, on an event loop of its
own (:class:`~harness.pytest_plugin.loop.LoopThread`); a test awaits each
step, and each step returns once the agent has finished answering::

    async def test_the_bot_books_after_confirming(wa):
        await wa.say("user", "a table on friday at 8pm")
        await wa.tap("user", "confirm")
        await wa.advance("25h")
        assert "Confirm" in wa.replies("user")[0]
        assert_invariants(wa.trace(), ["no_repeated_side_effects", "sends_valid"])

Everything the session does, from building the agent to closing it, runs in
one task on that loop, so what the agent starts in the background belongs
to this conversation and is cancelled when it ends; what the agent raises
there is reported by :meth:`Chat.close`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from datetime import timedelta
from typing import Any, TypeVar

from harness.agent_contract import explain_agent_error, loop_errors
from harness.channel import ChannelSession, UserSpec
from harness.durations import parse_duration
from harness.exceptions import ConfigError
from harness.inflight import running_on
from harness.pytest_plugin.loop import LoopThread
from harness.pytest_plugin.render import render_violations
from harness.suites.expectations import reply_text
from harness.suites.invariants import SpecLike, check
from harness.trace import Conversation

__all__ = ["Chat", "InvariantsFailed", "assert_invariants"]

_T = TypeVar("_T")
_Work = tuple[Callable[[], Awaitable[Any]], "concurrent.futures.Future[Any]"]


class InvariantsFailed(AssertionError):
    """Invariants that did not hold over a conversation; the message lists each violation."""


def assert_invariants(trace: Conversation, invariants: Iterable[SpecLike]) -> None:
    """Check ``invariants`` over ``trace``, as a scenario's ``invariants:`` would be.

    Each is a name (``"one_reply_per_burst"``), a name with parameters
    (``{"never_reasks": {"pattern": "which day"}}``) or an import path. Raises
    :class:`InvariantsFailed` (an ``AssertionError``) naming each violation,
    its turn and the messages involved.
    """
    violations = check(trace, list(invariants))
    if violations:
        count = len(violations)
        lines = [f"{count} invariant violation{'' if count == 1 else 's'}:"]
        lines.extend(render_violations(violations, trace))
        raise InvariantsFailed("\n".join(lines))


class Chat:
    """One conversation with the agent under test, step by step, from a test.

    ``make_session`` builds the channel session (it is called on the
    conversation's own loop); ``users`` are the conversation's users, named
    in the steps by name (or wa_id). ``watch_agent`` collects what an
    in-process agent raises in the background. Against an agent on real
    time (at a URL), each step also waits until the agent has been quiet for
    ``quiet`` seconds, at most ``expect_timeout``.
    """

    def __init__(
        self,
        make_session: Callable[[], ChannelSession],
        users: Sequence[UserSpec],
        *,
        watch_agent: bool = True,
        quiet: float = 3.0,
        expect_timeout: float = 10.0,
    ) -> None:
        self.users = tuple(users)
        self._quiet = quiet
        self._expect_timeout = expect_timeout
        self._loop = LoopThread()
        self._queue: asyncio.Queue[_Work | None] | None = None
        self._session: ChannelSession | None = None
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._served = self._loop.submit(self._serve(make_session, ready, watch_agent))
        try:
            ready.result()
        except BaseException:
            self._loop.close()
            raise

    async def _serve(
        self,
        make_session: Callable[[], ChannelSession],
        ready: concurrent.futures.Future[None],
        watch_agent: bool,
    ) -> list[BaseException]:
        """The conversation's one task: start the session, run each step asked for, close."""
        queue: asyncio.Queue[_Work | None] = asyncio.Queue()
        self._queue = queue
        try:
            session = make_session()
        except BaseException as exc:
            ready.set_exception(exc)
            return []
        self._session = session
        crashes: AbstractAsyncContextManager[list[BaseException]] = (
            loop_errors() if watch_agent else nullcontext([])
        )
        with running_on(session.clock):
            async with crashes as crashed:
                try:
                    await session.start()
                except BaseException as exc:
                    ready.set_exception(exc)
                    await session.close()
                    return []
                ready.set_result(None)
                try:
                    while (item := await queue.get()) is not None:
                        work, done = item
                        try:
                            done.set_result(await work())
                        except Exception as exc:  # the test sees it where it awaited the step
                            done.set_exception(exc)
                finally:
                    await session.close()
        return crashed

    def _call(self, work: Callable[[], Awaitable[_T]]) -> concurrent.futures.Future[_T]:
        if self._served.done():
            raise ConfigError("the conversation is over: the test has finished with it")
        assert self._queue is not None  # set before the session was ready
        done: concurrent.futures.Future[_T] = concurrent.futures.Future()
        self._loop.loop.call_soon_threadsafe(self._queue.put_nowait, (work, done))
        return done

    @property
    def session(self) -> ChannelSession:
        """The channel session underneath, for what the helpers do not cover."""
        assert self._session is not None  # set before the constructor returned
        return self._session

    def _key(self, user: str) -> str:
        """How the trace names a user given by name (or already by wa_id or BSUID)."""
        for spec in self.users:
            if user == spec.name:
                return spec.key
        return user

    def _name(self, user: str) -> str:
        for spec in self.users:
            if user in (spec.name, spec.wa_id, spec.bsuid):
                return spec.name
        known = ", ".join(spec.name for spec in self.users)
        raise ConfigError(
            f"no user {user!r} in this conversation (its users: {known}); "
            'name them with @pytest.mark.whatsapp(users=["Ana", "Ben"])'
        )

    async def _act(self, step: Callable[[ChannelSession], Awaitable[None]], settle: bool) -> None:
        async def work() -> None:
            session = self.session
            await step(session)
            if settle:
                await session.settle()
            if session.real_time:
                await session.quiet(self._quiet, self._expect_timeout)

        await asyncio.wrap_future(self._call(work))

    async def say(self, user: str, text: str | Sequence[str], *, gap: float = 1.0) -> None:
        """``user`` types ``text`` (a list: a burst, ``gap`` seconds apart); the agent answers."""
        texts = [text] if isinstance(text, str) else list(text)
        name = self._name(user)
        await self._act(lambda s: s.say(name, texts, gap=gap), settle=True)

    async def tap(self, user: str, choice: str) -> None:
        """``user`` taps a button or list row (by id or title) of the last choice offered."""
        name = self._name(user)
        await self._act(lambda s: s.tap(name, choice), settle=True)

    async def send(self, user: str, message: Mapping[str, Any]) -> None:
        """``user`` sends any message type (WhatsApp's message object, without ids)."""
        name = self._name(user)
        await self._act(lambda s: s.send(name, message), settle=True)

    async def redeliver(self, user: str, index: int | None = None) -> None:
        """The channel delivers one of ``user``'s messages again (the last by default)."""
        name = self._name(user)
        await self._act(lambda s: s.redeliver(name, index), settle=True)

    async def advance(self, duration: str | float | timedelta) -> None:
        """Virtual time passes (``"25h"``, seconds or a timedelta); what falls due happens."""
        seconds = parse_duration(duration).total_seconds()
        if seconds < 0:
            raise ConfigError(f"advance {duration!r}: time only moves forward")
        await self._act(lambda s: s.wait(seconds), settle=False)

    def trace(self) -> Conversation:
        """The conversation so far: every event, grouped into turns."""
        if self._served.done():
            assert self._session is not None  # the conversation ran
            return self._session.conversation(finished=True)

        async def read() -> Conversation:
            return self.session.conversation()

        return self._loop.run(read())

    def replies(self, user: str | None = None) -> list[str]:
        """What the agent sent ``user`` (everyone, without one), as the user reads it."""
        return [
            reply_text(send) for send in self.trace().replies(self._key(user) if user else None)
        ]

    def close(self) -> str | None:
        """End the conversation and the agent; one line for what the agent broke meanwhile."""
        if self._served.done() and self._loop.loop.is_closed():
            return None
        if not self._served.done():
            assert self._queue is not None  # set before the session was ready
            self._loop.loop.call_soon_threadsafe(self._queue.put_nowait, None)
        try:
            crashed = self._served.result()
        finally:
            self._loop.close()
        return explain_agent_error(crashed[0]) if crashed else None
