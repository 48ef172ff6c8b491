"""The booking agent end to end through the WhatsApp simulator, in-process, on a virtual clock.

The simulator plays Meta: it signs and delivers webhooks, serves the Graph
API the agent sends to, keeps the 24-hour window and enforces Meta's
limits. Each test plays a short conversation and asserts over the trace;
the regression tests show each planted bug changing the outcome.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette

from agents.booking import BookingAgent, BookingSettings, ScriptedModel, create_app
from channels.whatsapp.channel import agent_settings
from channels.whatsapp.config import SimulatorConfig
from channels.whatsapp.simulator import WhatsAppSimulator
from channels.whatsapp.simuser import SimUser
from harness.clock import VirtualClock
from harness.llm_recorder import RecordingLLMClient
from harness.tape import RecordMode
from harness.tool_recorder import ToolRecorder
from harness.trace import Conversation, OutboundSend

HOUR = 3600.0


@dataclass
class World:
    """A simulator, one user, and the booking agent's app connected to it."""

    sim: WhatsAppSimulator
    user: SimUser
    app: Starlette
    client: httpx.AsyncClient

    @property
    def agent(self) -> BookingAgent:
        agent: BookingAgent = self.app.state.agent
        return agent

    def conversation(self, *, finished: bool = False) -> Conversation:
        return self.sim.conversation()

    def bookings(self) -> list[Any]:
        return [
            c
            for c in self.conversation().tool_calls("book_appointment")
            if isinstance(c.result, dict) and c.result.get("status") == "booked"
        ]

    async def say(self, text: str | list[str], gap: float = 1.0) -> None:
        await self.sim.say(self.user, text, gap=gap)
        await self.sim.settle()

    async def tap(self, choice: str) -> None:
        await self.sim.tap(self.user, choice)
        await self.sim.settle()


async def _world(regressions: str = "", **env: str) -> World:
    config = SimulatorConfig()
    sim = WhatsAppSimulator(config, clock=VirtualClock(), seed=0)
    user = sim.add_user("15551234567", "Ana")
    settings = BookingSettings.from_env(
        {**agent_settings(config, config.public_url), "BOOKING_REGRESSIONS": regressions, **env}
    )
    client = sim.graph_client()
    llm = RecordingLLMClient(
        ScriptedModel(), RecordMode.PASSTHROUGH, sink=sim.record, clock=sim.clock
    )
    tools = ToolRecorder(RecordMode.PASSTHROUGH, sink=sim.record, clock=sim.clock)
    app = create_app(settings, clock=sim.clock, http_client=client, llm=llm, tools=tools)
    sim.connect(app)
    return World(sim, user, app, client)


async def _close(world: World) -> None:
    await world.agent.aclose()
    await world.sim.aclose()
    await world.client.aclose()
    assert world.agent.errors == []


@pytest.fixture
async def world() -> AsyncIterator[World]:
    built = await _world()
    yield built
    await _close(built)


@pytest.fixture
async def broken(request: pytest.FixtureRequest) -> AsyncIterator[World]:
    """The agent with the regression named by the test's parameter switched on."""
    built = await _world(str(request.param))
    yield built
    await _close(built)


def _failed(conv: Conversation) -> list[Any]:
    return conv.failed_sends()


async def _propose(
    world: World, text: str = "Hi! A table for friday at 8pm please"
) -> OutboundSend:
    await world.say(text)
    return world.conversation().replies()[-1]


# -- the happy path ------------------------------------------------------------------


async def test_a_happy_booking_with_confirmation(world: World) -> None:
    proposal = await _propose(world)
    assert proposal.type == "interactive"
    assert "Friday 2 January at 20:00" in (proposal.text or "")
    request: Any = proposal.request
    buttons = request["interactive"]["action"]["buttons"]
    assert [b["reply"]["id"] for b in buttons] == ["confirm", "change"]
    assert world.bookings() == []
    await world.tap("confirm")
    conv = world.conversation()
    [booking] = world.bookings()
    assert booking.side_effect is True
    assert booking.args["date"] == "2026-01-02"
    assert booking.args["slot"] == "20:00"
    # the booking came after the user's confirmation, in the confirmation's turn
    confirm_turn = conv.turns[-1]
    assert confirm_turn.messages[0].reply_id == "confirm"
    assert booking in confirm_turn.tool_calls
    assert (confirm_turn.replies[-1].text or "").startswith("Booked!")
    assert len(conv.turns) == 2
    assert all(len(t.replies) == 1 for t in conv.turns)
    assert _failed(conv) == []
    assert conv.sends_outside_window() == []
    receipts = [s for s in conv.sends() if s.type in ("mark_read", "typing")]
    assert len(receipts) == 2
    assert all(s.ok for s in conv.sends())
    assert conv.llm_exchanges()  # the model calls are in the trace


async def test_a_constraint_is_kept_across_turns(world: World) -> None:
    await world.say("Hello, I use a wheelchair")
    await world.say("friday at 7:30pm")
    offer = world.conversation().replies()[-1]
    assert offer.type == "text"  # no proposal for the upstairs seating
    assert "mezzanine" in (offer.text or "")
    await world.say("8pm then")
    proposal = world.conversation().replies()[-1]
    assert "wheelchair user" in (proposal.text or "")
    await world.tap("confirm")
    [booking] = world.bookings()
    assert booking.args["step_free"] is True
    assert booking.args["notes"] == "wheelchair user"


# -- the channel ---------------------------------------------------------------------


async def test_a_duplicate_delivery_books_once(world: World) -> None:
    await _propose(world)
    await world.tap("confirm")
    replies_before = len(world.conversation().replies())
    await world.sim.redeliver(user=world.user)
    await world.sim.settle()
    conv = world.conversation()
    assert [m.duplicate for m in conv.inbound(duplicates=True)] == [False, False, True]
    assert len(world.bookings()) == 1
    assert len(conv.replies()) == replies_before  # the copy got no answer at all


async def test_a_three_message_burst_gets_one_answer(world: World) -> None:
    await world.say(["hi", "I'd like a table on friday", "at 8pm"], gap=0.5)
    conv = world.conversation()
    [turn] = conv.turns
    assert [m.text for m in turn.messages] == ["hi", "I'd like a table on friday", "at 8pm"]
    [reply] = turn.replies
    assert reply.type == "interactive"
    assert "20:00" in (reply.text or "")


async def test_after_25_hours_of_silence_the_agent_sends_a_template(world: World) -> None:
    await _propose(world)
    await world.sim.advance(25 * HOUR)
    conv = world.conversation()
    followup = conv.replies()[-1]
    assert followup.is_template
    request: Any = followup.request
    assert request["template"]["name"] == "appointment_reminder"
    params = request["template"]["components"][0]["parameters"]
    assert [p["text"] for p in params] == ["Friday 2 January", "20:00"]
    assert followup.in_window is False
    assert followup.ok
    assert conv.sends_outside_window() == []
    assert _failed(conv) == []
    await world.tap("confirm")  # the old Confirm button still books, and reopens the window
    assert len(world.bookings()) == 1


async def test_a_long_reply_is_chunked(world: World) -> None:
    await world.say("What is your cancellation policy?")
    conv = world.conversation()
    replies = conv.replies()
    assert len(replies) >= 2
    assert all(len(r.text or "") <= 4096 for r in replies)
    assert all(r.ok for r in replies)
    assert "Here are our house policies" in (replies[0].text or "")
    assert _failed(conv) == []


async def test_a_bad_signature_is_rejected() -> None:
    world = await _world(WHATSAPP_APP_SECRET="not-the-simulators-secret")
    try:
        await world.sim.say(world.user, "hello")
        await world.sim.settle()
        conv = world.conversation()
        deliveries = conv.deliveries()
        assert deliveries
        assert {d.status_code for d in deliveries} == {403}  # Meta retries; each is refused
        assert conv.sends() == []  # no receipt, no reply
        assert (await world.agent.states.load(world.user.key)).history == []
    finally:
        await _close(world)


# -- each planted regression changes the outcome ---------------------------------------


@pytest.mark.parametrize("broken", ["book_without_confirm"], indirect=True)
async def test_book_without_confirm_books_before_the_user_confirms(broken: World) -> None:
    reply = await _propose(broken)
    [booking] = broken.bookings()
    conv = broken.conversation()
    assert booking in conv.turns[0].tool_calls  # booked in the very first turn
    assert reply.type == "text"
    assert (reply.text or "").startswith("Booked!")


@pytest.mark.parametrize("broken", ["no_dedupe"], indirect=True)
async def test_no_dedupe_books_again_on_a_redelivered_confirmation(broken: World) -> None:
    await _propose(broken)
    await broken.tap("confirm")
    await broken.sim.redeliver(user=broken.user)
    await broken.sim.settle()
    assert len(broken.bookings()) == 2
    assert len(broken.conversation().replies()) == 3


@pytest.mark.parametrize("broken", ["reply_per_fragment"], indirect=True)
async def test_reply_per_fragment_answers_each_message(broken: World) -> None:
    await broken.say(["hi", "I'd like a table on friday", "at 8pm"], gap=0.5)
    assert len(broken.conversation().replies()) == 3


@pytest.mark.parametrize("broken", ["ignore_window"], indirect=True)
async def test_ignore_window_sends_free_text_that_meta_fails(broken: World) -> None:
    await _propose(broken)
    await broken.sim.advance(25 * HOUR)
    conv = broken.conversation()
    [late] = conv.sends_outside_window()
    assert late.type == "interactive"
    failed = conv.statuses("failed")
    assert [e.code for s in failed for e in s.errors] == [131047]
    recorded = await broken.agent.states.failures(broken.user.key)
    assert [f.code for f in recorded] == [131047]


@pytest.mark.parametrize("broken", ["no_chunking"], indirect=True)
async def test_no_chunking_sends_a_reply_meta_refuses(broken: World) -> None:
    await broken.say("What is your cancellation policy?")
    [turn] = broken.conversation().turns
    assert turn.replies == []  # Meta refused the over-long text: the user got nothing
    recorded = await broken.agent.states.failures(broken.user.key)
    assert [f.code for f in recorded] == [131009]
    assert "4096" in recorded[0].details


@pytest.mark.parametrize("broken", ["forget_constraint"], indirect=True)
async def test_forget_constraint_books_an_upstairs_table_for_a_wheelchair_user(
    broken: World,
) -> None:
    await broken.say("Hello, I use a wheelchair")
    await broken.say("friday at 7:30pm")
    proposal = broken.conversation().replies()[-1]
    assert proposal.type == "interactive"
    assert "mezzanine" in (proposal.text or "")
    assert "wheelchair" not in (proposal.text or "")
    await broken.tap("confirm")
    [booking] = broken.bookings()
    assert booking.args["slot"] == "19:30"
    assert "notes" not in booking.args
