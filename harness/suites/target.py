"""The agent under test: which one, named by import path, and the settings it is given.

A target is ``package.module:attribute``, a factory that takes an
:class:`~harness.channel.AgentEnvironment` and returns the agent (an ASGI app
or a direct agent). Without one, the bundled booking agent is run.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from harness.channel import AgentFactory
from harness.exceptions import ConfigError

__all__ = ["DEFAULT_TARGET", "load_target", "settings_from"]

#: The agent the harness runs when no target is given: the bundled booking agent.
DEFAULT_TARGET = "agents.booking:agent_factory"


def load_target(path: str) -> AgentFactory:
    """Import an agent factory named ``package.module:attribute``."""
    module_name, sep, attribute = path.partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError(f"--target {path!r}: expected package.module:attribute")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"--target {path!r}: can't import {module_name}: {exc}") from None
    try:
        factory = getattr(module, attribute)
    except AttributeError:
        raise ConfigError(f"--target {path!r}: {module_name} has no {attribute!r}") from None
    if not callable(factory):
        raise ConfigError(f"--target {path!r}: {attribute} is not callable")
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
