"""A deterministic, offline stand-in for the language model behind the booking agent.

:class:`ScriptedModel` implements :class:`~harness.llm.LLMClient`: it reads
the request the way a model would (the system prompt for today's date, what
is known about the customer and the house policies; the conversation for
the day and time asked for, proposals and tool results) and answers in the
Messages shape, with text and ``tool_use`` blocks, ``stop_reason`` and token
usage estimated from text length. The same request always gets the same
answer, ids included, so recordings made with it replay exactly.

It holds a real booking dialogue: it searches once a day is known, offers
times (only step-free ones when the customer needs step-free access), books
a chosen time, books a proposal the customer confirms, cancels, restates the
customer's needs, quotes the policies, and never asks again for a day or a
time it was given. Like many real models it is eager: it calls
``book_appointment`` as soon as a day and an available time are known,
trusting the tool to say when confirmation is needed. The agent's
confirmation gate is what makes it ask (see :mod:`agents.booking.gate`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

from agents.booking.constraints import extract_constraints
from agents.booking.language import (
    find_time,
    format_day,
    is_cancel_request,
    is_confirmation,
    is_greeting,
    is_policy_question,
    is_rejection,
)
from agents.booking.reading import ChatEvent, RequestReading, read_request
from harness.llm import LLMResponse, SystemPrompt, TextBlock, ToolUseBlock, Usage
from harness.providers import STAND_IN

__all__ = ["ScriptedModel"]

# How a request is written to derive its ids and count its tokens.
_REQUEST_JSON = json.JSONEncoder(sort_keys=True, default=str)
_REFERENCE = re.compile(r"\bbk-?(\d+)\b", re.IGNORECASE)


class ScriptedModel:
    """An :class:`~harness.llm.LLMClient` that answers from rules instead of a network call."""

    #: Who answers: no model, rules (reports name it so, see :mod:`harness.providers`).
    provider = STAND_IN

    def __init__(self, *, chars_per_token: int = 4) -> None:
        self.chars_per_token = chars_per_token
        #: How many requests it answered.
        self.calls = 0

    async def create(
        self,
        *,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        max_tokens: int,
        system: SystemPrompt | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **params: Any,
    ) -> LLMResponse:
        """Answer one Messages API request, deterministically."""
        self.calls += 1
        request = _REQUEST_JSON.encode(
            {"model": model, "system": system, "messages": messages, "tools": tools}
        )
        reading = read_request(system, messages)
        offered = {str(tool.get("name")) for tool in tools or ()}
        blocks = _Turn(reading, offered).answer()
        digest = hashlib.sha256(request.encode()).hexdigest()
        content: list[TextBlock | ToolUseBlock] = []
        for i, block in enumerate(blocks):
            if isinstance(block, str):
                content.append(TextBlock(text=block))
            else:
                name, args = block
                content.append(
                    ToolUseBlock(id=f"toolu_{digest[:20]}{i:02d}", name=name, input=args)
                )
        uses_tool = any(isinstance(b, ToolUseBlock) for b in content)
        written = json.dumps([b.model_dump() for b in content], sort_keys=True)
        return LLMResponse(
            id=f"msg_{digest[:24]}",
            model=model,
            content=tuple(content),
            stop_reason="tool_use" if uses_tool else "end_turn",
            usage=Usage(
                input_tokens=max(1, len(request) // self.chars_per_token),
                output_tokens=max(1, len(written) // self.chars_per_token),
            ),
        )


_Block = str | tuple[str, dict[str, Any]]


class _Turn:
    """The decision for one request."""

    def __init__(self, reading: RequestReading, offered: set[str]) -> None:
        self.r = reading
        self.offered = offered

    # -- answering ------------------------------------------------------------

    def answer(self) -> list[_Block]:
        events = self.r.events
        if events and events[-1].role == "user" and events[-1].kind == "tool_result":
            result = events[-1]
            use = self.r.tool_use(result.id)
            if use is not None:
                return self._after_tool(use, result)
        return self._fresh()

    def _tool(self, name: str, args: dict[str, Any], lead: str) -> list[_Block]:
        if name not in self.offered:
            return ["Sorry, I can't reach the booking system right now. Please try again later."]
        return [lead, (name, args)]

    def _noted(self, text: str) -> str:
        said = [c.label for c in extract_constraints(text)]
        return f" Thanks for telling me; I've noted: {', '.join(said)}." if said else ""

    def _fresh(self) -> list[_Block]:
        texts = self.r.user_texts()
        text = texts[-1][1] if texts else ""
        new_day = self.r.find_date(text)
        new_slot = find_time(text)
        if is_policy_question(text):
            return [f"Here are our house policies:\n\n{self.r.policies}"]
        if is_cancel_request(text):
            return self._cancel(text)
        if new_day is None and new_slot is None:
            proposal = self.r.latest_proposal()
            if proposal is not None and is_confirmation(text):
                return self._tool("book_appointment", proposal, "Booking it now.")
            if is_rejection(text):
                return ["No problem. Which day and time would suit you instead?"]
        day, slot = self.r.facts()
        if day is not None:
            return self._tool(
                "search_slots", {"date": day.isoformat()}, f"Let me check {format_day(day)}."
            )
        noted = self._noted(text)
        if slot is not None:
            return [f"{noted} Which day would you like to come at {slot}?".strip()]
        hello = f"Hello {self.r.name}!" if self.r.name else "Hello!"
        if is_greeting(text) or len(texts) <= 1:
            return [
                f"{hello} I can book you a table at {self.r.business}.{noted} "
                "Which day would you like to come?"
            ]
        return [f"{noted} I can book, change or cancel a table. Which day would you like?".strip()]

    def _cancel(self, text: str) -> list[_Block]:
        reference = _REFERENCE.search(text)
        booking_id = f"BK-{int(reference.group(1)):04d}" if reference else None
        if booking_id is None and self.r.bookings:
            booking_id = self.r.bookings[-1][0]
        if booking_id is None:
            return ["I can't find a booking to cancel. What is its reference (like BK-0001)?"]
        return self._tool("cancel_booking", {"booking_id": booking_id}, "Cancelling it now.")

    def _after_tool(self, use: ChatEvent, result: ChatEvent) -> list[_Block]:
        data = result.data if isinstance(result.data, dict) else {}
        if result.is_error:
            reason = str(data.get("error", "something went wrong")).rstrip(".")
            if use.name == "search_slots":
                return [f"Sorry, I can't look that up: {reason}. Which other day would suit you?"]
            return [f"Sorry, that didn't work: {reason}. Shall we try another day or time?"]
        if use.name == "search_slots":
            return self._after_search(data)
        if use.name == "book_appointment":
            return [self._after_booking(use.data, data)]
        if use.name == "cancel_booking":
            return [self._after_cancel(data)]
        return ["Done."]

    def _after_search(self, data: dict[str, Any]) -> list[_Block]:
        day_text = str(data.get("day") or data.get("date"))
        slots = [s for s in data.get("slots") or () if isinstance(s, dict)]
        usable = [s for s in slots if s.get("step_free") or not self.r.step_free]
        times = [str(s.get("time")) for s in usable]
        step_free = " step-free" if self.r.step_free else ""
        _, slot = self.r.facts()
        if slot is not None and slot in times:
            args: dict[str, Any] = {"date": data.get("date"), "slot": slot}
            if self.r.needs:
                args["notes"] = "; ".join(self.r.needs)
            if self.r.step_free:
                args["step_free"] = True
            return self._tool("book_appointment", args, f"{day_text} at {slot} is free.")
        if not times:
            return [f"Sorry, there's no free{step_free} table on {day_text}. Another day, perhaps?"]
        why = ""
        if slot is not None:
            if any(s.get("time") == slot for s in slots):
                why = f"Our {slot} seating is on the mezzanine, up a flight of stairs. "
            else:
                why = f"There's no free table at {slot} on {day_text}. "
        needs = f" I've noted: {', '.join(self.r.needs)}." if self.r.needs else ""
        return [
            f"{why}On {day_text} we have free{step_free} tables at {_join(times)}.{needs} "
            "Which time would you like?"
        ]

    def _after_booking(self, args: dict[str, Any], data: dict[str, Any]) -> str:
        day_iso = str(data.get("date") or args.get("date"))
        slot = str(data.get("slot") or args.get("slot"))
        try:
            day_text = format_day(date.fromisoformat(day_iso))
        except ValueError:
            day_text = day_iso
        room = self.r.room(day_iso, slot)
        where = f" {room}" if room else ""
        notes = str(data.get("notes") or args.get("notes") or "")
        status = data.get("status")
        if status == "needs_confirmation":
            noted = f" I've noted: {notes}." if notes else ""
            return (
                f"I can book you a table on {day_text} at {slot}{where}.{noted} Shall I confirm it?"
            )
        if status == "booked":
            passed = f" I've passed on your notes: {notes}." if notes else ""
            return (
                f"Booked! Your table on {day_text} at {slot}{where} is confirmed; your reference "
                f"is {data.get('booking_id')}.{passed} See you then!"
            )
        if status == "already_booked":
            return (
                f"That's already booked ({data.get('booking_id')}): {day_text} at {slot}. "
                "See you then!"
            )
        another = " Would another time suit you?"
        if status == "full":
            return f"Sorry, the {slot} seating on {day_text} has just filled up.{another}"
        if status == "not_step_free":
            return f"The {slot} seating is on the mezzanine, which isn't step-free.{another}"
        if status == "past":
            return f"The {slot} seating on {day_text} has already started.{another}"
        return f"Sorry, I couldn't book that.{another}"

    def _after_cancel(self, data: dict[str, Any]) -> str:
        booking_id = data.get("booking_id")
        status = data.get("status")
        if status == "cancelled":
            try:
                day = format_day(date.fromisoformat(str(data.get("date"))))
                when = f" on {day} at {data.get('slot')}"
            except ValueError:
                when = ""
            return f"Your booking {booking_id}{when} is cancelled. I hope to see you another time!"
        if status == "already_cancelled":
            return f"Booking {booking_id} was already cancelled."
        return f"I can't find a booking {booking_id} under your number."


def _join(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
