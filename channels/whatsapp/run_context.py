"""The WhatsApp channel's context for a run against an agent at a URL.

Before the first scenario, the run checks the agent once: something answers
at its URL, and it passes Meta's verification handshake (an agent that fails
either would fail every scenario the same way, so it is one error naming the
URL). When the run serves the fake Graph API itself, every scenario shares one
:class:`~channels.whatsapp.router.GraphRouter`, started before the check so
that an agent reporting a span of the handshake finds the server there.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx

from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.delivery import handshake
from channels.whatsapp.forwarding import RouteBook
from channels.whatsapp.router import UPSTREAM_OPTIONS, GraphRouter
from channels.whatsapp.templates import template_objects
from channels.whatsapp.url_target import UrlTarget
from harness.store import open_store
from harness.suites.target_url import reach_target_url

__all__ = ["shared_graph"]


@asynccontextmanager
async def shared_graph(
    *, target_url: str | None, options: Mapping[str, Any]
) -> AsyncIterator[GraphRouter | None]:
    """The WhatsApp channel's run context: one Graph API router for a run against a URL.

    Nothing is shared for an in-process agent, or when the run does not serve
    the fake Graph API itself (``serve_graph``). An agent at a URL that nothing
    answers at, or that fails the verification handshake, stops the run before
    its first scenario (:class:`~harness.exceptions.ConfigError`,
    :class:`~harness.exceptions.HandshakeError`): none of them could reach it.
    """
    settings = dict(options)
    graph_url = settings.pop("graph_url", None)
    serve = bool(settings.pop("serve_graph", False))
    upstreams = {name: settings.pop(name) for name in UPSTREAM_OPTIONS if name in settings}
    side_effects = tuple(settings.pop("side_effect_tools", ()))  # for the agent's tool calls
    advertised = settings.pop("graph_advertise", None)
    routes_url = settings.pop("graph_routes", None)
    if target_url is None:
        yield None
        return
    await reach_target_url(target_url)  # an agent not there stops the run at once
    if settings.get("templates") is not None:  # a file's path, or Meta's objects
        settings["templates"] = template_objects(settings["templates"])
    config = SimulatorConfig(**settings)
    if not serve or not graph_url:
        await _verify(target_url, config)
        yield None
        return
    config = config.model_copy(update={"public_url": advertised or graph_url})
    url = httpx.URL(graph_url)
    store = open_store(routes_url) if routes_url else None
    routes = RouteBook(store, advertised) if store is not None else None
    router = GraphRouter(
        config,
        url.host,
        url.port or 80,
        **upstreams,
        routes=routes,
        target_url=target_url,
        side_effects=side_effects,
    )
    try:
        await router.start()  # a port that is taken is said first: it needs no waiting
        try:
            await _verify(target_url, config)
            yield router
        finally:
            await router.stop()
    finally:
        if store is not None:
            await store.close()


async def _verify(target_url: str, config: SimulatorConfig) -> None:
    """Meta's verification handshake with the agent at ``target_url``, as each scenario does it.

    Once before the run: an agent that fails it would fail every scenario the
    same way, so it is one error naming the URL instead.
    """
    if not config.handshake:
        return
    target = UrlTarget(target_url)
    try:
        await handshake(target, config.verify_token, random.Random())
    finally:
        await target.aclose()
