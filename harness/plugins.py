"""Channel plugins, found through package entry points.

A channel package (WhatsApp today; Telegram or SMS tomorrow) declares an entry
point in the ``harness.channels`` group that names a :class:`ChannelPlugin`.
The core never imports a channel by name: it asks the installed packages.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from importlib.machinery import PathFinder
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


def load_channel_plugins(group: str = ENTRY_POINT_GROUP) -> dict[str, ChannelPlugin]:
    """Load every installed channel plugin, keyed by name.

    A plugin that fails to load is an error naming the entry point, not a
    silent omission: a channel that vanishes would make a suite pass vacuously.
    """
    plugins: dict[str, ChannelPlugin] = {}
    for name, value in sorted(_declared_entry_points(group)):
        try:
            plugin = _load(value)
        except Exception as exc:  # any import failure of a third-party plugin
            raise ConfigError(f"channel plugin {name!r} ({value}) failed to load: {exc}") from exc
        if not isinstance(plugin, ChannelPlugin):
            raise ConfigError(
                f"channel plugin {name!r} ({value}) is a {type(plugin).__name__}, "
                "not a ChannelPlugin"
            )
        plugins[plugin.name] = plugin
    return plugins


def _declared_entry_points(group: str) -> list[tuple[str, str]]:
    """The name and value of every entry point installed in ``group``.

    The same list :func:`importlib.metadata.entry_points` gives, read straight
    from the ``*.dist-info`` and ``*.egg-info`` directories on ``sys.path``
    (importing :mod:`importlib.metadata` costs more than the rest of the
    command line's help); with a zip file or an egg on the path, or a finder
    of distributions other than the standard one, it asks :mod:`importlib.metadata`.
    """
    found = _scan(group)
    if found is None:
        from importlib.metadata import entry_points

        return [(ep.name, ep.value) for ep in entry_points(group=group)]
    return found


def _scan(group: str) -> list[tuple[str, str]] | None:
    if any(
        hasattr(finder, "find_distributions") and finder is not PathFinder
        for finder in sys.meta_path
    ):
        return None
    seen: set[str] = set()
    found: list[tuple[str, str]] = []
    for entry in sys.path:
        root = entry or "."
        if os.path.isfile(root) or root.lower().endswith(".egg"):
            return None  # a zip file or an egg on the path
        try:
            children = os.listdir(root)
        except OSError:
            continue  # not a directory: nothing installed there
        for child in children:
            low = child.lower()
            if not low.endswith((".dist-info", ".egg-info")):
                continue
            # A distribution found again further down the path is hidden by the first.
            name = re.sub(r"[-_.]+", "_", low.rpartition(".")[0].partition("-")[0])
            if name in seen:
                continue
            seen.add(name)
            try:
                with open(os.path.join(root, child, "entry_points.txt"), encoding="utf-8") as f:
                    text = f.read()
            except OSError:
                continue
            found.extend(_section(text, group))
    return found


def _section(text: str, group: str) -> list[tuple[str, str]]:
    """The ``name = value`` lines of ``[group]`` in an ``entry_points.txt``."""
    pairs: list[tuple[str, str]] = []
    section = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
        elif section == group:
            name, _, value = line.partition("=")
            pairs.append((name.strip(), value.strip()))
    return pairs


def _load(value: str) -> Any:
    """The object an entry point's value names: ``module`` or ``module:attr.attr``."""
    match = re.fullmatch(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?(\[.*\]\s*)?", value)
    if match is None:
        raise ValueError(f"not a module or module:attribute: {value!r}")
    module = importlib.import_module(match.group("module"))
    attrs = filter(None, (match.group("attr") or "").split("."))
    return functools.reduce(getattr, attrs, module)
