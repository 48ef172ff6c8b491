"""Channels carry a conversation to an agent and report what happened.

``channels.whatsapp`` plays Meta's WhatsApp Cloud API; ``channels.direct``
calls the agent's direct entry point with no HTTP at all.
"""

from __future__ import annotations

from channels.direct import DirectChannel, direct_plugin, find_direct_agent

__all__ = ["DirectChannel", "direct_plugin", "find_direct_agent"]
