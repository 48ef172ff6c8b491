"""The reference agent under test: a WhatsApp booking assistant for a restaurant.

It talks to Meta's Cloud API exactly like a real bot (a signed webhook in,
Graph API sends out) and runs through the harness's direct channel too. Its
parts, one module each: settings, the webhook app (:mod:`~agents.booking.webhook`)
and its WhatsApp behaviour (:mod:`~agents.booking.front`, bursts, chunking,
the Graph client), the channel-independent agent (:mod:`~agents.booking.core`)
with its brain, confirmation gate, tools, state and prompts, the offline
:class:`ScriptedModel`, and the planted :class:`Regression` switches.

``agents.booking:app`` is the webhook app built from the environment, for
``uvicorn agents.booking:app``; it is built on first access, never at import.
"""

from __future__ import annotations

import os
from typing import Any

from agents.booking.brain import (
    FALLBACK_TEXT,
    Brain,
    BrainResult,
    ToolDecision,
    ToolPolicy,
)
from agents.booking.bursts import (
    BurstQueue,
)
from agents.booking.chunking import (
    TEXT_LIMIT,
    split_message,
)
from agents.booking.constraints import (
    Constraint,
    extract_constraints,
    merge_constraints,
    needs_step_free,
)
from agents.booking.core import (
    APOLOGY_TEXT,
    UNSUPPORTED_TEXT,
    AgentTurn,
    BookingAgent,
    Reply,
)
from agents.booking.factory import (
    BookingFactory,
    agent_factory,
)
from agents.booking.front import (
    SHORT_CONFIRM_TEXT,
    WhatsAppFront,
)
from agents.booking.gate import (
    CONFIRM_BUTTONS,
    ConfirmationGate,
    read_confirmation,
)
from agents.booking.graph import (
    RETRIED_CODES,
    GraphClient,
    GraphError,
    SendResult,
)
from agents.booking.inbound import (
    REPLY_KINDS,
    Inbound,
    StatusEvent,
    WebhookUpdates,
    parse_webhook,
)
from agents.booking.language import (
    WEEKDAYS,
    find_date,
    find_time,
    format_day,
    is_cancel_request,
    is_confirmation,
    is_greeting,
    is_policy_question,
    is_rejection,
)
from agents.booking.prompts import (
    DEFAULT_PROMPTS,
    PromptRegistry,
    override,
    packaged_prompt,
)
from agents.booking.reading import (
    ChatEvent,
    RequestReading,
    read_request,
)
from agents.booking.regressions import (
    Regression,
    parse_regressions,
)
from agents.booking.scripted import (
    ScriptedModel,
)
from agents.booking.settings import (
    BEHAVIOUR_FIELDS,
    ENV_VARIABLES,
    BookingSettings,
    check_settings,
    named_settings,
)
from agents.booking.state import (
    FailedSend,
    Proposal,
    StateStore,
    UserState,
)
from agents.booking.tools import (
    SEATINGS,
    SIDE_EFFECTS,
    TOOL_SCHEMAS,
    Calendar,
    ToolInputError,
    register_tools,
    room_of,
)
from agents.booking.webhook import (
    MissingSignature,
    build_llm,
    create_app,
    sign,
    verify_signature,
)
from harness.recording import Recording, wrap, wrap_tools
from harness.remote import HarnessLink

__all__ = [
    "APOLOGY_TEXT",
    "BEHAVIOUR_FIELDS",
    "CONFIRM_BUTTONS",
    "DEFAULT_PROMPTS",
    "ENV_VARIABLES",
    "FALLBACK_TEXT",
    "REPLY_KINDS",
    "RETRIED_CODES",
    "SEATINGS",
    "SHORT_CONFIRM_TEXT",
    "SIDE_EFFECTS",
    "TEXT_LIMIT",
    "TOOL_SCHEMAS",
    "UNSUPPORTED_TEXT",
    "WEEKDAYS",
    "AgentTurn",
    "BookingAgent",
    "BookingFactory",
    "BookingSettings",
    "Brain",
    "BrainResult",
    "BurstQueue",
    "Calendar",
    "ChatEvent",
    "ConfirmationGate",
    "Constraint",
    "FailedSend",
    "GraphClient",
    "GraphError",
    "Inbound",
    "MissingSignature",
    "PromptRegistry",
    "Proposal",
    "Regression",
    "Reply",
    "RequestReading",
    "ScriptedModel",
    "SendResult",
    "StateStore",
    "StatusEvent",
    "ToolDecision",
    "ToolInputError",
    "ToolPolicy",
    "UserState",
    "WebhookUpdates",
    "WhatsAppFront",
    "agent_factory",
    "build_llm",
    "check_settings",
    "create_app",
    "extract_constraints",
    "find_date",
    "find_time",
    "format_day",
    "is_cancel_request",
    "is_confirmation",
    "is_greeting",
    "is_policy_question",
    "is_rejection",
    "merge_constraints",
    "named_settings",
    "needs_step_free",
    "override",
    "packaged_prompt",
    "parse_regressions",
    "parse_webhook",
    "read_confirmation",
    "read_request",
    "register_tools",
    "room_of",
    "sign",
    "split_message",
    "verify_signature",
]


def __getattr__(name: str) -> Any:
    # `agents.booking:app` for uvicorn, built lazily: nothing reads the environment at import.
    if name == "app":
        settings = BookingSettings.from_env(os.environ)
        # A deployment joined to harness runs (HARNESS_STORE_URL) reports its model and tool
        # calls, follows each scenario's clock and keeps scenarios apart; one the harness
        # replays against (or records) shares the recording kept in the store.
        link = HarnessLink.from_settings(os.environ)
        recording = link.recording if link is not None else Recording.from_settings(os.environ)
        env: HarnessLink | Recording | None = link if link is not None else recording
        if recording is not None:
            # A recording says how the agent was set up, so its replays behave the same.
            recording.report_settings(settings.behaviour())
        if env is None:
            built = create_app(settings)
        else:
            built = create_app(
                settings,
                llm=wrap(build_llm(settings), env),
                tools=wrap_tools(env),
                link=link,
            )
        globals()["app"] = built
        return built
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
