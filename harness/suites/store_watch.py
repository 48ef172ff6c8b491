"""Watching the store under a scenario, so that its verdict never rests on a failed one.

The store notes the commands that failed under a scenario
(:mod:`harness.outages`); a Redis that restarted between two commands
answered them all, yet lost every key written before. :func:`watch_outages`
gathers both for the runner.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from harness.exceptions import StoreError
from harness.outages import Outages, collect_outages
from harness.store import RedisStore, Store

__all__ = ["watch_outages"]


@asynccontextmanager
async def watch_outages(store: Store | None) -> AsyncIterator[Outages]:
    """The outages the block meets, and a Redis ``store`` that restarts meanwhile.

    A restarted Redis has lost the keys written before (unless it persists
    them, and then maybe the last second's), so a scenario it restarted
    under is noted as an outage even when every command got an answer.
    """
    with collect_outages() as outages:
        before = await _server_id(store)
        yield outages
        after = await _server_id(store)
        if before is not None and after is not None and after != before:
            outages.note(
                f"Redis at {before[0]} restarted while the scenario ran, "
                "and the keys the scenario had written are gone"
            )


async def _server_id(store: Store | None) -> tuple[str, str] | None:
    """Where a Redis store's server is and the id of its current run, if it says."""
    if not isinstance(store, RedisStore):
        return None
    try:
        found = await store.server_id()
    except StoreError:  # an unavailable server is noted as an outage by the store itself
        return None
    return None if found is None else (store.where, found)
