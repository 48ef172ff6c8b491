"""Channel plugins, found through package entry points.

A channel package (WhatsApp today; Telegram or SMS tomorrow) declares an entry
point in the ``harness.channels`` group that names a :class:`ChannelPlugin`.
The core never imports a channel by name: it asks the installed packages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

import click

from harness.exceptions import ConfigError

__all__ = ["ENTRY_POINT_GROUP", "ChannelPlugin", "load_channel_plugins"]

#: The entry-point group channel packages register in.
ENTRY_POINT_GROUP = "harness.channels"


@dataclass(frozen=True)
class ChannelPlugin:
    """What a channel contributes: a factory for its channel and its own subcommands."""

    name: str
    description: str
    factory: Callable[..., Any]
    commands: Sequence[click.Command] = field(default_factory=tuple)
    #: What the channel keeps for a whole run (entered around it, given to every scenario's
    #: setup as ``shared``): called with ``target_url`` and ``options``; None for nothing.
    run_context: Callable[..., AbstractAsyncContextManager[Any]] | None = None
    #: What the channel can't play, each with the reason reports give: a step action
    #: (``redeliver``) or one expectation of an ``expect`` step (``expect.status``). The
    #: runner skips those on this channel, and says so in the results.
    unsupported: Mapping[str, str] = field(default_factory=dict)
    #: Checks a message object a step will send (``send:``) before anything runs, raising
    #: ``ValueError`` that names the field; None when the channel takes any message.
    check_message: Callable[[Mapping[str, Any]], None] | None = None
    #: Checks a scenario's ``faults:`` (a preset name or a mapping of settings) before
    #: anything runs, raising ``ValueError``; a ``loc`` attribute on it, a path below
    #: ``faults`` (``("duplicate",)``), places the error. None when the channel has no faults.
    check_faults: Callable[[Any], None] | None = None
    #: Checks the channel's options from the command line (``channel_options``) before
    #: anything runs, raising ``ValueError`` with a one-line message that names the option
    #: (and the file and field, for an option read from a file); None when any will do.
    check_options: Callable[[Mapping[str, Any]], None] | None = None


def load_channel_plugins(group: str = ENTRY_POINT_GROUP) -> dict[str, ChannelPlugin]:
    """Load every installed channel plugin, keyed by name.

    A plugin that fails to load is an error naming the entry point, not a
    silent omission: a channel that vanishes would make a suite pass vacuously.
    """
    plugins: dict[str, ChannelPlugin] = {}
    for ep in sorted(entry_points(group=group), key=lambda e: e.name):
        try:
            plugin = ep.load()
        except Exception as exc:  # any import failure of a third-party plugin
            raise ConfigError(
                f"channel plugin {ep.name!r} ({ep.value}) failed to load: {exc}"
            ) from exc
        if not isinstance(plugin, ChannelPlugin):
            raise ConfigError(
                f"channel plugin {ep.name!r} ({ep.value}) is a {type(plugin).__name__}, "
                "not a ChannelPlugin"
            )
        plugins[plugin.name] = plugin
    return plugins
