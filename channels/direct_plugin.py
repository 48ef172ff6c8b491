"""The direct channel's entry point for the harness (group ``harness.channels``).

The harness loads every channel plugin to list their commands (``harness
--help``), so the channel itself is imported when a run first builds one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.plugins import ChannelPlugin

if TYPE_CHECKING:
    from channels.direct import DirectChannel
    from harness.channel import ChannelSetup

__all__ = ["direct_plugin"]


def _channel(setup: ChannelSetup) -> DirectChannel:
    from channels.direct import DirectChannel

    return DirectChannel(setup)


#: The direct channel's entry point for the harness (group ``harness.channels``).
direct_plugin = ChannelPlugin(
    name="direct",
    description="Straight into the agent's direct entry point: no HTTP, no channel faults.",
    factory=_channel,
    unsupported={
        "redeliver": "the direct channel has no webhook deliveries to repeat",
        "faults": "the direct channel has no channel faults",
        "expect.status": "the direct channel has no delivery statuses (sent, delivered, read)",
        "expect.template": (
            "the direct channel has no message templates (nor the 24-hour window they serve)"
        ),
    },
)
