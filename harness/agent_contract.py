"""The agent factory's contract, checked: a fresh agent per scenario, on that scenario's loop.

An in-process agent is built by its factory once per scenario, and each
scenario runs on an event loop of its own (a worker thread's or a worker
process's). Two mistakes break that, and both are common in bots written for
production, where one app lives for the life of the process:

- the factory returns an app built once, at import time, so every scenario
  shares its state (users, history, dedupe keys) and its clients;
- the app, or something it holds (an HTTP client, a lock, a queue), was made
  on another scenario's event loop, so using it fails deep inside asyncio
  ("attached to a different loop", "Event loop is closed"), often in a
  background task whose traceback asyncio prints as "Task exception was
  never retrieved".

Channels build agents through :func:`build_agent`, which refuses the first
mistake with an :class:`~harness.exceptions.AgentContractError`; the runner
collects what the agent raises in the background with :func:`loop_errors`
and words both kinds of failure with :func:`explain_agent_error`: one line
that says what is wrong and how to fix it, never a traceback.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import threading
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final

from harness.channel import AgentEnvironment, AgentFactory
from harness.exceptions import AgentContractError

__all__ = ["FRESH_AGENT_ADVICE", "build_agent", "explain_agent_error", "loop_errors"]

#: How to write a factory that keeps the contract, in a few words.
FRESH_AGENT_ADVICE: Final = (
    "build the app and everything it holds (HTTP clients, locks, queues, caches) inside the "
    "factory, on every call, not once at import time"
)

# Objects some factory has returned in this process (weakly held: a finished scenario's app
# may go), guarded by a lock because thread workers build agents at the same time.
_BUILT: weakref.WeakSet[Any] = weakref.WeakSet()
_BUILT_LOCK = threading.Lock()

_OTHER_LOOP: Final = re.compile(
    r"attached to a different loop|bound to a different event loop|different event loop",
    re.IGNORECASE,
)
_CLOSED_LOOP: Final = re.compile(r"event loop is closed", re.IGNORECASE)
_CLOSED_CLIENT: Final = re.compile(r"client has been closed", re.IGNORECASE)


def build_agent(factory: AgentFactory, env: AgentEnvironment) -> Any:
    """Call ``factory(env)`` and check what it returned is a fresh agent.

    Raises :class:`~harness.exceptions.AgentContractError` when the factory
    returns a coroutine (an ``async def`` factory), something that is no agent
    (neither an ASGI app nor a :class:`~harness.agent.DirectAgent`), or an
    object it (or another factory) already returned in this process.
    """
    built = factory(env)
    name = getattr(factory, "__qualname__", type(factory).__name__)
    module = getattr(factory, "__module__", None)
    name = f"{module}:{name}" if module else name
    if inspect.isawaitable(built):
        if inspect.iscoroutine(built):
            built.close()  # never awaited: say so here rather than in a warning at exit
        raise AgentContractError(
            f"the agent factory {name} returned an awaitable: make it a plain function "
            "(def, not async def) that returns the app"
        )
    if not _an_agent(built):
        shown = repr(built)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise AgentContractError(
            f"the agent factory {name} returned {shown} ({type(built).__name__}), which is no "
            "agent: a factory returns an ASGI app, or an object with a handle_burst method "
            "(harness.agent.DirectAgent)"
        )
    with _BUILT_LOCK:
        try:
            seen = built in _BUILT
            if not seen:
                _BUILT.add(built)
        except TypeError:  # not hashable or not weakly referable: nothing to compare
            seen = False
    if seen:
        raise AgentContractError(
            f"the agent factory {name} returned the same {type(built).__name__} object for "
            f"two scenarios, which then share their state: {FRESH_AGENT_ADVICE}"
        )
    return built


def _an_agent(built: object) -> bool:
    """Whether a factory's result can be an agent: an ASGI app, or one answering handle_burst."""
    if callable(built) or callable(getattr(built, "handle_burst", None)):
        return True
    agent = getattr(getattr(built, "state", None), "agent", None)
    return callable(getattr(agent, "handle_burst", None))


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _brief(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def explain_agent_error(exc: BaseException) -> str:
    """One line for an exception the agent under test raised; the fix when it is a known one."""
    for link in _chain(exc):
        message = str(link)
        if _OTHER_LOOP.search(message):
            return (
                f"the agent used an object made on another scenario's event loop "
                f"({_brief(link)}): each scenario runs on an event loop of its own, so "
                f"{FRESH_AGENT_ADVICE}"
            )
        if _CLOSED_LOOP.search(message):
            return (
                f"the agent used an object made on an event loop that has closed "
                f"({_brief(link)}): each scenario runs on an event loop of its own, so "
                f"{FRESH_AGENT_ADVICE}"
            )
        if _CLOSED_CLIENT.search(message):
            return (
                f"the agent used an HTTP client that was already closed ({_brief(link)}), "
                f"probably one made for an earlier scenario: {FRESH_AGENT_ADVICE} "
                "(in-process, send through env.http_client)"
            )
    return _brief(exc)


@dataclass
class _Watcher:
    """One scenario watching its loop: the tasks it made, and what they reported."""

    tasks: list[asyncio.Task[Any]] = field(default_factory=list)
    caught: list[BaseException] = field(default_factory=list)


# The scenario whose code is running: tasks inherit it from the code that makes them, so
# each task is known to be one scenario's even when several share a loop.
_CURRENT: ContextVar[_Watcher | None] = ContextVar("harness_scenario_watcher", default=None)


class _LoopWatch:
    """A loop's task factory and exception handler while scenarios on it are watched."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.previous_handler = loop.get_exception_handler()
        self.previous_factory = loop.get_task_factory()
        self.users = 0
        #: Whose each task is, for the loop's reports about it.
        self.owners: weakref.WeakKeyDictionary[asyncio.Task[Any], _Watcher] = (
            weakref.WeakKeyDictionary()
        )
        loop.set_exception_handler(self.handle)
        loop.set_task_factory(self.make_task)

    def make_task(
        self, loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any
    ) -> asyncio.Future[Any]:
        if self.previous_factory is not None:
            task = self.previous_factory(loop, coro, **kwargs)
        else:
            task = asyncio.Task(coro, loop=loop, **kwargs)
        watcher = _CURRENT.get()
        if watcher is not None and isinstance(task, asyncio.Task):
            watcher.tasks.append(task)
            self.owners[task] = watcher
        return task

    def handle(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exception = context.get("exception")
        future = context.get("future")
        watcher = self.owners.get(future) if isinstance(future, asyncio.Task) else None
        watcher = watcher or _CURRENT.get()
        if isinstance(exception, Exception) and watcher is not None:
            watcher.caught.append(exception)
        elif self.previous_handler is not None:
            self.previous_handler(loop, context)
        else:
            loop.default_exception_handler(context)

    def close(self) -> None:
        self.loop.set_exception_handler(self.previous_handler)
        self.loop.set_task_factory(self.previous_factory)


# One per loop (so one per worker thread) while scenarios on it are watched.
_WATCHES: dict[asyncio.AbstractEventLoop, _LoopWatch] = {}
#: How long (real seconds) an agent's cancelled leftover tasks get to finish.
_CANCEL_WAIT: Final = 1.0


def _unretrieved(task: asyncio.Task[Any]) -> BaseException | None:
    """The exception a finished task ended with, if nothing has looked at it yet."""
    # asyncio logs "Task exception was never retrieved" when a task whose flag is still set
    # is collected; the flag has no public reader, and reading the exception clears it.
    if not task.done() or task.cancelled() or not getattr(task, "_log_traceback", False):
        return None
    return task.exception()


@asynccontextmanager
async def loop_errors() -> AsyncIterator[list[BaseException]]:
    """Watch what the code inside the block starts on the running loop, and what fails there.

    When the block ends, tasks it started that are still running (an
    agent's leftover background work) are cancelled, so they can't act in
    the next scenario on this loop; the yielded list then holds the
    exceptions its tasks ended with that nobody looked at (which asyncio
    would print later, as "Task exception was never retrieved") and anything
    else the loop reported about them meanwhile. The loop's own task factory
    and exception handler are put back when the last block on it ends.
    """
    loop = asyncio.get_running_loop()
    watch = _WATCHES.get(loop)
    if watch is None:
        watch = _WATCHES[loop] = _LoopWatch(loop)
    watch.users += 1
    watcher = _Watcher()
    token = _CURRENT.set(watcher)
    caught: list[BaseException] = []
    try:
        yield caught
    finally:
        _CURRENT.reset(token)
        leftover = [t for t in watcher.tasks if not t.done()]
        for task in leftover:
            task.cancel()
        if leftover:
            await asyncio.wait(leftover, timeout=_CANCEL_WAIT)
        watch.users -= 1
        if not watch.users:
            watch.close()
            del _WATCHES[loop]
        failed = (_unretrieved(task) for task in watcher.tasks)
        caught.extend(exc for exc in failed if exc is not None)
        caught.extend(watcher.caught)
