"""The booking agent, slowed down: each webhook it is handed takes a twentieth of a second more.

A distributed run's worker is killed mid-scenario in the tests; a scenario of
the bundled suite takes a few milliseconds in-process, this one takes about a
second, so the kill lands while it runs. The delay blocks (as CPU-bound work
would), so it moves no virtual clock and changes no verdict.
"""

from __future__ import annotations

import time
from typing import Any

from agents.booking import agent_factory
from harness.channel import AgentEnvironment

__all__ = ["DELAY", "slow_agent"]

#: Real seconds each HTTP request to the agent is held.
DELAY = 0.05


class _SlowAgent:
    """Builds the booking agent and holds each of its HTTP requests for :data:`DELAY`."""

    check_settings = staticmethod(agent_factory.check_settings)

    def __call__(self, env: AgentEnvironment) -> Any:
        app = agent_factory(env)
        if not callable(app) or env.http_client is None:
            return app

        async def slowed(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                time.sleep(DELAY)  # noqa: ASYNC251  # blocking on purpose: work, not waiting
            await app(scope, receive, send)

        return slowed


slow_agent = _SlowAgent()
