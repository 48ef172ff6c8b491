"""The harness's way in: build the booking agent from an :class:`~harness.channel.AgentEnvironment`.

``agents.booking:agent_factory`` is the import path to give the harness. On
the WhatsApp channel it returns the webhook app, wired to the channel's
virtual clock, store and in-process Graph API client; on the direct channel
(no HTTP client, no WhatsApp credentials) it returns the bare
:class:`~agents.booking.core.BookingAgent`. Either way the model and the
tools sit behind the harness's recorders (:func:`harness.recording.wrap`),
which record, replay or pass through as the run asks, and whose events go
to the channel's sink, so model calls and tool calls land in the trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from starlette.applications import Starlette

from agents.booking.core import BookingAgent
from agents.booking.settings import BookingSettings, check_settings, named_settings
from agents.booking.webhook import build_llm, create_app
from harness.channel import AgentEnvironment
from harness.prompts import PromptFile
from harness.recording import wrap, wrap_tools

__all__ = ["BookingFactory", "agent_factory"]


class BookingFactory:
    """Builds the booking agent for one harness run, and tells a scenario's settings apart.

    A scenario's ``agent:`` names settings as the fields of
    :class:`~agents.booking.settings.BookingSettings` (``regressions:
    [no_dedupe]``) or as their environment variables (``BOOKING_REGRESSIONS``);
    :meth:`check_settings` answers the harness which it would refuse.
    """

    def __call__(self, env: AgentEnvironment) -> Starlette | BookingAgent:
        """The booking agent for one harness run, configured from ``env.settings``."""
        settings = BookingSettings.from_env(env.settings, **named_settings(env.settings))
        # The harness decides whether the model and the tools record, replay or pass through.
        llm = wrap(build_llm(settings), env)
        tools = wrap_tools(env)
        if env.http_client is None or settings.missing_for_webhook():
            return BookingAgent(
                settings,
                store=env.store.with_namespace(settings.store_namespace),
                clock=env.clock,
                llm=llm,
                tools=tools,
            )
        return create_app(
            settings,
            store=env.store,
            clock=env.clock,
            llm=llm,
            http_client=env.http_client,
            tools=tools,
        )

    def check_settings(self, settings: Mapping[str, str]) -> dict[str, str]:
        """What is wrong with each setting a scenario gives, by name (none when all are fine)."""
        return check_settings(settings)

    def prompt_files(self, settings: Mapping[str, str]) -> list[PromptFile]:
        """Where each prompt is saved: ``BOOKING_PROMPT_DIR`` when set, else the packaged file.

        The text is what the agent would read now (with a prompt directory
        that lacks the file, the packaged prompt it falls back on).
        """
        prompt_dir = BookingSettings.from_env(settings, **named_settings(settings)).prompt_dir
        packaged = resources.files("agents.booking.prompts")
        found: list[PromptFile] = []
        for entry in sorted(packaged.iterdir(), key=lambda e: e.name):
            if not entry.name.endswith(".md"):
                continue
            name = entry.name.removesuffix(".md")
            path = Path(str(entry)) if prompt_dir is None else prompt_dir / entry.name
            # Read from the files, not through a registry that a replay may be overriding.
            text = path.read_text(encoding="utf-8") if path.is_file() else entry.read_text("utf-8")
            found.append(PromptFile(name=name, path=path, text=text))
        return found


#: The booking agent's factory, the harness's default target (``agents.booking:agent_factory``).
agent_factory = BookingFactory()
