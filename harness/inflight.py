"""Real work in flight: how the agent's I/O keeps virtual time from jumping over it.

A run plays a conversation on a virtual clock that jumps as soon as the event
loop is idle. An agent waiting for a model, a database or a service is idle
in that sense, yet busy. :func:`busy` tells the run's clock so: virtual time
stays where it is until the work ends, and work that outlives the clock's
``real_work_limit`` ends the scenario with an error that names it.

The harness calls :func:`busy` itself wherever it can see real I/O: its
model recorders (:mod:`harness.recorder`), its Redis store, the webhook POSTs
to an agent at a URL, and HTTP through :class:`BusyTransport`. During a run
it also holds the clock for every request made through the network transport
of httpx or httpx2 (``AsyncHTTPTransport``: what a plain ``httpx.AsyncClient``
sends through, and the Anthropic and OpenAI SDKs through httpx2, unless given
another), from the request until its response is closed, and every request
of an aiohttp session (until its response's head has come, and again while
its body is read). An agent that talks to a service with a client of another
kind (a database driver, raw sockets) wraps the call::

    from harness.inflight import busy

    with busy("CRM lookup"):
        customer = await crm.get(f"/customers/{user}")

Work handed to the event loop's own thread pool (``asyncio.to_thread``,
``loop.run_in_executor(None, ...)``: a synchronous model SDK, a blocking
database driver) is held for you during a run: :func:`running_on` gives the
loop a default executor that holds the run's clock from the moment the work
is handed over until it ends. Work handed to a thread pool of the agent's own
is held from the loop's side, so no moment is left uncovered between handing
it over and the thread starting::

    with busy("PDF rendering"):
        pdf = await loop.run_in_executor(my_pool, render, booking)

Outside a run (no virtual clock), :func:`busy` does nothing, so the same
agent code runs unchanged in production. The runner makes a scenario's
clock the current one with :func:`running_on`; tasks started inside inherit
it, as context variables go.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import sys
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any, Final

import httpx

from harness.clock import Clock, VirtualClock, virtual_base

__all__ = ["BusyTransport", "busy", "current_clock", "running_on"]

_current: ContextVar[VirtualClock | None] = ContextVar("harness_running_clock", default=None)


def busy(what: str = "real work") -> AbstractContextManager[None]:
    """Tell the run's virtual clock that real work is in flight until the block ends.

    ``what`` names the work in the error raised if it hangs. Safe to enter
    from a worker thread; a no-op when no run is in progress.
    """
    clock = _current.get()
    return nullcontext() if clock is None else clock.hold(what)


def current_clock() -> VirtualClock | None:
    """The virtual clock of the run in progress in this context, if any."""
    return _current.get()


@contextmanager
def running_on(clock: Clock) -> Iterator[None]:
    """Make ``clock`` (or the virtual clock under it) the one :func:`busy` holds inside.

    Inside a running event loop, the loop's default executor also holds the
    clock of whoever hands it work, and so do the requests of the HTTP client
    packages imported so far (see the module docstring).
    """
    token = _current.set(virtual_base(clock))
    try:
        _hold_default_executor()
        _hold_http_clients()
        yield
    finally:
        _current.reset(token)


class _HoldingExecutor(ThreadPoolExecutor):
    """A loop's default executor that holds the caller's run clock while each call runs.

    The pool that does the work is the loop's previous default executor, if
    it had one, else a thread pool of asyncio's default size made when first
    needed; this one only wraps each hand-over in :func:`busy`, entered on
    the loop's thread (in the caller's context, so in its run) and left once
    the call has ended, whichever thread ends it.
    """

    def __init__(self, inner: ThreadPoolExecutor | None) -> None:
        super().__init__(thread_name_prefix="asyncio")
        self._inner = inner

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        """Hand ``fn`` to the pool, holding the run's clock until it has run."""
        if self._inner is None:
            self._inner = ThreadPoolExecutor(thread_name_prefix="asyncio")
        called = fn
        if isinstance(fn, functools.partial) and fn.args:  # asyncio.to_thread: context.run
            called = fn.args[0]
        what = getattr(called, "__name__", None) or type(called).__name__
        hold = busy(f"{what} in a thread")
        hold.__enter__()
        try:
            work = self._inner.submit(fn, *args, **kwargs)
        except BaseException:
            hold.__exit__(None, None, None)
            raise
        # The caller gets a future of its own, told of the outcome before the hold ends:
        # the loop then has the result queued by the time it sees the work over, so
        # virtual time cannot move between the thread ending and its caller going on.
        told: Future[Any] = Future()
        told.add_done_callback(lambda _: told.cancelled() and work.cancel())

        def tell(_: Future[Any]) -> None:
            try:
                _relay(work, told)
            finally:
                hold.__exit__(None, None, None)

        work.add_done_callback(tell)
        return told

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Shut down the pool that does the work."""
        if self._inner is not None:
            self._inner.shutdown(wait=wait, cancel_futures=cancel_futures)
        super().shutdown(wait=wait, cancel_futures=cancel_futures)


def _relay(work: Future[Any], told: Future[Any]) -> None:
    """Give ``told`` the outcome of ``work``, unless the caller has cancelled it meanwhile."""
    if work.cancelled():
        told.cancel()
        return
    try:
        if (error := work.exception()) is not None:
            told.set_exception(error)
        else:
            told.set_result(work.result())
    except InvalidStateError:  # cancelled by the caller, from the loop's thread
        pass


# The loops whose default executor holds run clocks already.
_holding: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()


def _hold_default_executor() -> None:
    """Give the running loop (if any) a default executor that holds run clocks."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    if loop in _holding:
        return
    previous = getattr(loop, "_default_executor", None)  # CPython's; None until first used
    inner = previous if isinstance(previous, ThreadPoolExecutor) else None
    loop.set_default_executor(_HoldingExecutor(inner))
    _holding.add(loop)


_patched: set[str] = set()
_patching = threading.Lock()


def _hold_http_clients() -> None:
    """Make the requests of each client package imported so far hold run clocks.

    Each package is patched once, the first time a run starts after it was
    imported (an agent imports its SDK before its first turn); one nobody
    imported is left alone, so a run imports nothing for it.
    """
    for name in _CLIENT_PACKAGES:
        if name in _patched or name not in sys.modules:
            continue
        with _patching:
            if name in _patched:
                continue
            # import_module waits for an import another thread has under way to finish.
            _CLIENT_PACKAGES[name](importlib.import_module(name))
            _patched.add(name)


def _hold_transport(module: Any) -> None:
    """Hold the run clock while ``module``'s network transport (httpx, httpx2) is at work."""
    transport: type[Any] = module.AsyncHTTPTransport
    transport.handle_async_request = _held_by_run(
        transport.handle_async_request, module.AsyncByteStream
    )


def _unheld() -> bool:
    """True outside a run, or where the current task holds the clock already."""
    clock = _current.get()
    return clock is None or clock.held_here()


def _held_by_run(
    plain: Callable[[Any, Any], Awaitable[Any]], stream_type: type[Any]
) -> Callable[[Any, Any], Awaitable[Any]]:
    """``plain``, holding the run's clock (if any) from the request until it is closed."""

    async def send(transport: Any, request: Any) -> Any:
        if _unheld():
            return await plain(transport, request)
        return await _held_exchange(lambda: plain(transport, request), request, stream_type)

    return send


def _hold_aiohttp(module: Any) -> None:
    """Hold the run clock while an aiohttp session makes a request, and while a body is read.

    The request is held until its response's head has come; reading the
    body (``read``, which ``text`` and ``json`` call) is held again.
    """
    session: type[Any] = module.ClientSession
    response: type[Any] = module.ClientResponse
    plain_request = session._request
    plain_read = response.read

    async def request(self: Any, method: str, url: Any, **options: Any) -> Any:
        if _unheld():
            return await plain_request(self, method, url, **options)
        with busy(f"HTTP {method} {str(url).partition('?')[0]}"):
            return await plain_request(self, method, url, **options)

    async def read(self: Any) -> Any:
        if _unheld():
            return await plain_read(self)
        with busy(f"HTTP {self.method} {self.url.with_query(None)} (its body)"):
            return await plain_read(self)

    session._request = request
    response.read = read


# The HTTP client packages whose requests hold run clocks, and how each is made to: httpx,
# httpx2 (which the Anthropic and OpenAI SDKs send through), and aiohttp's sessions.
_CLIENT_PACKAGES: Final[dict[str, Callable[[Any], None]]] = {
    "httpx": _hold_transport,
    "httpx2": _hold_transport,
    "aiohttp": _hold_aiohttp,
}


async def _held_exchange(
    send: Callable[[], Awaitable[Any]], request: Any, stream_type: type[Any]
) -> Any:
    """``send()``, holding the run's clock from the request until the response is closed.

    ``stream_type`` is the client package's ``AsyncByteStream``: a body of that
    kind not yet read is wrapped to end the hold when it is closed.
    """
    held = busy(f"HTTP {request.method} {request.url.copy_with(query=None)}")
    held.__enter__()
    try:
        response = await send()
    except BaseException:
        held.__exit__(None, None, None)
        raise
    if response.is_closed or not isinstance(response.stream, stream_type):
        held.__exit__(None, None, None)  # the body came whole with the response
        return response
    response.stream = _held_stream_class(stream_type)(response.stream, held)
    return response


_held_streams: dict[type[Any], type[Any]] = {}


def _held_stream_class(base: type[Any]) -> type[Any]:
    """A response body of ``base``'s kind that releases its hold on the clock when closed."""
    if base in _held_streams:
        return _held_streams[base]

    class HeldStream(base):  # type: ignore[misc]
        def __init__(self, inner: Any, held: AbstractContextManager[None]) -> None:
            self._inner = inner
            self._held: AbstractContextManager[None] | None = held

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in self._inner:
                yield chunk

        async def aclose(self) -> None:
            try:
                await self._inner.aclose()
            finally:
                held, self._held = self._held, None
                if held is not None:
                    held.__exit__(None, None, None)

    _held_streams[base] = HeldStream
    return HeldStream


class BusyTransport(httpx.AsyncBaseTransport):
    """An httpx transport that holds the run's clock while each exchange is in flight.

    Wrap the transport of a client that reaches a real server (a model, a
    service, an agent at a URL)::

        client = httpx.AsyncClient(transport=BusyTransport(httpx.AsyncHTTPTransport()))

    The hold lasts from the request until the response body has been read
    and closed, so a streamed answer keeps the clock still too.
    """

    def __init__(self, inner: httpx.AsyncBaseTransport | None = None) -> None:
        self._inner = inner if inner is not None else httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send the request through the wrapped transport, holding the clock meanwhile."""

        async def send() -> httpx.Response:
            return await self._inner.handle_async_request(request)

        response: httpx.Response = await _held_exchange(send, request, httpx.AsyncByteStream)
        return response

    async def aclose(self) -> None:
        """Close the wrapped transport."""
        await self._inner.aclose()
