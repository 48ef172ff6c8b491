"""A fresh simulator's fake Graph API, as a client, for tests of its endpoints."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.simulator import WhatsAppSimulator
from harness.clock import VirtualClock

__all__ = ["simulator_graph"]


@asynccontextmanager
async def simulator_graph(config: SimulatorConfig) -> AsyncIterator[httpx.AsyncClient]:
    """A client of a new simulator's Graph API (on a virtual clock); the simulator closes after."""
    sim = WhatsAppSimulator(config, clock=VirtualClock())
    try:
        async with sim.graph_client() as graph:
            yield graph
    finally:
        await sim.aclose()
