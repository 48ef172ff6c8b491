"""The WhatsApp channel's entry point for the harness (group ``harness.channels``).

The harness loads every channel plugin to list their commands (``harness
--help``), so this module imports only the commands' declarations: the
channel, its run context and its checks are imported when first called.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from channels.whatsapp.cli import serve_command
from channels.whatsapp.load_cli import load_command
from channels.whatsapp.proxy_cli import proxy_command
from harness.plugins import ChannelPlugin

if TYPE_CHECKING:
    from channels.whatsapp.channel import WhatsAppChannel
    from channels.whatsapp.router import GraphRouter
    from harness.channel import ChannelSetup

__all__ = ["whatsapp_plugin"]


def _channel(setup: ChannelSetup) -> WhatsAppChannel:
    from channels.whatsapp.channel import WhatsAppChannel

    return WhatsAppChannel(setup)


def _shared_graph(
    *, target_url: str | None, options: Mapping[str, Any]
) -> AbstractAsyncContextManager[GraphRouter | None]:
    from channels.whatsapp.run_context import shared_graph

    return shared_graph(target_url=target_url, options=options)


def _check_message(message: Mapping[str, Any]) -> None:
    from channels.whatsapp.composing import check_message_shape

    check_message_shape(message)


def _check_faults(spec: object) -> None:
    from channels.whatsapp.faults import check_scenario_faults

    check_scenario_faults(spec)


def _check_options(options: Mapping[str, Any]) -> None:
    if options.get("templates") is not None:
        from channels.whatsapp.templates import template_objects

        template_objects(options["templates"])


#: What the WhatsApp channel adds to the harness: its simulator, ``harness serve``, ``proxy``
#: and ``load``.
whatsapp_plugin = ChannelPlugin(
    name="whatsapp",
    description="The WhatsApp Cloud API, simulated: signed webhooks in, a fake Graph API out.",
    factory=_channel,
    commands=(serve_command, proxy_command, load_command),
    run_context=_shared_graph,
    check_message=_check_message,
    check_faults=_check_faults,
    check_options=_check_options,
)
