"""Channels carry a conversation to an agent and report what happened.

``channels.whatsapp`` plays Meta's WhatsApp Cloud API; ``channels.direct``
calls the agent's direct entry point with no HTTP at all. The names below
load on first use (see :mod:`harness.lazy`), so importing one channel does
not import the other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.lazy import lazy_names

if TYPE_CHECKING:
    from channels.direct import *
    from channels.direct_plugin import *

#: The module that owns each public name.
_OWNERS: dict[str, str] = {
    "DirectChannel": "channels.direct",
    "direct_plugin": "channels.direct_plugin",
    "find_direct_agent": "channels.direct",
}

__all__ = sorted(_OWNERS)

_load, __dir__ = lazy_names(__name__, _OWNERS)

if not TYPE_CHECKING:
    # Hidden from type checkers: a visible module __getattr__ would make them
    # accept any name, typos included, as ``object``.
    __getattr__ = _load
