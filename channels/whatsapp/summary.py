"""Reading a WhatsApp message object for the trace: its text, the choice it answers.

The simulator and the recording proxy both turn Meta's message objects into
trace events; these helpers say what a person would read in them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["interactive_options", "message_reply_id", "message_text", "outbound_text"]


def interactive_options(interactive: Mapping[str, Any]) -> list[tuple[str, str, str | None]]:
    """The buttons or list rows of an interactive send body: (id, title, description)."""
    action = interactive.get("action") or {}
    if interactive.get("type") == "list":
        return [
            (row["id"], row["title"], row.get("description"))
            for section in action.get("sections") or []
            for row in section.get("rows") or []
        ]
    return [
        (b["reply"]["id"], b["reply"]["title"], None)
        for b in action.get("buttons") or []
        if isinstance(b, Mapping) and "reply" in b
    ]


def message_text(item: Mapping[str, Any]) -> str | None:
    """What a user's message says, for the trace: text, button title, caption, emoji."""
    kind = item.get("type")
    if kind == "text":
        return str((item.get("text") or {}).get("body", ""))
    if kind == "interactive":
        inter = item.get("interactive") or {}
        reply = inter.get("button_reply") or inter.get("list_reply") or {}
        return reply.get("title")
    if kind == "button":
        return (item.get("button") or {}).get("text")
    if kind in {"image", "video", "document"}:
        return (item.get(kind) or {}).get("caption")
    if kind == "reaction":
        return (item.get("reaction") or {}).get("emoji")
    return None


def message_reply_id(item: Mapping[str, Any]) -> str | None:
    """The id of the button or list row a message answers (or a template button's payload)."""
    if item.get("type") == "interactive":
        inter = item.get("interactive") or {}
        reply = inter.get("button_reply") or inter.get("list_reply") or {}
        return reply.get("id")
    if item.get("type") == "button":
        return (item.get("button") or {}).get("payload")
    return None


def outbound_text(body: Mapping[str, Any]) -> str | None:
    """The text of a send body as the trace shows it, as the fake Graph API reads it.

    A text's body, a media caption, an interactive message's body, a
    reaction's emoji, a location's name; None for templates and the rest.
    """
    kind = body.get("type", "text")
    content = body.get(kind)
    if not isinstance(content, Mapping):
        return None
    if kind == "text":
        value = content.get("body")
    elif kind == "interactive":
        inner = content.get("body")
        value = inner.get("text") if isinstance(inner, Mapping) else None
    elif kind in ("image", "video", "document"):
        value = content.get("caption")
    elif kind == "reaction":
        value = content.get("emoji")
    elif kind == "location":
        value = content.get("name")
    else:
        value = None
    return value if isinstance(value, str) else None
