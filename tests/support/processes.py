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
    process: asyncio.subprocess.Process, *, signal: int = SIGTERM, within: float = 5.0
) -> None:
    """Send ``signal``, wait up to ``within`` seconds, then SIGKILL; return once it has exited."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):  # it has just exited
            process.send_signal(signal)
        try:
            await asyncio.wait_for(process.wait(), within)
        except TimeoutError:
            pass
        finally:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
    await process.wait()
