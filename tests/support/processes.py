"""Stopping a process a test started, however the test ends: a signal, a bounded wait, SIGKILL.

A test that fails, times out or is cancelled while a server, a proxy or a
``harness`` command it started is still running must not leave that process
behind. The stop is meant for a ``finally`` block: it does nothing to a
process that has already exited, and a process that ignores the signal, or a
wait cut short by a cancellation, still ends with SIGKILL.
"""

from __future__ import annotations

import asyncio
import contextlib
from signal import SIGTERM

__all__ = ["stop"]


async def stop(
    process: asyncio.subprocess.Process,
    *,
    signal: int = SIGTERM,
    within: float = 5.0,
    read: bool = True,
) -> tuple[bytes, bytes]:
    """Send ``signal``, wait up to ``within`` seconds, then SIGKILL; return what it wrote.

    The wait reads the process's pipes (``communicate``), so a process with
    much left to write never blocks on a full pipe while it is awaited. What it
    wrote is returned, stdout then stderr (empty for a stream that was not a
    pipe, and for what a process killed after the wait had written before).
    ``read=False`` when the caller reads the pipes itself: the wait then only
    waits, and returns nothing.
    """
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):  # it has just exited
            process.send_signal(signal)

    async def ended() -> tuple[bytes | None, bytes | None]:
        if read:
            return await process.communicate()
        await process.wait()
        return None, None

    try:
        out, err = await asyncio.wait_for(ended(), within)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        out, err = await ended()
    finally:
        if process.returncode is None:  # the wait was cancelled: the process goes all the same
            with contextlib.suppress(ProcessLookupError):
                process.kill()
    return out or b"", err or b""
