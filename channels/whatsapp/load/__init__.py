"""``harness load``: many simulated users against a live webhook, and what their replies took.

A load run plays scenario templates (:mod:`~channels.whatsapp.load.plan`)
as many users at once, on the real clock, through signed webhooks sent with
aiohttp (:mod:`~channels.whatsapp.load.webhooks`); the agent's sends reach a
fake Graph API (:mod:`~channels.whatsapp.load.inbox`) that counts each one
against its user's turn (:mod:`~channels.whatsapp.load.users`). The tally
(:mod:`~channels.whatsapp.load.stats`) becomes JSON and HTML reports
(:mod:`~channels.whatsapp.load.report`). The Graph API applies Meta's rules
(:mod:`~channels.whatsapp.load.rules`) and each accepted send gets its status
webhooks (:mod:`~channels.whatsapp.load.statuses`). The command itself is
:mod:`channels.whatsapp.load_cli`, which imports this package only when it runs.
"""

from __future__ import annotations

from channels.whatsapp.load.inbox import Inbox, offered_choices
from channels.whatsapp.load.plan import (
    MAX_DURATION,
    MAX_MESSAGES,
    MAX_USERS,
    LoadPlan,
    Template,
    TurnSpec,
    templates_from,
)
from channels.whatsapp.load.report import (
    REPORT_KIND,
    load_report_data,
    render_load_html,
    write_load_html,
    write_load_json,
)
from channels.whatsapp.load.rules import MetaRules
from channels.whatsapp.load.runner import Gate, LoadResult, check_target, run_load
from channels.whatsapp.load.stats import LATENCY_BINS, LoadStats, Second, percentile
from channels.whatsapp.load.statuses import StatusSender
from channels.whatsapp.load.users import Choice, LoadUser
from channels.whatsapp.load.webhooks import WebhookPoster

__all__ = [
    "LATENCY_BINS",
    "MAX_DURATION",
    "MAX_MESSAGES",
    "MAX_USERS",
    "REPORT_KIND",
    "Choice",
    "Gate",
    "Inbox",
    "LoadPlan",
    "LoadResult",
    "LoadStats",
    "LoadUser",
    "MetaRules",
    "Second",
    "StatusSender",
    "Template",
    "TurnSpec",
    "WebhookPoster",
    "check_target",
    "load_report_data",
    "offered_choices",
    "percentile",
    "render_load_html",
    "run_load",
    "templates_from",
    "write_load_html",
    "write_load_json",
]
