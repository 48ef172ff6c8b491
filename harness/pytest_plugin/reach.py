"""An agent at a URL, checked once a session: something answers there, and it passes the handshake.

A bot that is not running, or that answers the verification handshake with
403 (its own verify token, not the one the plugin was given), would fail
every test the same way, each with a traceback from its first message. So,
as ``harness run --target-url`` does before its first scenario, the plugin
checks it once (:func:`target_problem`), through the channel's run context,
and each test at the URL fails with that one line, naming the URL and what
it answered.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest

from harness.exceptions import HarnessError
from harness.plugins import load_channel_plugins
from harness.pytest_plugin.loop import LoopThread
from harness.pytest_plugin.settings import PluginSettings

__all__ = ["target_problem"]

_CHECKED = pytest.StashKey[str | None]()


def target_problem(config: pytest.Config, settings: PluginSettings) -> str | None:
    """What stops every test at ``settings``' target URL, as one line; ``None`` if nothing does.

    Checked the first time a session asks, and kept: nothing answers at the
    URL, or the agent fails the verification handshake. Without a target URL,
    or on a channel with no run context, there is nothing to check.
    """
    if settings.target_url is None:
        return None
    if _CHECKED in config.stash:
        return config.stash[_CHECKED]
    problem: str | None = None
    plugin = load_channel_plugins().get(settings.channel)
    if plugin is not None and plugin.run_context is not None:
        try:
            with LoopThread("harness-reach") as loop:
                loop.run(_enter(plugin.run_context, settings.target_url, settings))
        except (HarnessError, ValueError) as exc:  # ValueError: an option the channel refuses
            problem = str(exc)
    config.stash[_CHECKED] = problem
    return problem


async def _enter(
    run_context: Callable[..., AbstractAsyncContextManager[Any]],
    target_url: str,
    settings: PluginSettings,
) -> None:
    """Enter the channel's run context and leave it: it reaches the agent and checks it.

    The context serves the fake Graph API (and the model and OTLP endpoints
    beside it) while it checks, as each test will: an agent that reports a
    span of the handshake, or calls out while answering it, finds them there
    (an exporter that blocks on a closed port would hold the agent's answer
    past the handshake's timeout).
    """
    graph_url = f"http://127.0.0.1:{settings.graph_port}"
    options = {**settings.channel_options, "graph_url": graph_url, "serve_graph": True}
    async with run_context(target_url=target_url, options=options):
        pass
