"""Reading a Messages API request the way the ScriptedModel needs to.

:func:`read_request` turns a system prompt and a conversation into a
:class:`RequestReading`: today's date, the business, what the system
prompt's ``## Customer`` section says (name, needs, bookings), the house
policies, and the conversation as a flat list of :class:`ChatEvent` (text,
tool calls and their results), with the queries the model's decisions are
made of.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from typing import Any

from agents.booking.language import find_date, find_time
from harness.llm import SystemPrompt

__all__ = ["ChatEvent", "RequestReading", "read_request"]

_TODAY = re.compile(r"Today is \w+ (\d{4}-\d{2}-\d{2})")
_BUSINESS = re.compile(r"booking assistant of (.+?), a ")
_BOOKING_LINE = re.compile(r"Booking (BK-\d+): .*?\((\d{4}-\d{2}-\d{2})\) at (\d{2}:\d{2})")
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")


@dataclass
class ChatEvent:
    """One block of the conversation: a text, a tool call, or a tool result."""

    role: str
    kind: str  # "text", "tool_use" or "tool_result"
    text: str = ""
    name: str = ""
    id: str = ""
    data: Any = None
    is_error: bool = False

    @property
    def status(self) -> str | None:
        """The ``status`` field of a tool result (``booked``, ``needs_confirmation``...)."""
        if isinstance(self.data, dict) and self.data.get("status") is not None:
            return str(self.data["status"])
        return None


@dataclass
class RequestReading:
    """What the model understood from one request."""

    today: date | None
    business: str
    name: str
    access: list[str]
    dietary: list[str]
    bookings: list[tuple[str, str, str]]
    policies: str
    events: list[ChatEvent] = field(default_factory=list)

    @property
    def needs(self) -> list[str]:
        """Every need the customer stated, access first."""
        return [*self.access, *self.dietary]

    @property
    def step_free(self) -> bool:
        """True when the customer needs a step-free table."""
        return bool(self.access)

    def user_texts(self) -> list[tuple[int, str]]:
        """The user's texts, with their index among the events."""
        return [
            (i, e.text) for i, e in enumerate(self.events) if e.role == "user" and e.kind == "text"
        ]

    def last_completed(self) -> int:
        """The index after the last booking or cancellation that went through (0 if none)."""
        for i in range(len(self.events) - 1, -1, -1):
            if self.events[i].kind == "tool_result" and self.events[i].status in (
                "booked",
                "cancelled",
            ):
                return i + 1
        return 0

    def find_date(self, text: str) -> date | None:
        """The date ``text`` names: relative to today when today is known, else ISO only."""
        if self.today is not None:
            return find_date(text, self.today)
        match = _ISO_DATE.search(text)
        try:
            return date(*(int(g) for g in match.groups())) if match else None
        except ValueError:
            return None

    def facts(self) -> tuple[date | None, str | None]:
        """The day and time asked for since the last completed booking; latest mention wins."""
        start = self.last_completed()
        day: date | None = None
        slot: str | None = None
        for i, text in self.user_texts():
            if i >= start:
                day = self.find_date(text) or day
                slot = find_time(text) or slot
        return day, slot

    def tool_use(self, tool_use_id: str) -> ChatEvent | None:
        """The tool call with this id."""
        for event in self.events:
            if event.kind == "tool_use" and event.id == tool_use_id:
                return event
        return None

    def latest_proposal(self) -> dict[str, Any] | None:
        """The arguments of the last ``book_appointment`` that needed confirmation."""
        for event in reversed(self.events):
            if event.kind == "tool_result" and event.status == "needs_confirmation":
                use = self.tool_use(event.id)
                if use is not None:
                    return dict(use.data)
        return None

    def room(self, day: str, slot: str) -> str | None:
        """Where a seating is, as the last search said (``in the garden room (step-free)``)."""
        for event in reversed(self.events):
            if event.kind != "tool_result" or not isinstance(event.data, dict):
                continue
            if event.data.get("date") != day:
                continue
            for found in event.data.get("slots") or ():
                if found.get("time") == slot:
                    room = str(found.get("room"))
                    where = "on the" if room == "mezzanine" else "in the"
                    free = " (step-free)" if found.get("step_free") else ""
                    return f"{where} {room}{free}"
        return None


def _system_text(system: SystemPrompt | None) -> str:
    if system is None:
        return ""
    if isinstance(system, str):
        return system
    return "\n".join(str(block.get("text", "")) for block in system)


def _section(text: str, heading: str) -> str:
    start = text.find(f"## {heading}")
    if start < 0:
        return ""
    body = text[start + len(heading) + 3 :]
    end = body.find("\n## ")
    return (body if end < 0 else body[:end]).strip()


def _listed(profile: str, label: str) -> list[str]:
    for line in profile.splitlines():
        if line.startswith(f"- {label}:"):
            value = line.split(":", 1)[1].split(" (", 1)[0]
            return [item.strip() for item in value.split(",") if item.strip()]
    return []


@lru_cache(maxsize=4096)
def _result_data(raw: str) -> Any:
    """A tool result's JSON (its text when it is not JSON), parsed once per distinct text.

    The model is shown the same results on every call of a conversation
    (the last 40 messages), so most are texts it has read before. What this
    returns is shared between the readings: they only read it.
    """
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _block_event(role: str, block: Mapping[str, Any]) -> ChatEvent | None:
    kind = block.get("type")
    if kind == "text":
        return ChatEvent(role, "text", text=str(block.get("text", "")))
    if kind == "tool_use":
        return ChatEvent(
            role,
            "tool_use",
            name=str(block.get("name")),
            id=str(block.get("id")),
            data=dict(block.get("input") or {}),
        )
    if kind == "tool_result":
        raw = block.get("content")
        if isinstance(raw, list):
            raw = "".join(str(part.get("text", "")) for part in raw)
        data = _result_data(raw) if isinstance(raw, str) else raw
        return ChatEvent(
            role,
            "tool_result",
            id=str(block.get("tool_use_id")),
            data=data,
            is_error=bool(block.get("is_error")),
        )
    return None


def _events(messages: Sequence[Mapping[str, Any]]) -> list[ChatEvent]:
    events: list[ChatEvent] = []
    for message in messages:
        role = str(message.get("role", ""))
        content = message.get("content")
        if isinstance(content, str):
            events.append(ChatEvent(role, "text", text=content))
            continue
        for block in content if isinstance(content, list) else []:
            event = _block_event(role, block) if isinstance(block, Mapping) else None
            if event is not None:
                events.append(event)
    return events


def read_request(
    system: SystemPrompt | None, messages: Sequence[Mapping[str, Any]]
) -> RequestReading:
    """Read a request's system prompt and conversation."""
    text = _system_text(system)
    today = _TODAY.search(text)
    business = _BUSINESS.search(text)
    profile = _section(text, "Customer")
    names = _listed(profile, "Name")
    return RequestReading(
        today=date.fromisoformat(today.group(1)) if today else None,
        business=business.group(1) if business else "us",
        name=names[0] if names else "",
        access=_listed(profile, "Access needs"),
        dietary=_listed(profile, "Dietary needs"),
        bookings=[(m[1], m[2], m[3]) for m in _BOOKING_LINE.finditer(profile)],
        policies=_section(text, "House policies"),
        events=_events(messages),
    )
