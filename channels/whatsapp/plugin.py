"""The WhatsApp channel's entry point for the harness (group ``harness.channels``)."""

from __future__ import annotations

from channels.whatsapp.channel import WhatsAppChannel
from channels.whatsapp.cli import serve_command
from channels.whatsapp.composing import check_message_shape
from channels.whatsapp.faults import check_scenario_faults
from channels.whatsapp.proxy_cli import proxy_command
from channels.whatsapp.router import shared_graph
from harness.plugins import ChannelPlugin

__all__ = ["whatsapp_plugin"]

#: What the WhatsApp channel adds to the harness: its simulator and ``harness serve``.
whatsapp_plugin = ChannelPlugin(
    name="whatsapp",
    description="The WhatsApp Cloud API, simulated: signed webhooks in, a fake Graph API out.",
    factory=WhatsAppChannel,
    commands=(serve_command, proxy_command),
    run_context=shared_graph,
    check_message=check_message_shape,
    check_faults=check_scenario_faults,
)
