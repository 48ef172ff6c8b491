"""The agent under test: which one, named by import path, and the settings it is given.

A target is ``package.module:attribute``, a factory that takes an
:class:`~harness.channel.AgentEnvironment` and returns the agent (an ASGI app
or a direct agent). Without one, the bundled booking agent is run.

The module is looked for where Python looks, then in the current directory
(so ``harness run --target mybot:factory`` works from the bot's project
without ``PYTHONPATH=.``) and in the extra folders given (a project's root,
when the target comes from its ``pyproject.toml``). Those folders go after
the installed packages, so a folder of the project never hides one of them
(nor the harness's own ``harness``, ``channels`` and ``agents``); a worker
process that loads the target again does the same.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.channel import AgentFactory
from harness.exceptions import ConfigError

__all__ = ["DEFAULT_TARGET", "describe_factory", "importable", "load_target", "settings_from"]

#: The agent the harness runs when no target is given: the bundled booking agent.
DEFAULT_TARGET = "agents.booking:agent_factory"


def importable(folders: Sequence[str | Path] = ()) -> None:
    """Make the current directory and ``folders`` importable, after what already is."""
    for folder in (os.getcwd(), *folders):
        where = os.path.abspath(folder)
        if where not in (os.path.abspath(entry or os.curdir) for entry in sys.path):
            sys.path.append(where)


def _shadowed(module_name: str) -> str:
    """A hint when the target's top-level name is a folder here that an installed one hides."""
    top = module_name.partition(".")[0]
    found = sys.modules.get(top)
    here = Path.cwd() / top
    origin = getattr(found, "__file__", None)
    if found is None or not (here.is_dir() or here.with_suffix(".py").is_file()) or not origin:
        return ""
    if Path(origin).resolve().is_relative_to(Path.cwd().resolve()):
        return ""
    return f" ({top} is the installed package at {Path(origin).parent}: rename yours)"


def load_target(
    path: str, *, search: Sequence[str | Path] = (), given_as: str | None = None
) -> AgentFactory:
    """Import an agent factory named ``package.module:attribute``.

    The current directory and the folders in ``search`` are importable too.
    Errors start with ``given_as``, how the user named the target (default
    ``--target 'path'``; ``--candidate 'target=path'`` for ``harness regress``),
    so that they name the option the user actually gave.
    """
    named = given_as or f"--target {path!r}"
    module_name, sep, attribute = path.partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError(f"{named}: expected package.module:attribute")
    importable(search)
    importlib.invalidate_caches()  # a module written a moment ago is found too
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        hint = _shadowed(module_name)
        raise ConfigError(f"{named}: can't import {module_name}: {exc}{hint}") from None
    except Exception as exc:  # the module's own code failed (a setting it reads is missing, say)
        raise ConfigError(
            f"{named}: importing {module_name} raised {type(exc).__name__}: {exc}"
        ) from None
    try:
        factory = getattr(module, attribute)
    except AttributeError:
        raise ConfigError(f"{named}: {module_name} has no {attribute!r}") from None
    if not callable(factory):
        raise ConfigError(f"{named}: {attribute} is not callable")
    return factory  # type: ignore[no-any-return]  # checked callable above


def settings_from(agent: Mapping[str, Any]) -> dict[str, str]:
    """A scenario's ``agent:`` mapping as settings strings (lists joined with commas)."""
    settings: dict[str, str] = {}
    for key, value in agent.items():
        if isinstance(value, bool):
            settings[key] = "true" if value else "false"
        elif isinstance(value, list | tuple):
            settings[key] = ",".join(str(v) for v in value)
        else:
            settings[key] = str(value)
    return settings


def describe_factory(factory: AgentFactory) -> str:
    """A factory handed in, named as a target would be (``module:qualname``)."""
    module = getattr(factory, "__module__", None)
    name = getattr(factory, "__qualname__", type(factory).__name__)
    return f"{module}:{name}" if module else str(name)
