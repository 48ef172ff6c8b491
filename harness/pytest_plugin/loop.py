"""An event loop on a thread of its own, for the conversations a test plays.

A conversation runs on a virtual clock that moves only when its event loop
has nothing else to do, and the agent under test must be built on the loop
it will run on. A test's own loop (pytest-asyncio's, at whatever scope the
project chose) is neither idle nor the agent's, so each conversation gets a
loop of its own, on a thread, for its whole life: a test awaits what it
asks of the conversation, and a plain function can wait for it too.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from types import TracebackType
from typing import Any, TypeVar

__all__ = ["LoopThread"]

_T = TypeVar("_T")


class LoopThread:
    """An event loop running on a daemon thread until :meth:`close`."""

    def __init__(self, name: str = "harness-conversation") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
        """Start ``coro`` on the loop; its future, to wait for from any thread."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        """Run ``coro`` on the loop and wait for its result here."""
        return self.submit(coro).result()

    async def run_async(self, coro: Coroutine[Any, Any, _T]) -> _T:
        """Run ``coro`` on the loop while the calling loop awaits its result."""
        return await asyncio.wrap_future(self.submit(coro))

    def close(self) -> None:
        """Cancel what is left on the loop, stop it, join the thread; closing twice is harmless."""
        if self.loop.is_closed():
            return
        if self._thread.is_alive():
            self.run(_cancel_the_rest())
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join()
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()

    def __enter__(self) -> LoopThread:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


async def _cancel_the_rest() -> None:
    """Cancel every other task on this loop and let them finish."""
    others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in others:
        task.cancel()
    if others:
        await asyncio.wait(others, timeout=1.0)
