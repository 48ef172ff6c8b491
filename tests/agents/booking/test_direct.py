"""The direct entry point: the same brain, tools and state, called without HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from agents.booking import (
    APOLOGY_TEXT,
    UNSUPPORTED_TEXT,
    BookingAgent,
    BookingSettings,
    ScriptedModel,
    parse_regressions,
)
from harness.agent import DirectAgent, DirectMessage, DirectTurn
from harness.clock import VirtualClock
from harness.exceptions import LLMAPIError
from harness.llm import LLMResponse
from harness.store import MemoryStore
from harness.tape import RecordMode
from harness.tool_recorder import ToolRecorder

USER = "15551234567"


def _agent(regressions: str = "", **kw: Any) -> tuple[BookingAgent, VirtualClock]:
    clock = VirtualClock()
    kw.setdefault("llm", ScriptedModel())
    agent = BookingAgent(
        BookingSettings(regressions=parse_regressions(regressions)),
        store=MemoryStore(clock=clock),
        clock=clock,
        **kw,
    )
    return agent, clock


async def _say(agent: BookingAgent, clock: VirtualClock, *texts: str) -> DirectTurn:
    turn = await agent.handle_burst(USER, [DirectMessage(text=t) for t in texts], now=clock.now())
    clock.advance(60)
    return turn


async def _tap(agent: BookingAgent, clock: VirtualClock, reply_id: str) -> DirectTurn:
    message = DirectMessage(type="reply", reply_id=reply_id, text=reply_id.title())
    turn = await agent.handle_burst(USER, [message], now=clock.now())
    clock.advance(60)
    return turn


def test_it_implements_the_direct_agent_protocol() -> None:
    agent, _ = _agent()
    assert isinstance(agent, DirectAgent)


async def test_a_happy_booking_through_the_direct_channel() -> None:
    agent, clock = _agent()
    first = await _say(agent, clock, "Hi!", "I'm vegan. A table on friday at 8pm?")
    [proposal] = first.replies
    assert proposal.type == "interactive"
    assert [(o.id, o.title) for o in proposal.options] == [
        ("confirm", "Confirm"),
        ("change", "Change"),
    ]
    assert "vegan" in proposal.text
    assert [c.name for c in first.tool_calls] == ["search_slots"]  # nothing booked yet
    assert first.tool_calls[0].side_effect is False
    booked = await _tap(agent, clock, "confirm")
    [call] = booked.tool_calls
    assert call.name == "book_appointment"
    assert call.side_effect is True
    assert call.user == USER
    assert call.args == {
        "date": "2026-01-02",
        "slot": "20:00",
        "notes": "vegan",
        "customer": USER,
    }
    assert isinstance(call.result, dict)
    assert call.result["booking_id"] == "BK-0001"
    assert booked.replies[0].text.startswith("Booked!")
    cancelled = await _say(agent, clock, "sorry, please cancel my booking")
    assert [c.name for c in cancelled.tool_calls] == ["cancel_booking"]
    assert "is cancelled" in cancelled.replies[0].text
    assert await agent.calendar.bookings_of(USER) == []


async def test_change_drops_the_proposal_and_the_next_time_is_proposed_instead() -> None:
    agent, clock = _agent()
    await _say(agent, clock, "friday at 8pm")
    changed = await _tap(agent, clock, "change")
    assert "Which day and time" in changed.replies[0].text
    assert (await agent.states.load(USER)).proposal is None
    again = await _say(agent, clock, "9pm then")
    assert "Friday 2 January at 21:00" in again.replies[0].text
    assert await agent.calendar.bookings_of(USER) == []


async def test_a_typed_yes_confirms_too() -> None:
    agent, clock = _agent()
    await _say(agent, clock, "friday at 8pm")
    turn = await _say(agent, clock, "yes please")
    assert [c.name for c in turn.tool_calls] == ["book_appointment"]


async def test_a_constraint_said_early_is_honoured_later() -> None:
    agent, clock = _agent()
    await _say(agent, clock, "hello, I use a wheelchair")
    turn = await _say(agent, clock, "friday at 7:30pm")
    assert "mezzanine" in turn.replies[0].text
    assert "19:30" not in turn.replies[0].text.split("tables at")[1]
    turn = await _say(agent, clock, "8pm")
    assert "wheelchair user" in turn.replies[0].text
    booked = await _tap(agent, clock, "confirm")
    assert booked.tool_calls[0].args["step_free"] is True
    assert booked.tool_calls[0].args["notes"] == "wheelchair user"


async def test_forget_constraint_drops_the_need_after_its_turn() -> None:
    agent, clock = _agent("forget_constraint")
    await _say(agent, clock, "hello, I use a wheelchair")
    turn = await _say(agent, clock, "friday at 7:30pm")
    assert turn.replies[0].type == "interactive"
    assert "19:30 on the mezzanine" in turn.replies[0].text
    assert "wheelchair" not in turn.replies[0].text


async def test_book_without_confirm_books_as_soon_as_a_slot_is_chosen() -> None:
    agent, clock = _agent("book_without_confirm")
    turn = await _say(agent, clock, "friday at 8pm")
    assert [c.name for c in turn.tool_calls] == ["search_slots", "book_appointment"]
    assert turn.replies[0].type == "text"
    assert turn.replies[0].text.startswith("Booked!")


async def test_unsupported_messages_get_the_polite_text_and_no_model_call() -> None:
    model = ScriptedModel()
    agent, clock = _agent(llm=model)
    turn = await agent.handle_burst(
        USER, [DirectMessage(type="image", body={"id": "1"})], now=clock.now()
    )
    assert [r.text for r in turn.replies] == [UNSUPPORTED_TEXT]
    assert model.calls == 0


class _Down:
    async def create(self, **kwargs: Any) -> LLMResponse:
        raise LLMAPIError("overloaded", status_code=529)


async def test_a_model_outage_gets_an_apology_and_the_state_stays_usable() -> None:
    agent, clock = _agent(llm=_Down())
    turn = await _say(agent, clock, "friday at 8pm")
    assert [r.text for r in turn.replies] == [APOLOGY_TEXT]
    state = await agent.states.load(USER)
    assert [m["role"] for m in state.history] == ["user", "assistant"]


async def test_tool_calls_go_through_the_given_recorder() -> None:
    recorder = ToolRecorder(RecordMode.RECORD)
    agent, clock = _agent(tools=recorder)
    assert set(recorder.tools()) == {"search_slots", "book_appointment", "cancel_booking"}
    await _say(agent, clock, "friday at 8pm")
    await _tap(agent, clock, "confirm")
    assert [(r.name, r.side_effect) for r in recorder.records] == [
        ("search_slots", False),
        ("book_appointment", True),
    ]


@pytest.mark.parametrize("text", ["what are your house rules?", "do you take a deposit"])
async def test_policy_questions_get_the_full_policy_text(text: str) -> None:
    agent, clock = _agent()
    turn = await _say(agent, clock, text)
    assert len(turn.replies[0].text) > 4096  # the direct channel has no size limit
