"""The model endpoint and the OTLP receiver together, as a server mounts them.

``harness serve`` and ``harness proxy`` put their own app behind these routes
(:meth:`Endpoints.around`): ``/v1/messages``, ``/v1/chat/completions`` and
``/v1/traces`` answer first, every other path goes on to the server's app.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, cast

import httpx
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from harness.endpoints.model import ModelEndpoint
from harness.endpoints.otlp import OTLPReceiver, Placer
from harness.endpoints.upstreams import ANTHROPIC_UPSTREAM, OPENAI_UPSTREAM
from harness.recording import Recording
from harness.tape import Sink
from harness.trace import Event

__all__ = ["Endpoints", "Stamp"]

# A model API's calls start so; Graph's never do (its versions are v<major>.<minor>).
_MODEL_PREFIX = "/v1/"


def _unserved(scope: Scope, served: str) -> JSONResponse:
    """A model client's call to an endpoint not played here, in the shape both APIs' SDKs read."""
    message = f"{scope['method']} {scope['path']} is not played here: this server answers {served}."
    return JSONResponse(
        {"type": "error", "error": {"type": "not_found_error", "message": message}},
        status_code=404,
    )


class _Now(Protocol):
    def now(self) -> datetime: ...


class Stamp:
    """A clock that only tells the time: replayed model answers come at once, not after a wait.

    A server whose clock is paced by real time (``harness serve``) hands the
    endpoint this, so a replayed answer never waits on the pacer.
    """

    def __init__(self, clock: _Now) -> None:
        self._clock = clock

    def now(self) -> datetime:
        """The wrapped clock's time."""
        return self._clock.now()


@dataclass
class Endpoints:
    """A server's model endpoint and OTLP receiver, for one recording and one trace."""

    model: ModelEndpoint
    otlp: OTLPReceiver

    @classmethod
    def for_recording(
        cls,
        recording: Recording,
        sink: Sink,
        *,
        clock: object = None,
        anthropic_upstream: str = ANTHROPIC_UPSTREAM,
        openai_upstream: str = OPENAI_UPSTREAM,
        side_effects: Collection[str] = (),
        http: httpx.AsyncClient | None = None,
        model_events: bool = True,
        pin_credentials: bool = False,
        trace: Sequence[Event] = (),
        placed: Placer | None = None,
        derive_tools: bool = False,
        tool_sink: Sink | None = None,
    ) -> Endpoints:
        """Both, writing their events to ``sink``.

        Model spans are left out once the endpoint has answered a call (the
        agent's calls come through it, and would count twice). Without
        ``model_events`` the endpoint writes no event of its own (for a
        recording whose ``on_llm_record`` writes each exchange's event already).
        ``pin_credentials`` and ``derive_tools`` (with ``side_effects`` and
        ``tool_sink``) go to the :class:`ModelEndpoint`; ``clock`` and
        ``trace`` (what ``sink`` holds so far) and ``placed`` to the :class:`OTLPReceiver`.
        """
        model = ModelEndpoint(
            recording,
            sink=sink if model_events else None,
            clock=clock,
            anthropic_upstream=anthropic_upstream,
            openai_upstream=openai_upstream,
            http=http,
            pin_credentials=pin_credentials,
            derive_tools=derive_tools,
            side_effects=side_effects,
            tool_sink=tool_sink,
        )
        otlp = OTLPReceiver(
            sink,
            side_effects=side_effects,
            skip_model_spans=model.answered,
            clock=cast("_Now | None", clock),
            trace=trace,
            placed=placed,
        )
        return cls(model, otlp)

    def routes(self) -> list[BaseRoute]:
        """The routes of both."""
        return [*self.model.routes(), *self.otlp.routes()]

    def around(self, app: ASGIApp) -> ASGIApp:
        """A server answering these routes itself and every other request with ``app``.

        The routes are fixed paths, so the path and the method pick the app,
        as the router would: every request for ``app`` (each Graph API and
        control call of a server) goes straight to it, through no second
        router and middleware. Lifespan events go to these routes' app.
        """
        routes = self.routes()
        own = Starlette(routes=routes)
        fixed = [r for r in routes if isinstance(r, Route) and "{" not in r.path and r.methods]
        if len(fixed) != len(routes):  # a route of another shape: a router decides
            return Starlette(routes=[*routes, Mount("", app=app)])
        taken = frozenset((r.path, method) for r in fixed for method in r.methods or ())

        served = ", ".join(sorted({f"{method} {path}" for path, method in taken}))

        async def either(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] == "http":
                mine = (scope["path"], scope["method"]) in taken
                if not mine and scope["path"].startswith(_MODEL_PREFIX):
                    await _unserved(scope, served)(scope, receive, send)
                    return
            else:
                mine = scope["type"] == "lifespan"
            await (own if mine else app)(scope, receive, send)

        return either

    def observed(self) -> set[str]:
        """Which of the agent's own calls these endpoints have seen: ``llm``, ``tool``.

        An agent whose GenAI spans arrive is instrumented, so its tool calls
        would arrive too: any span counts for both.
        """
        seen = {"llm"} if self.model.answered() else set()
        return seen | ({"llm", "tool"} if self.otlp.accepted else set())

    async def aclose(self) -> None:
        """Close the model endpoint's connections to the upstreams."""
        await self.model.aclose()
